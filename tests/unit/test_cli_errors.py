"""Mistakes on the command line: one line naming the sub-command and the option, exit code 2,
never a traceback."""

from __future__ import annotations

import argparse

import pytest

from tests.support.cli import run
from trending.cli import build_parser

# Options whose every string is a valid value on the command line (the command checks some
# when it runs, as one-line errors too)
EXEMPT = {
    "--config": "a path; an unreadable file is reported when the file is read",
    "--topic": "a topic name",
    "--input-topic": "a topic name",
    "--output-topic": "a topic name",
    "--late-topic": "a topic name",
    "--dead-letter-topic": "a topic name",
    "--readings-topic": "a topic name",
    "--queries-topic": "a topic name",
    "--matches-topic": "a topic name",
    "--popular-topic": "a topic name",
    "--schema": "a schema name or a path",
    "--schema-registry-url": "a URL, or none",
    "--bootstrap-servers": "host names; the client reports unreachable ones",
    "--kafka-config": "a path",
    "--kafka-option": "KEY=VALUE, checked when the command runs",
    "--spark-kafka-option": "KEY=VALUE, checked when the command runs",
    "--conf": "KEY=VALUE, checked when the command runs",
    "--metrics-host": "a host name or address",
    "--checkpoint": "any path Spark accepts",
    "--starting-offsets": "earliest, latest or Spark's JSON form, which Spark checks",
    "--from-jsonl": "a path",
    "--dir": "a path",
    "--data-dir": "a path",
}


def leaves() -> dict[tuple[str, ...], argparse.ArgumentParser]:
    """Every command that runs something (and the root, for its own options), by its path."""
    found: dict[tuple[str, ...], argparse.ArgumentParser] = {}

    def walk(path: tuple[str, ...], parser: argparse.ArgumentParser) -> None:
        found[path] = parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, child in action.choices.items():
                    walk((*path, name), child)

    walk((), build_parser())
    return found


def cases() -> list[tuple[tuple[str, ...], str, str]]:
    """(command path, option, invalid value) for every option that takes a checked value."""
    found = []
    for path, parser in leaves().items():
        for action in parser._actions:
            names = [s for s in action.option_strings if s.startswith("--")]
            if not names or action.nargs == 0 or isinstance(action, argparse._HelpAction):
                continue
            if names[0] in EXEMPT:
                continue
            bad = "nope" if action.choices is not None else "5x"
            found.append((path, names[0], bad))
            beyond = OUT_OF_RANGE.get(getattr(action.type, "__name__", ""))
            if beyond is not None:
                found.append((path, names[0], beyond))
    return found


# A value of the right form but out of its option's range, by the option's value type
# (trending/arg_types.py): refused by the parser too, not by a traceback when it is used.
OUT_OF_RANGE = {
    "port": "70000",
    "positive_int": "0",
    "count": "-1",
    "positive_float": "-5",
    "non_negative_float": "-0.5",
    "share": "2",
    "master": "bogus://x",
    "_positive_duration": "0s",
}


CASES = cases()


def test_every_option_is_checked_or_exempt_for_a_reason() -> None:
    checked = {option for _, option, _ in CASES}
    assert {"--size", "--idle-timeout", "--duration", "--port", "--partition-by"} <= checked
    ranged = {(path, option) for path, option, bad in CASES if bad not in ("5x", "nope")}
    assert {(("broker",), "--port"), (("run", "hashtags"), "--metrics-port"),
            (("produce", "tweets"), "--events-per-second"), (("demo",), "--rate"),
            (("run", "sensors"), "--master")} <= ranged  # fmt: skip
    for parser in leaves().values():
        for action in parser._actions:
            names = [s for s in action.option_strings if s.startswith("--")]
            if names and names[0] in EXEMPT:
                assert action.type in (None, str) or action.type.__name__ == "Path", names[0]
                assert action.choices is None, names[0]


@pytest.mark.parametrize(("path", "option", "bad"), CASES, ids=str)
def test_a_bad_value_is_one_line_and_exit_code_2(
    path: tuple[str, ...],
    option: str,
    bad: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("TRENDING_CONFIG", raising=False)
    positionals = ["x"] * sum(
        1
        for action in leaves()[path]._actions
        if not action.option_strings and not isinstance(action, argparse._SubParsersAction)
    )
    code, err = run([*path, option, bad, *positionals], capsys)
    assert code == 2, err
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"{' '.join(('trending', *path))}: error: argument {option}: "), err
    assert repr(bad) in lines[0]


def test_a_misspelled_option_is_named_by_its_sub_command(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, err = run(["run", "hashtags", "--sise", "5m"], capsys)
    assert code == 2
    assert err == "trending run hashtags: error: unrecognized option --sise; did you mean --size?\n"
    code, err = run(["consume", "--idel-timeout=5s", "tweets"], capsys)
    assert code == 2
    assert err == (
        "trending consume: error: unrecognized option --idel-timeout; "
        "did you mean --idle-timeout?\n"
    )


def test_an_unknown_option_with_nothing_close_has_no_suggestion(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, err = run(["broker", "--zzzzzz"], capsys)
    assert (code, err) == (2, "trending broker: error: unrecognized option --zzzzzz\n")


def test_a_stray_argument_and_a_missing_one_are_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, err = run(["consume", "tweets", "more"], capsys)
    assert (code, err) == (2, "trending consume: error: unrecognized argument 'more'\n")
    code, err = run(["consume"], capsys)
    assert (code, err) == (
        2,
        "trending consume: error: the following arguments are required: TOPIC\n",
    )


def test_the_demo_refuses_a_bad_duration(capsys: pytest.CaptureFixture[str]) -> None:
    code, err = run(["demo", "--duration", "5x"], capsys)
    assert code == 2 and len(err.splitlines()) == 1
    assert err.startswith("trending demo: error: argument --duration: not a duration: '5x'")
    assert "500ms, 30s, 5m, 1h, 2d" in err


def test_an_option_before_its_command_names_the_commands_that_have_it(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """argparse would take the option's value for the command ("invalid choice: '5m'")."""
    monkeypatch.delenv("TRENDING_CONFIG", raising=False)
    code, err = run(["--size", "5m", "run", "hashtags"], capsys)
    assert (code, err) == (2, (
        "trending: error: unrecognized option --size before the command: it is an option of "
        "run hashtags, run sensors; put it after the command (trending run hashtags --size ...)\n"
    ))  # fmt: skip
    code, err = run(["--sise", "5m", "run", "hashtags"], capsys)
    assert code == 2 and "did you mean --size? It is an option of run hashtags" in err
    code, err = run(["--log-formt", "json", "run", "hashtags"], capsys)
    assert (code, err) == (
        2, "trending: error: unrecognized option --log-formt; did you mean --log-format?\n"
    )  # fmt: skip
    code, err = run(["--zzzqqq", "run", "hashtags"], capsys)
    assert (code, err) == (2, "trending: error: unrecognized option --zzzqqq\n")


def test_options_of_trending_itself_pass_before_the_command() -> None:
    from trending.cli import build_parser, misplaced_option

    parser = build_parser()
    for argv in (
        ["--log-format", "json", "run", "hashtags", "--size", "5m"],
        ["--log-f=json", "--config", "x.toml", "run", "hashtags"],
        ["run", "hashtags", "--zzz"],  # the sub-command reports its own
    ):
        assert misplaced_option(parser, argv) is None, argv
