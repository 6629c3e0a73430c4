"""The replay tool end to end: a spec and JSON lines in, JSON event lines out."""

from __future__ import annotations

import argparse
import io
import json
from pathlib import Path
from typing import Any

import pytest

from trending.commands import windows as windows_command
from trending.commands.windows import main
from trending.errors import UserError
from trending.windows.replay import ReplayError, replay
from trending.windows.spl import SpecError


def lines(*items: dict[str, Any]) -> list[str]:
    return [json.dumps(item) for item in items]


def events(spec: dict[str, Any], *items: dict[str, Any]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in replay(spec, lines(*items))]


def short(output: list[dict[str, Any]]) -> list[str]:
    """``"event partition [v, ...]"`` per output line."""
    return [
        f"{e['event']} {e['partition']} {[t['v'] for t in e['tuples']]}".replace(" None", "")
        for e in output
    ]


def test_sliding_count_partitioned_spec() -> None:
    # {"kind": "sliding", "evict": {"count": 4}, "trigger": {"count": 2}, "partition_by": "p"}
    spec = {"kind": "sliding", "evict": {"count": 4}, "trigger": {"count": 2}, "partition_by": "p"}
    out = events(spec, *({"tuple": {"v": v, "p": p}} for v, p in [(1, "a"), (2, "b"), (3, "a")]))
    assert out[-1] == {
        "event": "trigger",
        "partition": "a",
        "tuples": [{"v": 1, "p": "a"}, {"v": 3, "p": "a"}],
    }
    assert short(out) == [
        "before_insert a [1]",
        "after_insert a [1]",
        "before_insert b [2]",
        "after_insert b [2]",
        "before_insert a [3]",
        "after_insert a [3]",
        "trigger a [1, 3]",
    ]


def test_tumbling_delta_spec() -> None:
    spec = {"kind": "tumbling", "evict": {"delta": {"attribute": "age", "size": 2}}}
    out = events(spec, *({"tuple": {"v": v, "age": v}} for v in [1, 2, 3, 4]))
    assert short(out)[6:] == [
        "before_flush [1, 2, 3]",
        "after_flush []",
        "before_insert [4]",
        "after_insert [4]",
    ]
    assert out[6] == {
        "event": "before_flush",
        "partition": None,
        "tuples": [{"v": 1, "age": 1}, {"v": 2, "age": 2}, {"v": 3, "age": 3}],
    }


def test_tumbling_punct_spec() -> None:
    spec = {"kind": "tumbling", "evict": "punct"}
    out = events(spec, {"punct": True}, {"tuple": {"v": 1}}, {"punct": True}, {"punct": True})
    assert short(out) == [
        "empty_punct []",
        "before_insert [1]",
        "after_insert [1]",
        "before_flush [1]",
        "after_flush []",
        "empty_punct []",
    ]


def test_sliding_time_spec_runs_on_time_lines_in_seconds() -> None:
    # time(8), time(2):  0s: 1   3s: 2   triggers at 2, 4, 6, 8 ...; 1 evicted at 8, 2 at 11
    spec = {"kind": "sliding", "evict": {"time": 8}, "trigger": {"time": 2}}
    out = events(spec, {"tuple": {"v": 1}}, {"time": 3}, {"tuple": {"v": 2}}, {"time": 11.5})
    assert short(out) == [
        "initial_full []",
        "before_insert [1]",
        "after_insert [1]",
        "trigger [1]",
        "before_insert [2]",
        "after_insert [2]",
        "trigger [1, 2]",
        "trigger [1, 2]",
        "trigger [1, 2]",
        "before_evict [1]",
        "after_evict [1]",
        "trigger [2]",
        "before_evict [2]",
        "after_evict [2]",
    ]


def test_partition_eviction_spec() -> None:
    spec = {
        "kind": "sliding",
        "evict": {"count": 4},
        "trigger": {"count": 100},
        "partition_by": "p",
        "partition_eviction": {"count": 2, "select": "lru"},
    }
    items = [{"tuple": {"v": v, "p": p}} for v, p in [(1, "a"), (2, "b"), (3, "a"), (4, "c")]]
    out = short(events(spec, *items))
    assert out[-3:] == ["before_insert c [4]", "after_insert c [4]", "partition_evict b [2]"]
    assert not any(line.startswith("partition_select") for line in out)  # LRU: no selection


