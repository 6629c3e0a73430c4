"""Values fixed for one micro-batch, as columns whose generated code does not change.

Spark writes a numeric literal into the code it generates for a stage, so a plan that holds a
batch's watermark or clock as ``F.lit(...)`` is new code every micro-batch: compiled again, tens
of milliseconds per stage on the thread that runs the batch. :func:`batch_long` gives the value
as a column the generated code refers to (``trending.udf.BatchValue``): the same code every
batch, compiled once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column, SparkSession

VALUE_CLASS = "trending.udf.BatchValue"
WATERMARK_FUNCTION = ("trending_batch_watermark", "trending.state.BatchWatermark")
# + a job: the parameters of its running micro-batch (trending.state.BatchParams)
PARAMS_PREFIX = "spark.trending.batch."


def batch_long(spark: SparkSession, value: int) -> Column:
    """``value`` as a ``bigint`` column (never null) whose code is the same for every value."""
    from pyspark.sql.classic.column import Column as ClassicColumn

    jvm: Any = spark.sparkContext._jvm
    return ClassicColumn(getattr(jvm, VALUE_CLASS).ofLong(int(value)))


def batch_watermark(spark: SparkSession, job: str) -> Column:
    """The watermark :func:`set_batch_params` set for ``job``'s running micro-batch, in epoch ms
    (null before the first event, or when none was set): a function of the plan, so a streaming
    plan built once reads each batch's watermark."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType

    spark.udf.registerJavaFunction(*WATERMARK_FUNCTION, LongType())
    return F.call_function(WATERMARK_FUNCTION[0], F.lit(job))


def set_batch_params(spark: SparkSession, job: str, params: BatchParams) -> None:
    """Give the tasks of ``job``'s next Spark jobs ``params`` (:func:`batch_watermark`,
    :func:`trending.spark.clock.batch_clock`)."""
    spark.conf.set(PARAMS_PREFIX + job, params.text())


@dataclass(frozen=True)
class BatchParams:
    """What the executors need from the driver for one batch, read there by
    ``trending.state.BatchParams`` from the session setting ``PARAMS_PREFIX + job``: Spark hands
    a session's ``spark.*`` settings to the tasks of each query it runs. The way to keep a
    batch's values out of the generated code of a streaming plan, which is built once before
    the query starts; :func:`batch_long` is for plans built per batch, in ``foreachBatch``."""

    watermark_ms: int | None
    thresholds: Mapping[int, int]  # window start -> k-th count of its last published top-k
    clock_ms: int | None = None  # Spark's batch timestamp; None: no clock test

    def text(self) -> str:
        """The form ``trending.state.BatchParams`` parses:
        ``w=<ms>;c=<ms>;t=<start>:<count>,...``."""
        watermark = "" if self.watermark_ms is None else str(self.watermark_ms)
        clock = "" if self.clock_ms is None else str(self.clock_ms)
        pairs = ",".join(f"{start}:{count}" for start, count in sorted(self.thresholds.items()))
        return f"w={watermark};c={clock};t={pairs}"
