"""Snapshot windows, and over snapped lifetimes, HoppingWindow2.

The boundaries of snapshot windows are all event start and end times: between two consecutive
boundaries ``[b, b')`` the set of live events is constant, and a non-empty set gives one row
``[b, b') -> aggregate(live events)``. An event falls in the snapshots it covers and is never
clipped (it spans each of them whole).

``SnapshotWindow(aggregate, snap=geometry)`` is the seed's ``HoppingWindow2``: snapshots over the
lifetimes snapped by :meth:`HoppingGeometry.snap`, so a row ``[b, b')`` gives the aggregate of
every hopping window whose assignment lies in ``[b, b')``: one row per change of the input, not
one per hop. A CTI ``c`` makes final every snapshot ending by ``c`` (by ``snap_start(c)`` when
snapping, since any later event or end edge snaps to at least that).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise

from trending.windows.temporal.aggregates import Aggregate
from trending.windows.temporal.events import Row, Value
from trending.windows.temporal.geometry import HoppingGeometry
from trending.windows.temporal.state import StoredEvent, TemporalState

Lifetime = tuple[int, int, Value]


@dataclass(frozen=True)
class SnapshotWindow:
    """Snapshot windows (``snap=None``) or HoppingWindow2 (``snap=`` the hopping geometry)."""

    aggregate: Aggregate
    snap: HoppingGeometry | None = None

    def __post_init__(self) -> None:
        if self.snap is not None and self.aggregate.time_sensitive:
            raise ValueError(
                f"{self.aggregate.name} needs each event's lifetime in each hopping window, "
                "which snapping discards; use the hopping window without snap"
            )

    @property
    def name(self) -> str:
        return "snapshot" if self.snap is None else "snapped hopping"

    def check(self, value: Value) -> None:
        self.aggregate.check(value)

    def lifetime(self, event: StoredEvent) -> tuple[int, int] | None:
        """The lifetime the snapshots see: the event's own, or its snapped one."""
        if self.snap is None:
            return event.start, event.end
        return self.snap.snap(event.start, event.end)

    def horizon(self, cti: int) -> int:
        """Snapshots ending by this time are final at CTI ``cti``."""
        return cti if self.snap is None else self.snap.snap_start(cti)

    def emit(self, state: TemporalState, cti: int) -> list[Row]:
        """The snapshots that CTI ``cti`` makes final; forgets events that end before them."""
        lifetimes = [
            (*span, event.value)
            for event in state.events()
            if (span := self.lifetime(event)) is not None
        ]
        boundaries = self._boundaries(lifetimes, state, cti)
        rows = self._sweep(lifetimes, boundaries)
        state.frontier = boundaries[-1] if boundaries else state.frontier
        state.closed = [event for event in state.closed if self._still_needed(event, state)]
        return rows

    def _boundaries(self, lifetimes: list[Lifetime], state: TemporalState, cti: int) -> list[int]:
        horizon, floor = self.horizon(cti), state.frontier
        times = {t for start, end, _ in lifetimes for t in (start, end)}
        if floor is not None:
            times.add(floor)
        return sorted(t for t in times if t <= horizon and (floor is None or t >= floor))

    def _sweep(self, lifetimes: list[Lifetime], boundaries: list[int]) -> list[Row]:
        pending = sorted(lifetimes, key=lambda lifetime: lifetime[0], reverse=True)
        live: list[Lifetime] = []
        rows = []
        for start, end in pairwise(boundaries):
            while pending and pending[-1][0] <= start:
                live.append(pending.pop())
            live = [lifetime for lifetime in live if lifetime[1] > start]
            if live:
                values = [value for _, _, value in live]
                rows.append(
                    Row(start, end, self.aggregate(values, [end - start] * len(live), end - start))
                )
        return rows

    def _still_needed(self, event: StoredEvent, state: TemporalState) -> bool:
        span = self.lifetime(event)
        return span is not None and (state.frontier is None or span[1] > state.frontier)