def test_partition_age_spec_checks_at_the_next_tuple() -> None:
    spec = {
        "kind": "tumbling",
        "evict": {"count": 10},
        "partition_by": "p",
        "partition_eviction": {"age": 5},
    }
    a, b = {"tuple": {"v": 1, "p": "a"}}, {"tuple": {"v": 2, "p": "b"}}
    assert short(events(spec, a, {"time": 5}, b))[2:] == [
        "before_insert b [2]",
        "after_insert b [2]",
    ]
    assert short(events(spec, a, {"time": 5.001}))[2:] == []
    assert short(events(spec, a, {"time": 5.001}, b))[2:] == [
        "partition_evict a [1]",
        "before_insert b [2]",
        "after_insert b [2]",
    ]


def test_empty_time_windows_fire_unless_turned_off() -> None:
    spec: dict[str, object] = {"kind": "sliding", "evict": {"time": 8}, "trigger": {"time": 2}}
    assert short(events(spec, {"time": 4})) == ["trigger []", "trigger []"]
    spec["empty_window_events"] = False
    assert short(events(spec, {"time": 4})) == []
    tumbling = {"kind": "tumbling", "evict": {"time": 2}, "summaries": {"n": "count"}}
    assert events(tumbling, {"time": 2}) == [
        {"event": kind, "partition": None, "tuples": [], "summary": {"n": 0}}
        for kind in ("before_flush", "after_flush")
    ]


def test_summaries_ride_on_flush_lines() -> None:
    spec = {
        "kind": "tumbling",
        "evict": {"count": 2},
        "keep_tuples": False,
        "summaries": {"n": "count", "total": {"sum": "x"}},
    }
    out = events(spec, {"tuple": {"v": 1, "x": 2}}, {"tuple": {"v": 2, "x": 5}})
    assert out[-1] == {
        "event": "after_flush",
        "partition": None,
        "tuples": [],
        "summary": {"n": 2, "total": 7},
    }


def test_a_bad_spec_fails_at_once() -> None:
    with pytest.raises(SpecError, match=r"evict\.count"):
        replay({"kind": "tumbling", "evict": {"count": -1}}, [])


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ("{nope", "line 3: not JSON"),
        ("[1, 2]", 'line 3: expected one of {"tuple": {...}}'),
        ('{"tuple": 5}', 'line 3: expected one of {"tuple": {...}}'),
        ('{"punct": false}', 'line 3: expected one of {"tuple": {...}}'),
        ('{"tuple": {"v": 1}, "time": 3}', "line 3: expected one of"),
        ('{"time": "soon"}', "line 3: time must be a number of seconds"),
        ('{"time": 1}', "line 3: time 1 s is before the clock (2 s)"),
        ('{"time": 2.0001}', "line 3: 2.0001 seconds is not a whole number of milliseconds"),
        ('{"tuple": {"v": 1}}', "line 3: tuple has no attribute 'age'"),
        ('{"tuple": {"age": "old"}}', "line 3: attribute 'age' must be a number"),
    ],
)
def test_malformed_lines_name_their_line_number(bad: str, message: str) -> None:
    spec = {
        "kind": "sliding",
        "evict": {"delta": {"attribute": "age", "size": 2}},
        "trigger": {"count": 1},
    }
    good = ['{"tuple": {"v": 0, "age": 0}}', '{"time": 2}']
    output = replay(spec, [*good, bad, '{"punct": true}'])
    with pytest.raises(ReplayError) as error:
        list(output)
    assert str(error.value).startswith(message)


def test_partition_attribute_missing_names_the_line() -> None:
    spec = {"kind": "tumbling", "evict": {"count": 2}, "partition_by": "p"}
    with pytest.raises(ReplayError, match="line 2: tuple has no partition attribute 'p'"):
        list(replay(spec, ['{"tuple": {"p": 1}}', '{"tuple": {"v": 1}}']))


