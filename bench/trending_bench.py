"""`make bench-trending`: the hashtags job against its peers, on the same broker and tweets.

Generates N tweets once (default 1M, topic ``bench-tweets-<N>``), then runs, one after another:
the job end to end on local[2] (``trending run hashtags --available-now``), a plain
confluent-kafka Python loop computing the same windows, and Spark's built-in
``groupBy(window(ts, 5m, 1m), tag).count()`` in append mode, ``--repeat`` rounds (default 3). Prints
the median round's tweets/s and peak memory
(JVM + Python) of each, and the job's start-up: from its own lines, the time from its process's
start to the query being ready (per phase) and to its first committed micro-batch, then a second
run on the same checkpoint with nothing to read (wall time and phases), and the job's rate
excluding start-up (its wall time minus that run's). Uses ``KAFKA_BOOTSTRAP_SERVERS`` when set,
else a local broker.
``--markdown PATH`` also writes the tables, the parameters and the command to a Markdown file.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import report as md
from bench.procmem import bench_broker, run_measured
from connectors.kafka import admin, ensure_topics
from trending.generate import generate_tweets, produce_tweets

ROOT = Path(__file__).resolve().parents[1]
JOB = "trending job (local[2], e2e)"
BUILTIN = "Spark built-in window count"
PLAIN = "plain confluent-kafka loop"
PY = sys.executable


def topic_size(bootstrap: str, topic: str, attempts: int = 30) -> int:
    """Records in ``topic`` (0 when it does not exist), waiting out a broker that has just
    started and is still electing partition leaders."""
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-size"})
    try:
        for attempt in range(attempts):
            try:
                return _records_in(consumer, topic, TopicPartition)
            except KafkaException:  # e.g. NOT_LEADER_FOR_PARTITION while leaders are elected
                if attempt == attempts - 1:
                    raise
                time.sleep(1)
        return 0
    finally:
        consumer.close()


def _records_in(consumer: Any, topic: str, partition: Any) -> int:
    metadata = consumer.list_topics(topic, timeout=10).topics.get(topic)
    if metadata is None or metadata.error is not None:
        return 0
    total = 0
    for p in metadata.partitions:
        low, high = consumer.get_watermark_offsets(partition(topic, p), timeout=10)
        total += high - low
    return total


def ensure_data(bootstrap: str, count: int, **settings: Any) -> str:
    """A topic of ``count`` generated tweets (seed 42, 1000/s of event time, ``settings`` for
    the generator), made once and reused while it holds exactly that many."""
    shape = "".join(f"-{k}{v}" for k, v in sorted(settings.items())).replace(".", "_")
    topic = f"bench-tweets{shape}-{count}"
    if topic_size(bootstrap, topic) == count:
        print(f"data: reusing {count:,} tweets in {topic}", flush=True)
        return topic
    if topic_size(bootstrap, topic):
        admin(bootstrap).delete_topics([topic])[topic].result()
        time.sleep(2)
    started = time.monotonic()
    tweets = generate_tweets(
        seed=42, count=count, start_ms=1_700_000_000_000, events_per_second=1000.0, **settings
    )
    produce_tweets(bootstrap, topic, tweets, partitions=4)
    print(f"data: produced {count:,} tweets to {topic} in {time.monotonic() - started:.1f}s")
    return topic


def run_job(bootstrap: str, topic: str, work: Path) -> dict[str, Any]:
    out = f"bench-trending-{uuid.uuid4().hex[:8]}"
    command = [
        str(ROOT / ".venv/bin/trending"), "run", "hashtags", "--available-now",
        "--master", "local[2]", "--shuffle-partitions", "2",
        "--bootstrap-servers", bootstrap, "--input-topic", topic, "--output-topic", out,
        "--late-topic", out + "-late", "--dead-letter-topic", out + "-dlq",
        "--checkpoint", str(work / out),
        "--max-offsets-per-trigger", "0",  # one batch, as the peers read it (no default bound)
    ]  # fmt: skip
    wall, peak, text = run_measured(command)
    match = re.search(r"(\d+) tweets, .* ([\d.]+)s from first read to last commit", text)
    if match is None:
        raise RuntimeError(f"no summary in the job's output:\n{text[-2000:]}")
    empty_wall, _, empty_text = run_measured(command)  # the same checkpoint: nothing to read
    return {
        "tweets": int(match.group(1)),
        "seconds": float(match.group(2)),
        "wall": wall,
        "peak": peak,
        "startup": startup_of(text),
        "empty_wall": empty_wall,
        "empty_startup": startup_of(empty_text),
    }


READY = re.compile(r"job ready ([\d.]+) s after the process started: (.*)")
FIRST_BATCH = re.compile(r"first micro-batch committed ([\d.]+) s after the process started")
SHUT_DOWN = re.compile(r"shut down in ([\d.]+) s, ([\d.]+) s after the process started")


def startup_of(text: str) -> dict[str, Any]:
    """The job's start-up lines (:mod:`trending.jobs.startup`): ``ready`` seconds after the
    process started and its phases, and ``first`` (the first micro-batch committed), if any."""
    ready, first, down = READY.search(text), FIRST_BATCH.search(text), SHUT_DOWN.search(text)
    phases: dict[str, float] = {}
    for part in ready.group(2).split(", ") if ready else []:
        name, _, seconds = part.removesuffix(" s").rpartition(" ")
        phases[name] = float(seconds)
    return {
        "ready": float(ready.group(1)) if ready else None,
        "phases": phases,
        "first": float(first.group(1)) if first else None,
        "shut_down": float(down.group(1)) if down else None,
        "down_at": float(down.group(2)) if down else None,
    }


def startup_lines(job: dict[str, Any]) -> list[str]:
    """Where the job's start-up went, and the run with nothing to read."""

    def phases(startup: dict[str, Any]) -> str:
        return ", ".join(f"{n} {v:.1f} s" for n, v in startup["phases"].items()) or "-"

    def after(startup: dict[str, Any], wall: float) -> str:
        """The query's run, the shut-down and the process's exit, after ``ready``."""
        if startup["ready"] is None or startup["down_at"] is None:
            return "-"
        query = startup["down_at"] - startup["shut_down"] - startup["ready"]
        exit_s = wall - startup["down_at"]
        return (
            f"query {query:.1f} s, shut-down {startup['shut_down']:.1f} s, "
            f"process exit {exit_s:.1f} s"
        )

    run, empty = job["startup"], job["empty_startup"]
    first = "-" if run["first"] is None else f"{run['first']:.1f} s"
    net = job["wall"] - job["empty_wall"]
    excluding = f"{job['tweets'] / net:,.0f} tweets/s" if net > 0 else "-"
    return [
        f"job start-up: first micro-batch committed {first} after the process started; "
        f"ready {run['ready'] or 0:.1f} s: {phases(run)}",
        f"run with nothing to read, same checkpoint: {job['empty_wall']:.1f} s wall; ready "
        f"{empty['ready'] or 0:.1f} s: {phases(empty)}; then {after(empty, job['empty_wall'])}",
        f"job rate excluding start-up (wall minus the run with nothing to read): {excluding}",
    ]


