"""The temporal replay format (intervals, edges, CTIs as JSON lines) as ``interval_event`` records.

Lines are those of ``trending windows replay`` (see :mod:`trending.windows.temporal_replay`,
whose line parser this uses), one JSON object a line, times as epoch ms or ISO-8601::

    {"start": T, "end": T, "key": K, "value": V, "id": ID}   kind INTERVAL
    {"start": T, "key": K, "value": V, "id": ID}             kind START_EDGE ("end" absent/null)
    {"end_edge": ID, "end": T}                               kind END_EDGE ("key" optional)
    {"cti": T}                                               kind CTI, start = T

Fields of a record: ``key`` and ``id`` are a string as is, any other JSON value as its compact
JSON text (keys sorted), null when absent or null; ``value`` is a number as a double or null.
An end edge without a key gets the key of the start edge of its id seen earlier in the file
(null when none was), since the job groups events by key.

Bad lines (not JSON, a missing or unparsable time, an unknown field, ``end <= start``, a value
that is not a number, an end edge without an id or ending before its start edge) are skipped
and reported with their number.
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from connectors.avro import AvroCodec
from connectors.kafka import Routed, ensure_topics, partition_count, producer
from trending.sensors_data import read_jsonl
from trending.windows.temporal_replay import CtiLine, EndEdgeLine, parse_replay_line

Row = dict[str, Any]
SCHEMA = "interval_event"


def json_text(value: Any) -> str | None:
    """A key or id as text: a string as is, null as ``None``, else its compact JSON."""
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


def _value(value: Any) -> float | None:
    """A JSON number as a double (null stays null); anything else is a ``ValueError``."""
    if value is None:
        return None
    number = math.nan
    if isinstance(value, int | float) and not isinstance(value, bool):
        with contextlib.suppress(OverflowError):  # an integer too large for a double
            number = float(value)
    if not math.isfinite(number):
        raise ValueError(f"value must be a finite number or null, not {value!r}")
    return number


def parse_event_line(line: str) -> Row:
    """One replay line as an ``interval_event`` record; ``ValueError`` says what is wrong.

    An end edge keeps the key of its line (usually none): :func:`read_events_jsonl` fills in
    the key of its start edge.
    """
    parsed = parse_replay_line(line)
    if isinstance(parsed, CtiLine):
        return _record("CTI", start=parsed.time)
    if isinstance(parsed, EndEdgeLine):
        if parsed.id is None:
            raise ValueError("end_edge: an end edge needs the id of its start edge")
        return _record(
            "END_EDGE", id=json_text(parsed.id), key=json_text(parsed.key), end=parsed.end
        )
    if parsed.end is not None and parsed.end <= parsed.start:
        raise ValueError(f"end {parsed.end} is not after start {parsed.start}")
    return _record(
        "START_EDGE" if parsed.end is None else "INTERVAL",
        id=json_text(parsed.id),
        key=json_text(parsed.key),
        start=parsed.start,
        end=parsed.end,
        value=_value(parsed.value),
    )


def _record(
    kind: str,
    *,
    id: str | None = None,
    key: str | None = None,
    start: int | None = None,
    end: int | None = None,
    value: float | None = None,
) -> Row:
    return {"kind": kind, "id": id, "key": key, "start": start, "end": end, "value": value}


class _OpenEdges:
    """The key and start of each start edge seen so far, by id, for the end edges after it."""

    def __init__(self) -> None:
        self.open: dict[str, tuple[str | None, int]] = {}

    def parse(self, line: str) -> Row:
        record = parse_event_line(line)
        if record["kind"] == "START_EDGE" and record["id"] is not None:
            self.open[record["id"]] = (record["key"], record["start"])
        elif record["kind"] == "END_EDGE":
            found = self.open.get(record["id"])
            if found is not None:
                key, start = found
                if record["end"] <= start:
                    raise ValueError(
                        f"end edge {record['id']!r} ends at {record['end']}, "
                        f"not after its start {start}"
                    )
                del self.open[record["id"]]
                if record["key"] is None:
                    record["key"] = key
        return record


def read_events_jsonl(lines: Iterable[str], on_error: Callable[[int, str], None]) -> Iterator[Row]:
    """The ``interval_event`` records of replay lines, in order (blank lines skipped); a bad
    line calls ``on_error(line_number, reason)``. End edges get their start edge's key."""
    return read_jsonl(lines, _OpenEdges().parse, on_error)


def produce_interval_events(
    bootstrap: str,
    topic: str,
    records: Iterable[Mapping[str, Any]],
    *,
    extra: Mapping[str, str] | None = None,
    registry_url: str | None = None,
    partitions: int = 4,
    rate: float | None = None,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Write ``interval_event`` records as Avro, in order, with one idempotent producer.

    ``topic`` is created with ``partitions`` when missing. An interval or edge is keyed by its
    ``key`` (UTF-8), which picks its partition; one without a key goes to partition 0, so that
    key-less input stays in order. A CTI goes, unkeyed, to every
    partition of the topic (one copy each), so every reader of a partition sees it after the
    records before it in the input. Returns the number of records read (a CTI counts once);
    ``progress`` and ``rate`` count Kafka messages. Raises
    :class:`~connectors.kafka.DeliveryError` if any message is not acknowledged.
    """
    ensure_topics(bootstrap, [topic], partitions, extra)
    every = range(partition_count(bootstrap, topic, extra))
    codec = AvroCodec(SCHEMA, registry_url, subject=f"{topic}-value")
    count = 0

    def routed() -> Iterator[Routed]:
        nonlocal count
        for record in records:
            value = codec.encode(record)
            count += 1
            if record["kind"] == "CTI":
                yield from ((None, value, partition) for partition in every)
            elif record["key"] is None:  # one partition keeps a key-less input in order
                yield None, value, 0
            else:
                yield record["key"].encode(), value, -1

    sink = producer(bootstrap, extra)
    sink.produce_routed(topic, routed(), rate=rate, progress=progress)
    sink.flush()
    return count
