"""Event-time sliding windows, top-k change detection and finals, against a brute-force model."""

from __future__ import annotations

import itertools
import random
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trending.windows.sliding import SlidingWindows, Window
from trending.windows.sliding_topk import SlidingTopK, TopKUpdate
from trending.windows.topk import top_k

MIN = 60_000


def test_window_formula_with_alignment() -> None:
    # size 5, hop 2, align 1:  windows [1+2n, 6+2n)
    #   t=6 is in [3,8) [5,10)   (not [1,6): half-open)
    spec = SlidingWindows(5, 2, 1)
    assert spec.windows_of(6) == [Window(3, 8), Window(5, 10)]
    assert spec.last_end(6) == 10
    assert spec.pane_ms == 1


def test_every_time_in_exactly_size_over_hop_windows_when_hop_divides() -> None:
    spec = SlidingWindows(5 * MIN, MIN)
    for t in (0, 1, MIN - 1, MIN, 7 * MIN + 13, -1, -MIN - 5):
        windows = spec.windows_of(t)
        assert len(windows) == 5
        assert all(w.start <= t < w.end for w in windows)


@given(
    size=st.integers(1, 50),
    hop=st.integers(1, 50),
    align=st.integers(-100, 100),
    t=st.integers(-1000, 1000),
)
def test_windows_of_matches_brute_force(size: int, hop: int, align: int, t: int) -> None:
    if hop > size:
        with pytest.raises(ValueError, match="hop"):
            SlidingWindows(size, hop, align)
        return
    spec = SlidingWindows(size, hop, align)
    brute = [
        Window(align + n * hop, align + n * hop + size)
        for n in range(-1200, 1200)
        if align + n * hop <= t < align + n * hop + size
    ]
    assert spec.windows_of(t) == brute
    assert spec.last_end(t) == brute[-1].end
    pane = spec.pane_start(t)
    assert pane <= t < pane + spec.pane_ms
    assert spec.windows_of(pane) == brute  # a pane lies wholly inside the windows holding it


def test_top_k_order_is_count_desc_then_key_asc() -> None:
    counts = {"b": 3, "a": 3, "c": 5, "d": 1}
    assert top_k(counts, 3) == (("c", 5), ("a", 3), ("b", 3))


def _run(engine: SlidingTopK, batches: list[list[tuple[int, list[str]]]]) -> list[TopKUpdate]:
    """Feed batches of (event time, keys) the way the job does: late events are filtered out."""
    out: list[TopKUpdate] = []
    for batch in batches:
        on_time = [(t, keys) for t, keys in batch if not engine.is_late(t)]
        panes = Counter(
            (engine.spec.pane_start(t), key) for t, keys in on_time for key in set(keys)
        )
        max_t = max((t for t, _ in batch), default=None)
        out += engine.apply_batch(((p, k, c) for (p, k), c in panes.items()), max_t)
    return out


def _brute_finals(
    spec: SlidingWindows, events: list[tuple[int, list[str]]], k: int
) -> dict[Window, tuple[tuple[str, int], ...]]:
    per_window: dict[Window, Counter[str]] = {}
    for t, keys in events:
        for window in spec.windows_of(t):
            per_window.setdefault(window, Counter()).update(set(keys))
    return {w: top_k(c, k) for w, c in per_window.items() if c}


def _split(
    events: list[tuple[int, list[str]]], cuts: list[int]
) -> list[list[tuple[int, list[str]]]]:
    bounds = sorted({0, len(events), *(c % (len(events) + 1) for c in cuts)})
    return [events[a:b] for a, b in itertools.pairwise(bounds)]


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    cuts=st.lists(st.integers(0, 400), max_size=12),
    k=st.integers(1, 4),
)
def test_finals_equal_brute_force_for_any_batching(seed: int, cuts: list[int], k: int) -> None:
    # Events drift forward with jitter < lateness, so none is late under any batching:
    #   t_i = base_i - jitter_i,  jitter_i in [0, 4s),  lateness 5s
    rng = random.Random(seed)
    spec = SlidingWindows(size_ms=10_000, hop_ms=4_000 if seed % 2 else 2_000, align_ms=1_000)
    events = []
    for i in range(300):
        keys = rng.sample("abcdefg", rng.randint(0, 3))
        events.append((i * 137 - rng.randrange(4_000), keys))
    engine = SlidingTopK(spec, k, lateness_ms=5_000)
    out = _run(engine, _split(events, cuts))
    out += engine.close_all()
    finals = {u.window: u.top for u in out if u.is_final}
    assert finals == _brute_finals(spec, events, k)
    # revisions per window are 1, 2, ... and the final is the last one
    by_window: dict[Window, list[TopKUpdate]] = {}
    for update in out:
        by_window.setdefault(update.window, []).append(update)
    for updates in by_window.values():
        assert [u.revision for u in updates] == list(range(1, len(updates) + 1))
        assert [u.is_final for u in updates] == [False] * (len(updates) - 1) + [True]
        revisions = [u.top for u in updates if not u.is_final]
        assert all(a != b for a, b in itertools.pairwise(revisions))  # only on change


def test_late_event_is_routed_and_final_is_never_revised() -> None:
    # size 2m, hop 1m, lateness 0:
    #   batch 1: #a@0:30  #a@2:10   -> watermark 2:10 closes [-1m,1m) and [0,2m)
    #   batch 2: #b@0:40            -> late: newest window [0,2m) is final
    #            #c@1:30            -> only [1m,3m) is still open
    spec = SlidingWindows(2 * MIN, MIN)
    engine = SlidingTopK(spec, 3, lateness_ms=0)
    first = _run(engine, [[(30_000, ["a"]), (130_000, ["a"])]])
    assert [(u.window.start, u.is_final) for u in first if u.is_final] == [(-MIN, True), (0, True)]
    assert engine.is_late(40_000)
    assert not engine.is_late(90_000)
    second = _run(engine, [[(40_000, ["b"]), (90_000, ["c"])]])
    assert all(not u.is_final and u.window.start == MIN for u in second)
    assert second[0].top == (("a", 1), ("c", 1))


def test_revision_only_when_top_changes_and_at_most_once_per_batch() -> None:
    spec = SlidingWindows(MIN, MIN)
    engine = SlidingTopK(spec, 1, lateness_ms=0)
    out = _run(engine, [[(1, ["a"]), (2, ["a"]), (3, ["b"])]])
    assert [(u.top, u.revision) for u in out] == [((("a", 2),), 1)]
    assert _run(engine, [[(4, ["b"])]]) == []  # b ties a at 2: 'a' still ranks first
    out = _run(engine, [[(5, ["b"])]])
    assert [(u.top, u.revision) for u in out] == [((("b", 3),), 2)]
    out = _run(engine, [[(MIN, [])]])  # a keyless event still advances the watermark
    assert [(u.top, u.revision, u.is_final) for u in out] == [((("b", 3),), 3, True)]
