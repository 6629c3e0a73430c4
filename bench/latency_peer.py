"""Peer of ``make bench-latency``: Spark's built-in sliding window count as a live stream.

``groupBy(window(created_at, size, hop), tag).count()`` with a watermark, in update output mode
(a row each time a window's count of a tag changes), on the same tweets, with the same JVM
hashtag function, trigger, session settings and Kafka connector as the hashtags job, written to
Kafka as JSON by Spark's own (at-least-once) Kafka sink. Runs until SIGTERM/SIGINT.

    python bench/latency_peer.py BOOTSTRAP TOPIC OUT_TOPIC CHECKPOINT TRIGGER_MS
"""

from __future__ import annotations

import signal
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pyspark.sql import functions as F

from bench.spark_builtin import window_counts
from trending.spark.session import build_session, job_collector


def main(bootstrap: str, topic: str, out_topic: str, checkpoint: str, trigger_ms: str) -> None:
    spark = build_session(  # the JVMs of a live job, as the job contender's
        "bench-latency-builtin", "local[2]", shuffle_partitions=2,
        collector=job_collector(live=True),
    )  # fmt: skip
    counts = window_counts(spark, bootstrap, topic)
    query = (
        counts.select(F.to_json(F.struct("window", "tag", "count")).alias("value"))
        .writeStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", out_topic)
        .option("checkpointLocation", checkpoint)
        .outputMode("update")
        .trigger(processingTime=f"{int(trigger_ms)} milliseconds")
        .start()
    )
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    print("started", flush=True)
    while not stop.is_set() and query.isActive:
        stop.wait(0.5)
    query.stop()
    spark.stop()


if __name__ == "__main__":
    main(*sys.argv[1:6])
