"""``trending.spl_window`` on a plain ``SparkSession.builder`` session: typed window events.

Input: seeded random rows of several types (string, long, double, timestamp, date, decimal,
boolean, a nullable string), as JSON files added to a folder between ``processAllAvailable()``
calls, each file one micro-batch. Every stream runs twice, cut into files at two different
seeded points, and the first run is stopped half-way and continued by a new query on the same
checkpoint. The expected events come from a brute force written below from the SPL rules (not
from ``trending.windows``), and the tuples of each event must equal the input rows Spark reads
back, value for value and type for type.

The session has only what :mod:`trending.library` documents: the RocksDB state store provider
(which ``spl_window`` checks) and few shuffle partitions.
"""

from __future__ import annotations

import datetime as dt
import random
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import file_streams
from tests.support.examples import run_example
from tests.support.file_streams import RowSink, write_file
from tests.support.file_streams import seeded_cuts as cuts
from tests.support.plain_session import plain_session

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
PROVIDER_CONF = "spark.sql.streaming.stateStore.providerClass"
ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
SCHEMA = (
    "user STRING, id LONG, v LONG, x DOUBLE, ts TIMESTAMP, day DATE, amount DECIMAL(10,2), "
    "flag BOOLEAN, note STRING"
)
T0 = dt.datetime(2024, 11, 3, 5, 0, tzinfo=dt.timezone.utc)  # New York's repeated hour is 6-7
Event = tuple[
    str, int, list[dict[str, Any]], int, Any, int
]  # event, seq, tuples, time, summary, size


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    yield from plain_session("tests-library-spl")


def random_rows(seed: int, count: int) -> list[dict[str, Any]]:
    """``count`` rows, ``id`` 0.., users a/b/c at random, ``ts`` rising with ``id``."""
    rng = random.Random(seed)
    rows, ms = [], 0
    for i in range(count):
        ms += rng.randint(1, 1500)
        ts = T0 + dt.timedelta(milliseconds=ms)
        rows.append(
            {
                "user": rng.choice("abc"),
                "id": i,
                "v": rng.randint(-5, 20),
                "x": rng.randint(0, 80) / 4,
                "ts": ts.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
                "day": (dt.date(2024, 1, 1) + dt.timedelta(days=rng.randint(0, 400))).isoformat(),
                "amount": rng.randint(0, 10**6) / 100,
                "flag": rng.random() < 0.5,
                "note": rng.choice([None, "", "é", "x y"]),
            }
        )
    return rows


class Sink(RowSink):
    """Rows a query wrote, as events per key."""

    def events(self, key: str = "user") -> dict[str, list[Event]]:
        """Per key, in ``seq`` order: the events with tuples and summary as plain values."""
        out: dict[str, list[Event]] = defaultdict(list)
        for row in sorted(self.rows, key=lambda r: (r[key], r["seq"])):
            tuples = None if row["tuples"] is None else [t.asDict() for t in row["tuples"]]
            typed = "summary" in row.__fields__ and row["summary"] is not None
            summary = row["summary"].asDict() if typed else None
            out[row[key]].append(
                (row["event"], row["seq"], tuples, row["time_ms"], summary, row["size"])
            )
        return dict(out)


def stream_in_files(
    spark: Any,
    folder: Path,
    files: list[list[dict[str, Any]]],
    windows: list[Callable[[Any], Any]],
    restart_after: int | None = None,
    settle: Callable[[list[Sink]], bool] | None = None,
) -> list[Sink]:
    """:func:`tests.support.file_streams.stream_in_files` on :data:`SCHEMA`, into a
    :class:`Sink` per window."""
    return file_streams.stream_in_files(
        spark, folder, files, windows, SCHEMA, sink=Sink, restart_after=restart_after,
        settle=settle,
    )  # fmt: skip


def read_back(spark: Any, rows: list[dict[str, Any]], folder: Path) -> dict[int, dict[str, Any]]:
    """The input rows as Spark reads them (the values typed tuples must equal), by id."""
    folder.mkdir(parents=True)
    write_file(folder, rows)
    return {r["id"]: r.asDict() for r in spark.read.schema(SCHEMA).json(str(folder)).collect()}


# ---- the SPL rules, by brute force ------------------------------------------------------------


def numbered(events: list[tuple[str, list[dict[str, Any]], int, Any]]) -> list[Event]:
    return [(kind, seq, t, at, s, len(t)) for seq, (kind, t, at, s) in enumerate(events)]


