"""A plain ``SparkSession.builder...getOrCreate()`` session, as a library user builds one, whose
JVM is shut down afterwards: that JVM has none of the jobs' jars, so a later test in the same
worker process that starts a job's session must get a JVM of its own."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

PROVIDER_CONF = "spark.sql.streaming.stateStore.providerClass"
ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"


def plain_session(app_name: str) -> Iterator[Any]:
    """Yield the session (RocksDB state store, one shuffle partition), then stop it and its JVM."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    started_here = SparkContext._gateway is None
    session = (
        SparkSession.builder.master("local[2]")
        .appName(app_name)
        .config(PROVIDER_CONF, ROCKSDB)
        .config("spark.sql.shuffle.partitions", "1")
        # Spark's default, set since a JVM a job's session started earlier holds the jobs' false
        .config("spark.sql.streaming.noDataMicroBatches.enabled", "true")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        session.stop()
        gateway = SparkContext._gateway
        if started_here and gateway is not None:
            gateway.shutdown()
            gateway.proc.stdin.close()  # the JVM pyspark started exits when its stdin closes
            gateway.proc.wait(60)
            SparkContext._gateway = None
            SparkContext._jvm = None
