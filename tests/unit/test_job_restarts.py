"""A job run that fails on Spark's fixed 10 s for a Python worker is run again, a few times at
most; any other failure ends it at once."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from trending.errors import UserError
from trending.jobs import runtime as run_command

TIMEOUT = "the streaming query failed: Python worker failed to connect back."


def runs_failing(*errors: str) -> tuple[list[int], Callable[[], int]]:
    """A run that raises ``errors`` in turn, then returns 0; and the list of its calls."""
    calls: list[int] = []

    def run() -> int:
        calls.append(len(calls))
        if len(calls) <= len(errors):
            raise UserError(errors[len(calls) - 1])
        return 0

    return calls, run


def test_a_worker_timeout_runs_the_job_again(capsys: pytest.CaptureFixture[str]) -> None:
    calls, run = runs_failing(TIMEOUT, TIMEOUT)
    assert run_command.run_again_on_worker_timeout("windows", run) == 0
    assert len(calls) == 3
    err = capsys.readouterr().err
    assert "(run 2 of 3)" in err and "(run 3 of 3)" in err


def test_the_last_worker_timeout_is_raised() -> None:
    calls, run = runs_failing(*[TIMEOUT] * run_command.JOB_ATTEMPTS)
    with pytest.raises(UserError, match="connect back"):
        run_command.run_again_on_worker_timeout("sensors", run)
    assert len(calls) == run_command.JOB_ATTEMPTS


def test_any_other_failure_is_raised_at_once() -> None:
    calls, run = runs_failing("batch 3 failed: KafkaException: _MSG_TIMED_OUT")
    with pytest.raises(UserError, match="batch 3 failed"):
        run_command.run_again_on_worker_timeout("hashtags", run)
    assert len(calls) == 1
