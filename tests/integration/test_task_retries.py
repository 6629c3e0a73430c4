"""Local mode retries a failed task: a task that fails once succeeds on its second attempt under
the default master (Spark runs a task once in plain ``local[N]``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.integration


def test_a_task_that_fails_once_succeeds_in_the_default_local_master(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from trending.spark.session import build_session

    monkeypatch.delenv("SPARK_MASTER", raising=False)
    marker = tmp_path / "failed-once"

    def fail_once(rows: Iterator[Any]) -> Iterator[Any]:
        try:
            marker.mkdir()  # atomic: exactly one attempt fails
        except FileExistsError:
            yield from rows
            return
        raise RuntimeError("injected: the first attempt of this task fails")

    spark = build_session("tests-task-retries")
    try:
        assert spark.sparkContext.master == "local[*,4]"
        rows = spark.sparkContext.parallelize(range(10), 1).mapPartitions(fail_once).collect()
    finally:
        spark.stop()
    assert marker.exists()
    assert rows == list(range(10))
