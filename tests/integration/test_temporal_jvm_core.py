"""The JVM core of the temporal windows (``trending.temporal``) against the Python core, line for
line.

``trending.temporal.ReplayMain --cases`` replays many cases in one JVM. Each random query (every
window kind, with and without snapping, every aggregate, lifetime alterations, the three CTI
violation policies) runs a random input sequence (intervals, points, start and end edges, CTIs,
late and malformed input, several keys) three ways:

* as :func:`trending.windows.replay.replay` runs it: rows, then the error that stops it or the
  late-input warning, must equal the JVM's lines;
* going on past refused lines, as a driver that turns them into dead letters would: refused lines
  must leave both runs unchanged, and the rows after them must agree;
* as the first, with ``{"snapshot": true}`` lines at random points, where the JVM encodes every
  key's state to bytes and continues from the decoded states.

Lines are compared as JSON re-written by Python, so an integer and a float of equal value (``3``
and ``3.0``) differ, as they do in the Python core's output. Error messages are compared whole,
except the JSON parser's own words and the shown value of a non-numeric input.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import pytest

from tests.support.replay_jvm import replay_cases, replay_classpath
from tests.unit.windows.temporal.test_temporal_seed import (
    ADJUSTED_EVENTS,
    QUERY,
    SEED_INPUT,
    SEED_LIFETIMES,
    START,
    shown,
)
from trending.windows.replay import ReplayError, replay
from trending.windows.temporal import (
    END_OF_TIME,
    CtiViolation,
    EndEdge,
    IntervalEvent,
    StartEdge,
    TemporalInputError,
    format_time_ms,
    parse_time_ms,
)
from trending.windows.temporal.spec import parse_temporal_spec
from trending.windows.temporal_replay import (
    CtiLine,
    EndEdgeLine,
    KeyedTemporalRun,
    parse_replay_line,
    row_json,
)

pytestmark = pytest.mark.jvm

SEED = 20251130
QUERIES = 320
MAIN = "trending.temporal.ReplayMain"
SNAPSHOT = json.dumps({"snapshot": True})
S = 1000


# ------------------------------------------------------------------------------ the JVM side


@pytest.fixture(scope="module")
def classpath() -> str:
    return replay_classpath(MAIN)


@dataclass
class Case:
    """One replay: a temporal spec (as ``parse_temporal_spec`` takes it) and input lines."""

    spec: dict[str, Any]
    lines: list[str]
    keep_going: bool = False


def run_jvm(classpath: str, cases: list[Case]) -> list[list[str]]:
    """The output lines of every case, from one JVM, each re-written by Python's ``json``."""
    stream = []
    for case in cases:
        normal = json.loads(parse_temporal_spec(case.spec).to_jvm_json())
        stream += [json.dumps({"spec": normal, "keep_going": case.keep_going}), *case.lines]
    outputs: list[list[str]] = [[]]
    for line in replay_cases(classpath, MAIN, stream):
        data = json.loads(line)
        if data == {"end": True}:
            outputs.append([])
        else:
            outputs[-1].append(canonical(data))
    assert outputs.pop() == [], "output after the last case"
    assert len(outputs) == len(cases)
    return outputs


def canonical(data: dict[str, Any]) -> str:
    """A line as compared: JSON text, an error's message without the parts Java words its own
    way (a JSON parser's complaint, the repr of a refused value)."""
    if "error" in data:
        message = str(data["error"])
        for cut in ("not JSON", "needs a numeric value, got"):
            if cut in message:
                message = message[: message.index(cut) + len(cut)]
        data = {"error": message}
    return json.dumps(data)


# --------------------------------------------------------------------------- the Python side


def python_replay(case: Case) -> list[str]:
    """What :func:`trending.windows.replay.replay` writes, then its error or its warning."""
    lines = [line for line in case.lines if line != SNAPSHOT]
    warnings: list[str] = []
    out: list[str] = []
    try:
        out.extend(
            canonical(json.loads(line)) for line in replay(case.spec, lines, warnings.append)
        )
    except ReplayError as error:
        out.append(canonical({"error": str(error)}))
    out.extend(canonical({"warning": warning}) for warning in warnings)
    return out