def run_plain(bootstrap: str, topic: str) -> dict[str, float]:
    out = f"bench-plain-{uuid.uuid4().hex[:8]}"
    ensure_topics(bootstrap, [out], 4)
    wall, peak, text = run_measured([PY, str(ROOT / "bench/plain_loop.py"), bootstrap, topic, out])
    match = re.search(r"tweets=(\d+) seconds=([\d.]+)", text)
    assert match, text[-2000:]
    return {
        "tweets": int(match.group(1)),
        "seconds": float(match.group(2)),
        "wall": wall,
        "peak": peak,
    }


def run_builtin(bootstrap: str, topic: str, work: Path, count: int) -> dict[str, float]:
    out = f"bench-builtin-{uuid.uuid4().hex[:8]}"
    ensure_topics(bootstrap, [out], 4)
    command = [PY, str(ROOT / "bench/spark_builtin.py"), bootstrap, topic, out, str(work / out)]
    wall, peak, text = run_measured(command)
    match = re.search(r"rows=(\d+) seconds=([\d.]+)", text)
    assert match, text[-2000:]
    return {"tweets": count, "seconds": float(match.group(2)), "wall": wall, "peak": peak}


def run_extractors(bootstrap: str, topic: str) -> dict[str, float]:
    """Tweets/s of the hashtag step as the JVM function and as an Arrow UDF."""
    _, _, text = run_measured([PY, str(ROOT / "bench/extractor_bench.py"), bootstrap, topic])
    rates = {}
    for name, rows, seconds in re.findall(r"name=(.+?) rows=(\d+) seconds=([\d.]+)", text):
        rates[name] = int(rows) / float(seconds)
    return rates


