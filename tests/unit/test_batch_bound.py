"""Micro-batches are bounded by default: 100,000 records per second of trigger interval (at least
100,000), so a job catching up on a backlog never reads it in one batch."""

from __future__ import annotations

import pytest

from connectors.spark_kafka import source_options
from trending.cli import build_parser
from trending.errors import UserError
from trending.jobs.common import JobSettings


@pytest.mark.parametrize(
    ("trigger_ms", "expected"),
    [(1_000, 100_000), (5_000, 500_000), (200, 100_000), (2_500, 250_000), (60_000, 6_000_000)],
)
def test_the_default_bound_is_sized_from_the_trigger(trigger_ms: int, expected: int) -> None:
    settings = JobSettings("kafka:9092", "/tmp/c", trigger_ms=trigger_ms)
    assert settings.batch_bound == expected
    options = source_options("kafka:9092", "tweets", max_offsets_per_trigger=settings.batch_bound)
    assert options["maxOffsetsPerTrigger"] == str(expected)


def test_a_given_bound_wins_and_zero_means_none() -> None:
    assert JobSettings("k:9092", "/c", max_offsets_per_trigger=300).batch_bound == 300
    unbounded = JobSettings("k:9092", "/c", max_offsets_per_trigger=0).batch_bound
    assert unbounded is None
    assert "maxOffsetsPerTrigger" not in source_options("k:9092", "t", "earliest", unbounded)
    with pytest.raises(UserError, match="must be >= 0"):
        _ = JobSettings("k:9092", "/c", max_offsets_per_trigger=-1).batch_bound


@pytest.mark.parametrize("job", ["hashtags", "sensors"])
def test_the_command_line_refuses_a_negative_bound(
    job: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["run", job, "--max-offsets-per-trigger", "-5"])
    assert "want a whole number >= 0, got '-5'" in capsys.readouterr().err


def test_the_source_reads_in_big_fetches_without_waiting_at_the_end_of_the_log() -> None:
    options = source_options("k:9092", "t")
    assert int(options["kafka.max.poll.records"]) >= 10_000
    assert int(options["kafka.max.partition.fetch.bytes"]) >= 8 * 2**20
    assert int(options["kafka.fetch.max.wait.ms"]) <= 50  # the client's default is 500


def test_a_user_s_consumer_setting_overrides_the_source_s_default() -> None:
    extra = {"fetch.max.wait.ms": "500", "kafka.max.poll.records": "500"}
    options = source_options("k:9092", "t", extra=extra)
    assert options["kafka.fetch.max.wait.ms"] == "500"
    assert options["kafka.max.poll.records"] == "500"
