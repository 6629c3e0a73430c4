"""The project's windows as DataFrame functions, for any PySpark job, and its exactly-once
Kafka output.

::

    from trending import SlidingTopK, publish_exactly_once, spl_window, temporal_window

    top = views.transform(SlidingTopK(size="1h", hop="10m", k=10), key="page", time="ts")
    triggers = readings.transform(spl_window, {"kind": "sliding", "evict": {"count": 4}},
                                  key="sensor", order_by="seq", kinds=["trigger"],
                                  include_window=True)
    counts = events.transform(temporal_window, {"kind": "tumbling", "duration": "10s",
                                                "aggregate": "count"},
                              key="user", start="ts", watermark="5 seconds")

:class:`SlidingTopK` counts on the executors in the project's JVM classes (added to a running
session by its first call) and merges each window's top-k per micro-batch in a
``foreachBatch`` writer (a batch DataFrame: all in the plan). :func:`spl_window` and
:func:`temporal_window` run one window per key inside Spark's ``transformWithStateInPandas``,
on a streaming DataFrame (state in the query's checkpoint, so a restarted query goes on where
it stopped) or on a batch one (one pass over all rows). :func:`publish_exactly_once` publishes
a streaming DataFrame to Kafka in one transaction per micro-batch. None needs a session built
by this project; a streaming query needs the RocksDB state store provider, which they check:

* ``spark.sql.streaming.stateStore.providerClass`` =
  ``org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider``
  (:func:`configure_spark` sets it, and no-data micro-batches, on a running session);
* ``spark.sql.streaming.noDataMicroBatches.enabled`` left at its default, true, for windows
  that close on time (timers fire in the micro-batches Spark runs without new rows);
* ``spark.sql.shuffle.partitions`` is how many state stores a query keeps, each opened every
  micro-batch: Spark's default of 200 costs seconds per batch on a laptop; set it to about the
  number of cores before the first run of a checkpoint (which keeps it).

Formulas, schemas and examples: ``docs/library.md``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from trending.spark.sensor_matching import (
    SensorBatches,
    SensorMatching,
    SensorMatchingError,
    SensorResults,
)
from trending.spark.sliding_topk import TOPK_SCHEMA, SlidingTopK, TopKBatches, TopKError
from trending.spark.spl_runner import SplRunnerError, apply_window, check_spark, configure_spark
from trending.spark.temporal_steps import (
    Invalid,
    TemporalColumnsError,
    WindowRows,
    decoded_events,
    run_temporal,
)
from trending.windows.spl.keyed import TimeMode
from trending.windows.spl.spec import WindowSpec
from trending.windows.temporal import TemporalQuery
from trending.windows.temporal.spec import parse_temporal_spec

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.streaming.query import StreamingQuery

    from trending.jobs.sink import KafkaSinkProcessor

__all__ = [
    "TOPK_SCHEMA",
    "Publication",
    "SensorBatches",
    "SensorMatching",
    "SensorMatchingError",
    "SensorResults",
    "SlidingTopK",
    "SplRunnerError",
    "TemporalColumnsError",
    "TopKBatches",
    "TopKError",
    "configure_spark",
    "publish_exactly_once",
    "spl_window",
    "temporal_window",
]
WINDOW_ROW_FIELDS = ("start", "end", "value", "values")
"""The output columns of :func:`temporal_window` after the key (``schemas/window_row.avsc``)."""


def spl_window(
    df: DataFrame,
    spec: Mapping[str, Any] | WindowSpec,
    *,
    key: str | None = None,
    order_by: str | Sequence[str] | None = None,
    time_mode: TimeMode = "none",
    time_column: str | None = None,
    watermark: str | None = None,
    include_window: bool = False,
    kinds: Iterable[str] | None = None,
    buckets: int | None = None,
) -> DataFrame:
    """The events of the SPL window ``spec`` (:mod:`trending.windows.spl.spec`), per ``key``.

    One output row per window event, typed (:class:`~trending.spark.spl_runner.TypedEvents`):
    the key column (its own name and type), ``event`` (``before_insert``, ``trigger``,
    ``before_flush``, ...), ``seq`` (the key's event number from 0, across batches and
    restarts), ``tuples`` (``array<struct<...>>`` of ``df``'s own columns: the tuple going in
    or out, or the window content), ``time_ms`` (the window clock), ``summary`` (a struct of
    the spec's summaries, only for a tumbling window that has some) and ``size``.

    ``key`` defaults to the spec's ``partition_by``; ``order_by`` sorts a key's rows of a
    micro-batch (Spark hands them in any order). ``time_mode``: ``"none"`` (count and delta
    policies), ``"processing"`` (the clock is processing time), or ``"event"`` with
    ``time_column`` (timestamp or epoch ms) and ``watermark`` (Spark's delay, e.g.
    ``"10 seconds"``): a window's time policy fires once Spark's watermark passes it, and rows
    behind the watermark are dropped by Spark. ``include_window`` fills ``tuples`` of
    ``trigger`` and ``initial_full`` with the window; ``kinds`` keeps only those events.
    A batch ``df`` runs once over all its rows: no timer fires, so time policies act only when
    a later row of the key moves the clock.

    It runs on the project's JVM core (``trending.spl`` in its jar, added to the session on
    first use) in Spark's ``transformWithState``: one grouping key per key, whose state is one
    value, ``spl_window_jvm`` (the key's event count, timer and window as bytes), read and
    written once per micro-batch that has rows or a timer for the key; a spec with partition
    eviction is one grouping key holding the whole window. ``buckets`` does not apply there. A
    spec with a custom summarizer or an operator's partition selector, a session that cannot
    load the project's classes (Spark Connect, Spark before 4.1), or
    ``spark.trending.spl.engine=python`` on the session runs on the Python core in
    ``transformWithStateInPandas`` instead, with the same rows: its keys' windows are kept in
    ``buckets`` grouping keys (by default two per shuffle partition), each read and written
    with one state call per micro-batch (a window past 16 KB of text in a row of its own); a
    query restarted on its checkpoint must keep the number, and one started with another
    fails saying which to give. The two keep their state differently: a checkpoint written by
    one is refused by the other (Spark's ``STREAMING_STATEFUL_OPERATOR_NOT_MATCH_IN_STATE_METADATA``
    naming ``transformWithStateInPandasExec`` and ``transformWithStateExec``): start on a new
    checkpoint, or run it as before (``spark.trending.spl.engine=python`` for a checkpoint of
    the Python core, e.g. one written before this release).
    """
    return apply_window(
        df,
        spec,
        key=key,
        time_column=time_column,
        time_mode=time_mode,
        output="typed",
        order_by=order_by,
        watermark=watermark,
        kinds=kinds,
        include_window=include_window,
        buckets=buckets,
    )


def temporal_window(
    df: DataFrame,
    query: Mapping[str, Any] | TemporalQuery,
    *,
    key: str = "key",
    start: str = "start",
    end: str | None = None,
    kind_column: str | None = None,
    id_column: str | None = None,
    value_column: str | None = None,
    watermark: str = "0 seconds",
    invalid: Invalid = "fail",
    buckets: int | None = None,
) -> DataFrame:
    """The rows of the StreamInsight temporal ``query`` (:mod:`trending.windows.temporal.spec`)
    per ``key``, over events in ``df``, with Spark's watermark as the CTI.

    Events: ``start`` and ``end`` (timestamps or epoch ms) give an event's lifetime
    ``[start, end)``; without ``kind_column`` a row with an end is an interval, one without (or
    with no ``end`` column) a point ``[start, start + 1 ms)``. ``kind_column`` holds
    ``INTERVAL``, ``POINT``, ``START_EDGE`` (open until the ``END_EDGE`` with its ``id_column``,
    whose ``end`` closes it) or ``END_EDGE``. ``value_column`` (cast to double) is what the
    aggregate reads. An event's sync time is its ``end`` for an end edge, else its ``start``.

    The CTI of every key is Spark's watermark ``W = max sync time seen - watermark`` (as Spark
    computes it between micro-batches): rows a CTI makes final come out once ``W`` passes them.
    An event whose sync time is behind ``W`` when it arrives is dropped (the query's
    ``"violation": "adjust"`` moves it up to ``W`` instead). An event the query cannot take (a
    kind not above, a missing time, an end edge without its start edge) fails the query with
    its reason (``invalid="fail"``) or is dropped (``invalid="drop"``). A batch ``df`` is all
    the input there is: every row becomes final (a CTI at the end of time follows it).

    Output, the fields of ``schemas/window_row.avsc``: the key column (its own name and type),
    ``start`` and ``end`` (timestamps; ``end`` null when the row holds until the end of time),
    ``value`` (double; null for ``top_k``) and ``values`` (``top_k``'s values, largest first;
    else empty).

    Every spec runs on the project's JVM core in Spark's ``transformWithState``, one grouping
    key per key (:mod:`trending.spark.temporal_jvm_step`); ``buckets`` does not apply there. A
    query only the Python core can run (a window of its own), a session that cannot load the
    project's classes, or ``spark.trending.temporal.engine=python`` runs on the Python core in
    ``transformWithStateInPandas``, the keys' state kept in ``buckets`` grouping keys (by
    default two per shuffle partition of the session), each read and written with one state
    call per micro-batch: a query restarted on its checkpoint must keep the number, and one
    started with another fails saying which to give. The two steps give the same rows but keep
    their state differently: Spark refuses a checkpoint of the one to the other
    (``docs/library.md``, "How it runs").
    """
    parsed = query if isinstance(query, TemporalQuery) else parse_temporal_spec(dict(query))
    columns = [key, start, end, kind_column, id_column, value_column]
    fields = {f.name: f for f in df.schema.fields}
    for column in [c for c in columns if c is not None]:
        if column not in fields:
            raise TemporalColumnsError(f"no column {column!r} in the DataFrame: {sorted(fields)}")
    if key in WINDOW_ROW_FIELDS:
        raise TemporalColumnsError(f"key {key!r}: the output has a column of that name")
    if invalid not in ("fail", "drop"):
        raise TemporalColumnsError(f"invalid: must be 'fail' or 'drop', got {invalid!r}")
    if df.isStreaming:
        check_spark(df.sparkSession, "event")
    events = decoded_events(df, key, start, end, kind_column, id_column, value_column, watermark)
    rows = run_temporal(events, parsed, WindowRows(fields[key].dataType, invalid), buckets)
    return _window_rows(rows, key)


def _window_rows(rows: DataFrame, key: str) -> DataFrame:
    from pyspark.sql import functions as F

    return rows.select(
        F.col("key").alias(key),
        F.timestamp_millis("start_ms").alias("start"),
        F.timestamp_millis("end_ms").alias("end"),
        "value",
        "values",
    )


@dataclass
class Publication:
    """A running :func:`publish_exactly_once` query: ``query`` is Spark's ``StreamingQuery``."""

    query: StreamingQuery
    _processor: KafkaSinkProcessor

    def stop(self) -> None:
        """Stop the query (the micro-batch in progress is aborted, its transaction too), then
        release the Kafka producer and the checkpoint's lease."""
        try:
            self.query.stop()
        finally:
            self._processor.close()

    def await_termination(self, timeout_s: float | None = None) -> bool:
        """Wait for the query to end (``StreamingQuery.awaitTermination``); raises its failure."""
        if timeout_s is None:
            self.query.awaitTermination()
            return True
        return bool(self.query.awaitTermination(math.ceil(timeout_s)))

    @property
    def batches_published(self) -> int:
        """Micro-batches this query published (not those skipped as committed before)."""
        return sum(not s.skipped for s in self._processor.history)


