"""examples/spl_window_kafka.py's command line: ``--kafka-step-timeout`` as the jobs take it, and
a failed query told in one line (the failed batch's own error when there is one)."""

from __future__ import annotations

import importlib.util
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest

from connectors.transactions import TXN_STEP_TIMEOUT_S

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "spl_window_kafka.py"
SETTINGS = SimpleNamespace(shutdown_timeout_s=5.0)


@pytest.fixture(scope="module")
def example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("spl_window_kafka", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def handlers() -> Iterator[None]:
    """The example installs SIGTERM and SIGINT handlers: put pytest's back."""
    saved = {signum: signal.getsignal(signum) for signum in (signal.SIGTERM, signal.SIGINT)}
    yield
    for signum, handler in saved.items():
        signal.signal(signum, handler)


class FakeQuery:
    """A query that runs for ``polls`` waits, then ends (failed with ``error``, if any)."""

    def __init__(self, polls: int = 1, error: Exception | None = None, on_poll: Any = None):
        self.polls, self.error, self.on_poll = polls, error, on_poll
        self.waits, self.stopped = 0, False

    @property
    def isActive(self) -> bool:  # noqa: N802 (Spark's name)
        return self.waits < self.polls

    def awaitTermination(self, _timeout: float) -> None:  # noqa: N802 (Spark's name)
        self.waits += 1
        if self.on_poll is not None:
            self.on_poll()
        if not self.isActive and self.error is not None:
            raise self.error

    def exception(self) -> Exception | None:
        return None if self.isActive else self.error

    def stop(self) -> None:
        self.stopped = True


def processor(failure: str | None = None) -> Any:
    return SimpleNamespace(failure=failure, history=[], running=None)


def test_the_kafka_step_timeout_takes_the_jobs_durations_and_default(example: ModuleType) -> None:
    assert example.parse_args([]).kafka_step_timeout == TXN_STEP_TIMEOUT_S * 1000
    assert example.parse_args(["--kafka-step-timeout", "20s"]).kafka_step_timeout == 20_000
    assert example.parse_args(["--kafka-step-timeout", "1500ms"]).kafka_step_timeout == 1_500


def test_a_kafka_step_timeout_that_is_no_duration_is_a_usage_error(
    example: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        example.parse_args(["--kafka-step-timeout", "soon"])
    assert exited.value.code == 2
    assert "not a duration: 'soon'" in capsys.readouterr().err


@pytest.mark.usefixtures("handlers")
def test_a_query_that_ends_is_no_failure(example: ModuleType) -> None:
    assert example.serve(FakeQuery(polls=3), processor(), SETTINGS) is None


@pytest.mark.usefixtures("handlers")
def test_a_failed_batch_is_told_by_its_own_error(example: ModuleType) -> None:
    failed = "batch 6 failed: Kafka error TOPIC_AUTHORIZATION_FAILED: Topic authorization failed"
    query = FakeQuery(polls=2, error=RuntimeError("StreamingQueryException: ...\n== Plan ==\n"))
    told = example.serve(query, processor(failed), SETTINGS)
    assert told is not None and told.startswith(failed + "; nothing of it was published")


@pytest.mark.usefixtures("handlers")
def test_any_other_failure_by_the_first_line_of_the_query_s_error(example: ModuleType) -> None:
    query = FakeQuery(error=RuntimeError("x" * 600 + "\n== Plan ==\n..."))
    told = example.serve(query, processor(), SETTINGS)
    assert told is not None and told.startswith("the streaming query failed: ")
    assert "x" * 500 in told and "x" * 501 not in told and "Plan" not in told


@pytest.mark.usefixtures("handlers")
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_stops_the_wait_without_a_failure(example: ModuleType, signum: int) -> None:
    query = FakeQuery(polls=1_000, on_poll=lambda: os.kill(os.getpid(), signum))
    assert example.serve(query, processor(), SETTINGS) is None
    assert query.waits == 1 and query.stopped
