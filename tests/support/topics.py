"""Reading a whole topic back with read_committed, for assertions."""

from __future__ import annotations

import uuid
from typing import Any

from confluent_kafka import Consumer, KafkaError, TopicPartition


def read_topic(
    bootstrap: str, topic: str, timeout: float = 30.0
) -> list[tuple[bytes | None, bytes]]:
    """Every committed ``(key, value)`` of ``topic``, partition by partition, in offset order."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"test-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
            "auto.offset.reset": "earliest",
        }
    )
    try:
        partitions = consumer.list_topics(topic, timeout=timeout).topics[topic].partitions
        consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
        remaining, records = set(partitions), []
        while remaining:
            message = consumer.poll(timeout)
            if message is None:
                raise TimeoutError(f"no end of {topic} within {timeout}s")
            error = message.error()
            if error is not None:
                if error.code() != KafkaError._PARTITION_EOF:
                    raise RuntimeError(str(error))
                remaining.discard(message.partition())
                continue
            records.append((message.key(), message.value() or b""))
        return records
    finally:
        consumer.close()


def decode_all(codec: Any, records: list[tuple[bytes | None, bytes]]) -> list[dict[str, Any]]:
    return [codec.decode(value) for _, value in records]
