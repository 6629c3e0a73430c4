"""Temporal events: intervals, points, edges, CTIs and output rows (times in ms, ``[start, end)``).

* :class:`IntervalEvent` lives over ``[start, end)``; a point event is one tick long
  (:func:`point_event`).
* :class:`StartEdge` opens an event whose end is not known yet; it lasts until the
  :class:`EndEdge` with the same ``id`` (or to the end of time if none comes).
* :class:`Cti` (current time increment) promises that no later input changes anything before
  its time: no event starts and no end edge ends earlier.
* :class:`Row` is an output: a result ``value`` valid over ``[start, end)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeAlias

from trending.windows.temporal.timeline import END_OF_TIME, TICK, format_time_ms

Value: TypeAlias = Any  # a JSON-able payload: numbers for numeric aggregates


class TemporalInputError(ValueError):
    """An input the temporal core cannot use (bad lifetime, unknown edge); the message says why."""


@dataclass(frozen=True)
class IntervalEvent:
    """An event whose whole lifetime ``[start, end)`` is known on arrival."""

    start: int
    end: int
    value: Value = None
    id: str | None = None


@dataclass(frozen=True)
class StartEdge:
    """The start of an event that lasts until its end edge (``id``) or the end of time."""

    start: int
    value: Value = None
    id: str | None = None


@dataclass(frozen=True)
class EndEdge:
    """The end of the open event ``id``: its lifetime becomes ``[start, end)``."""

    id: str
    end: int


@dataclass(frozen=True)
class Cti:
    """A punctuation: nothing before ``time`` changes any more."""

    time: int


Item: TypeAlias = IntervalEvent | StartEdge | EndEdge


@dataclass(frozen=True)
class Row:
    """One output: ``value`` holds over ``[start, end)`` (``end == END_OF_TIME``: forever)."""

    start: int
    end: int
    value: Value

    def __str__(self) -> str:
        end = "end of time" if self.end == END_OF_TIME else format_time_ms(self.end)
        return f"[{format_time_ms(self.start)}, {end}) {self.value!r}"


def point_event(time: int, value: Value = None, id: str | None = None) -> IntervalEvent:
    """An event valid for the single tick ``[time, time + 1)``."""
    return IntervalEvent(time, time + TICK, value, id)


def describe(id: str | None, start: int) -> str:
    """How an error names an event: by its id, else by its start time."""
    return f"event {id!r}" if id is not None else f"event starting {format_time_ms(start)}"