def publish_exactly_once(
    df: DataFrame,
    *,
    bootstrap: str,
    checkpoint: str,
    name: str = "output",
    kafka_options: Mapping[str, str] | None = None,
    trigger: str | int = "1s",
    available_now: bool = False,
) -> Publication:
    """Start a query that publishes streaming ``df`` to Kafka exactly once.

    ``df`` has columns ``topic`` (string, not null), ``key`` and ``value`` (binary or string,
    may be null). Each micro-batch's rows go out in one Kafka transaction, with a marker naming
    the batch, so after any crash and restart a consumer with ``isolation.level=read_committed``
    sees every row once: a micro-batch Spark runs again is skipped when its transaction was
    committed. ``checkpoint`` holds the query's checkpoint (``spark/``) and a lease that lets
    one process at a time publish from it; ``name`` names the output (a checkpoint keeps it).
    ``kafka_options``: the producer's and admin client's settings (``security.protocol``,
    ``sasl.*``, ...). ``trigger``: how often a micro-batch runs (``"1s"``, ``"500ms"``, or
    milliseconds); ``available_now``: read what is there, then stop.

    The rows pass through the driver on their way to Kafka, a part at a time: publish results,
    not raw input.
    """
    from trending.jobs.common import JobSettings
    from trending.jobs.sink import publish_exactly_once as start
    from trending.spark.project_classes import use_project_classes
    from trending.spark.sliding_topk import duration_ms

    use_project_classes(df.sparkSession)
    settings = JobSettings(
        bootstrap,
        checkpoint,
        trigger_ms=duration_ms(trigger, "trigger"),
        available_now=available_now,
        kafka_options=dict(kafka_options or {}),
    )
    query, processor = start(df, settings, name)
    return Publication(query, processor)
