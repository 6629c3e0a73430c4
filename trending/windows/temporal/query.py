"""A temporal query per key: input checks, lifetime alteration and one window, step by step.

``TemporalQuery(window, alteration, violation)`` is a frozen configuration. Per key, a driver
keeps a :class:`~.state.TemporalState` and calls::

    step = query.step(state, items, cti)     # new events and edges, then the CTI (or None)
    step.rows, step.state                    # rows made final; the state to store

``step`` leaves its argument untouched. Items are checked against the CTI of the state (the one
before this step); then the CTI advances and the window emits the rows it makes final, in time
order. :meth:`TemporalQuery.build` gives the same logic as a mutable object for a loop that
feeds items one at a time. A run split into any steps, with the state stored as JSON in between,
gives the same rows as one step.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from trending.windows.temporal.aggregates import Aggregate
from trending.windows.temporal.altered import AlteredEvents
from trending.windows.temporal.count import CountWindow
from trending.windows.temporal.events import (
    Cti,
    EndEdge,
    IntervalEvent,
    Item,
    Row,
    StartEdge,
    TemporalInputError,
    Value,
    describe,
)
from trending.windows.temporal.hopping import HoppingWindow
from trending.windows.temporal.lifetime import UNCHANGED, Alteration, CtiViolation, ViolationPolicy
from trending.windows.temporal.snapshot import SnapshotWindow
from trending.windows.temporal.state import StoredEvent, TemporalState
from trending.windows.temporal.timeline import BEGINNING_OF_TIME, END_OF_TIME, format_time_ms


class TemporalWindow(Protocol):
    """What a window does: name its state, check values, emit what a CTI makes final."""

    @property
    def name(self) -> str: ...

    def check(self, value: Value) -> None: ...

    def emit(self, state: TemporalState, cti: int) -> list[Row]: ...


@dataclass(frozen=True)
class Step:
    """The rows one step made final, the state after it, and the late input it handled."""

    rows: list[Row]
    state: TemporalState
    dropped: int = 0
    adjusted: int = 0


@dataclass(frozen=True)
class TemporalQuery:
    """Alter lifetimes (optional), police CTI violations, and window the events."""

    window: TemporalWindow
    alteration: Alteration = UNCHANGED
    violation: ViolationPolicy = ViolationPolicy.FAIL

    def initial_state(self, cti: int = BEGINNING_OF_TIME) -> TemporalState:
        """The state of a key seen for the first time while the (input) CTI is ``cti``."""
        return TemporalState(self.window.name, self.alteration.cti(cti))

    def build(self, state: TemporalState | None = None) -> TemporalLogic:
        """The query running over ``state`` (changed in place), or over a fresh one."""
        return TemporalLogic(self, state if state is not None else self.initial_state())

    def restore(self, data: Mapping[str, Any]) -> TemporalState:
        """The state saved by :meth:`TemporalState.to_json`."""
        return TemporalState.from_json(data, self.window.name)

    def step(self, state: TemporalState, items: Iterable[Item], cti: int | None) -> Step:
        """Apply ``items``, then advance to ``cti``; ``state`` itself is not changed."""
        logic = self.build(state.copy())
        for item in items:
            logic.insert(item)
        rows = logic.advance(cti) if cti is not None else []
        return Step(rows, logic.state, logic.dropped, logic.adjusted)

    def to_jvm_json(self) -> str:
        """The query in the normal form the JVM core reads (``trending.temporal.SpecJson``).

        Canonical JSON (sorted keys, no spaces), every field explicit, times in integer ms::

            {"version": 1, "violation": "fail" | "drop" | "adjust",
             "alteration": {"shift_ms": S, "duration_ms": D | null, "extend_ms": E,
                            "clip_ms": C | null},
             "window": W}
            W = {"kind": "hopping", "duration_ms": D, "hop_ms": P, "alignment_ms": A,
                 "snap": B, "aggregate": G, "max_windows": N | null}
              | {"kind": "snapshot", "aggregate": G} | {"kind": "count", "n": N, "aggregate": G}
              | {"kind": "alter"}
            G = {"name": NAME, "k": K | null}

        A tumbling window is a hopping one with ``hop_ms == duration_ms``; ``alignment_ms`` is
        reduced to ``[0, hop_ms)``; HoppingWindow2 is ``"snap": true`` (``max_windows`` null).
        A window of another class raises ``ValueError``.
        """
        alteration = self.alteration
        data = {
            "version": 1,
            "violation": self.violation.value,
            "alteration": {
                "shift_ms": alteration.shift,
                "duration_ms": alteration.duration,
                "extend_ms": alteration.extend,
                "clip_ms": alteration.clip,
            },
            "window": _window_json(self.window),
        }
        return json.dumps(data, sort_keys=True, separators=(",", ":"), allow_nan=False)

    def run(self, inputs: Iterable[Item | Cti]) -> list[Row]:
        """All rows of one key's input (a CTI at the end of time closes it)."""
        logic = self.build()
        rows: list[Row] = []
        for item in inputs:
            if isinstance(item, Cti):
                rows.extend(logic.advance(item.time))
            else:
                logic.insert(item)
        return rows + logic.advance(END_OF_TIME)


