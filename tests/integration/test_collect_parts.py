"""A batch's output reaches the driver in parts of bounded size (trending.spark.collect)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from trending.spark.collect import in_parts

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    from trending.spark.session import build_session

    session = build_session("tests-collect", "local[2]", shuffle_partitions=2)
    yield session
    session.stop()


def test_rows_come_in_parts_of_about_the_bound_and_none_is_lost(spark: Any) -> None:
    """1,000 rows of 1,000 bytes (and a key) in parts of 100 kB: about ten parts, every row
    exactly once, the rows of a key in one part."""
    rows = [(i % 37, bytes([i % 251]) * 1_000, f"r{i}") for i in range(1_000)]
    frame = spark.createDataFrame(rows, "key int, value binary, name string").cache()
    parts = [part.to_pylist() for part in in_parts(frame, 100_000, by=("key",))]
    assert 8 <= len(parts) <= 12
    assert all(sum(len(r["value"]) + 64 for r in part) < 250_000 for part in parts)
    got = sorted((r["key"], r["value"], r["name"]) for part in parts for r in part)
    assert got == sorted(rows)
    keys_in = [{r["key"] for r in part} for part in parts]
    assert sum(len(k) for k in keys_in) == len(set().union(*keys_in)) == 37


def test_small_or_empty_frames_come_whole_or_not_at_all(spark: Any) -> None:
    frame = spark.createDataFrame([(1, b"x")], "key int, value binary").cache()
    assert [p.to_pylist() for p in in_parts(frame, 100_000)] == [[{"key": 1, "value": b"x"}]]
    assert list(in_parts(frame.where("key = 2"), 100_000)) == []
