"""The driver's top-k merge against a brute-force model of the published records.

The oracle is written from the rules, independently of the code under test: windows
``[a + n*hop, a + n*hop + size)`` enumerated by brute force, counts recounted from every on-time
event seen so far, the top-k sorted by (count desc, tag asc), and per batch: a revision for each
window whose exact top-k differs from the last one published (unless the batch closes it), then
a final for each window the new watermark reaches. Candidates are what the executors send: the
current counts of changed keys in windows open at the batch start, cut to those at or above the
window's threshold and then to the k best per window.
"""

from __future__ import annotations

import random
from collections import Counter, defaultdict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trending.windows.sliding import SlidingWindows
from trending.windows.topk_merge import MergeState, TopKMerger

Event = tuple[int, tuple[str, ...]]  # event time, distinct tags
Record = tuple[int, tuple[tuple[str, int], ...], int, bool]  # start, top, revision, final


def _windows_holding(t: int, size: int, hop: int, align: int) -> list[int]:
    return [
        align + n * hop
        for n in range((t - align - size) // hop - 1, (t - align) // hop + 2)
        if align + n * hop <= t < align + n * hop + size
    ]


def _exact_top(counts: Counter[str], k: int) -> tuple[tuple[str, int], ...]:
    return tuple(sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:k])


class Oracle:
    """Brute-force model: counts per window, what was published, the watermark."""

    def __init__(self, size: int, hop: int, align: int, k: int, lateness: int) -> None:
        self.size, self.hop, self.align, self.k, self.lateness = size, hop, align, k, lateness
        self.counts: dict[int, Counter[str]] = defaultdict(Counter)
        self.published: dict[int, tuple[tuple[tuple[str, int], ...], int]] = {}
        self.closed: set[int] = set()
        self.newest: int | None = None

    def watermark(self) -> int | None:
        return None if self.newest is None else self.newest - self.lateness

    def is_open(self, start: int, watermark: int | None) -> bool:
        return watermark is None or start + self.size > watermark

    def batch(
        self, events: list[Event]
    ) -> tuple[list[tuple[int, str, int]], int | None, list[Record]]:
        """Candidates an executor would send, the batch's newest on-time time, and records."""
        watermark = self.watermark()
        changed: dict[int, set[str]] = defaultdict(set)
        newest = None
        for t, tags in events:
            starts = _windows_holding(t, self.size, self.hop, self.align)
            if not any(self.is_open(s, watermark) for s in starts):
                continue  # late
            newest = t if newest is None else max(newest, t)
            for s in starts:
                if tags and self.is_open(s, watermark):  # a window without hashtags: no record
                    self.counts[s].update(tags)
                    changed[s].update(tags)
        candidates = []
        for s, tags in changed.items():
            top, _ = self.published.get(s, ((), 0))
            threshold = top[-1][1] if len(top) == self.k else 0
            rows = sorted(
                ((self.counts[s][tag], tag) for tag in tags if self.counts[s][tag] >= threshold),
                key=lambda row: (-row[0], row[1]),
            )[: self.k]
            candidates += [(s, tag, count) for count, tag in rows]
        if newest is not None and (self.newest is None or newest > self.newest):
            self.newest = newest
        return candidates, newest, self._records(changed)

    def _records(self, changed: dict[int, set[str]]) -> list[Record]:
        watermark = self.watermark()
        records: list[Record] = []
        for s in sorted(changed):
            top = _exact_top(self.counts[s], self.k)
            old, revision = self.published.get(s, ((), 0))
            if top != old and self.is_open(s, watermark):
                self.published[s] = (top, revision + 1)
                records.append((s, top, revision + 1, False))
        for s in sorted(self.counts):
            if s not in self.closed and not self.is_open(s, watermark):
                self.closed.add(s)
                _, revision = self.published.get(s, ((), 0))
                records.append((s, _exact_top(self.counts[s], self.k), revision + 1, True))
        return records


def _records(
    merger: TopKMerger, candidates: list[tuple[int, str, int]], newest: int | None
) -> list[Record]:
    return [
        (u.window.start, u.top, u.revision, u.is_final)
        for u in merger.apply_batch(candidates, newest)
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
    oracle = Oracle(size, hop, align, k, lateness)
    merger = TopKMerger(SlidingWindows(size, hop, align), k, lateness)
    position = 0
    while position < len(events):
        step = rng.randint(1, 9)
        batch = events[position : position + step]
        position += step
        candidates, newest, expected = oracle.batch(batch)
        rng.shuffle(candidates)
        assert _records(merger, candidates, newest) == expected
        assert merger.thresholds() == {
            s: top[-1][1]
            for s, (top, _) in oracle.published.items()
            if s not in oracle.closed and len(top) == k
        }
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
