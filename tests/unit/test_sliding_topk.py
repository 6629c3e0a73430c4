"""Event-time sliding windows, top-k, revisions and finals against brute force from the rules.

The oracles (:mod:`tests.support.oracles`) never call the code under test: windows
``[a + n*hop, a + n*hop + size)`` are enumerated over ``n``, the top-k is a full sort by
(count desc, tag asc), and every published record is recomputed from the events read so far.
"""

from __future__ import annotations

import itertools
import math
import random
from collections import Counter
from typing import NamedTuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.oracles import Event, HashtagOutput, Record, top_k, window_counts, window_starts
from trending.windows import topk
from trending.windows.sliding import SlidingWindows, Window
from trending.windows.sliding_topk import SlidingTopK, TopKUpdate

MIN = 60_000

# ---- window formulas ---------------------------------------------------------------------------


def test_window_formula_with_alignment_and_a_hop_that_does_not_divide_the_size() -> None:
    # size 5, hop 2, align 1:  windows [1+2n, 6+2n)
    #   t=6 is in [3,8) [5,10): at the start of [5,10), at the end of [1,6) (half-open)
    spec = SlidingWindows(5, 2, 1)
    assert spec.windows_of(6) == [Window(3, 8), Window(5, 10)]
    assert spec.windows_of(5) == [Window(1, 6), Window(3, 8), Window(5, 10)]
    assert spec.last_end(6) == 10
    assert spec.pane_ms == 1


def test_every_time_in_exactly_size_over_hop_windows_when_hop_divides() -> None:
    spec = SlidingWindows(5 * MIN, MIN)
    for t in (0, 1, MIN - 1, MIN, 7 * MIN + 13, -1, -MIN - 5):
        windows = spec.windows_of(t)
        assert len(windows) == 5
        assert all(w.start <= t < w.end for w in windows)


def brute_windows(t: int, size: int, hop: int, align: int) -> list[Window]:
    """Every window ``[align + n*hop, +size)`` for n in a range far wider than needed."""
    starts = (align + n * hop for n in range(-1200, 1200))
    return [Window(s, s + size) for s in starts if s <= t < s + size]


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
    brute = brute_windows(t, size, hop, align)
    assert [Window(s, s + size) for s in window_starts(t, size, hop, align)] == brute
    assert spec.windows_of(t) == brute
    assert spec.last_end(t) == brute[-1].end
    # a pane of width gcd(size, hop) lies wholly inside the windows holding it
    assert spec.pane_ms == math.gcd(size, hop)
    pane = spec.pane_start(t)
    assert pane <= t < pane + spec.pane_ms
    assert (pane - align) % spec.pane_ms == 0
    assert brute_windows(pane, size, hop, align) == brute
    assert brute_windows(pane + spec.pane_ms - 1, size, hop, align) == brute


# ---- top-k -------------------------------------------------------------------------------------


def test_top_k_order_is_count_desc_then_key_asc() -> None:
    counts = {"b": 3, "a": 3, "c": 5, "d": 1}
    assert topk.top_k(counts, 3) == (("c", 5), ("a", 3), ("b", 3))
    assert topk.top_k(counts, 9) == (("c", 5), ("a", 3), ("b", 3), ("d", 1))


@given(
    counts=st.dictionaries(st.text("abcé#", min_size=1, max_size=3), st.integers(1, 4)),
    k=st.integers(1, 6),
)
def test_top_k_equals_a_full_sort(counts: dict[str, int], k: int) -> None:
    assert topk.top_k(counts, k) == top_k(counts, k)


# ---- the engine against the published-records oracle -------------------------------------------

Batches = list[list[Event]]


def as_record(update: TopKUpdate) -> Record:
    w = update.window
    return Record(w.start, w.end, update.top, update.revision, update.is_final)


def pane_counts(spec: SlidingWindows, events: list[Event]) -> list[tuple[int, str, int]]:
    """What a batch hands the engine: per pane ``[a + p*g, a + (p+1)*g)``, g = gcd(size, hop),
    the number of tweets holding each key (once per tweet)."""
    g = math.gcd(spec.size_ms, spec.hop_ms)
    panes = Counter((t - (t - spec.align_ms) % g, key) for t, keys in events for key in set(keys))
    return [(pane, key, count) for (pane, key), count in panes.items()]


class Step(NamedTuple):
    """One batch as the engine handled it: the events routed as late, the records published."""

    late: list[Event]
    records: list[Record]


def feed(engine: SlidingTopK, oracle: HashtagOutput, batch: list[Event]) -> Step:
    """One micro-batch as the job runs it: late events (by the oracle's rule, which the engine
    must share) are routed away, the rest counted per pane."""
    late = [oracle.is_late(t) for t, _ in batch]
    assert [engine.is_late(t) for t, _ in batch] == late
    on_time = [event for event, is_late in zip(batch, late, strict=True) if not is_late]
    newest = max((t for t, _ in batch), default=None)
    updates = engine.apply_batch(pane_counts(engine.spec, on_time), newest)
    routed = [event for event, is_late in zip(batch, late, strict=True) if is_late]
    return Step(routed, [as_record(u) for u in updates])


