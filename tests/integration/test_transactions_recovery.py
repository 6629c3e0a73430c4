"""A commit marker whose state record is gone, on a real broker: the record deleted by a
tombstone and removed by compaction, so that where the marker points the commits topic holds the
tombstone, or a record of another job. A writer then refuses to start in one line naming what
happened and the way on (see :mod:`connectors.transactions`), not with a bare Kafka error."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from connectors.kafka import ensure_topics
from connectors.transactions import Committed, OutRecord, TransactionalBatchWriter
from tests.integration.test_lost_markers import delete_marker, marker_of
from trending.errors import UserError

pytestmark = pytest.mark.integration

# Compaction within seconds: a segment rolls on the first append 100 ms after its start, and
# the log cleaner (every log.cleaner.backoff.ms, 15 s by default) cleans any closed segment.
# Tombstones stay an hour (delete.retention.ms).
FAST_COMPACTION = {
    "cleanup.policy": "compact",
    "segment.ms": "100",
    "min.cleanable.dirty.ratio": "0.01",
    "min.compaction.lag.ms": "0",
    "delete.retention.ms": "3600000",
}
COMPACTION_TIMEOUT_S = 90.0


def test_a_marker_whose_state_record_was_deleted_refuses_in_one_line(
    kafka_bootstrap: str, unique_topic: Callable[[str], str]
) -> None:
    """On the commits topic, in this order: job A's batches 0 and 1, a tombstone of A; job B's
    batch 0, another job's record, a tombstone of B; a later record (so that all before it are
    in closed segments). Compaction then removes A's and B's state records: read where its
    marker points, A finds its tombstone and B the other job's record."""
    commits, out = unique_topic("commits"), unique_topic("out")
    ensure_topics(kafka_bootstrap, [commits], partitions=1, config=FAST_COMPACTION)
    ensure_topics(kafka_bootstrap, [out], partitions=1)
    a, b = f"job-a-{uuid.uuid4().hex[:8]}", f"job-b-{uuid.uuid4().hex[:8]}"
    write(kafka_bootstrap, a, commits, out, {0: {"seen": 0}, 1: {"seen": 1}})
    a_tombstone = produce(kafka_bootstrap, commits, a.encode(), None)
    write(kafka_bootstrap, b, commits, out, {0: {"seen": 0}})
    other = produce(kafka_bootstrap, commits, b"another-job", b'{"batch": 0, "state": null}')
    produce(kafka_bootstrap, commits, b.encode(), None)
    time.sleep(0.2)
    produce(kafka_bootstrap, commits, b"later", b"{}")
    a_marker, a_batch = marker_of(kafka_bootstrap, a, commits)
    b_marker, b_batch = marker_of(kafka_bootstrap, b, commits)
    assert (a_batch, b_batch) == ("1", "0")
    await_removed(kafka_bootstrap, commits, [a_marker - 1, b_marker - 1])

    with pytest.raises(UserError) as refused:
        TransactionalBatchWriter(kafka_bootstrap, a, commits_topic=commits)
    message = str(refused.value)
    assert "\n" not in message
    assert f"the commit marker of {a} names batch 1" in message
    assert f"deleted (a tombstone at offset {a_tombstone} of topic {commits})" in message
    assert "a new --checkpoint and new output topics" in message

    with pytest.raises(UserError) as refused:
        TransactionalBatchWriter(kafka_bootstrap, b, commits_topic=commits)
    message = str(refused.value)
    assert "\n" not in message
    assert f"the commit marker of {b} names batch 0" in message
    assert f"holds a record of key 'another-job' (offset {other} of topic {commits})" in message
    assert f"kafka-consumer-groups.sh --delete --group {b}" in message
    assert "a new --checkpoint and new output topics" in message

    # the way on it names: without the marker, the recovery reads B's newest record, the
    # tombstone, and finds no batch (a job then refuses its checkpoint, naming a new one)
    delete_marker(kafka_bootstrap, b)
    restarted = TransactionalBatchWriter(kafka_bootstrap, b, commits_topic=commits)
    try:
        assert restarted.committed == Committed()
        assert restarted.recover_committed() == Committed()
    finally:
        restarted.close()


def produce(bootstrap: str, topic: str, key: bytes, value: bytes | None) -> int:
    """Append one record to partition 0 of ``topic``, outside any transaction; its offset."""
    offsets: list[int | None] = []
    plain = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    plain.produce(topic, value, key, 0, on_delivery=lambda _e, m: offsets.append(m.offset()))
    assert plain.flush(30) == 0
    (offset,) = offsets
    assert offset is not None
    return offset


def write(bootstrap: str, job: str, commits: str, out: str, batches: dict[int, object]) -> None:
    """Publish ``batches`` (id: state) under ``job``, then stop."""
    writer = TransactionalBatchWriter(bootstrap, job, commits_topic=commits)
    try:
        for batch_id, state in batches.items():
            writer.write_batch(batch_id, [OutRecord(out, b"k", str(batch_id).encode())], state)
    finally:
        writer.close()


def await_removed(bootstrap: str, topic: str, offsets: list[int]) -> None:
    """Wait until compaction removed the records at ``offsets`` of partition 0: a read from
    there is given the next record left."""
    deadline = time.monotonic() + COMPACTION_TIMEOUT_S
    left = list(offsets)
    while left:
        assert time.monotonic() < deadline, f"offsets {left} of {topic} not compacted away"
        left = [o for o in left if first_offset_from(bootstrap, topic, o) in (o, None)]
        if left:
            time.sleep(1)


def first_offset_from(bootstrap: str, topic: str, offset: int) -> int | None:
    """The offset of the first record a consumer is given from ``offset`` of partition 0."""
    reader = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"probe-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "isolation.level": "read_uncommitted",
        }
    )
    try:
        reader.assign([TopicPartition(topic, 0, offset)])
        message = reader.poll(10)
    finally:
        reader.close()
    if message is None or message.error() is not None:
        return None
    return message.offset()
