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
    Punct,
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
        "partition_evict b [2]",
    ]
    assert window.partitions() == ("a", "c")


def test_tuple_count_lru_deletes_until_at_most_t_tuples() -> None:
    # tupleCount(3):  a a b b  -> 4 tuples; deleting a (2 tuples) leaves 2 <= 3
    window = sliding(PartitionEviction(TupleCount(3))).build()
    for v, p in [(1, "a"), (2, "a"), (3, "b")]:
        assert trace(window.insert(tup(v), p))[-1].startswith("after_insert")
    events = trace(window.insert(tup(4), "b"))
    assert events[2:] == ["partition_evict a [1, 2]"]
    assert window.partitions() == ("b",)


def test_tuple_count_may_delete_the_partition_just_inserted_into() -> None:
    window = sliding(PartitionEviction(TupleCount(2))).build()
    window.insert(tup(1), "a")
    window.insert(tup(2), "b")
    window.insert(tup(3), "b")
    assert window.partitions() == ("b",)
    events = trace(window.insert(tup(4), "b"))
    assert events[2:] == ["partition_evict b [2, 3, 4]"]
    assert window.partitions() == ()


def test_partition_age_is_checked_before_an_insertion_not_on_the_clock() -> None:
    # partitionAge(5):  0s: a   2s: b   4s: a   then the clock alone deletes nothing
    window = sliding(PartitionEviction(PartitionAge(5_000))).build()
    window.insert(tup(1), "a")
    window.advance_to(2_000)
    window.insert(tup(2), "b")
    window.advance_to(4_000)
    window.insert(tup(3), "a")
    assert window.advance_to(7_000) == []
    # 7s: b is exactly 5 s old, not older: the check (L + age < now) is not met
    assert trace(window.insert(tup(4), "c")) == ["before_insert c [4]", "after_insert c [4]"]
    # 9s: b (2s) is older than 5 s, so LRU deletes every partition with L + age <= now: b,
    # and a (4s), which is exactly 5 s old; c (7s) stays. All before c's insertion.
    window.advance_to(9_000)
    assert trace(window.insert(tup(5), "c")) == [
        "partition_evict b [2]",
        "partition_evict a [1, 3]",
        "before_insert c [5]",
        "after_insert c [5]",
    ]
    assert window.partitions() == ("c",)


def test_partition_age_deletes_a_stale_partition_before_it_receives_a_tuple() -> None:
    # inserting renews a partition's age, so the runtime checks age before the insertion:
    # a stale partition loses its old tuples and starts afresh with the new one
    window = SlidingWindow(Count(2), Count(1), PartitionEviction(PartitionAge(1_000))).build()
    window.insert(tup(1), "a")
    window.insert(tup(2), "a")
    window.advance_to(1_001)
    assert trace(window.insert(tup(3), "a")) == [
        "partition_evict a [1, 2]",
        "before_insert a [3]",
        "after_insert a [3]",
        "trigger a [3]",
    ]


def test_partition_age_on_a_tumbling_window_with_many_old_partitions() -> None:
    window = TumblingWindow(Count(10), PartitionEviction(PartitionAge.seconds(1.0))).build()
    for key in "xyz":
        window.insert(tup(1), key)
    assert window.advance_to(1_500) == []
    assert trace(window.insert(tup(2), "y")) == [
        "partition_evict x [1]",
        "partition_evict y [1]",
        "partition_evict z [1]",
        "before_insert y [2]",
        "after_insert y [2]",
    ]


def test_partition_age_is_checked_before_a_punctuation_flushes() -> None:
    window = TumblingWindow(Punct(), PartitionEviction(PartitionAge(1_000))).build()
    window.insert(tup(1), "old")
    window.advance_to(1_500)
    window.insert(tup(2), "new")  # deletes "old" first
    window.advance_to(2_000)
    assert trace(window.punct()) == ["before_flush new [2]", "after_flush new []"]
    window.insert(tup(3), "x")
    window.advance_to(3_500)
    # the only partition is stale: the check deletes it, and nothing is left to flush
    assert trace(window.punct()) == ["partition_evict x [3]"]
    assert trace(window.punct()) == ["empty_punct []"]


def test_partition_age_is_checked_on_each_time_trigger_tick() -> None:
    # time trigger 1s, partitionAge(1.5): a at 0 is older than 1.5 s at the 2s tick; b at
    # 0.6 s is not (0.6 + 1.5 > 2)
    window = SlidingWindow(Count(5), Time(1_000), PartitionEviction(PartitionAge(1_500))).build()
    window.insert(tup(1), "a")
    window.advance_to(600)
    window.insert(tup(2), "b")
    assert trace(window.advance_to(2_000)) == [
        "trigger a [1]",
        "trigger b [2]",
        "partition_evict a [1]",
        "trigger b [2]",
    ]


def test_the_seeds_operator_defined_selector_never_sees_time_emptied_partitions() -> None:
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

    # time(1) eviction empties partitions e1 and e2 at 1s and so deletes them (as the SPL
    # runtime): they do not count toward partitionCount(2), and the selector never sees them
    window = sliding(PartitionEviction(PartitionCount(2), select), Time(1_000)).build()
    for v, key in [(1, "e1"), (2, "e2")]:
        window.insert(tup(v), key)
    window.advance_to(1_000)
    assert window.partitions() == ()
    window.insert(tup(3), "a")
    assert calls == []
    window.insert(tup(4), "b")
    events = trace(window.insert(tup(5), "c"))
    assert events[:3] == ["initial_full c []", "before_insert c [5]", "after_insert c [5]"]
    assert events[3:] == ["partition_select a [3]", "partition_evict a [3]"]
    assert window.partitions() == ("b", "c")
    assert calls == [["a", "b", "c"]]


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
    # LRU selection (no selection event):  partitionCount(1), selector picks nothing:  a b ->
    # LRU deletes a
    window = sliding(PartitionEviction(PartitionCount(1), lambda infos: [])).build()
    window.insert(tup(1), "a")
    assert trace(window.insert(tup(2), "b")) == [
        "before_insert b [2]",
        "after_insert b [2]",
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