def check_batch_rules(records: list[Record], read: list[Event], oracle: HashtagOutput) -> None:
    """The per-batch promises of docs/jobs/hashtags.md, each asserted on its own.

    * every record (revision or final) carries the exact top-k of its window over the input
      read so far, through the end of this batch;
    * at most one record per window per batch, so a window that closes in the batch where it
      changed gets only its final record;
    * revisions come first, then finals, each by window start.
    """
    size, hop, align, k = oracle.size, oracle.hop, oracle.align, oracle.k
    for r in records:
        assert r.end == r.start + size
        assert r.top == top_k(window_counts(read, r.start, size, hop, align), k), r
    starts = [r.start for r in records]
    assert len(starts) == len(set(starts)), "more than one record of a window in one batch"
    revised = {r.start for r in records if not r.final}
    closed = {r.start for r in records if r.final}
    assert not revised & closed, "a window closing in this batch also got a revision"
    finals_first = [r.final for r in records]
    assert finals_first == sorted(finals_first), "a final before a revision"
    assert [r.start for r in records if not r.final] == sorted(revised)
    assert [r.start for r in records if r.final] == sorted(closed)


def check_history(records: list[Record]) -> None:
    """Per window: revisions 1, 2, ... each differing from the one before, the final last."""
    by_window: dict[int, list[Record]] = {}
    for r in records:
        by_window.setdefault(r.start, []).append(r)
    for history in by_window.values():
        assert [r.revision for r in history] == list(range(1, len(history) + 1))
        assert [r.final for r in history[:-1]] == [False] * (len(history) - 1)
        tops = [r.top for r in history if not r.final]
        assert all(a != b for a, b in itertools.pairwise(tops)), "a revision without a change"


def run_both(
    spec: SlidingWindows, k: int, lateness: int, batches: Batches, close: bool = False
) -> list[Step]:
    """Feed the engine and the oracle the same batches; assert every rule per batch; return
    the engine's steps (and ``close_all``'s records as one more step when ``close``)."""
    engine = SlidingTopK(spec, k, lateness)
    oracle = HashtagOutput(spec.size_ms, spec.hop_ms, spec.align_ms, k, lateness)
    read: list[Event] = []
    steps: list[Step] = []
    for batch in batches:
        step = feed(engine, oracle, batch)
        read += batch
        check_batch_rules(step.records, read, oracle)
        assert step.records == oracle.batch(batch)
        steps.append(step)
    if close:
        records = [as_record(u) for u in engine.close_all()]
        assert records == oracle.close_all()
        assert all(r.final for r in records)
        steps.append(Step([], records))
    check_history([r for step in steps for r in step.records])
    return steps


def split(events: list[Event], cuts: list[int]) -> Batches:
    bounds = sorted({0, len(events), *(c % (len(events) + 1) for c in cuts)})
    return [events[a:b] for a, b in itertools.pairwise(bounds)]


@st.composite
def geometries(draw: st.DrawFn) -> SlidingWindows:
    """Small windows: any size, any hop up to it (dividing it or not), any alignment."""
    size = draw(st.integers(1, 12))
    hop = draw(st.integers(1, size))
    return SlidingWindows(size, hop, draw(st.integers(-12, 12)))


# integer times on a small range: many events exactly at a window's start or end
EVENTS = st.lists(
    st.tuples(st.integers(0, 40), st.lists(st.sampled_from("abcd"), max_size=3).map(tuple)),
    max_size=40,
)


@settings(max_examples=150, deadline=None)
@given(
    spec=geometries(),
    k=st.integers(1, 3),
    lateness=st.integers(0, 8),
    events=EVENTS,
    cuts=st.lists(st.integers(0, 40), max_size=8),
)
def test_every_record_equals_the_brute_force_of_the_input_read_so_far(
    spec: SlidingWindows, k: int, lateness: int, events: list[Event], cuts: list[int]
) -> None:
    # out-of-order times, batches cut anywhere: late events, partly late events, windows
    # closing in the batch where they changed, all happen
    run_both(spec, k, lateness, split(events, cuts), close=True)


@pytest.mark.parametrize(
    ("size", "hop", "align"),
    [(10_000, 4_000, 1_000), (10_000, 2_000, 1_000), (12_000, 8_000, -3_000)],
)
@pytest.mark.parametrize("seed", range(4))
def test_a_long_stream_without_late_events_any_batching(
    size: int, hop: int, align: int, seed: int
) -> None:
    # t_i = 137 i - jitter_i, jitter_i in [0, 4s), lateness 5s: the watermark stays behind every
    # later tweet, so none is late and the finals are the brute force over all tweets
    rng = random.Random(seed)
    events = [(i * 137 - rng.randrange(4_000), tuple(rng.sample("abcdefg", rng.randint(0, 3))))
              for i in range(300)]  # fmt: skip
    cuts = [rng.randrange(301) for _ in range(rng.randrange(12))]
    spec = SlidingWindows(size, hop, align)
    steps = run_both(spec, 3, 5_000, split(events, cuts), close=True)
    assert [e for step in steps for e in step.late] == []
    finals = {r.start: r.top for step in steps for r in step.records if r.final}
    starts = {s for t, keys in events if keys for s in window_starts(t, size, hop, align)}
    assert finals == {s: top_k(window_counts(events, s, size, hop, align), 3) for s in starts}


