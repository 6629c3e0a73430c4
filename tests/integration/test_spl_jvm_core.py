"""The JVM core of the SPL windows (``trending.spl``) against the Python core, event for event.

``trending.spl.ReplayMain --cases`` replays many cases in one JVM. Each random spec (every kind
and policy combination :func:`~trending.windows.spl.spec.parse_spec` allows, partitioned or not,
with partition eviction, summarizers, ``empty_window_events`` on and off) runs a random input
sequence three ways:

* as :func:`trending.windows.replay.replay` runs it: its lines must equal the JVM's, and both stop
  at the first input the window refuses;
* going on past refused inputs, with each event's ``time_ms``: refused inputs must leave the
  window unchanged in both;
* the same with ``{"snapshot": true}`` lines at random points, where the JVM encodes its state to
  bytes and continues from a window restored from them.

Lines are compared as JSON re-written by Python, so an integer and a float of equal value (``3``
and ``3.0``) differ, as they do in the Python core's output.
"""

from __future__ import annotations

import json
import random
import subprocess
from dataclasses import dataclass
from typing import Any

import pytest

from connectors.jvm import java_executable
from tests.support.replay_jvm import replay_cases, replay_classpath
from tests.unit.windows.spl.helpers import chain, vals
from trending.windows.replay import ReplayError, parse_line, replay
from trending.windows.spl import (
    Count,
    EventKind,
    InputError,
    TumblingWindow,
    WindowEvent,
    WindowSpec,
    parse_spec,
    summarizers,
)

pytestmark = pytest.mark.jvm

SEED = 20251129
SPECS = 400
MAIN = "trending.spl.ReplayMain"
ERROR = {"error": True}


# ------------------------------------------------------------------------------ the JVM side


@pytest.fixture(scope="module")
def classpath() -> str:
    return replay_classpath(MAIN)


@dataclass
class Case:
    """One replay: a spec (as ``parse_spec`` takes it), input lines and how to run them."""

    spec: dict[str, Any]
    lines: list[str]
    keep_going: bool = True
    time_ms: bool = True


def run_jvm(classpath: str, cases: list[Case]) -> list[list[str]]:
    """The event lines of every case, from one JVM."""
    stream = []
    for case in cases:
        normal = json.loads(parse_spec(case.spec).to_jvm_json())
        header = {"spec": normal, "time_ms": case.time_ms, "keep_going": case.keep_going}
        stream += [json.dumps(header), *case.lines]
    outputs: list[list[str]] = [[]]
    for line in replay_cases(classpath, MAIN, stream):
        data = json.loads(line)
        if data == {"end": True}:
            outputs.append([])
        else:
            outputs[-1].append(json.dumps(ERROR if "error" in data else data))
    assert outputs.pop() == [], "output after the last case"
    assert len(outputs) == len(cases)
    return outputs


# --------------------------------------------------------------------------- the Python side


def python_events(case: Case) -> list[str]:
    """What the Python core fires for the case's lines (refused inputs as error lines)."""
    spec = parse_spec(case.spec)
    window = spec.build()
    out: list[str] = []
    for line in case.lines:
        if not line.strip() or json.loads(line) == {"snapshot": True}:
            continue
        try:
            events = window.apply(parse_line(line, spec, window.now_ms))
        except (InputError, ReplayError):
            out.append(json.dumps(ERROR))
            if not case.keep_going:
                break
            continue
        for event in events:
            data = event.to_json()
            if case.time_ms:
                data["time_ms"] = event.time_ms
            out.append(json.dumps(data))
    return out


def python_replay(case: Case) -> list[str]:
    """What :func:`trending.windows.replay.replay` writes, then an error line if it raised."""
    out: list[str] = []
    try:
        out.extend(json.dumps(json.loads(line)) for line in replay(case.spec, case.lines))
    except ReplayError:
        out.append(json.dumps(ERROR))
    return out


# ------------------------------------------------------------------------- random specs, inputs

PARTITIONS = ["a", "b", "c", "d", 1, 2, 2.0, True, None, "é✓"]
VALUES = [0, 1, 1.0, 2, 2.0, 2.5, -3, -0.0, 7, 1e16, 0.1]
WIDE = [2**53, 2**53 + 1, 9007199254740992.0, -(2**60), 2**62, 1.5, 2**53 - 1]


