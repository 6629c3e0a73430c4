"""A commit marker that is gone, on a real broker: Kafka deletes the committed offset of a group
without members after ``offsets.retention.minutes`` of quiet. The writer then recovers the last
batch from the state records in the commits topic, however other producers' transactions stand
there, and a job goes on with nothing lost and nothing twice; when the state record is gone too,
the job refuses, and the recovery it names publishes every window once."""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.cimpl import NewTopic

from connectors.broker import LocalBroker, free_port
from connectors.kafka import admin, ensure_topics
from connectors.transactions import COMMITS_TOPIC, Committed, OutRecord, TransactionalBatchWriter
from tests.support.jobs import CrashCase, run_to_end
from tests.support.kafka import read_all
from tests.support.ports import retry_on_bind
from tests.support.queries import SLOW_TEST_TIMEOUT
from tests.support.spark_cluster import cluster_env
from trending.errors import UserError
from trending.jobs.faults import CRASH_AFTER_COMMIT, CRASH_EXIT_CODE

pytestmark = pytest.mark.integration


def delete_marker(bootstrap: str, group: str) -> None:
    """Delete ``group`` and its committed offsets, as Kafka does once they expired (an empty
    group whose offsets are all gone is deleted with them)."""
    client = admin(bootstrap)  # held until the answers came
    for future in client.delete_consumer_groups([group], request_timeout=30).values():
        future.result(30)


def marker_of(bootstrap: str, group: str, topic: str) -> tuple[int, str | None]:
    """The offset and metadata ``group`` has committed on partition 0 of ``topic``."""
    reader = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        (committed,) = reader.committed([TopicPartition(topic, 0)], timeout=30)
    finally:
        reader.close()
    return committed.offset, committed.metadata


def open_foreign_transaction(bootstrap: str, topic: str) -> Producer:
    """Another producer's transaction on ``topic``, left open (a stalled job, a hanging one)."""
    foreign = Producer({"bootstrap.servers": bootstrap, "transactional.id": uuid.uuid4().hex})
    foreign.init_transactions(60)
    foreign.begin_transaction()
    foreign.produce(topic, key=b"another-job", value=b"open")
    assert foreign.flush(30) == 0
    return foreign


@pytest.fixture
def names(kafka_bootstrap: str, unique_topic: Callable[[str], str]) -> tuple[str, str, str]:
    """A commits topic, an output topic (created) and a transactional id of a test's own."""
    commits, out = unique_topic("commits"), unique_topic("out")
    ensure_topics(kafka_bootstrap, [out], partitions=1)
    return commits, out, f"job-{uuid.uuid4().hex[:8]}"


def write(bootstrap: str, job: str, commits: str, batches: dict[int, Any], out: str) -> None:
    """Publish ``batches`` (id: state; the record's value is the id) under ``job``, then stop."""
    writer = TransactionalBatchWriter(bootstrap, job, commits_topic=commits)
    try:
        for batch_id, state in batches.items():
            writer.write_batch(batch_id, [OutRecord(out, b"k", str(batch_id).encode())], state)
    finally:
        writer.close()


def test_a_recovery_reads_past_a_foreign_transaction_open_below_the_newest_record(
    kafka_bootstrap: str, names: tuple[str, str, str]
) -> None:
    """Offsets on the commits topic (the odd ones are this job's transaction markers)::

        0: state of batch 0 (this job)   2: another producer's record, transaction open
        3: state of batch 1              5: state of batch 2

    A read_committed reader sees only up to offset 2 (the last stable offset) while that
    transaction is open, where batch 0 is newest. The recovery must not take batch 0: it waits,
    refuses when the transaction stays open, and once it ended finds batch 2 and commits the
    marker again, which the next start reads directly."""
    commits, out, job = names
    write(kafka_bootstrap, job, commits, {0: {"seen": 0}}, out)
    foreign = open_foreign_transaction(kafka_bootstrap, commits)
    write(kafka_bootstrap, job, commits, {1: {"seen": 1}, 2: {"seen": [1, 2]}}, out)
    delete_marker(kafka_bootstrap, job)
    restarted = TransactionalBatchWriter(kafka_bootstrap, job, commits_topic=commits)
    try:
        assert restarted.committed == Committed()  # the marker is gone
        with pytest.raises(
            UserError, match=r"transaction is open on it \(partition 0 at offset 2\)"
        ):
            restarted.recover_committed(timeout_s=3)
        threading.Timer(2.0, lambda: foreign.abort_transaction(30)).start()
        assert restarted.recover_committed() == Committed(2, {"seen": [1, 2]})
    finally:
        restarted.close()
    assert marker_of(kafka_bootstrap, job, commits) == (6, "2")  # batch 2's record is at 5
    again = TransactionalBatchWriter(kafka_bootstrap, job, commits_topic=commits)
    try:
        assert again.committed == Committed(2, {"seen": [1, 2]})  # from the marker, no scan
        again.write_batch(3, [OutRecord(out, b"k", b"3")], {"seen": 3})
    finally:
        again.close()
    assert [r.value for r in read_all(kafka_bootstrap, out)] == [b"0", b"1", b"2", b"3"]


