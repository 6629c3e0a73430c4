"""Spark's own Kafka source and Avro decoding, kept in the JVM.

Values are checked strictly in the JVM (:func:`avro_check`), then decoded with ``from_avro`` in
PERMISSIVE mode: a value that does not decode yields a null record and a reason, so the job can
dead-letter it instead of failing or dropping it. With a schema registry each value's 5-byte
Confluent header (magic byte 0 + schema id) names its writer schema, which the executors fetch
from the registry (cached) and resolve against the job's schema in the JVM
(``trending.avro.WireDecoder``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.avro.functions import from_avro

from connectors.kafka_settings import SchemaRegistryAccess

CONFLUENT_HEADER_BYTES = 5

# The source's Kafka consumer, tuned for reading a known offset range rather than tailing:
# * bigger polls and fetches than the client's defaults (500 records a poll, 1 MiB a partition);
# * a short fetch.max.wait.ms: a task whose range ends at the end of the log waited this long
#   (default 500 ms) on a fetch that the broker holds until new data arrives, so every
#   micro-batch that read to the end of a topic paid it once per wave of tasks (measured: the
#   last of 10 batches took 2.4 s instead of 0.4 s on local[1]).
# A user's --spark-kafka-option overrides each of them.
FETCH_DEFAULTS = {
    "kafka.max.poll.records": "10000",
    "kafka.max.partition.fetch.bytes": str(8 * 2**20),
    "kafka.fetch.max.wait.ms": "10",
}
# The input as its producers committed it: records of a transaction its producer aborted are never
# read (the Kafka client's default, read_uncommitted, reads them), and the source's latest offset
# is the partition's last stable offset, so a batch never ends inside an open transaction (an
# upstream transaction left open holds that partition back until it commits, aborts or times
# out). Spark's reader skips the offsets of transaction markers and aborted records. Overridden
# by --spark-kafka-option kafka.isolation.level=read_uncommitted.
ISOLATION_DEFAULT = {"kafka.isolation.level": "read_committed"}


def source_options(
    bootstrap: str,
    topic: str,
    starting_offsets: str = "earliest",
    max_offsets_per_trigger: int | None = None,
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Options for ``readStream.format("kafka")`` (and ``read``); ``extra`` passes through
    (security etc.) and wins over the defaults: :data:`FETCH_DEFAULTS` and
    :data:`ISOLATION_DEFAULT` (``read_committed``).

    Keys in ``extra`` without a ``kafka.`` prefix that Spark does not know as source options are
    Kafka client settings and get the prefix.
    """
    options = {
        "kafka.bootstrap.servers": bootstrap,
        "subscribe": topic,
        "startingOffsets": starting_offsets,
        "failOnDataLoss": "true",
        "includeHeaders": "true",  # dead letters carry the record's headers
        **FETCH_DEFAULTS,
        **ISOLATION_DEFAULT,
    }
    if max_offsets_per_trigger:
        options["maxOffsetsPerTrigger"] = str(max_offsets_per_trigger)
    for key, value in (extra or {}).items():
        options[_spark_option_name(key)] = value
    return options


_SOURCE_OPTIONS = {
    "startingOffsets",
    "endingOffsets",
    "failOnDataLoss",
    "minPartitions",
    "maxOffsetsPerTrigger",
    "minOffsetsPerTrigger",
    "maxTriggerDelay",
    "groupIdPrefix",
    "kafkaConsumer.pollTimeoutMs",
    "fetchOffset.numRetries",
    "fetchOffset.retryIntervalMs",
    "startingTimestamp",
    "startingOffsetsByTimestamp",
    "includeHeaders",
}


def _spark_option_name(key: str) -> str:
    if key.startswith("kafka.") or key in _SOURCE_OPTIONS:
        return key
    return f"kafka.{key}"


def read_kafka_stream(spark: SparkSession, options: Mapping[str, str]) -> DataFrame:
    """A streaming DataFrame of Kafka records (key, value, topic, partition, offset, timestamp,
    timestampType, and headers when ``includeHeaders`` is set)."""
    return spark.readStream.format("kafka").options(**options).load()


def required_fields(schema_json: str) -> list[str]:
    """Top-level fields whose type does not admit null."""
    fields = json.loads(schema_json).get("fields", [])
    return [f["name"] for f in fields if not _nullable(f["type"])]


def _nullable(avro_type: object) -> bool:
    return avro_type == "null" or (isinstance(avro_type, list) and "null" in avro_type)


def projected_schema(schema_json: str, fields: Sequence[str]) -> str:
    """The record schema keeping only ``fields``: a reader schema Avro resolves against."""
    schema = json.loads(schema_json)
    schema["fields"] = [f for f in schema["fields"] if f["name"] in fields]
    return json.dumps(schema)