def random_policy(rng: random.Random, role: str, kind: str) -> Any:
    choices = ["count", "delta", "time"] + (["punct"] if kind == "tumbling" else [])
    name = rng.choice(choices)
    if name == "count":
        return {"count": rng.choice([1, 1, 2, 3, 4, 6])}
    if name == "delta":
        attribute = "d" if role == "evict" or rng.random() < 0.5 else "e"
        return {"delta": {"attribute": attribute, "size": rng.choice([0, 1, 2, 2.5, 4])}}
    if name == "time":
        return {"time": rng.choice([0.5, 1, 2, 0.25, "250ms", "1.5s", 3])}
    return rng.choice(["punct", {"punct": True}])


def random_summaries(rng: random.Random) -> dict[str, Any]:
    forms: list[Any] = [
        "count",
        {"sum": "v"},
        {"mean": "v"},
        {"min": rng.choice(["v", "w"])},
        {"max": rng.choice(["v", "w"])},
        {"top_k": {"attribute": rng.choice(["v", "w"]), "k": rng.choice([1, 2, 3])}},
    ]
    chosen = rng.sample(forms, rng.randint(1, len(forms)))
    return {f"s{i}": form for i, form in enumerate(chosen)}


def random_spec(rng: random.Random) -> dict[str, Any]:
    kind = rng.choice(["tumbling", "sliding"])
    spec: dict[str, Any] = {"kind": kind, "evict": random_policy(rng, "evict", kind)}
    if kind == "sliding" and rng.random() < 0.8:
        spec["trigger"] = random_policy(rng, "trigger", kind)
    if rng.random() < 0.6:
        spec["partition_by"] = "p"
        if rng.random() < 0.5:
            limit = rng.choice(["age", "count", "tuples"])
            value = rng.choice([0.5, 1, 2, "1500ms"]) if limit == "age" else rng.randint(0, 4)
            spec["partition_eviction"] = {limit: value}
            if rng.random() < 0.3:
                spec["partition_eviction"]["select"] = rng.choice(["lru", "LRU"])
    if kind == "tumbling" and rng.random() < 0.5:
        spec["summaries"] = random_summaries(rng)
    if kind == "tumbling" and rng.random() < 0.4:
        spec["keep_tuples"] = rng.random() < 0.5
    if rng.random() < 0.6:
        spec["empty_window_events"] = rng.random() < 0.5
    return spec


def random_lines(rng: random.Random, count: int) -> list[str]:
    """Tuples (some refused: a delta or summarized attribute missing or not a number, no
    partition), punctuations, clock moves (several due instants at once, none, backwards) and
    a few malformed lines."""
    lines: list[str] = []
    now_ms, d, e = 0, float(rng.randint(-2, 3)), 0.0
    for i in range(count):
        roll = rng.random()
        if roll < 0.62:
            lines.append(json.dumps({"tuple": random_tuple(rng, i, d, e)}))
            d += rng.choice([0, 1, 1, 2, 3, -1, 0.5])
            e += rng.choice([0, 0.5, 1.5, 3.0])
        elif roll < 0.70:
            lines.append(json.dumps({"punct": True}))
        elif roll < 0.95:
            now_ms += rng.choice([0, 1, 125, 250, 500, 999, 1000, 1750, 2000, 4500, 9000])
            seconds: float = now_ms // 1000 if now_ms % 1000 == 0 else now_ms / 1000
            lines.append(json.dumps({"time": seconds}))
        else:
            lines.append(
                rng.choice(['{"punct": false}', '{"bogus": 1}', "", '{"time": -1}', '{"tuple": 3}'])
            )
    return lines


def random_tuple(rng: random.Random, i: int, d: float, e: float) -> dict[str, Any]:
    record: dict[str, Any] = {"id": i}
    if rng.random() < 0.97:
        record["p"] = rng.choice(PARTITIONS) if rng.random() > 0.02 else ["no"]
    roll = rng.random()
    if roll < 0.9:
        record["d"] = d
    elif roll < 0.95:
        record["d"] = rng.choice(["3", True, None, [1]])
    record["e"] = e if rng.random() < 0.95 else "x"
    record["v"] = rng.choice(VALUES) if rng.random() < 0.96 else rng.choice(["v", False])
    record["w"] = rng.choice(WIDE + VALUES)
    if rng.random() < 0.3:
        record["s"] = rng.choice(["text", "é✓", ""])
    return record


