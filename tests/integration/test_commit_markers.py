"""Commit markers on a real broker: the last committed batch and its state, whatever other
producers do on the same topic."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator

import pytest
from confluent_kafka import Producer

from connectors.kafka import ensure_topics
from connectors.transactions import OutRecord, TransactionalBatchWriter

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
