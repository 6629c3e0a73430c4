"""``spl_window`` on the JVM core (``trending.spl.SplWindowStep``) against brute-force models.

Input: seeded random rows with nulls in the key and value columns, NaN in a double, timestamps
with microseconds, dates, decimals and booleans, as JSON files added to a folder between
``processAllAvailable()`` calls (each file one micro-batch), cut at seeded points, with a
restart on the checkpoint half-way; and the same rows in one file. The expected events come from
the SPL rules written out below (not from ``trending.windows`` nor the JVM core); the expected
tuples are the input rows as Spark reads them, as typed output gives them back: timestamps to
the millisecond, NaN as null. The session is a plain one (:mod:`tests.support.plain_session`),
which gets the project's jar when ``spl_window`` first runs.
"""

from __future__ import annotations

import datetime as dt
import math
import random
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.support import file_streams
from tests.support.file_streams import RowSink, write_file
from tests.support.file_streams import seeded_cuts as cuts
from tests.support.plain_session import plain_session
from tests.support.queries import finish_or_refused, poll_until

pytestmark = pytest.mark.integration

SCHEMA = (
    "k STRING, id LONG, v LONG, w INT, x DOUBLE, y DOUBLE, ts TIMESTAMP, ms LONG, day DATE, "
    "amount DECIMAL(10,2), flag BOOLEAN"
)
T0 = dt.datetime(2024, 11, 3, 5, 0, tzinfo=dt.timezone.utc)
Row = dict[str, Any]
Event = tuple[Any, str, int, Any, int, Any, int]  # key, event, seq, tuples, time, summary, size
Model = list[tuple[Any, str, list[Row], int, Any]]  # key, event, tuples, time, summary


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    for session in plain_session("tests-spl-jvm-step"):
        session.conf.set("spark.sql.shuffle.partitions", "2")
        yield session


def random_rows(seed: int, count: int, keys: Sequence[Any] = ("a", "b", "c", None)) -> list[Row]:
    """``count`` rows, ``id`` 0.., ``ts`` (microseconds) and ``ms`` (its epoch ms) rising."""
    rng = random.Random(seed)
    rows, us = [], 0
    for i in range(count):
        us += rng.randint(1, 1_500_000)
        ts = T0 + dt.timedelta(microseconds=us)
        rows.append(
            {
                "k": rng.choice(keys),
                "id": i,
                "v": rng.choice([None, rng.randint(-5, 20)]),
                "w": rng.randint(-5, 20),
                "x": rng.choice([None, math.nan, rng.randint(0, 80) / 4]),
                "y": rng.randint(0, 80) / 4,
                "ts": ts.isoformat(timespec="microseconds").replace("+00:00", "Z"),
                "ms": int(ts.timestamp() * 1000),
                "day": (dt.date(2024, 1, 1) + dt.timedelta(days=rng.randint(0, 400))).isoformat(),
                "amount": rng.randint(0, 10**6) / 100,
                "flag": rng.choice([None, True, False]),
            }
        )
    return rows


