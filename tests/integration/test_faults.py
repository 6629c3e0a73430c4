"""Faults under running jobs, on a broker of this module's own (the crashes are in
``test_crashes``). Every job and the SPL example side by side through a broker paused (SIGSTOP)
for 20 s mid-stream, then stopped and started again, then refusing writes: each recovers from
the first two without a restart of its own and stops with one clear line at the third; a
restart ends the run. The hashtags job's output topic deleted then created again, then refusing
writes: the batch is sent again once it can be (after the refusal, by a restart). In every case
the output, read ``read_committed``, holds nothing twice and misses nothing (after a deletion:
from the first window the recreated topic holds). Jobs run side by side and faults share runs:
a job's start-up is most of a run, and leaves a core idle much of the time."""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from connectors.avro import AvroCodec, encode_tweet
from connectors.broker import LocalBroker
from connectors.kafka import ensure_topics, producer
from tests.support.hashtags import independent_finals, random_tweets
from tests.support.jobs import (
    kill_group,
    run_to_end,
    start_job,
    wait_logged,
)
from tests.support.kafka import change_acls, delete_topic, read_all, write_denied
from tests.support.ports import local_broker
from tests.support.queries import SLOW_TEST_TIMEOUT

pytestmark = [pytest.mark.integration, pytest.mark.chaos]
TAGS = ["spark", "kafka", "flink", "beam", "storm", "samza", "heron", "pulsar"]
SIZE_MS, HOP_MS, LATENESS_MS = 120_000, 30_000, 30_000
BATCH_DONE = r"batch \d+: \d+ revisions"  # a batch published (not a retry's line)
PUBLISHED = r"batch \d+: \d+ "  # a batch of any job published (not "skipped" or "failed")
Fault = Callable[[str], None]
# A step of a batch's transaction that has not returned by then is given up and the batch sent
# again with a new producer. Shorter than in production (60 s), so that a fault's recovery takes
# less of the suite's time: after a stalled broker a commit can wait on it for the whole step.
STEP_TIMEOUT = ("--kafka-step-timeout", "10s")
FEED_TIMEOUT_S = 180.0  # how long the test's own clients wait for the broker after a fault


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalBroker]:
    data = tmp_path_factory.mktemp("fault-kafka")
    with local_broker(data, acls=True) as local:
        yield local


def make_tweets(count: int, seed: int) -> list[dict[str, Any]]:
    """Tweets 1 s apart in event time, shuffled within +-10 s (never late at 30 s lateness)."""
    return random_tweets(random.Random(seed), count, TAGS, 11, 1_000, 10_000)


def produce(bootstrap: str, topic: str, tweets: list[dict[str, Any]], partitions: int = 2) -> None:
    """Tweets into a topic of ``partitions`` (made if new), each acknowledged."""
    ensure_topics(bootstrap, [topic], partitions=partitions, timeout=FEED_TIMEOUT_S)
    codec = AvroCodec("tweet")
    sink = producer(bootstrap)
    sink.produce_many(topic, ((str(t["id"]).encode(), codec.encode(t)) for t in tweets))
    sink.flush(30)