def _window_json(window: TemporalWindow) -> dict[str, Any]:
    """A window's part of :meth:`TemporalQuery.to_jvm_json`."""
    if isinstance(window, HoppingWindow):
        geometry, snap, most = window.geometry, False, window.max_windows
        aggregate = window.aggregate
    elif isinstance(window, SnapshotWindow) and window.snap is not None:
        geometry, snap, most, aggregate = window.snap, True, None, window.aggregate
    elif isinstance(window, SnapshotWindow):
        return {"kind": "snapshot", "aggregate": _aggregate_json(window.aggregate)}
    elif isinstance(window, CountWindow):
        return {"kind": "count", "n": window.n, "aggregate": _aggregate_json(window.aggregate)}
    elif isinstance(window, AlteredEvents):
        return {"kind": "alter"}
    else:
        raise ValueError(f"the JVM core has no {window.name!r} window")
    return {
        "kind": "hopping",
        "duration_ms": geometry.duration,
        "hop_ms": geometry.hop,
        "alignment_ms": geometry.alignment,
        "snap": snap,
        "aggregate": _aggregate_json(aggregate),
        "max_windows": most,
    }


def _aggregate_json(aggregate: Aggregate) -> dict[str, Any]:
    return {"name": aggregate.name, "k": aggregate.k}


@dataclass
class TemporalLogic:
    """A query over one key's state, fed one item at a time."""

    query: TemporalQuery
    state: TemporalState
    dropped: int = field(default=0)
    adjusted: int = field(default=0)

    def insert(self, item: Item) -> None:
        """Take an event or edge; raises on bad input and (policy ``fail``) on lateness."""
        if isinstance(item, IntervalEvent):
            self._interval(item)
        elif isinstance(item, StartEdge):
            self._start_edge(item)
        else:
            self._end_edge(item)

    def advance(self, cti: int) -> list[Row]:
        """Move the CTI to ``cti`` (input time) and return the rows it makes final."""
        altered = self.query.alteration.cti(cti)
        if altered <= self.state.cti:
            return []
        self._close_capped(altered)
        rows = self.query.window.emit(self.state, altered)
        self.state.cti = altered
        return rows

    def _interval(self, event: IntervalEvent) -> None:
        if event.end <= event.start:
            raise TemporalInputError(
                f"{describe(event.id, event.start)} does not end after it starts"
            )
        self.query.window.check(event.value)
        alteration = self.query.alteration
        start = alteration.start(event.start)
        self._store(event.id, start, alteration.end(start, event.end), event.value)

    def _start_edge(self, edge: StartEdge) -> None:
        if edge.id is not None and (
            edge.id in self.state.open or edge.id in self.state.ignored_edges
        ):
            raise TemporalInputError(f"start edge {edge.id!r} is already open")
        self.query.window.check(edge.value)
        start = self.query.alteration.start(edge.start)
        cap = self.query.alteration.cap(start)
        if edge.id is None or self.query.alteration.fixed:
            self._store(edge.id, start, cap, edge.value)
        elif (admitted := self._admit(edge.id, start, cap)) is None:
            self.state.ignored_edges.add(edge.id)
        else:
            self.state.open[edge.id] = StoredEvent(*admitted, edge.value, edge.id)

    def _end_edge(self, edge: EndEdge) -> None:
        if self.query.alteration.fixed or self._ignore(edge.id):
            return
        event = self.state.open.get(edge.id)
        if event is None:
            raise TemporalInputError(f"end edge {edge.id!r} has no open start edge")
        if edge.end + self.query.alteration.shift <= event.start:
            raise TemporalInputError(f"end edge {edge.id!r} does not end after its start")
        end = self._admit_end(event, self.query.alteration.end(event.start, edge.end))
        del self.state.open[edge.id]
        if end > event.start:
            self.state.closed.append(replace(event, end=end))

    def _ignore(self, id: str) -> bool:
        if id not in self.state.ignored_edges:
            return False
        self.state.ignored_edges.discard(id)
        return True

    def _store(self, id: str | None, start: int, end: int, value: Value) -> None:
        if end > start and (admitted := self._admit(id, start, end)) is not None:
            self.state.closed.append(StoredEvent(*admitted, value, id))

    def _admit(self, id: str | None, start: int, end: int) -> tuple[int, int] | None:
        """The lifetime to keep for an event starting at ``start`` (None: dropped)."""
        cti = self.state.cti
        if start >= cti:
            return start, end
        policy = self.query.violation
        if policy is ViolationPolicy.FAIL:
            name = describe(id, start) if id is not None else "an event without an id"
            raise CtiViolation(
                f"{name} starts at {format_time_ms(start)}, before the CTI {format_time_ms(cti)}"
            )
        if policy is ViolationPolicy.DROP or end <= cti:
            self.dropped += 1
            return None
        self.adjusted += 1
        return cti, end

    def _admit_end(self, event: StoredEvent, end: int) -> int:
        """The end to give an open event whose end edge says ``end``."""
        cti = self.state.cti
        if end >= cti or end >= event.end:
            return min(end, event.end)
        policy = self.query.violation
        if policy is ViolationPolicy.FAIL:
            raise CtiViolation(
                f"end edge {event.id!r} ends at {format_time_ms(end)}, "
                f"before the CTI {format_time_ms(cti)}"
            )
        if policy is ViolationPolicy.DROP:
            self.dropped += 1
            return event.end
        self.adjusted += 1
        return cti

    def _close_capped(self, cti: int) -> None:
        """Open events whose clip the CTI reaches are closed; their end edges will be ignored."""
        for id, event in list(self.state.open.items()):
            if event.end <= cti:
                del self.state.open[id]
                self.state.closed.append(event)
                self.state.ignored_edges.add(id)
