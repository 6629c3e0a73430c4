"""FindReadings against the seed's rules: a worked transcript, then a brute-force model on
random streams (global and per-sensor windows), snapshots, the grid and the input order."""

from __future__ import annotations

import json
import math
import random
from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trending.windows.sensor_query import (
    FindReadings,
    FindReadingsConfig,
    Grid,
    Match,
    Outputs,
    PopularReading,
    Side,
    apply_in_order,
    in_order,
)
from trending.windows.spl import InputError

Row = dict[str, Any]


def reading(sensor_id: int, x: float, y: float, value: float = 1.0, ts: int = 0) -> Row:
    return {"sensor_id": sensor_id, "x": x, "y": y, "value": value, "ts": ts}


def query(query_id: int, x: float, y: float, distance: float, ts: int = 0) -> Row:
    return {"query_id": query_id, "x": x, "y": y, "distance": distance, "ts": ts}


class SeedModel:
    """The seed's FindReadings, literally: a list of the last ``size`` readings (one list per
    sensor when partitioned), a nested loop per query with
    ``sqrt(pow(dx, 2) + pow(dy, 2)) <= distance``, the oldest reading evicted when the
    (size+1)-th arrives, and popular when evicted with ``matches >= threshold`` (counted only
    for readings matched at least once)."""

    def __init__(self, size: int, threshold: int, per_sensor: bool) -> None:
        self.size, self.threshold, self.per_sensor = size, threshold, per_sensor
        self.lists: dict[int | None, list[tuple[int, Row]]] = {}
        self.matched: dict[int, int] = {}
        self.arrived = 0

    def on_reading(self, r: Row) -> list[PopularReading]:
        window = self.lists.setdefault(r["sensor_id"] if self.per_sensor else None, [])
        out = []
        window.append((self.arrived, r))
        self.arrived += 1
        if len(window) == self.size + 1:
            number, old = window.pop(0)
            if number in self.matched:
                count = self.matched.pop(number)
                if count >= self.threshold:
                    fields = (old["sensor_id"], old["x"], old["y"], old["value"], old["ts"])
                    out.append(PopularReading(*fields, count))
        return out

    def on_query(self, q: Row) -> list[Match]:
        content = sorted(item for window in self.lists.values() for item in window)
        out = []
        for number, r in content:
            dx, dy = r["x"] - q["x"], r["y"] - q["y"]
            distance = math.sqrt(dx * dx + dy * dy)  # C's pow(d, 2.0): inf on overflow
            if distance <= q["distance"]:
                out.append(Match(q["query_id"], r["sensor_id"], r["value"], r["ts"], q["ts"]))
                self.matched[number] = self.matched.get(number, 0) + 1
        return out

    def held(self) -> list[Row]:
        return [r for _, r in sorted(i for w in self.lists.values() for i in w)]


Event = tuple[Side, Row]


def run(operator: FindReadings | SeedModel, events: list[Event]) -> Outputs:
    out = Outputs()
    for side, record in events:
        if side is Side.READING:
            out.popular.extend(operator.on_reading(record))
        else:
            out.matches.extend(operator.on_query(record))
    return out


# ---- a worked transcript -----------------------------------------------------------------------


def test_seed_transcript_size_3_threshold_2() -> None:
    """Readings a..e on a line y = 0; queries of distance 1 (⊙ marks the query's centre).

    x:    0    1    2    3    4
    in:   a    b    c              window [a b c]
    q0:        ⊙                   matches a b c (a and c exactly at distance 1)
    in:             d(2)           a evicted (1 match): not popular; window [b c d]
    q1:             ⊙              matches b c d (b at distance 1)
    in:                  e(4)      b evicted (2 matches): popular; window [c d e]
    q2:   ⊙                        matches nothing (c at distance 2)
    """
    finder = FindReadingsConfig(size=3, threshold=2).build()
    a, b, c = reading(1, 0.0, 0.0, 10), reading(2, 1.0, 0.0, 20), reading(3, 2.0, 0.0, 30)
    d, e = reading(4, 2.0, 0.0, 40, ts=5), reading(5, 4.0, 0.0, 50, ts=6)
    assert [finder.on_reading(r) for r in (a, b, c)] == [[], [], []]
    assert finder.on_query(query(0, 1.0, 0.0, 1.0, ts=3)) == [
        Match(0, 1, 10.0, 0, 3), Match(0, 2, 20.0, 0, 3), Match(0, 3, 30.0, 0, 3),
    ]  # fmt: skip
    assert finder.on_reading(d) == []
    assert [m.sensor_id for m in finder.on_query(query(1, 2.0, 0.0, 1.0))] == [2, 3, 4]
    assert finder.on_reading(e) == [PopularReading(2, 1.0, 0.0, 20.0, 0, 2)]
    assert finder.on_query(query(2, 0.0, 0.0, 1.0)) == []
    assert finder.readings() == [c, d, e]


