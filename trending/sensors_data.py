"""Synthetic sensor readings and queries (the seed's SensorQuery Beacons), and JSON-lines replay.

A generated stream is deterministic given its seed and settings (and ``start_ms``):

* reading ``i``: ``sensor_id`` uniform in ``[0, sensors)``, ``x`` and ``y`` uniform in
  ``[0, 1)``, ``value`` uniform in ``[0, 1000)``;
* query ``i``: ``query_id = i``, ``x`` and ``y`` uniform in ``[0, 1)``, ``distance`` fixed;
* event time of record ``i`` (either kind): ``ts = start_ms + floor(i * 1000 / events_per_second)``.

Readings and queries draw from two different random streams, even given the same seed. Draws
are made in fixed chunks, so the first ``n`` records do not depend on ``count``.

Replay reads one JSON object a line with the schema's fields (``ts`` as integer epoch ms or an
ISO-8601 string; with ``Z`` or an offset, else UTC); other keys are ignored.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, ClassVar

import numpy as np

from connectors.avro import AvroCodec, encode_longs
from connectors.kafka import ensure_topics, producer
from trending.generate import ReadOnceStream, default_start_ms

Row = dict[str, Any]
KeyValue = tuple[bytes | None, bytes]
CHUNK = 4096
READING_FIELDS = ("sensor_id", "x", "y", "value", "ts")
QUERY_FIELDS = ("query_id", "x", "y", "distance", "ts")
MAX_VALUE = 1000.0
_BELOW_MAX = float(np.nextafter(MAX_VALUE, 0.0))
_INT32 = 1 << 31
_INT64 = 1 << 63


@dataclass(frozen=True)
class _Block:
    """Consecutive rows of a stream, by column: the id, three doubles and ``ts`` of each."""

    ids: np.ndarray[Any, Any]
    doubles: np.ndarray[Any, Any]
    ts: np.ndarray[Any, Any]


@dataclass(frozen=True)
class SensorSettings(ABC):
    """What both generators share: the seed, the first event time and the event-time rate."""

    STREAM: ClassVar[int] = 0
    FIELDS: ClassVar[tuple[str, ...]] = ()
    SCHEMA: ClassVar[str] = ""

    seed: int = 1
    start_ms: int = 0
    events_per_second: float = 1000.0

    def __post_init__(self) -> None:
        if self.seed < 0:
            raise ValueError(f"seed must be >= 0, got {self.seed}")
        if not (math.isfinite(self.events_per_second) and self.events_per_second > 0):
            raise ValueError("events_per_second must be a finite number > 0")

    def event_times(self, first: int, n: int) -> np.ndarray[Any, Any]:
        """``start_ms + floor(i * 1000 / events_per_second)`` for ``i`` in ``[first, first+n)``."""
        index = np.arange(first, first + n, dtype=np.int64)
        return self.start_ms + np.floor(index * 1000 / self.events_per_second).astype(np.int64)

    def rng(self) -> np.random.Generator:
        """The stream's random generator: seeded by ``(seed, stream)``."""
        return np.random.default_rng([self.seed, self.STREAM])

    @abstractmethod
    def draw(self, rng: np.random.Generator, first: int, n: int) -> _Block:
        """Rows ``first .. first + n`` (``n <= CHUNK``), drawing one chunk from ``rng``."""


@dataclass(frozen=True)
class ReadingSettings(SensorSettings):
    """Readings of ``sensors`` sensors (ids ``0 .. sensors-1``); see the module docstring."""

    STREAM: ClassVar[int] = 1
    FIELDS: ClassVar[tuple[str, ...]] = READING_FIELDS
    SCHEMA: ClassVar[str] = "sensor_reading"

    sensors: int = 100

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 1 <= self.sensors <= _INT32:
            raise ValueError(f"sensors must be in [1, 2^31], got {self.sensors}")

    def draw(self, rng: np.random.Generator, first: int, n: int) -> _Block:
        """A full chunk is drawn whatever ``n``: a prefix does not depend on the count."""
        ids = rng.integers(self.sensors, size=CHUNK)
        doubles = rng.random((CHUNK, 3))
        doubles[:, 2] = np.minimum(doubles[:, 2] * MAX_VALUE, _BELOW_MAX)
        return _Block(ids[:n], doubles[:n], self.event_times(first, n))


