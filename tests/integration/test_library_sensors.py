"""``trending.SensorMatching`` on a plain ``SparkSession.builder`` session: queries matched
against the last N readings, popular readings on eviction, late and invalid rows routed.

Input: seeded random readings and queries with distinct event times that mostly move forward
and sometimes jump back (some behind the watermark), a few with no time or a negative
distance. Each micro-batch is one JSON file in each of two folders (readings, queries); the
first query stops after two batches and a new query with a new ``SensorMatching`` goes on from
the same checkpoint. Then the last batch's commit is removed, as a crash between the writer and
Spark's commit would leave it: the restarted query runs that batch again and must hand over the
same rows.

The expected rows come from a brute force written below from the rules in ``docs/library.md``
(a list per window, every reading checked against every query), not from ``trending.windows``.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import random
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.plain_session import plain_session

pytestmark = pytest.mark.integration

T0 = 1_700_000_000_000
SIZE, THRESHOLD, LATENESS = 6, 2, 3_000
Event = dict[str, Any]
Match = tuple[int, int, float, int, int, float, float]
Popular = tuple[int, float, float, float, int, int]
Late = tuple[str, str, int | None, int]
READINGS_SCHEMA = "sensor_id LONG, x DOUBLE, y DOUBLE, value DOUBLE, ts LONG"
QUERIES_SCHEMA = "query_id LONG, x DOUBLE, y DOUBLE, distance DOUBLE, ts LONG"


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    yield from plain_session("tests-library-sensors")


def random_batches(seed: int, count: int, parts: int) -> list[tuple[list[Event], list[Event]]]:
    """``parts`` batches of (readings, queries); event times distinct."""
    rng = random.Random(seed)
    clock, used = T0, set()
    events: list[tuple[str, Event]] = []
    for i in range(count):
        clock += rng.randrange(1, 400)
        t = clock - (rng.randrange(0, 6_000) if rng.random() < 0.12 else 0)
        while t in used:
            t += 1
        used.add(t)
        ts: int | None = None if rng.random() < 0.02 else t
        x, y = rng.random(), rng.random()
        if rng.random() < 0.7:
            row = {"sensor_id": rng.randrange(4), "x": x, "y": y, "value": float(i), "ts": ts}
            events.append(("r", row))
        else:
            d = -1.0 if rng.random() < 0.04 else rng.random() * 0.5
            events.append(("q", {"query_id": i, "x": x, "y": y, "distance": d, "ts": ts}))
    points = sorted(rng.sample(range(1, count), parts - 1))
    batches = []
    for a, b in zip([0, *points], [*points, count], strict=True):
        part = events[a:b]
        batches.append(([e for k, e in part if k == "r"], [e for k, e in part if k == "q"]))
    return batches


def model(
    batches: list[tuple[list[Event], list[Event]]], per_sensor: bool, lateness: int = LATENESS
) -> tuple[list[list[Match]], list[list[Popular]], list[list[Late]]]:
    """Per micro-batch: matches, popular readings, rows not applied (sorted). A lateness of
    -1 applies every event of a batch (the watermark passes the newest)."""
    watermark: int | None = None
    pending: list[tuple[int, int, Event]] = []  # (ts, 0 reading / 1 query, event)
    windows: dict[Any, list[Event]] = {}
    matched: dict[int, int] = {}  # id(reading) -> matches
    out_m, out_p, out_l = [], [], []
    for readings, queries in batches:
        late: list[Late] = []
        newest = None
        for kind, name, rows in ((0, "readings", readings), (1, "queries", queries)):
            for e in rows:
                ident = e["sensor_id"] if kind == 0 else e["query_id"]
                if e["ts"] is None:
                    late.append((name, "no event time", e["ts"], ident))
                elif kind == 1 and e["distance"] < 0:
                    late.append((name, "distance must be a number >= 0", e["ts"], ident))
                elif watermark is not None and e["ts"] < watermark:
                    late.append((name, "late", e["ts"], ident))
                else:
                    pending.append((e["ts"], kind, e))
                    newest = e["ts"] if newest is None else max(newest, e["ts"])
        if newest is not None:
            candidate = newest - lateness
            watermark = candidate if watermark is None else max(watermark, candidate)
        due = sorted((p for p in pending if p[0] < watermark), key=lambda p: (p[0], p[1]))  # type: ignore[operator]
        pending = [p for p in pending if not p[0] < watermark]  # type: ignore[operator]
        matches: list[Match] = []
        popular: list[Popular] = []
        for ts, kind, e in due:
            if kind == 0:
                window = windows.setdefault(e["sensor_id"] if per_sensor else None, [])
                window.append(e)
                if len(window) > SIZE:
                    gone = window.pop(0)
                    m = matched.pop(id(gone), 0)
                    if m >= max(1, THRESHOLD):
                        popular.append(
                            (gone["sensor_id"], gone["x"], gone["y"], gone["value"], gone["ts"], m)
                        )
            else:
                for window in windows.values():
                    for r in window:
                        dx, dy = r["x"] - e["x"], r["y"] - e["y"]
                        if math.sqrt(dx * dx + dy * dy) <= e["distance"]:
                            matches.append(
                                (e["query_id"], r["sensor_id"], r["value"], r["ts"], ts,
                                 r["x"], r["y"])
                            )  # fmt: skip
                            matched[id(r)] = matched.get(id(r), 0) + 1
        out_m.append(sorted(matches))
        out_p.append(sorted(popular))
        out_l.append(sorted(late, key=repr))
    return out_m, out_p, out_l


def ms(value: dt.datetime) -> int:
    return int(value.replace(tzinfo=dt.timezone.utc).timestamp() * 1000)


class Sink:
    """What the writer hands over, per batch id (a batch run again replaces its rows)."""

    def __init__(self) -> None:
        self.matches: dict[int, list[Match]] = {}
        self.popular: dict[int, list[Popular]] = {}
        self.late: dict[int, list[Late]] = {}

    def on_match(self, rows: Any, batch_id: int) -> None:
        self.matches[batch_id] = sorted(
            (r.query_id, r.sensor_id, r.value, ms(r.reading_time), ms(r.query_time), r.x, r.y)
            for r in rows.collect()
        )

    def on_popular(self, rows: Any, batch_id: int) -> None:
        self.popular[batch_id] = sorted(
            (r.sensor_id, r.x, r.y, r.value, ms(r.reading_time), r.matches) for r in rows.collect()
        )

    def on_late(self, rows: Any, batch_id: int) -> None:
        got = []
        for r in rows.collect():
            row = json.loads(r.row)
            ident = row["sensor_id"] if r.input == "readings" else row["query_id"]
            got.append((r.input, r.reason, row.get("ts"), ident))
        self.late[batch_id] = sorted(got, key=repr)


def write_file(folder: Path, number: int, rows: list[Event]) -> None:
    """File ``number``, dated so that the file source takes it after the ones before it."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{number:04d}.json"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    stamp = time.time() + number
    os.utime(path, (stamp, stamp))


