"""Property tests: the windows against brute-force models, and batching never matters."""

from __future__ import annotations

import itertools
import json
from collections import defaultdict
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from trending.windows.spl import (
    Advance,
    Count,
    Delta,
    EventKind,
    Input,
    Insert,
    PartitionAge,
    PartitionCount,
    PartitionEviction,
    Policy,
    Punct,
    Punctuation,
    SlidingWindow,
    Time,
    TumblingWindow,
    TupleCount,
    WindowEvent,
    summarizers,
)

from .helpers import vals

KEYS = st.sampled_from(["a", "b", "c", None])
PROPERTIES = settings(max_examples=150, deadline=None)


def kinds(events: list[WindowEvent], kind: EventKind) -> list[WindowEvent]:
    return [e for e in events if e.kind is kind]


# --- brute-force models ------------------------------------------------------------------


@PROPERTIES
@given(n=st.integers(1, 5), keys=st.lists(KEYS, max_size=40))
def test_count_sliding_window_is_always_the_last_n_tuples(n: int, keys: list[Any]) -> None:
    window = SlidingWindow(Count(n), Count(1)).build()
    seen: dict[Any, list[int]] = defaultdict(list)
    for v, key in enumerate(keys):
        (trigger,) = kinds(window.insert({"v": v}, key), EventKind.TRIGGER)
        seen[key].append(v)
        assert vals(trigger.tuples) == seen[key][-n:]
        assert vals(window.content(key)) == seen[key][-n:]


@PROPERTIES
@given(n=st.integers(1, 5), keys=st.lists(KEYS, max_size=40))
def test_count_tumbling_window_flushes_consecutive_chunks(n: int, keys: list[Any]) -> None:
    window = TumblingWindow(Count(n)).build()
    flushed: dict[Any, list[list[int]]] = defaultdict(list)
    seen: dict[Any, list[int]] = defaultdict(list)
    for v, key in enumerate(keys):
        seen[key].append(v)
        for event in kinds(window.insert({"v": v}, key), EventKind.BEFORE_FLUSH):
            flushed[event.partition].append(vals(event.tuples))
    for key, values in seen.items():
        full = len(values) - len(values) % n
        assert flushed[key] == [values[i : i + n] for i in range(0, full, n)]
        assert vals(window.content(key)) == values[full:]


@PROPERTIES
@given(size=st.integers(0, 4), ages=st.lists(st.integers(0, 12), max_size=30))
def test_delta_sliding_window_matches_the_brute_force(size: int, ages: list[int]) -> None:
    window = SlidingWindow(Delta("age", size), Count(1)).build()
    model: list[dict[str, int]] = []
    for v, age in enumerate(ages):
        events = window.insert({"v": v, "age": age})
        evicted = [w for w in model if age - w["age"] > size]
        model = [w for w in model if age - w["age"] <= size] + [{"v": v, "age": age}]
        assert vals(e.tuples[0] for e in kinds(events, EventKind.AFTER_EVICT)) == vals(evicted)
        assert list(window.content()) == model


@PROPERTIES
@given(size=st.integers(0, 3), ages=st.lists(st.integers(0, 12), max_size=30))
def test_delta_trigger_matches_the_brute_force(size: int, ages: list[int]) -> None:
    window = SlidingWindow(Count(3), Delta("age", size)).build()
    ref: int | None = None
    for v, age in enumerate(ages):
        before = vals(window.content())
        triggers = kinds(window.insert({"v": v, "age": age}), EventKind.TRIGGER)
        fires = ref is not None and age > ref + size
        ref = age if ref is None or fires else ref
        assert [vals(e.tuples) for e in triggers] == ([before] if fires else [])


# (time, partition) of each insertion; times only grow
INSERTS = st.lists(st.tuples(st.integers(0, 3_000), KEYS), max_size=30)


def at_times(window: Any, inserts: list[tuple[int, Any]]) -> tuple[list[WindowEvent], list[Any]]:
    events: list[WindowEvent] = []
    stamped, now = [], 0
    for v, (gap, key) in enumerate(inserts):
        now += gap
        events += window.advance_to(now)
        events += window.insert({"v": v}, key)
        stamped.append((now, key, v))
    events += window.advance_to(now + 100_000)
    return events, stamped


