"""A local master gets a cluster's task attempts unless it names its own."""

from __future__ import annotations

import pytest

from trending.spark.session import DEFAULT_MASTER, with_task_attempts


@pytest.mark.parametrize(
    ("master", "expected"),
    [
        (DEFAULT_MASTER, "local[*,4]"),
        ("local[2]", "local[2,4]"),
        ("local", "local[1,4]"),
        ("local[2,1]", "local[2,1]"),  # the user's own attempts
        ("local[*, 8]", "local[*, 8]"),
        ("spark://127.0.0.1:7077", "spark://127.0.0.1:7077"),  # spark.task.maxFailures there
        ("local-cluster[2,1,1024]", "local-cluster[2,1,1024]"),
        ("k8s://https://kubernetes.default.svc", "k8s://https://kubernetes.default.svc"),
    ],
)
def test_a_local_master_without_attempts_gets_four(master: str, expected: str) -> None:
    assert with_task_attempts(master) == expected


def test_spark_task_max_failures_sets_a_local_master_s_attempts() -> None:
    assert with_task_attempts("local[2]", {"spark.task.maxFailures": "1"}) == "local[2,1]"
    assert with_task_attempts("local[2]", {"spark.task.maxFailures": "x"}) == "local[2]"
