"""Commit markers on a real broker: the last committed batch and its state, whatever other
producers do on the same topic."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer

from connectors import transactions
from connectors.kafka import ensure_topics
from connectors.transactions import OutRecord, TransactionalBatchWriter
from tests.support.kafka import read_all

pytestmark = pytest.mark.integration


def _open_foreign_transaction(bootstrap: str, topic: str) -> Producer:
    """Another producer's transaction on ``topic``, left open (a stalled or killed job)."""
    foreign = Producer({"bootstrap.servers": bootstrap, "transactional.id": uuid.uuid4().hex})
    foreign.init_transactions(60)
    foreign.begin_transaction()
    foreign.produce(topic, key=b"another-job", value=b"never committed")
    assert foreign.flush(30) == 0
    return foreign


@pytest.fixture
def names(kafka_bootstrap: str, unique_topic: Callable[[str], str]) -> tuple[str, str, str]:
    """A commits topic, an output topic (created) and a transactional id of a test's own."""
    commits, out = unique_topic("commits"), unique_topic("out")
    ensure_topics(kafka_bootstrap, [out], partitions=1)
    return commits, out, f"job-{uuid.uuid4().hex[:8]}"


def test_restart_reads_the_last_batch_behind_an_open_foreign_transaction(
    kafka_bootstrap: str, names: tuple[str, str, str]
) -> None:
    commits, out, job = names
    writer = TransactionalBatchWriter(kafka_bootstrap, job, commits_topic=commits)
    assert writer.committed.batch_id == -1
    writer.write_batch(0, [OutRecord(out, b"k", b"0")], {"seen": 0})
    foreign = _open_foreign_transaction(kafka_bootstrap, commits)
    writer.write_batch(1, [OutRecord(out, b"k", b"1")], {"seen": 1})
    writer.write_batch(2, [OutRecord(out, b"k", b"2")], {"seen": [1, 2]})
    writer.close()

    started = time.monotonic()
    restarted = TransactionalBatchWriter(kafka_bootstrap, job, commits_topic=commits)
    try:
        assert restarted.committed.batch_id == 2
        assert restarted.committed.state == {"seen": [1, 2]}
        assert time.monotonic() - started < 30  # not held back until the foreign one times out
    finally:
        restarted.close()
        foreign.abort_transaction(30)


def test_an_aborted_batch_is_not_the_last_committed(
    kafka_bootstrap: str, names: tuple[str, str, str]
) -> None:
    commits, out, job = names
    writer = TransactionalBatchWriter(kafka_bootstrap, job, commits_topic=commits)
    writer.write_batch(0, [OutRecord(out, b"k", b"0")], {"seen": 0})

    def failing() -> Iterator[OutRecord]:
        yield OutRecord(out, b"k", b"1")  # sent inside the transaction, which must then abort
        raise RuntimeError("injected failure while the batch's records are made")

    with pytest.raises(RuntimeError, match="injected"):
        writer.write_batch(1, failing(), {"seen": 1})
    writer.close()
    restarted = TransactionalBatchWriter(kafka_bootstrap, job, commits_topic=commits)
    try:
        assert (restarted.committed.batch_id, restarted.committed.state) == (0, {"seen": 0})
    finally:
        restarted.close()


def producers_used(monkeypatch: pytest.MonkeyPatch, fail_first: bool = False) -> list[Producer]:
    """The producer of each transaction the writer tries, in order; with ``fail_first`` the
    first try fails as a flush that timed out would (a transient error)."""
    original, used = TransactionalBatchWriter._transact, []

    def noting(self: TransactionalBatchWriter, *args: Any) -> int:
        used.append(self._producer)
        if fail_first and len(used) == 1:
            raise KafkaException(KafkaError(KafkaError._MSG_TIMED_OUT, "1 records undelivered"))
        return original(self, *args)

    monkeypatch.setattr(TransactionalBatchWriter, "_transact", noting)
    return used