def with_snapshots(rng: random.Random, lines: list[str]) -> list[str]:
    out = []
    for line in lines:
        if rng.random() < 0.3:
            out.append(json.dumps({"snapshot": True}))
        out.append(line)
    return [*out, json.dumps({"snapshot": True})]


@dataclass
class Runs:
    """The random cases, each run three ways, and what the JVM wrote for each."""

    plain: list[tuple[Case, list[str]]]
    going: list[tuple[Case, list[str]]]
    snapshots: list[tuple[Case, list[str]]]


@pytest.fixture(scope="module")
def randoms(classpath: str) -> Runs:
    rng = random.Random(SEED)
    cases = []
    for _ in range(SPECS):
        spec, lines = random_spec(rng), random_lines(rng, rng.randint(10, 70))
        cases.append(Case(spec, lines, keep_going=False, time_ms=False))
        cases.append(Case(spec, lines))
        cases.append(Case(spec, with_snapshots(rng, lines)))
    runs = list(zip(cases, run_jvm(classpath, cases), strict=True))
    return Runs(runs[0::3], runs[1::3], runs[2::3])


def _mismatch(case: Case, expected: list[str], actual: list[str]) -> str:
    at = next((i for i, (a, b) in enumerate(zip(expected, actual, strict=False)) if a != b), None)
    at = min(len(expected), len(actual)) if at is None else at
    return (
        f"spec {json.dumps(case.spec)}\nfirst difference at event {at}:\n"
        f"  python: {expected[at] if at < len(expected) else '<end>'}\n"
        f"  jvm:    {actual[at] if at < len(actual) else '<end>'}"
    )


# ------------------------------------------------------------------------------------ tests


def test_the_random_specs_cover_every_rule(randoms: Runs) -> None:
    seen: set[str] = set()
    for case, out in randoms.going:
        seen.update(json.loads(line).get("event", "error") for line in out)
        spec = case.spec
        seen.add(f"{spec['kind']}-{next(iter(spec['evict']))}")
        if "trigger" in spec:
            seen.add(f"trigger-{next(iter(spec['trigger']))}")
        seen.update(f"limit-{name}" for name in spec.get("partition_eviction", {}))
    expected = {kind.value for kind in EventKind} - {"partition_select"}
    expected |= {"error", "limit-age", "limit-count", "limit-tuples"}
    expected |= {f"sliding-{p}" for p in ("count", "delta", "time")}
    expected |= {f"tumbling-{p}" for p in ("count", "delta", "time")}
    expected |= {f"trigger-{p}" for p in ("count", "delta", "time")}
    assert expected <= seen, expected - seen


def test_the_jvm_replay_writes_what_the_python_replay_writes(randoms: Runs) -> None:
    for case, out in randoms.plain:
        expected = python_replay(case)
        assert out == expected, _mismatch(case, expected, out)


def test_refused_inputs_leave_both_windows_unchanged_at_the_same_times(randoms: Runs) -> None:
    refused = 0
    for case, out in randoms.going:
        expected = python_events(case)
        refused += expected.count(json.dumps(ERROR))
        assert out == expected, _mismatch(case, expected, out)
    assert refused > 100


def test_a_window_restored_from_its_state_goes_on_with_the_same_events(randoms: Runs) -> None:
    for case, out in randoms.snapshots:
        expected = python_events(case)
        assert out == expected, _mismatch(case, expected, out)


# ---------------------------------------------------------------- the seed's transcripts

# Data Items with Partitions: 1a 2b 3a 4b 5b, 6b, 7a, 8a, 9b, 10b, 11a, 13a
PARTITIONED_ITEMS = [(1, "a"), (2, "b"), (3, "a"), (4, "b"), (5, "b"), (6, "b"),
                     (7, "a"), (8, "a"), (9, "b"), (10, "b"), (11, "a"), (13, "a")]  # fmt: skip


SIX = [1, 2, 3, 4, 5, 6]


