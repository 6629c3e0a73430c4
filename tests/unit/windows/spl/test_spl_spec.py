"""Window specs: JSON-able dicts parsed into window configs; bad ones name their field."""

from __future__ import annotations

from typing import Any

import pytest

from trending.windows.spl import (
    Count,
    Delta,
    InputError,
    PartitionAge,
    PartitionCount,
    PartitionEviction,
    Punct,
    SlidingWindow,
    SpecError,
    Time,
    TumblingWindow,
    TupleCount,
    WindowSpec,
    parse_spec,
    summarizers,
)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (
            {
                "kind": "sliding",
                "evict": {"count": 4},
                "trigger": {"count": 2},
                "partition_by": "p",
            },
            WindowSpec(SlidingWindow(Count(4), Count(2)), "p"),
        ),
        (
            {"kind": "tumbling", "evict": {"delta": {"attribute": "age", "size": 2}}},
            WindowSpec(TumblingWindow(Delta("age", 2))),
        ),
        ({"kind": "tumbling", "evict": "punct"}, WindowSpec(TumblingWindow(Punct()))),
        ({"kind": "tumbling", "evict": {"punct": True}}, WindowSpec(TumblingWindow(Punct()))),
        (
            {"kind": "sliding", "evict": {"time": 8}, "trigger": {"time": 2}},
            WindowSpec(SlidingWindow(Time(8_000), Time(2_000))),
        ),
        (
            {"kind": "tumbling", "evict": {"time": 0.25}},
            WindowSpec(TumblingWindow(Time(250))),
        ),
        (
            {
                "kind": "sliding",
                "evict": {"count": 4},
                "trigger": {"delta": {"attribute": "t", "size": 0.5}},
                "partition_by": "p",
                "partition_eviction": {"count": 2, "select": "lru"},
            },
            WindowSpec(
                SlidingWindow(Count(4), Delta("t", 0.5), PartitionEviction(PartitionCount(2))),
                "p",
            ),
        ),
        (
            {
                "kind": "tumbling",
                "evict": {"count": 3},
                "partition_by": "p",
                "partition_eviction": {"age": 1.5},
            },
            WindowSpec(TumblingWindow(Count(3), PartitionEviction(PartitionAge(1_500))), "p"),
        ),
        (
            {
                "kind": "tumbling",
                "evict": {"count": 3},
                "partition_by": "p",
                "partition_eviction": {"tuples": 10},
            },
            WindowSpec(TumblingWindow(Count(3), PartitionEviction(TupleCount(10))), "p"),
        ),
    ],
)
def test_specs_parse_to_window_configs(raw: dict[str, Any], expected: WindowSpec) -> None:
    assert parse_spec(raw) == expected


def test_summaries_and_keep_tuples() -> None:
    spec = parse_spec(
        {
            "kind": "tumbling",
            "evict": {"count": 3},
            "keep_tuples": False,
            "summaries": {
                "n": "count",
                "total": {"sum": "x"},
                "lo": {"min": "x"},
                "hi": {"max": "x"},
                "avg": {"mean": "x"},
                "top": {"top_k": {"attribute": "x", "k": 2}},
            },
        }
    )
    assert isinstance(spec.window, TumblingWindow)
    assert spec.window.keep_tuples is False
    assert dict(spec.window.summarizers) == {
        "n": summarizers.Count(),
        "total": summarizers.Sum("x"),
        "lo": summarizers.Min("x"),
        "hi": summarizers.Max("x"),
        "avg": summarizers.Mean("x"),
        "top": summarizers.TopK("x", 2),
    }


def test_an_operator_defined_selector_comes_from_code() -> None:
    def select(infos: object) -> list[str]:
        return []

    raw = {
        "kind": "sliding",
        "evict": {"count": 2},
        "trigger": {"count": 1},
        "partition_by": "p",
        "partition_eviction": {"count": 3, "select": "operator"},
    }
    window = parse_spec(raw, selector=select).window
    assert window.partition_eviction == PartitionEviction(PartitionCount(3), select)
    with pytest.raises(SpecError, match=r"partition_eviction\.select: 'operator' needs a selector"):
        parse_spec(raw)


