"""Top-k by count, with a total order: count descending, then key ascending."""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping

TopK = tuple[tuple[str, int], ...]


def _rank(item: tuple[str, int]) -> tuple[int, str]:
    return (-item[1], item[0])


def top_k(counts: Mapping[str, int], k: int) -> TopK:
    """The ``k`` largest ``(key, count)`` pairs of ``counts`` (count desc, then key asc)."""
    return tuple(heapq.nsmallest(k, counts.items(), key=_rank))


def top_k_after_increase(
    counts: Mapping[str, int], previous: TopK, increased: Iterable[str], k: int
) -> TopK:
    """Top-k of ``counts`` when only the keys in ``increased`` grew since ``previous`` was exact.

    Counts never decrease, so a key outside ``previous`` that did not grow still ranks below
    every member of ``previous``: the new top-k lies within ``previous ∪ increased``.
    """
    candidates = {key for key, _ in previous}
    candidates.update(increased)
    return tuple(heapq.nsmallest(k, ((key, counts[key]) for key in candidates), key=_rank))