def inserts(values: list[int]) -> list[str]:
    return [json.dumps({"tuple": {"v": v}}) for v in values]


def partitioned_inserts() -> list[str]:
    return [json.dumps({"tuple": {"v": v, "p": p}}) for v, p in PARTITIONED_ITEMS]


def as_events(lines: list[str]) -> list[WindowEvent]:
    out = []
    for line in lines:
        data = json.loads(line)
        kind = EventKind(data["event"])
        out.append(WindowEvent(kind, data["partition"], data["tuples"], data["time_ms"]))
    return out


def transcripts() -> list[tuple[str, Case]]:
    sliding = {"kind": "sliding", "evict": {"count": 4}}
    return [
        ("tumbling", Case({"kind": "tumbling", "evict": {"count": 4}}, inserts(SIX))),
        ("sliding", Case({**sliding, "trigger": {"count": 100}}, inserts(SIX))),
        ("sliding-marks", Case({**sliding, "trigger": {"count": 2}}, inserts(SIX))),
        ("tumbling-p", Case({"kind": "tumbling", "evict": {"count": 4}, "partition_by": "p"},
                            partitioned_inserts())),
        ("sliding-p", Case({**sliding, "trigger": {"count": 100}, "partition_by": "p"},
                           partitioned_inserts())),
        ("subwindows-tumbling", Case({"kind": "tumbling", "evict": {"count": 2}},
                                     inserts([1, 2]))),
        ("subwindows-sliding", Case({"kind": "sliding", "evict": {"count": 2}}, inserts([1, 2]))),
        ("sensors", Case({"kind": "sliding", "evict": {"count": 3}},
                         [json.dumps({"tuple": {"sensorId": s, "x": x}})
                          for s, x in [(1, 0.1), (2, 0.5), (3, 0.9), (4, 0.3), (5, 0.7)]])),
    ]  # fmt: skip


SEED_CONFIGURATIONS = [
    # CountWindowPolicy pC5(5), pC2(2); PunctWindowPolicy pP; DeltaWindowPolicy pDage2(2),
    # pDage0(0), pDtime2(2.0); TimeWindowPolicy pT8(8.0), pT2(2.0)
    ("tumbling", {"count": 5}, None),
    ("tumbling", "punct", None),
    ("tumbling", {"delta": {"attribute": "age", "size": 2}}, None),
    ("tumbling", {"time": 8.0}, None),
    ("tumbling", {"delta": {"attribute": "time", "size": 2.0}}, None),
    ("sliding", {"count": 5}, {"count": 2}),
    ("sliding", {"count": 5}, {"delta": {"attribute": "age", "size": 2}}),
    ("sliding", {"delta": {"attribute": "age", "size": 2}}, {"count": 5}),
    ("sliding", {"delta": {"attribute": "age", "size": 2}},
     {"delta": {"attribute": "age", "size": 0}}),
    ("sliding", {"delta": {"attribute": "age", "size": 2}}, {"time": 2.0}),
    ("sliding", {"time": 8.0}, {"count": 5}),
    ("sliding", {"time": 8.0}, {"delta": {"attribute": "age", "size": 2}}),
    ("sliding", {"time": 8.0}, {"time": 2.0}),
]  # fmt: skip


@pytest.fixture(scope="module")
def seed_runs(classpath: str) -> dict[str, list[WindowEvent]]:
    named = transcripts()
    for i, (kind, evict, trigger) in enumerate(SEED_CONFIGURATIONS):
        spec = {"kind": kind, "evict": evict, **({"trigger": trigger} if trigger else {})}
        line = json.dumps({"tuple": {"v": 1, "age": 1, "time": 0.5}})
        named.append((f"config-{i}", Case(spec, [line])))
    outputs = run_jvm(classpath, [case for _, case in named])
    return {name: as_events(out) for (name, _), out in zip(named, outputs, strict=True)}


