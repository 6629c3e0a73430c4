"""Top-k by count, with a total order: count descending, then key ascending."""

from __future__ import annotations

import heapq
from collections.abc import Mapping

TopK = tuple[tuple[str, int], ...]


def _rank(item: tuple[str, int]) -> tuple[int, str]:
    return (-item[1], item[0])


def top_k(counts: Mapping[str, int], k: int) -> TopK:
    """The ``k`` largest ``(key, count)`` pairs of ``counts`` (count desc, then key asc)."""
    return tuple(heapq.nsmallest(k, counts.items(), key=_rank))