# ---- worked examples -----------------------------------------------------------------------------


def test_events_on_window_boundaries() -> None:
    # size 5, hop 2, align 1: windows [1+2n, 6+2n); k 2, lateness 0
    #   batch 1: #a@3  the start of [3,8), also in [-1,4) [1,6)
    #            #b@8  the end of [3,8): only in [5,10) [7,12)
    #            -> watermark 8 closes [-1,4) [1,6) [3,8), without b
    #   batch 2: #d@4  in [1,6) [3,8): late, its newest window ends exactly at the watermark
    #            #e@5  in [1,6) [3,8) (final) and [5,10): counted in [5,10) alone
    #            #c@10 the end of [5,10): in [7,12) [9,14)
    #            -> watermark 10 closes [5,10), which changed (+e): its final only
    spec = SlidingWindows(5, 2, 1)
    batches: Batches = [[(3, ("a",)), (8, ("b",))], [(4, ("d",)), (5, ("e",)), (10, ("c",))]]
    first, second = run_both(spec, 2, 0, batches)
    assert first == Step([], [
        Record(5, 10, (("b", 1),), 1, False),
        Record(7, 12, (("b", 1),), 1, False),
        Record(-1, 4, (("a", 1),), 1, True),
        Record(1, 6, (("a", 1),), 1, True),
        Record(3, 8, (("a", 1),), 1, True),
    ])  # fmt: skip
    assert second == Step([(4, ("d",))], [
        Record(7, 12, (("b", 1), ("c", 1)), 2, False),
        Record(9, 14, (("c", 1),), 1, False),
        Record(5, 10, (("b", 1), ("e", 1)), 2, True),
    ])  # fmt: skip


def test_late_event_is_routed_and_final_is_never_revised() -> None:
    # size 2m, hop 1m, lateness 0:
    #   batch 1: #a@0:30  #a@2:10   -> watermark 2:10 closes [-1m,1m) and [0,2m)
    #   batch 2: #b@0:40            -> late: newest window [0,2m) is final
    #            #c@1:30            -> only [1m,3m) is still open: counted there alone
    spec = SlidingWindows(2 * MIN, MIN)
    first, second = run_both(spec, 3, 0, [[(30_000, ("a",)), (130_000, ("a",))],
                                          [(40_000, ("b",)), (90_000, ("c",))]])  # fmt: skip
    assert [(r.start, r.final) for r in first.records if r.final] == [(-MIN, True), (0, True)]
    assert second == Step(
        [(40_000, ("b",))], [Record(MIN, 3 * MIN, (("a", 1), ("c", 1)), 2, False)]
    )


def test_revision_only_when_top_changes_and_at_most_once_per_batch() -> None:
    spec = SlidingWindows(MIN, MIN)
    batches: Batches = [[(1, ("a",)), (2, ("a",)), (3, ("b",))], [(4, ("b",))], [(5, ("b",))],
                        [(MIN, ())]]  # fmt: skip
    out = [step.records for step in run_both(spec, 1, 0, batches)]
    assert out[0] == [Record(0, MIN, (("a", 2),), 1, False)]  # a then b: one revision
    assert out[1] == []  # b ties a at 2: 'a' still ranks first, nothing to publish
    assert out[2] == [Record(0, MIN, (("b", 3),), 2, False)]
    assert out[3] == [Record(0, MIN, (("b", 3),), 3, True)]  # a keyless event moves the watermark


def test_a_window_that_closes_in_the_batch_where_it_changed_gets_only_its_final() -> None:
    # size 10, hop 5, lateness 0; windows [5n, 5n+10)
    #   batch 1: #a@3           -> revisions of [-5,5) and [0,10)
    #   batch 2: #b@4 #c@12     -> b changes [-5,5) and [0,10); watermark 12 closes both:
    #                              each gets one record, its final, which carries b
    spec = SlidingWindows(10, 5)
    first, second = run_both(spec, 2, 0, [[(3, ("a",))], [(4, ("b",)), (12, ("c",))]])
    assert first.records == [
        Record(-5, 5, (("a", 1),), 1, False),
        Record(0, 10, (("a", 1),), 1, False),
    ]
    assert [r for r in second.records if r.start in (-5, 0)] == [
        Record(-5, 5, (("a", 1), ("b", 1)), 2, True),
        Record(0, 10, (("a", 1), ("b", 1)), 2, True),
    ]