def test_blank_lines_are_skipped() -> None:
    spec = {"kind": "tumbling", "evict": {"count": 1}}
    assert len(list(replay(spec, ["", '{"tuple": {"v": 1}}\n', "   \n"]))) == 4


# --- the command line ------------------------------------------------------------------------


def write_spec(tmp_path: Path, text: str, name: str = "spec.yaml") -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_main_reads_a_yaml_spec_and_stdin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = write_spec(tmp_path, "kind: sliding\nevict: {count: 4}\ntrigger: {count: 2}\n")
    monkeypatch.setattr("sys.stdin", io.StringIO('{"tuple": {"v": 1}}\n{"tuple": {"v": 2}}\n'))
    assert main([spec]) == 0
    out = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert out[-1] == {"event": "trigger", "partition": None, "tuples": [{"v": 1}, {"v": 2}]}


def test_main_reads_a_json_spec(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = write_spec(tmp_path, '{"kind": "tumbling", "evict": "punct"}', "spec.json")
    monkeypatch.setattr("sys.stdin", io.StringIO('{"punct": true}\n'))
    assert main([spec]) == 0
    assert capsys.readouterr().out == '{"event": "empty_punct", "partition": null, "tuples": []}\n'


@pytest.mark.parametrize(
    ("spec_text", "stdin", "message"),
    [
        (
            "kind: tumbling\nevict: {count: 1}\n",
            '{"tuple": {"v": 1}}\n\n{oops\n',
            "line 3: not JSON",
        ),
        ("kind: tumbling\nevict: {count: 0}\n", "", "evict.count: must be a positive integer"),
        ("kind: [unclosed\n", "", "is not valid YAML: expected ',' or ']'"),
        (
            "kind: sliding\nevict: punct\ntrigger: {count: 1}\n",
            "",
            "evict: a sliding window cannot",
        ),
    ],
)
def test_main_reports_errors_in_one_line_with_exit_code_2(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    spec_text: str,
    stdin: str,
    message: str,
) -> None:
    spec = write_spec(tmp_path, spec_text)
    monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    assert main([spec]) == 2
    err = capsys.readouterr().err
    assert err.startswith("trending windows replay: error: ")
    assert message in err
    assert "Traceback" not in err
    assert err.count("\n") == 1


def test_main_reports_a_bad_json_spec(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = write_spec(tmp_path, '{"kind": "tumbling",}', "spec.json")
    assert main([spec]) == 2
    assert "is not valid JSON: Expecting property name" in capsys.readouterr().err


def test_main_reports_a_missing_spec_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([str(tmp_path / "missing.yaml")]) == 2
    assert "cannot read spec" in capsys.readouterr().err


def command_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="trending")
    subparsers = parser.add_subparsers(dest="command", required=True)
    windows_command.register(subparsers)
    return parser


def test_the_windows_replay_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = write_spec(tmp_path, "kind: tumbling\nevict: {count: 1}\n")
    args = command_parser().parse_args(["windows", "replay", spec])
    monkeypatch.setattr("sys.stdin", io.StringIO('{"tuple": {"v": 7}}\n'))
    assert args.handler(args) == 0
    assert [json.loads(x)["event"] for x in capsys.readouterr().out.splitlines()] == [
        "before_insert",
        "after_insert",
        "before_flush",
        "after_flush",
    ]


def test_the_windows_replay_command_raises_user_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = write_spec(tmp_path, "kind: tumbling\nevict: {count: 1}\n")
    args = command_parser().parse_args(["windows", "replay", spec])
    monkeypatch.setattr("sys.stdin", io.StringIO('{"tuple": {"v": 7}}\n{"time": -1}\n'))
    with pytest.raises(UserError, match="line 2: time -1 s is before the clock"):
        args.handler(args)


def test_the_windows_command_needs_a_sub_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        command_parser().parse_args(["windows"])
    assert "SUBCOMMAND" in capsys.readouterr().err
