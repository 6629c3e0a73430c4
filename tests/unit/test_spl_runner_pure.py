"""The pure half of the Spark SPL runner (:mod:`trending.windows.spl.keyed`), without Spark.

An in-memory "engine" below plays Spark's part: one saved state and one timer per key, rows
in micro-batches, a timer fired once the watermark reaches it. Whatever the batching, the
triggers and flushes must be what the SPL rules say (a brute force written from them), and the
events must equal those of the pure core fed the key's rows in one go.
"""

from __future__ import annotations

import itertools
import json
import math
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.oracles import Output, spl_outputs
from trending.windows.spl import SpecError, WindowEvent, parse_spec
from trending.windows.spl.events import EventKind
from trending.windows.spl.keyed import (
    KeyState,
    build_window,
    check_keyed,
    event_row,
    join_snapshot,
    on_partitioned_rows,
    on_rows,
    on_timer,
    pure_inputs,
    pure_partitioned_inputs,
    runs_whole,
    split_snapshot,
    to_record,
)

TIME_SPECS = [
    {"kind": "tumbling", "evict": {"time": 2}},
    {"kind": "sliding", "evict": {"time": 3}, "trigger": {"time": 2}},
    {"kind": "sliding", "evict": {"count": 3}, "trigger": {"time": 1}},
    {"kind": "sliding", "evict": {"time": 2.5}, "trigger": {"count": 2}},
]


def run_engine(
    spec_raw: dict[str, Any], rows: list[tuple[int, dict[str, Any]]], cuts: list[int]
) -> list[WindowEvent]:
    """Feed ``rows`` (time order) in batches split at ``cuts``; watermark = max time seen.

    After each batch the engine fires the key's timer while it is at or below the watermark;
    a final watermark far ahead closes what is left.
    """
    spec = parse_spec(spec_raw)
    state, events = KeyState(), list[WindowEvent]()
    bounds = [0, *sorted(set(cuts)), len(rows)]
    batches = [(rows[b:e], rows[e - 1][0]) for b, e in itertools.pairwise(bounds) if e > b]
    for batch, watermark in [*batches, ([], rows[-1][0] + 10_000)]:
        if batch:
            step = on_rows(spec, "k", state, batch)
            state, events = step.state, events + step.events
        while state.timer_ms is not None and state.timer_ms <= watermark:
            step = on_timer(spec, state, state.timer_ms, watermark)
            state, events = step.state, events + step.events
    return events


def pure_run(spec_raw: dict[str, Any], rows: list[tuple[int, dict[str, Any]]]) -> list[Any]:
    window = build_window(parse_spec(spec_raw))
    events = list(window.run(pure_inputs("k", rows)))
    return events + window.advance_to(rows[-1][0] + 10_000)


def essence(events: list[WindowEvent]) -> list[tuple[str, list[Any]]]:
    return [(e.kind.value, [r["i"] for r in e.tuples]) for e in events]


def published(events: list[WindowEvent]) -> list[Output]:
    """The triggers and flushes, as :func:`spl_outputs` writes them."""
    return [
        (e.kind.value, tuple(r["i"] for r in e.tuples), e.time_ms, None)
        for e in events
        if e.kind in (EventKind.TRIGGER, EventKind.BEFORE_FLUSH)
    ]


@settings(max_examples=60, deadline=None)
@given(
    spec_index=st.integers(0, len(TIME_SPECS) - 1),
    gaps=st.lists(st.integers(0, 1700), min_size=1, max_size=25),
    cuts=st.lists(st.integers(0, 25), max_size=6),
)
def test_batched_rows_and_timers_equal_one_pure_run(
    spec_index: int, gaps: list[int], cuts: list[int]
) -> None:
    # rows at increasing event times (gaps may be 0); batches at ``cuts``; timers between:
    # the triggers and flushes are what the SPL rules say (brute force), and every event is
    # that of the core fed every row at once
    times = [int(t) for t in np.cumsum(gaps)]
    rows = [(t, {"i": i}) for i, t in enumerate(times)]
    spec = TIME_SPECS[spec_index]
    cuts = [c for c in cuts if c <= len(rows)]
    events = run_engine(spec, rows, cuts)
    by_rule = spl_outputs(spec, [(t, i, 0) for i, t in enumerate(times)], times[-1] + 10_000)
    assert published(events) == by_rule
    assert essence(events) == essence(pure_run(spec, rows))