SLIDING = {"kind": "sliding", "evict": {"count": 4}, "trigger": {"count": 2}}


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ([], "spec: must be an object"),
        ({"evict": {"count": 1}}, "kind: must be 'tumbling' or 'sliding'"),
        ({"kind": "hopping", "evict": {"count": 1}}, "kind: must be 'tumbling' or 'sliding'"),
        ({"kind": "tumbling"}, "evict: missing"),
        ({**SLIDING, "size": 3}, r"spec: unknown field\(s\) \['size'\]"),
        ({"kind": "tumbling", "evict": {"count": 0}}, "evict.count: must be a positive integer"),
        ({"kind": "tumbling", "evict": {"count": 2.5}}, "evict.count: must be a positive integer"),
        ({"kind": "tumbling", "evict": {"count": True}}, "evict.count: must be a positive integer"),
        ({"kind": "tumbling", "evict": {"count": 1, "time": 2}}, "evict: give exactly one of"),
        ({"kind": "tumbling", "evict": {"hop": 1}}, "evict: unknown policy 'hop'"),
        ({"kind": "tumbling", "evict": "count"}, "evict: must be an object"),
        ({"kind": "tumbling", "evict": {"time": 0}}, "evict.time: must be a positive number"),
        ({"kind": "tumbling", "evict": {"time": "8x"}}, "evict.time: not a duration"),
        (
            {"kind": "tumbling", "evict": {"time": 0.0001}},
            "evict.time: 0.0001 seconds is not a whole number of milliseconds",
        ),
        (
            {"kind": "tumbling", "evict": {"delta": {"attribute": "age"}}},
            "evict.delta.size: missing",
        ),
        (
            {"kind": "tumbling", "evict": {"delta": {"attribute": "", "size": 1}}},
            "evict.delta.attribute: must be a non-empty string",
        ),
        (
            {"kind": "tumbling", "evict": {"delta": {"attribute": "a", "size": -1}}},
            "evict.delta.size: must be a number >= 0",
        ),
        (
            {"kind": "tumbling", "evict": {"delta": {"attribute": "a", "size": 1, "x": 0}}},
            r"evict.delta: unknown field\(s\) \['x'\]",
        ),
        ({**SLIDING, "evict": "punct"}, "evict: a sliding window cannot evict or trigger on punct"),
        (
            {**SLIDING, "trigger": {"punct": True}},
            "trigger: a sliding window cannot evict or trigger on punct",
        ),
        (
            {"kind": "tumbling", "evict": {"count": 2}, "trigger": {"count": 1}},
            r"spec: unknown field\(s\) \['trigger'\] for a tumbling window",
        ),
        ({**SLIDING, "partition_by": 3}, "partition_by: must be an attribute name"),
        (
            {**SLIDING, "partition_eviction": {"count": 2}},
            "partition_eviction: needs partition_by",
        ),
        (
            {**SLIDING, "partition_by": "p", "partition_eviction": {"count": 2, "age": 3}},
            "partition_eviction: give exactly one of age, count, tuples",
        ),
        (
            {**SLIDING, "partition_by": "p", "partition_eviction": {"count": -1}},
            "partition_eviction.count: must be an integer >= 0",
        ),
        (
            {**SLIDING, "partition_by": "p", "partition_eviction": {"age": -1}},
            "partition_eviction.age: must be a positive number of seconds",
        ),
        (
            {**SLIDING, "partition_by": "p", "partition_eviction": {"tuples": 2, "select": "mru"}},
            "partition_eviction.select: must be 'lru' or 'operator'",
        ),
        ({**SLIDING, "summaries": {}}, r"unknown field\(s\) \['summaries'\] for a sliding"),
        (
            {"kind": "tumbling", "evict": {"count": 2}, "keep_tuples": "no"},
            "keep_tuples: must be true or false",
        ),
        (
            {"kind": "tumbling", "evict": {"count": 2}, "summaries": {"s": {"median": "x"}}},
            "summaries.s: unknown summary 'median'",
        ),
        (
            {"kind": "tumbling", "evict": {"count": 2}, "summaries": {"s": {"sum": 3}}},
            "summaries.s.sum: must be an attribute name",
        ),
        (
            {
                "kind": "tumbling",
                "evict": {"count": 2},
                "summaries": {"s": {"top_k": {"attribute": "x", "k": 0}}},
            },
            "summaries.s.top_k.k: must be a positive integer",
        ),
    ],
)
def test_bad_specs_name_the_field(raw: object, message: str) -> None:
    with pytest.raises(SpecError, match=message):
        parse_spec(raw)