def test_per_sensor_windows_keep_the_last_n_readings_of_each_sensor() -> None:
    """size 2 per sensor: sensor 1 gets three readings, sensor 2 one; a query sees all four
    held readings of both windows (in arrival order)."""
    finder = FindReadingsConfig(size=2, threshold=1, partition_by_sensor=True).build()
    first = reading(1, 0.5, 0.5, 1)
    assert finder.on_reading(first) == []
    assert [m.value for m in finder.on_query(query(0, 0.5, 0.5, 0.0))] == [1.0]
    rest = [reading(2, 0.5, 0.5, 2), reading(1, 0.5, 0.5, 3), reading(1, 0.5, 0.5, 4)]
    assert [finder.on_reading(r) for r in rest] == [[], [], [PopularReading(1, 0.5, 0.5, 1, 0, 1)]]
    assert [m.value for m in finder.on_query(query(1, 0.5, 0.5, 0.0))] == [2.0, 3.0, 4.0]
    assert finder.readings() == rest


def test_a_reading_never_matched_is_not_popular_even_with_threshold_0() -> None:
    #   size 1: reading 1 is evicted by reading 2 unmatched (not popular even at 0 matches);
    #   the query matches reading 2, which reading 3 then evicts as popular (1 match >= 0)
    finder = FindReadingsConfig(size=1, threshold=0).build()
    assert finder.on_reading(reading(1, 0.0, 0.0)) == []
    assert finder.on_reading(reading(2, 0.0, 0.0)) == []
    assert finder.on_query(query(0, 0.0, 0.0, 0.0)) == [Match(0, 2, 1.0, 0, 0)]
    assert finder.on_reading(reading(3, 0.0, 0.0)) == [PopularReading(2, 0.0, 0.0, 1.0, 0, 1)]


# ---- against the brute-force model -------------------------------------------------------------

# Coordinates on a lattice of quarters make readings exactly at distance common (0, 1/4, ...,
# and 3-4-5: 3/4, 4/4 -> 5/4); arbitrary floats (also outside [0, 1)) cover the rest.
LATTICE = st.integers(0, 4).map(lambda n: n / 4)
COORD = st.one_of(LATTICE, LATTICE, LATTICE, st.floats(-1.0, 2.0, allow_nan=False))
EXACT = st.sampled_from([0.0, 0.25, 0.5, 1.0, 1.25])
DISTANCE = st.one_of(EXACT, EXACT, st.floats(0, 1), st.just(3.0))
TS = st.integers(0, 6)  # few instants: many equal timestamps
READING = st.builds(reading, st.integers(0, 3), COORD, COORD, st.floats(0, 1000), TS)
QUERY = st.builds(query, st.integers(0, 1 << 40), COORD, COORD, DISTANCE, TS)
CONFIG = st.builds(
    FindReadingsConfig,
    size=st.integers(1, 6),
    threshold=st.integers(0, 4),
    partition_by_sensor=st.booleans(),
    cell_size=st.sampled_from([0.01, 0.1, 0.125, 0.3, 1.0, 7.0]),
)
EVENTS = st.lists(
    st.one_of(st.tuples(st.just(Side.READING), READING), st.tuples(st.just(Side.QUERY), QUERY)),
    min_size=5,
    max_size=80,
)


def model_for(config: FindReadingsConfig) -> SeedModel:
    return SeedModel(config.size, config.threshold, config.partition_by_sensor)


@settings(max_examples=300, deadline=None)
@given(config=CONFIG, events=EVENTS)
def test_find_readings_equals_the_seed_model(
    config: FindReadingsConfig, events: list[Event]
) -> None:
    finder, model = config.build(), model_for(config)
    assert run(finder, events) == run(model, events)
    assert finder.readings() == model.held()