def test_a_transient_failure_goes_on_with_a_new_producer_while_the_old_one_closes(
    kafka_bootstrap: str, names: tuple[str, str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """After a stalled broker the old producer's close can block as long as a step may take:
    the batch is sent again by a new producer without waiting for it, and published once."""
    commits, out, job = names
    writer = TransactionalBatchWriter(kafka_bootstrap, job, commits_topic=commits)
    release, closing = threading.Event(), threading.Event()
    discard = transactions._discard

    def blocked_close(producer: Producer) -> None:
        closing.set()
        release.wait(120)
        discard(producer)

    monkeypatch.setattr(transactions, "_discard", blocked_close)
    calls = producers_used(monkeypatch, fail_first=True)
    try:
        assert writer.write_batch(0, [OutRecord(out, b"k", b"0")], {"seen": 0}) == 1
        assert closing.is_set() and not release.is_set()  # the old one was still closing
        assert len(calls) == 2 and calls[0] is not calls[1]
    finally:
        release.set()
        writer.close()
    assert [(r.key, r.value) for r in read_all(kafka_bootstrap, out)] == [(b"k", b"0")]


def test_a_producer_that_lost_its_broker_is_replaced_before_the_next_batch(
    kafka_bootstrap: str, names: tuple[str, str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A connection loss the producer's error callback noted (a broker restarted between two
    batches) puts the next batch on a new producer; every batch is published once."""
    commits, out, job = names
    writer = TransactionalBatchWriter(kafka_bootstrap, job, commits_topic=commits)
    used = producers_used(monkeypatch)
    try:
        writer.write_batch(0, [OutRecord(out, b"k", b"0")], {"seen": 0})
        writer.write_batch(1, [OutRecord(out, b"k", b"1")], {"seen": 1})
        assert used[0] is used[1]  # no loss reported: the same producer
        writer._connection_lost.set()  # as its error callback does on _TRANSPORT
        writer.write_batch(2, [OutRecord(out, b"k", b"2")], {"seen": 2})
        assert used[2] is not used[1]
    finally:
        writer.close()
    assert [r.value for r in read_all(kafka_bootstrap, out)] == [b"0", b"1", b"2"]


def delete_marker(bootstrap: str, group: str) -> None:
    """Delete ``group`` with its committed offsets, as Kafka does after
    ``offsets.retention.minutes`` without a commit; wait until it is gone."""
    from connectors.kafka import admin

    client = admin(bootstrap)
    for future in client.delete_consumer_groups([group], request_timeout=30).values():
        future.result(30)


def test_a_lost_marker_is_recovered_from_the_commits_topic(
    kafka_bootstrap: str, names: tuple[str, str, str]
) -> None:
    """The marker's group deleted (its offsets expired): the writer reads no marker, and
    ``recover_committed`` finds the last committed batch and state in the commits topic,
    past a batch whose transaction was aborted; the next batch goes on from it."""
    commits, out, job = names
    writer = TransactionalBatchWriter(kafka_bootstrap, job, commits_topic=commits)

    def failing() -> Iterator[OutRecord]:
        yield OutRecord(out, b"k", b"aborted")
        raise RuntimeError("injected")

    try:
        writer.write_batch(0, [OutRecord(out, b"k", b"0")], {"seen": 0})
        writer.write_batch(1, [OutRecord(out, b"k", b"1")], {"seen": [0, 1]})
        with pytest.raises(RuntimeError):
            writer.write_batch(2, failing(), {"seen": "aborted"})
    finally:
        writer.close()
    delete_marker(kafka_bootstrap, job)
    restarted = TransactionalBatchWriter(kafka_bootstrap, job, commits_topic=commits)
    try:
        assert restarted.committed.batch_id == -1  # the marker is gone
        recovered = restarted.recover_committed()
        assert (recovered.batch_id, recovered.state) == (1, {"seen": [0, 1]})
        assert restarted.last_committed == 1
        restarted.write_batch(2, [OutRecord(out, b"k", b"2")], {"seen": 2})
    finally:
        restarted.close()
    again = TransactionalBatchWriter(kafka_bootstrap, job, commits_topic=commits)
    try:
        assert (again.committed.batch_id, again.committed.state) == (2, {"seen": 2})
    finally:
        again.close()
    assert [r.value for r in read_all(kafka_bootstrap, out)] == [b"0", b"1", b"2"]
