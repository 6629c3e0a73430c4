"""Every command's ``--help`` states each default once, and never a meaningless one."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from trending.cli import build_parser, main

DEFAULT = "(default"
EMPTY_DEFAULTS = ("(default: None)", "(default: False)", "(default: [])")


def all_parsers() -> dict[str, argparse.ArgumentParser]:
    """Every parser of the command line by its command (``"run hashtags"``), the root as ``""``."""
    found: dict[str, argparse.ArgumentParser] = {}

    def walk(name: str, parser: argparse.ArgumentParser) -> None:
        found[name] = parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub, child in action.choices.items():
                    walk(f"{name} {sub}".strip(), child)

    walk("", build_parser())
    return found


PARSERS = all_parsers()


def option_helps(parser: argparse.ArgumentParser) -> dict[str, str]:
    """Each option's help as ``--help`` prints it (defaults expanded), on one line."""
    formatter = parser._get_formatter()
    helps = {}
    for action in parser._actions:
        if action.help and action.help != argparse.SUPPRESS:
            text = formatter._expand_help(action)
            helps["/".join(action.option_strings) or action.dest] = " ".join(text.split())
    return helps


def test_the_walk_reaches_every_command() -> None:
    expected = {
        "broker",
        "produce tweets",
        "produce readings",
        "produce queries",
        "produce events",
        "consume",
        "run hashtags",
        "run sensors",
        "run windows",
        "windows replay",
        "demo",
    }
    assert expected <= set(PARSERS)


@pytest.mark.parametrize("command", sorted(PARSERS))
def test_each_option_states_its_default_at_most_once(command: str) -> None:
    for option, text in option_helps(PARSERS[command]).items():
        assert text.count(DEFAULT) <= 1, f"trending {command} {option}: {text}"
        assert not any(empty in text for empty in EMPTY_DEFAULTS), f"{command} {option}: {text}"


@pytest.mark.parametrize("command", sorted(PARSERS))
def test_printed_help_has_no_doubled_or_empty_default(
    command: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    text = PARSERS[command].format_help()
    for line in text.splitlines():
        assert line.count(DEFAULT) <= 1, f"trending {command} --help: {line}"
    flat = " ".join(text.split())  # a doubled default may straddle a line break
    assert not re.search(r"\(default[^()]*\) \(default", flat), f"trending {command}: {flat}"
    assert not any(empty in flat for empty in EMPTY_DEFAULTS), f"trending {command}: {flat}"


def test_run_hashtags_help_shows_each_default_once(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["run", "hashtags", "--help"])
    assert exit_info.value.code == 0
    flat = " ".join(capsys.readouterr().out.split())
    for shown in (
        "window size (default: 5m)",
        "window hop (slide) (default: 1m)",
        "k: hashtags per top-k record (default: 10)",
        "Spark master (default: $SPARK_MASTER, else the one spark-submit or spark-defaults.conf "
        "set, else local[*])",
        "(default: checkpoints/hashtags)",
    ):
        assert flat.count(shown) == 1, shown
    assert "(default: $KAFKA_BOOTSTRAP_SERVERS, else" in flat


def test_defaults_the_help_already_states_are_not_added_again() -> None:
    helps = option_helps(PARSERS["run sensors"])
    assert helps["--master"].startswith("Spark master (default: $SPARK_MASTER, else the one")
    assert helps["--max-offsets-per-trigger"].endswith("0: no bound)")
    assert helps["--available-now"].endswith("then exit")
    assert helps["--window-readings"] == (
        "the window holds the last N readings (with --partition-by sensor, each sensor's window "
        "its last N) (default: 100)"
    )
    assert "--size" not in helps


def test_a_default_from_a_configuration_file_shows_no_credentials(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "trending.toml"
    config.write_text('[run.hashtags]\ncheckpoint = "s3a://AKIAKEY:s3cr3t@bucket/ckpt"\n')
    with pytest.raises(SystemExit) as exit_info:
        main(["--config", str(config), "run", "hashtags", "--help"])
    assert exit_info.value.code == 0
    flat = "".join(capsys.readouterr().out.split())  # help wraps lines anywhere
    assert "s3cr3t" not in flat and "AKIAKEY" not in flat
    assert "(default:s3a://***@bucket/ckpt)" in flat
