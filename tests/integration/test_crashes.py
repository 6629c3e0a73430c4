"""Crashes: every job and the SPL example SIGKILLed three times at seeded random points, driver
and JVM at once, each kill followed by a restart from the checkpoint. What each published,
read ``read_committed``, equals its independent model (and, for hashtags, a clean run's): none
missing, none twice. A module of its own, so that a parallel run of the suite starts it beside
the other fault tests rather than after them."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

import pytest

from tests.integration.test_faults import (
    HOP_MS,
    LATENESS_MS,
    SIZE_MS,
    finals,
    job_command,
    make_tweets,
    produce,
    published,
)
from tests.support.hashtags import independent_finals
from tests.support.jobs import CrashCase, crash_and_restart, run_to_end
from tests.support.kafka import read_all
from tests.support.queries import SLOW_TEST_TIMEOUT

pytestmark = [pytest.mark.integration, pytest.mark.chaos]
T = TypeVar("T")


def hashtags_crash_case(bootstrap: str, tmp_path: Path) -> CrashCase:
    """Three SIGKILLs of the hashtags job at seeded random points (20 batches: the kills land
    well before its end), each followed by a restart: every record it published, revisions
    included, equals a clean run's on the same tweets, and its finals an independent count."""
    tweets = make_tweets(6_000, seed=71)
    clean, crashed = uuid.uuid4().hex[:8], uuid.uuid4().hex[:8]
    for tag in (clean, crashed):
        produce(bootstrap, f"tweets-{tag}", tweets)

    def check(_log: str) -> None:
        expected = published(bootstrap, f"trending-{clean}")
        assert published(bootstrap, f"trending-{crashed}") == expected
        expected_finals = independent_finals(tweets, SIZE_MS, HOP_MS, LATENESS_MS)
        assert len(expected_finals) > 150
        assert finals(bootstrap, f"trending-{crashed}") == expected_finals
        assert read_all(bootstrap, f"late-{crashed}") == []

    return CrashCase(
        "hashtags", job_command(bootstrap, tmp_path / "crashed", crashed, per_batch=300), 71,
        check, reference=job_command(bootstrap, tmp_path / "clean", clean, per_batch=300),
    )  # fmt: skip


def every_crash_case(bootstrap: str, tmp_path: Path) -> list[CrashCase]:
    """A crash case of every job and the SPL example, each in a folder of its own."""
    from tests.integration import test_sensors_job, test_spl_kafka_example, test_windows_job

    builders = {
        "hashtags": hashtags_crash_case,
        "sensors": test_sensors_job.crash_case,
        "windows": test_windows_job.crash_case,
        "spl-example": test_spl_kafka_example.crash_case,
    }
    cases = []
    for name, build in builders.items():
        folder = tmp_path / name
        folder.mkdir()
        cases.append(build(bootstrap, folder))
    return cases


def run_beside_references(cases: list[CrashCase], run: Callable[[CrashCase], T]) -> dict[str, T]:
    """``run`` each case and its reference command (to its end), all side by side (a job's
    start-up leaves a core idle much of the time); each case's result by name."""
    with ThreadPoolExecutor(2 * len(cases)) as pool:
        references = [pool.submit(run_to_end, c.reference) for c in cases if c.reference]
        runs = {c.name: pool.submit(run, c) for c in cases}
        ended = {name: future.result() for name, future in runs.items()}
        for reference in references:
            reference.result()
    return ended


@pytest.mark.timeout(SLOW_TEST_TIMEOUT)
def test_three_crashes_of_each_job_at_random_points_change_nothing(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    """Every job (and the SPL example) SIGKILLed three times at seeded random points, driver and
    JVM at once, each kill followed by a restart from the checkpoint; the jobs run side by side.
    What each published equals its independent model (see each ``crash_case``)."""
    cases = every_crash_case(kafka_bootstrap, tmp_path)
    ended = run_beside_references(cases, lambda c: crash_and_restart(c.command, c.seed))
    for case in cases:
        killed, log = ended[case.name]
        assert killed == 3, f"{case.name} ended after {killed} kills"
        case.check(log)
