"""The temporal windows' JVM step (``trending.temporal.spark``) on streams cut into micro-batches.

Three checks, each on a plain session:

* ``temporal_window`` over seeded random events, with late ones (sync time behind the
  watermark when they arrive) and invalid ones mixed in (``invalid="drop"``), streamed as
  JSON files, each file one micro-batch, cut at two seeded sets of points, the queries stopped
  after the first file and continued on their checkpoints: every row must come out once, and
  the rows must be the brute-force models' (``test_library_temporal``, written from the window
  rules) over the events that were on time, final at the last watermark;
* the job's rows (results, LATE and DEAD with their records' origin, PROGRESS marks) of
  Kafka-shaped records, batch by batch, against the Python step on the same batches:
  CTI records, dead records, missing fields, infinite values, end edges without a start edge,
  CTI violations under ``"violation": "fail"``, late events, a restart;
* a checkpoint the Python step wrote, restarted on the JVM step: Spark refuses it, naming both
  operators.
"""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.test_library_temporal import (
    DELAY_MS,
    STREAM_SCHEMA,
    T0,
    Event,
    as_ms,
    count_windows,
    expected,
    hopping,
    plain,
    random_events,
    rounded,
    snapshot,
    sync,
    write_file,
)
from tests.support import file_streams
from tests.support.file_streams import RowSink, seeded_cuts
from tests.support.plain_session import plain_session
from tests.support.queries import finish_or_refused

pytestmark = pytest.mark.integration

SPECS: list[tuple[dict[str, Any], Callable[[list[Event], int], list[Any]]]] = [
    ({"kind": "tumbling", "duration": "3s", "aggregate": {"top_k": 2}},
     lambda e, w: hopping(e, 3000, 3000, 0, {"top_k": 2}, w)),
    ({"kind": "snapshot", "aggregate": "sum"}, lambda e, w: snapshot(e, "sum", w)),
    ({"kind": "count", "n": 3, "aggregate": "max"}, lambda e, w: count_windows(e, 3, "max", w)),
    ({"kind": "hopping", "duration": "5s", "hop": "2s", "alignment": 700,
      "aggregate": "time_weighted_average"},
     lambda e, w: hopping(e, 5000, 2000, 700, "time_weighted_average", w)),
]  # fmt: skip


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    yield from plain_session("tests-temporal-jvm-step")


# ---- temporal_window against the models --------------------------------------------------------


def cut(seed: int, rows: list[dict[str, Any]], files: int) -> list[list[dict[str, Any]]]:
    """``rows`` in sync-time order cut into ``files`` at seeded points, each file shuffled."""
    return seeded_cuts(seed, sorted(rows, key=sync), files)


def with_late_and_invalid(
    seed: int, files: list[list[dict[str, Any]]]
) -> tuple[list[list[dict[str, Any]]], list[dict[str, Any]]]:
    """Into every file but the first: an interval and a point whose sync time is behind the
    watermark of the batch before (late: dropped), an end edge without a start edge and an
    interval that ends before it starts (invalid: dropped). Also the on-time rows."""
    rng = random.Random(seed)
    on_time = [row for part in files for row in part]
    out = [files[0]]
    for number, part in enumerate(files[1:], start=1):
        before = max(sync(r) for f in files[:number] for r in f) - DELAY_MS
        late_start = before - rng.randint(1, 3000)
        key = rng.choice("abc")
        extra = [
            {"kind": "INTERVAL", "key": key, "id": f"late{number}", "start": late_start,
             "end": late_start + 5000, "value": 100.0},
            {"kind": "POINT", "key": key, "id": None, "start": before - 1, "end": None,
             "value": 50.0},
            {"kind": "END_EDGE", "key": key, "id": f"nowhere{number}", "start": None,
             "end": before + 10, "value": None},
            {"kind": "INTERVAL", "key": key, "id": f"backwards{number}", "start": before + 20,
             "end": before + 10, "value": 1.0},
        ]  # fmt: skip
        out.append([*part, *extra])
    return out, on_time


