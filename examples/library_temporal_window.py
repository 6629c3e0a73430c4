"""StreamInsight temporal windows in your own PySpark job: ``trending.temporal_window``.

    .venv/bin/python examples/library_temporal_window.py [--windows 6] [--seconds 120]

First a batch DataFrame of room temperature readings (points in time, epoch milliseconds from
1970-01-01T00:00:00Z): the average per room over tumbling 10-second windows. Then Spark's
``rate`` source as a stream of points, keyed by ``value % 2``: the count per key in tumbling
1-second windows, each printed once Spark's watermark (the newest timestamp - 1 s) has passed
the window's end; it stops after ``--windows`` rows (or ``--seconds``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import sys
import tempfile
import time
from typing import Any

READINGS = [
    (1, 0, 20.0), (1, 2000, 21.0), (1, 4000, 22.0), (1, 6000, 23.0), (1, 8000, 21.5),
    (1, 12_000, 22.0), (2, 1000, 17.0), (2, 10_000, 18.0), (2, 15_000, 20.0),
]  # fmt: skip
"""(room, time in ms, temperature)"""


def clock(ms: int) -> str:
    """``ms`` after midnight as ``HH:MM:SS`` (``.mmm`` when not a whole second)."""
    moment = dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=ms % 86_400_000)
    text = moment.strftime("%H:%M:%S")
    return text if ms % 1000 == 0 else f"{text}.{ms % 1000:03d}"


def show(label: str, key: str, rows: list[Any], what: str) -> int:
    for row in sorted(rows, key=lambda r: (r[key], r.start_ms)):
        value = int(row.value) if what == "count" else row.value
        window = f"[{clock(row.start_ms)}, {clock(row.end_ms)})"
        print(f"{label}: {key} {row[key]} {window} {what} {value}", flush=True)
    return len(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--windows", type=int, default=6, help="stop after this many rows")
    parser.add_argument("--seconds", type=float, default=120.0, help="or after this long")
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    from trending import temporal_window

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("library-temporal-window")
        # transformWithStateInPandas keeps a streaming query's state in RocksDB
        .config(
            "spark.sql.streaming.stateStore.providerClass",
            "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
        )
        .config("spark.sql.shuffle.partitions", "1")  # state stores per query (default 200)
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")

    def with_ms(rows: Any) -> Any:
        ms = {"start_ms": F.unix_millis("start"), "end_ms": F.unix_millis("end")}
        return rows.withColumns(ms)

    # a batch: every window becomes final
    readings = spark.createDataFrame(READINGS, "room INT, at LONG, celsius DOUBLE")
    spec = {"kind": "tumbling", "duration": "10s", "aggregate": "average"}
    averages = readings.transform(
        temporal_window, spec, key="room", start="at", value_column="celsius"
    )
    show("batch", "room", with_ms(averages).collect(), "average")

    # a stream: windows come out as Spark's watermark passes them
    points = (
        spark.readStream.format("rate")
        .option("rowsPerSecond", 10)
        .load()
        .select((F.col("value") % 2).alias("key"), "timestamp")
    )
    spec = {"kind": "tumbling", "duration": "1s", "aggregate": "count"}
    counts = points.transform(temporal_window, spec, start="timestamp", watermark="1 second")
    shown = [0]

    def print_batch(batch: Any, batch_id: int) -> None:
        shown[0] += show("rate", "key", batch.collect(), "count")

    query = (
        with_ms(counts)
        .writeStream.foreachBatch(print_batch)
        .option("checkpointLocation", tempfile.mkdtemp(prefix="library-temporal-"))
        .start()
    )
    deadline = time.monotonic() + args.seconds
    while shown[0] < args.windows and time.monotonic() < deadline:
        query.awaitTermination(0.5)  # raises if the query failed
    query.stop()
    spark.stop()


if __name__ == "__main__":
    main()
