"""The execution order of insert, evict and trigger: the seed's Tables 1 and 2, every cell.

Tuples are ``{"v": v, "age": v}`` unless drawn otherwise; times are in seconds in the
drawings and milliseconds in the code.
"""

from __future__ import annotations

import pytest

from trending.windows.spl import Count, Delta, Punct, SlidingWindow, Time, TumblingWindow

from .helpers import trace, tup

AGE2, AGE0 = Delta("age", 2), Delta("age", 0)
T2, T8 = Time(2_000), Time(8_000)


def aged(v: int) -> dict[str, int]:
    return tup(v, age=v)


def insert_ages(window: object, ages: list[int]) -> list[list[str]]:
    """The trace of each insertion separately."""
    return [trace(window.insert(aged(v))) for v in ages]  # type: ignore[attr-defined]


# --- Table 1: tumbling windows -----------------------------------------------------------


def test_tumbling_count_inserts_then_flushes() -> None:
    # count(3):  1 2 3 | 4
    #                  ^ the 3rd insertion fills the window, which flushes after it
    window = TumblingWindow(Count(3)).build()
    per_insert = insert_ages(window, [1, 2, 3, 4])
    assert per_insert[2] == [
        "before_insert [3]",
        "after_insert [3]",
        "before_flush [1, 2, 3]",
        "after_flush []",
    ]
    assert per_insert[3] == ["before_insert [4]", "after_insert [4]"]


def test_tumbling_delta_flushes_then_inserts() -> None:
    # delta(age, 2):  ages 1 2 3 | 4      4 - 1 > 2: flush (1, 2, 3), then 4 opens a window
    window = TumblingWindow(AGE2).build()
    per_insert = insert_ages(window, [1, 2, 3, 4])
    assert per_insert[:3] == [[f"before_insert [{v}]", f"after_insert [{v}]"] for v in (1, 2, 3)]
    assert per_insert[3] == [
        "before_flush [1, 2, 3]",
        "after_flush []",
        "before_insert [4]",
        "after_insert [4]",
    ]
    assert [t["v"] for t in window.content()] == [4]


def test_tumbling_delta_boundary_is_strictly_greater() -> None:
    # ages 1 3: 3 - 1 = 2 is not > 2, same window; 4 - 1 = 3 > 2 flushes
    window = TumblingWindow(AGE2).build()
    assert insert_ages(window, [1, 3])[1] == ["before_insert [3]", "after_insert [3]"]
    assert insert_ages(window, [4])[0][0] == "before_flush [1, 3]"


def test_tumbling_time_flushes_on_the_clock_only() -> None:
    # time(8):  0s: 1   3s: 2   8s: flush (1, 2)   8s: 3   16s: flush (3)
    #           [0, 8) ------------)[8, 16) --------------)
    window = TumblingWindow(T8).build()
    assert trace(window.insert(tup(1))) == ["before_insert [1]", "after_insert [1]"]
    assert window.advance_to(3_000) == []
    window.insert(tup(2))
    assert trace(window.advance_to(8_000)) == ["before_flush [1, 2]", "after_flush []"]
    window.insert(tup(3))
    events = window.advance_to(20_000)
    assert trace(events) == ["before_flush [3]", "after_flush []"]
    assert [e.time_ms for e in events] == [16_000, 16_000]


def test_tumbling_punct_flushes_on_punctuation_and_reports_empty_windows() -> None:
    # punct():  P  1 2  P  P      -> empty_punct, flush (1, 2), empty_punct
    window = TumblingWindow(Punct()).build()
    assert trace(window.punct()) == ["empty_punct []"]
    window.insert(tup(1))
    window.insert(tup(2))
    assert trace(window.punct()) == ["before_flush [1, 2]", "after_flush []"]
    assert trace(window.punct()) == ["empty_punct []"]


def test_punctuation_is_ignored_by_windows_that_do_not_evict_on_it() -> None:
    for window in (TumblingWindow(Count(2)).build(), SlidingWindow(Count(2), Count(1)).build()):
        window.insert(tup(1))
        assert window.punct() == []
        assert [t["v"] for t in window.content()] == [1]


