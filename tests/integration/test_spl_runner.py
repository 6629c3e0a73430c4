"""The SPL runner on a real local Spark session: per-key windows in transformWithStateInPandas.

Input is JSON files added to a directory between ``processAllAvailable()`` calls (Spark's file
source keeps which files it read in the checkpoint); output goes to a memory sink. The oracle
is the pure core: ``spec.build()`` fed each key's rows alone (``keyed.pure_inputs``).
"""

from __future__ import annotations

import json
import os
import sys
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from trending.windows.spl import parse_spec
from trending.windows.spl.keyed import pure_inputs

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
        window = window_spec.build()
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


def start(events: Any, checkpoint: Path, sink: Sink, trigger: dict[str, str] | None = None) -> Any:
    writer = events.writeStream.foreachBatch(sink).option("checkpointLocation", str(checkpoint))
    return writer.trigger(**trigger).start() if trigger else writer.start()


def count_window(spark: Any, spec: dict[str, Any], source: Path) -> Any:
    from trending.spark.spl_runner import apply_window

    stream = spark.readStream.schema(SCHEMA).json(str(source))
    return apply_window(stream, spec, key="user", order_by="id")


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
    assert merge(first, second) == pure_events(spec, rows)


def wait_for(sink: Sink, done: Callable[[list[Any]], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not done(list(sink.rows)) and time.monotonic() < deadline:
        time.sleep(0.2)


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
        kinds=["after_flush"],
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
        ("a", "after_flush", BASE_MS + 10_000)
    ]
    assert json.loads(out[0]["tuples"]) == a_rows