def python_going_on(case: Case) -> list[str]:
    """The replay's run, going on past refused lines (an error line for each)."""
    run = KeyedTemporalRun(parse_temporal_spec(case.spec))
    out: list[str] = []

    def rows(action: Callable[[], list[Any]], where: str) -> bool:
        try:
            made = action()
        except (TemporalInputError, CtiViolation, ValueError) as error:
            out.append(canonical({"error": f"{where}: {error}"}))
            return False
        out.extend(canonical(row_json(key, row)) for key, row in made)
        return True

    lines = [line for line in case.lines if line != SNAPSHOT]
    for number, line in enumerate(lines, start=1):
        if line.strip():
            rows(partial(feed, run, line), f"line {number}")
    if rows(lambda: run.advance(END_OF_TIME), "end of input") and (run.dropped or run.adjusted):
        warning = f"late input (behind a CTI): {run.dropped} dropped, {run.adjusted} adjusted"
        out.append(canonical({"warning": warning}))
    return out


def feed(run: KeyedTemporalRun, line: str) -> list[Any]:
    """One line into ``run``, as the replay feeds it."""
    parsed = parse_replay_line(line)
    if isinstance(parsed, CtiLine):
        return run.advance(parsed.time)
    if isinstance(parsed, EndEdgeLine):
        run.end_edge(replay_id(parsed.id), parsed.end, parsed.key)
        return []
    id = None if parsed.id is None else replay_id(parsed.id)
    if parsed.end is None:
        run.insert(parsed.key, StartEdge(parsed.start, parsed.value, id))
    else:
        run.insert(parsed.key, IntervalEvent(parsed.start, parsed.end, parsed.value, id))
    return []


def replay_id(value: object) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise ReplayError(f"an id must be a string or an integer, got {value!r}")
    return str(value)


# ------------------------------------------------------------------------- random specs, inputs

AGGREGATES: list[Any] = [
    "count", "sum", "min", "max", "average", "time_weighted_average",
    {"top_k": 1}, {"top_k": 2}, {"top_k": 3},
]  # fmt: skip
DURATIONS = ["250ms", "500ms", "1s", "1500ms", "2s", "3s", "5s"]
KEYS: list[Any] = ["a", "b", 1, 1.0, None, True, "é✓", {"x": 1, "y": 2}, {"y": 2, "x": 1}]
VALUES: list[Any] = [0, 1, 2, 3, -3, 7, 1.0, 2.5, -0.0, 0.1, 0.2, 1e16, 2**53 + 1, 2**63 - 1,
                     2**70, -(2**64), 9007199254740993.0, 1e300]  # fmt: skip
ODD_VALUES: list[Any] = [None, "x", True, [1], {"v": 1}, "it's"]
EPOCHS = [0, START, -5 * S]


def random_alteration(rng: random.Random) -> dict[str, Any]:
    alter: dict[str, Any] = {}
    if rng.random() < 0.5:
        alter["shift"] = rng.choice(["-2s", "-500ms", "0s", "700ms", "1s", "3s"])
    if rng.random() < 0.35:
        alter["duration"] = rng.choice(["1ms", "500ms", "1s", "2500ms", "4s"])
    elif rng.random() < 0.4:
        alter["extend"] = rng.choice(["-1s", "-300ms", "500ms", "2s"])
    if rng.random() < 0.35:
        alter["clip"] = rng.choice(["1ms", "400ms", "1s", "3s"])
    return alter


def random_spec(rng: random.Random) -> dict[str, Any]:
    kind = rng.choice(["hopping", "tumbling", "snapshot", "count", "alter"])
    if kind == "alter":
        spec: dict[str, Any] = {"kind": "alter", **random_alteration(rng)}
    else:
        aggregate = rng.choice(AGGREGATES)
        spec = {"kind": kind, "aggregate": aggregate}
        if kind in ("hopping", "tumbling"):
            spec["duration"] = rng.choice(DURATIONS)
            if kind == "hopping":
                spec["hop"] = rng.choice(["250ms", "700ms", "1s", "2s", "3s"])
            if rng.random() < 0.5:
                spec["alignment"] = rng.choice([0, 300, -1700, "2012-03-15T12:00:00.250Z"])
            if rng.random() < 0.45 and aggregate != "time_weighted_average":
                spec["snap"] = True
            elif rng.random() < 0.2:
                spec["snap"] = False
        if kind == "count":
            spec["n"] = rng.choice([1, 1, 2, 3, 4])
        if rng.random() < 0.5:
            spec["alter"] = random_alteration(rng)
    if rng.random() < 0.8:
        spec["violation"] = rng.choice(["fail", "drop", "adjust"])
    return spec