def median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The run with the median processing time (its own wall time and memory)."""
    ordered = sorted(runs, key=lambda r: r["seconds"])
    return ordered[len(ordered) // 2]


HEADER = ("tweets", "seconds", "tweets/s", "wall s", "wall t/s", "peak MB")
FIRST = "run (median of the rounds)"


def cells(r: dict[str, Any]) -> tuple[str, ...]:
    return (
        f"{int(r['tweets']):,}",
        f"{r['seconds']:.2f}",
        f"{r['tweets'] / r['seconds']:,.0f}",
        f"{r['wall']:.1f}",
        f"{r['tweets'] / r['wall']:,.0f}",
        f"{r['peak'] / 2**20:,.0f}",
    )


def by_round(r: dict[str, Any]) -> str:
    return ", ".join(f"{rate:,.0f}" for rate in r["round_rates"])


def ratios(results: dict[str, dict[str, Any]]) -> dict[str, float]:
    """The job's tweets/s over each peer's."""
    job = results[JOB]
    rate = job["tweets"] / job["seconds"]
    return {
        name: rate / (peer["tweets"] / peer["seconds"])
        for name, peer in results.items()
        if name != JOB
    }


def report(results: dict[str, dict[str, Any]]) -> None:
    print()
    print(f"{FIRST:<34}" + "".join(f"{h:>11}" for h in HEADER))
    for name, r in results.items():
        print(f"{name:<34}" + "".join(f"{c:>11}" for c in cells(r)))
    print()
    for name, r in results.items():
        print(f"{name}: tweets/s by round {by_round(r)}")
    print()
    for name, ratio in ratios(results).items():
        print(f"job vs {name}: {ratio:.2f}x")
    print()
    for line in startup_lines(results[JOB]):
        print(line)


def markdown(
    path: Path, results: dict[str, dict[str, Any]], extractors: dict[str, float],
    args: argparse.Namespace, seconds: float, spark_version: str,
) -> None:  # fmt: skip
    lines = [
        "# The hashtags job against its peers",
        "",
        md.measured(__file__, seconds, spark_version=spark_version, master="local[2]"),
        "",
        md.parameters({"count": args.count, "repeat": args.repeat,
                       "skip": ",".join(args.skip) or "none"}),
        "",
        *md.table((FIRST, *HEADER, "tweets/s by round", "job vs it"), [
            (name, *cells(r), by_round(r), "" if name == JOB else f"{ratios(results)[name]:.2f}x")
            for name, r in results.items()
        ]),
        "",
        f"The same {args.count:,} generated tweets (seed 42, one topic of 4 partitions on the "
        "broker beside the job), read whole by each in one batch, one after another, "
        "`repeat` rounds: the row of the round with the median processing time. Seconds: "
        "from the first read to the last commit (the job's own summary; the peers time the "
        "same span); wall: the whole process, start-up included; peak MB: the most resident "
        "memory of the process tree (JVM + Python). The job runs end to end "
        "(`trending run hashtags --available-now`, `local[2]`); the plain loop is a "
        "confluent-kafka Python consumer computing the same windows; the built-in is "
        "`groupBy(window(ts, 5m, 1m), tag).count()` in append mode.",
        "",
        "The job's start-up, from its own lines (median round), then a second run on the same "
        "checkpoint with nothing to read:",
        "",
        *(f"* {line}" for line in startup_lines(results[JOB])),
    ]  # fmt: skip
    if extractors:
        lines += [
            "",
            "The hashtag step alone (decode + extract, noop sink, warm JVM):",
            "",
            *md.table(("extractor", "tweets/s"), [(n, f"{r:,.0f}") for n, r in extractors.items()]),
        ]
    md.write(path, lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3, help="rounds; the median is shown")
    parser.add_argument("--skip", nargs="*", default=[], choices=["plain", "builtin", "extractor"])
    parser.add_argument(
        "--markdown", type=Path, help="also write the tables as Markdown to this file"
    )
    args = parser.parse_args()
    began = time.monotonic()
    os.environ.setdefault("PYSPARK_PYTHON", PY)
    with bench_broker(ROOT / "build" / "bench" / "broker") as bootstrap:
        topic = ensure_data(bootstrap, args.count)
        with tempfile.TemporaryDirectory(prefix="bench-") as tmp:
            work = Path(tmp)
            runs: dict[str, list[dict[str, Any]]] = {}
            for round_ in range(1, args.repeat + 1):
                runs.setdefault(JOB, []).append(run_job(bootstrap, topic, work))
                if "plain" not in args.skip:
                    runs.setdefault(PLAIN, []).append(run_plain(bootstrap, topic))
                if "builtin" not in args.skip:
                    runs.setdefault(BUILTIN, []).append(
                        run_builtin(bootstrap, topic, work, args.count)
                    )
                print(f"round {round_}/{args.repeat} done", flush=True)
            results = {
                name: median_run(rs) | {"round_rates": [r["tweets"] / r["seconds"] for r in rs]}
                for name, rs in runs.items()
            }
            report(results)
            extractors: dict[str, float] = {}
            if "extractor" not in args.skip:
                print("\nhashtag step alone (decode + extract, noop sink, warm JVM):")
                extractors = run_extractors(bootstrap, topic)
                for name, rate in extractors.items():
                    print(f"  {name:<20}{rate:>12,.0f} tweets/s")
    if args.markdown:
        elapsed = time.monotonic() - began
        markdown(args.markdown, results, extractors, args, elapsed, md.pyspark_version())
    return 0


if __name__ == "__main__":
    sys.exit(main())