def test_partitioned_punct_flushes_every_partition_in_creation_order() -> None:
    window = TumblingWindow(Punct()).build()
    window.insert(tup(1), "b")
    window.insert(tup(2), "a")
    window.insert(tup(3), "b")
    assert trace(window.punct()) == [
        "before_flush b [1, 3]",
        "after_flush b []",
        "before_flush a [2]",
        "after_flush a []",
    ]
    assert trace(window.punct()) == ["empty_punct []"]


# --- Table 2: sliding windows ------------------------------------------------------------


def test_sliding_count_count_evict_insert_trigger() -> None:
    # count(2), count(1):  1 2 | 3: evict 1 -> insert 3 -> trigger (2, 3)
    window = SlidingWindow(Count(2), Count(1)).build()
    per_insert = insert_ages(window, [1, 2, 3])
    assert per_insert[1] == [
        "before_insert [2]",
        "after_insert [2]",
        "initial_full [1, 2]",
        "trigger [1, 2]",
    ]
    assert per_insert[2] == [
        "before_evict [1]",
        "after_evict [1]",
        "before_insert [3]",
        "after_insert [3]",
        "trigger [2, 3]",
    ]


def test_sliding_count_delta_trigger_evict_insert() -> None:
    # count(2), delta(age, 0):  ages 1 2 | 3: trigger (1, 2) -> evict 1 -> insert 3
    window = SlidingWindow(Count(2), AGE0).build()
    per_insert = insert_ages(window, [1, 2, 3])
    assert per_insert[0] == ["before_insert [1]", "after_insert [1]"]
    assert per_insert[1] == [
        "trigger [1]",
        "before_insert [2]",
        "after_insert [2]",
        "initial_full [1, 2]",
    ]
    assert per_insert[2] == [
        "trigger [1, 2]",
        "before_evict [1]",
        "after_evict [1]",
        "before_insert [3]",
        "after_insert [3]",
    ]


def test_sliding_count_time_evict_insert_then_trigger_on_the_clock() -> None:
    # count(2), time(2):  0s: 1 2   1s: 3 (evicts 1)   2s: trigger (2, 3)
    window = SlidingWindow(Count(2), T2).build()
    insert_ages(window, [1, 2])
    window.advance_to(1_000)
    assert insert_ages(window, [3])[0] == [
        "before_evict [1]",
        "after_evict [1]",
        "before_insert [3]",
        "after_insert [3]",
    ]
    assert trace(window.advance_to(2_000)) == ["trigger [2, 3]"]


def test_sliding_delta_count_evict_insert_trigger() -> None:
    # delta(age, 2), count(1):  ages 1 2 3 | 4: 4 - 1 > 2 evicts 1 -> insert 4 -> trigger
    window = SlidingWindow(AGE2, Count(1)).build()
    per_insert = insert_ages(window, [1, 2, 3, 4])
    assert per_insert[3] == [
        "initial_full [1, 2, 3]",
        "before_evict [1]",
        "after_evict [1]",
        "before_insert [4]",
        "after_insert [4]",
        "trigger [2, 3, 4]",
    ]


def test_sliding_delta_delta_trigger_evict_insert() -> None:
    # delta(age, 2), delta(age, 0):  ages 1 2 3 | 4: trigger (1, 2, 3) -> evict 1 -> insert 4
    window = SlidingWindow(AGE2, AGE0).build()
    per_insert = insert_ages(window, [1, 2, 3, 4])
    assert per_insert[3] == [
        "trigger [1, 2, 3]",
        "initial_full [1, 2, 3]",
        "before_evict [1]",
        "after_evict [1]",
        "before_insert [4]",
        "after_insert [4]",
    ]


def test_sliding_delta_evicts_every_tuple_beyond_the_delta() -> None:
    # delta(age, 2): ages 1 2 3 7: 7 evicts 1, 2, 3 (oldest first) before going in
    window = SlidingWindow(AGE2, Count(100)).build()
    per_insert = insert_ages(window, [1, 2, 3, 7])
    evicted = [line for line in per_insert[3] if line.startswith("after_evict")]
    assert evicted == ["after_evict [1]", "after_evict [2]", "after_evict [3]"]
    assert [t["v"] for t in window.content()] == [7]


