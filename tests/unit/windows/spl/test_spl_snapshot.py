"""State in and out as a plain snapshot: snapshot -> JSON -> restore -> identical events."""

from __future__ import annotations

import json
from typing import Any

import pytest

from trending.windows.spl import (
    Advance,
    Count,
    Delta,
    Input,
    Insert,
    PartitionAge,
    PartitionCount,
    PartitionEviction,
    Punct,
    Punctuation,
    SlidingWindow,
    Time,
    TumblingWindow,
    TupleCount,
    WindowEvent,
    summarizers,
)

CONFIGS: list[TumblingWindow | SlidingWindow] = [
    TumblingWindow(Count(3)),
    TumblingWindow(Delta("age", 2), PartitionEviction(PartitionCount(2))),
    TumblingWindow(Time(3_000), summarizers={"sum": summarizers.Sum("age")}, keep_tuples=False),
    TumblingWindow(Punct(), PartitionEviction(TupleCount(3))),
    SlidingWindow(Count(3), Count(2), PartitionEviction(PartitionAge(4_000))),
    SlidingWindow(Delta("age", 2), Delta("age", 1)),
    SlidingWindow(Time(5_000), Time(2_000), PartitionEviction(PartitionCount(2))),
    SlidingWindow(Time(4_000), Count(2)),
]


def script() -> list[Input]:
    items: list[Input] = []
    for i in range(24):
        key = "abc"[i * 7 % 3] if i % 4 else "a"
        items.append(Insert({"v": i, "age": i // 2, "p": key}, key))
        if i % 5 == 4:
            items.append(Advance(i * 700))
        if i % 6 == 5:
            items.append(Punctuation())
    items.append(Advance(60_000))
    return items


def as_data(events: list[WindowEvent]) -> list[tuple[dict[str, Any], int]]:
    return [(e.to_json(), e.time_ms) for e in events]


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: type(c).__name__)
def test_restoring_a_snapshot_at_any_point_continues_identically(
    config: TumblingWindow | SlidingWindow,
) -> None:
    items = script()
    straight = as_data(list(config.build().run(items)))
    for cut in range(0, len(items) + 1, 3):
        first = config.build()
        events = list(first.run(items[:cut]))
        snapshot = json.loads(json.dumps(first.snapshot()))
        second = config.build(snapshot)
        events += list(second.run(items[cut:]))
        assert as_data(events) == straight, f"cut at {cut}"


def test_a_snapshot_is_plain_json_and_does_not_change_with_the_window() -> None:
    window = SlidingWindow(Count(2), Count(1)).build()
    window.insert({"v": 1}, "a")
    snapshot = window.snapshot()
    frozen = json.dumps(snapshot)
    window.insert({"v": 2}, "a")
    window.insert({"v": 3}, "b")
    assert json.dumps(snapshot) == frozen
    assert snapshot["kind"] == "sliding"
    assert snapshot["partitions"][0]["key"] == "a"


def test_a_snapshot_of_another_kind_or_version_is_refused() -> None:
    snapshot = TumblingWindow(Count(2)).build().snapshot()
    with pytest.raises(ValueError, match="'tumbling' window given to a 'sliding'"):
        SlidingWindow(Count(2), Count(1)).build(snapshot)
    with pytest.raises(ValueError, match="version"):
        TumblingWindow(Count(2)).build({**snapshot, "version": 99})
    with pytest.raises(ValueError, match="malformed"):
        TumblingWindow(Count(2)).build({**snapshot, "partitions": [{"key": 1}]})
