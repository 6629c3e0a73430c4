"""Count windows by start time (StreamInsight's ``CountByStartTimeWindow(n)``).

Let ``t1 < t2 < ...`` be the distinct event start times. Count window ``j`` spans ``n``
consecutive ones::

    W(j) = [t_j, t_{j+n-1} + 1)

and holds the events starting in it (several events may share a start time, so a window can hold
more than ``n`` events). Events are clipped to the window (``min(e, t_{j+n-1} + 1) - s``, for a
time-weighted average), and the result is a point at the window's last start time::

    row [t_{j+n-1}, t_{j+n-1} + 1) -> aggregate(events of W(j))

A window is final once the CTI passes its last start time (no more events can start there).
The state keeps the events of the last ``n - 1`` final start times and those not yet final.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from trending.windows.temporal.aggregates import Aggregate
from trending.windows.temporal.events import Row, Value
from trending.windows.temporal.state import StoredEvent, TemporalState
from trending.windows.temporal.timeline import TICK


@dataclass(frozen=True)
class CountWindow:
    """Windows over ``n`` consecutive distinct start times, output at the last of them."""

    n: int
    aggregate: Aggregate

    def __post_init__(self) -> None:
        if self.n < 1:
            raise ValueError(f"a count window needs n >= 1, got {self.n}")

    @property
    def name(self) -> str:
        return "count"

    def check(self, value: Value) -> None:
        self.aggregate.check(value)

    def emit(self, state: TemporalState, cti: int) -> list[Row]:
        """The windows whose last start time the CTI passes; forgets older start times."""
        by_start: defaultdict[int, list[StoredEvent]] = defaultdict(list)
        for event in state.events():
            if event.start < cti:
                by_start[event.start].append(event)
        starts = sorted(by_start)
        rows = [
            self._window(starts[j - self.n + 1 : j + 1], by_start)
            for j in range(self.n - 1, len(starts))
            if state.frontier is None or starts[j] > state.frontier
        ]
        state.frontier = starts[-1] if starts else state.frontier
        kept = set(starts[max(0, len(starts) - self.n + 1) :]) if self.n > 1 else set()
        state.closed = [e for e in state.closed if e.start >= cti or e.start in kept]
        for id, event in list(state.open.items()):
            if event.start < cti and event.start not in kept:
                del state.open[id]
                state.ignored_edges.add(id)
        return rows

    def _window(self, starts: list[int], by_start: dict[int, list[StoredEvent]]) -> Row:
        last = starts[-1]
        end = last + TICK
        members = [event for start in starts for event in by_start[start]]
        lengths = [min(event.end, end) - event.start for event in members]
        value = self.aggregate([event.value for event in members], lengths, end - starts[0])
        return Row(last, end, value)