@settings(max_examples=100, deadline=None)
@given(config=CONFIG, events=EVENTS, cut=st.integers(0, 80))
def test_a_snapshot_at_any_cut_continues_identically(
    config: FindReadingsConfig, events: list[Event], cut: int
) -> None:
    whole = run(config.build(), events)
    first = config.build()
    head = run(first, events[:cut])
    resumed = config.build(json.loads(json.dumps(first.snapshot())))
    tail = run(resumed, events[cut:])
    assert head.matches + tail.matches == whole.matches
    assert head.popular + tail.popular == whole.popular


def random_events(rng: random.Random, count: int, lattice: bool) -> list[Event]:
    """Uniform points, or points on a grid of quarters queried at lattice distances (so
    many readings lie exactly at a query's distance)."""

    def coord() -> float:
        return rng.randrange(5) / 4 if lattice else rng.random()

    events: list[Event] = []
    for i in range(count):
        if rng.random() < 0.6:
            events.append((Side.READING, reading(rng.randrange(20), coord(), coord(), i)))
        else:
            distance = rng.choice([0.0, 0.25, 0.5, 1.25]) if lattice else rng.random() / 8
            events.append((Side.QUERY, query(i, coord(), coord(), distance)))
    return events


@pytest.mark.parametrize(
    ("size", "per_sensor", "cell", "lattice"),
    [(50, False, 0.02, False), (300, False, 0.5, False), (7, True, 0.05, False),
     (30, False, 0.1, True), (3, True, 0.25, True), (30, False, 2.0, True)],
)  # fmt: skip
def test_longer_random_streams_equal_the_model(
    size: int, per_sensor: bool, cell: float, lattice: bool
) -> None:
    events = random_events(random.Random(size), 4000, lattice)
    config = FindReadingsConfig(size, 2, partition_by_sensor=per_sensor, cell_size=cell)
    expected = run(model_for(config), events)
    assert run(config.build(), events) == expected
    assert len(expected.matches) > 1000 and len(expected.popular) > 50


# ---- the input order -------------------------------------------------------------------------


def job_order(readings: list[Row], queries: list[Row]) -> list[Event]:
    """The rule, written as a merge: instants ascending; at one instant the readings, then
    the queries, each by (partition, offset) when given, else in input order."""
    instants = sorted({r["ts"] for r in readings} | {q["ts"] for q in queries})
    merged: list[Event] = []
    for ts in instants:
        for side, rows in ((Side.READING, readings), (Side.QUERY, queries)):
            at = [(i, r) for i, r in enumerate(rows) if r["ts"] == ts]
            at.sort(
                key=lambda item: (item[1].get("partition", 0), item[1].get("offset", 0), item[0])
            )
            merged.extend((side, r) for _, r in at)
    return merged


@given(readings=st.lists(READING, max_size=25), queries=st.lists(QUERY, max_size=25))
def test_in_order_sorts_by_ts_then_readings_first_then_input_order(
    readings: list[Row], queries: list[Row]
) -> None:
    assert in_order(readings, queries) == job_order(readings, queries)


@given(
    readings=st.lists(st.tuples(READING, st.integers(0, 2), st.integers(0, 50)), max_size=25),
    queries=st.lists(st.tuples(QUERY, st.integers(0, 2), st.integers(0, 50)), max_size=25),
)
def test_in_order_uses_partition_and_offset_when_given(
    readings: list[tuple[Row, int, int]], queries: list[tuple[Row, int, int]]
) -> None:
    rows = [{**r, "partition": p, "offset": o} for r, p, o in readings]
    asked = [{**q, "partition": p, "offset": o} for q, p, o in queries]
    assert in_order(rows, asked) == job_order(rows, asked)


def test_apply_in_order_feeds_the_sorted_stream() -> None:
    """ts 5: reading r1 and query q (readings first, so q sees r1); ts 9: reading r2."""
    r1, r2 = reading(1, 0.0, 0.0, 1, ts=5), reading(2, 0.0, 0.0, 2, ts=9)
    q = query(0, 0.0, 0.0, 0.5, ts=5)
    out = apply_in_order([r2, r1], [q], FindReadingsConfig(size=1, threshold=1).build())
    assert out.matches == [Match(0, 1, 1.0, 5, 5)]
    assert out.popular == [PopularReading(1, 0.0, 0.0, 1.0, 5, 1)]
    assert apply_in_order([], [q]) == Outputs()


# ---- the grid ----------------------------------------------------------------------------------


