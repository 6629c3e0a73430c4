"""The temporal half of :func:`trending.windows.replay.replay`: a temporal spec over JSON lines.

Input, one JSON object a line (times as ISO-8601 strings or epoch milliseconds)::

    {"start": T, "end": T, "key": K, "value": V, "id": ID}   an interval event
    {"start": T, "key": K, "value": V, "id": ID}             an open start edge ("end" absent/null)
    {"end_edge": ID, "end": T}                               closes start edge ID ("key" optional)
    {"cti": T}                                               nothing before T changes any more

``key``, ``value`` and ``id`` are optional (``id`` is needed to close a start edge). Events of
different keys are windowed independently, each with its own state (group and apply). The end
of the input is a CTI at the end of time. A CTI not after the previous one changes nothing.

Output, one JSON object a line, for each row as a CTI makes it final::

    {"start": T, "end": T, "key": K, "value": V}

with times as ISO-8601 UTC with milliseconds, ``"end": null`` for the end of time and
``"key": null`` for input without keys. Rows come CTI by CTI; the rows of one CTI are sorted by
start, then end, then key, then value (keys and values compared by their JSON text).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

from trending.windows.temporal import (
    END_OF_TIME,
    CtiViolation,
    EndEdge,
    IntervalEvent,
    Item,
    Row,
    StartEdge,
    TemporalInputError,
    TemporalLogic,
    TemporalQuery,
    TemporalState,
    format_time_ms,
    parse_time_ms,
)
from trending.windows.temporal.timeline import BEGINNING_OF_TIME

Key = Any
T = TypeVar("T")
_EVENT_FIELDS = {"start", "end", "key", "value", "id"}
_FORMS = '{"start": T, "end": T, ...}, {"end_edge": ID, "end": T}, {"cti": T}'


class ReplayError(ValueError):
    """A spec file or an input line the replay (SPL or temporal) cannot use; the message says
    where."""


class KeyedTemporalRun:
    """One temporal query applied per key, as a keyed stateful operator would run it."""

    def __init__(self, query: TemporalQuery) -> None:
        self.query = query
        self.cti = BEGINNING_OF_TIME
        self.states: dict[str, tuple[Key, TemporalState]] = {}
        self.edge_keys: dict[str, Key] = {}
        self.dropped = 0
        self.adjusted = 0

    def insert(self, key: Key, item: Item) -> None:
        """Feed one event or edge to its key's query."""
        if isinstance(item, StartEdge) and item.id is not None:
            if item.id in self.edge_keys:
                raise TemporalInputError(f"start edge {item.id!r} is already open")
            self.edge_keys[item.id] = key
        self._apply(key, partial(TemporalLogic.insert, item=item))

    def end_edge(self, id: str, end: int, key: Key | None) -> None:
        """Close start edge ``id`` (of ``key``, or of the key its start edge had)."""
        if id not in self.edge_keys:
            raise TemporalInputError(f"end edge {id!r} has no open start edge")
        self.insert(self.edge_keys.pop(id) if key is None else key, EndEdge(id, end))

    def advance(self, cti: int) -> list[tuple[Key, Row]]:
        """Advance every key to CTI ``cti``; the rows made final, in output order."""
        if cti <= self.cti:
            return []
        self.cti = cti
        out: list[tuple[Key, Row]] = []
        for key, _ in list(self.states.values()):
            out.extend(
                (key, row) for row in self._apply(key, partial(TemporalLogic.advance, cti=cti))
            )
        return sorted(out, key=_row_order)

    def _apply(self, key: Key, action: Callable[[TemporalLogic], T]) -> T:
        name = json.dumps(key, sort_keys=True)
        state = self.states[name][1] if name in self.states else self.query.initial_state(self.cti)
        logic = self.query.build(state)
        result = action(logic)
        self.dropped += logic.dropped
        self.adjusted += logic.adjusted
        if state.is_idle():
            self.states.pop(name, None)
        else:
            self.states[name] = (key, state)
        return result


def replay_temporal(
    query: TemporalQuery, lines: Iterable[str], warn: Callable[[str], None] | None = None
) -> Iterator[str]:
    """The output lines of ``query`` over input ``lines``; :class:`ReplayError` names a bad line."""
    run = KeyedTemporalRun(query)
    for number, line in enumerate(lines, start=1):
        if line.strip():
            yield from _rows(partial(_feed, run, line), f"line {number}")
    yield from _rows(partial(run.advance, END_OF_TIME), "end of input")
    if warn is not None and (run.dropped or run.adjusted):
        warn(f"late input (behind a CTI): {run.dropped} dropped, {run.adjusted} adjusted")


