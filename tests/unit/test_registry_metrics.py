"""The schema registry's metrics: writer schemas unfit to read values with are labelled as
incompatible schemas, and the executors' failed registry requests are a counter that never goes
down, even when the Spark context it reads from starts again."""

from __future__ import annotations

import pytest
from prometheus_client import generate_latest

from trending import metrics
from trending.metrics import INCOMPATIBLE_SCHEMA, Metrics, dead_reason_label


@pytest.mark.parametrize(
    "reason",
    [
        "schema id 7 is recursive (trending.Tweet contains itself)",
        "schema id 7 nests deeper than 64 levels",
        "schema id 7 has more than 100000 types once its named types are expanded",
        "schema id 7 has an array whose items take no bytes",
    ],
)
def test_an_unfit_writer_schema_is_an_incompatible_schema(reason: str) -> None:
    assert dead_reason_label(reason) == INCOMPATIBLE_SCHEMA


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
