"""Exactly-once micro-batch output: each batch's records, its state and a marker in one transaction.

Inside the Kafka transaction that carries a batch's records, the writer also sends

* a **state record** to the compacted commits topic, key = the transactional id, value =
  ``{"batch": N, "state": ...}`` (JSON: whatever the job must resume from), and
* a **marker**: the offset after that record, committed for the consumer group named like the
  transactional id (``send_offsets_to_transaction``), with the batch id as offset metadata.

Both become visible when the transaction commits, or never. On start-up the writer fences its
predecessor (``init_transactions``), asks the group coordinator for the marker and reads the state
record at the offset it names. It does not scan the topic for it: a read_committed scan stops at
the first open transaction of *any* producer on the partition (a stalled or killed job), and
would return a stale batch; the committed offset of this group is not held back by other
producers (for when the marker is gone, see below).
A batch Spark replays after a crash is recognised and skipped, and readers with
``isolation.level=read_committed`` never see a batch twice or half of one.

The marker is a committed offset of a group without members, which Kafka deletes after
``offsets.retention.minutes`` (7 days by default) without a commit: a job idle that long, or
stopped that long, loses it. The state records are the redundant copy: a job whose checkpoint
shows batches but whose marker is gone calls :meth:`TransactionalBatchWriter.recover_committed`,
which reads the commits topic ``read_committed`` from its start to the end it had when the scan
began (the high watermark, not the last stable offset: another producer's transaction still open
below this job's newest record would otherwise hide that record and yield an older batch; the
scan waits for it to end, up to a bound) and takes the newest record of the transactional id.
Compaction keeps that record: it removes a record only for a newer committed one with the same
key (an aborted transaction's record is never read, and is never used to compact), and
``delete.retention.ms`` applies only to tombstones and transaction markers. The recovery commits
the marker again at once, so that the next start reads it directly.

Nothing else may delete the state records: the writer refuses a commits topic whose
``cleanup.policy`` includes ``delete`` with a time or size bound, which would remove a quiet
job's record about when its marker expires (Kafka Connect refuses such internal topics too).
When both are gone (the commits topic deleted, which deletes the group's offsets with it, or
the job's record replaced by a tombstone) the writer finds no batch, and the job refuses to run
on a checkpoint that has batches (:meth:`trending.spark.checkpoint.JobCheckpoint.settle`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin._config import ConfigResource

from connectors.kafka import admin, client_config, ensure_topics, topic_max_message_bytes
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


Headers = tuple[tuple[str, bytes | None], ...]  # a Kafka header's value may be null


@dataclass(frozen=True)
class OutRecord:
    """One record to publish: topic, key and value bytes, and headers."""

    topic: str
    key: bytes | None
    value: bytes | None
    headers: Headers = ()


RECOVERY_TIMEOUT_S = 150.0  # past the default transaction timeout of another job's producer
RETRY_TIMEOUT_S = 300.0  # how long a batch is sent again after transient Kafka errors
RETRY_FIRST_PAUSE_S, RETRY_MAX_PAUSE_S = 1.0, 30.0
TXN_STEP_TIMEOUT_S = 60.0  # each of flush, send offsets, commit, abort
POLL_EVERY = 1_000  # records produced between two polls for delivery reports
CONNECTION_LOST = frozenset({KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN})
HUNG_CALL_MARGIN_S = 5.0  # past its own timeout, a call hangs (TransactionalBatchWriter._bounded)
RECORD_OVERHEAD = 128  # a record's bytes beyond key and value in its batch, with a margin


def state_json(value: Any) -> bytes:
    """``value`` as compact JSON in UTF-8 (characters beyond ASCII as themselves: a third of
    the bytes of ``\\u`` escapes for most scripts)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def record_size(record: OutRecord) -> int:
    """The bytes ``record`` takes against a topic's ``max.message.bytes`` (uncompressed: a
    bound, so a record judged to fit always does)."""
    size = len(record.key or b"") + len(record.value or b"") + RECORD_OVERHEAD
    if record.headers:
        size += sum(len(name.encode()) + len(value or b"") + 10 for name, value in record.headers)
    return size


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
    # what the producer holds unsent: librdkafka's default is 1 GiB
    "queue.buffering.max.kbytes": 2 * (STATE_RECORD_MAX_BYTES + 2**16) // 1024,
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
        step_timeout_s: float = TXN_STEP_TIMEOUT_S,
    ) -> None:
        self.transactional_id = transactional_id
        self.commits_topic = commits_topic
        self._bootstrap, self._extra = bootstrap, dict(extra or {})
        ensure_topics(bootstrap, [commits_topic], partitions=1, extra=extra, config=_COMMITS_CONFIG)
        _check_kept(bootstrap, commits_topic, extra)
        self.retry_timeout_s = RETRY_TIMEOUT_S
        self.step_timeout_s = step_timeout_s  # each of flush, send offsets, commit, abort
        self._config = producer_config(bootstrap, transactional_id, extra)
        self._closed = False
        self._abandoned: list[Producer] = []  # producers with a call that never returned
        self._producer = self._new_producer()  # fences and aborts a crashed predecessor
        self._group = Consumer(self._consumer_config(transactional_id, "read_committed"))
        self.committed = self._read_committed()
        self._producer_limit = int(self._config["message.max.bytes"])
        self._read_limits: dict[str, int] = {}  # the limits read from the brokers (for good)
        self._fallbacks: dict[str, tuple[int, float]] = {}  # unreadable topic: limit, until
        self._unpolled = 0  # records produced since the producer was last polled
        self.skipped_oversized = 0  # records too large for their topic, not published
        # Whether this process still owns the job (its checkpoint lease): a fenced producer is
        # replaced, and its batch sent again, only then (see fenced). None: never.
        self.still_owner: Callable[[], bool] | None = None

    def _new_producer(self) -> Producer:
        """A producer under this transactional id, initialised: the broker aborts any open
        transaction of an earlier producer under the id and fences it for good. From then on
        ``_connection_lost`` tells whether it lost a broker connection."""
        lost = threading.Event()

        def on_error(error: KafkaError) -> None:
            if error.code() in CONNECTION_LOST:
                lost.set()

        producer = Producer({**self._config, "error_cb": on_error})
        _retrying(lambda: producer.init_transactions(self.step_timeout_s), self.retry_timeout_s)
        lost.clear()  # callbacks run only inside the producer's calls: none is pending now
        self._connection_lost = lost
        return producer

    def _renew_if_disconnected(self) -> None:
        """Replace the producer if it lost a broker connection since its last batch. After a
        broker restart librdkafka can keep a stale coordinator and hang the next transaction's
        coordinator requests past their timeout (librdkafka issues 5456, 5511); a new producer
        looks the coordinators up afresh."""
        self._producer.poll(0)  # serves error_cb
        if self._connection_lost.is_set():
            log.warning("%s: lost a broker connection; using a new producer", self.transactional_id)
            self._renew_producer()

    def _renew_producer(self) -> None:
        """Replace the producer after a transient failure: librdkafka can stay stuck on a
        coordinator that went away (a restarted broker), where a new client is not. The old
        producer is closed in the background, not waited for: after a stalled broker its close
        can block for as long as a step may take, and the new producer fences it anyway."""
        old = self._producer
        if old not in self._abandoned:  # else a call on it never returned: left alone
            self._abandoned.append(old)
            threading.Thread(target=_discard, args=(old,), name="kafka-close", daemon=True).start()
        self._producer = self._new_producer()
        self._abandoned.remove(old)  # no longer this writer's: nothing refers to it here

    def _still_owner(self) -> bool:
        owner = self.still_owner is not None and self.still_owner()
        if owner:
            log.warning(
                "%s: the broker fenced the producer although this process still owns the job "
                "(its transaction outlived transaction.timeout.ms): a new producer sends the "
                "batch again",
                self.transactional_id,
            )
        return owner

    def limit_of(self, topic: str) -> int:
        """The largest record ``topic`` accepts from this producer: read once per topic; while
        it cannot be read (broker away, no permission), the producer's own limit for a minute."""
        known = self._read_limits.get(topic)  # asked once per record: no clock read
        if known is not None:
            return known
        limit, until = self._fallbacks.get(topic, (0, 0.0))
        if until >= time.monotonic():
            return limit
        read = topic_max_message_bytes(self._bootstrap, [topic], self._extra).get(topic)
        if read:
            self._read_limits[topic] = min(read, self._producer_limit)
            self._fallbacks.pop(topic, None)
            return self._read_limits[topic]
        self._fallbacks[topic] = (self._producer_limit, time.monotonic() + 60)
        return self._producer_limit

    @property
    def last_committed(self) -> int:
        """The newest committed batch id, or -1."""
        return self.committed.batch_id

    def write_batch(
        self,
        batch_id: int,
        records: Iterable[OutRecord] | Callable[[], Iterable[OutRecord]],
        state: Any = None,
    ) -> int:
        """Publish ``records``, ``state`` and the marker of ``batch_id`` in one transaction;
        returns how many records were sent. A record too large for its topic is left out and
        counted in ``skipped_oversized`` (the jobs turn such records into dead letters first).
        ``records`` may be a function giving them anew for each attempt: they are then sent as
        they come, never all held at once (the producer's queue is bounded).

        A transient Kafka error (a broker down, stalled or restarted, a leader moving) ends
        the transaction; a new producer under the same id fences the old one and aborts what it
        left open, and the batch is sent again, with backoff, for up to ``retry_timeout_s`` --
        unless its marker shows the commit went through after all (a commit whose answer was
        lost). Raises on any other failure, or when that time has passed; nothing becomes
        visible.
        """
        if callable(records):
            fresh = records
        else:
            kept = list(records)
            fresh = lambda: kept  # noqa: E731
        sent = 0
        deadline, pause = time.monotonic() + self.retry_timeout_s, RETRY_FIRST_PAUSE_S
        while True:
            try:
                self._renew_if_disconnected()
                fitting = (r for r in fresh() if self._fits(batch_id, r))
                sent = self._transact(batch_id, fitting, state)
                break
            except KafkaException as error:
                retry = transient(error) or (fenced(error) and self._still_owner())
                if not retry or time.monotonic() + pause > deadline:
                    raise
                log.warning(
                    "batch %d: transient Kafka error, sent again in %.0f s: %s",
                    batch_id,
                    pause,
                    error,
                )
                time.sleep(pause)
                pause = min(pause * 2, RETRY_MAX_PAUSE_S)
                self._renew_producer()
                if self._read_committed().batch_id >= batch_id:
                    log.warning("batch %d: its commit did succeed; not sent again", batch_id)
                    break
        self.committed = Committed(batch_id, state)
        return sent

    def _transact(self, batch_id: int, batch: Iterable[OutRecord], state: Any) -> int:
        """Send ``batch`` and ``state`` in one transaction; returns how many records it sent."""
        failures: list[KafkaError] = []
        state_at: list[TopicPartition] = []

        def on_delivery(error: KafkaError | None, _message: Message[bytes, bytes]) -> None:
            if error is not None:
                failures.append(error)

        def on_state(error: KafkaError | None, message: Message[bytes, bytes]) -> None:
            on_delivery(error, message)
            if error is not None:
                return
            topic, partition, offset = message.topic(), message.partition(), message.offset()
            if error is None and topic is not None and partition is not None and offset is not None:
                state_at.append(
                    TopicPartition(topic, partition, offset + 1, metadata=str(batch_id))
                )

        producer = self._producer
        producer.begin_transaction()
        sent = 0
        try:
            try:
                for record in batch:
                    self._produce(
                        record.topic, record.key, record.value, on_delivery, record.headers
                    )
                    sent += 1
                value = state_json({"batch": batch_id, "state": state})
                key = self.transactional_id.encode()
                self._produce(self.commits_topic, key, value, on_state)
            except KafkaException as refused:
                if _code(refused) != KafkaError._STATE:
                    raise
                # the transaction failed while records were being queued (a partition it could
                # not add): librdkafka refuses the next record with a bare "erroneous state"
                producer.poll(0)
                failures.append(refused.args[0])
                raise KafkaException(self._cause(producer, failures)) from refused
            undelivered = producer.flush(self.step_timeout_s)
            if failures:
                cause = self._cause(producer, failures)
                log.error("batch %d: %d records failed: %s", batch_id, len(failures), cause)
                raise KafkaException(cause)
            if undelivered:
                raise KafkaException(
                    KafkaError(KafkaError._MSG_TIMED_OUT, f"{undelivered} records undelivered")
                )
            metadata, step = self._group.consumer_group_metadata(), self.step_timeout_s
            self._bounded(
                "send_offsets_to_transaction", producer,
                lambda: producer.send_offsets_to_transaction(state_at, metadata, step),
            )  # fmt: skip
            self._bounded(
                "commit_transaction", producer,
                lambda: producer.commit_transaction(self.step_timeout_s),
            )  # fmt: skip
        except BaseException as error:
            if not (isinstance(error, KafkaException) and transient(error)):
                # a transient failure renews the producer, which aborts what this one left open
                self._abort(batch_id, producer)
            raise
        return sent

    def _cause(self, producer: Producer, failures: list[KafkaError]) -> KafkaError:
        """Why records failed delivery. When the transaction itself failed (a partition it
        could not add: a topic deleted, writes denied), librdkafka purges the records and
        tells the cause only to a commit, which it refuses since records failed."""
        told = next((f for f in failures if f.code() not in _PURGED | {KafkaError._STATE}), None)
        if told is not None:
            return told
        try:
            self._bounded(
                "commit_transaction", producer,
                lambda: producer.commit_transaction(self.step_timeout_s),
            )  # fmt: skip
        except KafkaException as refused:
            if refused.args and isinstance(refused.args[0], KafkaError):
                return refused.args[0]
        return failures[0]

    def _abort(self, batch_id: int, producer: Producer) -> None:
        """Abort the open transaction; a failure to abort is logged, not raised, so that the
        error that ended the batch is the one reported (the broker aborts the transaction
        when it times out, or when the next producer under the id starts)."""
        try:
            self._bounded(
                "abort_transaction", producer,
                lambda: producer.abort_transaction(self.step_timeout_s),
            )  # fmt: skip
        except KafkaException as error:
            log.warning("batch %d: could not abort its transaction: %s", batch_id, error)

    def _bounded(
        self,
        what: str,
        producer: Producer,
        call: Callable[[], object],
        timeout: float | None = None,
    ) -> None:
        """``call()`` on ``producer`` in a thread, given ``timeout`` (the call's own) and a
        margin to return: librdkafka's coordinator requests can ignore their timeout and hang
        when the coordinator went away (librdkafka issue 5456). A call that does not return is
        a transient error, and its producer is abandoned, never touched again."""
        timeout = self.step_timeout_s if timeout is None else timeout
        done, raised = threading.Event(), []

        def run() -> None:
            try:
                call()
            except BaseException as error:  # handed to the caller's thread
                raised.append(error)
            finally:
                done.set()

        threading.Thread(target=run, name=f"kafka-{what}", daemon=True).start()
        if not done.wait(timeout + HUNG_CALL_MARGIN_S):
            self._abandoned.append(producer)
            log.warning(
                "%s: %s never returned; its producer is abandoned", self.transactional_id, what
            )
            message = f"{what} did not return within {timeout:.0f} s"
            raise KafkaException(KafkaError(KafkaError._TIMED_OUT, message, retriable=True))
        if raised:
            raise raised[0]

    def _fits(self, batch_id: int, record: OutRecord) -> bool:
        if record_size(record) <= self.limit_of(record.topic):
            return True
        self._skip_oversized(batch_id, record)
        return False

    def _skip_oversized(self, batch_id: int, record: OutRecord) -> None:
        self.skipped_oversized += 1
        log.error(
            "batch %d: a record of %d bytes is too large for topic %s (accepts %d): not published",
            batch_id,
            record_size(record),
            record.topic,
            self.limit_of(record.topic),
        )

    def close(self) -> None:
        """Flush and release the producer (its connections and threads); idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._producer not in self._abandoned:
            try:  # a producer in a fatal state (fenced, failed) raises: nothing left to send
                self._producer.flush(30)
                self._producer.close()
            except (KafkaException, SystemError) as error:  # SystemError: a fatal producer's
                log.warning("closing the producer: %s", error)  # failed abort, raised late
        self._group.close()

    def _produce(
        self,
        topic: str,
        key: bytes | None,
        value: bytes | None,
        callback: DeliveryCallback,
        headers: Headers = (),
    ) -> None:
        extra: dict[str, Any] = {"headers": list(headers)} if headers else {}
        while True:
            try:
                self._producer.produce(topic, value=value, key=key, on_delivery=callback, **extra)
                self._unpolled += 1
                if self._unpolled >= POLL_EVERY:  # delivery reports, served in bulk
                    self._producer.poll(0)
                    self._unpolled = 0
                return
            except BufferError:  # the queue is full: wait for deliveries
                self._producer.poll(0.05)
                self._unpolled = 0

    def _consumer_config(self, group: str, isolation: str) -> dict[str, Any]:
        return client_config(self._bootstrap, self._extra) | {
            "group.id": group,
            "enable.auto.commit": False,
            "isolation.level": isolation,
        }

    def recover_committed(self, timeout_s: float = RECOVERY_TIMEOUT_S) -> Committed:
        """The newest batch and state committed under this transactional id, read from the
        state records in the commits topic: for when the marker is gone (see the module's
        description). Sets and returns :attr:`committed`, and commits the marker again.
        :class:`UserError` when the topic cannot be read to its end within ``timeout_s``
        (another producer's transaction held open); ``Committed()`` when it holds no batch of
        this id (the topic deleted, or the record replaced by a tombstone)."""
        found, at = self._newest_state_record(timeout_s)
        self.committed = found
        if at is not None:
            log.warning(
                "%s: the commit marker was gone; batch %d and its state recovered from %s",
                self.transactional_id, found.batch_id, self.commits_topic,
            )  # fmt: skip
            self._commit_marker(found.batch_id, at)
        return found

    def _newest_state_record(self, timeout_s: float) -> tuple[Committed, TopicPartition | None]:
        """The newest committed state record of this id in the commits topic, and where the
        marker of its batch points; ``(Committed(), None)`` when there is none."""
        ends = self._high_watermarks()
        config = self._consumer_config(f"{self.transactional_id}-reader", "read_committed")
        reader = Consumer(config | {"enable.partition.eof": True})
        newest: dict[int, Message[bytes, bytes]] = {}  # by partition, the last of this key
        key, deadline = self.transactional_id.encode(), time.monotonic() + timeout_s
        try:
            left = {p for p, end in ends.items() if end > 0}
            reader.assign([TopicPartition(self.commits_topic, p, OFFSET_BEGINNING) for p in left])
            while left:
                if time.monotonic() > deadline:
                    raise UserError(self._held_open(reader, ends, timeout_s))
                message = reader.poll(1.0)
                if message is None:
                    continue
                error, partition = message.error(), message.partition() or 0
                if error is not None and error.code() == KafkaError._PARTITION_EOF:
                    if (message.offset() or 0) >= ends[partition]:
                        left.discard(partition)
                elif error is not None:
                    raise KafkaException(error)
                elif message.key() == key:
                    newest[partition] = message
        finally:
            reader.close()
        found = [_recovered(m, self.transactional_id) for m in newest.values()]
        return max(found, key=lambda item: item[0].batch_id, default=(Committed(), None))

    def _high_watermarks(self) -> dict[int, int]:
        """Each commits partition's end, open transactions included: a ``read_committed``
        client is told the last stable offset instead (checked on Kafka 4.1)."""
        group = f"{self.transactional_id}-reader"
        probe = Consumer(self._consumer_config(group, "read_uncommitted"))
        try:
            partitions = _partitions(probe, self.commits_topic)
            ends = _retrying(
                lambda: [probe.get_watermark_offsets(p, timeout=30) for p in partitions]
            )
        finally:
            probe.close()
        return {p.partition: end for p, (_low, end) in zip(partitions, ends, strict=True)}

    def _held_open(self, reader: Consumer, ends: Mapping[int, int], timeout_s: float) -> str:
        stable = {
            p: reader.get_watermark_offsets(TopicPartition(self.commits_topic, p), timeout=10)[1]
            for p in ends
        }
        held = ", ".join(
            f"partition {p} at offset {stable[p]}" for p in ends if stable[p] < ends[p]
        )
        return (
            f"the commit marker of {self.transactional_id} is gone, and topic "
            f"{self.commits_topic} could not be read to its end in {timeout_s:.0f} s: another "
            f"producer's transaction is open on it ({held or 'now ended'}). Start again once it "
            "has ended or timed out"
        )

    def _commit_marker(self, batch_id: int, at: TopicPartition) -> None:
        """Commit the marker of ``batch_id`` again, pointing ``at`` its state record, in a
        transaction of its own; best effort (its next batch commits a marker anyway)."""
        producer, step = self._producer, self.step_timeout_s
        try:
            producer.begin_transaction()
            metadata = self._group.consumer_group_metadata()
            self._bounded(
                "send_offsets_to_transaction", producer,
                lambda: producer.send_offsets_to_transaction([at], metadata, step),
            )  # fmt: skip
            self._bounded("commit_transaction", producer, lambda: producer.commit_transaction(step))
        except KafkaException as error:
            log.warning("%s: the marker was not committed again: %s", self.transactional_id, error)
            if transient(error):
                self._renew_producer()  # which aborts what the old one left open
            else:
                self._abort(batch_id, producer)

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


def _discard(producer: Producer) -> None:
    """Drop what ``producer`` still holds and release it; errors only mean it is gone already."""
    with contextlib.suppress(KafkaException, SystemError):
        producer.purge()
        producer.close()


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


def fenced(error: KafkaException) -> bool:
    """Whether the broker fenced this producer: a newer producer under its transactional id, or
    its own transaction outlived ``transaction.timeout.ms`` and the broker aborted it (which
    also bumps the producer's epoch; librdkafka reports both as fatal ``_FENCED``)."""
    cause = error.args[0] if error.args else None
    return isinstance(cause, KafkaError) and cause.code() in (
        KafkaError._FENCED,
        KafkaError.PRODUCER_FENCED,
        KafkaError.INVALID_PRODUCER_EPOCH,
    )


def transient(error: KafkaException) -> bool:
    """Whether sending a batch again may succeed: a retriable or abortable Kafka error, not a
    fatal one (this producer fenced by a newer instance) nor a permanent one (a record too
    large, no permission)."""
    cause = error.args[0] if error.args else None
    if not isinstance(cause, KafkaError) or cause.fatal() or cause.code() in _PERMANENT_ERRORS:
        return False
    return bool(cause.retriable() or cause.txn_requires_abort() or cause.code() in _DELIVERY_ERRORS)


_PURGED = {KafkaError._PURGE_QUEUE, KafkaError._PURGE_INFLIGHT}  # records dropped for a cause
_PERMANENT_ERRORS = {
    KafkaError.MSG_SIZE_TOO_LARGE,
    KafkaError.TOPIC_AUTHORIZATION_FAILED,
    KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    KafkaError.CLUSTER_AUTHORIZATION_FAILED,
    KafkaError.INVALID_RECORD,
}
_DELIVERY_ERRORS = {  # a delivery that failed for lack of a broker; the transaction is aborted
    KafkaError._MSG_TIMED_OUT,
    KafkaError._TIMED_OUT,
    KafkaError._TRANSPORT,
    KafkaError._ALL_BROKERS_DOWN,
    KafkaError.UNKNOWN_TOPIC_OR_PART,
    KafkaError.NOT_LEADER_FOR_PARTITION,
    KafkaError.NOT_ENOUGH_REPLICAS,
    KafkaError.REQUEST_TIMED_OUT,
}


_COORDINATOR_ERRORS = {
    KafkaError.NOT_COORDINATOR,
    KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
    KafkaError.COORDINATOR_NOT_AVAILABLE,
}


def _code(error: KafkaException) -> int | None:
    cause = error.args[0] if error.args else None
    return cause.code() if isinstance(cause, KafkaError) else None


def _partitions(consumer: Consumer, topic: str) -> list[TopicPartition]:
    metadata = consumer.list_topics(topic, timeout=30).topics[topic]
    if metadata.error is not None:
        raise KafkaException(metadata.error)
    return [TopicPartition(topic, p) for p in sorted(metadata.partitions)]


def _recovered(message: Message[bytes, bytes], key: str) -> tuple[Committed, TopicPartition | None]:
    """The batch and state in a state record found by a scan, and where its marker points;
    a tombstone (null value: the record deleted) holds none."""
    raw, topic, partition, offset = (
        message.value(),
        message.topic(),
        message.partition(),
        message.offset(),
    )
    if raw is None or topic is None or partition is None or offset is None:
        return Committed(), None
    try:
        value = json.loads(raw)
        batch_id = int(value["batch"])
    except (ValueError, KeyError, TypeError) as error:
        raise UserError(
            f"the record of {key} at offset {offset} of topic {topic} is not a state record "
            f"({error}): another program wrote it"
        ) from error
    return Committed(batch_id, value.get("state")), TopicPartition(
        topic, partition, offset + 1, metadata=str(batch_id)
    )


def _check_kept(bootstrap: str, topic: str, extra: Mapping[str, str] | None) -> None:
    """Refuse a commits topic whose records Kafka deletes by age or size; when its
    configuration cannot be read (no DescribeConfigs permission), warn and go on."""
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    client = admin(bootstrap, extra)  # held until the answer came: its end cancels the call
    try:
        futures = client.describe_configs([resource], request_timeout=30)
        entries = next(iter(futures.values())).result(30)
    except KafkaException as error:
        log.warning("cannot read the configuration of topic %s: %s", topic, error)
        return
    values = {name: entry.value for name, entry in entries.items()}
    policy = str(values.get("cleanup.policy") or "").replace(" ", "")
    bounds = [
        f"{name}={values[name]}"
        for name in ("retention.ms", "retention.bytes")
        if values.get(name) not in (None, "-1")
    ]
    if "delete" in policy.split(",") and bounds:
        raise UserError(
            f"topic {topic} has cleanup.policy={policy} with {' and '.join(bounds)}: Kafka "
            "would delete the state records jobs resume from, and a job idle or stopped that "
            "long could not resume. Make it compacted only (kafka-configs.sh --alter "
            f"--entity-type topics --entity-name {topic} --add-config cleanup.policy=compact)"
        )


def _state_record(message: Message[bytes, bytes] | None, key: str, batch_id: int) -> Committed:
    """The committed state of ``batch_id`` from the record its marker points at. A
    KafkaException when no record could be read; a :class:`UserError` when the record read is
    not it: the state record deleted (a tombstone, and compaction removed the record), or
    another record there (the marker no longer matches the topic)."""
    if message is None or message.error() is not None:
        raise KafkaException(f"could not read the state record of batch {batch_id} for {key}")
    raw, where = message.value(), f"offset {message.offset()} of topic {message.topic()}"
    if message.key() == key.encode() and raw is None:
        raise UserError(
            f"the commit marker of {key} names batch {batch_id}, but its state record was "
            f"deleted (a tombstone at {where}), and with it the state the job resumes from. "
            "Start a new job with a new --checkpoint and new output topics, which it fills "
            "from the input once (nothing was deleted)"
        )
    try:
        value = json.loads(raw) if raw is not None else {}
    except ValueError:  # not JSON (nor UTF-8): not a state record
        value = {}
    if not isinstance(value, dict):
        value = {}
    if message.key() == key.encode() and value.get("batch") == batch_id:
        return Committed(batch_id, value.get("state"))
    other = (message.key() or b"").decode(errors="replace")
    found = (
        f"the state record of batch {value['batch']}"
        if other == key and "batch" in value
        else f"a record of key {other!r}"
    )
    raise UserError(
        f"the commit marker of {key} names batch {batch_id}, but where it points the commits "
        f"topic holds {found} ({where}): the marker no longer matches the topic. Delete the "
        f"marker (kafka-consumer-groups.sh --delete --group {key}) so that the next start "
        f"recovers the newest state record of {key} from the topic; if there is none, start a "
        "new job with a new --checkpoint and new output topics (nothing was deleted)"
    )
