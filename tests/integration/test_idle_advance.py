"""``--idle-advance D`` on a stream that stops (docs/operations.md): a running job whose input
has gone quiet moves its event time on with the wall clock, so its last windows close and their
finals are published, each once; nothing is published twice across a restart."""

from __future__ import annotations

import os
import random
import signal
import time
import uuid
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from connectors.avro import AvroCodec
from connectors.kafka import ensure_topics, producer
from tests.support.hashtags import finals_of, independent_finals, random_tweets
from tests.support.jobs import start_job, wait_logged
from tests.support.kafka import read_all

pytestmark = pytest.mark.integration

SIZE, HOP = 4_000, 2_000


def hashtags_command(bootstrap: str, tag: str, checkpoint: Path, *extra: str) -> list[str]:
    import sys

    return [
        sys.executable, "-m", "trending.cli", "run", "hashtags", "--master", "local[2]",
        "--warm-up-rows", "0", "--bootstrap-servers", bootstrap,
        "--size", f"{SIZE}ms", "--hop", f"{HOP}ms", "--lateness", "1s", "--partitions", "1",
        "--input-topic", f"tweets-{tag}", "--output-topic", f"trending-{tag}",
        "--late-topic", f"late-{tag}", "--dead-letter-topic", f"dlq-{tag}",
        "--checkpoint", str(checkpoint), "--metrics-port", "0", "--trigger", "500ms", *extra,
    ]  # fmt: skip


def wait_for(check: Callable[[], Any], timeout: float, what: str, log: list[str]) -> Any:
    """``check()`` once it is true; a check that fails (the job has not made its output topics
    yet) counts as false."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            found = check()
        except AssertionError:
            found = None
        if found:
            return found
        assert time.monotonic() < deadline, f"{what}:\n" + "".join(log)[-4000:]
        time.sleep(1)


def stop(process: Any) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(60)
        except Exception:
            os.killpg(process.pid, signal.SIGKILL)


def test_the_last_windows_of_a_quiet_hashtag_stream_become_final_once(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    # tweets 10 ms apart over 12 s of event time, then nothing: without an advance the windows
    # within lateness + size of the newest tweet never close
    tweets = random_tweets(random.Random(5), 1_200, ["spark", "kafka", "flink", "beam"], 7, 10)
    end = {"id": -1, "user": "x", "lang": None, "text": "", "created_at": 2**50}
    expected = independent_finals([*tweets, end], SIZE, HOP, 0)  # every window, closed
    assert max(expected) >= tweets[-1]["created_at"] - SIZE
    tag = uuid.uuid4().hex[:8]
    ensure_topics(kafka_bootstrap, [f"tweets-{tag}"], partitions=1)
    sink, codec = producer(kafka_bootstrap), AvroCodec("tweet")
    sink.produce_many(f"tweets-{tag}", ((b"k", codec.encode(t)) for t in tweets))
    sink.flush(30)
    command = hashtags_command(kafka_bootstrap, tag, tmp_path / "cp", "--idle-advance", "2s")
    topk = AvroCodec("trending_topk")

    def published() -> list[dict[str, Any]]:
        return [topk.decode(r.value) for r in read_all(kafka_bootstrap, f"trending-{tag}")]

    process, lines = start_job(command)
    try:
        wait_logged(lines, r"batch 0: ", process=process)
        wait_for(
            lambda: finals_of(published()) == expected, 240, "the last finals never came", lines
        )
        assert any("watermark advanced to" in line for line in lines)
    finally:
        stop(process)
    # a restart reads the advances again and publishes nothing twice
    process, lines = start_job(command)
    try:
        wait_logged(lines, r"hashtags job running", process=process)
        time.sleep(8)  # a few idle advances more
    finally:
        stop(process)
    records = published()
    assert finals_of(records) == expected
    revisions = Counter((r["window_start"], r["revision"]) for r in records)
    assert max(revisions.values()) == 1
    assert sum(r["is_final"] for r in records) == len(expected)


def test_the_windows_job_makes_every_row_with_an_end_final_on_a_quiet_stream(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    # snapshot sums per key; the input stops, and the rows the idle advances pass are published
    # (every row that ends: those of edges never closed end at the end of time and stay open)
    import json

    from tests.integration.test_windows_job import Topics, make_lines, produce_lines, snapshot_sums

    topics = Topics(kafka_bootstrap)
    lines = make_lines(keys=4, events=300, seed=17)
    produce_lines(topics, lines, tmp_path)
    expected = Counter({row: n for row, n in snapshot_sums(lines).items() if row[2] is not None})
    assert len(expected) > 100
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"kind": "snapshot", "aggregate": "sum"}))
    import sys

    command = [
        sys.executable, "-m", "trending.cli", "run", "windows", str(spec), "--master", "local[2]",
        "--lateness", "1s", "--trigger", "500ms", "--idle-advance", "2s",
        "--checkpoint", str(tmp_path / "cp"), *topics.flags(),
    ]  # fmt: skip
    process, log = start_job(command)
    try:
        wait_for(lambda: topics.rows() == expected, 240, "the rows never became final", log)
        time.sleep(4)  # more advances: nothing else becomes final
    finally:
        stop(process)
    assert topics.rows() == expected
    assert topics.letters(topics.late) == []


def test_the_sensors_job_applies_the_events_waiting_for_the_watermark_on_a_quiet_stream(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    # without an advance the events within the lateness of the newest one wait for ever
    from tests.integration.test_sensors_job import Job, job_command, make_events, oracle

    job = Job(kafka_bootstrap, tmp_path)
    events = make_events(600, 300, seed=29)
    job.produce(events)
    newest = max(e["ts"] for e in events)
    # a query far away after everything: by the model, it moves the watermark past every event
    # and matches nothing
    end = {"kind": "q", "query_id": -1, "x": 1e6, "y": 1e6, "distance": 0.0,
           "ts": newest + 10**9, "partition": 0, "offset": 0}  # fmt: skip
    expected = oracle([*events, end], 25, 3, per_sensor=False)
    waiting = oracle(events, 25, 3, per_sensor=False)
    assert sum(expected[0].values()) > sum(waiting[0].values())  # some matches wait
    command = [
        arg for arg in job_command(job, "--window-readings", "25", "--threshold", "3")
        if arg != "--available-now"
    ]  # fmt: skip
    process, log = start_job([*command, "--trigger", "500ms", "--idle-advance", "2s"])
    try:
        wait_for(lambda: job.results() == expected, 240, "the waiting events never came", log)
    finally:
        stop(process)
    assert job.results() == expected
    assert read_all(kafka_bootstrap, job.topics["late"]) == []
