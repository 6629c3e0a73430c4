"""``trending demo``: a local broker, a burst of tweets, the hashtags job and a live top-k view.

Everything the demo starts it stops again: the tweet stream, the job and the broker.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from connectors.broker import LocalBroker, free_port
from connectors.jvm import REPO_ROOT
from trending import arg_types
from trending.commands import DefaultsHelpFormatter, writable_dir
from trending.errors import UserError

DEMO_DIR = REPO_ROOT / "build" / "demo"


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="run the trending-hashtags job on a local broker and show live results",
        description="Start a local Kafka broker, produce a burst of tweets, run the "
        "trending-hashtags job on them and on a live tweet stream, and show its top-k as it "
        "changes. Everything the demo starts it stops again: the tweet stream, the job and the "
        "broker.",
        formatter_class=DefaultsHelpFormatter,
    )
    parser.add_argument(
        "--duration",
        type=arg_types.duration_ms,
        default="60s",
        help="how long to show live results, from the first one",
    )
    parser.add_argument(
        "--burst", type=arg_types.count, default=200_000, help="tweets produced up front"
    )
    parser.add_argument(
        "--rate",
        type=arg_types.positive_float,
        default=2_000,
        metavar="R",
        help="live tweets per second of wall time after the burst",
    )
    parser.add_argument(
        "--dir", type=Path, default=DEMO_DIR, metavar="DIR", help="broker data and checkpoints"
    )
    parser.set_defaults(handler=run_demo)


def run_demo(args: argparse.Namespace) -> int:
    from trending.generate import default_start_ms, generate_tweets, produce_tweets
    from trending.view import watch_topk

    seconds = args.duration / 1000
    writable_dir(args.dir, "--dir")
    run_dir = args.dir / time.strftime("%Y%m%d-%H%M%S")
    broker = LocalBroker(free_port(), args.dir / "broker")
    _say("starting a local Apache Kafka broker ...")
    with broker:
        broker.wait_ready(90)
        _say(f"broker ready at {broker.bootstrap}; producing {args.burst:,} tweets ...")
        live_from = int(time.time() * 1000)
        start = default_start_ms(args.burst, 2_000.0, now_ms=live_from)
        burst = generate_tweets(
            seed=int(time.time()), count=args.burst, start_ms=start, events_per_second=2_000.0
        )
        produce_tweets(broker.bootstrap, "tweets", burst, settings=quiet_kafka_logs())
        stop = threading.Event()
        feeder = threading.Thread(
            target=_feed_live, args=(broker.bootstrap, args.rate, stop), daemon=True
        )
        feeder.start()
        job = _start_job(broker.bootstrap, run_dir)
        try:
            _say("job starting (Spark takes a few seconds); live top-k below, Ctrl-C to stop")
            board = watch_topk(
                broker.bootstrap, "trending-hashtags", seconds, alive=lambda: job.poll() is None
            )
        finally:
            stop.set()
            _stop(job)
            feeder.join(10)
        _say(f"saw {board.revisions} revisions and {board.finals} final windows; stopping")
    _say("demo stopped: job, tweet stream and broker")
    return 0 if board.revisions + board.finals > 0 else 1


def _feed_live(bootstrap: str, rate: float, stop: threading.Event) -> None:
    """Tweets stamped with the wall clock, ``rate`` a second, until ``stop``."""
    from connectors.avro import encode_tweet
    from connectors.kafka import producer
    from trending.generate import generate_tweets

    sink = producer(bootstrap, settings=quiet_kafka_logs())
    tick, chunk = 0, max(1, int(rate / 4))
    while not stop.is_set():
        now = int(time.time() * 1000)
        tweets = generate_tweets(
            seed=now, count=chunk, start_ms=now, events_per_second=rate, first_id=now * 1000 + tick
        )
        records = ((t["user"].encode(), encode_tweet(t)) for t in tweets)
        sink.produce_many("tweets", records, partitions=4)
        tick += 1
        stop.wait(0.25)
    sink.flush(30)


def quiet_kafka_logs() -> dict[str, Any]:
    """Producer settings that keep librdkafka's log lines off the screen: the demo's own
    notices (a broker still loading, connections refused once it stopped) are not news."""
    quiet = logging.getLogger("trending.demo.kafka")
    quiet.addHandler(logging.NullHandler())
    quiet.propagate = False
    return {"logger": quiet}


def _start_job(bootstrap: str, run_dir: Path) -> subprocess.Popen[bytes]:
    log = run_dir / "job.log"
    run_dir.mkdir(parents=True, exist_ok=True)
    command = [
        sys.executable, "-m", "trending.cli", "run", "hashtags",
        "--bootstrap-servers", bootstrap, "--checkpoint", str(run_dir / "checkpoint"),
        "--size", "1m", "--hop", "10s", "--lateness", "5s", "--master", "local[2]",
    ]  # fmt: skip
    with log.open("wb") as out:
        job = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=dict(os.environ))
    _say(f"job log: {log}")
    return job


def _stop(job: subprocess.Popen[bytes]) -> None:
    if job.poll() is not None:
        if job.returncode != 0:
            raise UserError(f"the job exited with code {job.returncode}; see its log")
        return
    job.send_signal(signal.SIGTERM)
    try:
        job.wait(60)
    except subprocess.TimeoutExpired:
        job.kill()


def _say(text: str) -> None:
    print(f"demo: {text}", file=sys.stderr, flush=True)