def run_stream(
    spark: Any, root: Path, checkpoint: Path, sink: Sink, per_sensor: bool, size: int = SIZE
) -> None:
    """One query (a new ``SensorMatching``) over the files not read yet, one micro-batch each."""
    from trending import SensorMatching

    matching = SensorMatching(
        size=size, threshold=THRESHOLD, lateness="3s", per_sensor=per_sensor, cell_size=0.1
    )
    readings = (
        spark.readStream.schema("sensor_id LONG, x DOUBLE, y DOUBLE, value DOUBLE, ts LONG")
        .option("maxFilesPerTrigger", 1)
        .json(str(root / "readings"))
    )
    queries = (
        spark.readStream.schema("query_id LONG, x DOUBLE, y DOUBLE, distance DOUBLE, ts LONG")
        .option("maxFilesPerTrigger", 1)
        .json(str(root / "queries"))
    )
    query = matching.start(
        readings, queries, sink.on_match, checkpoint=str(checkpoint),
        on_popular=sink.on_popular, on_late=sink.on_late,
    )  # fmt: skip
    try:
        query.processAllAvailable()
    finally:
        query.stop()


def in_order(per_batch: dict[int, list[Any]]) -> list[list[Any]]:
    return [rows for _, rows in sorted(per_batch.items())]


@pytest.mark.parametrize("seed,per_sensor", [(7, False), (13, True)])
def test_stream_matches_model_across_restart_and_replay(
    spark: Any, tmp_path: Path, seed: int, per_sensor: bool
) -> None:
    batches = random_batches(seed, 500, 6)
    expected_m, expected_p, expected_l = model(batches, per_sensor)
    root, checkpoint = tmp_path / "in", tmp_path / "cp"
    sink = Sink()
    for number in range(2):
        write_file(root / "readings", number, batches[number][0])
        write_file(root / "queries", number, batches[number][1])
    run_stream(spark, root, checkpoint, sink, per_sensor)
    assert len(sink.matches) == 2
    for number in range(2, len(batches)):  # a new query on the same checkpoint
        write_file(root / "readings", number, batches[number][0])
        write_file(root / "queries", number, batches[number][1])
    run_stream(spark, root, checkpoint, sink, per_sensor)

    assert in_order(sink.matches) == expected_m
    assert in_order(sink.popular) == expected_p
    assert [sink.late.get(b, []) for b in range(len(batches))] == expected_l
    assert sum(map(len, expected_m)) > 50 and sum(map(len, expected_p)) > 3
    assert any(reason == "late" for b in expected_l for _, reason, _, _ in b)

    # a crash after the writer handed the last batch over and before Spark committed it
    last = max(sink.matches)
    (checkpoint / "commits" / str(last)).unlink()
    (checkpoint / "commits" / f".{last}.crc").unlink(missing_ok=True)
    replayed = Sink()
    run_stream(spark, root, checkpoint, replayed, per_sensor)
    assert replayed.matches == {last: expected_m[-1]}
    assert replayed.popular == {last: expected_p[-1]}

    # the checkpoint keeps its settings: a window of another size is refused, nothing handed
    write_file(root / "readings", len(batches), batches[0][0])
    write_file(root / "queries", len(batches), batches[0][1])
    other = Sink()
    with pytest.raises(Exception, match="holds sensor matching of other settings"):
        run_stream(spark, root, checkpoint, other, per_sensor, size=SIZE + 1)
    assert other.matches == {}


