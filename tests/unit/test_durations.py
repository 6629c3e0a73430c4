"""One duration dialect: the parser's forms, and every time option of every command reads them."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from trending.cli import build_parser
from trending.config import configure
from trending.durations import parse_duration_ms, parse_optional_duration_ms


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("500ms", 500),
        ("30s", 30_000),
        ("5m", 300_000),
        ("1h", 3_600_000),
        ("2d", 172_800_000),
        ("90", 90_000),
        ("1.5", 1_500),
        ("0.25s", 250),
        ("10 seconds", 10_000),
        ("1 second", 1_000),
        ("1 minute", 60_000),
        ("5 minutes", 300_000),
        ("2 hours", 7_200_000),
        ("1 hour", 3_600_000),
        ("500 milliseconds", 500),
        ("1 millisecond", 1),
        ("1 day", 86_400_000),
        ("3 days", 259_200_000),
        ("10 SECONDS", 10_000),
        ("1 Minute", 60_000),
        ("30S", 30_000),
        (" 5m ", 300_000),
    ],
)
def test_accepted_forms(text: str, ms: int) -> None:
    assert parse_duration_ms(text) == ms


@pytest.mark.parametrize("text", ["5x", "", "s", "-1s", "1 sec", "1 mins", "ten seconds", "1e3"])
def test_refused_forms_name_the_accepted_ones(text: str) -> None:
    with pytest.raises(ValueError) as refused:
        parse_duration_ms(text)
    message = str(refused.value)
    assert "\n" not in message and repr(text) in message
    for form in ("500ms", "30s", "5m", "1h", "2d", "10 seconds", "1 minute", "bare number"):
        assert form in message


def test_a_fraction_of_a_millisecond_is_refused() -> None:
    with pytest.raises(ValueError, match="whole number of milliseconds"):
        parse_duration_ms("0.5ms")


def test_none_is_no_bound_and_spark_forms_are_durations() -> None:
    assert parse_optional_duration_ms("none") is None
    assert parse_optional_duration_ms("2 hours") == 7_200_000


# Each time option: its command, the flag, the value its default gives, a Spark-form value and
# what that parses to (seconds for the options whose code counts seconds, else milliseconds).
OPTIONS = [
    (["consume", "t"], "--idle-timeout", None, "5 seconds", 5.0),
    (["broker"], "--timeout", 90.0, "2 minutes", 120.0),
    (["demo"], "--duration", 60_000, "1 minute", 60_000),
    (["produce", "tweets"], "--jitter", 2_000, "500 milliseconds", 500),
    (["produce", "tweets"], "--burst-every", 600_000, "1 hour", 3_600_000),
    (["produce", "tweets"], "--burst-length", 180_000, "3 minutes", 180_000),
    (["run", "hashtags"], "--size", 300_000, "10 minutes", 600_000),
    (["run", "hashtags"], "--trigger", 1_000, "2 seconds", 2_000),
    (["run", "sensors"], "--lateness", 5_000, "1 minute", 60_000),
    (["run", "windows", "spec.yaml"], "--lease-timeout", None, "1 minute", 60_000),
    (["run", "hashtags"], "--max-future-skew", 3_600_000, "1 day", 86_400_000),
]


def dest(flag: str) -> str:
    return flag[2:].replace("-", "_")


@pytest.mark.parametrize(("command", "flag", "default", "given", "value"), OPTIONS)
def test_each_time_option_takes_durations(
    command: list[str], flag: str, default: object, given: str, value: float
) -> None:
    parsed = vars(build_parser().parse_args([*command, flag, given]))
    assert parsed[dest(flag)] == value
    if default is not None:
        assert vars(build_parser().parse_args(command))[dest(flag)] == default


def test_the_old_plain_seconds_still_work() -> None:
    assert build_parser().parse_args(["consume", "t", "--idle-timeout", "2.5"]).idle_timeout == 2.5
    assert build_parser().parse_args(["broker", "--timeout", "30"]).timeout == 30.0


@pytest.mark.parametrize(("command", "flag", "default", "given", "value"), OPTIONS)
def test_each_time_option_refuses_a_non_duration(
    command: list[str], flag: str, default: object, given: str, value: float,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args([*command, flag, "5x"])
    assert exit_info.value.code == 2
    assert f"argument {flag}: not a duration: '5x'" in capsys.readouterr().err


@pytest.mark.parametrize(("command", "flag", "default", "given", "value"), OPTIONS)
def test_the_configuration_file_gives_durations_and_flags_win(
    tmp_path: Path, command: list[str], flag: str, default: object, given: str, value: float
) -> None:
    path = [word for word in command if word not in ("t", "spec.yaml")]
    config = tmp_path / "trending.toml"
    config.write_text(f'[{".".join(path)}]\n{flag[2:]} = "{given}"\n')
    parser = build_parser()
    configure(parser, ["--config", str(config)], {})
    assert vars(parser.parse_args(command))[dest(flag)] == value
    flagged = vars(parser.parse_args([*command, flag, "7s"]))[dest(flag)]
    assert flagged in (7.0, 7_000)


def test_a_number_in_the_file_is_seconds(tmp_path: Path) -> None:
    config = tmp_path / "trending.toml"
    config.write_text("[consume]\nidle-timeout = 3\n[broker]\ntimeout = 0.5\n")
    parser = build_parser()
    configure(parser, ["--config", str(config)], {})
    assert parser.parse_args(["consume", "t"]).idle_timeout == 3.0
    assert parser.parse_args(["broker"]).timeout == 0.5


def test_a_bad_duration_in_the_file_is_named(tmp_path: Path) -> None:
    from trending.config import ConfigError

    config = tmp_path / "trending.toml"
    config.write_text('[consume]\nidle-timeout = "5x"\n')
    with pytest.raises(ConfigError) as refused:
        configure(build_parser(), ["--config", str(config)], {})
    assert "key idle-timeout: not a duration: '5x'" in str(refused.value)


def test_every_time_option_is_a_duration() -> None:
    """No time option is left taking plain numbers: a flag named like a time takes a duration."""
    from tests.unit.test_cli_help import PARSERS

    timely = ("timeout", "duration", "jitter", "every", "length", "lateness", "skew", "trigger")
    for command, parser in PARSERS.items():
        for action in parser._actions:
            name = next((s for s in action.option_strings if s.startswith("--")), "")
            if any(word in name for word in timely) and action.nargs != 0:
                assert action.type not in (None, int, float, str), f"{command} {name}"
                assert isinstance(action, argparse._StoreAction)