def avro_check(spark: SparkSession, schema_json: str, confluent: bool = False) -> Column:
    """Why ``value`` is not exactly one datum of ``schema_json`` (null when it is), checked in
    the JVM before ``from_avro`` reads it (``trending.avro.AvroCheck``): no trailing bytes,
    strings in UTF-8, no length beyond the value (``from_avro`` would allocate what it claims)."""
    header = CONFLUENT_HEADER_BYTES if confluent else 0
    digest = hashlib.sha1(schema_json.encode(), usedforsecurity=False).hexdigest()[:16]
    name = f"trending_avro_check_{digest}_{header}"
    if not spark.catalog.functionExists(name):
        jvm: Any = spark.sparkContext._jvm
        jvm.trending.avro.AvroCheck.register(spark._jsparkSession, name, schema_json, header)
    return F.call_function(name, F.col("value"))


# The executors' patience with the registry, as Spark settings (durations: 500ms, 30s, 2min):
# how long an id the registry answers "not found" (404, error code 40403) stays unknown to an
# executor JVM, and how long a task waits for a registry that is down, slow, 5xx or refusing the
# credentials before it fails (Spark then runs it again, spark.task.maxFailures times in all).
# Defaults in trending.avro.SchemaRegistry: 30s and 60s. They are not registry client settings
# (TRENDING_SCHEMA_REGISTRY_*): the Python client refuses names it does not know.
REGISTRY_CONFS = ("spark.trending.registry.missingIdTtl", "spark.trending.registry.maxWait")


def wire_decoder(spark: SparkSession, schema_json: str, registry: SchemaRegistryAccess) -> Column:
    """``struct<body, reason>`` of a wire-format ``value``: its Avro body in ``schema_json``
    (resolved from the writer schema its id names) or why there is none. A registry that fails
    is no reason: the task waits for it (:data:`REGISTRY_CONFS`), then fails."""
    settings = registry.executor_settings_json()
    waits = "".join(f"\n{key}={spark.conf.get(key, '')}" for key in REGISTRY_CONFS)
    text = schema_json + settings + waits
    digest = hashlib.sha1(text.encode(), usedforsecurity=False).hexdigest()
    name = f"trending_wire_{digest[:16]}"
    if not spark.catalog.functionExists(name):
        jvm: Any = spark.sparkContext._jvm
        jvm.trending.avro.WireDecoder.register(spark._jsparkSession, name, schema_json, settings)
    return F.call_function(name, F.col("value"))


def decode_avro(
    df: DataFrame,
    schema_json: str,
    registry: SchemaRegistryAccess | None,
    fields: Sequence[str] | None = None,
    *,
    where: Column | None = None,
    record: str = "record",
    reason: str = "reason",
) -> DataFrame:
    """Add ``record`` (decoded struct or null) and ``reason`` (why it is null) to Kafka rows.

    Without a ``registry`` values are bare Avro bodies of ``schema_json``; with one they are in
    the Confluent wire format, of any writer schema compatible with ``schema_json``. ``fields``
    limits the decoded struct to those fields (the others are skipped, not built). ``where``:
    only the rows it holds for are decoded; the others, say another topic's read in the same
    pass, get a null ``record`` and ``reason`` and cost no decoding.
    """
    if registry is None:
        body: Column = F.col("value")
        malformed = avro_check(df.sparkSession, schema_json, confluent=False)
        early = F.when(F.col("value").isNull(), F.lit("empty value")).when(
            malformed.isNotNull(), malformed
        )
    else:
        wire = wire_decoder(df.sparkSession, schema_json, registry)
        df = df.withColumn("_wire", wire if where is None else F.when(where, wire))
        early = F.col("_wire.reason")
        body = F.col("_wire.body")
    if where is not None:  # a reason of its own keeps from_avro off the other rows
        early = F.when(where, early).otherwise(F.lit("elsewhere"))
    df = df.withColumn("_early", early)
    options = {"mode": "PERMISSIVE"}
    reader_schema = schema_json
    if fields is not None:
        reader_schema = options["avroSchema"] = projected_schema(schema_json, fields)
    # Decoded once, in a column of its own, and only when the value passed its checks.
    df = df.withColumn(
        "_decoded", F.when(F.col("_early").isNull(), from_avro(body, schema_json, options))
    )
    decoded_record = F.col("_decoded")
    # PERMISSIVE decoding yields a struct of nulls for bytes that do not decode: a null in a
    # field the schema declares non-nullable is how a malformed value shows.
    missing = [decoded_record.getField(name).isNull() for name in required_fields(reader_schema)]
    undecodable = decoded_record.isNull()
    for check in missing:
        undecodable = undecodable | check
    why = F.coalesce(
        F.col("_early"), F.when(undecodable, F.lit("value is not valid Avro for the schema"))
    )
    decoded = df.withColumn(reason, why if where is None else F.when(where, why))
    decoded = decoded.withColumn(record, F.when(F.col(reason).isNull(), decoded_record))
    return decoded.drop("_early", "_decoded", "_wire")  # a column it lacks is no error
