"""An SPL window in your own PySpark job: ``trending.spl_window`` on a plain session.

    .venv/bin/python examples/library_spl_window.py

Readings ``(sensor, seq, value)``; per sensor a tumbling window of 3 readings with the mean of
``value``. First over a batch DataFrame, then as a stream of JSON files: two files in one run,
a third after a restart from the query's checkpoint, where each sensor's open window goes on.
Swap the file source for yours (Kafka: decode the value into columns first).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

SPEC = {"kind": "tumbling", "evict": {"count": 3}, "summaries": {"mean": {"mean": "value"}}}
SCHEMA = "sensor LONG, seq LONG, value DOUBLE"


def readings(first: int, count: int) -> list[dict[str, Any]]:
    return [{"sensor": i % 3, "seq": i, "value": float(i)} for i in range(first, first + count)]


def show(label: str, rows: list[Any]) -> int:
    """One line per closed window (``before_flush``), by sensor and seq."""
    flushes = sorted((r for r in rows if r.event == "before_flush"), key=lambda r: r.seq)
    for row in sorted(flushes, key=lambda r: r.sensor):
        seqs = [t.seq for t in row.tuples]
        print(f"{label}: sensor {row.sensor} window {seqs} mean {row.summary.mean}")
    return len(flushes)


def main() -> None:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from trending import spl_window

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("library-spl-window")
        # transformWithStateInPandas keeps a streaming query's state in RocksDB
        .config(
            "spark.sql.streaming.stateStore.providerClass",
            "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
        )
        .config("spark.sql.shuffle.partitions", "1")  # state stores per query (default 200)
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")

    # a batch DataFrame: one pass over all rows
    batch = spark.createDataFrame(readings(0, 12), SCHEMA)
    show("batch", batch.transform(spl_window, SPEC, key="sensor", order_by="seq").collect())

    # a stream: the same window, its state in the checkpoint
    folder = Path(tempfile.mkdtemp(prefix="library-spl-"))
    source, checkpoint = folder / "in", folder / "checkpoint"
    source.mkdir()

    def run(files: list[list[dict[str, Any]]]) -> list[Any]:
        for number, rows in enumerate(files):
            text = "".join(json.dumps(row) + "\n" for row in rows)
            (source / f"{len(list(source.iterdir()))}-{number}.json").write_text(text)
        out: list[Any] = []
        stream = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(str(source))
        query = (
            stream.transform(spl_window, SPEC, key="sensor", order_by="seq")
            .writeStream.foreachBatch(lambda df, _: out.extend(df.collect()))
            .option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination()
        return out

    show("stream", run([readings(0, 7), readings(7, 5)]))
    more = show("stream", run([readings(12, 6)]))  # a new query on the same checkpoint
    print(f"restarted from the checkpoint: {more} more windows")
    spark.stop()


if __name__ == "__main__":
    main()