def typed_back(spark: Any, rows: list[Row], folder: Path) -> dict[int, Row]:
    """By id, the input rows as Spark reads them and typed output gives them back."""
    folder.mkdir(parents=True)
    write_file(folder, rows)
    out = {}
    for row in spark.read.schema(SCHEMA).json(str(folder)).collect():
        data = row.asDict()
        if data["x"] is not None and math.isnan(data["x"]):
            data["x"] = None
        data["ts"] = data["ts"].replace(microsecond=data["ts"].microsecond // 1000 * 1000)
        out[data["id"]] = data
    return out


class Sink(RowSink):
    """Rows a query wrote, whose events are keyed by the ``key`` column."""

    def __init__(self, key: str) -> None:
        super().__init__()
        self.key = key

    def events(self) -> list[Event]:
        """Every event as plain values, by key (nulls first) and ``seq``."""
        out = []
        for row in self.rows:
            tuples = None if row["tuples"] is None else [t.asDict() for t in row["tuples"]]
            summary = row["summary"] if "summary" in row.__fields__ else None
            summary = None if summary is None else summary.asDict()
            out.append(
                (row[self.key], row["event"], row["seq"], tuples, row["time_ms"], summary,
                 row["size"])
            )  # fmt: skip
        return sorted(out, key=lambda e: (e[0] is not None, str(e[0]), e[2]))


def stream_in_files(
    spark: Any,
    folder: Path,
    files: list[list[Row]],
    windows: list[Callable[[Any], Any]],
    key: str = "k",
    restart_after: int | None = None,
    settle: Callable[[list[Sink]], bool] | None = None,
) -> list[Sink]:
    """:func:`tests.support.file_streams.stream_in_files` on :data:`SCHEMA`, a micro-batch every
    100 ms, into a :class:`Sink` on ``key`` per window."""
    return file_streams.stream_in_files(
        spark, folder, files, windows, SCHEMA, sink=lambda: Sink(key),
        restart_after=restart_after, settle=settle, trigger="100 milliseconds",
    )  # fmt: skip


# ---- the SPL rules, by brute force ------------------------------------------------------------


def numbered(events: Model, include_window: bool = True) -> list[Event]:
    """Events numbered per key in order, as typed rows show them (``trigger`` and
    ``initial_full`` without their tuples unless ``include_window``)."""
    seqs: dict[Any, int] = defaultdict(int)
    out = []
    for key, kind, tuples, at, summary in events:
        hidden = kind in ("trigger", "initial_full") and not include_window
        out.append((key, kind, seqs[key], None if hidden else list(tuples), at, summary,
                    len(tuples)))  # fmt: skip
        seqs[key] += 1
    return sorted(out, key=lambda e: (e[0] is not None, str(e[0]), e[2]))


def kept(events: list[Event], kinds: set[str]) -> list[Event]:
    return [e for e in events if e[1] in kinds]


def batch_order(
    files: list[list[Row]], read: dict[int, Row], sort: Callable[[Row], Any]
) -> list[Row]:
    """The typed rows file by file, each file's rows sorted by ``sort``."""
    return [read[r["id"]] for part in files for r in sorted(part, key=sort)]


def nulls_last(*columns: str) -> Callable[[Row], Any]:
    return lambda row: tuple((row[c] is None, row[c] or 0) for c in columns)


def sliding_count(rows: list[Row], key: str, n: int, every: int) -> Model:
    """Per key: sliding evict ``count(n)`` (evict the oldest while ``|W| >= n``), insert,
    ``initial_full`` the first time ``|W| = n``, a trigger every ``every``-th insertion."""
    events: Model = []
    windows: dict[Any, list[Row]] = defaultdict(list)
    full: set[Any] = set()
    since: dict[Any, int] = defaultdict(int)
    for row in rows:
        p, window = row[key], windows[row[key]]
        while len(window) >= n:
            oldest = window.pop(0)
            events += [
                (p, "before_evict", [oldest], 0, None),
                (p, "after_evict", [oldest], 0, None),
            ]
        events += [(p, "before_insert", [row], 0, None), (p, "after_insert", [row], 0, None)]
        window.append(row)
        if len(window) == n and p not in full:
            full.add(p)
            events.append((p, "initial_full", list(window), 0, None))
        since[p] += 1
        if since[p] == every:
            since[p] = 0
            events.append((p, "trigger", list(window), 0, None))
    return events


def tumbling_count(rows: list[Row], key: str, n: int) -> Model:
    """Per key: tumbling ``count(n)``, flushed with count, sum(w), min(w), max(y), mean(y),
    top 2 of y (largest first) on both flush events."""
    events: Model = []
    windows: dict[Any, list[Row]] = defaultdict(list)
    for row in rows:
        p, window = row[key], windows[row[key]]
        events += [(p, "before_insert", [row], 0, None), (p, "after_insert", [row], 0, None)]
        window.append(row)
        if len(window) == n:
            ys = [r["y"] for r in window]
            summary = {
                "n": n, "total": float(sum(r["w"] for r in window)),
                "low": float(min(r["w"] for r in window)), "high": max(ys),
                "avg": sum(ys) / n, "top": sorted(ys, reverse=True)[:2],
            }  # fmt: skip
            events += [(p, "before_flush", window, 0, summary), (p, "after_flush", [], 0, summary)]
            windows[p] = []
    return events


def whole_lru(rows: list[Row], key: str, n: int, limit: int) -> Model:
    """One window partitioned by ``key``: sliding evict ``count(n)``, a trigger per insertion,
    at most ``limit`` partitions: after each ``after_insert``, while there are more, the least
    recently inserted-into partition goes (``partition_evict`` with its tuples); a partition
    that comes back starts afresh. Numbered across all partitions."""
    events: Model = []
    parts: dict[Any, list[Row]] = {}  # least recently used first
    full: set[Any] = set()
    for row in rows:
        p = row[key]
        window = parts.pop(p, [])
        while len(window) >= n:
            oldest = window.pop(0)
            events += [
                (p, "before_evict", [oldest], 0, None),
                (p, "after_evict", [oldest], 0, None),
            ]
        events += [(p, "before_insert", [row], 0, None), (p, "after_insert", [row], 0, None)]
        window.append(row)
        parts[p] = window
        while len(parts) > limit:
            victim = next(iter(parts))
            events.append((victim, "partition_evict", parts.pop(victim), 0, None))
            full.discard(victim)
        if len(window) == n and p not in full:
            full.add(p)
            events.append((p, "initial_full", list(window), 0, None))
        events.append((p, "trigger", list(window), 0, None))
    return events


def time_evicted(rows: list[Row], key: str, period_ms: int, end_ms: int) -> Model:
    """Per key, on event time ``ms`` (rows in time order): sliding evict ``time(p)``, a trigger
    per insertion. A row's time first evicts every tuple inserted at ``s`` with
    ``s + p <= time`` (each at ``s + p``); ``initial_full`` (empty) before the key's first
    insertion; the watermark ``end_ms`` evicts the rest due by then."""
    events: Model = []
    windows: dict[Any, list[tuple[int, Row]]] = defaultdict(list)

    def evict_until(p: Any, t: int) -> None:
        window = windows[p]
        while window and window[0][0] + period_ms <= t:
            s, oldest = window.pop(0)
            at = s + period_ms
            events.extend([(p, "before_evict", [oldest], at, None),
                           (p, "after_evict", [oldest], at, None)])  # fmt: skip

    for row in rows:
        p, t = row[key], row["ms"]
        first = p not in windows
        evict_until(p, t)
        if first:
            events.append((p, "initial_full", [], t, None))
        events += [(p, "before_insert", [row], t, None), (p, "after_insert", [row], t, None)]
        windows[p].append((t, row))
        events.append((p, "trigger", [r for _, r in windows[p]], t, None))
    for p in list(windows):
        evict_until(p, end_ms)
    return events


# ---- the tests ----------------------------------------------------------------------------------


def test_per_key_sliding_window_with_nulls_for_two_splits_and_a_restart(
    spark: Any, tmp_path: Path
) -> None:
    #   120 rows, keys a/b/c/null; per key sliding count(3), a trigger every 2nd insertion;
    #   a key's rows of a file go in by v (nulls last), then id
    #   query 1: the window on trigger rows | query 2: only trigger and after_evict rows
    #   run 1: 4 files, restart after file 2 | run 2: all in 1 file   -> each equals the model
    from trending import spl_window
    from trending.spark.spl_runner import runs_on_jvm
    from trending.windows.spl import parse_spec

    spec = {"kind": "sliding", "evict": {"count": 3}, "trigger": {"count": 2}}
    options = {"key": "k", "order_by": ["v", "id"]}
    windows = [
        lambda df: spl_window(df, spec, include_window=True, **options),
        lambda df: spl_window(df, spec, kinds=["trigger", "after_evict"], **options),
    ]
    rows = random_rows(seed=1, count=120)
    read = typed_back(spark, rows, tmp_path / "read")
    batch = spark.read.schema(SCHEMA).json(str(tmp_path / "read"))
    assert runs_on_jvm(batch, parse_spec(spec))
    for run, files, restart in (("run1", cuts(11, rows, 4), 2), ("run2", [rows], None)):
        model = sliding_count(batch_order(files, read, nulls_last("v", "id")), "k", 3, 2)
        sinks = stream_in_files(spark, tmp_path / run, files, windows, restart_after=restart)
        assert sinks[0].events() == numbered(model)
        assert sinks[1].events() == kept(numbered(model, False), {"trigger", "after_evict"})


def test_tumbling_summaries_per_int_key_in_a_batch_and_a_stream(spark: Any, tmp_path: Path) -> None:
    #   key w (int, no nulls) % 3 as a long column; tumbling count(3) with count, sum, min,
    #   max, mean, top-2; only flush rows kept (seq still counts the insertions)
    from pyspark.sql import functions as F

    from trending import spl_window

    spec = {
        "kind": "tumbling", "evict": {"count": 3},
        "summaries": {"n": "count", "total": {"sum": "w"}, "low": {"min": "w"},
                      "high": {"max": "y"}, "avg": {"mean": "y"},
                      "top": {"top_k": {"attribute": "y", "k": 2}}},
    }  # fmt: skip

    def window(df: Any) -> Any:
        keyed = df.withColumn("g", F.pmod(F.col("w"), F.lit(3)).cast("long"))
        return spl_window(
            keyed, spec, key="g", order_by="id", kinds=["before_flush", "after_flush"]
        )

    rows = random_rows(seed=2, count=60)
    read = typed_back(spark, rows, tmp_path / "read")
    for r in read.values():
        r["g"] = r["w"] % 3
    expected = kept(numbered(tumbling_count(batch_order([rows], read, nulls_last("id")), "g", 3)),
                    {"before_flush", "after_flush"})  # fmt: skip
    sink = Sink("g")
    sink.rows = window(spark.read.schema(SCHEMA).json(str(tmp_path / "read"))).collect()
    assert sink.events() == expected
    (streamed,) = stream_in_files(spark, tmp_path / "run", cuts(21, rows, 3), [window], "g", 1)
    assert streamed.events() == expected


def test_whole_window_evicts_partitions_of_timestamp_keys(spark: Any, tmp_path: Path) -> None:
    #   partitioned by ts2, a timestamp with 6 values (two of them 300 us apart in one ms, so
    #   one partition) and null; sliding count(2) per partition, at most 3 partitions (LRU):
    #   one grouping key, seq across all partitions; run in 3 files with a restart, and 1 file
    from pyspark.sql import functions as F

    from trending import spl_window

    spec = {
        "kind": "sliding", "evict": {"count": 2}, "partition_by": "ts2",
        "partition_eviction": {"count": 3},
    }  # fmt: skip
    stamps = ["2024-01-01 00:00:00.000100", "2024-01-01 00:00:00.000400", "2024-01-02 10:00:00",
              "2025-06-30 23:59:59.999", "1969-12-31 23:59:59.5", None]  # fmt: skip

    def window(df: Any) -> Any:
        ts2 = F.element_at(F.array(*[F.lit(s) for s in stamps]), (F.col("id") % 6 + 1).cast("int"))
        keyed = df.withColumn("ts2", F.to_timestamp(ts2))
        return spl_window(keyed, spec, order_by="id", include_window=True)

    rows = random_rows(seed=3, count=70)
    read = typed_back(spark, rows, tmp_path / "read")
    stamp = {}
    for i in range(6):
        text = stamps[i]
        stamp[i] = None if text is None else dt.datetime.fromisoformat(text)
    for r in read.values():
        value = stamp[r["id"] % 6]
        r["ts2"] = (
            None if value is None else value.replace(microsecond=value.microsecond // 1000 * 1000)
        )
    for run, files, restart in (("run1", cuts(31, rows, 3), 1), ("run2", [rows], None)):
        model = whole_lru(batch_order(files, read, nulls_last("id")), "ts2", 2, 3)
        (sink,) = stream_in_files(spark, tmp_path / run, files, [window], "ts2", restart)
        got = sorted(sink.events(), key=lambda e: e[2])
        want = sorted(numbered([("whole", *e[1:]) for e in model]), key=lambda e: e[2])
        assert [(e[1], e[2], e[3], e[6]) for e in got] == [(e[1], e[2], e[3], e[6]) for e in want]
        assert [e[0] for e in got] == [e[0] for e in model]  # each event's key: its partition


def test_event_time_eviction_fires_from_timers_as_the_watermark_passes(
    spark: Any, tmp_path: Path
) -> None:
    #   event time ms (epoch ms), watermark delay 0; per key (a date: 3 values and null)
    #   sliding time(4 s), a trigger per insertion: a tuple leaves at s + 4 s, when a later row
    #   of its key moves the clock there or when the watermark passes (a timer, in a no-data
    #   micro-batch if need be); 4 files, a restart after file 2
    from pyspark.sql import functions as F

    from trending import spl_window

    spec = {"kind": "sliding", "evict": {"time": 4}}
    days = ["2024-02-29", "1999-12-31", "2030-01-01", None]

    def window(df: Any) -> Any:
        day = F.element_at(F.array(*[F.lit(d) for d in days]), (F.col("id") % 4 + 1).cast("int"))
        return spl_window(
            df.withColumn("d", F.to_date(day)), spec, key="d", order_by="id", time_mode="event",
            time_column="ms", watermark="0 seconds", include_window=True,
        )  # fmt: skip

    rows = random_rows(seed=4, count=60)
    read = typed_back(spark, rows, tmp_path / "read")
    for r in read.values():
        text = days[r["id"] % 4]
        r["d"] = None if text is None else dt.date.fromisoformat(text)
    files = [rows[a:b] for a, b in ((0, 15), (15, 30), (30, 31), (31, 60))]  # in time order
    end = max(r["ms"] for r in rows)
    model = numbered(time_evicted(batch_order(files, read, nulls_last("id")), "d", 4000, end))
    (sink,) = stream_in_files(
        spark, tmp_path / "run", files, [window], "d", restart_after=2,
        settle=lambda sinks: len(sinks[0].rows) >= len(model),
    )  # fmt: skip
    assert sink.events() == model


def test_processing_time_tumbling_window_closes_on_an_idle_stream(
    spark: Any, tmp_path: Path
) -> None:
    #   one file at processing time t (its rows all go in at t), then nothing: each key's timer
    #   at the next 1 s boundary fires in a no-data micro-batch and flushes the key's rows
    from trending import spl_window

    spec = {"kind": "tumbling", "evict": {"time": 1}}
    rows = random_rows(seed=5, count=30)
    read = typed_back(spark, rows, tmp_path / "read")
    keys = {r["k"] for r in rows}
    source, sink = tmp_path / "in", Sink("k")
    source.mkdir()
    stream = spark.readStream.schema(SCHEMA).json(str(source))
    events = spl_window(stream, spec, key="k", order_by="id", time_mode="processing")
    query = (
        events.writeStream.format("memory").queryName("jvm_processing")
        .trigger(processingTime="200 milliseconds")
        .option("checkpointLocation", str(tmp_path / "chk")).start()
    )  # fmt: skip

    def flushed() -> bool:
        sink.rows = spark.table("jvm_processing").collect()
        return sum(r["event"] == "after_flush" for r in sink.rows) == len(keys)

    try:
        written_ms = time.time() * 1000
        write_file(source, rows)
        poll_until(flushed, 60, lambda: f"not flushed: {sink.rows}")
    finally:
        query.stop()
    got = sink.events()
    inserted = {e[4] for e in got if e[1] == "before_insert"}
    assert len(inserted) == 1  # one clock for the whole batch: its processing time
    assert written_ms - 1000 <= min(inserted) <= time.time() * 1000
    flushes = {e[0]: e for e in got if e[1] == "before_flush"}
    boundary = (min(inserted) // 1000 + 1) * 1000  # the next k * 1 s
    assert {e[4] for e in flushes.values()} == {boundary}
    model: Model = []
    for p in sorted(keys, key=lambda k: (k is not None, str(k))):
        mine = [read[r["id"]] for r in rows if r["k"] == p]
        for row in mine:
            model += [(p, "before_insert", [row], min(inserted), None),
                      (p, "after_insert", [row], min(inserted), None)]  # fmt: skip
        at = flushes[p][4]
        model += [(p, "before_flush", mine, at, None), (p, "after_flush", [], at, None)]
    assert got == numbered(model)


def test_a_row_the_window_refuses_fails_the_query_on_both_cores(spark: Any, tmp_path: Path) -> None:
    #   delta(v, 2) needs a number in v: a null v fails the run, on the JVM core as on Python's
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import PySparkException

    from trending.spark.spl_runner import apply_window

    rows = random_rows(seed=6, count=20)
    rows[7]["v"] = None
    folder = tmp_path / "in"
    folder.mkdir()
    write_file(folder, rows)
    batch = spark.read.schema(SCHEMA).json(str(folder))
    spec = {"kind": "sliding", "evict": {"delta": {"attribute": "v", "size": 2}}}
    for engine in ("jvm", "python"):
        events = apply_window(batch, spec, key="k", order_by="id", output="typed", engine=engine)
        with pytest.raises((PySparkException, Py4JJavaError), match="'v' must be a number"):
            events.collect()


def test_a_checkpoint_of_the_other_state_layout_is_refused(spark: Any, tmp_path: Path) -> None:
    #   a query on the Python core's checkpoint restarted on the JVM core, and the other way:
    #   Spark refuses the restart, naming both stateful operators (docs/spl-runner.md)
    from trending.spark.spl_runner import apply_window

    spec = {"kind": "tumbling", "evict": {"count": 2}}
    rows = random_rows(seed=7, count=10)
    for first, second in (("python", "jvm"), ("jvm", "python")):
        folder = tmp_path / first
        source = folder / "in"
        source.mkdir(parents=True)
        for engine in (first, second):
            write_file(source, rows)
            stream = spark.readStream.schema(SCHEMA).json(str(source))
            events = apply_window(stream, spec, key="k", output="typed", engine=engine)
            query = (
                events.writeStream.foreachBatch(Sink("k"))
                .option("checkpointLocation", str(folder / "chk"))
                .start()
            )
            refusal = (
                "STREAMING_STATEFUL_OPERATOR_NOT_MATCH_IN_STATE_METADATA",
                "transformWithStateInPandasExec",
                "transformWithStateExec",
            )
            finish_or_refused(query, () if engine == first else refusal)


def test_a_restart_with_other_columns_or_another_spec_is_refused_naming_them(
    spark: Any, tmp_path: Path
) -> None:
    #   a window's state holds its tuples as the columns they came in, under its spec: restarted
    #   on its checkpoint with a column more, or with another spec, the query fails saying
    #   which, before any event is written; with the same columns and spec it goes on
    from trending.spark.spl_runner import apply_window

    spec = {"kind": "sliding", "evict": {"count": 3}}
    other = {"kind": "sliding", "evict": {"count": 4}}
    runs = [
        (SCHEMA, spec, None),
        (
            SCHEMA + ", extra STRING",
            spec,
            ("other input columns than this query's", "extra STRING"),
        ),
        (
            SCHEMA,
            other,
            ("another window spec than this query's", '"evict":{"policy":"count","size":4}'),
        ),
        (SCHEMA, spec, None),
    ]
    source = tmp_path / "in"
    source.mkdir()
    checkpoint = str(tmp_path / "chk")
    sinks = []
    for number, (schema, window, refusal) in enumerate(runs):
        write_file(source, random_rows(seed=40 + number, count=12, keys=("a", "b")))
        stream = spark.readStream.schema(schema).json(str(source))
        events = apply_window(stream, window, key="k", output="typed", engine="jvm")
        sinks.append(Sink("k"))
        query = (
            events.writeStream.foreachBatch(sinks[-1])
            .option("checkpointLocation", checkpoint)
            .start()
        )
        finish_or_refused(query, refusal or ())
    first, *refused, again = (sink.events() for sink in sinks)
    assert first and again and refused == [[], []]
    # the last run took the windows on where the first left them: each key's events numbered on
    for key in ("a", "b"):
        before = [e[2] for e in first if e[0] == key]
        after = [e[2] for e in again if e[0] == key]
        assert before and after and min(after) == max(before) + 1