def job_command(bootstrap: str, tmp_path: Path, tag: str, per_batch: int = 400) -> list[str]:
    return [
        sys.executable, "-m", "trending.cli", "run", "hashtags", "--available-now",
        "--warm-up-rows", "0", "--master", "local[2]", "--bootstrap-servers", bootstrap,
        "--size", f"{SIZE_MS}ms", "--hop", f"{HOP_MS}ms", "--lateness", f"{LATENESS_MS}ms",
        "--max-offsets-per-trigger", str(per_batch), "--partitions", "2",
        "--input-topic", f"tweets-{tag}", "--output-topic", f"trending-{tag}",
        "--late-topic", f"late-{tag}", "--dead-letter-topic", f"dlq-{tag}",
        "--checkpoint", str(tmp_path / "checkpoint"), "--metrics-port", "0",
        *STEP_TIMEOUT,
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


def pause_broker(broker: LocalBroker, seconds: float = 20) -> None:
    """SIGSTOP the broker's JVM for ``seconds``, then SIGCONT and wait until it answers again
    (the jobs' reconnections piled up meanwhile: on a busy machine a new client can wait
    tens of seconds for its turn)."""
    assert broker.process is not None
    os.kill(broker.process.pid, signal.SIGSTOP)
    try:
        time.sleep(seconds)
    finally:
        os.kill(broker.process.pid, signal.SIGCONT)
    broker.wait_ready(FEED_TIMEOUT_S)


def restart_broker(broker: LocalBroker) -> None:
    """Stop the broker (SIGTERM), wait 5 s, start it again on the same ports and data (the
    feeds' ``ensure_topics`` then waits for each input partition's leader)."""
    broker.stop()
    time.sleep(5)
    broker.start()
    broker.wait_ready(FEED_TIMEOUT_S)


def longest_batch_s(log: str) -> float:
    """The longest time a batch took, from the job's progress lines."""
    return max(float(s) for s in re.findall(r"^.*batch \d+: .* in ([\d.]+)s \(", log, re.M))


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


@dataclass
class Participant:
    """One job of the shared fault run: its commands (``running``: processing-time trigger,
    ``to_end``: ``--available-now``), the output topic whose writes are refused, how to feed its
    input (chunk ``i`` of :data:`CHUNKS`) and the check of everything it published."""

    name: str
    running: list[str]
    to_end: list[str]
    refused: str
    feed: Callable[[int], None]
    check: Callable[[], None]


CHUNKS = (0.55, 0.15, 0.15, 0.15)  # the input's shares: at the start, after each fault
TRIGGER = ("--trigger", "500ms")


def chunk(items: list[Any], i: int) -> list[Any]:
    """Share ``i`` of ``items`` (see :data:`CHUNKS`), in their order."""
    bounds = [round(len(items) * sum(CHUNKS[:j])) for j in range(len(CHUNKS) + 1)]
    return items[bounds[i] : bounds[i + 1]]


def running(command: list[str], *flags: str) -> list[str]:
    """``command`` without ``--available-now`` (it runs on until stopped), with ``flags``."""
    return [arg for arg in command if arg != "--available-now"] + list(flags)


def hashtags_participant(bootstrap: str, tmp_path: Path) -> Participant:
    tag = uuid.uuid4().hex[:8]
    tweets = make_tweets(6_000, seed=61)
    command = job_command(bootstrap, tmp_path, tag)

    def check() -> None:
        expected = independent_finals(tweets, SIZE_MS, HOP_MS, LATENESS_MS)
        assert len(expected) > 150
        assert finals(bootstrap, f"trending-{tag}") == expected
        assert read_all(bootstrap, f"late-{tag}") == []

    return Participant(
        "hashtags", running(command, *TRIGGER), command, f"trending-{tag}",
        # one input partition: a chunk's records arrive in offset order, so none of them can
        # be read after later ones of the same chunk and fall behind the watermark
        lambda i: produce(bootstrap, f"tweets-{tag}", chunk(tweets, i), partitions=1), check,
    )  # fmt: skip


def sensors_participant(bootstrap: str, tmp_path: Path) -> Participant:
    from tests.integration.test_sensors_job import Job, make_events, oracle
    from tests.integration.test_sensors_job import job_command as sensors_command

    job = Job(bootstrap, tmp_path)
    events = make_events(1_000, 400, seed=83)
    flags = ("--window-readings", "40", "--max-offsets-per-trigger", "90", *STEP_TIMEOUT)
    command = sensors_command(job, *flags)

    def check() -> None:
        assert job.results() == oracle(events, 40, 3, False)
        assert read_all(bootstrap, job.topics["late"]) == []

    return Participant(
        "sensors", running(command, *TRIGGER), command, job.topics["matches"],
        lambda i: job.produce(chunk(events, i)), check,
    )  # fmt: skip


def windows_participant(bootstrap: str, tmp_path: Path) -> Participant:
    from tests.integration.test_windows_job import LATENESS_MS as WINDOWS_LATENESS_MS
    from tests.integration.test_windows_job import Topics, make_lines, produce_lines, snapshot_sums

    topics = Topics(bootstrap)
    lines = make_lines(keys=4, events=900, seed=89)
    spec = tmp_path / "snapshot.json"
    spec.write_text(json.dumps({"kind": "snapshot", "aggregate": "sum"}))
    command = [
        sys.executable, "-m", "trending.cli", "run", "windows", str(spec), "--available-now",
        "--checkpoint", f"file://{tmp_path}/windows-checkpoint",
        "--lateness", f"{WINDOWS_LATENESS_MS}ms", "--max-offsets-per-trigger", "60",
        *STEP_TIMEOUT, *topics.flags(),
    ]  # fmt: skip

    def feed(i: int) -> None:
        folder = tmp_path / f"windows-chunk-{i}"
        folder.mkdir()
        produce_lines(topics, chunk(lines, i), folder)

    def check() -> None:
        assert topics.letters(topics.late) == []
        assert topics.rows() == snapshot_sums(lines)

    return Participant("windows", running(command, *TRIGGER), command, topics.output, feed, check)


def spl_participant(bootstrap: str, tmp_path: Path) -> Participant:
    from tests.integration import test_spl_kafka_example as spl

    rng = random.Random(31)
    users = [f"u{rng.randrange(6)}" for _ in range(400)]
    suffix = uuid.uuid4().hex[:8]
    source, sink, dead = (f"{name}-{suffix}" for name in ("tweets", "windows", "dead"))
    ensure_topics(bootstrap, [source], partitions=1)
    command = [
        sys.executable, str(spl.EXAMPLE), "--bootstrap", bootstrap, "--topic", source,
        "--spec", json.dumps(spl.SPEC), "--output-topic", sink, "--dead-letter-topic", dead,
        "--checkpoint", str(tmp_path / "checkpoint"), "--available-now",
        "--max-offsets-per-trigger", "20", *STEP_TIMEOUT,
    ]  # fmt: skip

    def feed(i: int) -> None:
        out = producer(bootstrap)
        out.produce_many(source, ((b"k", encode_tweet(t)) for t in chunk(spl.tweets(users), i)))
        out.flush(30)

    def check() -> None:
        assert spl.published_events(bootstrap, sink) == spl.expected_events(users)
        assert read_all(bootstrap, dead) == []

    return Participant("spl-example", running(command), command, sink, feed, check)


def await_published(jobs: dict[str, tuple[subprocess.Popen[str], list[str]]], seen: dict[str, int],
                    pattern: str = PUBLISHED) -> None:  # fmt: skip
    """Wait until every job logged a line matching ``pattern`` after its line ``seen[name]``."""
    for name, (process, log) in jobs.items():
        assert wait_logged(log, pattern, process=process, after=seen[name]), f"{name} ended"


@pytest.mark.timeout(SLOW_TEST_TIMEOUT)
def test_every_job_survives_a_stalled_and_a_restarted_broker_and_refused_writes(
    broker: LocalBroker, tmp_path: Path
) -> None:
    """The three jobs and the SPL example run side by side on one broker, each with a backlog
    (batches bounded). Once each published batch 2, the broker is paused (SIGSTOP) for 20 s; once
    each published after that (new input arrives meanwhile), the broker is stopped and started
    again 5 s later; once each published after that, writes to each one's output topic are denied
    by an ACL. Each goes through the first two by itself and stops with one line naming the
    refusal at the third; once writes are allowed again a restart from the checkpoint
    (``--available-now``) takes it to the end. Everything each published, read
    ``read_committed``, equals its independent model: none missing, none twice."""
    participants = []
    builders = (hashtags_participant, sensors_participant, windows_participant, spl_participant)
    for build in builders:
        folder = tmp_path / build.__name__
        folder.mkdir()
        participants.append(build(broker.bootstrap, folder))
    for p in participants:
        p.feed(0)
    jobs = {p.name: start_job(p.running) for p in participants}
    denied = [write_denied(p.refused) for p in participants]
    try:
        seen = dict.fromkeys(jobs, 0)
        await_published(jobs, seen, r"batch 2: ")
        for i, fault in enumerate((lambda: pause_broker(broker), lambda: restart_broker(broker))):
            fault()
            seen = {name: len(log) for name, (_, log) in jobs.items()}
            for p in participants:
                p.feed(i + 1)
            await_published(jobs, seen)
        for deny in denied:
            change_acls(broker.bootstrap, create=deny)
        for p in participants:
            p.feed(3)
        codes = {name: process.wait(300) for name, (process, _) in jobs.items()}
    finally:
        for process, _ in jobs.values():
            kill_group(process)
    for name, (_, log) in jobs.items():
        told = "".join(line for line in log if not line.startswith("%"))  # not librdkafka's
        assert codes[name] not in (0, None), f"{name}:\n{told[-4000:]}"
        assert re.search(r"error: .*(?i:authoriz)", told), f"{name}:\n{told[-4000:]}"
    for deny in denied:
        change_acls(broker.bootstrap, delete=deny)
    with ThreadPoolExecutor(len(participants)) as pool:
        for done in [pool.submit(run_to_end, p.to_end) for p in participants]:
            done.result()
    for p in participants:
        p.check()
