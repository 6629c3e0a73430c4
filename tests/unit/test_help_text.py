"""Every command's help: each option explained, each default shown one way, plain text; the
same kind of value is written and named the same way in every command."""

from __future__ import annotations

import argparse
import re
from collections import defaultdict
from pathlib import Path

import pytest

from tests.unit.test_cli_help import PARSERS, option_helps
from trending import arg_types
from trending.commands import hidden

MARKUP = re.compile(r"`|:[a-z]+:`")
# "(default: ...)", one level of parentheses inside it allowed
DEFAULT_CLAUSE = re.compile(r"\(default: (?:[^()]|\([^()]*\))*\)")
# An environment variable not written $NAME, e.g. SPARK_MASTER
BARE_VARIABLE = re.compile(r"(?<![$\w.])[A-Z][A-Z0-9]*(?:_[A-Z0-9<>]+)+\b")
# 100,000, 100_000 or 1000.0: a number in a form the command line does not take
UNTYPED_NUMBER = re.compile(r"\d,\d{3}\b|\d_\d|(?<![\d.])\d+\.0\b(?!\.)")
SOURCE_FILE = re.compile(r"[\w/.-]+\.(?:py|java|scala|kt)\b|\btrending/[a-z_]+/")
QUOTED_WORD = re.compile(r"'[a-z][\w-]*'")
DURATIONS = {
    arg_types.duration_ms,
    arg_types.duration_s,
    arg_types.positive_duration_ms,
    arg_types.optional_duration_ms,
}


def meaningful(default: object) -> bool:
    """A default the help should show (argparse's formatter leaves out the others)."""
    empty = default is None or default is False or default == []
    return not empty and default is not argparse.SUPPRESS


