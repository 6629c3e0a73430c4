"""The stateless half of the hashtags job, in the JVM: one Spark plan per micro-batch.

Every Kafka record of the batch ends in exactly one output row:

* ``COUNTED`` rows: per ``(pane_start, tag)`` the number of on-time tweets holding that key and
  their newest event time; the row with a null ``tag`` counts every on-time tweet of the pane,
  with or without hashtags (the watermark follows all of them);
* ``LATE`` rows: a tweet whose newest window ``[s, e)`` has ``e <= watermark``, with its bytes;
* ``DEAD`` rows: a record that does not decode, with its bytes and the reason.

Decoding, hashtag extraction (the ``hashtag_keys`` JVM function), the explode and the per-pane
pre-aggregation all run in the JVM; only the aggregated rows reach the Python driver.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

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
    decoded = decode_avro(batch, schema_json, confluent)
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
        F.explode_outer(F.when(counted, _tweet_row_and_keys(F.col("text")))).alias("tag"),
        *(
            F.when(side, F.col(c)).alias(c)
            for c in ("partition", "offset", "key", "value", "reason")
        ),
    )
    return exploded.groupBy(*GROUP_COLUMNS).agg(
        F.count(F.lit(1)).alias("n"), F.max("event_ms").alias("max_event_ms")
    )


def _tweet_row_and_keys(text: Column) -> Column:
    """``[null] ++ hashtag_keys(text)``: one row for the tweet itself, then one per distinct key."""
    return F.concat(F.array(F.lit(None).cast("string")), F.call_function("hashtag_keys", text))


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
    spark: SparkSession, schema_json: str, confluent: bool, windows: SlidingWindows, rows: int
) -> None:
    """Run the batch plan once on synthetic tweets before the query starts.

    The first job of a JVM pays for class loading, code generation and JIT compilation of the
    decoder and the hashtag function; paying it at start-up keeps it out of the first batch.
    """
    from datetime import datetime, timezone

    header = b"\x00\x00\x00\x00\x01" if confluent else b""
    start = datetime.fromtimestamp(0, tz=timezone.utc)
    records = [
        (None, header + _synthetic_tweet(i), "warm-up", i % 4, i, start, 0) for i in range(rows)
    ]
    kafka_shaped = spark.createDataFrame(records, KAFKA_ROW_SCHEMA)
    plan_batch(kafka_shaped, schema_json, confluent, windows, None).toArrow()


def _synthetic_tweet(i: int) -> bytes:
    from connectors.avro import encode_tweet

    text = f"warming up #Tag{i % 97} #tag{i % 89} #Café{i % 7} http://example.com/#frag {i}"
    return encode_tweet({"id": i, "user": "warm-up", "text": text, "created_at": i * 1_000})


KAFKA_ROW_SCHEMA = (
    "key binary, value binary, topic string, partition int, offset long, "
    "timestamp timestamp, timestampType int"
)
