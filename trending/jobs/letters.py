"""Records a job routes aside: late events and dead letters, each fitted to its topic's size limit.

A dead letter is the envelope of ``schemas/dead_letter.avsc``: the record's own topic,
partition, offset, Kafka timestamp, headers, key and value bytes, and why it failed. A late event
is republished as it came, its own headers kept (the hashtags job), or in the same envelope (the
sensors and windows jobs), with headers ``origin.topic``, ``origin.partition`` and
``origin.offset`` (decimal text) added, naming where it was.

A record larger than its topic accepts (``max.message.bytes``) would fail the transaction on
every retry of its batch. It becomes a dead letter instead, its value cut to fit the dead-letter
topic and the original size kept in ``value_size``, reason ``oversized: ...``; a dead letter that
cannot fit even with an empty value (a huge key) keeps neither key nor value bytes.

A job's own result record that is too large for its topic becomes a dead letter the same way,
reason ``oversized result: ...``, its origin the result's topic, partition -1 and the batch id
as offset: the result is not lost, and ``trending_dead_letters_total{reason="oversized_result"}``
raises the ``TrendingResultTooLarge`` alert.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from connectors.avro import AvroCodec
from connectors.transactions import RECORD_OVERHEAD, Headers, OutRecord, record_size

OVERSIZED = "oversized"
OVERSIZED_RESULT = "oversized result"
ORIGIN_TOPIC, ORIGIN_PARTITION, ORIGIN_OFFSET = "origin.topic", "origin.partition", "origin.offset"


@dataclass(frozen=True)
class Origin:
    """Where a record routed aside came from, and its bytes."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp_ms: int | None = None  # the record's Kafka timestamp
    headers: Headers = ()

    @classmethod
    def of(
        cls,
        topic: str,
        partition: int,
        offset: int,
        key: bytes | None,
        value: bytes | None,
        timestamp_ms: int | None,
        headers: list[dict[str, Any]] | None,
    ) -> Origin:
        """From collected columns; ``headers`` as Spark's Kafka source gives them."""
        pairs = tuple((str(h["key"]), h["value"]) for h in headers or ())
        return cls(topic, partition, offset, key, value, timestamp_ms, pairs)


class SideStats(Protocol):
    """The per-batch counters of records routed aside."""

    late: int
    dead: int
    dead_reasons: dict[str, int]


@dataclass
class SideOutput:
    """Builds one batch's late and dead records, counted in ``stats``; ``limit_of(topic)`` is
    the largest record the topic accepts. ``late_codec`` None: late events go out as they came.
    """

    late_topic: str
    dead_topic: str
    dead_codec: AvroCodec
    late_codec: AvroCodec | None
    limit_of: Callable[[str], int]
    now_ms: int = field(default_factory=lambda: int(time.time() * 1000))

    def late(self, origin: Origin, reason: str, stats: SideStats) -> OutRecord:
        """A late event, or a dead letter when it is too large for the late topic."""
        if self.late_codec is None:
            value, headers = origin.value, origin.headers + origin_headers(origin)
        else:
            value, headers = (
                self.late_codec.encode(self._envelope(origin, reason)),
                origin_headers(origin),
            )
        record = OutRecord(self.late_topic, origin.key, value, headers)
        if record_size(record) <= self.limit_of(self.late_topic):
            stats.late += 1
            return record
        return self._oversized(origin, record_size(record), self.late_topic, stats)

    def dead(self, origin: Origin, reason: str, stats: SideStats) -> OutRecord:
        """A dead letter; cut to fit when the whole record does not."""
        record = OutRecord(self.dead_topic, origin.key, self._encode(origin, reason))
        if record_size(record) <= self.limit_of(self.dead_topic):
            _count_dead(stats, reason)
            return record
        return self._oversized(origin, record_size(record), self.dead_topic, stats)

    def all_fit(self, table: Any, topics: Iterable[str]) -> bool:
        """Whether every record of Arrow ``table`` (its ``key`` and ``value`` columns, no
        headers) fits each of ``topics``: one look at the sizes instead of :meth:`result` per
        record."""
        import pyarrow.compute as pc

        if table.num_rows == 0:
            return True
        sizes = [pc.fill_null(pc.binary_length(table.column(name)), 0) for name in ("key", "value")]
        largest = pc.max(pc.add(*sizes)).as_py() + RECORD_OVERHEAD
        return bool(largest <= min(self.limit_of(topic) for topic in topics))

    def result(self, record: OutRecord, batch_id: int, stats: SideStats) -> OutRecord:
        """``record``, a result of batch ``batch_id``, or a dead letter holding it when it is too
        large for its topic."""
        size = record_size(record)
        if size <= self.limit_of(record.topic):
            return record
        origin = Origin(
            record.topic, -1, batch_id, record.key, record.value, self.now_ms, record.headers
        )
        return self._oversized(origin, size, record.topic, stats, OVERSIZED_RESULT)

    def _oversized(
        self, origin: Origin, size: int, topic: str, stats: SideStats, what: str = OVERSIZED
    ) -> OutRecord:
        limit = self.limit_of(self.dead_topic)
        reason = (
            f"{what}: {size} bytes as a record of {topic}, which accepts "
            f"{self.limit_of(topic)}; value cut to fit"
        )
        value = origin.value or b""
        base = OutRecord(self.dead_topic, origin.key, self._encode(origin, reason, b"", len(value)))
        room = limit - record_size(base) - 10  # 10: the longest varint of the value's length
        if room < 0:  # not even the key fits
            origin = Origin(
                origin.topic, origin.partition, origin.offset, None, None, origin.timestamp_ms
            )
            room = 0
        _count_dead(stats, reason)
        letter = self._encode(origin, reason, value[:room], len(value))
        return OutRecord(self.dead_topic, origin.key, letter)

    def _encode(
        self, origin: Origin, reason: str, value: bytes | None = None, size: int | None = None
    ) -> bytes:
        return self.dead_codec.encode(self._envelope(origin, reason, value, size))

    def _envelope(
        self, origin: Origin, reason: str, value: bytes | None = None, size: int | None = None
    ) -> dict[str, Any]:
        return {
            "topic": origin.topic,
            "partition": origin.partition,
            "offset": origin.offset,
            "key": origin.key,
            "value": origin.value if value is None else value,
            "reason": reason,
            "failed_at": self.now_ms,
            "value_size": size,
            "timestamp": origin.timestamp_ms,
            "headers": [{"key": key, "value": value} for key, value in origin.headers],
        }


def origin_headers(origin: Origin) -> Headers:
    """Headers naming where a republished record came from (decimal text for numbers)."""
    return (
        (ORIGIN_TOPIC, origin.topic.encode()),
        (ORIGIN_PARTITION, str(origin.partition).encode()),
        (ORIGIN_OFFSET, str(origin.offset).encode()),
    )


def _count_dead(stats: SideStats, reason: str) -> None:
    stats.dead += 1
    stats.dead_reasons[reason] = stats.dead_reasons.get(reason, 0) + 1
