"""The library on a real standalone cluster (a master and two workers, each its own JVM), from a
plain ``SparkSession.builder.master(...)`` session: the project's jar reaches the executors only
through the running session (``ADD JAR``), and the state lives in the executors' state stores.

- ``trending.SlidingTopK``: the rows equal the brute force of ``test_library_topk`` (the rules of
  ``docs/library.md``), for a stream cut into micro-batches and for a batch DataFrame;
- ``trending.SensorMatching``: the brute force of ``test_library_sensors``;
- ``trending.spl_window`` and ``trending.temporal_window`` on their JVM steps (Java
  ``StatefulProcessor``s in ``transformWithState``, deserialized on the executors): the brute
  forces of ``test_library_spl`` and ``test_library_temporal``, for files streamed one a
  micro-batch by a driver that stops half-way and a new driver that goes on from the
  checkpoints; each query's progress, plan and checkpoint show it ran the JVM step.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.test_library_topk import (
    ALIGN,
    HOP,
    SIZE,
    K,
    cut,
    model,
    random_rows,
    starts_of,
    top_of,
    write_file,
)
from tests.support import file_streams
from tests.support.jobs import failure_text
from tests.support.spark_cluster import StandaloneCluster, cluster_env

pytestmark = [pytest.mark.integration, pytest.mark.chaos]

SESSION = r"""
import json, sys
from pyspark.sql import SparkSession

master = sys.argv[1]
spark = (
    SparkSession.builder.master(master)
    .config("spark.sql.streaming.stateStore.providerClass",
            "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider")
    .config("spark.sql.shuffle.partitions", "4")
    .config("spark.executor.memory", "1g")
    .getOrCreate()
)
"""
"""The start of each script: a plain session on the cluster's master (``argv[1]``)."""

SCRIPT = (
    SESSION
    + r"""
from trending import SlidingTopK

folder, checkpoint = sys.argv[2:4]
settings = dict(size="1m", hop="20s", align="5s", k=3, lateness="15 seconds")
out = {"rows": {}, "late": {}}
def handle(rows, batch_id):
    out["rows"][batch_id] = sorted(
        [int(r.window_start.timestamp() * 1000), r.revision, r.is_final,
         [[e["key"], e["count"]] for e in r.top]] for r in rows.collect())
def on_late(rows, batch_id):
    out["late"][batch_id] = rows.count()
stream = spark.readStream.schema("tag STRING, ts LONG").option("maxFilesPerTrigger", 1).json(folder)
query = SlidingTopK(**settings).start(stream, handle, key="tag", time="ts", checkpoint=checkpoint,
                                      on_late=on_late, trigger={"availableNow": True})
query.awaitTermination()
batch = spark.read.schema("tag STRING, ts LONG").json(folder)
out["batch"] = [[int(r.window_start.timestamp() * 1000), [[e["key"], e["count"]] for e in r.top]]
                for r in batch.transform(SlidingTopK(size="1m", hop="20s", align="5s", k=3),
                                         key="tag", time="ts").collect()]
out["executors"] = spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size()
print(json.dumps(out))
"""
)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    with StandaloneCluster(tmp_path_factory.mktemp("cluster"), workers=2, cores=1) as running:
        yield running


@pytest.mark.timeout(900)
def test_sliding_topk_on_a_cluster_equals_the_model(
    cluster: StandaloneCluster, tmp_path: Path
) -> None:
    rows = random_rows(41, 600)
    batches = cut(rows, 41, 5)
    expected, expected_late = model(batches)
    folder = tmp_path / "in"
    folder.mkdir()
    for number, part in enumerate(batches):
        write_file(folder, number, part)
    script = tmp_path / "topk.py"
    script.write_text(SCRIPT)
    done = subprocess.run(
        [sys.executable, str(script), cluster.master_url, str(folder), str(tmp_path / "cp")],
        capture_output=True, text=True, timeout=840, env=cluster_env(), check=False,
    )  # fmt: skip
    assert done.returncode == 0, failure_text(done.stderr)
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["executors"] >= 3  # the driver and an executor on each worker

    def as_out(row: list) -> tuple:  # type: ignore[type-arg]
        start, revision, final, top = row
        return (start, revision, final, tuple((k, c) for k, c in top))

    got = [
        [as_out(r) for r in rows]
        for _, rows in sorted(out["rows"].items(), key=lambda kv: int(kv[0]))
        if rows
    ]
    assert got == [b for b in expected if b]
    late = [n for _, n in sorted(out["late"].items(), key=lambda kv: int(kv[0]))]
    assert late == [len(b) for b in expected_late if b]

    counts: dict[int, Counter[str]] = {}
    for key, t in rows:
        if key is not None and t is not None:
            for s in starts_of(t):
                counts.setdefault(s, Counter())[key] += 1
    assert [(s, tuple(map(tuple, top))) for s, top in out["batch"]] == [
        (s, top_of(counts[s])) for s in sorted(counts)
    ]
    assert (SIZE, HOP, ALIGN, K) == (60_000, 20_000, 5_000, 3)  # the settings the script uses