def test_timer_follows_the_next_due_instant() -> None:
    #   tumbling time(2 s): a row at 0.5 s -> timer 2 s; a row at 1 s -> timer unchanged;
    #   timer fires at 2 s -> flush, window empty -> timer deleted (nothing due)
    spec = parse_spec({"kind": "tumbling", "evict": {"time": 2}})
    first = on_rows(spec, "k", KeyState(), [(500, {"i": 0})])
    assert (first.delete_timer, first.register_timer) == (None, 2000)
    second = on_rows(spec, "k", first.state, [(1000, {"i": 1})])
    assert (second.delete_timer, second.register_timer) == (None, None)
    assert second.state.timer_ms == 2000
    fired = on_timer(spec, second.state, 2000)
    kinds = [e.kind for e in fired.events]
    assert kinds == [EventKind.BEFORE_FLUSH, EventKind.AFTER_FLUSH]
    assert fired.events[0].time_ms == 2000
    assert (fired.state.timer_ms, fired.register_timer) == (None, None)


def test_a_timer_moves_the_clock_to_the_later_of_timer_and_now() -> None:
    #   sliding time(1 s) eviction: rows at 0.1 s and 0.2 s; the timer at 1.1 s fires late
    #   (watermark 5 s): both tuples go, and no timer is left
    spec = parse_spec({"kind": "sliding", "evict": {"time": 1}, "trigger": {"count": 5}})
    step = on_rows(spec, 7, KeyState(), [(100, {"i": 0}), (200, {"i": 1})])
    assert step.register_timer == 1100
    fired = on_timer(spec, step.state, 1100, now_ms=5000)
    assert step.events[0].kind.value == "initial_full"  # full from the start
    assert [e.kind.value for e in fired.events] == [
        "before_evict",
        "after_evict",
        "before_evict",
        "after_evict",
    ]
    assert fired.state.snapshot is not None and fired.state.snapshot["now_ms"] == 5000
    assert fired.state.timer_ms is None


def test_processing_clock_and_late_rows() -> None:
    #   processing time: all rows of a batch go in at the batch clock;
    #   event time: a row older than the clock goes in at the clock (clamped)
    spec = parse_spec({"kind": "tumbling", "evict": {"time": 1}})
    step = on_rows(spec, "k", KeyState(), [(None, {"i": 0}), (None, {"i": 1})], clock_ms=2500)
    assert step.register_timer == 3000
    late = on_rows(spec, "k", step.state, [(100, {"i": 2})])
    assert late.state.snapshot is not None
    assert late.state.snapshot["now_ms"] == 2500
    assert [e["at_ms"] for e in late.state.snapshot["partitions"][0]["entries"]] == [2500] * 3


def test_state_row_round_trip() -> None:
    spec = parse_spec({"kind": "sliding", "evict": {"count": 2}, "trigger": {"count": 1}})
    step = on_rows(spec, "k", KeyState(), [(None, {"i": 0, "s": "é"})])
    row = step.state.to_row()
    assert isinstance(row[0], str) and row[1:] == (len(step.events), None)
    assert KeyState.from_row(row) == step.state
    assert KeyState.from_row(None) == KeyState()
    assert KeyState.from_row((row[0], np.int64(3), math.nan)).timer_ms is None
    assert KeyState.from_row((None, 0, np.float64(1500.0))).timer_ms == 1500


def test_event_row_is_json() -> None:
    event = WindowEvent(EventKind.AFTER_FLUSH, "k", ({"a": 1},), 2000, {"n": 1})
    row = event_row("k", event, 4, key_column="user")
    assert row == {
        "user": "k",
        "event": "after_flush",
        "seq": 4,
        "tuples": '[{"a":1}]',
        "time_ms": 2000,
        "summary": '{"n":1}',
    }
    plain = event_row("k", WindowEvent(EventKind.TRIGGER, "k"), 0)
    assert plain["summary"] is None and json.loads(plain["tuples"]) == []


def test_to_record_makes_pandas_values_plain() -> None:
    frame = pd.DataFrame(
        {
            "n": [1, 2],
            "x": [0.5, math.nan],
            "ok": [True, False],
            "ts": [pd.Timestamp("2024-01-01 00:00:01", tz="UTC"), pd.NaT],
            "s": ["a", None],
        }
    )
    records = [to_record(r) for r in frame.to_dict("records")]
    assert records == [
        {"n": 1, "x": 0.5, "ok": True, "ts": 1_704_067_201_000, "s": "a"},
        {"n": 2, "x": None, "ok": False, "ts": None, "s": None},
    ]
    assert json.loads(json.dumps(records)) == records
    assert type(records[0]["n"]) is int