class Inputs:
    """A random input sequence around a moving clock (ms after an epoch). ``tidy`` input is
    mostly accepted (an input the query refuses stops a replay); otherwise one line in five or
    so is malformed, late, of the wrong kind, or an edge that does not fit."""

    def __init__(self, rng: random.Random, numeric: bool, tidy: bool, late: bool) -> None:
        self.rng = rng
        self.numeric = numeric
        self.tidy = tidy
        self.late = late or not tidy
        self.epoch = rng.choice(EPOCHS)
        self.clock = 0
        self.open: list[tuple[str, Any, int]] = []
        self.next_id = 0
        self.keys = rng.sample(KEYS, rng.randint(1, 4))

    def time(self, offset: int) -> Any:
        t = self.epoch + offset
        return format_time_ms(t) if self.rng.random() < 0.08 else t

    def offset(self, early: int, late: int) -> int:
        return self.clock + self.rng.randint(early if self.late else 0, late)

    def value(self) -> Any:
        odd = not self.tidy and self.rng.random() < (0.03 if self.numeric else 0.3)
        if self.tidy and not self.numeric and self.rng.random() < 0.3:
            odd = True
        return self.rng.choice(ODD_VALUES if odd else VALUES)

    def key(self) -> dict[str, Any]:
        key = self.rng.choice(self.keys)
        return {} if key is None and self.rng.random() < 0.5 else {"key": key}

    def line(self) -> dict[str, Any] | str:
        roll = self.rng.random()
        if roll < 0.30:
            return self.interval()
        if roll < 0.40:
            start = self.offset(-300, 3000)
            return {"start": self.time(start), "end": self.time(start + 1), "value": self.value(),
                    **self.key()}  # fmt: skip
        if roll < 0.55:
            return self.start_edge()
        if roll < 0.70:
            return self.end_edge()
        if roll < 0.93 or self.tidy:
            return self.cti()
        return self.odd()

    def interval(self) -> dict[str, Any]:
        rng = self.rng
        start = self.offset(-1500, 4000)
        length = rng.choice([1, 50, 400, 1000, 2500, 6000, rng.randint(-200, 3000)])
        end = start + (max(length, 1) if self.tidy else length)
        line = {"start": self.time(start), "end": self.time(end), "value": self.value()}
        if rng.random() < 0.3:
            line["id"] = rng.choice([f"i{self.next_id}", self.next_id])
            self.next_id += 1
        return {**line, **self.key()}

    def start_edge(self) -> dict[str, Any]:
        rng = self.rng
        start = self.offset(-1000, 3000)
        line: dict[str, Any] = {"start": self.time(start), "value": self.value()}
        if rng.random() < 0.9:
            id: Any = f"e{self.next_id}" if rng.random() < 0.8 else self.next_id
            if self.open and not self.tidy and rng.random() < 0.05:
                id = rng.choice(self.open)[0]  # already open
            self.next_id += 1
            line["id"] = id
            key = self.key()
            self.open.append((str(id), key.get("key"), start))
            return {**line, **key}
        if rng.random() < 0.5:
            line["end"] = None
        return {**line, **self.key()}

    def end_edge(self) -> dict[str, Any]:
        rng = self.rng
        if not self.open:
            return self.interval()
        if not self.tidy and rng.random() < 0.05:
            return {"end_edge": rng.choice(["nope", 404]), "end": self.time(self.clock)}
        id, key, start = self.open.pop(rng.randrange(len(self.open)))
        end = self.offset(-1500, 5000)
        if self.tidy:
            end = max(end, start + 1)
        line: dict[str, Any] = {"end_edge": int(id) if id.isdigit() else id,
                                "end": self.time(end)}  # fmt: skip
        if rng.random() < 0.2:
            line["key"] = key
        return line

    def cti(self) -> dict[str, Any] | str:
        rng = self.rng
        roll = rng.random()
        if roll < 0.03:
            return {"cti": END_OF_TIME}
        if roll < 0.10:
            return {"cti": self.time(self.clock - rng.randint(0, 2000))}  # not after the last
        self.clock += rng.choice([0, 1, 250, 500, 999, 1000, 2000, 3500, 7000])
        return {"cti": self.time(self.clock)}

    def odd(self) -> dict[str, Any] | str:
        odd: list[dict[str, Any] | str] = [
            "",
            "{not json",
            "[1, 2]",
            {"start": 0, "end": 5, "colour": "red"},
            {"cti": 1.5},
            {"cti": True},
            {"start": None},
            {"start": "yesterday", "end": 5},
            {"start": "1970-01-01T00:00:00.0005Z", "end": 5},
            {"start": 10**20, "end": 5},
            {"end_edge": 1.5, "end": 3},
            {"end_edge": "x"},
            {"start": 0, "end": 5, "id": 2.5},
            {"start": "2012-06-28 00:00:01+01:00", "end": "20120628T000002", "value": 1},
        ]
        return self.rng.choice(odd)


