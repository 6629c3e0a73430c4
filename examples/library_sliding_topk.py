"""The most frequent keys of every sliding window in your own PySpark job: ``trending.SlidingTopK``.

    .venv/bin/python examples/library_sliding_topk.py [--finals 3] [--seconds 120]

First a batch DataFrame of page views (epoch milliseconds from 1970-01-01T00:00:00Z): the two
most viewed pages of each 10-second window, one starting every 5 seconds. Then Spark's ``rate``
source as a stream of clicks, 20 a second, on buttons ``a`` (half of them), ``b`` and ``c``: the
top 2 of 4-second windows starting every 2 seconds, a row each time a window's top-2 changes and
a final one when Spark's watermark (the newest click - 1 s) closes the window; it stops after
``--finals`` final rows (or ``--seconds``).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from typing import Any

VIEWS = [
    ("home", 1_000), ("docs", 2_000), ("home", 3_000), ("blog", 4_000), ("docs", 6_000),
    ("docs", 7_000), ("home", 8_000), ("blog", 11_000), ("blog", 12_000), ("home", 13_000),
]  # fmt: skip
"""(page, time in ms)"""


def show(label: str, rows: list[Any]) -> int:
    for row in sorted(rows, key=lambda r: (r.window_start, r.revision)):
        top = ", ".join(f"{entry['key']} {entry['count']}" for entry in row.top)
        state = "final" if row.is_final else f"revision {row.revision}"
        window = f"[{row.window_start:%H:%M:%S}, {row.window_end:%H:%M:%S})"
        print(f"{label}: {window} {state}: {top}", flush=True)
    return sum(row.is_final for row in rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--finals", type=int, default=3, help="stop after this many final rows")
    parser.add_argument("--seconds", type=float, default=120.0, help="or after this long")
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    from trending import SlidingTopK

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("library-sliding-topk")
        .config("spark.sql.session.timeZone", "UTC")
        # the counts per key live in Spark's RocksDB state store
        .config(
            "spark.sql.streaming.stateStore.providerClass",
            "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
        )
        .config("spark.sql.shuffle.partitions", "2")  # state stores per query (default 200)
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")

    # a batch: each window's top-2, once
    views = spark.createDataFrame(VIEWS, "page STRING, at LONG")
    top = views.transform(SlidingTopK(size="10s", hop="5s", k=2), key="page", time="at")
    show("batch", top.collect())

    # a stream: revisions as counts change, a final row when the watermark closes a window
    clicks = (
        spark.readStream.format("rate")
        .option("rowsPerSecond", 20)
        .load()
        .select(
            F.when(F.col("value") % 4 < 2, "a")
            .when(F.col("value") % 4 == 2, "b")
            .otherwise("c")
            .alias("button"),
            "timestamp",
        )
    )
    finals = [0]

    def publish(rows: Any, batch_id: int) -> None:
        finals[0] += show(f"batch {batch_id}", rows.collect())

    topk = SlidingTopK(size="4s", hop="2s", k=2, lateness="1s")
    checkpoint = tempfile.mkdtemp(prefix="library-topk-")
    query = topk.start(
        clicks, publish, key="button", time="timestamp", checkpoint=checkpoint,
        trigger={"processingTime": "1 second"},
    )  # fmt: skip
    deadline = time.monotonic() + args.seconds
    while finals[0] < args.finals and time.monotonic() < deadline:
        query.awaitTermination(0.5)  # raises if the query failed
    idle = time.monotonic() + 10
    while query.status["isTriggerActive"] and time.monotonic() < idle:
        time.sleep(0.05)  # stop between micro-batches, not inside one
    query.stop()
    spark.stop()
    if finals[0] < args.finals:
        sys.exit(f"only {finals[0]} final rows in {args.seconds:.0f}s")


if __name__ == "__main__":
    main()
