"""The executors' failed schema registry requests are a counter that never goes down, even when
the Spark context it reads from starts again."""

from __future__ import annotations

import pytest
from prometheus_client import generate_latest

from trending import metrics
from trending.metrics import Metrics


def exported(m: Metrics) -> float | None:
    text = generate_latest(m.registry).decode()
    name = "trending_schema_registry_failed_requests_total "
    values = [float(line[len(name) :]) for line in text.splitlines() if line.startswith(name)]
    return values[0] if values else None


def test_failed_requests_are_0_without_spark_and_never_go_down(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    m = Metrics("hashtags")
    assert exported(m) == 0.0
    counts: list[float | None] = [3.0, 5.0, None, 1.0, 2.0]  # None: no context; 1: a new one
    monkeypatch.setattr(metrics, "executor_registry_failures", lambda: counts.pop(0))
    assert [exported(m) for _ in range(5)] == [3.0, 5.0, 5.0, 6.0, 7.0]