def tumbling_count(rows: list[dict[str, Any]], n: int) -> list[Event]:
    """Tumbling ``count(n)``: insert ``x``; when ``|W| = n`` flush with the summaries."""
    events: list[tuple[str, list[dict[str, Any]], int, Any]] = []
    window: list[dict[str, Any]] = []
    for row in rows:
        events += [("before_insert", [row], 0, None), ("after_insert", [row], 0, None)]
        window.append(row)
        if len(window) == n:
            summary = summaries(window)
            events += [("before_flush", window, 0, summary), ("after_flush", [], 0, summary)]
            window = []
    return numbered(events)


def summaries(window: list[dict[str, Any]]) -> dict[str, Any]:
    """count, sum(v), max(v), mean(x), top 2 of x (largest first), as the spec below names."""
    xs = [r["x"] for r in window]
    return {
        "n": len(window),
        "total": float(sum(r["v"] for r in window)),
        "hi": float(max(r["v"] for r in window)),
        "avg": sum(xs) / len(xs),
        "top": sorted(xs, reverse=True)[:2],
    }


TUMBLING = {
    "kind": "tumbling",
    "evict": {"count": 4},
    "summaries": {
        "n": "count",
        "total": {"sum": "v"},
        "hi": {"max": "v"},
        "avg": {"mean": "x"},
        "top": {"top_k": {"attribute": "x", "k": 2}},
    },
}


def sliding_count(rows: list[dict[str, Any]], n: int, every: int) -> list[Event]:
    """Sliding evict ``count(n)``, trigger ``count(every)``: evict the oldest while ``|W| >= n``,
    insert; ``initial_full`` the first time ``|W| = n``; every ``every``-th insertion a trigger
    on the window (``include_window``: the window rides on both)."""
    events: list[tuple[str, list[dict[str, Any]], int, Any]] = []
    window: list[dict[str, Any]] = []
    full, since = False, 0
    for row in rows:
        while len(window) >= n:
            oldest = window.pop(0)
            events += [("before_evict", [oldest], 0, None), ("after_evict", [oldest], 0, None)]
        events += [("before_insert", [row], 0, None), ("after_insert", [row], 0, None)]
        window.append(row)
        if len(window) == n and not full:
            full = True
            events.append(("initial_full", list(window), 0, None))
        since += 1
        if since == every:
            since = 0
            events.append(("trigger", list(window), 0, None))
    return numbered(events)