def test_a_state_record_deleted_by_a_tombstone_leaves_no_batch(
    kafka_bootstrap: str, names: tuple[str, str, str]
) -> None:
    """The job's record replaced by a tombstone (key, null value: how a compacted topic
    deletes a key) and its marker gone: the recovery finds no batch rather than failing."""
    commits, out, job = names
    write(kafka_bootstrap, job, commits, {0: {"seen": 0}, 1: {"seen": 1}}, out)
    tombstone = Producer({"bootstrap.servers": kafka_bootstrap})
    tombstone.produce(commits, key=job.encode(), value=None)
    assert tombstone.flush(30) == 0
    delete_marker(kafka_bootstrap, job)
    restarted = TransactionalBatchWriter(kafka_bootstrap, job, commits_topic=commits)
    try:
        assert restarted.recover_committed() == Committed()
        assert restarted.last_committed == -1
    finally:
        restarted.close()


def test_a_commits_topic_whose_records_expire_is_refused(
    kafka_bootstrap: str, unique_topic: Callable[[str], str]
) -> None:
    """A commits topic created beforehand with Kafka's default policy (delete after 7 days)
    would lose a quiet job's state record about when its marker expires: refused, naming the
    fix. One that deletes nothing by age or size is accepted."""
    deleting, kept = unique_topic("commits"), unique_topic("commits")
    client = admin(kafka_bootstrap)
    unbounded = {"cleanup.policy": "compact,delete", "retention.ms": "-1", "retention.bytes": "-1"}
    topics = [NewTopic(deleting, 1, 1), NewTopic(kept, 1, 1, config=unbounded)]
    for future in client.create_topics(topics, request_timeout=30).values():
        future.result(30)
    with pytest.raises(UserError) as refused:
        TransactionalBatchWriter(kafka_bootstrap, "job-refused", commits_topic=deleting)
    assert f"topic {deleting} has cleanup.policy=delete with retention.ms=604800000" in str(
        refused.value
    )
    assert "--add-config cleanup.policy=compact" in str(refused.value)
    TransactionalBatchWriter(kafka_bootstrap, "job-kept", commits_topic=kept).close()


class ShortRetentionBroker(LocalBroker):
    """A broker that expires an empty group's offsets one minute after their last commit,
    checking every second (Kafka's defaults: 7 days, every 10 minutes)."""

    def _write_config(self) -> Path:
        config = super()._write_config()
        with config.open("a", encoding="utf-8") as properties:
            properties.write("offsets.retention.minutes=1\n")
            properties.write("offsets.retention.check.interval.ms=1000\n")
        return config


@pytest.fixture
def short_retention(tmp_path: Path) -> Iterator[str]:
    def start() -> LocalBroker:
        shutil.rmtree(tmp_path / "broker", ignore_errors=True)
        broker = ShortRetentionBroker(free_port(), tmp_path / "broker", free_port())
        return broker.__enter__()

    broker = retry_on_bind(start)
    try:
        yield broker.bootstrap
    finally:
        broker.stop()


def test_a_marker_kafka_expired_is_recovered_and_nothing_is_published_twice(
    short_retention: str,
) -> None:
    """No deletion by hand: the broker itself expires the marker after a minute of quiet (its
    ``offsets.retention.minutes``). A restart finds no marker; the recovery reads batch 1 (not
    the aborted batch 2) and commits the marker again, which then outlives another check."""
    bootstrap, commits, out, job = short_retention, "trending-commits", "out", "job-expired"
    ensure_topics(bootstrap, [out], partitions=1)
    write(bootstrap, job, commits, {0: {"seen": 0}}, out)
    write(bootstrap, job, commits, {1: {"seen": [0, 1]}}, out)
    writer = TransactionalBatchWriter(bootstrap, job, commits_topic=commits)

    def aborted() -> Iterator[OutRecord]:
        yield OutRecord(out, b"k", b"aborted")
        raise RuntimeError("injected")

    try:
        with pytest.raises(RuntimeError):
            writer.write_batch(2, aborted(), {"seen": "aborted"})
    finally:
        writer.close()
    deadline = time.monotonic() + 150
    while marker_of(bootstrap, job, commits)[0] >= 0:  # quiet until Kafka expires it
        assert time.monotonic() < deadline, "the marker did not expire"
        time.sleep(2)
    restarted = TransactionalBatchWriter(bootstrap, job, commits_topic=commits)
    try:
        assert restarted.committed == Committed()
        assert restarted.recover_committed() == Committed(1, {"seen": [0, 1]})
        restarted.write_batch(2, [OutRecord(out, b"k", b"2")], {"seen": 2})
    finally:
        restarted.close()
    assert marker_of(bootstrap, job, commits)[1] == "2"
    assert [r.value for r in read_all(bootstrap, out)] == [b"0", b"1", b"2"]