SENSORS_SCRIPT = (
    SESSION
    + r"""
from trending import SensorMatching

root, checkpoint = sys.argv[2:4]
out = {"matches": {}, "popular": {}}
def on_match(rows, batch_id):
    out["matches"][batch_id] = sorted(
        [r.query_id, r.sensor_id, r.value, int(r.reading_time.timestamp() * 1000),
         int(r.query_time.timestamp() * 1000), r.x, r.y] for r in rows.collect())
def on_popular(rows, batch_id):
    out["popular"][batch_id] = sorted(
        [r.sensor_id, r.x, r.y, r.value, int(r.reading_time.timestamp() * 1000), r.matches]
        for r in rows.collect())
readings = (spark.readStream.schema("sensor_id LONG, x DOUBLE, y DOUBLE, value DOUBLE, ts LONG")
            .option("maxFilesPerTrigger", 1).json(root + "/readings"))
queries = (spark.readStream.schema("query_id LONG, x DOUBLE, y DOUBLE, distance DOUBLE, ts LONG")
           .option("maxFilesPerTrigger", 1).json(root + "/queries"))
matching = SensorMatching(size=6, threshold=2, lateness="3s", cell_size=0.1)
query = matching.start(readings, queries, on_match, checkpoint=checkpoint, on_popular=on_popular,
                       trigger={"availableNow": True})
query.awaitTermination()
out["executors"] = spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size()
READINGS = "sensor_id LONG, x DOUBLE, y DOUBLE, value DOUBLE, ts LONG"
QUERIES = "query_id LONG, x DOUBLE, y DOUBLE, distance DOUBLE, ts LONG"
batch_readings = spark.read.schema(READINGS).json(root + "/readings")
batch_queries = spark.read.schema(QUERIES).json(root + "/queries")
try:
    matching.run(batch_readings, batch_queries)
except Exception as error:
    out["refused"] = str(error)
spark.sparkContext.setCheckpointDir(root + "/shared")
results = matching.run(batch_readings, batch_queries)
out["batch_matches"] = sorted(
    [r.query_id, r.sensor_id, r.value, int(r.reading_time.timestamp() * 1000),
     int(r.query_time.timestamp() * 1000), r.x, r.y] for r in results.matches.collect())
out["batch_popular"] = sorted(
    [r.sensor_id, r.x, r.y, r.value, int(r.reading_time.timestamp() * 1000), r.matches]
    for r in results.popular.collect())
print(json.dumps(out))
"""
)


