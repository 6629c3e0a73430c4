"""The driver's top-k merge against a brute-force model of the published records.

The oracle (:class:`tests.support.oracles.HashtagOutput`) is written from the rules,
independently of the code under test: windows ``[a + n*hop, a + n*hop + size)`` enumerated by
brute force, counts recounted from every event read so far, the top-k sorted by (count desc, tag
asc), and per batch: a revision for each window whose exact top-k differs from the last one
published (unless the batch closes it), then a final for each window the new watermark reaches.
Candidates are what the executors send: the current counts of changed keys in windows open at
the batch start, cut to those at or above the window's threshold and then to the k best per
window.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.oracles import (
    Event,
    HashtagOutput,
    Record,
    top_k,
    window_counts,
    window_starts,
)
from trending.windows.sliding import SlidingWindows
from trending.windows.topk_merge import MergeState, TopKMerger

Candidate = tuple[int, str, int]  # window start, tag, its current count there


def thresholds(oracle: HashtagOutput) -> dict[int, int]:
    """Per open window whose last published top-k is full: its k-th count."""
    return {
        s: r.top[-1][1] for s, r in oracle.last.items() if not r.final and len(r.top) == oracle.k
    }


def candidates(oracle: HashtagOutput, batch: list[Event]) -> list[Candidate]:
    """What the executors send for ``batch``, before the oracle reads it: per window open at
    the batch start, the tags the batch's on-time events add there, with their counts over
    everything read including the batch, at or above the threshold, the k best of them."""
    size, hop, align = oracle.size, oracle.hop, oracle.align
    changed: dict[int, set[str]] = {}
    for t, tags in batch:
        if oracle.is_late(t):
            continue
        for s in window_starts(t, size, hop, align):
            if oracle.is_open(s, oracle.watermark):
                changed.setdefault(s, set()).update(tags)
    limits = thresholds(oracle)
    everything = oracle.read + batch
    out: list[Candidate] = []
    for s, added in changed.items():
        counts = window_counts(everything, s, size, hop, align)
        above = {tag: counts[tag] for tag in added if counts[tag] >= limits.get(s, 0)}
        out += [(s, tag, count) for tag, count in top_k(above, oracle.k)]
    return out


def newest_on_time(oracle: HashtagOutput, batch: list[Event]) -> int | None:
    return max((t for t, _ in batch if not oracle.is_late(t)), default=None)


def as_records(merger: TopKMerger, rows: list[Candidate], newest: int | None) -> list[Record]:
    return [
        Record(u.window.start, u.window.end, u.top, u.revision, u.is_final)
        for u in merger.apply_batch(rows, newest)
    ]


@settings(max_examples=150, deadline=None)
@given(
    size_hop=st.sampled_from([(10, 5), (10, 3), (6, 6), (7, 2), (12, 8)]),
    align=st.integers(-7, 7),
    k=st.integers(1, 4),
    lateness=st.integers(0, 12),
    seed=st.integers(0, 10**6),
)
def test_merge_equals_brute_force(
    size_hop: tuple[int, int], align: int, k: int, lateness: int, seed: int
) -> None:
    # time 0 .. 80, tags a..f, events out of order by up to 15: some late, some partly late,
    # some on window boundaries (every integer time is a boundary of some window here)
    size, hop = size_hop
    rng = random.Random(seed)
    events = [
        (max(0, i - rng.randint(0, 15)), tuple(rng.sample("abcdef", rng.randint(0, 3))))
        for i in range(80)
    ]
    oracle = HashtagOutput(size, hop, align, k, lateness)
    merger = TopKMerger(SlidingWindows(size, hop, align), k, lateness)
    position = 0
    while position < len(events):
        step = rng.randint(1, 9)
        batch = events[position : position + step]
        position += step
        rows, newest = candidates(oracle, batch), newest_on_time(oracle, batch)
        rng.shuffle(rows)
        assert as_records(merger, rows, newest) == oracle.batch(batch)
        assert merger.thresholds() == thresholds(oracle)
        # the state survives a JSON round trip at every batch boundary
        merger = TopKMerger(merger.spec, k, lateness, MergeState.from_json(merger.state.to_json()))


def test_window_closing_in_the_batch_it_changed_gets_only_its_final() -> None:
    # windows [0,10) [5,15) ...; lateness 0
    #   batch 1: t=3 #a          -> revision 1 of [0,10) and [-5,5)
    #   batch 2: t=4 #b, t=12 #c -> W = 12 closes [0,10) (changed: +b) and [-5,5): finals only
    merger = TopKMerger(SlidingWindows(10, 5), 2, 0)
    first = merger.apply_batch([(-5, "a", 1), (0, "a", 1)], 3)
    assert [(u.window.start, u.revision, u.is_final) for u in first] == [
        (-5, 1, False),
        (0, 1, False),
    ]
    second = merger.apply_batch([(0, "b", 1), (5, "c", 1), (10, "c", 1)], 12)
    assert [(u.window.start, u.top, u.revision, u.is_final) for u in second] == [
        (5, (("c", 1),), 1, False),
        (10, (("c", 1),), 1, False),
        (-5, (("a", 1),), 2, True),
        (0, (("a", 1), ("b", 1)), 2, True),
    ]


def test_state_rejects_another_version() -> None:
    with pytest.raises(ValueError, match="version 1"):
        MergeState.from_json({"version": 2, "windows": [], "max_event_ms": None})
