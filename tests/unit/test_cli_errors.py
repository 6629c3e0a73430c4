"""Mistakes on the command line: one line naming the sub-command and the option, exit code 2,
never a traceback."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from tests.support.cli import run
from trending.cli import build_parser
from trending.commands import hidden

# Options whose every string is a valid value on the command line (the command checks some
# when it runs, as one-line errors too)
EXEMPT = {
    "--config": "a path; an unreadable file is reported when the file is read",
    "--schema": "a schema name or a path",
    "--schema-registry-url": "a URL, or none",
    "--bootstrap-servers": "host names; the client reports unreachable ones",
    "--kafka-config": "a path",
    "--kafka-option": "KEY=VALUE, checked when the command runs",
    "--spark-kafka-option": "KEY=VALUE, checked when the command runs",
    "--conf": "KEY=VALUE, checked when the command runs",
    "--metrics-host": "a host name or address",
    "--checkpoint": "any path Spark accepts",
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
            if names[0] in EXEMPT or hidden(action):  # a renamed option: its own test below
                continue
            kind = getattr(action.type, "__name__", "")
            bad = "nope" if action.choices is not None else WRONG_FORM.get(kind, "5x")
            found.append((path, names[0], bad))
            beyond = OUT_OF_RANGE.get(kind)
            if beyond is not None:
                found.append((path, names[0], beyond))
    return found


# A value of the wrong form, by the option's value type, where 5x is a right one
WRONG_FORM = {"topic": "tweets and more"}
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
    "positive_duration_ms": "0s",
    "epoch_ms": "-1",
    "topic": "t" * 250,
    "starting_offsets": '{"tweets": {"0": -3}}',
}


CASES = cases()


def test_every_option_is_checked_or_exempt_for_a_reason() -> None:
    checked = {option for _, option, _ in CASES}
    assert {"--size", "--idle-timeout", "--duration", "--port", "--partition-by"} <= checked
    assert {"--window-readings", "--starting-offsets", "--input-topic", "--topic"} <= checked
    ranged = {(path, option) for path, option, bad in CASES if bad not in ("5x", "nope")}
    assert {(("broker",), "--port"), (("run", "hashtags"), "--metrics-port"),
            (("produce", "tweets"), "--events-per-second"), (("demo",), "--rate"),
            (("run", "sensors"), "--master"), (("run", "windows"), "--starting-offsets"),
            (("run", "hashtags"), "--late-topic")} <= ranged  # fmt: skip
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
        "run hashtags; put it after the command (trending run hashtags --size ...)\n"
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


# --- a renamed option ---------------------------------------------------------------------------


@pytest.mark.parametrize("given", [["--size", "100"], ["--size=100"], ["--size"], ["--siz", "5"]])
def test_the_readings_of_the_sensor_window_are_no_longer_its_size(
    given: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """run hashtags --size is a duration; the sensor job's count of readings has its own name."""
    monkeypatch.delenv("TRENDING_CONFIG", raising=False)
    code, err = run(["run", "sensors", *given], capsys)
    assert (code, err) == (
        2,
        "trending run sensors: error: --size is now --window-readings (a number of readings)\n",
    )


def test_the_renamed_option_is_left_out_of_help_and_suggestions(
    capsys: pytest.CaptureFixture[str],
) -> None:
    leaf = leaves()[("run", "sensors")]
    assert "--size" not in leaf.format_help()
    assert "--window-readings N" in leaf.format_help()
    assert (
        build_parser().parse_args(["run", "sensors", "--window-readings", "40"]).window_readings
        == 40
    )
    code, err = run(["run", "sensors", "--sise", "5"], capsys)
    assert (code, err) == (2, "trending run sensors: error: unrecognized option --sise\n")


def test_the_renamed_key_of_a_configuration_file_names_the_new_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "old.toml"
    path.write_text("[run.sensors]\nsize = 50\n")
    code, err = run(["--config", str(path), "run", "sensors"], capsys)
    assert (code, err) == (
        2,
        f"trending: error: config file {path}, table [run.sensors], key size: is now "
        "window-readings (a number of readings)\n",
    )


# --- values refused after parsing ---------------------------------------------------------------


@pytest.fixture
def no_kafka(monkeypatch: pytest.MonkeyPatch) -> None:
    """Commands that must stop on their checks, before a Kafka client or Spark."""
    from trending.commands import produce
    from trending.commands import run as run_command

    def never(*_: object, **__: object) -> None:
        raise AssertionError("the command went past its checks")

    monkeypatch.delenv("TRENDING_CONFIG", raising=False)
    monkeypatch.setattr(run_command, "_wait_for_kafka", never)
    monkeypatch.setattr(run_command, "run_job", never)
    monkeypatch.setattr(produce, "require_kafka", never)


