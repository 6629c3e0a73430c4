"""The typed SPL window step on the JVM core (``trending.spl.SplWindowStep`` in the project's jar).

:func:`trending.spark.spl_runner.apply_window` with ``output="typed"`` (and so
:func:`trending.library.spl_window`) runs here whenever :func:`jvm_spec` accepts the spec and
the session can load the project's classes (:func:`jvm_usable`); else it runs the Python core
in ``transformWithStateInPandas``. Both give the same rows.

The JVM step is Spark's ``transformWithState`` over ``groupBy(key)``: one grouping key per
window key (a timestamp key by its epoch milliseconds, a float key's NaN with the nulls), or the
constant 0 for a whole window (partition eviction). Each grouping key keeps one state value,
``spl_window_jvm``: its event count (``seq``), its timer and its whole window as bytes
(``trending.spl.StateCodec``), read and written once per micro-batch that has rows or a timer
for the key; its timer is Spark's own, per key. The Python path keeps its windows in
``spl_keys``/``spl_large`` (per-key windows in buckets) or ``spl_whole`` under another grouping
key, so a checkpoint written by one path cannot be read by the other: Spark refuses the
restart (see :data:`LAYOUT_HINT`).

``spark.trending.spl.engine`` (:data:`ENGINE_CONF`) set to ``python`` on the session runs every
typed window on the Python core (the default, ``auto``, takes the JVM core where it can), e.g.
to continue a checkpoint the Python core wrote.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from trending.windows.spl.spec import WindowSpec

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

STEP_CLASS = "trending.spl.SplWindowStep"
ENGINE_CONF = "spark.trending.spl.engine"
LAYOUT_HINT = (
    "spl_window keeps its state in the JVM layout (state variable spl_window_jvm, grouped by "
    "the key) when the spec runs on the JVM core, and in the Python layout (spl_keys, "
    "spl_large or spl_whole, grouped by bucket) otherwise: a checkpoint written by one cannot "
    "be read by the other. Start the query on a new checkpoint, or run it as it was run before "
    f"(the version of the trending package that wrote it, or {ENGINE_CONF}=python)."
)
"""What a restart across the two state layouts means (Spark's own error names the state)."""


def jvm_spec(spec: WindowSpec) -> str | None:
    """The spec as the JVM core reads it, or None when only the Python core can run it (a
    custom summarizer, an operator's partition selector)."""
    try:
        text = spec.to_jvm_json()
    except ValueError:
        return None
    eviction = json.loads(text).get("partition_eviction")
    if eviction is not None and eviction.get("select") != "lru":
        return None
    return text


def jvm_usable(spark: SparkSession) -> bool:
    """Whether ``spark`` runs typed windows on the JVM core: it can load the project's classes
    (a classic session, Spark 4.1+) and :data:`ENGINE_CONF` is not ``python``."""
    from trending.spark.project_classes import jvm_engine

    return jvm_engine(spark, ENGINE_CONF)


def run_jvm_window(
    df: DataFrame,
    spec_json: str,
    key: str,
    columns: Sequence[str],
    output: StructType,
    order_by: Sequence[str] = (),
    time_mode: str = "none",
    time_column: str | None = None,
    whole: bool = False,
    include_window: bool = False,
    kinds: Iterable[str] | None = None,
) -> DataFrame:
    """The typed window events of ``df`` (prepared by the runner: ``time_column`` holds the
    event time in epoch ms, with Spark's watermark) from ``trending.spl.SplWindowStep``.

    ``columns``: the record columns (the input's own); ``output``: the output schema
    (:class:`~trending.spark.spl_runner.TypedEvents`)."""
    from pyspark.sql import DataFrame

    from trending.spark.project_classes import java_class, use_project_classes

    spark = df.sparkSession
    use_project_classes(spark)
    options = {
        "spec": spec_json,
        "key": key,
        "columns": list(columns),
        "order_by": list(order_by),
        "time_mode": time_mode,
        "time_column": time_column,
        "whole": whole,
        "include_window": include_window,
        "kinds": None if kinds is None else sorted(kinds),
        "schema": output.json(),
    }
    step: Any = java_class(spark, STEP_CLASS)
    return DataFrame(step.apply(df._jdf, json.dumps(options)), spark)
