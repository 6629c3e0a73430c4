"""Where the seed is silent, the SPL runtime decides: one test per rule of the issue.

Each test draws its timeline in the seed's notation: ``v`` is a tuple, ``v@age`` a tuple with
its delta attribute, ``x:p`` a tuple of partition ``p``, ``*`` a trigger.
"""

from __future__ import annotations

from typing import Any

from trending.windows.spl import (
    Count,
    Delta,
    PartitionCount,
    PartitionEviction,
    Punct,
    SlidingWindow,
    Time,
    TumblingWindow,
    TupleCount,
    WindowLogic,
)

from .helpers import trace, tup

AGE2 = Delta("age", 2)


def aged(v: int, age: float, **more: Any) -> dict[str, Any]:
    return tup(v, age=age, **more)


def feed(window: WindowLogic, *items: tuple[int, str]) -> list[list[str]]:
    """Insert ``(v, partition)`` pairs; the trace of each insertion."""
    return [trace(window.insert(tup(v), p)) for v, p in items]


# --- delta policies -----------------------------------------------------------------------


def test_delta_trigger_compares_with_the_first_tuple_then_the_last_trigger_strictly() -> None:
    # delta(age, 2) trigger:
    #   1@1        ref = 1 (the partition's first tuple)
    #   2@3        3 - 1 = 2, not > 2: no trigger
    #   3@4        4 - 1 = 3 > 2: *(1, 2) before 3 goes in; ref = 4
    #   4@6        6 - 4 = 2: no trigger
    #   5@7        7 - 4 = 3: *(1, 2, 3, 4); ref = 7
    window = SlidingWindow(Count(10), AGE2).build()
    got = [
        trace(window.insert(aged(v, age))) for v, age in [(1, 1), (2, 3), (3, 4), (4, 6), (5, 7)]
    ]
    assert [t[0] for t in got] == [
        "before_insert [1]",
        "before_insert [2]",
        "trigger [1, 2]",
        "before_insert [4]",
        "trigger [1, 2, 3, 4]",
    ]
    assert all(len(t) == 2 for t in (got[0], got[1], got[3]))


def test_a_value_below_the_delta_trigger_reference_never_triggers_nor_moves_it() -> None:
    # delta(age, 2) trigger:  1@5 (ref 5)   2@1   3@-10   4@7 (7 - 5 = 2)   5@8 -> *(1..4)
    window = SlidingWindow(Count(10), AGE2).build()
    got = [trace(window.insert(aged(v, a))) for v, a in [(1, 5), (2, 1), (3, -10), (4, 7)]]
    assert all("trigger" not in " ".join(t) for t in got)
    assert trace(window.insert(aged(5, 8)))[0] == "trigger [1, 2, 3, 4]"


def test_a_value_below_the_oldest_never_flushes_a_tumbling_delta_window() -> None:
    # tumbling delta(age, 2):  1@5   2@1   3@0   4@7 (7 - 5 = 2, not > 2)
    #                          5@8 -> 8 - 5 = 3 > 2: flush (1, 2, 3, 4), then 5 goes in
    window = TumblingWindow(AGE2).build()
    for v, age in [(1, 5), (2, 1), (3, 0), (4, 7)]:
        assert trace(window.insert(aged(v, age))) == [f"before_insert [{v}]", f"after_insert [{v}]"]
    assert trace(window.insert(aged(5, 8))) == [
        "before_flush [1, 2, 3, 4]",
        "after_flush []",
        "before_insert [5]",
        "after_insert [5]",
    ]


def test_sliding_delta_eviction_is_strict_and_never_evicts_for_a_lower_value() -> None:
    # sliding delta(age, 2):  1@1   2@3 (3 - 1 = 2: kept)   3@5 -> evicts 1 (5 - 1 = 4)
    #   4@0: below every tuple, evicts nothing   5@4: evicts 4@0 only (4 - 0 = 4), not 2@3
    window = SlidingWindow(AGE2, Count(100)).build()
    got = [trace(window.insert(aged(v, a))) for v, a in [(1, 1), (2, 3), (3, 5), (4, 0), (5, 4)]]
    assert got[1] == ["before_insert [2]", "after_insert [2]"]
    assert got[2] == [
        "initial_full [1, 2]",
        "before_evict [1]",
        "after_evict [1]",
        "before_insert [3]",
        "after_insert [3]",
    ]
    assert got[3] == ["before_insert [4]", "after_insert [4]"]
    assert got[4][:2] == ["before_evict [4]", "after_evict [4]"]
    assert [t["v"] for t in window.content()] == [2, 3, 5]


