"""Faults under a running hashtags job. Five SIGKILLs at seeded random points, each followed by a
restart from the checkpoint: the output equals a clean run's. On a broker of this module's own:
the broker paused (SIGSTOP) for 20 s mid-stream, then stopped and started again: the job
recovers from each without a restart of its own and ends normally. The output topic deleted
then created again, then refusing writes: the batch is sent again once it can be (after the
refusal, by a restart). In every case the finals, read ``read_committed``, equal an independent
count: nothing lost, nothing twice (after a deletion: from the first window the recreated topic
holds). Faults that need the same job share one run of it: a job's start-up is most of a run."""

from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from connectors.avro import AvroCodec
from connectors.broker import LocalBroker
from connectors.kafka import ensure_topics, producer
from tests.support.hashtags import independent_finals, random_tweets
from tests.support.jobs import crash_and_restart, kill_group, run_to_end, start_job, wait_logged
from tests.support.kafka import change_acls, delete_topic, read_all, write_denied
from tests.support.ports import local_broker
from tests.support.queries import SLOW_TEST_TIMEOUT

pytestmark = pytest.mark.integration
TAGS = ["spark", "kafka", "flink", "beam", "storm", "samza", "heron", "pulsar"]
SIZE_MS, HOP_MS, LATENESS_MS = 120_000, 30_000, 30_000
BATCH_DONE = r"batch \d+: \d+ revisions"  # a batch published (not a retry's line)
PUBLISHED = r"batch \d+: \d+ "  # a batch of any job published (not "skipped" or "failed")
Fault = Callable[[str], None]


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalBroker]:
    data = tmp_path_factory.mktemp("fault-kafka")
    with local_broker(data, acls=True) as local:
        yield local


def make_tweets(count: int, seed: int) -> list[dict[str, Any]]:
    """Tweets 1 s apart in event time, shuffled within +-10 s (never late at 30 s lateness)."""
    return random_tweets(random.Random(seed), count, TAGS, 11, 1_000, 10_000)


def produce(bootstrap: str, topic: str, tweets: list[dict[str, Any]]) -> None:
    """Tweets into a new two-partition topic, each acknowledged."""
    ensure_topics(bootstrap, [topic], partitions=2)
    codec = AvroCodec("tweet")
    sink = producer(bootstrap)
    sink.produce_many(topic, ((str(t["id"]).encode(), codec.encode(t)) for t in tweets))
    sink.flush(30)


def job_command(bootstrap: str, tmp_path: Path, tag: str, per_batch: int = 400) -> list[str]:
    return [
        sys.executable, "-m", "trending.cli", "run", "hashtags", "--available-now",
        "--warm-up-rows", "2000", "--master", "local[2]", "--bootstrap-servers", bootstrap,
        "--size", f"{SIZE_MS}ms", "--hop", f"{HOP_MS}ms", "--lateness", f"{LATENESS_MS}ms",
        "--max-offsets-per-trigger", str(per_batch), "--partitions", "2",
        "--input-topic", f"tweets-{tag}", "--output-topic", f"trending-{tag}",
        "--late-topic", f"late-{tag}", "--dead-letter-topic", f"dlq-{tag}",
        "--checkpoint", str(tmp_path / "checkpoint"), "--metrics-port", "0",
        # a Kafka call stuck on a coordinator that went away is given up sooner than in
        # production (60 s), so a fault's recovery takes less of the suite's time
        "--kafka-step-timeout", "20s",
    ]  # fmt: skip


