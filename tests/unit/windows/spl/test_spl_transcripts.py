"""The sequences written in the SPL windowing seed (001), replayed as transcripts.

The seed draws a window newest first, one state per arriving tuple; ``*`` marks a trigger.
"""

from __future__ import annotations

from typing import Any

from trending.windows.spl import (
    Count,
    Delta,
    EventKind,
    Punct,
    SlidingWindow,
    Time,
    TumblingWindow,
    WindowEvent,
)

from .helpers import chain, insert_all, tup, vals

# Data Items with Partitions: 1a 2b 3a 4b 5b, 6b, 7a, 8a, 9b, 10b, 11a, 13a
PARTITIONED_ITEMS = [
    (1, "a"),
    (2, "b"),
    (3, "a"),
    (4, "b"),
    (5, "b"),
    (6, "b"),
    (7, "a"),
    (8, "a"),
    (9, "b"),
    (10, "b"),
    (11, "a"),
    (13, "a"),
]


def test_tumbling_count_window() -> None:
    # Tumbling window: () -> (1) -> (2, 1) -> (3, 2, 1) -> (4, 3, 2, 1) -> () -> (5) -> (6, 5)
    window = TumblingWindow(Count(4)).build()
    events = insert_all(window, [1, 2, 3, 4, 5, 6])
    assert (
        chain(events) == "() -> (1) -> (2, 1) -> (3, 2, 1) -> (4, 3, 2, 1) -> () -> (5) -> (6, 5)"
    )
    assert vals(window.content()) == [5, 6]


def test_sliding_count_window() -> None:
    # Sliding: () -> (1) -> (2, 1) -> (3, 2, 1) -> (4, 3, 2, 1) -> (5, 4, 3, 2) -> (6, 5, 4, 3)
    window = SlidingWindow(Count(4), Count(100)).build()
    events = insert_all(window, [1, 2, 3, 4, 5, 6])
    expected = "() -> (1) -> (2, 1) -> (3, 2, 1) -> (4, 3, 2, 1) -> (5, 4, 3, 2) -> (6, 5, 4, 3)"
    assert chain(events) == expected
    assert vals(window.content()) == [3, 4, 5, 6]


def test_sliding_count_window_with_count_trigger_marks() -> None:
    # trigger count(2): () -> (1) -> *(2, 1) -> (3, 2, 1) -> *(4, 3, 2, 1) -> (5, 4, 3, 2)
    #                   -> *(6, 5, 4, 3)
    window = SlidingWindow(Count(4), Count(2)).build()
    events = insert_all(window, [1, 2, 3, 4, 5, 6])
    assert chain(events) == (
        "() -> (1) -> *(2, 1) -> (3, 2, 1) -> *(4, 3, 2, 1) -> (5, 4, 3, 2) -> *(6, 5, 4, 3)"
    )
    triggers = [vals(e.tuples) for e in events if e.kind is EventKind.TRIGGER]
    assert triggers == [[1, 2], [1, 2, 3, 4], [3, 4, 5, 6]]


def _insert_partitioned(window: Any) -> list[WindowEvent]:
    events: list[WindowEvent] = []
    for v, p in PARTITIONED_ITEMS:
        events += window.insert(tup(v, p=p), partition=p)
    return events


def test_partitioned_tumbling_window() -> None:
    # a: () -> (1) -> (3, 1) -> (7, 3, 1) -> (8, 7, 3, 1) -> () -> (11) -> (13, 11)
    # b: () -> (2) -> (4, 2) -> (5, 4, 2) -> (6, 5, 4, 2) -> () -> (9) -> (10, 9)
    window = TumblingWindow(Count(4)).build()
    events = _insert_partitioned(window)
    assert (
        chain(events, "a")
        == "() -> (1) -> (3, 1) -> (7, 3, 1) -> (8, 7, 3, 1) -> () -> (11) -> (13, 11)"
    )
    assert (
        chain(events, "b")
        == "() -> (2) -> (4, 2) -> (5, 4, 2) -> (6, 5, 4, 2) -> () -> (9) -> (10, 9)"
    )
    flushes = [(e.partition, vals(e.tuples)) for e in events if e.kind is EventKind.BEFORE_FLUSH]
    assert flushes == [("b", [2, 4, 5, 6]), ("a", [1, 3, 7, 8])]