def described(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """The parser's options and positional arguments (not its sub-command list)."""
    return [a for a in parser._actions if not isinstance(a, argparse._SubParsersAction)]


@pytest.mark.parametrize("command", sorted(PARSERS))
def test_every_option_has_help(command: str) -> None:
    for action in described(PARSERS[command]):
        name = "/".join(action.option_strings) or action.dest
        assert action.help and action.help.strip(), f"trending {command} {name} has no help"


@pytest.mark.parametrize("command", sorted(PARSERS))
def test_a_default_shows_as_default_x_once(command: str) -> None:
    helps = option_helps(PARSERS[command])
    for action in described(PARSERS[command]):
        if not action.option_strings or not meaningful(action.default):
            continue
        name = "/".join(action.option_strings)
        text = helps[name]
        assert text.count("(default: ") == 1, f"trending {command} {name}: {text}"


@pytest.mark.parametrize("command", sorted(PARSERS))
def test_no_default_is_written_by_hand(command: str) -> None:
    """A help text with ``(90)`` in it states its default in a form of its own."""
    for action in described(PARSERS[command]):
        if action.help is None or not meaningful(action.default):
            continue
        shown = f"({action.default})"
        assert shown not in action.help, f"trending {command} {action.option_strings}: {shown}"


@pytest.mark.parametrize("command", sorted(PARSERS))
def test_help_has_no_markup(command: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    text = PARSERS[command].format_help()
    found = MARKUP.search(text)
    assert found is None, f"trending {command} --help: {text[max(0, found.start() - 40) :][:80]}"


def test_windows_replay_keeps_its_layout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    text = PARSERS["windows replay"].format_help()
    assert '\n    {"event": NAME, "partition": P, "tuples": [...]}\n' in text
    assert '\n  {"punct": true}   insert a window punctuation,\n' in text


def test_produce_shows_its_defaults_the_common_way() -> None:
    helps = option_helps(PARSERS["produce tweets"])
    assert helps["--partitions"] == "partitions of the topic when it is created (default: 4)"
    assert helps["--jitter"] == "max out-of-order delay (default: 2s)"
    assert helps["--rate"] == "cap in tweets/s of wall time (default: no cap)"
    assert (
        option_helps(PARSERS["broker"])["--timeout"]
        == "how long to wait for start-up (default: 90s)"
    )


def full_help(command: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """``trending COMMAND --help`` on one line."""
    monkeypatch.setenv("COLUMNS", "100")
    return " ".join(PARSERS[command].format_help().split())


@pytest.mark.parametrize("command", sorted(PARSERS))
def test_an_environment_variable_in_a_default_is_written_dollar_name(
    command: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for clause in DEFAULT_CLAUSE.findall(full_help(command, monkeypatch)):
        found = BARE_VARIABLE.search(clause)
        assert found is None, f"trending {command} --help: {clause}: write ${found and found[0]}"


def test_the_variables_defaults_come_from_are_all_written_the_same_way(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    text = full_help("run hashtags", monkeypatch)
    for variable in ("SPARK_MASTER", "SCHEMA_REGISTRY_URL", "KAFKA_BOOTSTRAP_SERVERS"):
        assert f"(default: ${variable}" in text, variable
    assert "(default: $TRENDING_CONFIG)" in full_help("", monkeypatch)


@pytest.mark.parametrize("command", sorted(PARSERS))
def test_numbers_are_written_as_they_are_typed(
    command: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``100000`` and ``1000``, as the option takes them: not ``100,000`` or ``1000.0``."""
    text = full_help(command, monkeypatch)
    found = UNTYPED_NUMBER.search(text)
    assert found is None, f"trending {command} --help: {text[max(0, found.start() - 60) :][:90]}"


def test_a_whole_float_default_shows_without_its_fraction() -> None:
    helps = option_helps(PARSERS["produce tweets"])
    assert helps["--events-per-second"] == "event-time rate (default: 1000)"
    assert helps["--zipf-s"] == "Zipf exponent (default: 1.1)"


def placeholder(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    """The placeholder ``--help`` prints for ``action``'s value."""
    formatter = parser._get_formatter()
    if action.option_strings:
        default = formatter._get_default_metavar_for_optional(action)
    else:
        default = formatter._get_default_metavar_for_positional(action)
    return str(formatter._metavar_formatter(action, default)(1)[0])


def expected_placeholder(action: argparse.Action) -> str | None:
    """The placeholder of the kind of value ``action`` takes, when its kind has one."""
    name = (action.option_strings or [action.dest])[-1].lstrip("-")
    kinds = {arg_types.count: "N", arg_types.positive_int: "N", arg_types.port: "PORT"}
    if action.type in DURATIONS:
        return "DURATION"
    if action.type is arg_types.topic or name == "topic" or name.endswith("-topic"):
        return "TOPIC"
    if action.type in kinds:
        return kinds[action.type]
    for ending, shown in (("-url", "URL"), ("-host", "HOST"), ("dir", "DIR"), ("config", "FILE")):
        if name.endswith(ending):
            return shown
    if name in ("from-jsonl", "spec") or name == "bootstrap-servers":
        return {"from-jsonl": "FILE", "spec": "SPEC"}.get(name, "HOST:PORT[,...]")
    return None


def value_options() -> list[tuple[str, argparse.ArgumentParser, argparse.Action]]:
    """Every option that takes a value, and every positional argument, with its command."""
    return [
        (command, parser, action)
        for command, parser in sorted(PARSERS.items())
        for action in parser._actions
        if action.nargs != 0
        and not hidden(action)
        and not isinstance(action, (argparse._SubParsersAction, argparse._HelpAction))
        and action.dest != "path"  # config show COMMAND...: the rest of the command line
    ]


def test_a_kind_of_value_has_one_placeholder_in_every_command() -> None:
    """A duration is DURATION, a topic TOPIC, a whole number N, ... wherever it is asked for,
    and an option of the same name shows the same placeholder in every command."""
    by_name: dict[str, set[str]] = defaultdict(set)
    for command, parser, action in value_options():
        shown = placeholder(parser, action)
        name = (action.option_strings or [action.dest])[-1]
        by_name[name].add(shown)
        expected = expected_placeholder(action)
        if expected is not None:
            assert shown == expected, f"trending {command} {name} {shown}: want {expected}"
        elif action.choices is None:
            # a placeholder made from the option's name says nothing of its value
            assert shown != action.dest.upper(), f"trending {command} {name} {shown}"
    mixed = {name: shown for name, shown in by_name.items() if len(shown) > 1}
    assert mixed == {}
    assert by_name["--lateness"] == {"DURATION"} and by_name["--window-readings"] == {"N"}


@pytest.mark.parametrize("command", sorted(PARSERS))
def test_help_points_at_no_source_file(command: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Formats are described in words, or by the documentation page that describes them."""
    text = full_help(command, monkeypatch)
    found = SOURCE_FILE.search(text)
    assert found is None, f"trending {command} --help names {found and found[0]}"


def test_windows_replay_names_the_page_that_describes_its_specs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    text = full_help("windows replay", monkeypatch)
    assert "(docs/jobs/windows.md)" in text
    assert (Path(__file__).resolve().parents[2] / "docs" / "jobs" / "windows.md").is_file()
    for kind in ("sliding", "tumbling", "hopping", "snapshot", "count", "alter"):
        assert kind in text


@pytest.mark.parametrize("command", sorted(PARSERS))
def test_literal_values_are_written_bare(command: str) -> None:
    """``none: no bound``, as every help writes a value the option takes, not ``'none'``."""
    for option, text in option_helps(PARSERS[command]).items():
        found = QUOTED_WORD.search(text)
        assert found is None, f"trending {command} {option}: {text}"