def random_lines(rng: random.Random, spec: dict[str, Any], count: int, tidy: bool) -> list[str]:
    numeric = spec.get("aggregate") not in (None, "count")
    inputs = Inputs(rng, numeric, tidy, late=spec.get("violation", "fail") != "fail")
    lines = []
    for _ in range(count):
        line = inputs.line()
        lines.append(line if isinstance(line, str) else json.dumps(line))
    return lines


def with_snapshots(rng: random.Random, lines: list[str]) -> list[str]:
    out = []
    for line in lines:
        if rng.random() < 0.3:
            out.append(SNAPSHOT)
        out.append(line)
    return [*out, SNAPSHOT]


@dataclass
class Runs:
    """The random cases, each run four ways, and what the JVM wrote for each."""

    plain: list[tuple[Case, list[str]]]
    plain_snapshots: list[tuple[Case, list[str]]]
    going: list[tuple[Case, list[str]]]
    going_snapshots: list[tuple[Case, list[str]]]


@pytest.fixture(scope="module")
def randoms(classpath: str) -> Runs:
    rng = random.Random(SEED)
    cases = []
    for _ in range(QUERIES):
        spec = random_spec(rng)
        tidy = random_lines(rng, spec, rng.randint(10, 60), tidy=True)
        messy = random_lines(rng, spec, rng.randint(10, 60), tidy=False)
        cases.append(Case(spec, tidy))
        cases.append(Case(spec, with_snapshots(rng, tidy)))
        cases.append(Case(spec, messy, keep_going=True))
        cases.append(Case(spec, with_snapshots(rng, messy), keep_going=True))
    runs = list(zip(cases, run_jvm(classpath, cases), strict=True))
    return Runs(runs[0::4], runs[1::4], runs[2::4], runs[3::4])


def _mismatch(case: Case, expected: list[str], actual: list[str]) -> str:
    at = next((i for i, (a, b) in enumerate(zip(expected, actual, strict=False)) if a != b), None)
    at = min(len(expected), len(actual)) if at is None else at
    return (
        f"spec {json.dumps(case.spec)}\nfirst difference at line {at} of the output:\n"
        f"  python: {expected[at] if at < len(expected) else '<end>'}\n"
        f"  jvm:    {actual[at] if at < len(actual) else '<end>'}"
    )


# ------------------------------------------------------------------------------------ tests


def test_the_random_cases_cover_every_rule(randoms: Runs) -> None:
    seen: set[str] = set()
    for case, out in randoms.going + randoms.plain:
        spec = case.spec
        kind = spec["kind"] + ("-snap" if spec.get("snap") else "")
        seen.add(kind)
        seen.add(f"violation-{spec.get('violation', 'fail')}")
        aggregate = spec.get("aggregate")
        seen.add(f"aggregate-{next(iter(aggregate)) if isinstance(aggregate, dict) else aggregate}")
        alter = spec if kind == "alter" else spec.get("alter", {})
        seen.update(f"alter-{name}" for name in alter if name not in ("kind", "violation"))
        for line in out:
            data = json.loads(line)
            if "error" in data:
                message = data["error"]
                seen.add("error-" + ("violation" if "before the CTI" in message else "input"))
                seen.add("error-end" if message.startswith("end of input") else "error-line")
            elif "warning" in data:
                seen.add("warning")
                seen.add("dropped" if not data["warning"].endswith(": 0 dropped") else "")
                seen.add("adjusted" if not data["warning"].endswith(" 0 adjusted") else "")
            else:
                seen.add("row-" + type(data["value"]).__name__)
                seen.add("forever" if data["end"] is None else "row")
    expected = {"hopping", "tumbling", "hopping-snap", "tumbling-snap", "snapshot", "count"}
    expected |= {"alter", "violation-fail", "violation-drop", "violation-adjust"}
    expected |= {f"aggregate-{a if isinstance(a, str) else 'top_k'}" for a in AGGREGATES}
    expected |= {"alter-shift", "alter-duration", "alter-extend", "alter-clip"}
    expected |= {"error-violation", "error-input", "error-end", "error-line", "warning"}
    expected |= {"dropped", "adjusted", "row-int", "row-float", "row-list", "row-str", "forever"}
    assert expected <= seen, expected - seen


