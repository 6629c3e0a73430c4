"""The event-time sanity bounds on the command line: every job takes them, in durations."""

from __future__ import annotations

import pytest

from trending.cli import build_parser
from trending.commands.run import _job_settings
from trending.errors import UserError
from trending.jobs.common import JobSettings


@pytest.mark.parametrize("job", [["hashtags"], ["sensors"], ["windows", "spec.yaml"]])
def test_every_job_defaults_to_one_hour_ahead_and_no_past_bound(job: list[str]) -> None:
    args = build_parser().parse_args(["run", *job])
    settings = _job_settings(args, "127.0.0.1:9092", {})
    assert (settings["max_future_skew_ms"], settings["max_past_skew_ms"]) == (3_600_000, None)


def test_bounds_take_durations_and_none() -> None:
    args = build_parser().parse_args(
        ["run", "hashtags", "--max-future-skew", "none", "--max-past-skew", "2d"]
    )
    assert (args.max_future_skew, args.max_past_skew) == (None, 2 * 86_400_000)


def test_a_bad_bound_is_refused_with_its_flag_named(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["run", "sensors", "--max-future-skew", "soon"])
    assert "--max-future-skew" in capsys.readouterr().err


def test_a_negative_bound_from_code_is_a_user_error() -> None:
    settings = JobSettings(bootstrap="b", checkpoint="c", max_past_skew_ms=-1)
    with pytest.raises(UserError, match="--max-past-skew must be >= 0"):
        _ = settings.clock_skew
