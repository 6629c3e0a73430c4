"""Windows in your own PySpark job, Kafka to Kafka: ``trending.temporal_window`` and
``trending.publish_exactly_once`` on a plain session.

    .venv/bin/python examples/library_kafka.py --bootstrap 127.0.0.1:9092 \\
        --input-topic clicks --output-topic click-counts --checkpoint /tmp/click-counts \\
        [--available-now]

Input: clicks as JSON, ``{"user": "ann", "ts": 1700000000123}`` (epoch milliseconds), read with
Spark's own Kafka source. Per user, the clicks of each 10-second tumbling window (StreamInsight
semantics: a window is final once Spark's watermark, the newest click - 5 s, passes its end).
Output: one JSON record per final window, ``{"user", "start", "end", "clicks"}`` (times in epoch
ms), keyed by user, published in one Kafka transaction per micro-batch: after a crash and a
restart from ``--checkpoint``, a ``read_committed`` reader sees each window once.
``--available-now`` reads what the topic holds and stops; otherwise it runs until Ctrl-C.

The session is a plain ``SparkSession.builder`` one: Spark's Kafka connector comes through
``spark.jars.packages`` (Spark's own resolver, for the installed pyspark version), and the
window's state lives in Spark's RocksDB state store.
"""

from __future__ import annotations

import argparse
import os
import sys


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", required=True, help="Kafka brokers, HOST:PORT[,...]")
    parser.add_argument("--input-topic", default="clicks", help="JSON clicks")
    parser.add_argument("--output-topic", default="click-counts", help="JSON window counts")
    parser.add_argument("--checkpoint", required=True, help="the query's checkpoint folder")
    parser.add_argument("--available-now", action="store_true", help="read what is there, stop")
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    import pyspark
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    from trending import publish_exactly_once, temporal_window

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("library-kafka")
        .config(
            "spark.jars.packages",
            f"org.apache.spark:spark-sql-kafka-0-10_2.13:{pyspark.__version__}",
        )
        .config(
            "spark.sql.streaming.stateStore.providerClass",
            "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
        )
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")

    clicks = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", args.bootstrap)
        .option("subscribe", args.input_topic)
        .option("startingOffsets", "earliest")
        .option("kafka.isolation.level", "read_committed")
        .load()
        .select(F.from_json(F.col("value").cast("string"), "user STRING, ts LONG").alias("c"))
        .select("c.*")
    )
    windows = clicks.transform(
        temporal_window,
        {"kind": "tumbling", "duration": "10s", "aggregate": "count"},
        key="user", start="ts", watermark="5 seconds",
    )  # fmt: skip
    record = F.struct(
        "user",
        F.unix_millis("start").alias("start"),
        F.unix_millis("end").alias("end"),
        F.col("value").cast("long").alias("clicks"),
    )
    out = windows.select(
        F.lit(args.output_topic).alias("topic"),
        F.col("user").alias("key"),
        F.to_json(record).alias("value"),
    )
    publication = publish_exactly_once(
        out, bootstrap=args.bootstrap, checkpoint=args.checkpoint, name="click-counts",
        available_now=args.available_now,
    )  # fmt: skip
    try:
        publication.await_termination()
    except KeyboardInterrupt:
        pass
    finally:
        publication.stop()
        spark.stop()
    print(f"published {publication.batches_published} micro-batches", flush=True)


if __name__ == "__main__":
    main()