def tumbling_time(rows: list[dict[str, Any]], period_ms: int, until_ms: int) -> list[Event]:
    """Tumbling ``time(p)`` on event time: at every ``m = k * p`` (epoch ms) the clock passes, a
    window holding tuples flushes them (those of ``[m - p, m)``), with ``time_ms = m``; a row
    goes in at its own time, after the flushes due by then; the clock ends at ``until_ms``."""
    events: list[tuple[str, list[dict[str, Any]], int, Any]] = []
    window: list[dict[str, Any]] = []

    def flush_until(t: int) -> None:
        nonlocal window
        if window:
            m = (millis(window[0]["ts"]) // period_ms + 1) * period_ms
            if m <= t:
                events.extend([("before_flush", window, m, None), ("after_flush", [], m, None)])
                window = []

    for row in rows:
        at = millis(row["ts"])
        flush_until(at)
        events += [("before_insert", [row], at, None), ("after_insert", [row], at, None)]
        window.append(row)
    flush_until(until_ms)
    return numbered(events)


def millis(ts: dt.datetime) -> int:
    aware = ts if ts.tzinfo else ts.astimezone()  # pyspark gives local wall-clock datetimes
    return round(aware.timestamp() * 1000)


def expected(
    rows: list[dict[str, Any]],
    read: dict[int, dict[str, Any]],
    model: Callable[[list[dict[str, Any]]], list[Event]],
) -> dict[str, list[Event]]:
    """``model`` per user over the user's rows (as Spark reads them) in id order."""
    out: dict[str, list[Event]] = {}
    for user in sorted({r["user"] for r in rows}):
        mine = [read[r["id"]] for r in sorted(rows, key=lambda r: r["id"]) if r["user"] == user]
        out[user] = model(mine)
    return out


def test_tumbling_and_sliding_windows_typed_for_two_splits_and_a_restart(
    spark: Any, tmp_path: Path
) -> None:
    #   80 rows, users a/b/c, each window a query of its own over the same files; per user:
    #   tumbling count(4), flushed with count/sum/max/mean/top-2 | sliding: the last 3 tuples,
    #   a trigger every 2nd insertion, the content on trigger rows
    #   run 1: 3 files; the queries stop after file 1, new ones on their checkpoints go on
    #   run 2: all in 1 file          -> each run equals the brute force, typed
    from trending import spl_window

    sliding = {"kind": "sliding", "evict": {"count": 3}, "trigger": {"count": 2}}
    windows = [
        lambda df: spl_window(df, TUMBLING, key="user", order_by="id"),
        lambda df: spl_window(df, sliding, key="user", order_by="id", include_window=True),
    ]
    rows = random_rows(seed=1, count=80)
    read = read_back(spark, rows, tmp_path / "read")
    models = [
        expected(rows, read, lambda r: tumbling_count(r, 4)),
        expected(rows, read, lambda r: sliding_count(r, 3, 2)),
    ]
    first = stream_in_files(spark, tmp_path / "run1", cuts(11, rows, 3), windows, 1)
    second = stream_in_files(spark, tmp_path / "run2", [rows], windows)
    assert [sink.events() for sink in first] == models
    assert [sink.events() for sink in second] == models
    assert "summary" not in first[1].rows[0].__fields__  # no summaries, no summary column
    batch = spark.read.schema(SCHEMA).json(str(tmp_path / "read"))
    schema = batch.transform(windows[0]).schema
    assert schema["tuples"].dataType.elementType == batch.schema
    summary = {f.name: f.dataType.simpleString() for f in schema["summary"].dataType.fields}
    assert summary == {
        "n": "bigint", "total": "double", "hi": "double", "avg": "double", "top": "array<double>",
    }  # fmt: skip


def test_event_time_tumbling_window_closes_as_the_watermark_passes(
    spark: Any, tmp_path: Path
) -> None:
    #   time(10 s) on ts, watermark delay 0: a window [m - 10 s, m) flushes at m once the
    #   watermark (the newest ts of earlier batches) reaches m, in a no-data batch if need be;
    #   what is left open waits for the watermark (the newest ts of all) to pass it.
    from trending import spl_window

    spec = {"kind": "tumbling", "evict": {"time": 10}}

    def window(df: Any) -> Any:
        return spl_window(
            df, spec, key="user", order_by="id", time_mode="event", time_column="ts",
            watermark="0 seconds",
        )  # fmt: skip

    rows = random_rows(seed=3, count=45)
    read = read_back(spark, rows, tmp_path / "read")
    end = max(millis(r["ts"]) for r in read.values())
    model = expected(rows, read, lambda r: tumbling_time(r, 10_000, end))
    total = sum(len(events) for events in model.values())
    (sink,) = stream_in_files(
        spark, tmp_path / "run", cuts(31, rows, 3), [window], restart_after=1,
        settle=lambda sinks: len(sinks[0].rows) >= total,
    )  # fmt: skip
    assert sink.events() == model


def test_a_batch_dataframe_gives_the_same_events_in_any_session_time_zone(
    spark: Any, tmp_path: Path
) -> None:
    #   the session's time zone is New York, whose 1 am hour repeats on 2024-11-03: the
    #   tuples' timestamps still come back as they went in
    from trending import spl_window

    rows = random_rows(seed=4, count=40)
    read = read_back(spark, rows, tmp_path / "read")
    before = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "America/New_York")
    try:
        batch = spark.read.schema(SCHEMA).json(str(tmp_path / "read"))
        sink = Sink()
        sink.rows = batch.transform(spl_window, TUMBLING, key="user", order_by="id").collect()
    finally:
        spark.conf.set("spark.sql.session.timeZone", before)
    assert sink.events() == expected(rows, read, lambda r: tumbling_count(r, 4))


def test_a_streaming_window_names_the_setting_it_misses(spark: Any, tmp_path: Path) -> None:
    from trending import SplRunnerError, spl_window

    stream = spark.readStream.schema(SCHEMA).json(str(tmp_path))
    spark.conf.unset(PROVIDER_CONF)
    try:
        with pytest.raises(SplRunnerError, match=PROVIDER_CONF):
            spl_window(stream, TUMBLING, key="user")
    finally:
        spark.conf.set(PROVIDER_CONF, ROCKSDB)
    with pytest.raises(SplRunnerError, match="a binary cannot go"):
        spl_window(stream.selectExpr("*", "cast(note as binary) as raw"), TUMBLING, key="user")


def test_the_example_runs_on_a_plain_session() -> None:
    lines = run_example("library_spl_window.py")
    assert "batch: sensor 1 window [1, 4, 7] mean 4.0" in lines
    assert "stream: sensor 2 window [2, 5, 8] mean 5.0" in lines
    assert "stream: sensor 2 window [11, 14, 17] mean 14.0" in lines
    assert lines[-1] == "restarted from the checkpoint: 3 more windows"
