"""Altered events as output: each event with its altered lifetime, no window.

An event is output once its lifetime is known (an interval, a closed edge, or an open edge at
its clip or the end of time) and the CTI has passed its start; rows of one CTI come sorted by
start, then end.
"""

from __future__ import annotations

from dataclasses import dataclass

from trending.windows.temporal.events import Row, Value
from trending.windows.temporal.state import TemporalState


@dataclass(frozen=True)
class AlteredEvents:
    """Passes events through (after the query's alteration)."""

    @property
    def name(self) -> str:
        return "alter"

    def check(self, value: Value) -> None:
        """Any JSON-able value will do."""

    def emit(self, state: TemporalState, cti: int) -> list[Row]:
        """The known events starting before ``cti``, forgotten once output."""
        ready = sorted(
            (event for event in state.closed if event.start < cti),
            key=lambda event: (event.start, event.end),
        )
        state.closed = [event for event in state.closed if event.start >= cti]
        return [Row(event.start, event.end, event.value) for event in ready]