def run_files(
    spark: Any, folder: Path, files: list[list[dict[str, Any]]], counts: list[int]
) -> list[list[Any]]:
    """Each file one micro-batch through every spec of :data:`SPECS` (a query each); the
    queries stop after the first file and new ones go on from their checkpoints. Then wait for
    ``counts`` rows (the last ones come in no-data batches)."""
    from trending import temporal_window

    def window(spec: dict[str, Any]) -> Callable[[Any], Any]:
        return lambda stream: temporal_window(
            stream, spec, key="key", start="start", end="end", kind_column="kind",
            id_column="id", value_column="value", watermark=f"{DELAY_MS} milliseconds",
            invalid="drop",
        )  # fmt: skip

    sinks = file_streams.stream_in_files(
        spark, folder, files, [window(spec) for spec, _ in SPECS], STREAM_SCHEMA,
        sink=lambda: RowSink(as_ms), write=write_file, restart_after=1,
        settle=lambda sinks: all(len(s.rows) >= c for s, c in zip(sinks, counts, strict=True)),
    )  # fmt: skip
    return [sink.rows for sink in sinks]


@pytest.mark.parametrize(("seed", "files"), [(11, 3), (12, 5)])
def test_split_streams_with_late_and_invalid_events_give_the_models_rows(
    spark: Any, tmp_path: Path, seed: int, files: int
) -> None:
    #   events a/b/c over a minute, delay 2 s, in sync order cut into files; each later file
    #   also holds 2 late and 2 invalid rows:
    #     file 1 |----on time----|            W1 = newest sync - 2 s
    #     file 2      late <- W1 |----on time----|  + an end edge of nothing, an interval
    #                                                 ending before its start
    #   a stop and restart after file 1; rows = the models' of the on-time events at the last W
    rows = random_events(seed, 70, open_edges=True)
    parts, on_time = with_late_and_invalid(seed, cut(seed, rows, files))
    w = max(sync(r) for r in on_time) - DELAY_MS
    models = [rounded(expected(on_time, model, w)) for _, model in SPECS]
    assert all(models), "every spec has final rows"
    sinks = run_files(spark, tmp_path, parts, [len(m) for m in models])
    for (spec, _), sink, model in zip(SPECS, sinks, models, strict=True):
        assert plain(sink) == model, spec


# ---- the job's rows against the Python step -----------------------------------------------------

KAFKA_SCHEMA = (
    "kind INT, key STRING, id STRING, start_ms LONG, end_ms LONG, value DOUBLE, sync_ms LONG, "
    "mark_ms LONG, topic STRING, partition INT, offset LONG, record_key BINARY, raw BINARY, "
    "reason STRING, record_ts LONG, headers ARRAY<STRUCT<key: STRING, value: BINARY>>"
)
LATENESS_MS = 1000