def test_sliding_delta_time_evict_insert_then_trigger_on_the_clock() -> None:
    # delta(age, 2), time(2):  0s: ages 1 2 3 4   2s: trigger (2, 3, 4)
    window = SlidingWindow(AGE2, T2).build()
    per_insert = insert_ages(window, [1, 2, 3, 4])
    assert per_insert[3] == [
        "initial_full [1, 2, 3]",
        "before_evict [1]",
        "after_evict [1]",
        "before_insert [4]",
        "after_insert [4]",
    ]
    assert trace(window.advance_to(2_000)) == ["trigger [2, 3, 4]"]


def test_sliding_time_count_insert_trigger_then_evict_on_the_clock() -> None:
    # time(8), count(5):  0s 2s 4s 6s: 1 2 3 4   8s: 1 evicted   8s: 5 -> trigger (2..5)
    #   1 lives in [0, 8) ------------------)
    #   SPL deems a time-evicted window full from the start: initial_full before 1 goes in
    window = SlidingWindow(T8, Count(5)).build()
    for second, v in [(0, 1), (2, 2), (4, 3), (6, 4)]:
        window.advance_to(second * 1_000)
        full = ["initial_full []"] if v == 1 else []
        assert trace(window.insert(tup(v))) == [
            *full,
            f"before_insert [{v}]",
            f"after_insert [{v}]",
        ]
    assert trace(window.advance_to(8_000)) == [
        "before_evict [1]",
        "after_evict [1]",
    ]
    assert trace(window.insert(tup(5))) == [
        "before_insert [5]",
        "after_insert [5]",
        "trigger [2, 3, 4, 5]",
    ]


def test_sliding_time_delta_trigger_then_insert_evict_on_the_clock() -> None:
    # time(8), delta(age, 2):  0s: ages 1 2   1s: 4 -> trigger (1, 2) -> insert 4
    #   initial_full at the first insertion (after the delta trigger step, before insert)
    window = SlidingWindow(T8, AGE2).build()
    assert insert_ages(window, [1, 2]) == [
        ["initial_full []", "before_insert [1]", "after_insert [1]"],
        ["before_insert [2]", "after_insert [2]"],
    ]
    window.advance_to(1_000)
    assert insert_ages(window, [4])[0] == [
        "trigger [1, 2]",
        "before_insert [4]",
        "after_insert [4]",
    ]
    assert trace(window.advance_to(8_000)) == [
        "before_evict [1]",
        "after_evict [1]",
        "before_evict [2]",
        "after_evict [2]",
    ]


def test_sliding_time_time_insert_evict_trigger_independently() -> None:
    # time(8), time(2):
    #   0s: full, 1   3s: 2   |2s: *(1)   4s: *(1, 2)  6s: *(1, 2)  8s: *(1, 2), evict 1
    #   10s: *(2)  11s: evict 2, the emptied partition goes
    #   12s: *() for the made-up partition of an empty window (SPL's trigger thread)
    window = SlidingWindow(T8, T2).build()
    assert trace(window.insert(tup(1))) == [
        "initial_full []",
        "before_insert [1]",
        "after_insert [1]",
    ]
    assert trace(window.advance_to(3_000)) == ["trigger [1]"]
    assert trace(window.insert(tup(2))) == ["before_insert [2]", "after_insert [2]"]
    events = window.advance_to(12_000)
    assert trace(events) == [
        "trigger [1, 2]",
        "trigger [1, 2]",
        "trigger [1, 2]",
        "before_evict [1]",
        "after_evict [1]",
        "trigger [2]",
        "before_evict [2]",
        "after_evict [2]",
        "trigger []",
    ]
    assert [e.time_ms for e in events] == [4000, 6000] + [8000] * 3 + [10000] + [11000] * 2 + [
        12000
    ]
    assert window.partitions() == ()


@pytest.mark.parametrize(
    ("evict", "trigger"),
    [(Punct(), Count(2)), (Count(2), Punct()), (Punct(), Punct())],
)
def test_sliding_windows_refuse_punctuation_policies(evict: object, trigger: object) -> None:
    with pytest.raises(ValueError, match="sliding window cannot have a punctuation-based"):
        SlidingWindow(evict, trigger)  # type: ignore[arg-type]


def test_tumbling_windows_have_no_trigger_events() -> None:
    window = TumblingWindow(Count(1)).build()
    kinds = {e.kind.value for e in window.insert(tup(1))}
    assert kinds == {"before_insert", "after_insert", "before_flush", "after_flush"}