def test_partitioned_sliding_window() -> None:
    # a: () -> (1) -> (3, 1) -> (7, 3, 1) -> (8, 7, 3, 1) -> (11, 8, 7, 3) -> (13, 11, 8, 7)
    # b: () -> (2) -> (4, 2) -> (5, 4, 2) -> (6, 5, 4, 2) -> (9, 6, 5, 4) -> (10, 9, 6, 5)
    window = SlidingWindow(Count(4), Count(100)).build()
    events = _insert_partitioned(window)
    assert chain(events, "a") == (
        "() -> (1) -> (3, 1) -> (7, 3, 1) -> (8, 7, 3, 1) -> (11, 8, 7, 3) -> (13, 11, 8, 7)"
    )
    assert chain(events, "b") == (
        "() -> (2) -> (4, 2) -> (5, 4, 2) -> (6, 5, 4, 2) -> (9, 6, 5, 4) -> (10, 9, 6, 5)"
    )
    assert window.partitions() == ("a", "b")


def test_tumbling_subwindows_are_removed_on_flush_sliding_ones_stay() -> None:
    # "For tumbling windows, the subwindows ... are removed when the windows are flushed";
    # a count-based sliding window "can never become empty".
    tumbling = TumblingWindow(Count(2)).build()
    sliding = SlidingWindow(Count(2), Count(1)).build()
    for window in (tumbling, sliding):
        window.insert(tup(1), "a")
        window.insert(tup(2), "a")
    assert tumbling.partitions() == ()
    assert sliding.partitions() == ("a",)


def test_the_seeds_example_configurations_build() -> None:
    # CountWindowPolicy pC5(5), pC2(2); PunctWindowPolicy pP; DeltaWindowPolicy pDage2(2),
    # pDage0(0), pDtime2(2.0); TimeWindowPolicy pT8(8.0), pT2(2.0)
    pc5, pc2, pp = Count(5), Count(2), Punct()
    pdage2, pdage0, pdtime2 = Delta("age", 2), Delta("age", 0), Delta("time", 2.0)
    pt8, pt2 = Time.seconds(8.0), Time.seconds(2.0)
    tumbling = [TumblingWindow(p) for p in (pc5, pp, pdage2, pt8, pdtime2)]
    sliding = [
        SlidingWindow(pc5, pc2),
        SlidingWindow(pc5, pdage2),
        SlidingWindow(pdage2, pc5),
        SlidingWindow(pdage2, pdage0),
        SlidingWindow(pdage2, pt2),
        SlidingWindow(pt8, pc5),
        SlidingWindow(pt8, pdage2),
        SlidingWindow(pt8, pt2),
    ]
    for config in [*tumbling, *sliding]:
        window = config.build()
        events = window.insert({"v": 1, "age": 1, "time": 0.5})
        # SPL deems a time-evicted sliding window full from its first insertion
        full = ["initial_full"] if config in sliding[5:] else []
        assert [e.kind.value for e in events] == [*full, "before_insert", "after_insert"]
    assert pt8.period_ms == 8000


def test_sensor_query_popular_readings_on_eviction() -> None:
    # SensorQuery: keep the last n readings (sliding count(n), trigger count(1)); a query
    # matches readings within its distance; a reading matched >= threshold times is output
    # on PopReadings when it is evicted (beforeTupleEvictionEvent).
    size, threshold = 3, 2
    window = SlidingWindow(Count(size), Count(1)).build()
    matches: dict[int, int] = {}
    popular: list[int] = []

    def reading(sensor: int, x: float) -> None:
        for event in window.insert({"sensorId": sensor, "x": x}):
            if event.kind is EventKind.BEFORE_EVICT:
                evicted = event.tuples[0]["sensorId"]
                if matches.pop(evicted, 0) >= threshold:
                    popular.append(evicted)

    def query(x: float, distance: float) -> list[int]:
        found = [r["sensorId"] for r in window.content() if abs(r["x"] - x) <= distance]
        for sensor in found:
            matches[sensor] = matches.get(sensor, 0) + 1
        return found

    reading(1, 0.10)
    reading(2, 0.50)
    assert query(0.12, 0.05) == [1]
    reading(3, 0.90)
    assert query(0.11, 0.05) == [1]
    assert query(0.52, 0.05) == [2]
    reading(4, 0.30)  # evicts sensor 1, matched twice: popular
    reading(5, 0.70)  # evicts sensor 2, matched once
    assert popular == [1]
    assert [r["sensorId"] for r in window.content()] == [3, 4, 5]
