"""Every command's help: each option explained, each default shown one way, plain text."""

from __future__ import annotations

import argparse
import re

import pytest

from tests.unit.test_cli_help import PARSERS, option_helps

MARKUP = re.compile(r"`|:[a-z]+:`")


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
    assert helps["--partitions"] == "when creating the topic (default: 4)"
    assert helps["--jitter"] == "max out-of-order delay (default: 2s)"
    assert helps["--rate"] == "cap in tweets/s of wall time (default: no cap)"
    assert (
        option_helps(PARSERS["broker"])["--timeout"]
        == "how long to wait for start-up (default: 90s)"
    )