def published(bootstrap: str, topic: str) -> list[tuple[int, int, bool, list[tuple[str, int]]]]:
    """Every record of the output topic, read_committed, as (window start, revision, final,
    top), after checking the revision rule: per window, revisions 1, 2, ... with none repeated
    or skipped, the final one last."""
    codec = AvroCodec("trending_topk")
    records = [codec.decode(r.value) for r in read_all(bootstrap, topic) if r.value]
    rows = sorted(
        (r["window_start"], r["revision"], r["is_final"],
         [(e["hashtag"], e["count"]) for e in r["top"]])
        for r in records
    )  # fmt: skip
    by_window: dict[int, list[tuple[int, bool]]] = {}
    for start, revision, final, _ in rows:
        by_window.setdefault(start, []).append((revision, final))
    for start, seen in by_window.items():
        assert [r for r, _ in seen] == list(range(1, len(seen) + 1)), (start, seen)
        assert not any(final for _, final in seen[:-1]), f"window {start} revised after final"
    return rows


def finals(bootstrap: str, topic: str) -> dict[int, list[tuple[str, int]]]:
    return {start: top for start, _, final, top in published(bootstrap, topic) if final}


def inject(job: subprocess.Popen[str], log: list[str], tag: str, *faults: tuple[str, Fault]) -> int:
    """For each ``(pattern, fault)`` in turn: once the job logged a line matching ``pattern``
    after the previous fault ended, ``fault(tag)`` (``tag`` names the job's topics). Returns
    how many lines were logged when the last fault ended."""
    seen = 0
    for pattern, fault in faults:
        assert wait_logged(log, pattern, process=job, after=seen), "the job ended before a fault"
        fault(tag)
        seen = len(log)
    return seen


def run_with_fault(
    broker: LocalBroker, tmp_path: Path, seed: int, *faults: tuple[str, Fault]
) -> tuple[str, list[dict[str, Any]], str]:
    """Run the job over 6,000 tweets; inject ``faults`` (see :func:`inject`); check it ends
    normally, with a batch published after the last fault. Returns the tag, the tweets and the
    log."""
    tag = uuid.uuid4().hex[:8]
    tweets = make_tweets(6_000, seed)
    produce(broker.bootstrap, f"tweets-{tag}", tweets)
    job, log = start_job(job_command(broker.bootstrap, tmp_path, tag))
    try:
        seen = inject(job, log, tag, *faults)
        try:
            code = job.wait(400)
        except subprocess.TimeoutExpired:
            code = None
        told = "".join(line for line in log if not line.startswith("%"))  # not librdkafka's
        assert code == 0, f"exit code {code}:\n{told[-6000:]}"
        assert re.search(BATCH_DONE, "".join(log[seen:])), "no batch after the last fault"
    finally:
        kill_group(job)
    assert read_all(broker.bootstrap, f"late-{tag}") == []
    return tag, tweets, "".join(log)


def run_through(broker: LocalBroker, tmp_path: Path, seed: int, *faults: tuple[str, Fault]) -> str:
    """:func:`run_with_fault`, then the finals equal an independent count."""
    tag, tweets, log = run_with_fault(broker, tmp_path, seed, *faults)
    expected = independent_finals(tweets, SIZE_MS, HOP_MS, LATENESS_MS)
    assert len(expected) > 150
    assert finals(broker.bootstrap, f"trending-{tag}") == expected
    return log


def pause_broker(broker: LocalBroker, seconds: float = 20) -> None:
    """SIGSTOP the broker's JVM for ``seconds``, then SIGCONT."""
    assert broker.process is not None
    os.kill(broker.process.pid, signal.SIGSTOP)
    try:
        time.sleep(seconds)
    finally:
        os.kill(broker.process.pid, signal.SIGCONT)


def restart_broker(broker: LocalBroker) -> None:
    """Stop the broker (SIGTERM), wait 5 s, start it again on the same ports and data."""
    broker.stop()
    time.sleep(5)
    broker.start()
    broker.wait_ready()


def longest_batch_s(log: str) -> float:
    """The longest time a batch took, from the job's progress lines."""
    return max(float(s) for s in re.findall(r"^.*batch \d+: .* in ([\d.]+)s \(", log, re.M))


