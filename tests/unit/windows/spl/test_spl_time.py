"""Time-based policies on the caller's clock: half-open periods, independence of splits."""

from __future__ import annotations

import pytest

from trending.windows.spl import (
    Count,
    Delta,
    InputError,
    SlidingWindow,
    Time,
    TumblingWindow,
)

from .helpers import trace, tup, vals


def test_tumbling_time_windows_are_half_open() -> None:
    # time(5):  [0, 5) holds 0s and 4.999s; 5s belongs to [5, 10)
    #   0    4.999 | 5          10
    #   1    2     | 3          flush (3)
    window = TumblingWindow(Time(5_000)).build()
    window.insert(tup(1))
    window.advance_to(4_999)
    window.insert(tup(2))
    assert trace(window.advance_to(5_000)) == ["before_flush [1, 2]", "after_flush []"]
    window.insert(tup(3))
    assert trace(window.advance_to(10_000)) == ["before_flush [3]", "after_flush []"]


def test_partitioned_tumbling_time_flushes_every_nonempty_partition() -> None:
    window = TumblingWindow(Time(5_000)).build()
    window.insert(tup(1), "a")
    window.advance_to(6_000)
    window.insert(tup(2), "b")
    window.insert(tup(3), "a")
    assert trace(window.advance_to(10_000)) == [
        "before_flush b [2]",
        "after_flush b []",
        "before_flush a [3]",
        "after_flush a []",
    ]


def test_sliding_time_trigger_sees_the_last_period_half_open() -> None:
    # time(4), time(4): a trigger at t sees the tuples inserted in [t - 4, t)
    #   0: 1   3: 2   4: *(1, 2) then 1 evicted   7: 2 evicted, then 3   8: *(3)
    window = SlidingWindow(Time(4_000), Time(4_000)).build()
    assert trace(window.insert(tup(1)))[0] == "initial_full []"  # full from the start
    window.advance_to(3_000)
    window.insert(tup(2))
    events = window.advance_to(4_000)
    assert trace(events) == [
        "trigger [1, 2]",
        "before_evict [1]",
        "after_evict [1]",
    ]
    assert trace(window.advance_to(7_000)) == ["before_evict [2]", "after_evict [2]"]
    window.insert(tup(3))
    assert trace(window.advance_to(8_000)) == ["trigger [3]"]


def test_an_empty_window_triggers_once_per_tick_for_a_made_up_partition() -> None:
    # as SPL's trigger thread: a tick that finds no partition triggers an empty one
    window = SlidingWindow(Time(1_000), Time(2_000)).build()
    window.insert(tup(1), "p")
    events = window.advance_to(10_000)
    assert trace(events) == ["before_evict p [1]", "after_evict p [1]"] + ["trigger []"] * 5
    assert [e.time_ms for e in events[2:]] == [2_000, 4_000, 6_000, 8_000, 10_000]
    assert window.partitions() == ()  # time eviction deleted the emptied partition


def test_empty_window_events_can_be_turned_off() -> None:
    window = SlidingWindow(Time(1_000), Time(2_000), empty_window_events=False).build()
    assert window.next_due() is None
    window.insert(tup(1))
    assert trace(window.advance_to(10_000)) == ["before_evict [1]", "after_evict [1]"]
    assert window.next_due() is None
    tumbling = TumblingWindow(Time(1_000), empty_window_events=False).build()
    assert tumbling.advance_to(10_000) == []


def test_a_tumbling_time_flush_of_an_empty_window() -> None:
    window = TumblingWindow(Time(1_000)).build()
    window.insert(tup(1), "p")
    assert trace(window.advance_to(2_000)) == [
        "before_flush p [1]",
        "after_flush p []",
        "before_flush []",
        "after_flush []",
    ]


def test_time_eviction_keeps_the_count_trigger_state_across_an_empty_window() -> None:
    # time(1), count(3): 1 2 at 0s, both evicted at 1s, 3 at 5s is the 3rd since the last
    # trigger, so it triggers.
    window = SlidingWindow(Time(1_000), Count(3)).build()
    window.insert(tup(1))
    window.insert(tup(2))
    window.advance_to(5_000)
    assert trace(window.insert(tup(3)))[-1] == "trigger [3]"


def test_delta_trigger_on_a_time_emptied_window_fires_on_the_empty_partition() -> None:
    # time eviction deletes the emptied partition but keeps its delta reference (1), so age 2
    # triggers the new, still empty partition before it goes in (as the runtime)
    window = SlidingWindow(Time(1_000), Delta("age", 0)).build()
    window.insert(tup(1, age=1))
    window.advance_to(2_000)
    assert trace(window.insert(tup(2, age=2))) == [
        "trigger []",
        "before_insert [2]",
        "after_insert [2]",
    ]
    assert trace(window.insert(tup(3, age=3)))[0] == "trigger [2]"


def test_time_eviction_keeps_initial_full_across_an_emptied_partition() -> None:
    window = SlidingWindow(Time(1_000), Count(1)).build()
    assert trace(window.insert(tup(1)))[0] == "initial_full []"
    window.advance_to(5_000)
    assert trace(window.insert(tup(2)))[0] == "before_insert [2]"


def test_splitting_a_clock_advance_never_changes_events() -> None:
    def run(steps: list[int]) -> list[tuple[str, int]]:
        window = SlidingWindow(Time(3_000), Time(2_000)).build()
        out = []
        for i, t in enumerate([0, 500, 2_500, 2_500, 4_100]):
            window.advance_to(t)
            out += [(line, 0) for line in trace(window.insert(tup(i)))]
        for step in steps:
            events = window.advance_to(step)
            out += list(zip(trace(events), [e.time_ms for e in events], strict=True))
        return out

    assert run([20_000]) == run([4_100, 5_999, 6_000, 6_001, 19_000, 20_000])


def test_a_long_idle_jump_is_cheap_without_empty_window_events() -> None:
    window = TumblingWindow(Time(1), empty_window_events=False).build()
    window.insert(tup(1))
    assert trace(window.advance_to(10**15)) == ["before_flush [1]", "after_flush []"]
    window.insert(tup(2))
    assert window.advance_to(10**15 + 1)[0].time_ms == 10**15 + 1


def test_the_clock_cannot_go_back_and_must_be_integer_ms() -> None:
    window = TumblingWindow(Time(1_000)).build()
    window.advance_to(5_000)
    with pytest.raises(InputError, match="cannot go back"):
        window.advance_to(4_000)
    with pytest.raises(InputError, match="integer"):
        window.advance_to(5_000.5)  # type: ignore[arg-type]
    assert window.now_ms == 5_000
    assert window.advance_to(5_000) == []


def test_tuples_carry_their_insertion_time_into_events() -> None:
    window = SlidingWindow(Count(2), Count(1)).build()
    window.advance_to(1_234)
    events = window.insert(tup(1))
    assert {e.time_ms for e in events} == {1_234}
    assert vals(events[-1].tuples) == [1]
