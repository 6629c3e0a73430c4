"""``trending.spark.batch_values.batch_long``: a value fixed for one micro-batch, as a column
whose generated code is the same for every value, so a plan that holds a watermark or a clock
is compiled once, not once per micro-batch as with a literal."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.plain_session import plain_session

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    yield from plain_session("batch-values")


def test_a_batch_value_filters_as_its_value_with_code_compiled_once(spark: Any) -> None:
    from pyspark.sql import functions as F

    from trending.spark.batch_values import batch_long
    from trending.spark.project_classes import use_project_classes

    use_project_classes(spark)
    rows = spark.range(0, 200).withColumn("v", F.col("id") * 3 - 100)
    compiles = spark.sparkContext._jvm.org.apache.spark.metrics.source.CodegenMetrics
    compiled = compiles.METRIC_COMPILATION_TIME()

    def below(bound: int) -> list[int]:
        kept = rows.where(F.col("v") < batch_long(spark, bound)).select("id").collect()
        return sorted(r.id for r in kept)

    assert below(-40) == [i for i in range(200) if 3 * i - 100 < -40]
    before = compiled.getCount()
    for bound in (7, 499, -(2**63), 2**63 - 1):
        assert below(bound) == [i for i in range(200) if 3 * i - 100 < bound]
    assert compiled.getCount() == before, "a new value compiled new code"

    value = rows.select(batch_long(spark, 123).alias("b")).schema["b"]
    assert value.dataType.simpleString() == "bigint" and not value.nullable

    # the premise: a literal in the same place is new code for each value
    rows.where(F.col("v") < F.lit(11)).collect()
    rows.where(F.col("v") < F.lit(12)).collect()
    assert compiled.getCount() >= before + 2