@dataclass(frozen=True)
class QuerySettings(SensorSettings):
    """Queries ``0, 1, 2, ...`` of a fixed ``distance``; see the module docstring."""

    STREAM: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[str, ...]] = QUERY_FIELDS
    SCHEMA: ClassVar[str] = "sensor_query"

    distance: float = 0.05

    def __post_init__(self) -> None:
        super().__post_init__()
        if not (math.isfinite(self.distance) and self.distance >= 0):
            raise ValueError(f"distance must be a finite number >= 0, got {self.distance}")

    def draw(self, rng: np.random.Generator, first: int, n: int) -> _Block:
        doubles = np.empty((CHUNK, 3))
        doubles[:, :2] = rng.random((CHUNK, 2))
        doubles[:, 2] = self.distance
        ids = np.arange(first, first + n, dtype=np.int64)
        return _Block(ids, doubles[:n], self.event_times(first, n))


class SensorStream(ReadOnceStream[Row]):
    """An iterator of generated readings or queries that can also hand out Avro records.

    Iterate for dicts, or call :meth:`avro_records` (faster) for ``(key, value)`` bytes; a
    stream is read one way, once.
    """

    def __init__(self, settings: SensorSettings, count: int) -> None:
        if count < 0:
            raise ValueError("count must be >= 0")
        super().__init__()
        self.settings, self.count = settings, count

    @property
    def schema(self) -> str:
        """The name of the records' schema: ``sensor_reading`` or ``sensor_query``."""
        return self.settings.SCHEMA

    def _blocks(self) -> Iterator[_Block]:
        rng = self.settings.rng()
        for first in range(0, self.count, CHUNK):
            yield self.settings.draw(rng, first, min(CHUNK, self.count - first))

    def _iter_rows(self) -> Iterator[Row]:
        fields = self.settings.FIELDS
        for block in self._blocks():
            a, b, c = block.doubles.T.tolist()
            rows = zip(block.ids.tolist(), a, b, c, block.ts.tolist(), strict=True)
            yield from (dict(zip(fields, row, strict=True)) for row in rows)

    def avro_records(self, header: bytes = b"") -> Iterator[KeyValue]:
        """``(id as text, header + Avro body)`` of every record, the bytes the codec writes.

        Both schemas are an integer id (``int`` and ``long`` encode alike), three doubles
        (8 bytes little-endian each) and the ``ts`` long.
        """
        self._claim()
        join = b"".join
        for block in self._blocks():
            ids, times = encode_longs(block.ids), encode_longs(block.ts)
            doubles = block.doubles.astype("<f8").tobytes()
            keys = [str(i).encode() for i in block.ids.tolist()]
            for row, (key, id_, ts) in enumerate(zip(keys, ids, times, strict=True)):
                yield key, join((header, id_, doubles[row * 24 : row * 24 + 24], ts))


def _stream(
    settings_type: type[SensorSettings], seed: int, count: int, **settings: Any
) -> SensorStream:
    start_ms = settings.pop("start_ms", None)
    checked = settings_type(seed=seed, **settings)
    if start_ms is None:
        start_ms = default_start_ms(count, checked.events_per_second)
    return SensorStream(dataclasses.replace(checked, start_ms=start_ms), count)


def generate_readings(seed: int, count: int, **settings: Any) -> SensorStream:
    """``count`` readings; keyword arguments are :class:`ReadingSettings` fields.

    Without ``start_ms`` the stream ends about now (:func:`~trending.generate.default_start_ms`).
    """
    return _stream(ReadingSettings, seed, count, **settings)


def generate_queries(seed: int, count: int, **settings: Any) -> SensorStream:
    """``count`` queries; keyword arguments are :class:`QuerySettings` fields (see above)."""
    return _stream(QuerySettings, seed, count, **settings)


# ---- replay --------------------------------------------------------------------------------


