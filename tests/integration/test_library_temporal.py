"""``trending.temporal_window`` on a plain ``SparkSession.builder`` session: StreamInsight
windows over any DataFrame of interval, point and edge events, Spark's watermark as the CTI.

Input: seeded random events per key (intervals, points, start edges with or without their end
edge). A stream gets them as JSON files added to a folder between ``processAllAvailable()``
calls, in sync-time order (so no event is late unless made so), each file one micro-batch; it
runs twice, cut into files at two seeded points, and the first run is stopped after its first
file and continued by new queries on the same checkpoints. A batch DataFrame gets them all.

The expected rows come from brute forces written below from the window rules (the formulas in
``docs/library.md``), not from ``trending.windows``: a stream's rows are those final at its
last watermark ``W = newest sync time - delay``; a batch's are all of them (``W`` = the end of
time). The session has only what :mod:`trending.library` documents.
"""

from __future__ import annotations

import datetime as dt
import itertools
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support import file_streams
from tests.support.examples import run_example
from tests.support.file_streams import RowSink, seeded_cuts
from tests.support.plain_session import plain_session

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
PROVIDER_CONF = "spark.sql.streaming.stateStore.providerClass"
ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
EOT = 253_402_300_799_999  # 9999-12-31T23:59:59.999Z, the end of time
T0 = 1_700_000_000_000
STREAM_SCHEMA = "kind STRING, key STRING, id STRING, start TIMESTAMP, end TIMESTAMP, value DOUBLE"
BATCH_SCHEMA = "kind STRING, key STRING, id STRING, start LONG, end LONG, value DOUBLE"
DELAY_MS = 2000
OutRow = tuple[str, int, int | None, float | None, tuple[float, ...]]


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    yield from plain_session("tests-library-temporal")


# ---- input ------------------------------------------------------------------------------------


def random_events(seed: int, count: int, open_edges: bool) -> list[dict[str, Any]]:
    """Rows (epoch ms) of ``count`` events over keys a/b/c in the minute after ``T0``: an
    interval, a point, or a start edge and (unless left open) its end edge; integer values."""
    rng = random.Random(seed)
    rows: list[dict[str, Any]] = []
    for i in range(count):
        key, start = rng.choice("abc"), T0 + rng.randint(0, 60_000)
        end, value = start + rng.randint(1, 6000), float(rng.randint(-5, 20))
        kind = rng.choice(["INTERVAL", "POINT", "EDGE"])
        row = {"kind": kind, "key": key, "id": f"e{i}", "start": start, "end": None, "value": value}
        if kind == "INTERVAL":
            rows.append(row | {"end": end})
        elif kind == "POINT":
            rows.append(row)
        else:
            rows.append(row | {"kind": "START_EDGE"})
            if not (open_edges and rng.random() < 0.2):
                rows.append({"kind": "END_EDGE", "key": key, "id": f"e{i}", "start": None,
                             "end": end, "value": None})  # fmt: skip
    return rows


def sync(row: dict[str, Any]) -> int:
    """When a row starts changing the timeline: an end edge's end, else its start."""
    return int(row["end"] if row["kind"] == "END_EDGE" else row["start"])


def files_of(seed: int, rows: list[dict[str, Any]], files: int) -> list[list[dict[str, Any]]]:
    """``rows`` in sync-time order cut at seeded points; each file's lines shuffled."""
    return seeded_cuts(seed, sorted(rows, key=sync), files)


def iso(ms: int | None) -> str | None:
    if ms is None:
        return None
    moment = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(milliseconds=ms)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def write_file(folder: Path, rows: list[dict[str, Any]]) -> None:
    """``rows`` as a file of JSON lines in ``folder``, their times as ISO 8601 timestamps."""
    file_streams.write_file(folder, [r | {"start": iso(r["start"]), "end": iso(r["end"])}
                                     for r in rows])  # fmt: skip


# ---- the window rules, by brute force ----------------------------------------------------------


@dataclass(frozen=True)
class Event:
    """A key's event as the rules see it: lifetime ``[start, end)`` (end of time if open)."""

    start: int
    end: int
    value: float | None
    closed: bool  # an interval, a point or a closed edge (else an open start edge)


