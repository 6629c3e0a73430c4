"""The sensor job's Spark plan: decoding and routing in Spark SQL, the windows on the executors.

On the streaming DataFrame (:func:`sensor_events`, built once), then per micro-batch in
``foreachBatch``::

    Kafka records of both topics ─ from_avro ─ kind          (stateless, per record)
      READING / QUERY (on time) ─ trending.sensors.SensorBatch (JVM, executors, three state stores):
          pending events ─ number readings in their window ─ window index ─ grid cells
      ─ matches and popular readings ─ to_avro              (executors) ─ collected for the commit
      LATE / DEAD ─ collected with their bytes, for the late and dead-letter topics

Kinds: a record that does not decode, or whose numbers are not finite (or a negative or NaN
distance), is ``DEAD`` with the reason. An event with ``ts < W`` (``W``: the watermark the batch
starts under) is ``LATE``. The others are applied once the watermark passes them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.avro.functions import to_avro

from connectors.kafka_settings import SchemaRegistryAccess
from connectors.spark_kafka import decode_avro
from trending.spark.batch_values import batch_watermark
from trending.spark.clock import ClockSkew, advance_of, batch_clock, skew_reason

if TYPE_CHECKING:
    from py4j.java_gateway import JavaObject

READING, QUERY, LATE, DEAD = 0, 1, 2, 3
TICK = 4  # an advance of the job's event time (--idle-advance): moves the watermark only
MATCH, POPULAR = 0, 1  # trending.sensors.Cells
BATCH_CLASS = "trending.sensors.SensorBatch"
STATE_LAYOUT = "sensor-cells-2"
"""The layout of the engine's state stores (``jvm/udf/src/main/java/trending/sensors``): in
layout 2 a cell's readings are one state row each (layout 1: one row per cell)."""
LONG_MIN = -(2**63)
SIDE_COLUMNS = (
    "kind", "topic", "partition", "offset", "key", "value", "reason", "ts", "record_ts", "headers",
)  # fmt: skip


ORIGIN_ONLY = ("topic", "key", "value", "record_ts", "headers")  # null unless LATE or DEAD


@dataclass(frozen=True)
class SensorTopics:
    """The two input topics and the Avro schemas (JSON) of their values."""

    readings: str
    queries: str
    reading_schema: str
    query_schema: str


