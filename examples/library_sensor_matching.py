"""Queries matched against the last readings of sensors, in your own PySpark job:
``trending.SensorMatching``.

    .venv/bin/python examples/library_sensor_matching.py [--matches 20] [--seconds 120]

Two of Spark's ``rate`` streams: readings, 20 a second, from sensors 0-2 at positions spread
over the unit square; queries, 2 a second, each asking for the readings within 0.25 of the
square's centre. The window holds the last 10 readings (of all sensors); a reading matched by
at least 3 queries is reported as popular when it leaves the window. Events are applied once
Spark's clock of events (the newest event - 1 s) passes them. It prints each match and popular
reading, and stops after ``--matches`` matches (or ``--seconds``).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from typing import Any


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--matches", type=int, default=20, help="stop after this many matches")
    parser.add_argument("--seconds", type=float, default=120.0, help="or after this long")
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    from trending import SensorMatching

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("library-sensor-matching")
        .config(
            "spark.sql.streaming.stateStore.providerClass",
            "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
        )
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")

    n = F.col("value")
    readings = (
        spark.readStream.format("rate").option("rowsPerSecond", 20).load()
        .select(
            (n % 3).alias("sensor_id"),
            ((n * 37) % 100 / 100).alias("x"),
            ((n * 61) % 100 / 100).alias("y"),
            n.cast("double").alias("value"),
            F.col("timestamp").alias("ts"),
        )
    )  # fmt: skip
    queries = (
        spark.readStream.format("rate").option("rowsPerSecond", 2).load()
        .select(
            n.alias("query_id"), F.lit(0.5).alias("x"), F.lit(0.5).alias("y"),
            F.lit(0.25).alias("distance"), F.col("timestamp").alias("ts"),
        )
    )  # fmt: skip
    matched = [0]

    def on_match(rows: Any, batch_id: int) -> None:
        for r in rows.orderBy("query_time", "reading_time").collect():
            print(
                f"match: query {r.query_id} sensor {r.sensor_id} value {r.value:.0f} "
                f"at ({r.x:.2f}, {r.y:.2f})",
                flush=True,
            )
            matched[0] += 1

    def on_popular(rows: Any, batch_id: int) -> None:
        for r in rows.collect():
            print(
                f"popular: sensor {r.sensor_id} value {r.value:.0f} at ({r.x:.2f}, {r.y:.2f}) "
                f"matched {r.matches} times",
                flush=True,
            )

    matching = SensorMatching(size=10, threshold=3, lateness="1s")
    checkpoint = tempfile.mkdtemp(prefix="library-sensors-")
    query = matching.start(
        readings, queries, on_match, checkpoint=checkpoint, on_popular=on_popular,
        trigger={"processingTime": "1 second"},
    )  # fmt: skip
    deadline = time.monotonic() + args.seconds
    while matched[0] < args.matches and time.monotonic() < deadline:
        query.awaitTermination(0.5)  # raises if the query failed
    idle = time.monotonic() + 10
    while query.status["isTriggerActive"] and time.monotonic() < idle:
        time.sleep(0.05)  # stop between micro-batches, not inside one
    query.stop()
    spark.stop()
    if matched[0] < args.matches:
        sys.exit(f"only {matched[0]} matches in {args.seconds:.0f}s")


if __name__ == "__main__":
    main()