@pytest.mark.parametrize(
    ("raw", "mode", "message"),
    [
        ({"kind": "tumbling", "evict": "punct"}, "none", "punctuation"),
        ({"kind": "tumbling", "evict": {"time": 1}}, "none", "needs time_mode"),
        ({"kind": "tumbling", "evict": {"count": 1}}, "wall", "time_mode: must be one of"),
    ],
)
def test_check_keyed_refuses_what_cannot_run_per_key(
    raw: dict[str, Any], mode: str, message: str
) -> None:
    with pytest.raises(SpecError, match=message):
        check_keyed(parse_spec(raw), mode)
    check_keyed(parse_spec({"kind": "tumbling", "evict": {"time": 1}}), "event")


EVICTING = {
    "kind": "sliding",
    "evict": {"count": 3},
    "trigger": {"count": 2},
    "partition_by": "u",
    "partition_eviction": {"tuples": 5, "select": "lru"},
}


def test_a_spec_with_partition_eviction_runs_whole() -> None:
    spec = parse_spec(EVICTING)
    check_keyed(spec, "none")
    assert runs_whole(spec)
    assert not runs_whole(parse_spec({**EVICTING, "partition_eviction": None}))


def lru_by_rule(users: list[str]) -> tuple[list[tuple[str, str, list[int]]], dict[str, list[int]]]:
    """``EVICTING`` from its rules: per user the last 3 tuples, a trigger after every 2nd
    insertion into a partition since it was made; right after each insertion, while the window
    holds more than 5 tuples, the least recently used partition goes whole (and starts afresh
    when its user comes back). Returns the triggers and partition evictions, in order, and what
    each partition holds at the end."""
    held: dict[str, list[int]] = {}  # least recently used first
    inserted: dict[str, int] = {}
    events: list[tuple[str, str, list[int]]] = []
    for i, user in enumerate(users):
        held[user] = [*held.pop(user, []), i][-3:]
        inserted[user] = inserted.get(user, 0) + 1
        while sum(len(ids) for ids in held.values()) > 5:
            victim = next(iter(held))
            events.append(("partition_evict", victim, held.pop(victim)))
            del inserted[victim]
        if inserted[user] % 2 == 0:
            events.append(("trigger", user, held[user]))
    return events, held


@settings(max_examples=40, deadline=None)
@given(
    users=st.lists(st.sampled_from("abcdefg"), min_size=1, max_size=40),
    cuts=st.lists(st.integers(0, 40), max_size=6),
)
def test_a_whole_window_gives_the_same_events_whatever_the_batches(
    users: list[str], cuts: list[int]
) -> None:
    #   rows i = 0.. with users drawn from a..g, cut into batches anywhere; the state goes
    #   through split_snapshot / join_snapshot (the engine's rows) between batches:
    #   triggers, partition evictions and the last state are those of the rules, and the
    #   events those of one pure run of the partitioned window over all rows
    spec = parse_spec(EVICTING)
    rows = [(None, user, {"i": i, "u": user}) for i, user in enumerate(users)]
    bounds = [0, *sorted({c for c in cuts if c < len(rows)}), len(rows)]
    state, events = KeyState(), list[WindowEvent]()
    for begin, end in itertools.pairwise(bounds):
        step = on_partitioned_rows(spec, state, rows[begin:end])
        assert step.state.snapshot is not None
        meta, parts = split_snapshot(step.state.snapshot)
        assert len(parts) == len(step.state.snapshot["partitions"])
        snapshot = join_snapshot(json.loads(json.dumps(meta)), parts)
        state, events = KeyState(snapshot, step.state.emitted, None), events + step.events
    expected_events, expected_held = lru_by_rule(users)
    assert [
        (e.kind.value, e.partition, [r["i"] for r in e.tuples])
        for e in events
        if e.kind in (EventKind.TRIGGER, EventKind.PARTITION_EVICT)
    ] == expected_events
    assert state.snapshot is not None
    held = {
        p["key"]: [entry["tuple"]["i"] for entry in p["entries"]]
        for p in state.snapshot["partitions"]
    }
    assert held == expected_held
    expected = list(build_window(spec).run(pure_partitioned_inputs(rows)))
    assert [(e.kind, e.partition, list(e.tuples)) for e in events] == [
        (e.kind, e.partition, list(e.tuples)) for e in expected
    ]