def test_seed_tumbling_and_sliding_count_windows(seed_runs: dict[str, list[WindowEvent]]) -> None:
    # Tumbling window: () -> (1) -> (2, 1) -> (3, 2, 1) -> (4, 3, 2, 1) -> () -> (5) -> (6, 5)
    assert chain(seed_runs["tumbling"]) == (
        "() -> (1) -> (2, 1) -> (3, 2, 1) -> (4, 3, 2, 1) -> () -> (5) -> (6, 5)"
    )
    # Sliding: () -> (1) -> (2, 1) -> (3, 2, 1) -> (4, 3, 2, 1) -> (5, 4, 3, 2) -> (6, 5, 4, 3)
    assert chain(seed_runs["sliding"]) == (
        "() -> (1) -> (2, 1) -> (3, 2, 1) -> (4, 3, 2, 1) -> (5, 4, 3, 2) -> (6, 5, 4, 3)"
    )
    # trigger count(2): () -> (1) -> *(2, 1) -> (3, 2, 1) -> *(4, 3, 2, 1) -> (5, 4, 3, 2)
    #                   -> *(6, 5, 4, 3)
    marks = seed_runs["sliding-marks"]
    assert chain(marks) == (
        "() -> (1) -> *(2, 1) -> (3, 2, 1) -> *(4, 3, 2, 1) -> (5, 4, 3, 2) -> *(6, 5, 4, 3)"
    )
    triggers = [vals(e.tuples) for e in marks if e.kind is EventKind.TRIGGER]
    assert triggers == [[1, 2], [1, 2, 3, 4], [3, 4, 5, 6]]


def test_seed_partitioned_windows(seed_runs: dict[str, list[WindowEvent]]) -> None:
    # a: () -> (1) -> (3, 1) -> (7, 3, 1) -> (8, 7, 3, 1) -> () -> (11) -> (13, 11)
    # b: () -> (2) -> (4, 2) -> (5, 4, 2) -> (6, 5, 4, 2) -> () -> (9) -> (10, 9)
    tumbling = seed_runs["tumbling-p"]
    assert chain(tumbling, "a") == (
        "() -> (1) -> (3, 1) -> (7, 3, 1) -> (8, 7, 3, 1) -> () -> (11) -> (13, 11)"
    )
    assert chain(tumbling, "b") == (
        "() -> (2) -> (4, 2) -> (5, 4, 2) -> (6, 5, 4, 2) -> () -> (9) -> (10, 9)"
    )
    flushes = [(e.partition, vals(e.tuples)) for e in tumbling if e.kind is EventKind.BEFORE_FLUSH]
    assert flushes == [("b", [2, 4, 5, 6]), ("a", [1, 3, 7, 8])]
    # a: () -> (1) -> (3, 1) -> (7, 3, 1) -> (8, 7, 3, 1) -> (11, 8, 7, 3) -> (13, 11, 8, 7)
    # b: () -> (2) -> (4, 2) -> (5, 4, 2) -> (6, 5, 4, 2) -> (9, 6, 5, 4) -> (10, 9, 6, 5)
    sliding = seed_runs["sliding-p"]
    assert chain(sliding, "a") == (
        "() -> (1) -> (3, 1) -> (7, 3, 1) -> (8, 7, 3, 1) -> (11, 8, 7, 3) -> (13, 11, 8, 7)"
    )
    assert chain(sliding, "b") == (
        "() -> (2) -> (4, 2) -> (5, 4, 2) -> (6, 5, 4, 2) -> (9, 6, 5, 4) -> (10, 9, 6, 5)"
    )


def test_seed_tumbling_subwindows_are_removed_on_flush_sliding_ones_stay(
    seed_runs: dict[str, list[WindowEvent]],
) -> None:
    # "For tumbling windows, the subwindows ... are removed when the windows are flushed";
    # a count-based sliding window "can never become empty".
    assert chain(seed_runs["subwindows-tumbling"]) == "() -> (1) -> (2, 1) -> ()"
    assert chain(seed_runs["subwindows-sliding"]) == "() -> *(1) -> *(2, 1)"  # count(1) trigger


def test_seed_example_configurations(seed_runs: dict[str, list[WindowEvent]]) -> None:
    for i, (kind, evict, _) in enumerate(SEED_CONFIGURATIONS):
        # SPL deems a time-evicted sliding window full from its first insertion
        full = ["initial_full"] if kind == "sliding" and "time" in evict else []
        kinds = [e.kind.value for e in seed_runs[f"config-{i}"]]
        assert kinds == [*full, "before_insert", "after_insert"], SEED_CONFIGURATIONS[i]


