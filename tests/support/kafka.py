"""Reading a whole topic back, for assertions."""

from __future__ import annotations

import time
from dataclasses import dataclass

from confluent_kafka import Consumer, TopicPartition

from connectors.kafka import consumer


@dataclass(frozen=True)
class Record:
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None


def read_all(bootstrap: str, topic: str, timeout: float = 30.0) -> list[Record]:
    """Every committed record of ``topic`` (``read_committed``), by partition then offset.

    Reads each partition up to the end it has when called (the last stable offset).
    """
    client = consumer(bootstrap, from_beginning=True)
    try:
        ends = _ends(client, topic, timeout)
        client.assign([TopicPartition(topic, p, 0) for p in ends])
        records = _read_until(client, topic, ends, time.monotonic() + timeout)
    finally:
        client.close()
    return sorted(records, key=lambda r: (r.partition, r.offset))


def _ends(client: Consumer, topic: str, timeout: float) -> dict[int, int]:
    metadata = client.list_topics(topic, timeout=timeout).topics[topic]
    if metadata.error is not None:
        raise AssertionError(f"topic {topic}: {metadata.error}")
    return {
        p: client.get_watermark_offsets(TopicPartition(topic, p), timeout=timeout)[1]
        for p in metadata.partitions
    }


def _read_until(
    client: Consumer, topic: str, ends: dict[int, int], deadline: float
) -> list[Record]:
    records: list[Record] = []
    pending = {p for p, end in ends.items() if end > 0}
    while pending:
        if time.monotonic() > deadline:
            raise AssertionError(f"partitions {sorted(pending)} not read to the end in time")
        for message in client.consume(10_000, timeout=0.5):
            if message.error() is not None:
                raise AssertionError(f"consumer error: {message.error()}")
            partition, offset = message.partition(), message.offset()
            assert partition is not None and offset is not None
            records.append(Record(partition, offset, message.key(), message.value()))
        for position in client.position([TopicPartition(topic, p) for p in pending]):
            if position.offset >= ends[position.partition]:
                pending.discard(position.partition)
    return records