# --- default trigger and initial full ------------------------------------------------------


def test_a_sliding_window_without_trigger_policy_triggers_on_every_tuple() -> None:
    # count(2), no trigger:  *(1)  *(2, 1)  *(3, 2)
    window = SlidingWindow(Count(2)).build()
    assert [trace(window.insert(tup(v)))[-1] for v in (1, 2, 3)] == [
        "trigger [1]",
        "trigger [1, 2]",
        "trigger [2, 3]",
    ]


def test_initial_full_count_eviction_fires_once_before_that_insertions_trigger() -> None:
    # count(2), count(1):  1 -> *(1)   2 -> full, *(2, 1)   3 -> evict 1, *(3, 2)
    window = SlidingWindow(Count(2), Count(1)).build()
    assert trace(window.insert(tup(1)))[-1] == "trigger [1]"
    assert trace(window.insert(tup(2)))[-2:] == ["initial_full [1, 2]", "trigger [1, 2]"]
    assert "initial_full" not in " ".join(trace(window.insert(tup(3))))


def test_initial_full_delta_eviction_fires_just_before_the_first_eviction() -> None:
    # delta(age, 2):  1@1 2@2 3@3   4@4 -> full (1, 2, 3), evict 1   5@5 -> evict 2 only
    window = SlidingWindow(AGE2, Count(100)).build()
    for v in (1, 2, 3):
        window.insert(aged(v, v))
    assert trace(window.insert(aged(4, 4)))[:2] == ["initial_full [1, 2, 3]", "before_evict [1]"]
    assert trace(window.insert(aged(5, 5)))[0] == "before_evict [2]"


# --- when partition eviction is checked ----------------------------------------------------


def test_partition_eviction_comes_after_insert_before_initial_full_and_trigger() -> None:
    # sliding count(2), count(2), tupleCount(2):
    #   1:a  2:b  3:b -> 3 tuples > 2: LRU evicts a, then b is full and triggers
    window = SlidingWindow(Count(2), Count(2), PartitionEviction(TupleCount(2))).build()
    got = feed(window, (1, "a"), (2, "b"), (3, "b"))
    assert got[2] == [
        "before_insert b [3]",
        "after_insert b [3]",
        "partition_evict a [1]",
        "initial_full b [2, 3]",
        "trigger b [2, 3]",
    ]


def test_partition_eviction_comes_before_the_tumbling_count_flush() -> None:
    # tumbling count(2), tupleCount(2):  1:a  2:b  3:b -> evict a, then flush b (2, 3)
    window = TumblingWindow(Count(2), PartitionEviction(TupleCount(2))).build()
    got = feed(window, (1, "a"), (2, "b"), (3, "b"))
    assert got[2] == [
        "before_insert b [3]",
        "after_insert b [3]",
        "partition_evict a [1]",
        "before_flush b [2, 3]",
        "after_flush b []",
    ]


def test_lru_order_is_last_insertion_the_current_partition_included() -> None:
    # partitionCount(2):  1:a  2:b  3:a  4:c -> b is the least recently inserted-into
    #   5:b (new again) -> a (last at 3) goes;  order now c(4) b(5)
    window = SlidingWindow(Count(10), Count(100), PartitionEviction(PartitionCount(2))).build()
    got = feed(window, (1, "a"), (2, "b"), (3, "a"), (4, "c"), (5, "b"))
    assert got[3][2:] == ["partition_evict b [2]"]
    assert got[4][2:] == ["partition_evict a [1, 3]"]
    assert window.partitions() == ("c", "b")


def test_partition_count_zero_evicts_the_partition_just_inserted_into() -> None:
    # partitionCount(0), count(1) trigger:  1:a -> inserted, then evicted: no full, no trigger
    window = SlidingWindow(Count(1), Count(1), PartitionEviction(PartitionCount(0))).build()
    assert feed(window, (1, "a")) == [
        [
            "before_insert a [1]",
            "after_insert a [1]",
            "partition_evict a [1]",
        ]
    ]
    assert window.partitions() == ()


