"""Values fixed for one micro-batch, as columns whose generated code does not change.

Spark writes a numeric literal into the code it generates for a stage, so a plan that holds a
batch's watermark or clock as ``F.lit(...)`` is new code every micro-batch: compiled again, tens
of milliseconds per stage on the thread that runs the batch. :func:`batch_long` gives the value
as a column the generated code refers to (``trending.udf.BatchValue``): the same code every
batch, compiled once.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import Column, SparkSession

VALUE_CLASS = "trending.udf.BatchValue"


def batch_long(spark: SparkSession, value: int) -> Column:
    """``value`` as a ``bigint`` column (never null) whose code is the same for every value."""
    from pyspark.sql.classic.column import Column as ClassicColumn

    jvm: Any = spark.sparkContext._jvm
    return ClassicColumn(getattr(jvm, VALUE_CLASS).ofLong(int(value)))