# The hashtags job (tests.integration.test_hashtags_job: its Job helper and brute-force oracle)


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    from trending.spark.session import build_session

    session = build_session("tests-lost-markers", "local[2]", shuffle_partitions=2)
    yield session
    session.stop()


def test_a_job_whose_marker_and_state_record_are_gone_refuses_and_its_recovery_is_exact(
    kafka_bootstrap: str, spark: Any, tmp_path: Path
) -> None:
    """After a run, the job's marker is gone and its record in the commits topic deleted (a
    tombstone: as if the topic had been deleted, for this job alone). A restart refuses in one
    line and publishes nothing; the recovery it names (a new checkpoint, new output topics)
    publishes every window once there, and the finals equal the rule's."""
    from tests.integration.test_faults import published
    from tests.integration.test_hashtags_job import (
        Job,
        finals_of,
        make_tweets,
        oracle_finals,
        produce,
        watermark_after,
    )

    job = Job(kafka_bootstrap, tmp_path)
    first, second = make_tweets(2_000, seed=61), make_tweets(2_000, seed=62, start_index=2_000)
    produce(kafka_bootstrap, job.topics["tweets"], first)
    group = job.run(spark).writer.transactional_id
    before = read_all(kafka_bootstrap, job.topics["trending"])
    delete_marker(kafka_bootstrap, group)
    tombstone = Producer({"bootstrap.servers": kafka_bootstrap})
    tombstone.produce(COMMITS_TOPIC, key=group.encode(), value=None)
    assert tombstone.flush(30) == 0
    produce(kafka_bootstrap, job.topics["tweets"], second)
    with pytest.raises(UserError) as refused:
        job.run(spark)
    message = str(refused.value)
    assert "\n" not in message and "both gone" in message
    assert "a new --checkpoint and new output topics" in message
    assert read_all(kafka_bootstrap, job.topics["trending"]) == before

    recovery = Job(kafka_bootstrap, tmp_path)
    recovery.topics["tweets"] = job.topics["tweets"]
    recovery.run(spark)
    tweets = first + second
    published(kafka_bootstrap, recovery.topics["trending"])  # revisions 1, 2, ... none twice
    assert finals_of(recovery.records()) == oracle_finals(tweets, watermark_after(tweets))


def marker_group(command: list[str]) -> str:
    """The marker group (the transactional id) of the job ``command`` runs, from the identity
    its checkpoint was claimed with."""
    checkpoint = Path(command[command.index("--checkpoint") + 1].removeprefix("file://"))
    identity = json.loads((checkpoint / "trending-job.json").read_text())
    return f"trending-{identity['job']}-{identity['job_id']}"


@pytest.mark.chaos
@pytest.mark.timeout(SLOW_TEST_TIMEOUT)
def test_a_crash_after_a_kafka_commit_then_a_lost_marker_changes_nothing(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    """Every job (and the SPL example) exits the instant batch 2's transaction committed,
    before Spark records the batch; then its marker is gone. The restart recovers batch 2 from
    the commits topic, finds it published, marks it done and goes on: what each published
    equals its independent model (see each ``crash_case``), nothing lost, nothing twice."""
    from tests.integration.test_crashes import every_crash_case, run_beside_references

    def crash_lose_marker_restart(case: CrashCase) -> str:
        env = cluster_env() | {CRASH_AFTER_COMMIT: "2"}
        crashed = subprocess.run(
            case.command, capture_output=True, text=True, timeout=600, env=env, check=False
        )
        assert crashed.returncode == CRASH_EXIT_CODE, crashed.stderr[-4000:]
        delete_marker(kafka_bootstrap, marker_group(case.command))
        log = run_to_end(case.command)
        assert "the commit marker was gone; batch 2 and its state recovered" in log
        assert "batch 2 was published but not marked done: marked done" in log
        return log

    cases = every_crash_case(kafka_bootstrap, tmp_path)
    logs = run_beside_references(cases, crash_lose_marker_restart)
    for case in cases:
        case.check(logs[case.name])
