"""The SPL runner on a real local Spark session: per-key windows in transformWithStateInPandas.

Input is JSON files added to a directory between ``processAllAvailable()`` calls (Spark's file
source keeps which files it read in the checkpoint); output goes to a memory sink. The oracle
is the pure core: ``keyed.build_window(spec)`` fed each key's rows alone (``keyed.pure_inputs``).
"""

from __future__ import annotations

import json
import os
import sys
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.oracles import spl_outputs
from tests.support.queries import poll_until
from trending.windows.spl import parse_spec
from trending.windows.spl.keyed import build_window, pure_inputs

pytestmark = pytest.mark.integration

BASE_MS = 1_700_000_000_000  # event times at or before epoch 0 count as late for Spark
SCHEMA = "user STRING, id LONG, v LONG, ts LONG"
Events = dict[str, list[tuple[str, int, list[dict[str, Any]], str | None]]]


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from trending.spark.session import build_session
    from trending.spark.spl_runner import configure_spark

    session = build_session("tests-spl-runner", "local[2]", shuffle_partitions=2)
    configure_spark(session)
    yield session
    session.stop()


def make_rows(start: int, count: int, users: str = "abc") -> list[dict[str, Any]]:
    """Rows ``id`` start.. with users cycling irregularly; ``ts`` = 1 s per id (epoch ms)."""
    return [
        {"user": users[(i * i + i // 3) % len(users)], "id": i, "v": (i * 7) % 11, "ts": i * 1000}
        for i in range(start, start + count)
    ]


def write_batch(folder: Path, rows: list[dict[str, Any]]) -> None:
    name = f"{uuid.uuid4().hex}.json"
    tmp = folder.parent / name
    tmp.write_text("".join(json.dumps(row) + "\n" for row in rows))
    tmp.rename(folder / name)  # atomic: the file source never sees half a file


class Sink:
    """Rows a query wrote, via ``foreachBatch`` (the memory sink cannot restart)."""

    def __init__(self) -> None:
        self.rows: list[Any] = []

    def __call__(self, batch: Any, batch_id: int) -> None:
        self.rows.extend(batch.collect())

    def events(self) -> Events:
        """The events per user, in ``seq`` order, tuples decoded."""
        out: Events = defaultdict(list)
        for row in sorted(self.rows, key=lambda r: (r["user"], r["seq"])):
            event = (row["event"], row["seq"], json.loads(row["tuples"]), row["summary"])
            out[row["user"]].append(event)
        return dict(out)


def pure_events(
    spec: dict[str, Any], rows: list[dict[str, Any]], end_ms: int | None = None
) -> Events:
    """The core's events per user for ``rows`` (in id order), seq numbered like the runner."""
    window_spec = parse_spec(spec)
    out: Events = {}
    for user in sorted({row["user"] for row in rows}):
        mine = sorted((r for r in rows if r["user"] == user), key=lambda r: r["id"])
        window = build_window(window_spec)
        events = list(window.run(pure_inputs(user, [(None, r) for r in mine])))
        if end_ms is not None:
            events += window.advance_to(end_ms)
        out[user] = [
            (
                e.kind.value,
                seq,
                [dict(t) for t in e.tuples],
                None if e.summary is None else json.dumps(dict(e.summary), separators=(",", ":")),
            )
            for seq, e in enumerate(events)
        ]
    return out


Published = dict[str, list[tuple[str, tuple[int, ...]]]]


def published_ids(rows: list[Any]) -> Published:
    """Per user, in ``seq`` order: each trigger or flush the runner published, with the ids of
    the tuples it carries."""
    out: dict[str, list[tuple[str, tuple[int, ...]]]] = defaultdict(list)
    for row in sorted(rows, key=lambda r: (r["user"], r["seq"])):
        if row["event"] in ("trigger", "before_flush"):
            ids = tuple(t["id"] for t in json.loads(row["tuples"]))
            out[row["user"]].append((row["event"], ids))
    return dict(out)


def by_rule(spec: dict[str, Any], rows: list[dict[str, Any]]) -> Published:
    """Per user, the triggers and flushes the SPL rules give for the user's rows (in id
    order), by brute force (:func:`tests.support.oracles.spl_outputs`), with the tuples' ids."""
    out: Published = {}
    spec = {name: value for name, value in spec.items() if name != "summaries"}  # ids only
    for user in sorted({row["user"] for row in rows}):
        mine = sorted((r for r in rows if r["user"] == user), key=lambda r: r["id"])
        outputs = spl_outputs(spec, [(r["ts"], r["id"], r["v"]) for r in mine], 0)
        out[user] = [(kind, ids) for kind, ids, _, _ in outputs]
    return {user: events for user, events in out.items() if events}


def start(events: Any, checkpoint: Path, sink: Sink, trigger: dict[str, str] | None = None) -> Any:
    writer = events.writeStream.foreachBatch(sink).option("checkpointLocation", str(checkpoint))
    return writer.trigger(**trigger).start() if trigger else writer.start()


def count_window(spark: Any, spec: dict[str, Any], source: Path) -> Any:
    from trending.spark.spl_runner import apply_window

    stream = spark.readStream.schema(SCHEMA).json(str(source))
    return apply_window(stream, spec, key="user", order_by="id", include_window=True)


def merge(*parts: Events) -> Events:
    out: Events = defaultdict(list)
    for part in parts:
        for user, events in part.items():
            out[user].extend(events)
    return {user: sorted(events, key=lambda e: e[1]) for user, events in out.items()}


def test_count_sliding_window_matches_the_pure_core_per_key(spark: Any, tmp_path: Path) -> None:
    #   rows 0..59 in 3 files, users a/b/c interleaved; per user:
    #   evict count(3) = last 3 tuples, trigger count(2) = every 2nd insertion
    spec = {"kind": "sliding", "evict": {"count": 3}, "trigger": {"count": 2}}
    source, sink = tmp_path / "in", Sink()
    source.mkdir()
    query = start(count_window(spark, spec, source), tmp_path / "chk", sink)
    rows: list[dict[str, Any]] = []
    try:
        for batch in range(3):
            new = make_rows(batch * 20, 20)
            rows += new
            write_batch(source, new)
            query.processAllAvailable()
    finally:
        query.stop()
    assert published_ids(sink.rows) == by_rule(spec, rows)
    assert sink.events() == pure_events(spec, rows)


def test_restart_from_checkpoint_continues_identically(spark: Any, tmp_path: Path) -> None:
    #   files 1-2 -> query 1 -> stop | files 3-4 -> query 2 (same checkpoint)
    #   events of 1 + events of 2 == one uninterrupted pure run over files 1-4
    spec = {
        "kind": "tumbling",
        "evict": {"count": 4},
        "summaries": {"n": "count", "total": {"sum": "v"}},
    }
    source, checkpoint = tmp_path / "in", tmp_path / "chk"
    source.mkdir()
    batches = [make_rows(i * 15, 15) for i in range(4)]
    sinks = [Sink(), Sink()]
    for sink, half in zip(sinks, (batches[:2], batches[2:]), strict=True):
        query = start(count_window(spark, spec, source), checkpoint, sink)
        try:
            for batch in half:
                write_batch(source, batch)
                query.processAllAvailable()
        finally:
            query.stop()
    rows = [row for batch in batches for row in batch]
    first, second = sinks[0].events(), sinks[1].events()
    assert first and second
    assert published_ids(sinks[0].rows + sinks[1].rows) == by_rule(spec, rows)
    assert merge(first, second) == pure_events(spec, rows)


def wait_for(sink: Sink, done: Callable[[list[Any]], bool], timeout: float = 30.0) -> None:
    """Poll the sink's rows until ``done``; fail, showing the rows, after ``timeout`` s."""
    poll_until(
        lambda: done(list(sink.rows)),
        timeout,
        lambda: f"not done after {timeout:.0f} s: {sink.rows}",
    )


def test_processing_time_tumbling_window_closes_on_an_idle_stream(
    spark: Any, tmp_path: Path
) -> None:
    #   one file at processing time t (all rows go in at t), then no input at all:
    #   the per-key timer at the next 1 s boundary fires in a no-data batch and flushes.
    from trending.spark.spl_runner import apply_window

    spec = {"kind": "tumbling", "evict": {"time": 1}}
    source, sink = tmp_path / "in", Sink()
    source.mkdir()
    stream = spark.readStream.schema(SCHEMA).json(str(source))
    events = apply_window(stream, spec, key="user", time_mode="processing", order_by="id")
    query = start(events, tmp_path / "chk", sink, {"processingTime": "200 milliseconds"})
    rows = make_rows(0, 12)
    try:
        write_batch(source, rows)
        wait_for(sink, lambda got: sum(r["event"] == "after_flush" for r in got) == 3)
    finally:
        query.stop()
    got = {
        user: [(kind, seq, tuples, None) for kind, seq, tuples, _ in events]
        for user, events in sink.events().items()
    }
    assert got == pure_events(spec, rows, end_ms=10**13)
    flushes = [row for row in sink.rows if row["event"] == "after_flush"]
    assert all(row["time_ms"] % 1000 == 0 for row in flushes)  # k * 1 s of processing time


def test_event_time_window_closes_when_the_watermark_passes(spark: Any, tmp_path: Path) -> None:
    #   user a: ts 0..4 s          | user b: one row at ts 30 s (next file)   (ts - BASE_MS)
    #   window time(10 s): a's [0, 10 s) closes when b's row moves the watermark past 10 s,
    #   without any new row for a; b's [30 s, 40 s) stays open (the watermark is at 30 s).
    from trending.spark.spl_runner import apply_window

    spec = {"kind": "tumbling", "evict": {"time": 10}}
    source, sink = tmp_path / "in", Sink()
    source.mkdir()
    stream = spark.readStream.schema(SCHEMA).json(str(source))
    events = apply_window(
        stream,
        spec,
        key="user",
        time_column="ts",
        time_mode="event",
        watermark="0 seconds",
        order_by="id",
        kinds=["before_flush"],
    )
    query = start(events, tmp_path / "chk", sink)
    a_rows = [{"user": "a", "id": i, "v": i, "ts": BASE_MS + i * 1000} for i in range(5)]
    try:
        write_batch(source, a_rows)
        query.processAllAvailable()
        assert sink.rows == []
        write_batch(source, [{"user": "b", "id": 99, "v": 0, "ts": BASE_MS + 30_000}])
        query.processAllAvailable()
    finally:
        query.stop()
    out = sink.rows
    assert [(r["user"], r["event"], r["time_ms"]) for r in out] == [
        ("a", "before_flush", BASE_MS + 10_000)
    ]
    assert json.loads(out[0]["tuples"]) == a_rows


# The seed's partitioned data items 1a 2b 3a 4b 5b 6b 7a 8a 9b 10b 11a 13a
SEED_ITEMS = [(1, "a"), (2, "b"), (3, "a"), (4, "b"), (5, "b"), (6, "b"), (7, "a"), (8, "a")]
SEED_ITEMS += [(9, "b"), (10, "b"), (11, "a"), (13, "a")]
SEED_ROWS = [{"user": p, "id": v, "v": v, "ts": v * 1000} for v, p in SEED_ITEMS]


def run_in_files(
    spark: Any, spec: dict[str, Any], tmp: Path, per_file: int, restart_after: int | None = None
) -> tuple[Sink, list[int]]:
    """Feed ``SEED_ROWS``-like rows in files of ``per_file`` rows, one micro-batch each,
    restarting the query on its checkpoint after ``restart_after`` files; also returns the
    state rows Spark reported after each batch."""
    source, checkpoint, sink = tmp / "in", tmp / "chk", Sink()
    source.mkdir(parents=True)
    files = [SEED_ROWS[i : i + per_file] for i in range(0, len(SEED_ROWS), per_file)]
    parts = [files] if restart_after is None else [files[:restart_after], files[restart_after:]]
    state_rows: list[int] = []
    for part in parts:
        query = start(count_window(spark, spec, source), checkpoint, sink)
        try:
            for rows in part:
                write_batch(source, rows)
                query.processAllAvailable()
                state_rows.append(query.lastProgress["stateOperators"][0]["numRowsTotal"])
        finally:
            query.stop()
    return sink, state_rows


def triggers(events: Events) -> dict[str, list[list[int]]]:
    return {
        user: [[t["v"] for t in tuples] for kind, _, tuples, _ in got if kind == "trigger"]
        for user, got in events.items()
    }


def test_an_event_time_timer_pending_at_a_restart_fires_after_it(
    spark: Any, tmp_path: Path
) -> None:
    #   query 1: user a's rows at 0..4 s; window time(10 s) [0, 10 s) open, its timer pending;
    #   stop. Query 2 on the same checkpoint: b's row at 30 s moves the watermark past 10 s:
    #   a's window flushes at 10 s with a's five rows, though no row of a came after the restart
    from trending.spark.spl_runner import apply_window

    spec = {"kind": "tumbling", "evict": {"time": 10}}
    source, checkpoint, sinks = tmp_path / "in", tmp_path / "chk", [Sink(), Sink()]
    source.mkdir()
    a_rows = [{"user": "a", "id": i, "v": i, "ts": BASE_MS + i * 1000} for i in range(5)]
    b_rows = [{"user": "b", "id": 99, "v": 0, "ts": BASE_MS + 30_000}]
    for sink, rows in zip(sinks, (a_rows, b_rows), strict=True):
        stream = spark.readStream.schema(SCHEMA).json(str(source))
        events = apply_window(
            stream, spec, key="user", time_column="ts", time_mode="event",
            watermark="0 seconds", order_by="id", kinds=["before_flush"],
        )  # fmt: skip
        query = start(events, checkpoint, sink)
        try:
            write_batch(source, rows)
            query.processAllAvailable()
        finally:
            query.stop()
    assert sinks[0].rows == []
    flushed = [(r["user"], r["event"], r["time_ms"]) for r in sinks[1].rows]
    assert flushed == [("a", "before_flush", BASE_MS + 10_000)]
    assert json.loads(sinks[1].rows[0]["tuples"]) == a_rows


def wait_for_input(query: Any, rows: int, timeout: float = 60.0) -> None:
    """Wait until the query's batches read ``rows`` input rows; fail after ``timeout`` s."""
    poll_until(
        lambda: sum(p["numInputRows"] for p in query.recentProgress) >= rows,
        timeout,
        lambda: f"fewer than {rows} rows read in {timeout:.0f} s",
    )


def test_a_processing_time_timer_pending_at_a_restart_fires_after_it(
    spark: Any, tmp_path: Path
) -> None:
    #   query 1: rows of users a b c go in at processing time t; window time(10 s) flushes at
    #   the next multiple of 10 s; stopped before that. Query 2 on the same checkpoint flushes
    #   each user's rows once that time has come. (Spark runs a restarted query's first batch
    #   only when input arrives, so one row of another user, z, comes after the restart.)
    from trending.spark.spl_runner import apply_window

    spec = {"kind": "tumbling", "evict": {"time": 10}}
    rows = make_rows(0, 12)
    for attempt in range(3):  # a stop that came after the flush time proves nothing: again
        folder = tmp_path / f"attempt-{attempt}"
        source, checkpoint, first = folder / "in", folder / "chk", Sink()
        source.mkdir(parents=True)

        def query_on(sink: Sink, source: Path = source, checkpoint: Path = checkpoint) -> Any:
            stream = spark.readStream.schema(SCHEMA).json(str(source))
            events = apply_window(stream, spec, key="user", time_mode="processing", order_by="id")
            return start(events, checkpoint, sink, {"processingTime": "200 milliseconds"})

        query = query_on(first)
        try:
            write_batch(source, rows)
            wait_for_input(query, len(rows))  # (processAllAvailable never returns while a
        finally:  # processing-time timer is pending: every trigger runs a no-data batch)
            query.stop()
        if not any(r["event"] == "after_flush" for r in first.rows):
            break
    else:
        pytest.fail("every stop came after the flush time")
    second = Sink()
    query = query_on(second)
    try:
        write_batch(source, [{"user": "z", "id": 100, "v": 0, "ts": 0}])

        def flushed_abc(got: list[Any]) -> bool:
            return {r["user"] for r in got if r["event"] == "after_flush"} >= {"a", "b", "c"}

        wait_for(second, flushed_abc)
    finally:
        query.stop()
    flushes = [r for r in second.rows if r["event"] == "before_flush" and r["user"] != "z"]
    assert sorted(r["user"] for r in flushes) == ["a", "b", "c"]
    assert all(r["time_ms"] % 10_000 == 0 for r in flushes)
    flushed = sorted((t for r in flushes for t in json.loads(r["tuples"])), key=lambda t: t["id"])
    assert flushed == rows


def test_seed_transcript_same_events_for_any_batching_and_across_a_restart(
    spark: Any, tmp_path: Path
) -> None:
    #   sliding count(4), trigger count(2), partitioned by user, the seed's items:
    #   a: () -> (1) -> *(3, 1) -> (7, 3, 1) -> *(8, 7, 3, 1) -> (11, 8, 7, 3) -> *(13, 11, 8, 7)
    #   b: () -> (2) -> *(4, 2) -> (5, 4, 2) -> *(6, 5, 4, 2) -> (9, 6, 5, 4) -> *(10, 9, 6, 5)
    #   fed as 12 files of 1 row, 4 files of 3 rows, and 4 files of 3 with a restart after 2
    spec = {"kind": "sliding", "evict": {"count": 4}, "trigger": {"count": 2}}
    runs = [
        run_in_files(spark, spec, tmp_path / "ones", 1)[0].events(),
        run_in_files(spark, spec, tmp_path / "threes", 3)[0].events(),
        run_in_files(spark, spec, tmp_path / "restart", 3, restart_after=2)[0].events(),
    ]
    assert runs[0] == runs[1] == runs[2] == pure_events(spec, SEED_ROWS)
    assert triggers(runs[0]) == {
        "a": [[1, 3], [1, 3, 7, 8], [7, 8, 11, 13]],
        "b": [[2, 4], [2, 4, 5, 6], [5, 6, 9, 10]],
    }


def pure_whole_events(spec: dict[str, Any], rows: list[dict[str, Any]]) -> Events:
    """The core's events of one partitioned window over all ``rows`` (id order), per user,
    ``seq`` numbering the whole window's events like the runner does."""
    from trending.windows.spl.keyed import pure_partitioned_inputs

    ordered = sorted(rows, key=lambda r: r["id"])
    inputs = pure_partitioned_inputs((None, r["user"], r) for r in ordered)
    out: Events = defaultdict(list)
    for seq, e in enumerate(build_window(parse_spec(spec)).run(inputs)):
        out[str(e.partition)].append((e.kind.value, seq, [dict(t) for t in e.tuples], None))
    return dict(out)


def test_partition_eviction_keeps_spark_state_rows_bounded(spark: Any, tmp_path: Path) -> None:
    #   40 users in turn (u00 u07 u14 ...), 3 rows each, in 4 files; partitionCount(5), LRU:
    #   the window is one state row whose size stays that of 5 partitions, whatever the
    #   number of users: each batch writes about as much as the first
    spec = {
        "kind": "sliding",
        "evict": {"count": 2},
        "partition_by": "user",
        "partition_eviction": {"count": 5, "select": "lru"},
    }
    users = [f"u{n:02d}" for n in range(40)]
    rows = [
        {"user": users[(i * 7) % 40], "id": i, "v": i, "ts": i * 1000}
        for i in range(len(users) * 3)
    ]
    source, sink = tmp_path / "in", Sink()
    source.mkdir()
    query = start(count_window(spark, spec, source), tmp_path / "chk", sink)
    state_rows, written = [], []
    try:
        for batch in range(4):
            seen = len(query.recentProgress)
            write_batch(source, rows[batch * 30 : (batch + 1) * 30])
            query.processAllAvailable()
            state_rows.append(query.lastProgress["stateOperators"][0]["numRowsTotal"])
            written.append(state_bytes_written(query.recentProgress[seen:]))
    finally:
        query.stop()
    assert sink.events() == pure_whole_events(spec, rows)
    # users come back only after the 39 others: every insertion but the first 5 evicts one
    assert sum(r["event"] == "partition_evict" for r in sink.rows) == len(rows) - 5
    assert state_rows == [1] * 4
    assert all(0 < later < 1.5 * written[0] for later in written[1:]), written


def test_whole_window_same_events_for_any_batching_and_across_a_restart(
    spark: Any, tmp_path: Path
) -> None:
    #   the seed's items, sliding count(4) + count(2) with tupleCount(5): a's and b's windows
    #   compete for 5 tuples; 1-row files vs 3-row files vs a restart give the same events
    spec = {
        "kind": "sliding",
        "evict": {"count": 4},
        "trigger": {"count": 2},
        "partition_by": "user",
        "partition_eviction": {"tuples": 5, "select": "lru"},
    }
    ones, ones_rows = run_in_files(spark, spec, tmp_path / "ones", 1)
    threes, _ = run_in_files(spark, spec, tmp_path / "threes", 3, restart_after=2)
    assert ones.events() == threes.events() == pure_whole_events(spec, SEED_ROWS)
    assert any(r["event"] == "partition_evict" for r in ones.rows)
    assert set(ones_rows) == {1}  # the whole window is one state row


def test_default_rows_carry_the_tuples_going_in_and_out_not_the_window(
    spark: Any, tmp_path: Path
) -> None:
    #   sliding count(3), trigger count(2), per user, 2 files | restart | 2 files:
    #   inserts and evictions carry their tuple; trigger and initial_full rows leave the
    #   window out (tuples null) and give its size; events otherwise those of the core
    from trending.spark.spl_runner import apply_window

    spec = {"kind": "sliding", "evict": {"count": 3}, "trigger": {"count": 2}}
    source, checkpoint = tmp_path / "in", tmp_path / "chk"
    source.mkdir()
    batches = [make_rows(i * 10, 10) for i in range(4)]
    sink = Sink()
    for half in (batches[:2], batches[2:]):
        stream = spark.readStream.schema(SCHEMA).json(str(source))
        query = start(apply_window(stream, spec, key="user", order_by="id"), checkpoint, sink)
        try:
            for batch in half:
                write_batch(source, batch)
                query.processAllAvailable()
        finally:
            query.stop()
    got = sorted((r["user"], r["seq"], r["event"], r["tuples"], r["size"]) for r in sink.rows)
    expected = []
    for user, events in pure_events(spec, [r for b in batches for r in b]).items():
        for kind, seq, tuples, _ in events:
            stays = kind in ("trigger", "initial_full")
            text = None if stays else json.dumps(tuples, separators=(",", ":"))
            expected.append((user, seq, kind, text, len(tuples)))
    assert got == sorted(expected)
    assert any(r["event"] == "trigger" and r["size"] == 3 for r in sink.rows)


def test_a_batch_does_not_rewrite_the_large_windows_it_does_not_touch(
    spark: Any, tmp_path: Path
) -> None:
    #   4 users in one bucket, count(1000) windows: a first file of 600 rows per user (each
    #   window past the runner's spill size), then 4 files of 10 rows of user a only. Those
    #   batches write a's window and the bucket's small rows, not the other three windows: each
    #   writes well under half of what the first batch (all four windows) wrote
    from trending.spark.spl_runner import apply_window

    spec = {"kind": "sliding", "evict": {"count": 1000}, "trigger": {"count": 5}}
    source, sink = tmp_path / "in", Sink()
    source.mkdir()
    stream = spark.readStream.schema(SCHEMA).json(str(source))
    events = apply_window(stream, spec, key="user", order_by="id", buckets=1)
    query = start(events, tmp_path / "chk", sink)
    files = [[{"user": "abcd"[i % 4], "id": i, "v": 1, "ts": 0} for i in range(2400)]]
    files += [[{"user": "a", "id": i, "v": 1, "ts": 0} for i in range(n, n + 10)]
              for n in range(2400, 2440, 10)]  # fmt: skip
    written = []
    try:
        for rows in files:
            seen = len(query.recentProgress)
            write_batch(source, rows)
            query.processAllAvailable()
            written.append(state_bytes_written(query.recentProgress[seen:]))
    finally:
        query.stop()
    assert all(0 < later < 0.5 * written[0] for later in written[1:]), written
    triggers = [r for r in sink.rows if r["event"] == "trigger" and r["user"] == "a"]
    assert len(triggers) == (600 + 40) // 5  # a's window went on across the batches


def state_bytes_written(progress: list[Any]) -> int:
    """Bytes the batches wrote into RocksDB (Spark's ``rocksdbTotalBytesWritten`` metric)."""
    operators = [op for entry in progress for op in entry.stateOperators]
    return sum(int(op.customMetrics.get("rocksdbTotalBytesWritten", 0)) for op in operators)


def test_whole_window_with_a_time_trigger_across_batches_and_a_restart(
    spark: Any, tmp_path: Path
) -> None:
    #   event time, one window partitioned by user, sliding count(3) with a time(5 s) trigger
    #   and partitionCount(2): rows 1 s apart over users a b c, 4 files, restart after 2.
    #   A trigger tick concerns every partition, so each batch loads them all; the events
    #   equal the core's fed the rows in time order (each row's time moves the clock)
    from trending.spark.spl_runner import apply_window
    from trending.windows.spl.keyed import pure_partitioned_inputs

    spec = {
        "kind": "sliding",
        "evict": {"count": 3},
        "trigger": {"time": 5},
        "partition_by": "user",
        "partition_eviction": {"count": 2},
    }
    rows = [
        {"user": "abcab"[i % 5] if i < 12 else "c", "id": i, "v": i, "ts": BASE_MS + i * 1000}
        for i in range(20)
    ]
    source, checkpoint, sink = tmp_path / "in", tmp_path / "chk", Sink()
    source.mkdir()
    for part in (rows[:10], rows[10:]):
        stream = spark.readStream.schema(SCHEMA).json(str(source))
        events = apply_window(
            stream, spec, time_column="ts", time_mode="event", watermark="0 seconds",
            order_by="id", include_window=True,
        )  # fmt: skip
        query = start(events, checkpoint, sink)
        try:
            for batch in (part[:5], part[5:]):
                write_batch(source, batch)
                query.processAllAvailable()
        finally:
            query.stop()
    inputs = pure_partitioned_inputs((r["ts"], r["user"], r) for r in rows)
    expected: Events = defaultdict(list)
    for seq, e in enumerate(build_window(parse_spec(spec)).run(inputs)):
        expected[str(e.partition)].append((e.kind.value, seq, [dict(t) for t in e.tuples], None))
    assert sink.events() == dict(expected)
    kinds = {row["event"] for row in sink.rows}
    assert {"trigger", "partition_evict", "after_evict"} <= kinds