def events_of(rows: list[dict[str, Any]]) -> dict[str, list[Event]]:
    """Per key: intervals, points ``[t, t + 1)``, start edges to their end edge's end (or the
    end of time)."""
    ends = {(r["key"], r["id"]): r["end"] for r in rows if r["kind"] == "END_EDGE"}
    out: dict[str, list[Event]] = {}
    for r in rows:
        if r["kind"] == "END_EDGE":
            continue
        if r["kind"] == "START_EDGE":
            end = ends.get((r["key"], r["id"]))
            event = Event(r["start"], EOT if end is None else end, r["value"], end is not None)
        else:
            end = r["start"] + 1 if r["kind"] == "POINT" else r["end"]
            event = Event(r["start"], end, r["value"], True)
        out.setdefault(r["key"], []).append(event)
    return out


def aggregate(spec: Any, members: list[tuple[float, int]], span: int) -> tuple[Any, Any]:
    """``(value, values)`` of a window: ``members`` are (value, clipped length) pairs."""
    values = [v for v, _ in members]
    if isinstance(spec, dict):  # {"top_k": k}: the k largest, largest first
        return None, tuple(sorted(values, reverse=True)[: spec["top_k"]])
    value = {
        "count": lambda: len(values),
        "sum": lambda: sum(values),
        "min": lambda: min(values),
        "max": lambda: max(values),
        "average": lambda: sum(values) / len(values),
        "time_weighted_average": lambda: sum(v * n for v, n in members) / span,
    }[spec]()
    return float(value), ()


def hopping(events: list[Event], d: int, p: int, a: int, agg: Any, w: int) -> list[Any]:
    """Window ``n`` is ``[a + n*p, a + n*p + d)``; it holds the events it intersects, clipped
    to it; a non-empty window is one row once ``W`` reaches its end."""
    rows = []
    first = (min(e.start for e in events) - a - d) // p
    for n in itertools.count(first):
        start, end = a + n * p, a + n * p + d
        if end > w or start >= max(e.end for e in events):
            return rows
        members = [(e.value, min(e.end, end) - max(e.start, start))
                   for e in events if e.start < end and e.end > start]  # fmt: skip
        if members:
            rows.append((start, end, *aggregate(agg, members, d)))
    return rows


