"""A crash exactly between a batch's Kafka commit and Spark's commit log, for every job: the
process exits the instant batch 2's transaction committed (``TRENDING_CRASH_AFTER_COMMIT``,
trending.jobs.faults), before Spark records the batch; the restart finds it published, marks
it done and goes on. What each job published, read ``read_committed``, equals its independent model:
nothing lost, nothing twice."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.support.jobs import CrashCase, run_to_end
from tests.support.queries import SLOW_TEST_TIMEOUT
from tests.support.spark_cluster import cluster_env
from trending.jobs.faults import CRASH_AFTER_COMMIT, CRASH_EXIT_CODE

pytestmark = [pytest.mark.integration, pytest.mark.chaos]
CRASHED_BATCH = 2


def crash_then_restart(case: CrashCase) -> str:
    """Run ``case`` until it crashes after batch 2's commit, then to its end; the last log."""
    env = cluster_env() | {CRASH_AFTER_COMMIT: str(CRASHED_BATCH)}
    crashed = subprocess.run(
        case.command, capture_output=True, text=True, timeout=600, env=env, check=False
    )
    assert crashed.returncode == CRASH_EXIT_CODE, crashed.stderr[-4000:]
    assert f"crashing after the Kafka commit of batch {CRASHED_BATCH}" in crashed.stderr
    log = run_to_end(case.command)
    # the restart marks the batch done in Spark's log, as Spark would have, and goes on
    assert f"batch {CRASHED_BATCH} was published but not marked done: marked done" in log
    return log


@pytest.mark.timeout(SLOW_TEST_TIMEOUT)
def test_a_crash_between_the_kafka_commit_and_sparks_commit_log_changes_nothing(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    from tests.integration.test_crashes import every_crash_case, run_beside_references

    cases = every_crash_case(kafka_bootstrap, tmp_path)
    logs = run_beside_references(cases, crash_then_restart)
    for case in cases:
        case.check(logs[case.name])
