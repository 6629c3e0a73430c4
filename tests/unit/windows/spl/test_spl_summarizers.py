"""Tumbling window summarizers: incremental aggregates that close right before a flush."""

from __future__ import annotations

from typing import Any

import pytest

from trending.windows.spl import (
    Count,
    Delta,
    EventKind,
    InputError,
    Punct,
    SlidingWindow,
    Time,
    TumblingWindow,
    summarizers,
)

from .helpers import trace

ALL = {
    "n": summarizers.Count(),
    "sum": summarizers.Sum("x"),
    "min": summarizers.Min("x"),
    "max": summarizers.Max("x"),
    "mean": summarizers.Mean("x"),
    "top2": summarizers.TopK("x", 2),
    "words": summarizers.Custom(lambda: [], lambda state, record: [*state, record["w"]], " ".join),
}


def records(xs: list[float]) -> list[dict[str, Any]]:
    return [{"x": x, "w": f"w{i}"} for i, x in enumerate(xs)]


def test_every_builtin_summary_of_a_count_window() -> None:
    # count(4):  x = 3 1 4 1 | 5 9 ...
    window = TumblingWindow(Count(4), summarizers=ALL).build()
    events = [e for r in records([3, 1, 4, 1, 5, 9]) for e in window.insert(r)]
    flushes = [e for e in events if e.kind is EventKind.BEFORE_FLUSH]
    assert len(flushes) == 1
    assert flushes[0].summary == {
        "n": 4,
        "sum": 9,
        "min": 1,
        "max": 4,
        "mean": 2.25,
        "top2": [4, 3],
        "words": "w0 w1 w2 w3",
    }
    after = next(e for e in events if e.kind is EventKind.AFTER_FLUSH)
    assert after.summary == flushes[0].summary
    assert all(e.summary is None for e in events if "insert" in e.kind.value)


def test_summaries_start_fresh_in_each_window_and_partition() -> None:
    window = TumblingWindow(Punct(), summarizers={"sum": summarizers.Sum("x")}).build()
    window.insert({"x": 1}, "a")
    window.insert({"x": 10}, "b")
    window.insert({"x": 2}, "a")
    assert [(e.partition, e.summary) for e in window.punct() if e.kind.value == "after_flush"] == [
        ("a", {"sum": 3}),
        ("b", {"sum": 10}),
    ]
    window.insert({"x": 5}, "a")
    assert window.punct()[0].summary == {"sum": 5}


def test_a_window_that_keeps_no_tuples_still_counts_and_summarizes() -> None:
    # delta(x, 2) without tuples: the window remembers only x of its oldest tuple
    config = TumblingWindow(Delta("x", 2), summarizers={"max": summarizers.Max("x")})
    lean = TumblingWindow(config.evict, summarizers=config.summarizers, keep_tuples=False)
    full_window, lean_window = config.build(), lean.build()
    for x in [1, 2, 3, 4, 5, 7, 8]:
        full_events = full_window.insert({"x": x})
        lean_events = lean_window.insert({"x": x})
        assert [(e.kind, e.summary) for e in full_events] == [
            (e.kind, e.summary) for e in lean_events
        ]
        assert all(e.tuples == () for e in lean_events if "flush" in e.kind.value)
    assert lean_window.content() == ()
    assert lean_window.snapshot()["partitions"][0]["size"] == 2


def test_lean_time_window_flushes_on_the_clock() -> None:
    window = TumblingWindow(Time(1_000), summarizers={"n": summarizers.Count()}, keep_tuples=False)
    running = window.build()
    running.insert({"x": 1})
    running.insert({"x": 2})
    events = running.advance_to(1_000)
    assert trace(events) == ["before_flush []", "after_flush []"]
    assert events[0].summary == {"n": 2}


def test_an_empty_summary_of_mean_is_none_and_top_k_needs_k() -> None:
    assert summarizers.Mean("x").result(summarizers.Mean("x").initial()) is None
    assert summarizers.Min("x").result(summarizers.Min("x").initial()) is None
    with pytest.raises(ValueError, match="positive integer k"):
        summarizers.TopK("x", 0)


def test_a_tuple_that_cannot_be_summarized_is_refused_before_anything_changes() -> None:
    window = TumblingWindow(Count(2), summarizers={"sum": summarizers.Sum("x")}).build()
    window.insert({"x": 1})
    with pytest.raises(InputError, match="'x' must be a number"):
        window.insert({"x": "one"})
    assert [r["x"] for r in window.content()] == [1]
    assert window.insert({"x": 2})[-1].summary == {"sum": 3}


def test_summarizer_state_is_plain_data_in_snapshots() -> None:
    window = TumblingWindow(Count(3), summarizers=dict(ALL)).build()
    for r in records([1, 2]):
        window.insert(r)
    (partition,) = window.snapshot()["partitions"]
    assert partition["summaries"] == {
        "n": 2,
        "sum": 3,
        "min": 1,
        "max": 2,
        "mean": [2, 3],
        "top2": [1, 2],
        "words": ["w0", "w1"],
    }


def test_sliding_windows_take_no_summarizers() -> None:
    with pytest.raises(TypeError):
        SlidingWindow(Count(2), Count(1), summarizers={})  # type: ignore[call-arg]