def test_the_partition_key_comes_from_the_partition_by_attribute() -> None:
    spec = parse_spec({**SLIDING, "partition_by": "p"})
    assert spec.partition_of({"p": "a", "v": 1}) == "a"
    assert parse_spec(SLIDING).partition_of({"p": "a"}) is None
    with pytest.raises(InputError, match="no partition attribute 'p'"):
        spec.partition_of({"v": 1})
    with pytest.raises(InputError, match="must be a scalar"):
        spec.partition_of({"p": [1]})


def test_a_sliding_window_without_trigger_triggers_on_every_tuple() -> None:
    # no trigger policy = count(1), as in the SPL runtime:  1 -> *(1)  2 -> *(2, 1)
    spec = parse_spec({"kind": "sliding", "evict": {"count": 2}})
    assert isinstance(spec.window, SlidingWindow)
    assert spec.window.trigger == Count(1)
    window = spec.build()
    assert [e.kind.value for e in window.insert({"v": 1})][-1] == "trigger"
    assert [e.kind.value for e in window.insert({"v": 2})][-1] == "trigger"
    assert SlidingWindow(Count(2)).trigger == Count(1)


def test_the_issue_spellings_of_delta_trigger_and_tuple_count_eviction() -> None:
    spec = parse_spec(
        {
            "kind": "sliding",
            "evict": {"count": 4},
            "trigger": {"delta": {"attribute": "age", "size": 2}},
            "partition_by": "p",
            "partition_eviction": {"tuples": 10, "select": "lru"},
        }
    )
    assert isinstance(spec.window, SlidingWindow)
    assert spec.window.trigger == Delta("age", 2)
    assert spec.window.partition_eviction == PartitionEviction(TupleCount(10))


@pytest.mark.parametrize("limit", ["count", "tuples"])
def test_partition_count_and_tuple_count_may_be_zero(limit: str) -> None:
    raw = {**SLIDING, "partition_by": "p", "partition_eviction": {limit: 0}}
    eviction = parse_spec(raw).window.partition_eviction
    assert eviction is not None
    assert eviction.limit in (PartitionCount(0), TupleCount(0))


@pytest.mark.parametrize(
    ("written", "ms"),
    [("500ms", 500), ("30s", 30_000), ("1m", 60_000), ("10 seconds", 10_000), ("2h", 7_200_000)],
)
def test_times_take_the_command_line_s_durations_as_well_as_seconds(written: str, ms: int) -> None:
    spec = parse_spec({"kind": "sliding", "evict": {"time": written}, "trigger": {"time": 0.5}})
    assert spec == WindowSpec(SlidingWindow(Time(ms), Time(500)))
    aged = parse_spec(
        {"kind": "tumbling", "evict": {"count": 2}, "partition_by": "p",
         "partition_eviction": {"age": written}}
    )  # fmt: skip
    assert aged.window.partition_eviction.limit == PartitionAge(ms)


@pytest.mark.parametrize("written", ["5x", "0s", "-1m", ""])
def test_a_bad_duration_in_a_spec_names_its_field(written: str) -> None:
    with pytest.raises(SpecError, match=r"^evict\.time: "):
        parse_spec({"kind": "tumbling", "evict": {"time": written}})


def test_every_problem_of_a_spec_is_reported_at_once() -> None:
    spec = {"kind": "sliding", "evict": {"count": 0}, "trigger": {"time": "5x"},
            "partition_eviction": {"count": 2}, "empty_window_events": "no", "sise": 3}  # fmt: skip
    with pytest.raises(SpecError) as raised:
        parse_spec(spec)
    assert [p.split(":")[0] for p in raised.value.problems] == [
        "spec", "partition_eviction", "evict.count", "empty_window_events", "trigger.time"
    ]  # fmt: skip
    assert str(raised.value) == "; ".join(raised.value.problems)