@pytest.mark.timeout(SLOW_TEST_TIMEOUT)
def test_a_broker_paused_for_20_s_then_restarted_mid_stream_loses_nothing(
    broker: LocalBroker, tmp_path: Path
) -> None:
    """The broker paused (SIGSTOP) for 20 s after the job's second batch; once the job published
    a batch after the pause, the broker stopped and started again. The job recovers from each
    without a restart of its own, publishes after each, ends normally and loses nothing."""

    def pause(_tag: str) -> None:
        pause_broker(broker)

    def restart(_tag: str) -> None:
        restart_broker(broker)

    log = run_through(broker, tmp_path, 61, (r"batch 2: ", pause), (BATCH_DONE, restart))
    assert "hashtags job stopped" in log


@pytest.mark.timeout(SLOW_TEST_TIMEOUT)
def test_an_output_topic_deleted_then_refusing_writes_loses_nothing_from_its_return(
    broker: LocalBroker, tmp_path: Path
) -> None:
    """The output topic deleted (with what it held) after the job's second batch and created
    again 15 s later: the batch that met the missing topic is sent again and the job goes on.
    Once it published to the recreated topic, writes to it are denied by an ACL: the batch
    fails, the job stops with one clear line naming the refusal; once writes are allowed again
    a restart from the checkpoint sends that batch again. Every window closing after the
    recreation has its final, equal to an independent count, with revisions going on where
    they were: nothing lost, nothing twice."""
    tag = uuid.uuid4().hex[:8]
    tweets = make_tweets(6_000, seed=79)
    produce(broker.bootstrap, f"tweets-{tag}", tweets)
    command = job_command(broker.bootstrap, tmp_path, tag)
    deny = write_denied(f"trending-{tag}")

    def delete_and_recreate(tag: str) -> None:
        delete_topic(broker.bootstrap, f"trending-{tag}")
        time.sleep(15)
        ensure_topics(broker.bootstrap, [f"trending-{tag}"], partitions=2)

    def refuse_writes(_tag: str) -> None:
        change_acls(broker.bootstrap, create=deny)

    job, log = start_job(command)
    try:
        inject(job, log, tag, (r"batch 2: ", delete_and_recreate), (BATCH_DONE, refuse_writes))
        code = job.wait(300)
    finally:
        kill_group(job)
    told = "".join(line for line in log if not line.startswith("%"))
    assert code != 0, told[-4000:]
    assert re.search(r"error: .*(?i:authoriz)", told), told[-4000:]
    assert longest_batch_s(told) > 10  # a batch was held by the deletion
    change_acls(broker.bootstrap, delete=deny)
    run_to_end(command)
    codec = AvroCodec("trending_topk")
    records = [codec.decode(r.value) for r in read_all(broker.bootstrap, f"trending-{tag}")]
    by_window: dict[int, list[tuple[int, bool, list[tuple[str, int]]]]] = {}
    for r in records:
        top = [(e["hashtag"], e["count"]) for e in r["top"]]
        by_window.setdefault(r["window_start"], []).append((r["revision"], r["is_final"], top))
    got_finals = {}
    for start, seen in by_window.items():
        seen.sort()
        revisions = [revision for revision, _, _ in seen]
        assert revisions == list(range(revisions[0], revisions[0] + len(seen))), (start, seen)
        assert not any(final for _, final, _ in seen[:-1]), f"window {start} revised after final"
        if seen[-1][1]:
            got_finals[start] = seen[-1][2]
    expected = independent_finals(tweets, SIZE_MS, HOP_MS, LATENESS_MS)
    first = min(got_finals)
    assert len(got_finals) > 100  # the job went on writing after the topic came back
    assert got_finals == {start: top for start, top in expected.items() if start >= first}
    assert read_all(broker.bootstrap, f"late-{tag}") == []


