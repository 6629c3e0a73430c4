"""Lifetime alteration (StreamInsight's AlterEventLifetime) and CTI violation policies.

For an event ``[s, e)`` and a CTI ``c``, with ``shift``, ``extend`` and optional ``duration``
and ``clip``::

    s' = s + shift                      c' = c + shift   (CTIs move with the events)
    e' = s' + duration                  if a fixed duration is given, else
    e' = e + shift + extend
    e' = min(e', s' + clip)             if a clip (maximum duration) is given

Every form is monotone: the start selector is a constant shift (payload-free, as it must be to
apply to CTIs too), so the order of start edges and CTIs never changes. Changing the duration of
events with end edges can still move an end edge before a CTI (e.g. a negative ``extend``); a
fixed ``duration`` cannot, since the event's end is then known at its start and end edges are
ignored (the loophole of the seed). An event whose altered lifetime is empty (``e' <= s'``)
vanishes. The end of time stays the end of time.

A CTI violation is input that would change the committed past: an event starting before the
current CTI, or an end edge ending before it. :class:`ViolationPolicy` says what happens:

* ``fail``: raise :class:`CtiViolation` naming the event;
* ``drop``: ignore the late input and count it (a late end edge leaves the event as it was
  committed: open until its clip or the end of time);
* ``adjust``: move the late time up to the CTI (an event that then has no lifetime left is
  dropped and counted).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from trending.windows.temporal.timeline import END_OF_TIME, clamp


class ViolationPolicy(Enum):
    """What to do with input that arrives behind the CTI."""

    FAIL = "fail"
    DROP = "drop"
    ADJUST = "adjust"


class CtiViolation(ValueError):
    """Input that would change results already made final by a CTI (policy ``fail``)."""


@dataclass(frozen=True)
class Alteration:
    """Shift start times, set or change durations, clip durations (all in ms)."""

    shift: int = 0
    duration: int | None = None
    extend: int = 0
    clip: int | None = None

    def __post_init__(self) -> None:
        if self.duration is not None and self.duration <= 0:
            raise ValueError(f"duration must be positive, got {self.duration} ms")
        if self.clip is not None and self.clip <= 0:
            raise ValueError(f"clip must be positive, got {self.clip} ms")
        if self.duration is not None and self.extend:
            raise ValueError("give a fixed duration or an extension, not both")

    @property
    def fixed(self) -> bool:
        """Every event gets a known end at its start, so end edges are ignored."""
        return self.duration is not None

    def start(self, start: int) -> int:
        """``s' = s + shift``."""
        return self._shifted(start)

    def cti(self, cti: int) -> int:
        """``c' = c + shift``."""
        return self._shifted(cti)

    def cap(self, start: int) -> int:
        """The latest end of an event starting (altered) at ``start``."""
        if self.duration is not None:
            return self._limit(clamp(start + self.duration), start)
        return self._limit(END_OF_TIME, start)

    def end(self, start: int, end: int) -> int:
        """``e'`` of an event with altered start ``start`` and original end ``end``."""
        if self.duration is not None:
            return self.cap(start)
        moved = END_OF_TIME if end == END_OF_TIME else clamp(end + self.shift + self.extend)
        return self._limit(moved, start)

    def _limit(self, end: int, start: int) -> int:
        return end if self.clip is None else min(end, clamp(start + self.clip))

    def _shifted(self, t: int) -> int:
        return END_OF_TIME if t == END_OF_TIME else clamp(t + self.shift)


UNCHANGED = Alteration()