def parse_event_time(value: Any) -> int:
    """Epoch ms from an integer or an ISO-8601 string (``Z`` or an offset; none means UTC)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return _long(value, "ts")
    if not isinstance(value, str):
        raise ValueError(f"ts must be epoch ms or an ISO-8601 string, not {value!r}")
    text = value.strip()
    try:
        moment = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith("Z") else text)
    except ValueError:
        raise ValueError(f"ts is not an ISO-8601 date: {value!r}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    delta = moment - datetime(1970, 1, 1, tzinfo=timezone.utc)
    return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000


def _integer(value: Any, field: str, bound: int) -> int:
    """An integer in ``[-bound, bound)``."""
    if not isinstance(value, int) or isinstance(value, bool) or not -bound <= value < bound:
        raise ValueError(f"{field} must be a {bound.bit_length()}-bit integer, not {value!r}")
    return value


def _long(value: Any, field: str) -> int:
    return _integer(value, field, _INT64)


def _finite(value: Any, field: str) -> float:
    """A finite JSON number as a float (``true``/``false``, NaN and infinities refused)."""
    number = math.nan
    if isinstance(value, int | float) and not isinstance(value, bool):
        with contextlib.suppress(OverflowError):  # an integer too large for a double
            number = float(value)
    if not math.isfinite(number):
        raise ValueError(f"{field} must be a finite number, not {value!r}")
    return number


def _distance(value: Any, field: str) -> float:
    number = _finite(value, field)
    if number < 0:
        raise ValueError(f"{field} must be >= 0, not {value!r}")
    return number


Check = Callable[[Any, str], Any]
READING_CHECKS: dict[str, Check] = {
    "sensor_id": lambda v, f: _integer(v, f, _INT32),
    "x": _finite,
    "y": _finite,
    "value": _finite,
    "ts": lambda v, f: parse_event_time(v),
}
QUERY_CHECKS: dict[str, Check] = {
    "query_id": _long,
    "x": _finite,
    "y": _finite,
    "distance": _distance,
    "ts": lambda v, f: parse_event_time(v),
}


def parse_line(line: str, checks: Mapping[str, Check]) -> Row:
    """One JSON line as a record of the ``checks``' fields; ``ValueError`` says what is wrong."""
    try:
        data = json.loads(line)
    except json.JSONDecodeError as error:
        raise ValueError(f"not JSON: {error.msg}") from None
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    missing = [field for field in checks if field not in data]
    if missing:
        raise ValueError(f"missing {', '.join(missing)}")
    return {field: check(data[field], field) for field, check in checks.items()}


def parse_reading_line(line: str) -> Row:
    """One JSON line as a ``sensor_reading`` record."""
    return parse_line(line, READING_CHECKS)


def parse_query_line(line: str) -> Row:
    """One JSON line as a ``sensor_query`` record."""
    return parse_line(line, QUERY_CHECKS)


def read_jsonl(
    lines: Iterable[str], parse: Callable[[str], Row], on_error: Callable[[int, str], None]
) -> Iterator[Row]:
    """The records of JSON lines (blank lines skipped); a bad line calls
    ``on_error(line_number, reason)``."""
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            yield parse(line)
        except ValueError as error:
            on_error(number, str(error))


def read_readings_jsonl(
    lines: Iterable[str], on_error: Callable[[int, str], None]
) -> Iterator[Row]:
    """The readings of JSON lines; see :func:`read_jsonl`."""
    return read_jsonl(lines, parse_reading_line, on_error)


def read_queries_jsonl(lines: Iterable[str], on_error: Callable[[int, str], None]) -> Iterator[Row]:
    """The queries of JSON lines; see :func:`read_jsonl`."""
    return read_jsonl(lines, parse_query_line, on_error)


# ---- producing ---------------------------------------------------------------------------------


def produce_sensor_records(
    bootstrap: str,
    topic: str,
    records: Iterable[Mapping[str, Any]],
    *,
    schema: str,
    extra: Mapping[str, str] | None = None,
    registry_url: str | None = None,
    partitions: int = 4,
    rate: float | None = None,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Write readings (``schema="sensor_reading"``) or queries (``"sensor_query"``) as Avro.

    ``topic`` is created with ``partitions`` when missing. The key is the record's id as
    text (``sensor_id`` or ``query_id``) and decides the partition, so one sensor's readings
    stay in order in one partition. A :class:`SensorStream` is encoded on its fast path.
    Returns the count once every record is acknowledged; raises
    :class:`~connectors.kafka.DeliveryError` if any is not.
    """
    id_field = {"sensor_reading": "sensor_id", "sensor_query": "query_id"}[schema]
    ensure_topics(bootstrap, [topic], partitions, extra)
    codec = AvroCodec(schema, registry_url, subject=f"{topic}-value")
    if isinstance(records, SensorStream) and records.schema == schema:
        pairs: Iterable[KeyValue] = records.avro_records(codec.header)
    else:
        pairs = ((str(r[id_field]).encode(), codec.encode(r)) for r in records)
    sink = producer(bootstrap, extra)
    count = sink.produce_many(topic, pairs, rate=rate, progress=progress)
    sink.flush()
    return count