@pytest.mark.parametrize("seed,per_sensor", [(21, False), (22, True)])
def test_two_batch_dataframes_match_the_model_of_one_final_batch(
    spark: Any, seed: int, per_sensor: bool
) -> None:
    #   all events at once: every valid one applied in event-time order, none late; readings
    #   still in the window at the end are not popular
    from trending import SensorMatching

    batches = random_batches(seed, 400, 3)
    readings = [row for batch_readings, _ in batches for row in batch_readings]
    queries = [row for _, batch_queries in batches for row in batch_queries]
    expected_m, expected_p, expected_l = model([(readings, queries)], per_sensor, lateness=-1)
    matching = SensorMatching(size=SIZE, threshold=THRESHOLD, lateness="3s",
                              per_sensor=per_sensor, cell_size=0.1)  # fmt: skip
    reading_rows = spark.createDataFrame(readings, READINGS_SCHEMA)
    query_rows = spark.createDataFrame(queries, QUERIES_SCHEMA)
    results = matching.run(reading_rows, query_rows)
    sink = Sink()
    sink.on_match(results.matches, 0)
    sink.on_popular(results.popular, 0)
    sink.on_late(results.rejected, 0)
    assert sink.matches[0] == expected_m[0]
    assert sink.popular[0] == expected_p[0]
    assert sink.late[0] == expected_l[0]
    assert len(expected_m[0]) > 50 and len(expected_p[0]) > 3 and expected_l[0]
    assert not any(reason == "late" for _, reason, _, _ in expected_l[0])
    again = matching.run(reading_rows, query_rows)  # runs from nothing again, not on from before
    sink.on_match(again.matches, 1)
    assert sink.matches[1] == expected_m[0]


def test_settings_and_columns_are_checked_at_once(spark: Any, tmp_path: Path) -> None:
    from trending import SensorMatching, SensorMatchingError

    with pytest.raises(SensorMatchingError) as error:
        SensorMatching(size=0, threshold=-1, lateness="3 fortnights", cell_size=0)
    message = str(error.value)
    for part in ("size", "threshold", "lateness", "cell_size"):
        assert part in message
    write_file(tmp_path / "r", 0, [])
    readings = spark.readStream.schema("id LONG, x DOUBLE, y DOUBLE, value DOUBLE, ts LONG").json(
        str(tmp_path / "r")
    )
    queries = spark.readStream.schema(
        "query_id LONG, x DOUBLE, y DOUBLE, distance DOUBLE, ts STRING"
    ).json(str(tmp_path / "r"))
    with pytest.raises(SensorMatchingError, match="sensor_id"):
        SensorMatching().events(readings, queries)
    with pytest.raises(SensorMatchingError, match="timestamp or epoch"):
        SensorMatching().events(readings, queries, sensor="id")


def test_the_example_prints_matches_that_follow_the_rule() -> None:
    """``examples/library_sensor_matching.py``: readings ``n`` at ``((37 n mod 100) / 100,
    (61 n mod 100) / 100)``, queries at (0.5, 0.5) within 0.25, a window of the last 10."""
    from tests.support.examples import run_example

    lines = run_example("library_sensor_matching.py", "--matches", "20")
    matches = [line.split() for line in lines if line.startswith("match: ")]
    assert len(matches) >= 20
    for words in matches:  # match: query Q sensor S value V at (x, y)
        n = int(words[6])
        x, y = (37 * n % 100) / 100, (61 * n % 100) / 100
        assert int(words[4]) == n % 3
        assert math.sqrt((x - 0.5) ** 2 + (y - 0.5) ** 2) <= 0.25
        assert words[8] == f"({x:.2f}," and words[9] == f"{y:.2f})"
    for line in lines:
        if line.startswith("popular: "):
            assert int(line.split()[-2]) >= 3
