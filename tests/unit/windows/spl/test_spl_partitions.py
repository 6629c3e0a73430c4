"""Partition eviction: partitionAge, partitionCount, tupleCount; LRU and operator-defined."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from trending.windows.spl import (
    Count,
    PartitionAge,
    PartitionCount,
    PartitionEviction,
    PartitionInfo,
    PartitionKey,
    SlidingWindow,
    Time,
    TumblingWindow,
    TupleCount,
)

from .helpers import trace, tup


def sliding(eviction: PartitionEviction, evict: Count | Time | None = None) -> SlidingWindow:
    return SlidingWindow(evict or Count(10), Count(100), eviction)


def test_partition_count_lru_deletes_the_least_recently_inserted_partition() -> None:
    # partitionCount(2):  a b a c  -> c makes 3 partitions; b is least recently used
    window = sliding(PartitionEviction(PartitionCount(2))).build()
    for v, p in [(1, "a"), (2, "b"), (3, "a")]:
        window.insert(tup(v), p)
    assert trace(window.insert(tup(4), "c")) == [
        "before_insert c [4]",
        "after_insert c [4]",
        "partition_select b [2]",
        "partition_evict b [2]",
    ]
    assert window.partitions() == ("a", "c")


def test_tuple_count_lru_deletes_until_at_most_t_tuples() -> None:
    # tupleCount(3):  a a b b  -> 4 tuples; deleting a (2 tuples) leaves 2 <= 3
    window = sliding(PartitionEviction(TupleCount(3))).build()
    for v, p in [(1, "a"), (2, "a"), (3, "b")]:
        assert trace(window.insert(tup(v), p))[-1].startswith("after_insert")
    events = trace(window.insert(tup(4), "b"))
    assert events[2:] == ["partition_select a [1, 2]", "partition_evict a [1, 2]"]
    assert window.partitions() == ("b",)


def test_tuple_count_may_delete_the_partition_just_inserted_into() -> None:
    window = sliding(PartitionEviction(TupleCount(2))).build()
    window.insert(tup(1), "a")
    window.insert(tup(2), "b")
    window.insert(tup(3), "b")
    assert window.partitions() == ("b",)
    events = trace(window.insert(tup(4), "b"))
    assert events[2:] == ["partition_select b [2, 3, 4]", "partition_evict b [2, 3, 4]"]
    assert window.partitions() == ()


def test_partition_age_deletes_partitions_idle_for_n_seconds_on_the_clock() -> None:
    # partitionAge(5):  0s: a   2s: b   4s: a   -> b idle from 2s is deleted at 7s,
    #                                              a idle from 4s at 9s
    window = sliding(PartitionEviction(PartitionAge(5_000))).build()
    window.insert(tup(1), "a")
    window.advance_to(2_000)
    window.insert(tup(2), "b")
    window.advance_to(4_000)
    window.insert(tup(3), "a")
    assert window.advance_to(6_999) == []
    events = window.advance_to(20_000)
    assert trace(events) == [
        "partition_select b [2]",
        "partition_evict b [2]",
        "partition_select a [1, 3]",
        "partition_evict a [1, 3]",
    ]
    assert [e.time_ms for e in events] == [7_000, 7_000, 9_000, 9_000]


def test_partition_age_on_a_tumbling_window_with_many_old_partitions() -> None:
    window = TumblingWindow(Count(10), PartitionEviction(PartitionAge.seconds(1.0))).build()
    for key in "xyz":
        window.insert(tup(1), key)
    events = window.advance_to(1_000)
    assert trace(events) == [
        "partition_select x [1]",
        "partition_select y [1]",
        "partition_select z [1]",
        "partition_evict x [1]",
        "partition_evict y [1]",
        "partition_evict z [1]",
    ]


def test_the_seeds_operator_defined_selector_empty_partitions_then_one_more() -> None:
    # The seed's onWindowPartitionEvictionSelection: mark all the least recently used empty
    # partitions, then one non-empty partition; it is re-invoked while the limit is exceeded.
    calls: list[list[PartitionKey]] = []

    def select(partitions: Sequence[PartitionInfo]) -> list[PartitionKey]:
        calls.append([info.key for info in partitions])
        chosen = []
        for info in partitions:
            chosen.append(info.key)
            if info.size:
                break
        return chosen

    # time(1) eviction empties partitions e1 and e2 at 1s; c then exceeds partitionCount(4)
    window = sliding(PartitionEviction(PartitionCount(4), select), Time(1_000)).build()
    for v, key in [(1, "e1"), (2, "e2")]:
        window.insert(tup(v), key)
    window.advance_to(1_000)
    window.insert(tup(3), "a")
    window.insert(tup(4), "b")
    events = trace(window.insert(tup(5), "c"))
    assert events[:3] == ["initial_full c []", "before_insert c [5]", "after_insert c [5]"]
    assert events[3:] == [
        "partition_select e1 []",
        "partition_select e2 []",
        "partition_select a [3]",
        "partition_evict e1 []",
        "partition_evict e2 []",
        "partition_evict a [3]",
    ]
    assert window.partitions() == ("b", "c")
    assert calls[-1] == ["e1", "e2", "a", "b", "c"]


def test_a_selector_is_asked_once_per_insertion_check() -> None:
    # tupleCount(2), selector = oldest one:  a b c -> asked over 3 partitions, deletes a;
    #   c again -> asked over 2, deletes b
    asked: list[int] = []

    def oldest_one(partitions: Sequence[PartitionInfo]) -> list[PartitionKey]:
        asked.append(len(partitions))
        return [partitions[0].key]

    window = sliding(PartitionEviction(TupleCount(2), oldest_one)).build()
    for v, key in [(1, "a"), (2, "b")]:
        window.insert(tup(v), key)
    window.insert(tup(3), "c")
    window.insert(tup(4), "c")
    assert window.partitions() == ("c",)
    assert asked == [3, 2]


def test_lru_completes_what_a_selector_left_over_the_limit() -> None:
    # SPL asks the operator's selector once; if the limit is still exceeded, it forces its
    # LRU selection:  partitionCount(1), selector picks nothing:  a b -> LRU deletes a
    window = sliding(PartitionEviction(PartitionCount(1), lambda infos: [])).build()
    window.insert(tup(1), "a")
    assert trace(window.insert(tup(2), "b")) == [
        "before_insert b [2]",
        "after_insert b [2]",
        "partition_select a [1]",
        "partition_evict a [1]",
    ]
    assert window.partitions() == ("b",)


def test_a_selector_returning_an_unknown_partition_is_an_error() -> None:
    window = sliding(PartitionEviction(PartitionCount(1), lambda infos: ["nope"])).build()
    window.insert(tup(1), "a")
    with pytest.raises(ValueError, match="unknown partitions"):
        window.insert(tup(2), "b")


def test_the_selector_sees_partitions_least_recently_used_first() -> None:
    seen: list[list[tuple[PartitionKey, int, int]]] = []

    def record(partitions: Sequence[PartitionInfo]) -> list[PartitionKey]:
        seen.append([(i.key, i.size, i.last_insert_ms) for i in partitions])
        return [partitions[0].key]

    window = sliding(PartitionEviction(PartitionCount(2), record)).build()
    window.insert(tup(1), "a")
    window.advance_to(1_000)
    window.insert(tup(2), "b")
    window.advance_to(2_000)
    window.insert(tup(3), "a")
    window.insert(tup(4), "c")
    assert seen == [[("b", 1, 1_000), ("a", 2, 2_000), ("c", 1, 2_000)]]


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: PartitionAge(0), "partition age must be a positive integer"),
        (lambda: PartitionCount(-1), "partition count must be an integer >= 0"),
        (lambda: TupleCount(True), "tuple count must be an integer >= 0"),
        (lambda: PartitionEviction("lru"), "not a partition eviction limit"),
    ],
)
def test_bad_partition_eviction_configs(make: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make()  # type: ignore[operator]