def _rows(action: Callable[[], list[tuple[Key, Row]]], where: str) -> Iterator[str]:
    try:
        rows = action()
    except (TemporalInputError, CtiViolation, ValueError) as error:
        raise ReplayError(f"{where}: {error}") from error
    for key, row in rows:
        yield json.dumps(row_json(key, row))


@dataclass(frozen=True)
class EventLine:
    """``{"start": T, "end": T, "key": K, "value": V, "id": ID}``; ``end`` None for a start edge.

    ``key``, ``value`` and ``id`` are the line's JSON values (None when absent), unchecked.
    """

    start: int
    end: int | None
    key: Any = None
    value: Any = None
    id: Any = None


@dataclass(frozen=True)
class EndEdgeLine:
    """``{"end_edge": ID, "end": T}`` with an optional ``key``; ``id`` and ``key`` unchecked."""

    id: Any
    end: int
    key: Any = None


@dataclass(frozen=True)
class CtiLine:
    """``{"cti": T}``."""

    time: int


ReplayLine = EventLine | EndEdgeLine | CtiLine


def parse_replay_line(line: str) -> ReplayLine:
    """One input line: its form (by its fields), no unknown field, the times it needs parsed.

    :class:`ReplayError` (a ``ValueError``) says what is wrong, without the line number.
    """
    data = _object(line)
    if "cti" in data:
        _only(data, {"cti"}, line)
        return CtiLine(_time(data["cti"], "cti"))
    if "end_edge" in data:
        _only(data, {"end_edge", "end", "key"}, line)
        return EndEdgeLine(data["end_edge"], _time(_needed(data, "end"), "end"), data.get("key"))
    _only(data, _EVENT_FIELDS, line)
    start = _time(_needed(data, "start"), "start")
    end = None if data.get("end") is None else _time(data["end"], "end")
    return EventLine(start, end, data.get("key"), data.get("value"), data.get("id"))


def _feed(run: KeyedTemporalRun, line: str) -> list[tuple[Key, Row]]:
    parsed = parse_replay_line(line)
    if isinstance(parsed, CtiLine):
        return run.advance(parsed.time)
    if isinstance(parsed, EndEdgeLine):
        run.end_edge(_id(parsed.id), parsed.end, parsed.key)
        return []
    run.insert(parsed.key, _event(parsed))
    return []


def _event(line: EventLine) -> Item:
    id = None if line.id is None else _id(line.id)
    if line.end is None:
        return StartEdge(line.start, line.value, id)
    return IntervalEvent(line.start, line.end, line.value, id)


def row_json(key: Key, row: Row) -> dict[str, Any]:
    """An output row as JSON: ISO times, ``null`` end for the end of time."""
    end = None if row.end == END_OF_TIME else format_time_ms(row.end)
    return {"start": format_time_ms(row.start), "end": end, "key": key, "value": row.value}


def _row_order(item: tuple[Key, Row]) -> tuple[int, int, str, str]:
    key, row = item
    return row.start, row.end, json.dumps(key, sort_keys=True), json.dumps(row.value)


def _object(line: str) -> dict[str, Any]:
    try:
        data = json.loads(line)
    except json.JSONDecodeError as error:
        raise ReplayError(f"not JSON ({error.msg} at column {error.colno})") from error
    if not isinstance(data, dict):
        raise ReplayError(f"expected one of {_FORMS}; got {line.strip()[:80]}")
    return data


def _only(data: Mapping[str, Any], allowed: set[str], line: str) -> None:
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise ReplayError(f"unknown field {unknown[0]!r} in {line.strip()[:80]}")


def _needed(data: Mapping[str, Any], name: str) -> Any:
    if name not in data:
        raise ReplayError(f"missing {name!r}; expected one of {_FORMS}")
    return data[name]


def _time(value: object, name: str) -> int:
    try:
        return parse_time_ms(value)
    except ValueError as error:
        raise ReplayError(f"{name}: {error}") from error


def _id(value: object) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise ReplayError(f"an id must be a string or an integer, got {value!r}")
    return str(value)