def sensor_events(
    raw: DataFrame,
    topics: SensorTopics,
    registry: SchemaRegistryAccess | None,
    skew: ClockSkew,
    job: str,
    control_topic: str | None = None,
    lateness_ms: int = 0,
) -> DataFrame:
    """Kafka records of both topics as events with their kind (see the module docstring).

    Built once, on the streaming DataFrame, and read in one pass: the watermark ``W`` a
    micro-batch starts under and its clock are the ones
    :func:`trending.spark.batch_values.set_batch_params` set for ``job`` before the batch's
    first Spark job, so the driver builds no plan of its own per batch.

    Columns: ``kind, ts, id, x, y, v, topic, partition, offset, key, value, reason, record_ts,
    headers``; ``id`` is the sensor or query id, ``v`` the reading's value or the query's
    distance, ``record_ts`` the record's Kafka timestamp (ms); ``topic``, ``key``, ``value``,
    ``record_ts`` and ``headers`` are null but on late and dead events. An event whose time is
    too far from the batch's clock (``skew``) is ``DEAD``. An advance to ``W'`` on
    ``control_topic`` (the job's ``--idle-advance``, :func:`trending.spark.clock.advance_value`)
    is a ``TICK`` at ``W' + lateness``: it counts toward the batch's newest event time, so the
    watermark moves to at least ``W'``, and is applied nowhere; the topic's other records are
    dropped.
    """
    spark = raw.sparkSession
    reading = F.col("topic") == F.lit(topics.readings)
    query = F.col("topic") == F.lit(topics.queries)
    rows = decode_avro(
        raw, topics.reading_schema, registry, where=reading, record="_r", reason="_r_reason"
    )
    rows = decode_avro(
        rows, topics.query_schema, registry, where=query, record="_q", reason="_q_reason"
    )
    advance = F.lit(None).cast("long")
    if control_topic is not None:
        advance = F.when(F.col("topic") == F.lit(control_topic), advance_of(F.col("value")))
        rows = rows.where(reading | query | advance.isNotNull())
    r, q = F.col("_r"), F.col("_q")

    def field(of_reading: str, of_query: str) -> Column:
        return F.when(reading, r.getField(of_reading)).otherwise(q.getField(of_query))

    events = rows.select(
        F.when(reading, F.lit(READING)).when(query, F.lit(QUERY)).otherwise(F.lit(TICK))
        .alias("kind"),
        F.when(reading, F.unix_millis(r.getField("ts")))
        .when(query, F.unix_millis(q.getField("ts")))
        .otherwise(advance + F.lit(lateness_ms))
        .alias("ts"),
        field("sensor_id", "query_id").cast("long").alias("id"),
        field("x", "x").alias("x"),
        field("y", "y").alias("y"),
        field("value", "distance").alias("v"),
        "topic",
        "partition",
        "offset",
        "key",
        "value",
        F.when(reading, F.col("_r_reason")).otherwise(F.col("_q_reason")).alias("reason"),
        F.unix_millis("timestamp").alias("record_ts"),
        "headers",
    )  # fmt: skip
    tick = F.col("kind") == F.lit(TICK)
    skewed = skew_reason(F.col("ts"), batch_clock(spark, job), skew)
    problem = F.when(~tick, F.coalesce(_problem(events), skewed))
    late = F.col("ts") < batch_watermark(spark, job)  # null (not late) before the first event
    kind = F.when(problem.isNotNull(), F.lit(DEAD)).when(~tick & late, F.lit(LATE))
    kinds = F.coalesce(kind, F.col("kind"))
    return _origin_aside(events.withColumn("reason", problem).withColumn("kind", kinds))


def _origin_aside(events: DataFrame) -> DataFrame:
    """The record's own bytes and Kafka fields only on the events that are published again (late
    and dead): a batch's events are cached, and the bytes of every reading would double it."""
    aside = F.col("kind").isin(LATE, DEAD)
    kept = [
        F.when(aside, F.col(name)).alias(name) if name in ORIGIN_ONLY else F.col(name)
        for name in events.columns
    ]
    return events.select(*kept)


def _not_finite(column: Column) -> Column:
    return F.isnan(column) | (F.abs(column) == F.lit(float("inf")))


def _problem(events: DataFrame) -> Column:
    """Why an event cannot be applied (null when it can)."""
    query = F.col("kind") == F.lit(QUERY)
    bad_distance = F.isnan("v") | (F.col("v") < 0)
    return (
        F.when(F.col("reason").isNotNull(), F.col("reason"))
        .when(_not_finite(F.col("x")) | _not_finite(F.col("y")), F.lit("x and y must be finite"))
        .when(query & bad_distance, F.lit("distance must be a number >= 0"))
        .when(~query & _not_finite(F.col("v")), F.lit("value must be finite"))
    )


@dataclass
class BatchFigures:
    """What the driver needs of a batch's events before the windows run."""

    newest_ms: int | None  # newest event time of the on-time events
    bounds: tuple[float, float, float, float] | None  # min x, min y, max x, max y of readings
    counts: dict[int, int]  # events per kind


def batch_figures(events: DataFrame) -> BatchFigures:
    """One aggregation over ``events`` (:func:`sensor_events`)."""
    on_time = F.col("kind").isin(READING, QUERY, TICK)
    reading = F.col("kind") == F.lit(READING)
    row = events.agg(
        F.max(F.when(on_time, F.col("ts"))).alias("newest"),
        F.min(F.when(reading, F.col("x"))).alias("min_x"),
        F.min(F.when(reading, F.col("y"))).alias("min_y"),
        F.max(F.when(reading, F.col("x"))).alias("max_x"),
        F.max(F.when(reading, F.col("y"))).alias("max_y"),
        *(F.sum((F.col("kind") == F.lit(k)).cast("long")).alias(f"k{k}") for k in range(4)),
    ).first()
    assert row is not None
    bounds = None
    if row["min_x"] is not None:
        bounds = (row["min_x"], row["min_y"], row["max_x"], row["max_y"])
    counts = {k: int(row[f"k{k}"] or 0) for k in range(4)}
    return BatchFigures(row["newest"], bounds, counts)


