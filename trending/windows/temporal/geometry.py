"""Hopping window geometry and HoppingWindow2's snapping of lifetimes to window assignments.

With duration ``d``, hop ``p`` and alignment ``a`` (reduced to ``a mod p``), window ``n`` is::

    W(n) = [a + n*p, a + n*p + d)          for every integer n

An event ``[s, e)`` falls in (intersects) the windows ``n`` with ``a + n*p < e`` and
``a + n*p + d > s``. Window ``n`` is *assigned* the interval ``[end(n), end(n) + p)`` just after
it closes; the assignments tile the timeline. Snapping moves an event onto the assignments of
the windows it falls in (the seed's ``AdjustStartTime``/``AdjustEndTime``)::

    s' = floor_to(s, a + d, p) + p       the first window end after s
    e' = floor_to(e - 1, a, p) + p + d   the end of the last window starting before e, plus p

so a snapshot window over snapped events holds, at every instant of window ``n``'s assignment,
exactly the events of window ``n``. With gaps (``d < p``) an event inside a gap falls in no
window and snaps to an empty lifetime (``s' >= e'``): it is dropped, and no window is missed,
because an event reaching windows ``n1`` and ``n2`` reaches every window between them. Snapped
times are clamped to the timeline; the end of time stays the end of time.
"""

from __future__ import annotations

from dataclasses import dataclass

from trending.windows.temporal.timeline import END_OF_TIME, clamp, floor_to


@dataclass(frozen=True)
class HoppingGeometry:
    """Windows ``[a + n*p, a + n*p + d)``; ``alignment`` is any window start (ms)."""

    duration: int
    hop: int
    alignment: int = 0

    def __post_init__(self) -> None:
        if self.duration <= 0:
            raise ValueError(f"window duration must be positive, got {self.duration} ms")
        if self.hop <= 0:
            raise ValueError(f"window hop must be positive, got {self.hop} ms")
        object.__setattr__(self, "alignment", self.alignment % self.hop)

    def start(self, n: int) -> int:
        """``a + n*p``."""
        return self.alignment + n * self.hop

    def end(self, n: int) -> int:
        """``a + n*p + d``."""
        return self.start(n) + self.duration

    def first_ending_after(self, t: int) -> int:
        """The smallest ``n`` with ``end(n) > t``."""
        return (t - self.duration - self.alignment) // self.hop + 1

    def last_ending_by(self, t: int) -> int:
        """The largest ``n`` with ``end(n) <= t``."""
        return (t - self.duration - self.alignment) // self.hop

    def last_starting_before(self, t: int) -> int:
        """The largest ``n`` with ``start(n) < t``."""
        return (t - 1 - self.alignment) // self.hop

    def windows_of(self, start: int, end: int) -> range:
        """The ``n`` of the windows that ``[start, end)`` falls in."""
        return range(self.first_ending_after(start), self.last_starting_before(end) + 1)

    def snap_start(self, t: int) -> int:
        """``floor_to(t, a + d, p) + p``: the first window end after ``t`` (clamped)."""
        if t == END_OF_TIME:
            return END_OF_TIME
        return clamp(floor_to(t, self.alignment + self.duration, self.hop) + self.hop)

    def snap_end(self, t: int) -> int:
        """``floor_to(t - 1, a, p) + p + d`` (clamped)."""
        if t == END_OF_TIME:
            return END_OF_TIME
        return clamp(floor_to(t - 1, self.alignment, self.hop) + self.hop + self.duration)

    def snap(self, start: int, end: int) -> tuple[int, int] | None:
        """The snapped lifetime of ``[start, end)``, or ``None`` if it falls in no window."""
        snapped = self.snap_start(start), self.snap_end(end)
        return snapped if snapped[0] < snapped[1] else None
