"""Exactly-once micro-batch output: each batch's records, its state and a marker in one transaction.

Inside the Kafka transaction that carries a batch's records, the writer also sends

* a **state record** to the compacted commits topic, key = the transactional id, value =
  ``{"batch": N, "state": ...}`` (JSON: whatever the job must resume from), and
* a **marker**: the offset after that record, committed for the consumer group named like the
  transactional id (``send_offsets_to_transaction``), with the batch id as offset metadata.

Both become visible when the transaction commits, or never. On start-up the writer fences its
predecessor (``init_transactions``), asks the group coordinator for the marker and reads the state
record at the offset it names. It never scans the topic: a read_committed scan stops at the
first open transaction of *any* producer on the partition (a stalled or killed job), and would
return a stale batch; the committed offset of this group is not held back by other producers.
A batch Spark replays after a crash is recognised and skipped, and readers with
``isolation.level=read_committed`` never see a batch twice or half of one.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition

from connectors.kafka import client_config, ensure_topics
from trending.errors import UserError

log = logging.getLogger(__name__)
T = TypeVar("T")

COMMITS_TOPIC = "trending-commits"
DeliveryCallback = Callable[[KafkaError | None, "Message[bytes, bytes]"], None]
STATE_RECORD_MAX_BYTES = 16 * 2**20
_COMMITS_CONFIG = {
    "cleanup.policy": "compact",
    "segment.ms": "600000",
    "max.message.bytes": str(STATE_RECORD_MAX_BYTES),
}


@dataclass(frozen=True)
class OutRecord:
    """One record to publish: topic, key and value bytes."""

    topic: str
    key: bytes | None
    value: bytes | None


@dataclass(frozen=True)
class Committed:
    """The last batch committed under a transactional id (-1: none) and the state sent with it."""

    batch_id: int = -1
    state: Any = None


# Settings a user's Kafka options may change (``--kafka-option``), and those exactly-once
# publication fixes.
PRODUCER_DEFAULTS: dict[str, Any] = {
    "linger.ms": 5,
    "compression.type": "lz4",
    "transaction.timeout.ms": 120_000,
    "message.max.bytes": STATE_RECORD_MAX_BYTES + 2**16,
}
PRODUCER_FIXED: dict[str, Any] = {"enable.idempotence": True, "acks": "all"}


def producer_config(
    bootstrap: str, transactional_id: str, extra: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """The transactional producer's settings: :data:`PRODUCER_DEFAULTS` under the user's
    ``extra``, with :data:`PRODUCER_FIXED` and the transactional id on top.

    Raises :class:`UserError` when ``extra`` contradicts a fixed setting.
    """
    user = dict(extra or {})
    for key, fixed in {**PRODUCER_FIXED, "transactional.id": transactional_id}.items():
        given = user.get(key)
        if given is not None and str(given).lower() != str(fixed).lower():
            raise UserError(
                f"Kafka option {key}={given} conflicts with exactly-once publication, which "
                f"needs {key}={fixed}"
            )
    return (
        PRODUCER_DEFAULTS
        | client_config(bootstrap, extra)
        | PRODUCER_FIXED
        | {"transactional.id": transactional_id}
    )


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
        self._producer = Producer(producer_config(bootstrap, transactional_id, extra))
        self._closed = False
        self._producer.init_transactions(60)  # fences and aborts a crashed predecessor
        self._group = Consumer(self._consumer_config(transactional_id, "read_committed"))
        self.committed = self._read_committed()

    @property
    def last_committed(self) -> int:
        """The newest committed batch id, or -1."""
        return self.committed.batch_id

    def write_batch(self, batch_id: int, records: Iterable[OutRecord], state: Any = None) -> int:
        """Publish ``records``, ``state`` and the marker of ``batch_id`` in one transaction;
        returns how many records were sent.

        Raises on any delivery failure (the transaction is aborted, nothing becomes visible).
        """
        failures: list[str] = []
        state_at: list[TopicPartition] = []

        def on_delivery(error: KafkaError | None, _message: Message[bytes, bytes]) -> None:
            if error is not None:
                failures.append(str(error))

        def on_state(error: KafkaError | None, message: Message[bytes, bytes]) -> None:
            on_delivery(error, message)
            topic, partition, offset = message.topic(), message.partition(), message.offset()
            if error is None and topic is not None and partition is not None and offset is not None:
                state_at.append(
                    TopicPartition(topic, partition, offset + 1, metadata=str(batch_id))
                )

        producer = self._producer
        producer.begin_transaction()
        try:
            sent = 0
            for record in records:
                self._produce(record.topic, record.key, record.value, on_delivery)
                sent += 1
            value = json.dumps({"batch": batch_id, "state": state}, separators=(",", ":"))
            key = self.transactional_id.encode()
            self._produce(self.commits_topic, key, value.encode(), on_state)
            producer.flush(120)
            if failures:
                raise KafkaException(f"{len(failures)} records failed: {failures[0]}")
            metadata = self._group.consumer_group_metadata()
            producer.send_offsets_to_transaction(state_at, metadata, 60)
            producer.commit_transaction(120)
        except BaseException:
            producer.abort_transaction(60)
            raise
        self.committed = Committed(batch_id, state)
        return sent

    def close(self) -> None:
        """Flush and release the producer (its connections and threads); idempotent."""
        if self._closed:
            return
        self._closed = True
        self._producer.flush(30)
        self._producer.close()
        self._group.close()

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

    def _consumer_config(self, group: str, isolation: str) -> dict[str, Any]:
        return client_config(self._bootstrap, self._extra) | {
            "group.id": group,
            "enable.auto.commit": False,
            "isolation.level": isolation,
        }

    def _read_committed(self) -> Committed:
        """The marker of this transactional id's group, and the state record it points at."""
        partitions = _partitions(self._group, self.commits_topic)
        markers = _retrying(lambda: self._group.committed(partitions, timeout=30))
        found = [(int(m.metadata), m) for m in markers if m.offset >= 0 and m.metadata]
        if not found:
            return Committed()
        batch_id, marker = max(found, key=lambda item: item[0])
        reader_group = f"{self.transactional_id}-reader"
        reader = Consumer(self._consumer_config(reader_group, "read_uncommitted"))
        try:  # the marker proves the record's transaction committed: read it past open ones
            reader.assign([TopicPartition(marker.topic, marker.partition, marker.offset - 1)])
            message = reader.poll(30)
        finally:
            reader.close()
        return _state_record(message, self.transactional_id, batch_id)