class SensorSteps:
    """The executors' half of a batch (``trending.sensors.SensorBatch`` in the JVM).

    A query probes the grid cells its square ``[x - d, x + d] x [y - d, y + d]`` touches, cut to
    the cells readings were ever put in; when that is more than ``max_query_cells`` cells (a
    large distance, or readings far apart), it probes instead every cell that holds readings,
    once per state partition. Either way it matches exactly the readings within its distance,
    and costs at most ``max(max_query_cells, cells holding readings)`` probes.
    """

    def __init__(
        self,
        spark: SparkSession,
        state_location: str,
        partitions: int,
        size: int,
        threshold: int,
        cell_size: float,
        per_sensor: bool,
        max_query_cells: int,
        job: str,
    ) -> None:
        jvm: Any = spark.sparkContext._jvm
        self.spark = spark
        self._java: JavaObject = getattr(jvm, BATCH_CLASS)(
            spark._jsparkSession, state_location, partitions, size, threshold, cell_size,
            per_sensor, max_query_cells, job,
        )  # fmt: skip

    def run(
        self,
        events: DataFrame,
        batch_id: int,
        watermark_ms: int | None,
        readings_before: int,
        bounds: tuple[float, float, float, float] | None,
    ) -> DataFrame:
        """Matches and popular readings of the on-time ``events`` (cached until :meth:`release`)."""
        on_time = events.where(F.col("kind").isin(READING, QUERY))
        nan = float("nan")
        min_x, min_y, max_x, max_y = bounds or (nan, nan, nan, nan)
        watermark = LONG_MIN if watermark_ms is None else watermark_ms
        out = self._java.run(
            on_time._jdf, batch_id, watermark, readings_before, min_x, min_y, max_x, max_y
        )
        return DataFrame(out, self.spark)

    def figures(self) -> dict[str, int]:
        """Counts of the batch just run."""
        java = self._java
        return {
            "readings": int(java.readingsApplied()),
            "queries": int(java.queriesApplied()),
            "matches": int(java.matchCount()),
            "popular": int(java.popularCount()),
            "pending": int(java.pendingCount()),
            "state_bytes": int(java.stateBytesWritten()),
        }

    def release(self) -> None:
        self._java.release()


@dataclass(frozen=True)
class OutputSchemas:
    """Avro schemas (JSON) and wire-format headers of the two result topics."""

    match_schema: str
    popular_schema: str
    match_header: bytes = b""
    popular_header: bytes = b""


def encoded_output(output: DataFrame, schemas: OutputSchemas) -> DataFrame:
    """``kind, key, value`` rows: Avro matches keyed by query id, popular readings by sensor id."""
    millis = F.timestamp_millis
    match = F.struct(
        F.col("query_id"),
        F.col("sensor_id").cast("int").alias("sensor_id"),
        F.col("value"),
        millis(F.col("reading_ts")).alias("reading_ts"),
        millis(F.col("query_ts")).alias("query_ts"),
    )
    popular = F.struct(
        F.col("sensor_id").cast("int").alias("sensor_id"),
        F.col("x"),
        F.col("y"),
        F.col("value"),
        millis(F.col("reading_ts")).alias("ts"),
        F.col("matches"),
    )
    is_match = F.col("kind") == F.lit(MATCH)
    value = F.when(
        is_match, F.concat(F.lit(schemas.match_header), to_avro(match, schemas.match_schema))
    ).otherwise(F.concat(F.lit(schemas.popular_header), to_avro(popular, schemas.popular_schema)))
    key = F.when(is_match, F.col("query_id").cast("string")).otherwise(
        F.col("sensor_id").cast("string")
    )
    return output.select("kind", key.cast("binary").alias("key"), value.alias("value"))