def test_the_jvm_replay_writes_what_the_python_replay_writes(randoms: Runs) -> None:
    whole = 0
    for case, out in randoms.plain:
        expected = python_replay(case)
        whole += not any('"error"' in line for line in expected)
        assert out == expected, _mismatch(case, expected, out)
    assert whole > QUERIES // 2


def test_refused_lines_leave_both_runs_unchanged(randoms: Runs) -> None:
    refused = 0
    for case, out in randoms.going:
        expected = python_going_on(case)
        refused += sum('"error"' in line for line in expected)
        assert out == expected, _mismatch(case, expected, out)
    assert refused > 1000


def test_states_decoded_from_their_bytes_go_on_with_the_same_rows(randoms: Runs) -> None:
    snapshots = 0
    for case, out in randoms.plain_snapshots:
        snapshots += case.lines.count(SNAPSHOT)
        expected = python_replay(case)
        assert out == expected, _mismatch(case, expected, out)
    for case, out in randoms.going_snapshots:
        snapshots += case.lines.count(SNAPSHOT)
        expected = python_going_on(case)
        assert out == expected, _mismatch(case, expected, out)
    assert snapshots > 2000


NUMBER_LINES = [
    # integers beyond a long, their exact sums and correctly rounded quotients, integers
    # meeting floats, equal values of both kinds (min, max and top_k keep the first), -0.0,
    # and the non-finite floats Python's json reads and writes bare (top_k left out with NaN:
    # Python's order then depends on its sort algorithm)
    [f'{{"start": 0, "end": 7, "value": {v}}}' for v in (2**63 - 1, 2**63 - 1, 1)],
    [f'{{"start": {i}, "end": 9, "value": {v}}}' for i, v in enumerate((2**80 + 1, 3, 2**53 + 1))],
    [f'{{"start": 0, "end": {e}, "value": {v}}}' for e, v in ((3, 1), (5, 1.0), (7, 1), (9, 2))],
    [f'{{"start": 0, "end": 4, "value": {v}}}' for v in ("-0.0", "0", "0.1", "0.2", "0.3")],
    [f'{{"start": 0, "end": 4, "value": {v}}}' for v in ("1e308", "1e308", "-1e308", "5e-324")],
    [f'{{"start": 0, "end": {e}, "value": {v}}}'
     for e, v in ((2, "Infinity"), (4, "-Infinity"), (6, "NaN"), (8, "2"))],
]  # fmt: skip


def test_numbers_as_python_computes_them(classpath: str) -> None:
    cases = [
        Case({"kind": "snapshot", "aggregate": aggregate}, lines)
        for lines in NUMBER_LINES
        for aggregate in AGGREGATES
        if not (isinstance(aggregate, dict) and any("NaN" in line for line in lines))
    ]
    cases += [
        Case({"kind": "tumbling", "duration": "5ms", "aggregate": aggregate}, lines)
        for lines in NUMBER_LINES
        for aggregate in ("sum", "average", "time_weighted_average")
    ]
    for case, out in zip(cases, run_jvm(classpath, cases), strict=True):
        expected = python_replay(case)
        assert out == expected, _mismatch(case, expected, out)


# ---------------------------------------------------------------- the seed's examples

SEED_SPEC = {
    "kind": "hopping",
    "duration": "5s",
    "hop": "2s",
    "alignment": "2012-03-15T12:00:00Z",
    "aggregate": "count",
    "snap": True,
}


def seed_lines(items: list[Any]) -> list[str]:
    """The seed's EdgeEvent.CreateStart/CreateEnd calls as replay lines."""
    lines: list[dict[str, Any]] = []
    for item in items:
        if isinstance(item, StartEdge):
            lines.append({"start": item.start, "id": item.id, "value": item.value})
        elif isinstance(item, EndEdge):
            lines.append({"end_edge": item.id, "end": item.end})
        else:
            lines.append(item)
    return [json.dumps(line) for line in lines]


