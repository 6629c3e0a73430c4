"""An SPL window per key on Spark's built-in ``rate`` source: runs anywhere, no Kafka needed.

    .venv/bin/python examples/spl_window_rate_source.py [--seconds 20]

The rate source makes rows ``(timestamp, value)``; ``sensor = value % 3`` is the key. Each
sensor gets two windows' worth of events, printed to the console:

* a sliding window of its last 4 readings, triggered every 2 readings (count policies);
* (``--time``) a 2-second tumbling window of processing time, which closes through a Spark
  timer even when a sensor stops sending.

Swap ``spark.readStream.format("rate")`` for your Kafka source (decode the value first).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="how long to run")
    parser.add_argument("--time", action="store_true", help="2 s tumbling processing-time window")
    args = parser.parse_args()

    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import functions as F

    from trending.spark.session import build_session
    from trending.spark.spl_runner import apply_window, configure_spark

    spark = build_session("spl-window-example", "local[2]", shuffle_partitions=2)
    configure_spark(spark)  # RocksDB state store + no-data batches (timers on idle streams)
    readings = (
        spark.readStream.format("rate")
        .option("rowsPerSecond", 5)
        .load()
        .select((F.col("value") % 3).alias("sensor"), "value", "timestamp")
    )
    if args.time:
        spec = {"kind": "tumbling", "evict": {"time": 2}, "summaries": {"n": "count"}}
        events = apply_window(
            readings,
            spec,
            key="sensor",
            time_mode="processing",
            order_by="value",
            kinds=["after_flush"],
        )
    else:
        spec = {"kind": "sliding", "evict": {"count": 4}, "trigger": {"count": 2}}
        events = apply_window(
            readings,
            spec,
            key="sensor",
            order_by="value",
            kinds=["trigger"],
            include_window=True,
        )
    query = (
        events.writeStream.format("console")
        .option("truncate", "false")
        .option("checkpointLocation", tempfile.mkdtemp(prefix="spl-example-"))
        .trigger(processingTime="1 second")
        .start()
    )
    query.awaitTermination(args.seconds)
    query.stop()
    spark.stop()


if __name__ == "__main__":
    main()
