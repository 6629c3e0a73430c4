"""Window aggregates over clipped events.

Each aggregate sees the values of the events in a window, their lifetimes clipped to the window
(``min(e, window_end) - max(s, window_start)``) and the window's length. The time-weighted
average is StreamInsight's: ``sum(value * clipped_length) / window_length``, so time the window
holds no event counts as zero; over a snapshot window (where every event spans the whole
snapshot) it equals the sum.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from numbers import Real

from trending.windows.temporal.events import TemporalInputError, Value

NAMES = ("count", "sum", "min", "max", "average", "top_k", "time_weighted_average")
_NUMERIC = set(NAMES) - {"count"}


@dataclass(frozen=True)
class Aggregate:
    """One of :data:`NAMES`; ``top_k`` also needs ``k`` (its value: the k largest, descending)."""

    name: str
    k: int | None = None

    def __post_init__(self) -> None:
        if self.name not in NAMES:
            raise ValueError(f"unknown aggregate {self.name!r}; use one of {', '.join(NAMES)}")
        if (self.name == "top_k") != (self.k is not None):
            raise ValueError("top_k needs a k, and only top_k takes one")
        if self.k is not None and self.k <= 0:
            raise ValueError(f"top_k needs a positive k, got {self.k}")

    @property
    def time_sensitive(self) -> bool:
        """Depends on clipped lifetimes, not only on which events are in the window."""
        return self.name == "time_weighted_average"

    def check(self, value: Value) -> None:
        """:class:`TemporalInputError` unless this aggregate can take ``value``."""
        if self.name in _NUMERIC and (isinstance(value, bool) or not isinstance(value, Real)):
            raise TemporalInputError(f"{self.name} needs a numeric value, got {value!r}")

    def __call__(self, values: Sequence[Value], lengths: Sequence[int], span: int) -> Value:
        """The aggregate of a non-empty window of length ``span``."""
        if self.name == "count":
            return len(values)
        if self.name == "sum":
            return sum(values)
        if self.name == "min":
            return min(values)
        if self.name == "max":
            return max(values)
        if self.name == "average":
            return sum(values) / len(values)
        if self.name == "top_k":
            return sorted(values, reverse=True)[: self.k]
        return sum(v * length for v, length in zip(values, lengths, strict=True)) / span