@pytest.mark.timeout(900)
def test_sensor_matching_on_a_cluster_equals_the_model(
    cluster: StandaloneCluster, tmp_path: Path
) -> None:
    """``trending.SensorMatching`` with its three state stores on the workers' executors, from a
    plain session: the brute force of ``test_library_sensors`` (global window of 6)."""
    from tests.integration import test_library_sensors as sensors

    batches = sensors.random_batches(23, 400, 5)
    expected_m, expected_p, _ = sensors.model(batches, per_sensor=False)
    root = tmp_path / "in"
    for number, (readings, queries) in enumerate(batches):
        sensors.write_file(root / "readings", number, readings)
        sensors.write_file(root / "queries", number, queries)
    script = tmp_path / "sensors.py"
    script.write_text(SENSORS_SCRIPT)
    done = subprocess.run(
        [sys.executable, str(script), cluster.master_url, str(root), str(tmp_path / "cp")],
        capture_output=True, text=True, timeout=840, env=cluster_env(), check=False,
    )  # fmt: skip
    assert done.returncode == 0, failure_text(done.stderr)
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["executors"] >= 3  # the driver and an executor on each worker
    assert (sensors.SIZE, sensors.THRESHOLD, sensors.LATENESS) == (6, 2, 3_000)

    def in_order(per_batch: dict[str, list]) -> list:  # type: ignore[type-arg]
        return [
            [tuple(r) for r in rows]
            for _, rows in sorted(per_batch.items(), key=lambda kv: int(kv[0]))
        ]

    assert in_order(out["matches"]) == expected_m
    assert in_order(out["popular"]) == expected_p
    assert sum(map(len, expected_m)) > 30
    # the same inputs as two batch DataFrames: refused without a folder every executor reaches,
    # then run under Spark's checkpoint directory
    assert "give location=" in out["refused"]
    readings = [row for batch_readings, _ in batches for row in batch_readings]
    queries = [row for _, batch_queries in batches for row in batch_queries]
    final_m, final_p, _ = sensors.model([(readings, queries)], per_sensor=False, lateness=-1)
    assert [tuple(r) for r in out["batch_matches"]] == final_m[0]
    assert [tuple(r) for r in out["batch_popular"]] == final_p[0]
    assert len(list((root / "shared").glob("*/trending-sensors-*/*"))) > 0  # the stores


def run_on_cluster(cluster: StandaloneCluster, script: Path, *args: str) -> dict[str, Any]:
    """Run ``script`` (a :data:`SESSION` script) as a driver of its own on ``cluster``; its
    output, the JSON of its last line."""
    done = subprocess.run(
        [sys.executable, str(script), cluster.master_url, *args],
        capture_output=True, text=True, timeout=840, env=cluster_env(), check=False,
    )  # fmt: skip
    assert done.returncode == 0, failure_text(done.stderr)
    out: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["executors"] >= 3  # the driver and an executor on each worker
    return out


def add_files(
    folder: Path,
    files: list[list[dict[str, Any]]],
    write: Callable[..., None],
    clock: Iterator[int],
) -> None:
    """Each of ``files`` a file of ``folder`` (``write(folder, rows)``), each modified a second
    after the one before (``clock``): the file source takes the oldest first, one a batch."""
    for rows in files:
        before = set(folder.iterdir())
        write(folder, rows)
        (new,) = set(folder.iterdir()) - before
        stamp = next(clock)
        os.utime(new, (stamp, stamp))


JVM_STEP = r"""
import re

def ran_on(query):
    # what a query ran on: the state operators of its progress reports (transformWithStateExec
    # for a JVM StatefulProcessor, transformWithStateInPandasExec for a Python one), and the
    # project's classes its last plan names (the processor of a TransformWithState node)
    plan = query._jsq.streamingQuery().lastExecution().toString()
    return {
        "operators": sorted({o["operatorName"] for p in query.recentProgress
                             for o in p["stateOperators"]}),
        "classes": sorted(set(re.findall(r"trending\.[\w.$]+", plan))),
        "batches": sum(1 for p in query.recentProgress if p["numInputRows"] > 0),
        "state_rows": sum(o["numRowsTotal"] for o in query.lastProgress["stateOperators"]),
    }
"""
"""What each window script reports about each of its queries (see ``ran_on``)."""

SPL_SCRIPT = (
    SESSION
    + JVM_STEP
    + r"""
from trending import spl_window

folder, checkpoint, schema = sys.argv[2:5]
windows = json.loads(sys.argv[5])

def plain(value):
    # as JSON keeps it (a bool stays a bool, an int an int), else its type's name and text
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return [type(value).__name__, str(value)]

def record(row):
    return {name: plain(value) for name, value in row.asDict().items()}

out = {"engine": spark.conf.get("spark.trending.spl.engine", "auto"), "queries": []}
started = []  # the queries side by side, each on its own checkpoint
stream = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).json(folder)
for number, (spec, options) in enumerate(windows):
    events = []
    def handle(rows, batch_id, events=events):
        for r in rows.collect():
            typed = "summary" in r.__fields__ and r["summary"] is not None
            summary = r["summary"].asDict() if typed else None
            tuples = None if r["tuples"] is None else [record(t) for t in r["tuples"]]
            events.append(
                [r["user"], r["event"], r["seq"], tuples, r["time_ms"], summary, r["size"]])
    query = (spl_window(stream, spec, key="user", **options).writeStream.foreachBatch(handle)
             .option("checkpointLocation", f"{checkpoint}/{number}")
             .trigger(availableNow=True).start())
    started.append((events, query))
for events, query in started:
    query.awaitTermination()
    out["queries"].append({"events": events, **ran_on(query)})
out["read"] = [record(r) for r in spark.read.schema(schema).json(folder).collect()]
out["executors"] = spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size()
print(json.dumps(out))
"""
)