@pytest.mark.timeout(SLOW_TEST_TIMEOUT)
def test_five_crashes_at_random_points_change_nothing(kafka_bootstrap: str, tmp_path: Path) -> None:
    # 35 batches: the five kills land (each 0-4 s after a run's first batch) well before its end
    tweets = make_tweets(10_500, seed=71)
    clean, crashed = uuid.uuid4().hex[:8], uuid.uuid4().hex[:8]
    for tag in (clean, crashed):
        produce(kafka_bootstrap, f"tweets-{tag}", tweets)
    run_to_end(job_command(kafka_bootstrap, tmp_path / "clean", clean, per_batch=300))
    command = job_command(kafka_bootstrap, tmp_path / "crashed", crashed, per_batch=300)
    killed, _ = crash_and_restart(command, seed=71)
    assert killed == 5
    expected = published(kafka_bootstrap, f"trending-{clean}")
    assert published(kafka_bootstrap, f"trending-{crashed}") == expected
    assert finals(kafka_bootstrap, f"trending-{crashed}") == independent_finals(
        tweets, SIZE_MS, HOP_MS, LATENESS_MS
    )
    assert read_all(kafka_bootstrap, f"late-{crashed}") == []


def survive_stall_restart_and_refusal(broker: LocalBroker, command: list[str], output: str) -> str:
    """Run ``command``: the broker paused for 20 s after batch 2; once a batch was published
    after it, the broker restarted; once one was published after that, writes to ``output``
    denied. The job goes on through the first two by itself and stops with one line naming the
    refusal at the third; once writes are allowed again a restart from the checkpoint ends the
    run. Returns the log of the faulted run."""
    deny = write_denied(output)

    def refuse_writes(_tag: str) -> None:
        change_acls(broker.bootstrap, create=deny)

    job, log = start_job(command)
    try:
        pause = (r"batch 2: ", lambda _tag: pause_broker(broker))
        restart = (PUBLISHED, lambda _tag: restart_broker(broker))
        inject(job, log, "", pause, restart, (PUBLISHED, refuse_writes))
        code = job.wait(300)
    finally:
        kill_group(job)
    told = "".join(line for line in log if not line.startswith("%"))
    assert code not in (0, None), told[-4000:]
    assert re.search(r"error: .*(?i:authoriz)", told), told[-4000:]
    change_acls(broker.bootstrap, delete=deny)
    run_to_end(command)
    return told


@pytest.mark.timeout(SLOW_TEST_TIMEOUT)
def test_the_sensors_job_survives_a_stalled_and_a_restarted_broker_and_a_refused_write(
    broker: LocalBroker, tmp_path: Path
) -> None:
    """The sensors job through a 20 s broker pause, a broker restart and denied writes to its
    matches topic: matches and popular readings, read read_committed, equal the seed model's
    (none missing, none twice)."""
    from tests.integration.test_sensors_job import Job, make_events, oracle
    from tests.integration.test_sensors_job import job_command as sensors_command

    job = Job(broker.bootstrap, tmp_path)
    events = make_events(1_000, 400, seed=83)  # 16 batches: room for three faults
    job.produce(events)
    flags = ("--size", "40", "--max-offsets-per-trigger", "90", "--kafka-step-timeout", "20s")
    survive_stall_restart_and_refusal(broker, sensors_command(job, *flags), job.topics["matches"])
    assert job.results() == oracle(events, 40, 3, False)
    assert read_all(broker.bootstrap, job.topics["late"]) == []


@pytest.mark.timeout(SLOW_TEST_TIMEOUT)
def test_the_windows_job_survives_a_stalled_and_a_restarted_broker_and_a_refused_write(
    broker: LocalBroker, tmp_path: Path
) -> None:
    """The temporal windows job (snapshot sums) through a 20 s broker pause, a broker restart
    and denied writes to its output topic: the rows, read read_committed, equal a sweep's (none
    missing, none twice)."""
    from tests.integration.test_windows_job import snapshot_job, snapshot_sums

    # 900 events, 15 batches: room for three faults
    flags = ("--available-now", "--max-offsets-per-trigger", "60", "--kafka-step-timeout", "20s")
    topics, lines, command = snapshot_job(broker.bootstrap, tmp_path, 89, *flags)
    survive_stall_restart_and_refusal(broker, command, topics.output)
    assert topics.letters(topics.late) == []
    assert topics.rows() == snapshot_sums(lines)