@PROPERTIES
@given(
    period=st.integers(1, 6).map(lambda s: s * 500),
    every=st.integers(1, 6).map(lambda s: s * 500),
    inserts=INSERTS,
)
def test_time_trigger_sees_the_last_period(period: int, every: int, inserts: Any) -> None:
    # a trigger at t (a multiple of `every`) holds the tuples inserted in [t - period, t)
    window = SlidingWindow(Time(period), Time(every)).build()
    events, stamped = at_times(window, inserts)
    for event in kinds(events, EventKind.TRIGGER):
        t = event.time_ms
        assert t % every == 0
        expected = [v for s, k, v in stamped if k == event.partition and t - period <= s < t]
        assert vals(event.tuples) == expected
    for event in kinds(events, EventKind.AFTER_EVICT):
        ((s, _, _),) = [x for x in stamped if x[2] == event.tuples[0]["v"]]
        assert event.time_ms == s + period


@PROPERTIES
@given(period=st.integers(1, 6).map(lambda s: s * 500), inserts=INSERTS)
def test_time_tumbling_windows_are_the_periods(period: int, inserts: Any) -> None:
    # window k holds the tuples inserted in [(k - 1) * period, k * period), flushed at k * period;
    # a period with no tuple at all flushes the made-up empty partition once
    window = TumblingWindow(Time(period)).build()
    events, stamped = at_times(window, inserts)
    groups: dict[tuple[Any, int], list[int]] = defaultdict(list)
    for s, key, v in stamped:
        groups[(key, (s // period + 1) * period)].append(v)
    end = window.now_ms
    busy = {boundary for _, boundary in groups}
    expected = sorted(repr(item) for item in groups.items())
    expected += [repr(((None, b), [])) for b in range(period, end + 1, period) if b not in busy]
    flushes = kinds(events, EventKind.BEFORE_FLUSH)
    assert all(not e.tuples for e in kinds(events, EventKind.AFTER_FLUSH))
    assert sorted(repr(((e.partition, e.time_ms), vals(e.tuples))) for e in flushes) == sorted(
        expected
    )


@PROPERTIES
@given(c=st.integers(1, 3), keys=st.lists(st.sampled_from("abcde"), max_size=40))
def test_partition_count_lru_keeps_the_most_recently_used(c: int, keys: list[str]) -> None:
    window = SlidingWindow(Count(2), Count(9), PartitionEviction(PartitionCount(c))).build()
    recency: list[str] = []
    for v, key in enumerate(keys):
        window.insert({"v": v}, key)
        recency = [k for k in recency if k != key] + [key]
        recency = recency[-c:]
        assert set(window.partitions()) == set(recency)


@PROPERTIES
@given(t=st.integers(1, 6), keys=st.lists(st.sampled_from("abcd"), max_size=40))
def test_tuple_count_lru_keeps_at_most_t_tuples(t: int, keys: list[str]) -> None:
    window = SlidingWindow(Count(3), Count(9), PartitionEviction(TupleCount(t))).build()
    sizes: dict[str, int] = {}
    for v, key in enumerate(keys):
        window.insert({"v": v}, key)
        sizes = {k: n for k, n in sizes.items() if k != key} | {key: min(3, sizes.get(key, 0) + 1)}
        while sum(sizes.values()) > t:
            sizes.pop(next(iter(sizes)))
        assert {k: len(window.content(k)) for k in window.partitions()} == sizes


# --- batching and restarts never change events ---------------------------------------------

COUNTS = st.integers(1, 4).map(Count)
DELTAS = st.integers(0, 3).map(lambda s: Delta("age", s))
TIMES = st.integers(1, 8).map(lambda s: Time(s * 500))
SLIDING_POLICIES = st.one_of(COUNTS, DELTAS, TIMES)
EVICTIONS = st.one_of(
    st.none(),
    st.integers(1, 3).map(lambda c: PartitionEviction(PartitionCount(c))),
    st.integers(1, 6).map(lambda t: PartitionEviction(TupleCount(t))),
    st.integers(1, 6).map(lambda s: PartitionEviction(PartitionAge(s * 500))),
)


@st.composite
def configs(draw: st.DrawFn) -> TumblingWindow | SlidingWindow:
    eviction = draw(EVICTIONS)
    if draw(st.booleans()):
        return SlidingWindow(draw(SLIDING_POLICIES), draw(SLIDING_POLICIES), eviction)
    evict: Policy = draw(st.one_of(SLIDING_POLICIES, st.just(Punct())))
    lean = draw(st.booleans())
    summaries = {"n": summarizers.Count(), "top": summarizers.TopK("age", 2)}
    return TumblingWindow(evict, eviction, summaries if lean else {}, keep_tuples=not lean)


@st.composite
def scripts(draw: st.DrawFn) -> list[Input]:
    items: list[Input] = []
    now = 0
    for v in range(draw(st.integers(0, 30))):
        choice = draw(st.integers(0, 5))
        if choice == 0:
            now += draw(st.integers(0, 4_000))
            items.append(Advance(now))
        elif choice == 1:
            items.append(Punctuation())
        else:
            key = draw(KEYS)
            items.append(Insert({"v": v, "age": draw(st.integers(0, 10)), "p": key}, key))
    items.append(Advance(now + 20_000))
    return items


def split_advances(items: list[Input], cuts: list[int]) -> list[Input]:
    """Replace each clock advance by a walk through intermediate instants."""
    out: list[Input] = []
    now = 0
    for item in items:
        if isinstance(item, Advance):
            steps = sorted({now + c % (item.time_ms - now + 1) for c in cuts})
            out += [Advance(t) for t in steps if t <= item.time_ms]
            now = item.time_ms
        out.append(item)
    return out


def run_in_batches(config: Any, items: list[Input], cuts: list[int]) -> list[Any]:
    """Run with a snapshot -> JSON -> restore between batches, as an engine would."""
    events: list[Any] = []
    snapshot = None
    bounds = sorted({0, len(items), *(c % (len(items) + 1) for c in cuts)})
    for start, end in itertools.pairwise(bounds):
        window = config.build(snapshot)
        events += [(e.to_json(), e.time_ms) for e in window.run(items[start:end])]
        snapshot = json.loads(json.dumps(window.snapshot()))
    return events


@PROPERTIES
@given(config=configs(), items=scripts(), cuts=st.lists(st.integers(0, 10_000), max_size=6))
def test_batching_and_restarts_never_change_events(config: Any, items: Any, cuts: Any) -> None:
    straight = [(e.to_json(), e.time_ms) for e in config.build().run(items)]
    assert run_in_batches(config, items, cuts) == straight
    assert run_in_batches(config, split_advances(items, cuts), cuts[::-1]) == straight


@PROPERTIES
@given(config=configs(), items=scripts())
def test_every_insertion_is_bracketed_and_windows_hold_what_events_say(
    config: Any, items: Any
) -> None:
    # Rebuild every partition's content from the events alone; it must match the window.
    window = config.build()
    content: dict[Any, list[int]] = defaultdict(list)
    for item in items:
        events = window.apply(item)
        for event in events:
            values = vals(event.tuples)
            if event.kind is EventKind.AFTER_INSERT:
                content[event.partition] += values
            elif event.kind is EventKind.AFTER_EVICT:
                content[event.partition].remove(values[0])
            elif event.kind in (EventKind.AFTER_FLUSH, EventKind.PARTITION_EVICT):
                content.pop(event.partition, None)
        if getattr(config, "keep_tuples", True):
            for key in window.partitions():
                assert vals(window.content(key)) == content[key]
        insert_kinds = [e.kind for e in events if "insert" in e.kind.value]
        assert insert_kinds == (
            [EventKind.BEFORE_INSERT, EventKind.AFTER_INSERT] if isinstance(item, Insert) else []
        )
