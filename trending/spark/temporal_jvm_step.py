"""The temporal window step on the JVM core (``trending.temporal.spark.TemporalStep`` in the
project's jar).

:func:`trending.spark.temporal_steps.run_temporal` (and so :func:`trending.library.temporal_window`
and ``trending run windows``) runs here whenever :func:`jvm_query` accepts the query and the
session can load the project's classes; else it runs the Python core in
``transformWithStateInPandas``. Both give the same rows, batch by batch.

The JVM step is Spark's ``transformWithState`` over ``groupBy(key)``: one grouping key per
window key (a float key's NaN with the nulls, as the Python step has it). Each grouping key
keeps one state value, ``temporal_jvm``: a fingerprint of the query (a restart with another
query fails saying so), its event-time timer and its query state as bytes
(``trending.temporal.StateCodec``), read and written once per micro-batch that has rows or a
timer for the key; an idle key keeps none. Its timer, at ``W + 1`` while it holds events,
advances it to every new watermark, input or not. The job's PROGRESS rows come one per key with
input, not one per bucket. The Python step keeps its keys in ``temporal_keys`` (a ``ListState``
per bucket of keys), so a checkpoint written by one step cannot be read by the other: Spark
refuses the restart, naming the state (see :data:`LAYOUT_HINT`).

``spark.trending.temporal.engine`` (:data:`ENGINE_CONF`) set to ``python`` on the session runs
every query on the Python step (the default, ``auto``, takes the JVM step where it can).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from trending.windows.temporal import TemporalQuery

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

STEP_CLASS = "trending.temporal.spark.TemporalStep"
ENGINE_CONF = "spark.trending.temporal.engine"
LAYOUT_HINT = (
    "temporal windows keep their state in the JVM layout (state variable temporal_jvm, "
    "grouped by the key) when the query runs on the JVM core, and in the Python layout "
    "(temporal_keys, grouped by bucket) otherwise: a checkpoint written by one cannot be read "
    "by the other. Start the query on a new checkpoint, or run it as it was run before (the "
    f"version of the trending package that wrote it, or {ENGINE_CONF}=python)."
)
"""What a restart across the two state layouts means (Spark's own error names the state)."""


def jvm_query(spark: SparkSession, query: TemporalQuery) -> str | None:
    """The query as the JVM core reads it (``TemporalQuery.to_jvm_json()``), or None when it
    runs on the Python step: a window only the Python core has, a query the JVM core refuses,
    a session that cannot load the project's classes, or ``ENGINE_CONF=python``."""
    from trending.spark.project_classes import java_class, jvm_engine, use_project_classes

    if not jvm_engine(spark, ENGINE_CONF):
        return None
    try:
        text = query.to_jvm_json()
    except ValueError:
        return None
    use_project_classes(spark)
    refusal = java_class(spark, STEP_CLASS).refusal(text)
    return None if refusal is not None else text


def run_jvm_temporal(events: DataFrame, spec_json: str, options: dict[str, Any]) -> DataFrame:
    """The rows of the query ``spec_json`` over decoded ``events`` from
    ``trending.temporal.spark.TemporalStep``; ``options``: ``rows`` (``kafka`` or ``window``),
    ``invalid``, ``close`` (a batch DataFrame) and ``schema`` (the output's, Spark JSON or DDL)."""
    from pyspark.sql import DataFrame

    from trending.spark.project_classes import java_class, use_project_classes

    spark = events.sparkSession
    use_project_classes(spark)
    step: Any = java_class(spark, STEP_CLASS)
    text = json.dumps({"spec": spec_json, **options})
    return DataFrame(step.apply(events._jdf, text), spark)