def snapped(events: list[Event], d: int, p: int, a: int, agg: Any, w: int) -> list[Any]:
    """HoppingWindow2: window ``n``'s result holds over its assignment ``[a + n*p + d,
    a + n*p + d + p)``; consecutive windows holding the same events make one row. A row is
    final once it ends by the first window end after ``W`` (no later event reaches it)."""
    horizon = EOT if w == EOT else next(a + d + k * p for k in itertools.count((w - a - d) // p)
                                        if a + d + k * p > w)  # fmt: skip

    def members(n: int) -> tuple[int, ...]:
        return tuple(
            i for i, e in enumerate(events) if e.start < a + n * p + d and e.end > a + n * p
        )

    last = max(e.end for e in events if e.end < EOT) if w == EOT else horizon
    ns = range((min(e.start for e in events) - a - d) // p, (last - a) // p + 2)
    rows = []
    for held, run in itertools.groupby(ns, key=members):
        n = list(run)
        start, end = a + n[0] * p + d, a + n[-1] * p + d + p
        if held and end <= horizon:
            rows.append((start, end, *aggregate(agg, [(events[i].value, 0) for i in held], 0)))
    return rows


def snapshot(events: list[Event], agg: Any, w: int) -> list[Any]:
    """Between consecutive event starts and ends the live events are the same: one row per
    span some event covers, final once ``W`` reaches its end."""
    times = sorted({t for e in events for t in (e.start, e.end)})
    rows = []
    for start, end in itertools.pairwise(times):
        live = [(e.value, end - start) for e in events if e.start <= start < e.end]
        if live and end <= w:
            rows.append((start, end, *aggregate(agg, live, end - start)))
    return rows


def count_windows(events: list[Event], n: int, agg: Any, w: int) -> list[Any]:
    """Over ``n`` consecutive distinct start times ``t_j..t_last``: the events starting there,
    clipped at ``t_last + 1``, as the point ``[t_last, t_last + 1)``, final once ``W`` passes
    ``t_last``."""
    starts = sorted({e.start for e in events if e.start < w})
    rows = []
    for j in range(n - 1, len(starts)):
        first, last = starts[j - n + 1], starts[j]
        members = [(e.value, min(e.end, last + 1) - e.start)
                   for e in events if first <= e.start <= last]  # fmt: skip
        rows.append((last, last + 1, *aggregate(agg, members, last + 1 - first)))
    return rows


def altered(events: list[Event], shift: int, extend: int, clip: int, w: int) -> list[Any]:
    """``s' = s + shift``, ``e' = min(e + shift + extend, s' + clip)`` (an open edge: ``s' +
    clip``), each event once ``W + shift`` passes ``s'`` and its end is known (an open edge's
    once the CTI reaches its clip)."""
    cti = EOT if w == EOT else w + shift
    rows = []
    for e in events:
        start = e.start + shift
        end = min(e.end + shift + extend, start + clip) if e.closed else start + clip
        if start < cti and (e.closed or end <= cti) and end > start:
            rows.append((start, end, None if e.value is None else float(e.value), ()))
    return rows


def expected(
    rows: list[dict[str, Any]], model: Callable[[list[Event], int], list[Any]], w: int
) -> list[OutRow]:
    out = []
    for key, events in events_of(rows).items():
        for start, end, value, values in model(events, w):
            out.append((key, start, None if end == EOT else end, value, tuple(values)))
    return sorted(out, key=order)


def order(row: OutRow) -> tuple[Any, ...]:
    key, start, end, value, values = row
    return (key, start, EOT if end is None else end, -1e300 if value is None else value, values)


def plain(rows: list[Any]) -> list[OutRow]:
    """Output rows (start and end as epoch ms), values rounded off float noise."""
    out = [
        (r["key"], r["start_ms"], r["end_ms"], None if r["value"] is None else round(r["value"], 9),
         tuple(r["values"]))
        for r in rows
    ]  # fmt: skip
    return sorted(out, key=order)


def rounded(rows: list[OutRow]) -> list[OutRow]:
    return [(k, s, e, None if v is None else round(v, 9), vs) for k, s, e, v, vs in rows]


def as_ms(df: Any) -> Any:
    return df.selectExpr(
        "key", "unix_millis(start) AS start_ms", "unix_millis(`end`) AS end_ms", "value", "values"
    )


# ---- streams -----------------------------------------------------------------------------------

HOPPING = {"kind": "hopping", "duration": "5s", "hop": "2s", "alignment": 700,
           "aggregate": "time_weighted_average"}  # fmt: skip
SNAPPED = {"kind": "hopping", "duration": "4s", "hop": "3s", "snap": True, "aggregate": "count"}
STREAM_MODELS: list[Callable[[list[Event], int], list[Any]]] = [
    lambda events, w: hopping(events, 5000, 2000, 700, "time_weighted_average", w),
    lambda events, w: snapped(events, 4000, 3000, 0, "count", w),
]


def stream_in_files(
    spark: Any, folder: Path, files: list[list[dict[str, Any]]], counts: list[int]
) -> list[RowSink]:
    """Each file one micro-batch through :data:`HOPPING` and :data:`SNAPPED` (a query each, side
    by side); with more than one file, the queries stop after the first and new ones go on from
    their checkpoints. Then wait for ``counts`` rows (the last ones come in no-data batches)."""
    from trending import temporal_window

    def window(spec: dict[str, Any], buckets: int | None) -> Callable[[Any], Any]:
        return lambda stream: temporal_window(
            stream, spec, key="key", start="start", end="end", kind_column="kind",
            id_column="id", value_column="value", watermark=f"{DELAY_MS} milliseconds",
            buckets=buckets,
        )  # fmt: skip

    return file_streams.stream_in_files(
        spark, folder, files,
        [window(HOPPING, 1), window(SNAPPED, None)],  # all keys in one grouping key | the default
        STREAM_SCHEMA, sink=lambda: RowSink(as_ms), write=write_file,
        restart_after=1 if len(files) > 1 else None,
        settle=lambda sinks: all(len(s.rows) >= c for s, c in zip(sinks, counts, strict=True)),
    )  # fmt: skip


def test_hopping_and_snapped_windows_for_two_splits_and_a_restart(
    spark: Any, tmp_path: Path
) -> None:
    #   70 events over keys a/b/c, some edges left open, delay 2 s; two windows side by side:
    #   hopping 5 s every 2 s (aligned at 700 ms), time-weighted average | HoppingWindow2 4 s
    #   every 3 s, count.  Run 1: 3 files, the queries stopped after file 1, and file 3 also
    #   holds an interval far behind the watermark (dropped). Run 2: all in one file.
    rows = random_events(seed=5, count=70, open_edges=True)
    w = max(sync(r) for r in rows) - DELAY_MS
    models = [expected(rows, model, w) for model in STREAM_MODELS]
    counts = [len(model) for model in models]
    files = files_of(51, rows, 3)
    late = {"kind": "INTERVAL", "key": "a", "id": "late", "start": T0 - 9000, "end": T0 - 8000,
            "value": 1000.0}  # fmt: skip
    first = stream_in_files(spark, tmp_path / "run1", [*files[:2], [*files[2], late]], counts)
    second = stream_in_files(spark, tmp_path / "run2", [rows], counts)
    assert [plain(sink.rows) for sink in first] == [rounded(model) for model in models]
    assert [plain(sink.rows) for sink in second] == [rounded(model) for model in models]


# ---- batches -----------------------------------------------------------------------------------

BATCH_CASES: list[tuple[dict[str, Any], Callable[[list[Event], int], list[Any]], bool]] = [
    (HOPPING, STREAM_MODELS[0], False),
    ({"kind": "tumbling", "duration": "3s", "aggregate": {"top_k": 2}},
     lambda e, w: hopping(e, 3000, 3000, 0, {"top_k": 2}, w), False),
    ({"kind": "hopping", "duration": "4s", "hop": "3s", "snap": True, "aggregate": "average"},
     lambda e, w: snapped(e, 4000, 3000, 0, "average", w), False),
    ({"kind": "hopping", "duration": "2s", "hop": "3s", "aggregate": "max"},
     lambda e, w: hopping(e, 2000, 3000, 0, "max", w), False),
    ({"kind": "snapshot", "aggregate": "sum"}, lambda e, w: snapshot(e, "sum", w), True),
    ({"kind": "snapshot", "aggregate": "min"}, lambda e, w: snapshot(e, "min", w), True),
    ({"kind": "count", "n": 3, "aggregate": "time_weighted_average"},
     lambda e, w: count_windows(e, 3, "time_weighted_average", w), True),
    ({"kind": "alter", "shift": "1s", "extend": "500ms", "clip": "4s"},
     lambda e, w: altered(e, 1000, 500, 4000, w), True),
]  # fmt: skip


def test_every_window_kind_on_a_batch_dataframe(spark: Any) -> None:
    #   a batch is all the input there is: every row becomes final (W = the end of time);
    #   open edges only where windows stay finite (snapshot, count, alter's clip)
    from trending import temporal_window

    inputs = {
        open_edges: spark.createDataFrame(random_events(7, 60, open_edges), BATCH_SCHEMA)
        for open_edges in (False, True)
    }
    for spec, model, open_edges in BATCH_CASES:
        rows = random_events(7, 60, open_edges)
        out = temporal_window(
            inputs[open_edges], spec, start="start", end="end", kind_column="kind",
            id_column="id", value_column="value",
        )  # fmt: skip
        assert plain(as_ms(out).collect()) == rounded(expected(rows, model, EOT)), spec


def test_without_a_kind_column_rows_are_intervals_or_points(spark: Any) -> None:
    from trending import temporal_window

    rows = [r for r in random_events(8, 40, False) if r["kind"] in ("INTERVAL", "POINT")]
    df = spark.createDataFrame(rows, BATCH_SCHEMA).drop("kind", "id")
    spec = {"kind": "snapshot", "aggregate": "count"}
    out = df.transform(temporal_window, spec, start="start", end="end")
    model = expected(rows, lambda e, w: snapshot(e, "count", w), EOT)
    assert plain(as_ms(out).collect()) == rounded(model)


def test_invalid_events_fail_the_query_or_are_dropped(spark: Any) -> None:
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import PySparkException

    from trending import temporal_window

    rows = random_events(9, 30, False)
    bad = {"kind": "END_EDGE", "key": "b", "id": "nowhere", "start": None, "end": T0 + 10,
           "value": None}  # fmt: skip
    df = spark.createDataFrame([*rows, bad], BATCH_SCHEMA)
    spec = {"kind": "snapshot", "aggregate": "count"}
    columns = {"start": "start", "end": "end", "kind_column": "kind", "id_column": "id"}
    with pytest.raises((PySparkException, Py4JJavaError), match="end edge 'nowhere' has no open"):
        temporal_window(df, spec, **columns).collect()
    out = temporal_window(df, spec, invalid="drop", **columns)
    model = expected(rows, lambda e, w: snapshot(e, "count", w), EOT)
    assert plain(as_ms(out).collect()) == rounded(model)


def test_a_streaming_window_names_the_setting_it_misses(spark: Any, tmp_path: Path) -> None:
    from trending import SplRunnerError, temporal_window

    stream = spark.readStream.schema(STREAM_SCHEMA).json(str(tmp_path))
    spark.conf.unset(PROVIDER_CONF)
    try:
        with pytest.raises(SplRunnerError, match=PROVIDER_CONF):
            temporal_window(stream, {"kind": "snapshot", "aggregate": "count"}, end="end")
    finally:
        spark.conf.set(PROVIDER_CONF, ROCKSDB)


def test_a_restart_with_another_number_of_buckets_is_refused_naming_it(
    spark: Any, tmp_path: Path
) -> None:
    #   buckets apply to the Python step only: the query runs there
    from pyspark.errors import StreamingQueryException

    from trending import temporal_window
    from trending.spark.temporal_jvm_step import ENGINE_CONF

    spark.conf.set(ENGINE_CONF, "python")
    try:
        _restart_with_other_buckets(spark, tmp_path, StreamingQueryException, temporal_window)
    finally:
        spark.conf.unset(ENGINE_CONF)


def _restart_with_other_buckets(
    spark: Any, tmp_path: Path, refused: type[Exception], temporal_window: Any
) -> None:

    source = tmp_path / "in"
    source.mkdir()
    write_file(source, random_events(5, 12, open_edges=True))

    def run(buckets: int) -> None:
        stream = spark.readStream.schema(STREAM_SCHEMA).json(str(source))
        query = (
            temporal_window(stream, SNAPPED, key="key", start="start", end="end",
                            kind_column="kind", id_column="id", value_column="value",
                            watermark="0 seconds", buckets=buckets)
            .writeStream.format("noop")
            .option("checkpointLocation", str(tmp_path / "chk"))
            .start()
        )  # fmt: skip
        try:
            query.processAllAvailable()
        finally:
            query.stop()

    run(3)
    later = random_events(6, 12, open_edges=False)
    for row in later:  # a minute on: the watermark moves and the first run's timers fire
        for name in ("start", "end"):
            row[name] = None if row[name] is None else row[name] + 60_000
    write_file(source, later)
    with pytest.raises(refused, match="in 3 buckets, not 5: give buckets=3"):
        run(5)


def test_the_example_runs_on_a_plain_session() -> None:
    lines = run_example("library_temporal_window.py", "--windows", "6")
    assert "batch: room 1 [00:00:00, 00:00:10) average 21.5" in lines
    assert "batch: room 2 [00:00:10, 00:00:20) average 19.0" in lines
    assert any(line.startswith("rate: key 0 ") and line.endswith(" count 5") for line in lines)
