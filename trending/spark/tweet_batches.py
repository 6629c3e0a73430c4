"""The stateless half of the hashtags job, in the JVM: one Spark plan per micro-batch.

Every Kafka record of the batch ends in exactly one output row:

* ``COUNTED`` rows: per ``(pane_start, tag)`` the number ``n`` of on-time tweets holding that
  key, how many of them were first counted in this row (``tweets``: each tweet is counted once,
  on its first key) and their newest event time; a null ``tag`` row stands for the tweets
  without hashtags (the watermark follows every tweet);
* ``LATE`` rows: a tweet whose newest window ``[s, e)`` has ``e <= watermark``, with its bytes;
* ``DEAD`` rows: a record that does not decode, with its bytes and the reason.

Decoding, hashtag extraction (the ``hashtag_keys`` JVM function), the explode and the per-pane
pre-aggregation all run in the JVM; only the aggregated rows reach the Python driver.
"""

from __future__ import annotations

from collections.abc import Mapping

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.avro.functions import to_avro

from connectors.spark_kafka import decode_avro
from trending.windows.sliding import SlidingWindows

COUNTED, LATE, DEAD = 0, 1, 2
SIDE_COLUMNS = ("partition", "offset", "key", "value", "reason")
GROUP_COLUMNS = ("kind", "pane_start", "tag", *SIDE_COLUMNS)


def plan_batch(
    batch: DataFrame,
    schema_json: str,
    confluent: bool,
    windows: SlidingWindows,
    watermark_ms: int | None,
) -> DataFrame:
    """The aggregated rows of one batch of raw Kafka records (see the module docstring)."""
    decoded = decode_avro(batch, schema_json, confluent, fields=("text", "created_at"))
    event_ms = F.unix_millis(F.col("record.created_at"))
    kind = F.when(F.col("record").isNull(), F.lit(DEAD)).when(
        _is_late(event_ms, windows, watermark_ms), F.lit(LATE)
    )
    rows = decoded.select(
        F.coalesce(kind, F.lit(COUNTED)).alias("kind"),
        event_ms.alias("event_ms"),
        F.col("record.text").alias("text"),
        "partition",
        "offset",
        "key",
        "value",
        "reason",
    )
    counted = F.col("kind") == COUNTED
    side = ~counted
    exploded = rows.select(
        "kind",
        "event_ms",
        F.when(counted, _pane_start(F.col("event_ms"), windows)).alias("pane_start"),
        F.posexplode_outer(F.when(counted, F.call_function("hashtag_keys", "text"))).alias(
            "position", "tag"
        ),
        *(
            F.when(side, F.col(c)).alias(c)
            for c in ("partition", "offset", "key", "value", "reason")
        ),
    )
    first_row_of_tweet = F.coalesce(F.col("position"), F.lit(0)) == 0
    return exploded.groupBy(*GROUP_COLUMNS).agg(
        F.count(F.lit(1)).alias("n"),
        F.count_if(first_row_of_tweet).alias("tweets"),
        F.max("event_ms").alias("max_event_ms"),
    )


def _is_late(event_ms: Column, windows: SlidingWindows, watermark_ms: int | None) -> Column:
    """``last_end(t) <= watermark`` with ``last_end(t) = t - ((t - a) mod hop) + size``."""
    if watermark_ms is None:
        return F.lit(False)
    shifted = event_ms - F.lit(windows.align_ms)
    last_end = event_ms - F.pmod(shifted, F.lit(windows.hop_ms)) + F.lit(windows.size_ms)
    return last_end <= F.lit(watermark_ms)


def _pane_start(event_ms: Column, windows: SlidingWindows) -> Column:
    """``t - ((t - a) mod g)`` for pane width ``g = gcd(size, hop)``."""
    shifted = event_ms - F.lit(windows.align_ms)
    return event_ms - F.pmod(shifted, F.lit(windows.pane_ms))


def warm_up(
    spark: SparkSession,
    schema_json: str,
    confluent: bool,
    windows: SlidingWindows,
    rows: int,
    kafka_options: Mapping[str, str] | None = None,
) -> None:
    """Run the batch plan on synthetic tweets made in the JVM, and read a slice of the input
    topic, before the query starts.

    The first job of a JVM pays for class loading, code generation and JIT compilation of the
    Kafka reader, the decoder and the hashtag function; paying it at start-up keeps it out of
    the first batch. Nothing is written.
    """
    synthetic = _synthetic_batch(spark, schema_json, confluent, rows)
    plan_batch(synthetic, schema_json, confluent, windows, None).toArrow()
    if kafka_options:
        batch_options = {k: v for k, v in kafka_options.items() if k not in _STREAM_ONLY}
        batch_options["startingOffsets"] = "earliest"  # "latest" is not allowed in batch reads
        head = spark.read.format("kafka").options(**batch_options).load().limit(rows // 10)
        plan_batch(head, schema_json, confluent, windows, None).write.format("noop").mode(
            "overwrite"
        ).save()


_STREAM_ONLY = {"maxOffsetsPerTrigger", "minOffsetsPerTrigger", "maxTriggerDelay"}


def _synthetic_batch(
    spark: SparkSession, schema_json: str, confluent: bool, rows: int
) -> DataFrame:
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
    if confluent:
        value = F.concat(F.lit(b"\x00\x00\x00\x00\x01"), value)
    return spark.range(rows).select(
        F.lit(None).cast("binary").alias("key"),
        value.alias("value"),
        F.lit("warm-up").alias("topic"),
        (i % 4).cast("int").alias("partition"),
        i.alias("offset"),
        F.timestamp_millis(i).alias("timestamp"),
        F.lit(0).alias("timestampType"),
    )
