"""Eviction and trigger policies of SPL windows: count, delta, time and punctuation.

A policy is a frozen, self-checking value; the windows read it and keep their own state.
Time is integer milliseconds on the window's clock, which only ``advance_to`` moves; the
clock starts at 0 and time-based periods are aligned to it (boundaries at ``k * period``).

Formulas (``W`` is a partition's window, ``x`` the arriving tuple, ``a(t)`` the delta
attribute of ``t``, ``s`` the inserting time of a tuple):

* :class:`Count` ``count(n)``
    - tumbling eviction: insert ``x``; if ``|W| = n`` flush. Windows are the arrival-index
      ranges ``[k*n, (k+1)*n)`` of each partition.
    - sliding eviction: if ``|W| = n`` evict the oldest; insert ``x``. ``W`` = last ``n`` tuples.
    - sliding trigger: insert ``x``; if ``n`` tuples arrived since the last trigger, trigger.
* :class:`Delta` ``delta(attribute, size)``
    - tumbling eviction: if ``W`` is not empty and ``a(x) - a(oldest) > size`` flush; insert ``x``.
    - sliding eviction: evict every ``w`` in ``W`` with ``a(x) - a(w) > size``; insert ``x``.
    - sliding trigger: if ``a(x) > a(ref) + size`` trigger ``W`` *before* ``x`` goes in and
      make ``x`` the new ``ref``; ``ref`` starts as the partition's first tuple.
* :class:`Time` ``time(period)``
    - tumbling eviction: at every clock instant ``k * period`` (``k >= 1``) flush each
      partition (an empty window: one empty partition ``None``); window ``k`` holds the
      tuples inserted in ``[(k-1) * period, k * period)``.
    - sliding eviction: a tuple inserted at ``s`` is evicted at ``s + period``.
    - sliding trigger: at every ``k * period`` (``k >= 1``) trigger each partition (an empty
      window: one empty partition ``None``); triggers at an instant come before the
      evictions due at that instant, so a trigger at ``t`` under ``time(p)`` eviction sees
      the tuples inserted in ``[t - p, t)``.
* :class:`Punct` ``punct()``: tumbling eviction only; a punctuation flushes every partition
  (or fires ``empty_punct`` when no partition holds a tuple).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TypeAlias

from trending.windows.spl.events import InputError, Record


@dataclass(frozen=True)
class Count:
    """``count(size)``: a window of ``size`` tuples, or a trigger every ``size`` tuples."""

    size: int

    def __post_init__(self) -> None:
        if not _is_int(self.size) or self.size < 1:
            raise ValueError(f"count size must be a positive integer, got {self.size!r}")

    def __str__(self) -> str:
        return f"count({self.size})"


@dataclass(frozen=True)
class Delta:
    """``delta(attribute, size)``: a window spanning ``size`` units of a numeric attribute."""

    attribute: str
    size: float

    def __post_init__(self) -> None:
        if not isinstance(self.attribute, str) or not self.attribute:
            raise ValueError(f"delta attribute must be a non-empty string, got {self.attribute!r}")
        if not _is_number(self.size) or self.size < 0:
            raise ValueError(f"delta size must be a number >= 0, got {self.size!r}")

    def __str__(self) -> str:
        return f"delta({self.attribute}, {self.size})"

    def value(self, record: Record) -> float:
        """The delta attribute of ``record``; :class:`InputError` if missing or not a number."""
        if self.attribute not in record:
            raise InputError(f"tuple has no attribute {self.attribute!r} needed by {self}")
        value = record[self.attribute]
        if not _is_number(value):
            raise InputError(f"attribute {self.attribute!r} must be a number for {self}")
        return float(value)


@dataclass(frozen=True)
class Time:
    """``time(period)``: a period of ``period_ms`` milliseconds on the window clock."""

    period_ms: int

    def __post_init__(self) -> None:
        if not _is_int(self.period_ms) or self.period_ms < 1:
            raise ValueError(
                f"time period must be a positive integer of ms, got {self.period_ms!r}"
            )

    def __str__(self) -> str:
        return f"time({self.period_ms}ms)"

    @classmethod
    def seconds(cls, seconds: float) -> Time:
        """``time(seconds)`` as SPL writes it; the period must be a whole number of ms."""
        return cls(seconds_to_ms(seconds))

    def next_boundary(self, now_ms: int) -> int:
        """The first period boundary strictly after ``now_ms``: ``(now // p + 1) * p``."""
        return (now_ms // self.period_ms + 1) * self.period_ms

    def is_boundary(self, time_ms: int) -> bool:
        """Whether ``time_ms`` is a period boundary ``k * p`` with ``k >= 1``."""
        return time_ms > 0 and time_ms % self.period_ms == 0


@dataclass(frozen=True)
class Punct:
    """``punct()``: a tumbling window that flushes when a punctuation arrives."""

    def __str__(self) -> str:
        return "punct()"


Policy: TypeAlias = Count | Delta | Time | Punct
"""Any eviction or trigger policy."""


def seconds_to_ms(seconds: float) -> int:
    """Convert seconds to integer milliseconds; :class:`ValueError` unless a whole ms."""
    if not _is_number(seconds):
        raise ValueError(f"not a number of seconds: {seconds!r}")
    millis = seconds * 1000
    rounded = round(millis)
    if abs(millis - rounded) > 1e-6 * max(1.0, abs(millis)):
        raise ValueError(f"{seconds!r} seconds is not a whole number of milliseconds")
    return int(rounded)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return math.isfinite(value)