def test_seed_sensor_query_popular_readings_on_eviction(
    seed_runs: dict[str, list[WindowEvent]],
) -> None:
    # SensorQuery: keep the last n readings (sliding count(n), trigger count(1)); a query
    # matches readings within its distance; a reading matched >= threshold times is output
    # on PopReadings when it is evicted (beforeTupleEvictionEvent). Each reading ends in the
    # trigger that shows the window; the queries run between readings.
    steps: list[list[WindowEvent]] = [[]]
    for event in seed_runs["sensors"]:
        steps[-1].append(event)
        if event.kind is EventKind.TRIGGER:
            steps.append([])
    matches: dict[int, int] = {}
    popular: list[int] = []

    def reading(step: int) -> list[Any]:
        for event in steps[step]:
            if event.kind is EventKind.BEFORE_EVICT:
                evicted = event.tuples[0]["sensorId"]
                if matches.pop(evicted, 0) >= 2:
                    popular.append(evicted)
        return list(steps[step][-1].tuples)

    def query(content: list[Any], x: float, distance: float) -> list[int]:
        found = [r["sensorId"] for r in content if abs(r["x"] - x) <= distance]
        for sensor in found:
            matches[sensor] = matches.get(sensor, 0) + 1
        return found

    reading(0)
    content = reading(1)
    assert query(content, 0.12, 0.05) == [1]
    content = reading(2)
    assert query(content, 0.11, 0.05) == [1]
    assert query(content, 0.52, 0.05) == [2]
    reading(3)  # evicts sensor 1, matched twice: popular
    content = reading(4)  # evicts sensor 2, matched once
    assert popular == [1]
    assert [r["sensorId"] for r in content] == [3, 4, 5]


# ------------------------------------------------------------------------- the normal form


def test_the_normal_form_fills_every_default() -> None:
    spec = parse_spec({"kind": "sliding", "evict": {"time": "250ms"}})
    assert json.loads(spec.to_jvm_json()) == {
        "version": 1,
        "kind": "sliding",
        "partition_by": None,
        "evict": {"policy": "time", "period_ms": 250},
        "trigger": {"policy": "count", "size": 1},
        "partition_eviction": None,
        "summaries": [],
        "keep_tuples": True,
        "empty_window_events": True,
    }
    spec = parse_spec(
        {
            "kind": "tumbling",
            "evict": "punct",
            "partition_by": "p",
            "partition_eviction": {"age": 1.5},
            "summaries": {"z": {"top_k": {"attribute": "v", "k": 2}}, "a": "count"},
        }
    )
    normal = json.loads(spec.to_jvm_json())
    assert normal["evict"] == {"policy": "punct"}
    assert normal["trigger"] is None
    assert normal["partition_eviction"] == {"limit": "age", "value": 1500, "select": "lru"}
    assert [s["name"] for s in normal["summaries"]] == ["z", "a"]


def test_what_the_jvm_core_cannot_run_is_refused(classpath: str) -> None:
    spec = {"kind": "sliding", "evict": {"count": 2}, "partition_by": "p",
            "partition_eviction": {"count": 1, "select": "operator"}}  # fmt: skip
    parsed = parse_spec(spec, selector=lambda infos: [])
    assert json.loads(parsed.to_jvm_json())["partition_eviction"]["select"] == "operator"
    header = {"spec": json.loads(parsed.to_jvm_json())}
    result = subprocess.run(
        [java_executable(), "-cp", classpath, MAIN, "--cases"],
        input=json.dumps(header) + "\n" + json.dumps({"tuple": {"p": 1}}) + "\n",
        capture_output=True, text=True, check=True, timeout=60,
    )  # fmt: skip
    first, end = [json.loads(line) for line in result.stdout.splitlines()]
    assert "LRU selection only" in first["error"]
    assert end == {"end": True}
    custom = summarizers.Custom(lambda: 0, lambda s, r: s, lambda s: s)
    spec_with_custom = WindowSpec(TumblingWindow(Count(2), summarizers={"c": custom}))
    with pytest.raises(ValueError, match="custom summarizer"):
        spec_with_custom.to_jvm_json()