def kafka_records(seed: int, count: int) -> list[dict[str, Any]]:
    """Decoded records as ``temporal_events`` makes them, in roughly rising sync time: events
    and edges of keys k0..k4, some late, CTIs, dead records and events the core refuses."""
    rng = random.Random(seed)
    out: list[dict[str, Any]] = []
    open_ids: list[tuple[str, str]] = []
    for i in range(count):
        now = T0 + i * 200 + rng.randint(-150, 150)
        key, roll = f"k{rng.randint(0, 4)}", rng.random()
        end, value = now + rng.randint(1, 4000), float(rng.randint(-3, 9))
        record = {"kind": 0, "key": key, "id": f"e{i}", "start_ms": now, "end_ms": end,
                  "value": value}  # fmt: skip
        if roll < 0.1:
            record = {**record, "kind": 3, "key": None, "id": None, "end_ms": None, "value": None}
            record["start_ms"] = now + rng.randint(0, 2000)  # a CTI, a little ahead
        elif roll < 0.15:
            record |= {"kind": 4, "reason": rng.choice(["not Avro", "too far in the future"])}
        elif roll < 0.25:
            record |= {"start_ms": now - rng.randint(2000, 6000)}  # late (or a violation)
        elif roll < 0.3:
            record |= rng.choice([{"start_ms": None}, {"end_ms": None}, {"value": float("inf")},
                                  {"kind": 2, "id": "nowhere", "end_ms": now}])  # fmt: skip
        elif roll < 0.45:
            record |= {"kind": 1, "end_ms": None}
            open_ids.append((key, record["id"]))
        elif roll < 0.6 and open_ids:
            edge_key, edge_id = open_ids.pop(rng.randrange(len(open_ids)))
            record |= {"kind": 2, "key": edge_key, "id": edge_id, "start_ms": None,
                       "end_ms": now, "value": None}  # fmt: skip
        sync_ms = record["end_ms"] if record["kind"] == 2 else record["start_ms"]
        lateness = LATENESS_MS if record["kind"] == 3 else 0
        marked = None if record["kind"] == 4 or sync_ms is None else sync_ms + lateness
        record |= {"sync_ms": sync_ms, "mark_ms": marked, "topic": "in", "partition": i % 2,
                   "offset": i, "record_key": key.encode(), "raw": f"raw{i}".encode(),
                   "reason": record.get("reason"), "record_ts": now + 5,
                   "headers": [{"key": "h", "value": b"x"}] if i % 7 == 0 else None}  # fmt: skip
        out.append(record)
    return out


def write_parquet(spark: Any, folder: Path, rows: list[dict[str, Any]]) -> None:
    staged = folder.parent / f"stage-{uuid.uuid4().hex}"
    spark.createDataFrame(rows, KAFKA_SCHEMA).coalesce(1).write.parquet(str(staged))
    for file in staged.glob("*.parquet"):
        file.rename(folder / f"{uuid.uuid4().hex}.parquet")


def batch_rows(batch: Any) -> tuple[list[Any], tuple[Any, Any]]:
    """A batch's rows but PROGRESS (sorted), and its PROGRESS rows' newest mark and count (one
    row per bucket in the Python step, per key in the JVM step)."""
    from trending.spark.temporal_steps import PROGRESS

    rows = [r.asDict(recursive=True) for r in batch.collect()]
    marks = [r["sync_ms"] for r in rows if r["kind"] == PROGRESS and r["sync_ms"] is not None]
    counted = sum(r["events"] for r in rows if r["kind"] == PROGRESS)
    others = [json.dumps(r, sort_keys=True, default=repr) for r in rows if r["kind"] != PROGRESS]
    return sorted(others), (max(marks, default=None), counted)


def run_job_rows(
    spark: Any, folder: Path, files: list[list[dict[str, Any]]], spec: dict[str, Any], engine: str
) -> dict[int, Any]:
    """Per batch id the rows of :func:`batch_rows`, each file one micro-batch, the query
    stopped after the second file and continued on its checkpoint."""
    from trending.spark.temporal_jvm_step import ENGINE_CONF
    from trending.spark.temporal_steps import INPUT_COLUMNS, apply_temporal, under_watermark
    from trending.windows.temporal.spec import parse_temporal_spec

    source = folder / "in"
    source.mkdir(parents=True)
    batches: dict[int, Any] = {}

    def sink(batch: Any, batch_id: int) -> None:
        rows = batch_rows(batch)
        if rows != ([], (None, 0)):
            batches[batch_id] = rows

    spark.conf.set(ENGINE_CONF, engine)
    try:
        for part in (files[:2], files[2:]):
            stream = spark.readStream.schema(KAFKA_SCHEMA).parquet(str(source))
            events = under_watermark(stream, f"{LATENESS_MS} milliseconds", INPUT_COLUMNS)
            out = apply_temporal(events, parse_temporal_spec(spec))
            query = (
                out.writeStream.foreachBatch(sink)
                .option("checkpointLocation", str(folder / "chk"))
                .start()
            )
            try:
                for rows in part:
                    write_parquet(spark, source, rows)
                    query.processAllAvailable()
            finally:
                query.stop()
    finally:
        spark.conf.unset(ENGINE_CONF)
    return batches


