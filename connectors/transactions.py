"""Exactly-once micro-batch output: each batch's records and a commit marker in one transaction.

The marker (key: the writer's transactional id, value: the batch id) goes to a compacted commits
topic inside the same Kafka transaction as the batch's records. On start-up the writer reads the
last committed marker, so a batch Spark replays after a crash is recognised and skipped, and
readers with ``isolation.level=read_committed`` never see a batch twice or half of one.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition

from connectors.kafka import client_config, ensure_topics

log = logging.getLogger(__name__)

COMMITS_TOPIC = "trending-commits"
DeliveryCallback = Callable[[KafkaError | None, "Message[bytes, bytes]"], None]
_COMMITS_CONFIG = {"cleanup.policy": "compact", "segment.ms": "600000"}


@dataclass(frozen=True)
class OutRecord:
    """One record to publish: topic, key and value bytes."""

    topic: str
    key: bytes | None
    value: bytes | None


class TransactionalBatchWriter:
    """Publishes micro-batches atomically and idempotently under one transactional id."""

    def __init__(
        self,
        bootstrap: str,
        transactional_id: str,
        extra: Mapping[str, str] | None = None,
        commits_topic: str = COMMITS_TOPIC,
    ) -> None:
        self.transactional_id = transactional_id
        self.commits_topic = commits_topic
        self._bootstrap, self._extra = bootstrap, dict(extra or {})
        ensure_topics(bootstrap, [commits_topic], partitions=1, extra=extra, config=_COMMITS_CONFIG)
        self._producer = Producer(
            client_config(bootstrap, extra)
            | {
                "transactional.id": transactional_id,
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 5,
                "compression.type": "lz4",
                "transaction.timeout.ms": 120_000,
            }
        )
        self._closed = False
        self._producer.init_transactions(60)  # fences and aborts a crashed predecessor
        self.last_committed = self._read_last_committed()

    def write_batch(self, batch_id: int, records: Iterable[OutRecord]) -> int:
        """Publish ``records`` for ``batch_id`` in one transaction; returns how many were sent.

        Raises on any delivery failure (the transaction is aborted, nothing becomes visible).
        """
        failures: list[str] = []

        def on_delivery(error: KafkaError | None, _message: Message[bytes, bytes]) -> None:
            if error is not None:
                failures.append(str(error))

        producer = self._producer
        producer.begin_transaction()
        try:
            sent = 0
            for record in records:
                self._produce(record.topic, record.key, record.value, on_delivery)
                sent += 1
            marker = str(batch_id).encode()
            self._produce(self.commits_topic, self.transactional_id.encode(), marker, on_delivery)
            producer.flush(120)
            if failures:
                raise KafkaException(f"{len(failures)} records failed: {failures[0]}")
            producer.commit_transaction(120)
        except BaseException:
            producer.abort_transaction(60)
            raise
        self.last_committed = batch_id
        return sent

    def close(self) -> None:
        """Flush and release the producer (its connections and threads); idempotent."""
        if self._closed:
            return
        self._closed = True
        self._producer.flush(30)
        self._producer.close()

    def _produce(
        self, topic: str, key: bytes | None, value: bytes | None, callback: DeliveryCallback
    ) -> None:
        while True:
            try:
                self._producer.produce(topic, value=value, key=key, on_delivery=callback)
                self._producer.poll(0)
                return
            except BufferError:
                self._producer.poll(0.05)

    def _read_last_committed(self) -> int:
        """The newest batch id committed under this transactional id, or -1."""
        consumer = Consumer(
            client_config(self._bootstrap, self._extra)
            | {
                "group.id": f"{self.transactional_id}-recovery",
                "enable.auto.commit": False,
                "isolation.level": "read_committed",
                "auto.offset.reset": "earliest",
                "enable.partition.eof": True,
            }
        )
        try:
            return _scan_markers(consumer, self.commits_topic, self.transactional_id.encode())
        finally:
            consumer.close()


def _scan_markers(consumer: Consumer, topic: str, key: bytes) -> int:
    partition = TopicPartition(topic, 0)
    low, high = consumer.get_watermark_offsets(partition, timeout=30)
    if high <= low:
        return -1
    partition.offset = low
    consumer.assign([partition])
    last = -1
    while True:
        message = consumer.poll(10)
        if message is None:
            raise KafkaException(f"timed out reading commit markers from {topic}")
        error = message.error()
        if error is not None:
            if error.code() == KafkaError._PARTITION_EOF:
                return last
            raise KafkaException(error)
        if message.key() == key:
            last = int(message.value() or b"-1")