def _retrying(call: Callable[[], T], timeout: float = 90.0) -> T:
    """``call()``, again with backoff while it fails with a retriable Kafka error (a group
    coordinator still loading after a broker start, or moving) and ``timeout`` has not passed."""
    deadline, pause = time.monotonic() + timeout, 0.1
    while True:
        try:
            return call()
        except KafkaException as error:
            cause = error.args[0] if error.args else None
            retriable = isinstance(cause, KafkaError) and (
                cause.retriable() or cause.code() in _COORDINATOR_ERRORS
            )
            if not retriable or time.monotonic() + pause > deadline:
                raise
            log.info("retrying after %s", cause)
            time.sleep(pause)
            pause = min(pause * 2, 2.0)


_COORDINATOR_ERRORS = {
    KafkaError.NOT_COORDINATOR,
    KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
    KafkaError.COORDINATOR_NOT_AVAILABLE,
}


def _partitions(consumer: Consumer, topic: str) -> list[TopicPartition]:
    metadata = consumer.list_topics(topic, timeout=30).topics[topic]
    if metadata.error is not None:
        raise KafkaException(metadata.error)
    return [TopicPartition(topic, p) for p in sorted(metadata.partitions)]


def _state_record(message: Message[bytes, bytes] | None, key: str, batch_id: int) -> Committed:
    """The committed state of ``batch_id`` from its record; KafkaException when it is not it."""
    if message is None or message.error() is not None:
        raise KafkaException(f"could not read the state record of batch {batch_id} for {key}")
    value = json.loads(message.value() or b"{}")
    if message.key() != key.encode() or value.get("batch") != batch_id:
        raise KafkaException(
            f"the commits topic no longer holds the state of batch {batch_id} for {key} at "
            f"offset {message.offset()}"
        )
    return Committed(batch_id, value.get("state"))