@pytest.mark.parametrize(
    "spec",
    [
        {"kind": "snapshot", "aggregate": "sum", "violation": "fail"},
        {
            "kind": "hopping",
            "duration": "3s",
            "hop": "1s",
            "aggregate": "count",
            "violation": "adjust",
        },
        {"kind": "count", "n": 2, "aggregate": {"top_k": 2}, "violation": "drop"},
    ],
    ids=["snapshot-fail", "hopping-adjust", "count-drop"],
)
def test_the_jobs_rows_batch_by_batch_are_the_python_steps(
    spark: Any, tmp_path: Path, spec: dict[str, Any]
) -> None:
    #   120 records over 5 keys cut into 4 micro-batches (one file each), restarted after the
    #   second; per batch: the same RESULT, LATE and DEAD rows (with reasons and origin) and
    #   the same newest PROGRESS mark and record count
    records = kafka_records(21, 120)
    files = [records[i : i + 30] for i in range(0, 120, 30)]
    jvm = run_job_rows(spark, tmp_path / "jvm", files, spec, "auto")
    python = run_job_rows(spark, tmp_path / "python", files, spec, "python")
    kinds = {json.loads(r)["kind"] for rows, _ in jvm.values() for r in rows}
    late = set() if spec["violation"] == "adjust" else {11}  # adjust: none is late
    assert kinds >= {4, 10} | late, "results, dead and late rows"
    assert jvm == python


# ---- state layout -------------------------------------------------------------------------------


def test_a_checkpoint_of_the_python_step_is_refused_by_the_jvm_step(
    spark: Any, tmp_path: Path
) -> None:
    #   a query on the Python step's checkpoint restarted on the JVM step: Spark refuses the
    #   restart, naming both stateful operators (docs/library.md)
    from trending.spark.temporal_jvm_step import ENGINE_CONF

    source = tmp_path / "in"
    source.mkdir()
    spec = {"kind": "snapshot", "aggregate": "count"}
    for engine in ("python", "auto"):
        write_file(source, random_events(5, 12, open_edges=True))
        spark.conf.set(ENGINE_CONF, engine)
        try:
            query = start_window(spark, source, spec, tmp_path / "chk")
        finally:
            spark.conf.unset(ENGINE_CONF)
        refusal = (
            "STREAMING_STATEFUL_OPERATOR_NOT_MATCH_IN_STATE_METADATA",
            "transformWithStateInPandasExec",
            "transformWithStateExec",
        )
        finish_or_refused(query, () if engine == "python" else refusal)


def test_a_restart_with_another_query_is_refused_and_the_same_one_goes_on(
    spark: Any, tmp_path: Path
) -> None:
    #   a key's state fits only the query it was written by: restarted on its checkpoint with
    #   another aggregate, the query fails saying so; restarted as it was, it goes on

    source = tmp_path / "in"
    source.mkdir()
    count = {"kind": "snapshot", "aggregate": "count"}
    sum_ = {"kind": "snapshot", "aggregate": "sum"}
    other = ("state was written by another query than this one", '"name":"sum"')
    runs = [(count, ()), (sum_, other), (count, ())]
    for number, (spec, refusal) in enumerate(runs):
        write_file(source, random_events(30 + number, 12, open_edges=True))
        finish_or_refused(start_window(spark, source, spec, tmp_path / "chk"), refusal)


def start_window(spark: Any, source: Path, spec: dict[str, Any], checkpoint: Path) -> Any:
    """A ``temporal_window`` query on the event files in ``source``, writing nowhere."""
    from trending import temporal_window

    stream = spark.readStream.schema(STREAM_SCHEMA).json(str(source))
    return (
        temporal_window(stream, spec, end="end", kind_column="kind", id_column="id")
        .writeStream.format("noop")
        .option("checkpointLocation", str(checkpoint))
        .start()
    )
