"""The hashtags job's Spark plan: counts in Spark's state store on the executors, top-k candidates
to the driver.

One streaming plan per query, all of it in the JVM on the executors::

    Kafka records ─ from_avro ─ hashtag_keys ─ explode          (stateless, per record)
      ─ transformWithState keyed by hashtag (RocksDB):            (stateful, hash-partitioned by
          pane counts per tag, window counts of changed tags       hashtag over the shuffle
                                                                   partitions)
      ─ k best per window and task (count desc, tag asc)         (a bounded heap per window,
                                                                   in the state step's tasks)
    then per micro-batch, in ``foreachBatch``:
      ─ collect: <= k candidate rows per open window and task + late and dead records

The driver sets the batch's parameters (:class:`BatchParams`: the watermark ``W``, the batch's
clock ``C`` and per window the k-th count of its last published top-k) as a session setting
before it runs the batch; Spark hands ``spark.*`` settings to the batch's tasks, where the
lateness and clock tests and the state processor read them
(``jvm/udf/src/main/java/trending/state``). As settings, not literals in the plan, they leave
the generated code the same in every batch, so it is compiled once. Record kinds:

* ``COUNTED``: an on-time tweet, whose newest window ``[s, e)`` has ``e > W``: counted per distinct
  hashtag key into pane ``t - ((t - a) mod g)``, per task before the shuffle, then in the state
  row of the tag's bucket (``hash(tag) mod 4096``: one state read and write per bucket, not per
  hashtag; a task's counts of a bucket cross the shuffle as one packed row); a tweet without
  hashtags still counts toward the batch figures;
* ``LATE``: every window of the tweet is final (``last_end(t) <= W``), with its bytes;
* ``DEAD``: a record that does not decode, or a tweet beyond the job's bounds
  (:class:`trending.text.bounds.TweetBounds`), with its bytes and the reason.

The batch figures (on-time tweets, newest on-time event time) reach the driver through Spark
accumulators. Spark's own watermark (``withWatermark`` on the on-time event times, delay =
lateness) equals ``W`` batch by batch and only drives the timers that purge closed panes.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.avro.functions import to_avro

from connectors.kafka_settings import SchemaRegistryAccess
from connectors.spark_kafka import decode_avro
from trending.spark.batch_values import BatchParams, batch_watermark, set_batch_params
from trending.spark.clock import NOT_AN_ADVANCE, ClockSkew, advance_of, batch_clock, skew_reason
from trending.text.bounds import TweetBounds
from trending.windows.sliding import SlidingWindows

if TYPE_CHECKING:
    from py4j.java_gateway import JavaObject

COUNTED, LATE, DEAD = 0, 1, 2
BOUNDS_FUNCTION = ("trending_hashtag_bounds", "trending.udf.HashtagBounds")
STATE_CLASS = "trending.state.HashtagState"
COLLECTED_CLASS = "trending.state.CollectedBatch"
SIDE_COLUMNS = ("kind", "partition", "offset", "key", "value", "reason", "record_ts", "headers")


def bounds_reason(bounds: TweetBounds, text: Column) -> Column:
    """Why a tweet of ``text`` is beyond ``bounds`` (null when within): the text's length in
    Spark SQL; the hashtag bounds by ``trending.udf.HashtagBounds``, for texts longer than
    :attr:`TweetBounds.unchecked_chars` only."""
    length = F.length(text)
    check = F.call_function(
        BOUNDS_FUNCTION[0], text, F.lit(bounds.max_hashtags), F.lit(bounds.max_hashtag_chars),
        F.lit(bounds.max_url_scan_steps).cast("long"),
    )  # fmt: skip
    too_long = F.concat(
        F.lit("over --max-text-chars: a text of "), length.cast("string"),
        F.lit(f" characters (at most {bounds.max_text_chars})"),
    )  # fmt: skip
    return F.when(length > bounds.max_text_chars, too_long).when(
        length > bounds.unchecked_chars, check
    )


def register_functions(spark: SparkSession) -> None:
    """Register the JVM function the bounds test calls (the lateness and clock tests register
    theirs: :func:`batch_watermark`, :func:`batch_clock`)."""
    from pyspark.sql.types import StringType

    spark.udf.registerJavaFunction(*BOUNDS_FUNCTION, StringType())


def hashtag_records(
    raw: DataFrame, schema_json: str, registry: SchemaRegistryAccess | None,
    windows: SlidingWindows, job: str,
    lateness_ms: int, skew: ClockSkew, bounds: TweetBounds, control_topic: str | None = None,
) -> DataFrame:  # fmt: skip
    """Decoded streaming Kafka records with their kind (see the module docstring).

    Columns: ``kind, event_ms, text, partition, offset, record_key, value, reason, record_ts,
    headers`` (the record's key and value, its Kafka timestamp in ms and its headers on late and
    dead records only). Spark's
    watermark follows the event times of the on-time tweets, with delay = lateness. A tweet
    whose time is too far from the batch's clock (``skew``; the clock of :class:`BatchParams`)
    is ``DEAD``, and so is a tweet beyond ``bounds``. An advance to ``W'`` on ``control_topic``
    (the job's ``--idle-advance``, :func:`trending.spark.clock.advance_value`) is a tweet
    without hashtags at ``W' + lateness``: it moves the watermark to at least ``W'`` and counts
    nothing. Its records are read in the same pass as the tweets (one source in the plan).
    """
    decoded = decode_avro(raw, schema_json, registry, fields=("text", "created_at"))
    control = F.lit(False)
    if control_topic is not None:
        control = F.coalesce(F.col("topic") == F.lit(control_topic), F.lit(False))
    watermark = batch_watermark(raw.sparkSession, job)
    clock = batch_clock(raw.sparkSession, job)
    # Each value the others test is a column of its own, named where it is read. Written out
    # in every expression that used it, the plan held the event time twenty times over, and
    # Spark optimises the plan, generates its code and serialises it anew every micro-batch.
    decoded = decoded.withColumns(
        {
            "_control": control,
            "_advance": F.when(control, advance_of(F.col("value")) + F.lit(lateness_ms)),
            # computed once per record, only for decoded ones
            "_bound": F.when(
                F.col("record").isNotNull(), bounds_reason(bounds, F.col("record.text"))
            ),
        }
    )
    is_control, advance_ms = F.col("_control"), F.col("_advance")
    event_ms = F.when(is_control, advance_ms).otherwise(F.unix_millis(F.col("record.created_at")))
    decoded = decoded.withColumn("_event_ms", event_ms)
    decoded = decoded.withColumn("_skew", skew_reason(F.col("_event_ms"), clock, skew))
    unfit = F.col("record").isNull() | F.col("_skew").isNotNull() | F.col("_bound").isNotNull()
    kind = (
        F.when(is_control, F.when(advance_ms.isNull(), F.lit(DEAD)))
        .when(unfit, F.lit(DEAD))
        .when(_last_end(F.col("_event_ms"), windows) <= watermark, F.lit(LATE))
    )
    reason = F.when(is_control, F.when(advance_ms.isNull(), F.lit(NOT_AN_ADVANCE))).otherwise(
        F.coalesce(F.col("reason"), F.col("_skew"), F.col("_bound"))
    )
    decoded = decoded.withColumns({"reason": reason, "_kind": F.coalesce(kind, F.lit(COUNTED))})
    aside = F.col("_kind") != F.lit(COUNTED)  # late or dead
    records = decoded.select(
        F.col("_kind").alias("kind"),
        F.col("_event_ms").alias("event_ms"),
        F.when(is_control, F.lit("")).otherwise(F.col("record.text")).alias("text"),
        F.when(is_control, F.timestamp_millis(advance_ms))
        .otherwise(F.col("record.created_at"))
        .alias("created_at"),
        "partition",
        "offset",
        # the record's own bytes only where they are published again: late and dead records
        F.when(aside, F.col("key")).alias("record_key"),
        F.when(aside, F.col("value")).alias("value"),
        "reason",
        F.when(aside, F.unix_millis("timestamp")).alias("record_ts"),
        F.when(aside, F.col("headers")).alias("headers"),
    )
    on_time = F.when(F.col("kind") == COUNTED, F.col("created_at"))
    return records.withColumn("on_time_at", on_time).withWatermark(
        "on_time_at", f"{lateness_ms} milliseconds"
    )


def _last_end(event_ms: Column, windows: SlidingWindows) -> Column:
    """``last_end(t) = t - ((t - a) mod hop) + size``."""
    shifted = event_ms - F.lit(windows.align_ms)
    return event_ms - F.pmod(shifted, F.lit(windows.hop_ms)) + F.lit(windows.size_ms)


class HashtagState:
    """The stateful step (``trending.state.HashtagState`` in the JVM) and its batch figures."""

    def __init__(
        self, spark: SparkSession, windows: SlidingWindows, job: str, keys_from_text: bool = True
    ) -> None:
        """``keys_from_text``: a record's keys are the hashtags of its ``text`` (the job);
        false: ``text`` is the record's one key (:mod:`trending.spark.sliding_topk`)."""
        jvm: Any = spark.sparkContext._jvm
        self.job = job
        self._java: JavaObject = getattr(jvm, STATE_CLASS)(
            windows.size_ms, windows.hop_ms, windows.align_ms, job, keys_from_text
        )
        self._collected: Any = getattr(jvm, COLLECTED_CLASS)  # looked up once, not per batch

    def apply(self, records: DataFrame) -> DataFrame:
        """Window-count rows and passed-through late/dead rows of streaming ``records``."""
        return DataFrame(self._java.apply(records._jdf), records.sparkSession)

    def warm(self, records: DataFrame, k: int) -> None:
        """Run the whole per-batch step (counting, state store, :meth:`collect`) on batch
        ``records``, with a state store dropped after it (JIT before batch 0)."""
        self.prepare(records, BatchParams(None, {}, clock_ms=int(time.time() * 1000)))
        counts = DataFrame(self._java.batchCounts(records._jdf), records.sparkSession)
        with self.collect(counts, k) as collected:
            collected.counted()

    def prepare(self, batch: DataFrame, params: BatchParams) -> None:
        """Set ``params`` for the tasks of the next job run on ``batch``; clear the figures."""
        set_batch_params(batch.sparkSession, self.job, params)
        self._java.resetFigures()

    def collect(self, batch: DataFrame, k: int) -> CollectedCandidates:
        """Run micro-batch ``batch`` of :meth:`apply` once: each task's ``k`` best window-count
        rows per window come to the driver, the side rows stay on the executors until read or
        closed."""
        return CollectedCandidates(self._collected.run(batch._jdf, k), batch.sparkSession)

    def figures(self) -> StepFigures:
        """What the tasks of the batch just run counted."""
        newest = int(self._java.newestEventMs())
        return StepFigures(
            int(self._java.tweetCount()),
            None if newest == -(2**63) else newest,
            int(self._java.sideRowCount()),
        )


class CollectedCandidates:
    """A micro-batch of :meth:`HashtagState.apply`, run once (``trending.state.CollectedBatch``):
    each task's ``k`` best window-count rows per window on the driver (their union holds each
    window's ``k`` best, all the driver's merge needs), the late and dead rows kept on the
    executors (spilled to disk when memory is short) until :meth:`close`. The batch's plan
    updates the state store, so it must not run again; caching it as a DataFrame instead would
    build columnar batches of every row and plan each read of the cache anew."""

    def __init__(self, java: Any, spark: SparkSession) -> None:
        self._java = java
        self._spark = spark

    def __enter__(self) -> CollectedCandidates:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def counted(self) -> list[tuple[int, str, int]]:
        """``(window_start, tag, count)`` of the tasks' ``k`` best per window."""
        return unpack_candidates(bytes(self._java.counted()))

    def side(self) -> DataFrame:
        """The late and dead rows (:data:`SIDE_COLUMNS`)."""
        return side_rows(DataFrame(self._java.side(), self._spark))

    def close(self) -> None:
        """Drop the executors' copies of the side rows."""
        self._java.close()


class StepFigures(NamedTuple):
    """A micro-batch's figures, from the tasks' accumulators (:meth:`HashtagState.figures`)."""

    counted: int  # on-time records (tweets) counted
    newest_event_ms: int | None  # newest on-time event time
    side_rows: int  # late and dead rows passed through: 0 only when there are none (a stage
    # Spark runs again can count some twice), so a batch without any skips reading them


def top_candidates(rows: DataFrame, k: int) -> DataFrame:
    """Per window the ``k`` best counts (count desc, tag asc), and every side row, in one partition.

    ``trending.state.TopCandidates``: each task keeps its own ``k`` best per window with a bounded
    heap, then one task keeps the ``k`` best of those, as ``row_number() over (partition by
    window_start order by count desc, tag asc) <= k`` would.
    """
    jvm: Any = rows.sparkSession.sparkContext._jvm
    return DataFrame(jvm.trending.state.TopCandidates.apply(rows._jdf, k), rows.sparkSession)


def unpack_candidates(packed: bytes) -> list[tuple[int, str, int]]:
    """``(window_start, tag, count)`` rows of ``CollectedBatch.counted``'s bytes: per row a
    big-endian long, the tag's UTF-8 length (int) and bytes, and a long."""
    rows = []
    at, end = 0, len(packed)
    while at < end:
        start, size = struct.unpack_from(">qi", packed, at)
        at += 12
        tag = packed[at : at + size].decode("utf-8")
        (count,) = struct.unpack_from(">q", packed, at + size)
        at += size + 8
        rows.append((start, tag, count))
    return rows


def counted_rows(batch: DataFrame) -> DataFrame:
    """The candidate rows of a :func:`top_candidates` batch."""
    return batch.where(F.col("kind") == COUNTED).select("window_start", "tag", "count")


def side_rows(batch: DataFrame) -> DataFrame:
    """The late and dead rows of a :func:`top_candidates` batch (:data:`SIDE_COLUMNS`)."""
    return batch.where(F.col("kind") != COUNTED).select(*SIDE_COLUMNS)


def warm_up(
    spark: SparkSession,
    state: HashtagState,
    schema_json: str,
    registry: SchemaRegistryAccess | None,
    config: Any,
    kafka_options: Mapping[str, str] | None = None,
) -> None:
    """Run the per-batch plan on synthetic tweets made in the JVM, and on a slice of the input
    topic, before the query starts (``config``: ``windows``, ``lateness_ms``, ``k``,
    ``warm_up_rows``, ``clock_skew``, ``bounds``).

    The first job of a JVM pays for class loading, code generation and JIT compilation of the
    Kafka reader, the decoder, the hashtag function, the state store and the candidate
    selection; paying it at start-up keeps it out of the first batch. Nothing is written: the
    warm-up's state store belongs to its own batch query and is dropped with it.
    """
    rows = config.warm_up_rows
    # the synthetic tweets are bare Avro: their warm-up asks no registry
    batches: list[tuple[DataFrame, SchemaRegistryAccess | None]] = [
        (_synthetic_batch(spark, schema_json, rows), None)
    ]
    if kafka_options:
        batch_options = {k: v for k, v in kafka_options.items() if k not in _STREAM_ONLY}
        batch_options["startingOffsets"] = "earliest"  # "latest" is not allowed in batch reads
        topic = spark.read.format("kafka").options(**batch_options).load().limit(rows // 10)
        batches.append((topic, registry))
    for raw, wire in batches:
        records = hashtag_records(
            raw,
            schema_json,
            wire,
            config.windows,
            state.job,
            config.lateness_ms,
            config.clock_skew,
            config.bounds,
        )
        state.warm(records, config.k)


_STREAM_ONLY = {"maxOffsetsPerTrigger", "minOffsetsPerTrigger", "maxTriggerDelay"}


def _synthetic_batch(spark: SparkSession, schema_json: str, rows: int) -> DataFrame:
    """``rows`` Kafka-shaped records of Avro tweets with a few hashtags and a URL each."""
    i = F.col("id")
    text = F.concat(
        F.lit("warming up #Tag"), (i % 97).cast("string"), F.lit(" #tag"), (i % 89).cast("string"),
        F.lit(" #Café"), (i % 7).cast("string"), F.lit(" see http://example.com/#frag"),
    )  # fmt: skip
    tweet = F.struct(
        i.alias("id"),
        F.lit("warm-up").alias("user"),
        text.alias("text"),
        F.timestamp_millis(i * 1_000).alias("created_at"),
        F.lit(None).cast("string").alias("lang"),
    )
    value = to_avro(tweet, schema_json)
    return spark.range(rows).select(
        F.lit(None).cast("binary").alias("key"),
        value.alias("value"),
        F.lit("warm-up").alias("topic"),
        (i % 4).cast("int").alias("partition"),
        i.alias("offset"),
        F.timestamp_millis(i).alias("timestamp"),
        F.lit(0).alias("timestampType"),
        F.lit(None).cast("array<struct<key:string,value:binary>>").alias("headers"),
    )