def rows_of(out: list[str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out]


def to_ms(text: str | None) -> int:
    return END_OF_TIME if text is None else parse_time_ms(text)


@pytest.fixture(scope="module")
def seed_runs(classpath: str) -> dict[str, list[str]]:
    named = {
        "query": Case(SEED_SPEC, seed_lines(SEED_INPUT)),
        "query-snapshots": Case(
            SEED_SPEC, [line for item in seed_lines(SEED_INPUT) for line in (SNAPSHOT, item)]
        ),
        "open-edge": Case(SEED_SPEC, seed_lines([SEED_INPUT[0]])),
        "plain-hopping": Case(
            {**SEED_SPEC, "snap": False},
            seed_lines([SEED_INPUT[0], {"cti": START + 21 * S}]),
        ),
    }
    for name, (start, end) in SEED_LIFETIMES.items():
        line: dict[str, Any] = {"start": START + start * S, "value": name}
        if end is not None:
            line["end"] = START + end * S
        named[f"adjusted-{name}"] = Case(SEED_SPEC, [json.dumps(line)])
    outputs = run_jvm(classpath, list(named.values()))
    return dict(zip(named, outputs, strict=True))


def test_seed_adjusted_events_table(seed_runs: dict[str, list[str]]) -> None:
    # HoppingWindow2 over one event alone: its one row holds over the event's snapped lifetime
    adjusted = []
    for name in SEED_LIFETIMES:
        (row,) = rows_of(seed_runs[f"adjusted-{name}"])
        adjusted.append((shown(to_ms(row["start"])), shown(to_ms(row["end"])), name))
    assert adjusted == ADJUSTED_EVENTS


def test_seed_query_table(seed_runs: dict[str, list[str]]) -> None:
    for name in ("query", "query-snapshots"):
        rows = rows_of(seed_runs[name])
        table = [(shown(to_ms(r["start"])), shown(to_ms(r["end"])), r["value"]) for r in rows]
        assert table == QUERY
        assert rows[-1]["end"] is None
        assert seed_runs[name] == python_replay(Case(SEED_SPEC, seed_lines(SEED_INPUT)))


def test_seed_open_start_edge_gives_one_row_to_the_end_of_time(
    seed_runs: dict[str, list[str]],
) -> None:
    # one start edge, never closed; 2 s hops: HoppingWindow2 emits one row, not one per hop
    assert rows_of(seed_runs["open-edge"]) == [
        {"start": "2012-06-28T00:00:01.000Z", "end": None, "key": None, "value": 1}
    ]


def test_seed_plain_hopping_gives_a_row_per_window_of_an_open_edge(
    seed_runs: dict[str, list[str]],
) -> None:
    # the seed's problem: a hopping window emits every window up to the CTI (11 by +21 s), and
    # the end of time would take one per hop for ever: refused
    *rows, error = rows_of(seed_runs["plain-hopping"])
    assert len(rows) == 11
    assert {row["value"] for row in rows} == {1}
    assert error["error"].startswith("end of input: event 'e0' falls in ")
    assert "hopping windows at once" in error["error"]


# ------------------------------------------------------------------------- the normal form


def test_the_normal_form_fills_every_default() -> None:
    query = parse_temporal_spec({"kind": "tumbling", "duration": "5s", "aggregate": "sum",
                                 "alignment": 7001})  # fmt: skip
    assert json.loads(query.to_jvm_json()) == {
        "version": 1,
        "violation": "fail",
        "alteration": {"shift_ms": 0, "duration_ms": None, "extend_ms": 0, "clip_ms": None},
        "window": {
            "kind": "hopping",
            "duration_ms": 5000,
            "hop_ms": 5000,
            "alignment_ms": 2001,
            "snap": False,
            "aggregate": {"name": "sum", "k": None},
            "max_windows": 1_000_000,
        },
    }
    alter = {"shift": "-1s", "clip": "2s"}
    query = parse_temporal_spec(
        {"kind": "count", "n": 3, "aggregate": {"top_k": 2}, "alter": alter, "violation": "drop"}
    )
    normal = json.loads(query.to_jvm_json())
    assert normal["window"] == {"kind": "count", "n": 3, "aggregate": {"name": "top_k", "k": 2}}
    assert normal["alteration"] == {
        "shift_ms": -1000, "duration_ms": None, "extend_ms": 0, "clip_ms": 2000
    }  # fmt: skip
    assert normal["violation"] == "drop"
    snapped = parse_temporal_spec({**SEED_SPEC})
    assert json.loads(snapped.to_jvm_json())["window"]["max_windows"] is None
    assert json.loads(parse_temporal_spec({"kind": "alter"}).to_jvm_json())["window"] == {
        "kind": "alter"
    }


def test_lengths_beyond_the_jvm_cores_range_are_refused(classpath: str) -> None:
    spec = {"kind": "snapshot", "aggregate": "count", "alter": {"shift": "20000000000000s"}}
    (out,) = run_jvm(classpath, [Case(spec, ['{"start": 0, "end": 5}'])])
    (line,) = out
    assert "lengths up to 2^52 ms" in json.loads(line)["error"]
