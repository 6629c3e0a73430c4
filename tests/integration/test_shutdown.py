"""Graceful shutdown: SIGTERM (what Kubernetes and compose send, to the driver only) lets the
micro-batch in progress commit, stops the job within its shutdown timeout with exit code 0 and
takes Spark's JVM with it; the next start resumes from the checkpoint with nothing lost or
published twice (finals equal an independent count, each window's revisions 1, 2, ... once)."""

from __future__ import annotations

import os
import random
import re
import signal
import time
import uuid
from collections import Counter
from pathlib import Path

import pytest

from connectors.avro import AvroCodec
from connectors.kafka import ensure_topics, producer
from tests.support.hashtags import finals_of, hashtags_command, independent_finals, random_tweets
from tests.support.jobs import run_to_end, start_job, wait_logged
from tests.support.kafka import read_all

pytestmark = pytest.mark.integration

SHUTDOWN_TIMEOUT_S = 15


def group_gone(pid: int, timeout_s: float = 20) -> bool:
    """Whether every process of the group ``pid`` (driver and JVM) has ended."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            os.killpg(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.2)
    return False


def test_sigterm_lets_the_batch_in_progress_commit_and_a_restart_loses_nothing(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    tweets = random_tweets(random.Random(71), 4_000, ["spark", "kafka", "flink", "beam"], 9, 300)
    codec = AvroCodec("tweet")
    tag = uuid.uuid4().hex[:8]
    ensure_topics(kafka_bootstrap, [f"tweets-{tag}"], partitions=1)
    sink = producer(kafka_bootstrap)
    sink.produce_many(f"tweets-{tag}", ((b"k", codec.encode(t)) for t in tweets))
    sink.flush(30)
    command = hashtags_command(
        kafka_bootstrap, tag, tmp_path / "checkpoint", "--max-offsets-per-trigger", "300",
        "--trigger", "100ms", "--shutdown-timeout", f"{SHUTDOWN_TIMEOUT_S}s",
    )  # fmt: skip
    process, lines = start_job(command)
    try:
        wait_logged(lines, r"batch 2: ")  # a backlog of about 10 batches is left
        signalled = time.monotonic()
        process.send_signal(signal.SIGTERM)
        assert process.wait(SHUTDOWN_TIMEOUT_S + 60) == 0, "".join(lines)[-4000:]
        stopped_in = time.monotonic() - signalled
        assert group_gone(process.pid), "Spark's JVM outlived the driver"
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    log = "".join(lines)
    assert "stopping on signal 15" in log
    after = log.split("stopping on signal 15", 1)[1]
    waited = re.search(r"waiting for micro-batch (\d+) to commit", after)
    if waited:  # the batch in progress finished and was published, not cut short
        assert re.search(rf"batch {waited.group(1)}: ", after), after[-3000:]
    assert stopped_in < SHUTDOWN_TIMEOUT_S + 30
    assert "hashtags job stopped" in after

    run_to_end([*command, "--available-now", "--max-offsets-per-trigger", "0"])
    topk = AvroCodec("trending_topk")
    published = [topk.decode(r.value) for r in read_all(kafka_bootstrap, f"trending-{tag}")]
    revisions = Counter((r["window_start"], r["revision"]) for r in published)
    assert max(revisions.values()) == 1  # nothing published twice
    by_window: dict[int, list[int]] = {}
    for r in published:
        by_window.setdefault(r["window_start"], []).append(r["revision"])
    assert all(sorted(v) == list(range(1, len(v) + 1)) for v in by_window.values())
    assert finals_of(published) == independent_finals(tweets, 120_000, 30_000, 0)
