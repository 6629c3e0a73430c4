"""The replay tool on temporal specs: dispatch, keys, output order, errors naming the line."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from trending.commands.windows import main
from trending.windows.replay import ReplayError, replay
from trending.windows.spl import SpecError
from trending.windows.temporal.spec import is_temporal_spec, parse_temporal_spec


def run(spec: dict[str, Any], *items: dict[str, Any]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in replay(spec, [json.dumps(item) for item in items])]


def short(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """(start s, end s or None, key, value) with times cut to seconds after the epoch."""
    return [
        (int(r["start"][17:19]), r["end"] and int(r["end"][17:19]), r["key"], r["value"])
        for r in rows
    ]


def test_keys_are_windowed_independently_and_rows_sorted_per_cti() -> None:
    spec = {"kind": "snapshot", "aggregate": "sum"}
    rows = run(
        spec,
        {"start": 2000, "end": 4000, "key": "b", "value": 1},
        {"start": 0, "end": 4000, "key": "a", "value": 10},
        {"start": 2000, "end": 3000, "key": "a", "value": 5},
        {"cti": 3000},
        {"start": "1970-01-01T00:00:05Z", "end": 6000, "value": 7},
    )
    assert short(rows) == [
        (0, 2, "a", 10),
        (2, 3, "a", 15),  # final at the CTI; the rest at the end of input, by start
        (2, 4, "b", 1),
        (3, 4, "a", 10),
        (5, 6, None, 7),
    ]


def test_ties_sort_by_end_then_key() -> None:
    spec = {"kind": "alter", "shift": "0s"}
    rows = run(
        spec,
        {"start": 0, "end": 2000, "key": "b", "value": 1},
        {"start": 0, "end": 1000, "key": "b", "value": 2},
        {"start": 0, "end": 1000, "key": "a", "value": 3},
    )
    assert short(rows) == [(0, 1, "a", 3), (0, 1, "b", 2), (0, 2, "b", 1)]


def test_count_spec_with_end_edges() -> None:
    spec = {"kind": "count", "n": 2, "aggregate": "sum"}
    rows = run(
        spec,
        {"start": 0, "value": 1, "id": "x", "key": "k"},
        {"start": 1000, "end": 1001, "value": 2, "key": "k"},
        {"end_edge": "x", "end": 5000},
        {"start": 3000, "end": 3001, "value": 4, "key": "k"},
    )
    assert [(r["start"], r["end"], r["value"]) for r in rows] == [
        ("1970-01-01T00:00:01.000Z", "1970-01-01T00:00:01.001Z", 3),
        ("1970-01-01T00:00:03.000Z", "1970-01-01T00:00:03.001Z", 6),
    ]


def test_temporal_tumbling_needs_a_duration() -> None:
    assert is_temporal_spec({"kind": "tumbling", "duration": "5s", "aggregate": "count"})
    assert not is_temporal_spec({"kind": "tumbling", "evict": {"count": 2}})
    assert not is_temporal_spec({"kind": "sliding", "evict": {"count": 2}})
    rows = run(
        {"kind": "tumbling", "duration": "2s", "aggregate": "count"},
        {"start": 1000, "end": 3000},
    )
    assert short(rows) == [(0, 2, None, 1), (2, 4, None, 1)]
    with pytest.raises(SpecError, match=r"^evict: an SPL tumbling window"):
        parse_temporal_spec({"kind": "tumbling", "duration": "2s", "evict": {"count": 2}})


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"kind": "hopping", "duration": "5s", "aggregate": "count"}, "^hop: required"),
        ({"kind": "hopping", "duration": "5s", "hop": 2, "aggregate": "count"}, "^hop: must be"),
        ({"kind": "snapshot", "aggregate": "median"}, "^aggregate: must be one of"),
        ({"kind": "snapshot", "aggregate": {"top_k": 0}}, "^aggregate.top_k: must be"),
        ({"kind": "count", "n": 0, "aggregate": "sum"}, "^n: must be a positive integer"),
        ({"kind": "alter", "shift": "1s", "violation": "ignore"}, "^violation: must be"),
        ({"kind": "alter", "duration": "1s", "extend": "1s"}, "^duration: give a fixed"),
        ({"kind": "snapshot", "aggregate": "sum", "alter": {"scale": 2}}, "^alter.scale: unknown"),
        ({"kind": "snapshot", "aggregate": "sum", "size": 2}, "unknown field 'size'"),
        (
            {
                "kind": "hopping",
                "duration": "5s",
                "hop": "1s",
                "aggregate": "time_weighted_average",
                "snap": True,
            },
            "^aggregate: time_weighted_average needs",
        ),
        (
            {
                "kind": "hopping",
                "duration": "5s",
                "hop": "1s",
                "alignment": "noon",
                "aggregate": "sum",
            },
            "^alignment: not an ISO",
        ),
    ],
)
def test_spec_errors_name_the_field(spec: dict[str, Any], message: str) -> None:
    with pytest.raises(SpecError, match=message):
        parse_temporal_spec(spec)


def test_every_problem_of_a_spec_is_reported_at_once() -> None:
    spec = {"kind": "hopping", "duration": "5x", "hop": "-2s", "aggregate": "bogus", "sise": 1,
            "violation": "ignore", "alter": {"shift": "soon"}}  # fmt: skip
    with pytest.raises(SpecError) as raised:
        parse_temporal_spec(spec)
    problems = raised.value.problems
    assert str(raised.value) == "; ".join(problems)
    assert [p.split(":")[0] for p in problems] == [
        "spec", "alter.shift", "aggregate", "duration", "hop", "violation"
    ]  # fmt: skip
    assert "unknown field 'sise'" in problems[0]


@pytest.mark.parametrize(
    ("kind", "near"), [("hoping", "hopping"), ("tumbing", "tumbling"), ("snapshots", "snapshot")]
)
def test_an_unknown_kind_names_every_kind_and_the_nearest(kind: str, near: str) -> None:
    with pytest.raises(SpecError, match=rf"sliding, hopping.*did you mean '{near}'\?"):
        list(replay({"kind": kind, "aggregate": "sum"}, []))


def test_alter_inside_a_window_spec() -> None:
    spec = {"kind": "snapshot", "aggregate": "count", "alter": {"shift": "-1s", "duration": "2s"}}
    assert short(run(spec, {"start": 5000, "end": 5001})) == [(4, 6, None, 1)]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "line 2: not JSON"),
        ('{"start": "yesterday"}', "line 2: start: not an ISO-8601 time"),
        ('{"end_edge": "nope", "end": 5}', "line 2: end edge 'nope' has no open start edge"),
        ('{"start": 0, "end": 5, "colour": "red"}', "line 2: unknown field 'colour'"),
        ('{"start": 5, "end": 5}', "line 2: event starting .* does not end after it starts"),
        (
            '{"start": 0, "end": 5, "id": "late", "value": 1}',
            "line 2: event 'late' starts at .* before the CTI",
        ),
        (
            '{"start": 0, "end": 5, "value": 1}',
            r"^line 2: an event without an id starts at 1970-01-01T00:00:00\.000Z, before the CTI "
            r"1970-01-01T00:00:00\.001Z$",
        ),
        ('{"start": 9, "end": 10, "value": "x"}', "line 2: sum needs a numeric value"),
    ],
)
def test_malformed_lines_name_their_number(line: str, message: str) -> None:
    spec = {"kind": "snapshot", "aggregate": "sum"}
    with pytest.raises(ReplayError, match=message):
        list(replay(spec, ['{"cti": 1}', line]))


def test_main_reports_late_input_and_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"kind": "snapshot", "aggregate": "count", "violation": "drop"}))
    lines = ['{"start": 0, "end": 5}', '{"cti": 3}', '{"start": 1, "end": 2}', ""]
    monkeypatch.setattr("sys.stdin", io.StringIO("\n".join(lines)))
    assert main([str(spec)]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out) == {
        "start": "1970-01-01T00:00:00.000Z",
        "end": "1970-01-01T00:00:00.005Z",
        "key": None,
        "value": 1,
    }
    assert "1 dropped, 0 adjusted" in err
    spec.write_text(json.dumps({"kind": "hopping", "duration": "1s", "aggregate": "count"}))
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    assert main([str(spec)]) == 2
    assert "hop: required for a hopping window" in capsys.readouterr().err
