"""The bucketed state layout: key texts, a bucket's rows, the recorded number of buckets."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pytest
from pyspark.sql.types import (
    BooleanType,
    DecimalType,
    DoubleType,
    IntegerType,
    LongType,
    StringType,
    TimestampType,
)

from trending.spark.key_buckets import (
    BucketsChanged,
    BucketState,
    KeyCodec,
    LayoutChanged,
    timers_to,
)


class ListState:
    def __init__(self) -> None:
        self.rows: list[tuple[str, str]] = []
        self.calls = 0

    def exists(self) -> bool:
        self.calls += 1
        return bool(self.rows)

    def get(self) -> Any:
        self.calls += 1
        return iter(list(self.rows))

    def put(self, rows: list[tuple[str, str]]) -> None:
        self.calls += 1
        self.rows = list(rows)

    def clear(self) -> None:
        self.calls += 1
        self.rows = []


class Handle:
    def __init__(self, timers: set[int] | None = None) -> None:
        self.state = ListState()
        self.timers = set(timers or ())
        self.deleted: list[int] = []
        self.registered: list[int] = []

    def getListState(self, name: str, schema: Any) -> ListState:  # noqa: N802
        return self.state

    def listTimers(self) -> Any:  # noqa: N802
        return iter(sorted(self.timers))

    def deleteTimer(self, timer: int) -> None:  # noqa: N802
        self.timers.discard(timer)
        self.deleted.append(timer)

    def registerTimer(self, timer: int) -> None:  # noqa: N802
        self.timers.add(timer)
        self.registered.append(timer)


@pytest.mark.parametrize(
    ("kind", "widened", "plain"),
    [
        (LongType(), 5.0, 5),  # an integer column with a null in the batch arrives as floats
        (IntegerType(), 7, 7),
        (BooleanType(), 1, True),
        (DoubleType(), 2, 2.0),
        (StringType(), "a", "a"),
        (LongType(), float("nan"), None),
        (StringType(), None, None),
    ],
)
def test_a_key_reads_the_same_whatever_pandas_made_of_its_column(
    kind: Any, widened: Any, plain: Any
) -> None:
    codec = KeyCodec(kind)
    value = codec.normal(widened)
    assert value == plain and type(value) is type(plain)
    assert codec.text(value) == codec.text(plain)
    assert codec.value(codec.text(value)) == plain


def test_keys_of_other_types_go_and_come_back_whole() -> None:
    at = dt.datetime(2026, 1, 2, 3, 4, 5, 6000, tzinfo=dt.timezone.utc)
    for kind, value in [(TimestampType(), at), (DecimalType(10, 2), Decimal("1.50"))]:
        codec = KeyCodec(kind)
        text = codec.text(codec.normal(value))
        assert codec.value(text) == value
    assert KeyCodec(LongType()).text(1) != KeyCodec(StringType()).text("1")


def test_a_bucket_is_one_read_and_one_write_whatever_its_keys() -> None:
    handle = Handle()
    bucket = BucketState(handle, "keys", 8)  # type: ignore[arg-type]
    assert bucket.load() == {}
    entries = {f"j{n}": f'{{"n":{n}}}' for n in range(500)}
    handle.state.calls = 0
    bucket.save(entries)
    assert bucket.load() == entries
    assert handle.state.calls == 3  # put, exists, get
    bucket.save({})
    assert handle.state.rows == [] and bucket.load() == {}


def test_a_checkpoint_of_another_number_of_buckets_is_refused_naming_it() -> None:
    handle = Handle()
    BucketState(handle, "keys", 8).save({"j1": "{}"})  # type: ignore[arg-type]
    with pytest.raises(BucketsChanged, match="in 8 buckets, not 4: give buckets=8"):
        BucketState(handle, "keys", 4).load()  # type: ignore[arg-type]


def test_a_checkpoint_of_another_layout_is_refused_and_one_without_a_layout_is_the_first() -> None:
    handle = Handle()
    handle.state.rows = [("", '{"buckets":8}'), ("j1", "{}")]  # written before layouts were named
    assert BucketState(handle, "keys", 8).load() == {"j1": "{}"}  # type: ignore[arg-type]
    handle.state.rows = [("", '{"buckets":8,"layout":2}'), ("j1", "{}")]
    with pytest.raises(LayoutChanged, match=r"in layout 2 .* this version reads layout 1"):
        BucketState(handle, "keys", 8).load()  # type: ignore[arg-type]


def test_timers_become_the_wanted_ones_and_the_fired_one_is_left_alone() -> None:
    handle = Handle({10, 20, 30})
    timers_to(handle, [20, 40], fired=10)  # type: ignore[arg-type]
    assert handle.timers == {10, 20, 40}  # 10: Spark removes the timer it fires
    assert handle.deleted == [30] and handle.registered == [40]
