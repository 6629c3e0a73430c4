"""``trending.SlidingTopK`` on a real standalone cluster (a master and two workers, each its own
JVM), from a plain ``SparkSession.builder.master(...)`` session: the project's jar reaches the
executors only through the running session (``ADD JAR``), the counts live in the executors'
state stores, and the rows equal the brute force of ``test_library_topk`` (the rules of
``docs/library.md``), for a stream cut into micro-batches and for a batch DataFrame.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

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
    assert done.returncode == 0, done.stderr[-4000:]
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
    assert done.returncode == 0, done.stderr[-4000:]
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
