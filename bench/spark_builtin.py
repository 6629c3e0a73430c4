"""Peer: Spark's built-in sliding window count, the floor any Spark user gets (no top-k).

``groupBy(window(created_at, size, hop), tag).count()`` with a watermark, append mode,
``availableNow``, on the same tweets, the same JVM hashtag function, written to Kafka as JSON.
Prints ``rows=N seconds=S`` (query start to end).
"""

from __future__ import annotations

import sys
import time
from typing import Any

from pyspark.sql import functions as F

from connectors.avro import schema_json
from connectors.spark_kafka import decode_avro, read_kafka_stream, source_options
from trending.spark.session import build_session


def window_counts(spark: Any, bootstrap: str, topic: str) -> Any:
    """``groupBy(window(created_at, 5 minutes, 1 minute), tag).count()`` over the tweets of
    ``topic``, with a 30 s watermark and the job's JVM hashtag function."""
    tweets = decode_avro(
        read_kafka_stream(spark, source_options(bootstrap, topic)), schema_json("tweet"), None
    )
    return (
        tweets.where(F.col("reason").isNull())
        .select(
            F.col("record.created_at").alias("ts"),
            F.explode(F.call_function("hashtag_keys", F.col("record.text"))).alias("tag"),
        )
        .withWatermark("ts", "30 seconds")
        .groupBy(F.window("ts", "5 minutes", "1 minute"), "tag")
        .count()
    )


def main(bootstrap: str, topic: str, out_topic: str, checkpoint: str) -> None:
    spark = build_session("bench-spark-builtin", "local[2]", shuffle_partitions=2)
    counts = window_counts(spark, bootstrap, topic)
    started = time.monotonic()
    query = (
        counts.select(F.to_json(F.struct("window", "tag", "count")).alias("value"))
        .writeStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", out_topic)
        .option("checkpointLocation", checkpoint)
        .outputMode("append")
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    seconds = time.monotonic() - started
    rows = sum(p["numInputRows"] for p in query.recentProgress)
    print(f"rows={rows} seconds={seconds:.3f}")
    spark.stop()


if __name__ == "__main__":
    main(*sys.argv[1:5])