def test_a_query_reads_only_the_cells_near_its_circle() -> None:
    rng = random.Random(3)
    grid = Grid(0.05)
    rows = [{"seq": i, "x": rng.random(), "y": rng.random()} for i in range(20_000)]
    for row in rows:
        grid.add(row)
    x, y, distance = 0.4, 0.6, 0.05
    seen = {r["seq"] for r in grid.near(x, y, distance)}
    within = {r["seq"] for r in rows if math.hypot(r["x"] - x, r["y"] - y) <= distance}
    reach = distance + 0.05  # the box, plus at most one cell on each side
    nearby = {r["seq"] for r in rows if max(abs(r["x"] - x), abs(r["y"] - y)) <= reach}
    assert within <= seen <= nearby
    assert len(seen) < len(rows) / 20  # at most 4 x 4 of the 20 x 20 cells: about 800


def test_the_grid_follows_the_window() -> None:
    # 500 readings (value i) through a window of 10: the window, and a query reaching every
    # point, see exactly the last 10 readings, oldest first
    finder = FindReadingsConfig(size=10, cell_size=0.1).build()
    rng = random.Random(5)
    rows = [reading(i % 7, rng.random(), rng.random(), float(i)) for i in range(500)]
    for row in rows:
        finder.on_reading(row)
    assert finder.readings() == rows[-10:]
    everything = finder.on_query(query(0, 0.5, 0.5, 10.0))
    assert [m.value for m in everything] == [float(i) for i in range(490, 500)]


@pytest.mark.parametrize(
    ("cell", "point", "distance"),
    [
        (1e-300, 1e308, 0.0),  # cell indexes overflow: far cells
        (0.05, 1e308, 1e308),  # the box overflows: scan the occupied cells
        (1e-9, 0.5, 1e6),  # a box of 10^30 cells, few occupied
    ],
)
def test_extreme_boxes_and_coordinates(cell: float, point: float, distance: float) -> None:
    finder = FindReadingsConfig(size=5, threshold=1, cell_size=cell).build()
    model = SeedModel(5, 1, per_sensor=False)
    events: list[Event] = [
        (Side.READING, reading(1, point, point)),
        (Side.READING, reading(2, -point, point)),
        (Side.READING, reading(3, 0.0, 0.0)),
        (Side.QUERY, query(0, point, point, distance)),
        (Side.QUERY, query(1, 0.0, 0.0, distance)),
    ]
    expected = run(model, events)
    assert expected.matches
    assert run(finder, events) == expected


# ---- inputs, config and snapshots --------------------------------------------------------------


@pytest.mark.parametrize(
    ("side", "record", "message"),
    [
        (Side.READING, {**reading(1, 0, 0), "x": math.nan}, "x must be a finite number"),
        (Side.READING, {**reading(1, 0, 0), "sensor_id": "1"}, "sensor_id must be an integer"),
        (Side.READING, {"sensor_id": 1, "x": 0.0, "y": 0.0}, "a reading needs 'value'"),
        (Side.QUERY, query(0, 0, 0, -1.0), "distance must be >= 0"),
        (Side.QUERY, query(0, 0, math.inf, 1.0), "y must be a finite number"),
        (Side.QUERY, {**query(0, 0, 0, 1.0), "ts": 1.5}, "ts must be an integer"),
    ],
)
def test_bad_inputs_are_refused_and_change_nothing(
    side: Side, record: Mapping[str, Any], message: str
) -> None:
    finder = FindReadingsConfig(size=2).build()
    finder.on_reading(reading(1, 0.0, 0.0))
    before = json.dumps(finder.snapshot())  # a copy: the snapshot may share the live state
    with pytest.raises(InputError, match=message):
        finder.apply(side, record)
    assert json.dumps(finder.snapshot()) == before


@pytest.mark.parametrize(
    ("settings_", "message"),
    [
        ({"size": 0}, "size"),
        ({"threshold": -1}, "threshold"),
        ({"cell_size": 0.0}, "cell_size"),
        ({"cell_size": math.inf}, "cell_size"),
    ],
)
def test_bad_configs_are_refused(settings_: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        FindReadingsConfig(**settings_)


def test_a_snapshot_is_refused_by_another_window_shape() -> None:
    snapshot = FindReadingsConfig(size=3).build().snapshot()
    with pytest.raises(ValueError, match="partition_by_sensor"):
        FindReadingsConfig(size=3, partition_by_sensor=True).build(snapshot)
    with pytest.raises(ValueError, match="not a find_readings snapshot"):
        FindReadingsConfig(size=3).build({**snapshot, "version": 99})
    assert FindReadingsConfig(size=3, threshold=9).build(snapshot).readings() == []