@pytest.mark.timeout(900)
def test_spl_windows_on_a_cluster_equal_the_model(
    cluster: StandaloneCluster, tmp_path: Path
) -> None:
    """``trending.spl_window`` on the JVM step (``trending.spl.SplWindowStep``) with its
    windows in the workers' executors' state stores, from a plain session: the brute force of
    ``test_library_spl`` (tumbling count(4) with summaries | sliding count(3), a trigger every
    2nd insertion, the window on it), for 6 files, one micro-batch each; the driver stops after
    3 and a new one goes on from the checkpoints."""
    from tests.integration import test_library_spl as spl

    sliding = {"kind": "sliding", "evict": {"count": 3}, "trigger": {"count": 2}}
    windows = [
        (spl.TUMBLING, {"order_by": "id"}),
        (sliding, {"order_by": "id", "include_window": True}),
    ]
    models = [lambda r: spl.tumbling_count(r, 4), lambda r: spl.sliding_count(r, 3, 2)]
    rows = spl.random_rows(seed=21, count=90)
    files = spl.cuts(22, rows, 6)
    source = tmp_path / "in"
    source.mkdir()
    script = tmp_path / "spl.py"
    script.write_text(SPL_SCRIPT)
    clock = itertools.count(int(time.time()) - 3600)
    runs = []
    for part in (files[:3], files[3:]):
        add_files(source, part, file_streams.write_file, clock)
        runs.append(
            run_on_cluster(cluster, script, str(source), str(tmp_path / "cp"), spl.SCHEMA,
                           json.dumps(windows))
        )  # fmt: skip
    read = {r["id"]: r for r in runs[-1]["read"]}  # as Spark reads the rows back, typed
    assert len(read) == len(rows)
    for number, rule in enumerate(models):
        expected = spl.expected(rows, read, rule)
        got: dict[str, list[tuple[Any, ...]]] = {}
        events = [e for run in runs for e in run["queries"][number]["events"]]
        for user, *event in sorted(events, key=lambda e: (e[0], e[2])):  # by key, then seq
            got.setdefault(user, []).append(tuple(event))
        assert got == expected, windows[number][0]
        assert sum(map(len, expected.values())) > 150
        ran = [run["queries"][number] for run in runs]
        assert all(r["events"] for r in ran)  # each driver's query wrote rows
        assert [r["batches"] for r in ran] == [3, 3]  # a micro-batch a file
        check_jvm_step(ran, tmp_path / "cp" / str(number), "trending.spl.SplWindowProcessor",
                       b"spl_window_jvm")  # fmt: skip
    assert [run["engine"] for run in runs] == ["auto", "auto"]  # spark.trending.spl.engine


def check_jvm_step(
    ran: list[dict[str, Any]], checkpoint: Path, processor: str, state: bytes
) -> None:
    """The runs ``ran`` of a query (``ran_on`` of each driver) were the JVM step's: the state
    operator of every micro-batch is ``transformWithStateExec`` (Spark's ``TransformWithState``
    over a JVM ``StatefulProcessor``; the Python steps' ``TransformWithStateInPySpark`` reports
    ``transformWithStateInPandasExec``), the last plan names the project's ``processor``, the
    stores hold rows, and the state schema in ``checkpoint`` has the JVM layout's state variable
    ``state`` (the Python layouts have others)."""
    for one in ran:
        assert one["operators"] == ["transformWithStateExec"], one["operators"]
        assert processor in one["classes"], one["classes"]
        assert one["state_rows"] > 0
    schemas = [f for f in (checkpoint / "state" / "0" / "_stateSchema").rglob("*") if f.is_file()]
    assert any(state in f.read_bytes() for f in schemas), schemas
    assert list(checkpoint.glob("state/0/*/*.zip"))  # the stores' snapshots, from the executors