def test_tuple_count_evicts_oldest_up_to_the_first_partition_holding_tuples() -> None:
    # sliding time(1 s), tupleCount(2):
    #   0 s: 1:e1 2:e2        1 s: both evicted; time eviction deletes the emptied e1, e2
    #   1 s: 3:a 4:b 5:b      -> 3 tuples: LRU takes a (the oldest, holding tuples), then
    #                            2 <= 2 stops
    window = SlidingWindow(Time(1_000), Count(100), PartitionEviction(TupleCount(2))).build()
    feed(window, (1, "e1"), (2, "e2"))
    window.advance_to(1_000)
    assert window.partitions() == ()
    got = feed(window, (3, "a"), (4, "b"), (5, "b"))
    assert got[2][2:] == ["partition_evict a [3]"]
    assert window.partitions() == ("b",)


def test_tuple_count_evicts_one_partition_alone_holding_more_than_t() -> None:
    # tupleCount(2):  1:a 2:a 3:a -> a holds 3 > 2 and is the oldest: evicted
    window = SlidingWindow(Count(10), Count(100), PartitionEviction(TupleCount(2))).build()
    got = feed(window, (1, "a"), (2, "a"), (3, "a"))
    assert got[2][2:] == ["partition_evict a [1, 2, 3]"]


def test_a_tumbling_count_window_whose_partition_was_just_evicted_does_not_flush() -> None:
    # tumbling count(3), tupleCount(2):  1:a 2:a 3:a -> a evicted, so no flush of (1, 2, 3)
    window = TumblingWindow(Count(3), PartitionEviction(TupleCount(2))).build()
    got = feed(window, (1, "a"), (2, "a"), (3, "a"))
    assert got[2] == [
        "before_insert a [3]",
        "after_insert a [3]",
        "partition_evict a [1, 2, 3]",
    ]


def test_an_evicted_partition_starts_afresh() -> None:
    # sliding count(2), count(2), partitionCount(1):
    #   1:a 2:a -> full, *(1, 2)   3:a -> 1 since the trigger   4:b -> a evicted
    #   5:a -> fresh: 1 since trigger (not 2), not full   6:a -> full again, *(5, 6)
    window = SlidingWindow(Count(2), Count(2), PartitionEviction(PartitionCount(1))).build()
    got = feed(window, (1, "a"), (2, "a"), (3, "a"), (4, "b"), (5, "a"), (6, "a"))
    assert got[4] == [
        "before_insert a [5]",
        "after_insert a [5]",
        "partition_evict b [4]",
    ]
    assert got[5] == [
        "before_insert a [6]",
        "after_insert a [6]",
        "initial_full a [5, 6]",
        "trigger a [5, 6]",
    ]


def test_an_evicted_partition_forgets_its_delta_trigger_reference() -> None:
    # delta(age, 2) trigger, partitionCount(1):  1@1:a  2@1:b (a evicted)
    #   3@4:a -> fresh reference 4 (not 1): no trigger
    window = SlidingWindow(Count(5), AGE2, PartitionEviction(PartitionCount(1))).build()
    window.insert(aged(1, 1), "a")
    window.insert(aged(2, 1), "b")
    assert "trigger" not in " ".join(trace(window.insert(aged(3, 4), "a")))


def test_count_and_punct_flushes_delete_the_partition_so_it_does_not_count() -> None:
    # tumbling count(1), partitionCount(1):  1:a -> flushed, a gone   2:b -> nothing evicted
    # tumbling punct, partitionCount(1):     1:a  punct -> a gone       2:b -> nothing evicted
    counted = TumblingWindow(Count(1), PartitionEviction(PartitionCount(1))).build()
    punct = TumblingWindow(Punct(), PartitionEviction(PartitionCount(1))).build()
    feed(counted, (1, "a"))
    punct.insert(tup(1), "a")
    assert trace(punct.punct()) == ["before_flush a [1]", "after_flush a []"]
    for window in (counted, punct):
        assert window.partitions() == ()
        ((*inserted,),) = feed(window, (2, "b"))
        assert inserted[:2] == ["before_insert b [2]", "after_insert b [2]"]
        assert not any(line.startswith("partition_") for line in inserted)
