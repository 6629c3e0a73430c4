"""Hopping and tumbling windows, one row per non-empty window.

Window ``n`` is ``W(n) = [a + n*p, a + n*p + d)`` (see :mod:`.geometry`; tumbling: ``p = d``).
An event ``[s, e)`` falls in every window it intersects and is clipped to it::

    row [a + n*p, a + n*p + d) -> aggregate(events clipped to W(n))

A window is final once the CTI reaches its end. An event open for ``k`` hops gives ``k`` rows
here; HoppingWindow2 (:class:`~.snapshot.SnapshotWindow` with ``snap``) gives one per change.
As a guard, one step refuses to put an event in more than ``max_windows`` windows.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from trending.windows.temporal.aggregates import Aggregate
from trending.windows.temporal.events import Row, TemporalInputError, Value, describe
from trending.windows.temporal.geometry import HoppingGeometry
from trending.windows.temporal.state import StoredEvent, TemporalState

Members = defaultdict[int, list[tuple[Value, int]]]


@dataclass(frozen=True)
class HoppingWindow:
    """Hopping windows with the clip input policy and window-aligned output."""

    geometry: HoppingGeometry
    aggregate: Aggregate
    max_windows: int = 1_000_000

    @property
    def name(self) -> str:
        return "hopping"

    def check(self, value: Value) -> None:
        self.aggregate.check(value)

    def emit(self, state: TemporalState, cti: int) -> list[Row]:
        """Windows ending in ``(state.cti, cti]``; forgets events that end before the next one."""
        first = self.geometry.first_ending_after(state.cti)
        last = self.geometry.last_ending_by(cti)
        members: Members = defaultdict(list)
        for event in state.events():
            self._place(event, range(first, last + 1), members)
        rows = [self._row(n, members[n]) for n in sorted(members)]
        next_start = self.geometry.start(last + 1)
        state.closed = [event for event in state.closed if event.end > next_start]
        return rows

    def _place(self, event: StoredEvent, final: range, members: Members) -> None:
        mine = self.geometry.windows_of(event.start, event.end)
        lo, hi = max(mine.start, final.start), min(mine.stop, final.stop)
        if hi - lo > self.max_windows:
            raise TemporalInputError(
                f"{describe(event.id, event.start)} falls in {hi - lo} hopping windows at once; "
                'use "snap": true (HoppingWindow2) for long-lived events'
            )
        for n in range(lo, hi):
            start, end = self.geometry.start(n), self.geometry.end(n)
            members[n].append((event.value, min(event.end, end) - max(event.start, start)))

    def _row(self, n: int, members: list[tuple[Value, int]]) -> Row:
        values = [value for value, _ in members]
        lengths = [length for _, length in members]
        value = self.aggregate(values, lengths, self.geometry.duration)
        return Row(self.geometry.start(n), self.geometry.end(n), value)