TEMPORAL_SCRIPT = (
    SESSION
    + JVM_STEP
    + r"""
from trending import temporal_window

folder, checkpoint, schema, delay = sys.argv[2:6]
specs = json.loads(sys.argv[6])
out = {"engine": spark.conf.get("spark.trending.temporal.engine", "auto"), "queries": []}
started = []  # the queries side by side, each on its own checkpoint
stream = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).json(folder)
for number, spec in enumerate(specs):
    rows = []
    def handle(batch, batch_id, rows=rows):  # start and end as epoch ms (as_ms of the model's)
        rows.extend(r.asDict() for r in batch.selectExpr(
            "key", "unix_millis(start) AS start_ms", "unix_millis(`end`) AS end_ms", "value",
            "values").collect())
    window = temporal_window(stream, spec, key="key", start="start", end="end",
                             kind_column="kind", id_column="id", value_column="value",
                             watermark=f"{delay} milliseconds")
    query = (window.writeStream.foreachBatch(handle)
             .option("checkpointLocation", f"{checkpoint}/{number}")
             .trigger(availableNow=True).start())
    started.append((rows, query))
for rows, query in started:
    query.awaitTermination()
    out["queries"].append({"rows": rows, **ran_on(query)})
out["executors"] = spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size()
print(json.dumps(out))
"""
)


@pytest.mark.timeout(900)
def test_temporal_windows_on_a_cluster_equal_the_model(
    cluster: StandaloneCluster, tmp_path: Path
) -> None:
    """``trending.temporal_window`` on the JVM step (``trending.temporal.spark.TemporalStep``)
    with its keys' events in the workers' executors' state stores, from a plain session: the
    brute force of ``test_library_temporal`` (hopping 5 s every 2 s, time-weighted average |
    HoppingWindow2 4 s every 3 s, count; delay 2 s), for 6 files in sync-time order, one
    micro-batch each, the last also holding an interval far behind the watermark (dropped);
    the driver stops after 3 and a new one goes on from the checkpoints. The rows of both
    drivers together are those final at the last watermark."""
    from tests.integration import test_library_temporal as temporal

    rows = temporal.random_events(seed=15, count=90, open_edges=True)
    w = max(temporal.sync(r) for r in rows) - temporal.DELAY_MS
    models = [temporal.expected(rows, model, w) for model in temporal.STREAM_MODELS]
    files = temporal.files_of(53, rows, 6)
    late = {"kind": "INTERVAL", "key": "a", "id": "late", "start": temporal.T0 - 9000,
            "end": temporal.T0 - 8000, "value": 1000.0}  # fmt: skip
    files[-1].append(late)
    source = tmp_path / "in"
    source.mkdir()
    script = tmp_path / "temporal.py"
    script.write_text(TEMPORAL_SCRIPT)
    clock = itertools.count(int(time.time()) - 3600)
    runs = []
    for part in (files[:3], files[3:]):
        add_files(source, part, temporal.write_file, clock)
        runs.append(
            run_on_cluster(cluster, script, str(source), str(tmp_path / "cp"),
                           temporal.STREAM_SCHEMA, str(temporal.DELAY_MS),
                           json.dumps([temporal.HOPPING, temporal.SNAPPED]))
        )  # fmt: skip
    for number, model_rows in enumerate(models):
        got = [row for run in runs for row in run["queries"][number]["rows"]]
        assert temporal.plain(got) == temporal.rounded(model_rows), number
        assert len(model_rows) > 40
        ran = [run["queries"][number] for run in runs]
        assert all(r["rows"] for r in ran)  # each driver's query wrote rows
        assert [r["batches"] for r in ran] == [3, 3]  # a micro-batch a file
        check_jvm_step(ran, tmp_path / "cp" / str(number),
                       "trending.temporal.spark.TemporalKeyProcessor", b"temporal_jvm")  # fmt: skip
    assert [run["engine"] for run in runs] == ["auto", "auto"]  # spark.trending.temporal.engine