@pytest.mark.usefixtures("no_kafka")
@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (
            ["run", "hashtags", "--size", "1m", "--hop", "2m"],
            "trending run hashtags: error: hop (120000ms) must not exceed size (60000ms): "
            "every instant must belong to a window",
        ),
        (
            ["run", "sensors", "--idle-advance", "5s", "--available-now"],
            "trending run sensors: error: --idle-advance moves event time on while a running job "
            "waits for input; --available-now ends when the input does: give one of them",
        ),
        (
            ["run", "sensors", "--conf", "novalue"],
            "trending run sensors: error: --conf wants KEY=VALUE, got 'novalue'",
        ),
        (
            ["run", "hashtags", "--kafka-option", "acks"],
            "trending run hashtags: error: --kafka-option wants KEY=VALUE, got 'acks'",
        ),
        (
            ["run", "windows", "no-such-spec.yaml"],
            "trending run windows: error: cannot read spec no-such-spec.yaml: "
            "No such file or directory",
        ),
        (
            ["produce", "tweets", "--from-jsonl", "no-such-file.jsonl"],
            "trending produce tweets: error: cannot read no-such-file.jsonl: "
            "No such file or directory",
        ),
        (
            ["produce", "tweets", "--burst-every", "1m", "--burst-length", "2m"],
            "trending produce tweets: error: burst_length_ms must be in [0, burst_every_ms]",
        ),
        (
            ["config", "show", "run"],
            "trending config show: error: want a command: trending run takes hashtags, sensors, "
            "windows",
        ),
    ],
)
def test_a_value_refused_after_parsing_is_named_by_its_sub_command(
    argv: list[str], expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = run(argv, capsys)
    assert (code, err) == (2, expected + "\n")


def test_a_bad_window_spec_is_named_by_windows_replay(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = tmp_path / "spec.json"
    spec.write_text('{"kind": "sliding", "evict": {"count": 0}}')
    monkeypatch.setattr("sys.stdin", __import__("io").StringIO(""))
    code, err = run(["windows", "replay", str(spec)], capsys)
    assert code == 2 and len(err.splitlines()) == 1, err
    assert err.startswith(f"trending windows replay: error: spec {spec}: evict.count: "), err


# --- where a new checkpoint starts --------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "taken"),
    [
        ("earliest", "earliest"),
        ("LATEST", "latest"),
        ('{"tweets": {"0": 42, "1": -2}}', '{"tweets": {"0": 42, "1": -2}}'),
        ('{"tweets": {"0": -1}, "tweets-control": {"0": 7}}', None),
    ],
)
def test_starting_offsets_take_earliest_latest_or_offsets_by_partition(
    given: str, taken: str | None
) -> None:
    args = build_parser().parse_args(["run", "sensors", "--starting-offsets", given])
    assert args.starting_offsets == (given if taken is None else taken)


@pytest.mark.parametrize(
    "bad",
    [
        "middle",
        "",
        "{}",
        "[1, 2]",
        '{"tweets": 5}',
        '{"tweets": {}}',
        '{"tweets": {"zero": 5}}',
        '{"tweets": {"0": "5"}}',
        '{"tweets": {"0": true}}',
        '{"tweets": {"0": -3}}',
        '{"no topic": {"0": 5}}',
        '{"tweets": {"0": 5}',
    ],
)
def test_other_starting_offsets_are_refused_while_parsing(
    bad: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TRENDING_CONFIG", raising=False)
    code, err = run(["run", "hashtags", "--starting-offsets", bad], capsys)
    assert code == 2 and len(err.splitlines()) == 1, err
    assert err.startswith(
        "trending run hashtags: error: argument --starting-offsets: want earliest, latest, or a "
        'JSON object of offsets by topic and partition, e.g. {"tweets": {"0": 42, "1": -2}} '
        f"(-2: earliest, -1: latest), got {bad!r}"
    ), err


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (
            ["run", "sensors", "--window-readings", "99999999999"],
            "argument --window-readings: want a whole number <= 2147483647, got '99999999999'",
        ),
        (
            ["run", "hashtags", "--trigger", "99999999999999999999999"],
            "argument --trigger: duration '99999999999999999999999' is too long: at most "
            "9223372036854775807ms",
        ),
        (  # the generator holds every distinct user in memory
            ["produce", "tweets", "--users", "10000001"],
            "argument --users: want a whole number from 1 to 10000000, got '10000001'",
        ),
        (
            ["produce", "tweets", "--vocabulary", "2147483647"],
            "argument --vocabulary: want a whole number from 1 to 10000000, got '2147483647'",
        ),
        (
            ["produce", "tweets", "--start-ms", "99999999999999999999999"],
            "argument --start-ms: want milliseconds since 1970 from 0 to 253402300799999 "
            "(9999-12-31), got '99999999999999999999999'",
        ),
    ],
)
def test_a_value_too_large_for_spark_or_kafka_is_refused_while_parsing(
    argv: list[str], expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = run(argv, capsys)
    assert code == 2 and len(err.splitlines()) == 1, err
    assert err.startswith(f"trending {argv[0]} {argv[1]}: error: {expected}"), err


def test_with_json_logs_a_refused_value_is_a_json_line_of_its_sub_command(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    from trending.cli import configure_logging

    monkeypatch.delenv("TRENDING_CONFIG", raising=False)
    try:
        argv = ["--log-format", "json", "run", "hashtags", "--size", "1m", "--hop", "2m"]
        code, err = run(argv, capsys)
    finally:
        configure_logging("text", "")
    (line,) = err.splitlines()
    record = json.loads(line)
    assert code == 2
    assert (record["level"], record["job"]) == ("ERROR", "run hashtags")
    assert record["message"].startswith("error: hop (120000ms) must not exceed size (60000ms)")
