"""The temporal window job's Spark plan: one temporal query per key, on the executors.

One streaming plan per query::

    Kafka records ─ from_avro ─ kind, sync time                   (stateless, per record)
      ─ withWatermark(sync time, lateness)                          (Spark's watermark W)
      ─ transformWithState keyed by key, event-time timers (state store, executors; the JVM
          core, :mod:`trending.spark.temporal_jvm_step`), or for a query only the Python core
          runs, transformWithStateInPandas keyed by bucket of key
          (:mod:`trending.spark.key_buckets`)
          per key one TemporalState (JVM: bytes in a ValueState; Python: JSON, a row of its
          bucket's ListState):
            the CTI moves to W                                  -> RESULT rows
            then, in (sync time, partition, offset) order:
              events with sync < W -> LATE rows (with the record's bytes), or, with
                                      "violation": "adjust", moved up to W
              bad input            -> DEAD rows (with the reason)
              the others go in
          per key (JVM) or bucket (Python) with input one PROGRESS row: the newest
          watermark mark of its input rows and their count
          a key's (bucket's) timer at W + 1 while it holds events: every key advances
          whenever W does
      ─ RESULT rows as Avro (to_avro, executors: :func:`encoded_results`)
      ─ foreachBatch: RESULT, LATE and DEAD rows to Kafka in one transaction; the driver
        follows W from the PROGRESS rows (max mark - lateness), as Spark does

An event's *sync time* is when it starts changing the timeline: ``start`` for an interval, a
start edge or a CTI, ``end`` for an end edge. ``W = max sync time seen in earlier batches -
lateness`` (Spark's event-time watermark), raised by each CTI record to at least its time (a
CTI goes into the watermark column as ``cti + lateness``). Every key's CTI is ``W``: a key's
rows become final as the watermark passes them, whether or not the key had input. A CTI record
changes no key: the watermark carries it (it reaches the keys only as a PROGRESS mark). An idle
key (its state holds no event) keeps no state, and a bucket of idle keys no timer.

A CTI at the end of time closes the input for good: every row becomes final and every later
event is late. Only the job's own control topic (``control_topic``) may send it; one on any other
topic is ``DEAD`` with :data:`FOREIGN_END_OF_INPUT` and moves no watermark.

:func:`run_temporal` picks the step; both give the same rows, batch by batch, and what follows
describes both (the Python step's classes here, the JVM step's in
``jvm/udf/src/main/java/trending/temporal/spark``).

Two layers: :func:`temporal_events` and :class:`KafkaRows` are the job's Kafka side (decoding,
the records' origin on LATE and DEAD rows, PROGRESS rows for the driver); below them
:func:`under_watermark` and :class:`TemporalProcessor` work on decoded columns, whatever they
came from, with the output rows chosen by a :class:`TemporalRows`. :func:`decoded_events` and
:class:`WindowRows` use those for any DataFrame of events
(:func:`trending.library.temporal_window`): results only, as ``schemas/window_row.avsc`` has
them; on a batch DataFrame a CTI at the end of time follows all rows.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Sequence
from typing import Any, Literal, Protocol

import pandas as pd
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.avro.functions import to_avro
from pyspark.sql.streaming.stateful_processor import (
    ExpiredTimerInfo,
    StatefulProcessor,
    StatefulProcessorHandle,
    TimerValues,
)
from pyspark.sql.types import (
    ArrayType,
    DataType,
    DoubleType,
    IntegralType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from connectors.kafka_settings import SchemaRegistryAccess
from connectors.spark_kafka import decode_avro
from trending.spark.clock import ClockSkew, batch_clock_ms, skew_reason
from trending.spark.key_buckets import (
    BUCKET_COLUMN,
    BucketState,
    KeyCodec,
    default_buckets,
    timers_to,
    with_bucket,
)
from trending.spark.temporal_jvm_step import jvm_query, run_jvm_temporal
from trending.windows.temporal import (
    END_OF_TIME,
    CtiViolation,
    EndEdge,
    IntervalEvent,
    Item,
    Row,
    StartEdge,
    TemporalInputError,
    TemporalLogic,
    TemporalQuery,
    ViolationPolicy,
)

INTERVAL, START_EDGE, END_EDGE, CTI, DEAD = 0, 1, 2, 3, 4
KIND_NAMES = ("INTERVAL", "START_EDGE", "END_EDGE", "CTI")
RESULT, LATE, PROGRESS = 10, 11, 12  # output kinds besides DEAD
STATE_SCHEMA = "state string"
INPUT_COLUMNS = (
    "kind", "key", "id", "start_ms", "end_ms", "value", "sync_ms", "mark_ms",
    "topic", "partition", "offset", "record_key", "raw", "reason", "record_ts", "headers",
)  # fmt: skip
FOREIGN_END_OF_INPUT = (
    "a CTI at the end of time closes the input for good: only the job's own control topic "
    "(run windows --available-now) may send it"
)
OUTPUT_SCHEMA = (
    "kind int, key string, start_ms long, end_ms long, value double, `values` array<double>, "
    "sync_ms long, topic string, partition int, offset long, record_key binary, raw binary, "
    "reason string, events long, record_ts long, "
    "headers array<struct<key: string, value: binary>>"
)


def temporal_events(
    raw: DataFrame,
    schema_json: str,
    registry: SchemaRegistryAccess | None,
    lateness_ms: int,
    skew: ClockSkew,
    control_topic: str | None = None,
    clock: Column | None = None,
) -> DataFrame:
    """Decoded Kafka records with kind, sync time and watermark mark, under Spark's watermark.

    Columns: :data:`INPUT_COLUMNS`. A record that does not decode, a CTI without a time, a CTI
    at the end of time from any topic but ``control_topic``, or an event whose sync time is too
    far from the batch's clock (``skew``; the control topic's end-of-input CTI excepted) is
    ``DEAD`` with the reason. ``clock``: the batch's clock in ms (default: the plan's
    ``current_timestamp()``, a literal Spark writes into each batch's generated code).
    """
    decoded = decode_avro(raw, schema_json, registry)
    record = F.col("record")
    kind = F.coalesce(
        *(F.when(record.getField("kind") == F.lit(name), F.lit(code))
          for code, name in enumerate(KIND_NAMES)),
    )  # fmt: skip
    start_ms = F.unix_millis(record.getField("start"))
    end_ms = F.unix_millis(record.getField("end"))
    sync = sync_time(kind, start_ms, end_ms)
    no_cti_time = (kind == F.lit(CTI)) & start_ms.isNull()
    closing = F.coalesce((kind == F.lit(CTI)) & (start_ms == F.lit(END_OF_TIME)), F.lit(False))
    from_control = F.col("topic") == F.lit(control_topic) if control_topic else F.lit(False)
    reason = (
        F.when(F.col("reason").isNotNull(), F.col("reason"))
        .when(no_cti_time, F.lit("a CTI needs its time in start"))
        .when(closing & ~from_control, F.lit(FOREIGN_END_OF_INPUT))
        .when(~closing, skew_reason(sync, batch_clock_ms() if clock is None else clock, skew))
    )
    events = decoded.select(
        F.when(reason.isNotNull(), F.lit(DEAD)).otherwise(kind).alias("kind"),
        record.getField("key").alias("key"),
        record.getField("id").alias("id"),
        start_ms.alias("start_ms"),
        end_ms.alias("end_ms"),
        record.getField("value").alias("value"),
        sync.alias("sync_ms"),
        "topic",
        "partition",
        "offset",
        F.col("key").alias("record_key"),
        F.col("value").alias("raw"),
        reason.alias("reason"),
        F.unix_millis("timestamp").alias("record_ts"),
        "headers",
    )
    lateness = F.when(F.col("kind") == F.lit(CTI), F.lit(lateness_ms)).otherwise(F.lit(0))
    marked = events.withColumn(
        "mark_ms", F.when(F.col("kind") != F.lit(DEAD), F.col("sync_ms") + lateness)
    )
    return under_watermark(marked, f"{lateness_ms} milliseconds", INPUT_COLUMNS)


def sync_time(kind: Column, start_ms: Column, end_ms: Column) -> Column:
    """When an event starts changing the timeline: ``end`` for an end edge, else ``start``."""
    return F.when(kind == F.lit(END_EDGE), end_ms).otherwise(start_ms)


def under_watermark(events: DataFrame, delay: str, columns: Sequence[str]) -> DataFrame:
    """``columns`` of ``events`` under Spark's watermark ``max(mark_ms) - delay``.

    ``mark_ms`` (epoch ms; null leaves the watermark alone) is what a row tells the watermark.
    The keys see no watermark column: Spark would drop rows behind it before the processor
    could route them.
    """
    watched = events.withColumn("sync_at", F.timestamp_millis("mark_ms"))
    return watched.withWatermark("sync_at", delay).select(*columns)


def apply_temporal(
    events: DataFrame, query: TemporalQuery, buckets: int | None = None
) -> DataFrame:
    """RESULT, LATE, DEAD and PROGRESS rows (:data:`OUTPUT_SCHEMA`) of :func:`temporal_events`."""
    return run_temporal(events, query, KafkaRows(), buckets)


def run_temporal(
    events: DataFrame,
    query: TemporalQuery,
    rows: TemporalRows,
    buckets: int | None = None,
) -> DataFrame:
    """``query`` per key over decoded ``events`` (kind, key, id, start_ms, end_ms, value,
    sync_ms, mark_ms, reason and whatever ``rows`` needs); the rows ``rows`` makes.

    The JVM core runs it (:mod:`trending.spark.temporal_jvm_step`: one grouping key per key)
    whenever it can take the query and ``rows`` has a JVM form; otherwise the Python core does,
    in ``transformWithStateInPandas``, with the keys hashed into ``buckets`` grouping keys
    (:mod:`trending.spark.key_buckets`; by default two per shuffle partition). ``buckets``
    applies to the Python step only. Both give the same rows."""
    close = not events.isStreaming
    if close:
        events.sparkSession.streams  # noqa: B018 (a batch needs the state store coordinator)
    options = rows.jvm_options()
    spec = None if options is None else jvm_query(events.sparkSession, query)
    if spec is not None and options is not None:
        return run_jvm_temporal(events, spec, options | {"close": close})
    if buckets is None:
        buckets = default_buckets(events.sparkSession)
    codec = KeyCodec(events.schema["key"].dataType)
    bucketed = with_bucket(events, "key", buckets)
    return bucketed.groupBy(BUCKET_COLUMN).transformWithStateInPandas(
        statefulProcessor=TemporalProcessor(query, rows, close, codec, buckets),
        outputStructType=rows.schema,
        outputMode="Append",
        timeMode="EventTime",
    )


def encoded_results(rows: DataFrame, schema_json: str, header: bytes = b"") -> DataFrame:
    """``rows`` (:data:`OUTPUT_SCHEMA`) with ``avro``: a RESULT row's value bytes for the output
    topic (``header``, then the row as ``schemas/window_row.avsc`` given as ``schema_json``:
    key, start, end (null: the end of time), value, values), written by Spark's ``to_avro`` on
    the executors; null for the other kinds. The same bytes as the driver's Avro codec."""
    row = F.struct(
        F.col("key"),
        F.timestamp_millis(F.col("start_ms")).alias("start"),
        F.timestamp_millis(F.col("end_ms")).alias("end"),
        F.col("value"),
        F.coalesce(F.col("values"), F.array().cast("array<double>")).alias("values"),
    )
    value = F.concat(F.lit(header), to_avro(row, schema_json))
    return rows.withColumn("avro", F.when(F.col("kind") == F.lit(RESULT), value))


class TemporalRows(Protocol):
    """What a :class:`TemporalProcessor` outputs: results, rejected input, progress."""

    @property
    def schema(self) -> Any:
        """The output schema (DDL text or a ``StructType``)."""
        ...

    @property
    def names(self) -> list[str]:
        """The output column names, in order."""
        ...

    @property
    def order(self) -> list[str]:
        """How a key's input rows of a batch are sorted (after the sync time)."""
        ...

    def result(self, key: Any, row: Row) -> dict[str, Any]:
        """The output of one final row of ``key``."""
        ...

    def rejected(self, kind: int, record: dict[str, Any], reason: str) -> list[dict[str, Any]]:
        """The output of an input row that is ``LATE`` or ``DEAD``."""
        ...

    def progress(self, frame: pd.DataFrame) -> list[dict[str, Any]]:
        """The output that tells the driver about a key's input rows of a batch."""
        ...

    def jvm_options(self) -> dict[str, Any] | None:
        """The same rows as the JVM step makes them (``rows``, ``invalid``, ``schema``), or
        None when only the Python step can."""
        ...


class KafkaRows:
    """The job's rows (:data:`OUTPUT_SCHEMA`): RESULT, and LATE and DEAD with the record's
    origin, and a PROGRESS row per key and batch (the newest mark, the rows' count)."""

    def __init__(self) -> None:
        self.schema = OUTPUT_SCHEMA
        self.names = [part.strip().split(" ")[0].strip("`") for part in OUTPUT_SCHEMA.split(", ")]
        self.order = ["partition", "offset"]  # the sync time puts a start edge before its end

    def result(self, key: Any, row: Row) -> dict[str, Any]:
        return _result(key, row)

    def rejected(self, kind: int, record: dict[str, Any], reason: str) -> list[dict[str, Any]]:
        return [_side(kind, record, reason)]

    def progress(self, frame: pd.DataFrame) -> list[dict[str, Any]]:
        marks = frame["mark_ms"].dropna()
        mark = int(marks.max()) if len(marks) else None
        return [{"kind": PROGRESS, "sync_ms": mark, "events": len(frame)}]

    def jvm_options(self) -> dict[str, Any] | None:
        return {"rows": "kafka", "schema": OUTPUT_SCHEMA}


EVENT_KINDS = {"INTERVAL": INTERVAL, "POINT": INTERVAL, "START_EDGE": START_EDGE,
               "END_EDGE": END_EDGE}  # fmt: skip
"""The kinds :func:`decoded_events` reads; a ``POINT`` at ``t`` is the interval ``[t, t + 1)``."""
EVENT_COLUMNS = ("kind", "key", "id", "start_ms", "end_ms", "value", "sync_ms", "mark_ms", "reason")
Invalid = Literal["fail", "drop"]


class TemporalColumnsError(ValueError):
    """A DataFrame whose columns cannot be read as temporal events (the message says which)."""


def decoded_events(
    df: DataFrame,
    key: str,
    start: str,
    end: str | None,
    kind: str | None,
    id: str | None,
    value: str | None,
    watermark: str,
) -> DataFrame:
    """The events of any DataFrame as :data:`EVENT_COLUMNS`, under Spark's watermark
    ``max(sync time) - watermark``.

    ``kind`` names a column of :data:`EVENT_KINDS` (any case); without it a row with an
    ``end`` is an ``INTERVAL`` and one without a ``POINT``. Times are timestamps or epoch ms.
    A row of another kind is ``DEAD`` and moves no watermark.
    """
    start_ms = _millis(df, start)
    end_ms = _millis(df, end) if end else F.lit(None).cast("long")
    point, interval = F.lit("POINT"), F.lit("INTERVAL")
    name = F.upper(F.col(kind)) if kind else F.when(end_ms.isNull(), point).otherwise(interval)
    code = F.coalesce(*(F.when(name == F.lit(n), F.lit(c)) for n, c in EVENT_KINDS.items()))
    reason = F.when(
        code.isNull(), F.concat(F.lit("unknown kind "), F.coalesce(name, F.lit("null")))
    )
    events = df.select(
        F.when(reason.isNotNull(), F.lit(DEAD)).otherwise(code).alias("kind"),
        F.col(key).alias("key"),
        (F.col(id).cast("string") if id else F.lit(None).cast("string")).alias("id"),
        start_ms.alias("start_ms"),
        F.when(name == point, start_ms + 1).otherwise(end_ms).alias("end_ms"),
        (F.col(value).cast("double") if value else F.lit(None).cast("double")).alias("value"),
        reason.alias("reason"),
    )
    sync = sync_time(F.col("kind"), F.col("start_ms"), F.col("end_ms"))
    marked = events.withColumn("sync_ms", sync).withColumn(
        "mark_ms", F.when(F.col("kind") != F.lit(DEAD), F.col("sync_ms"))
    )
    return under_watermark(marked, watermark, EVENT_COLUMNS)


def _millis(df: DataFrame, column: str) -> Column:
    kind = df.schema[column].dataType
    if isinstance(kind, TimestampType):
        return F.unix_millis(F.col(column))
    if isinstance(kind, IntegralType):
        return F.col(column).cast("long")
    raise TemporalColumnsError(
        f"column {column!r}: a time must be a timestamp or epoch milliseconds (an integer), "
        f"not a {kind.simpleString()}"
    )


class WindowRows:
    """Results only, with the fields of ``schemas/window_row.avsc``: the key (its own type),
    ``start_ms``, ``end_ms`` (null: the end of time), ``value`` (null for top_k) and
    ``values`` (top_k's, largest first; else empty). A LATE row is dropped, as Spark drops
    rows behind its watermark; a DEAD one raises :class:`TemporalInputError`
    (``invalid="fail"``) or is dropped (``"drop"``)."""

    def __init__(self, key_type: DataType, invalid: Invalid = "fail") -> None:
        self.schema = StructType(
            [
                StructField("key", key_type, True),
                StructField("start_ms", LongType(), False),
                StructField("end_ms", LongType(), True),
                StructField("value", DoubleType(), True),
                StructField("values", ArrayType(DoubleType(), False), False),
            ]
        )
        self.names = self.schema.fieldNames()
        self.order = ["kind", "start_ms", "end_ms", "id", "value"]
        self.invalid = invalid

    def result(self, key: Any, row: Row) -> dict[str, Any]:
        out = _result(key, row)
        return {name: out[name] for name in self.names}

    def rejected(self, kind: int, record: dict[str, Any], reason: str) -> list[dict[str, Any]]:
        if kind == DEAD and self.invalid == "fail":
            shown = {name: record[name] for name in ("id", "start_ms", "end_ms", "value")}
            raise TemporalInputError(
                f"key {record['key']!r}: {reason}; the event: {shown} (invalid='drop' drops "
                "such events)"
            )
        return []

    def progress(self, frame: pd.DataFrame) -> list[dict[str, Any]]:
        return []

    def jvm_options(self) -> dict[str, Any] | None:
        return {"rows": "window", "invalid": self.invalid, "schema": self.schema.json()}


class TemporalProcessor(StatefulProcessor):
    """Runs each key's :class:`TemporalQuery` over its stored state (see the module doc), the
    keys of a bucket together (:mod:`trending.spark.key_buckets`); ``close``: the input is a
    batch, all there is, so a CTI at the end of time follows it.

    A bucket has one timer, at ``W + 1`` while any of its keys holds events: when it fires (or
    when the bucket has input) every key of the bucket advances to the batch's CTI ``W``.
    """

    def __init__(
        self,
        query: TemporalQuery,
        rows: TemporalRows | None = None,
        close: bool = False,
        codec: KeyCodec | None = None,
        buckets: int = 1,
    ) -> None:
        self.query = query
        self.rows: TemporalRows = rows or KafkaRows()
        self.close_input = close
        self.codec = codec or KeyCodec(StringType())
        self.buckets = buckets

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.handle = handle
        self.stored = BucketState(handle, "temporal_keys", self.buckets)

    # Spark's names, and Spark passes these arguments by keyword
    def handleInputRows(  # noqa: N802
        self,
        key: Any,
        rows: Iterator[pd.DataFrame],
        timerValues: TimerValues,  # noqa: N803
    ) -> Iterator[pd.DataFrame]:
        cti = _cti(timerValues.getCurrentWatermarkInMs())
        frames = list(rows)
        frame = frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)
        order = ["sync_ms", *self.rows.order]
        frame = frame.sort_values(order, kind="stable", ignore_index=True, na_position="first")
        yield from self._step(frame, cti, None)

    def handleExpiredTimer(  # noqa: N802
        self,
        key: Any,
        timerValues: TimerValues,  # noqa: N803
        expiredTimerInfo: ExpiredTimerInfo,  # noqa: N803
    ) -> Iterator[pd.DataFrame]:
        cti = _cti(timerValues.getCurrentWatermarkInMs())
        yield from self._step(None, cti, expiredTimerInfo.getExpiryTimeInMs())

    def close(self) -> None:
        pass

    def _step(
        self, frame: pd.DataFrame | None, cti: int | None, fired: int | None
    ) -> Iterator[pd.DataFrame]:
        """One micro-batch of a bucket: its keys' input rows (first the CTI, so that input
        behind it shows as a violation), then every other key of the bucket to the CTI."""
        entries = self.stored.load()  # the keys not brought up to date yet
        done: dict[str, str] = {}
        out: list[dict[str, Any]] = []
        end = END_OF_TIME if self.close_input else cti
        if frame is not None:
            out.extend(self.rows.progress(frame))
            keys = [self.codec.normal(value) for value in frame["key"].tolist()]
            by_key: dict[Any, list[dict[str, Any]]] = {}
            for value, record in zip(keys, frame.to_dict("records"), strict=True):
                by_key.setdefault(value, []).append(record)
            for value, records in by_key.items():
                text = self.codec.text(value)
                logic = self._logic(entries.pop(text, None))
                if cti is not None:
                    out.extend(self.rows.result(value, row) for row in logic.advance(cti))
                for record in records:
                    out.extend(self._insert(logic, record, cti))
                out.extend(self._finish(value, text, logic, end, done))
        if end is not None:
            for text, stored in entries.items():
                logic = self._logic(stored)
                out.extend(self._finish(self.codec.value(text), text, logic, end, done))
            entries = {}
        kept = entries | done
        self.stored.save(kept)
        timers_to(self.handle, [max(cti or 0, 0) + 1] if kept else [], fired)
        if out:
            empty = dict.fromkeys(self.rows.names)  # a missing value is null, not NaN
            yield pd.DataFrame([empty | row for row in out], columns=self.rows.names)

    def _logic(self, stored: str | None) -> TemporalLogic:
        if stored is None:
            return self.query.build()
        return self.query.build(self.query.restore(json.loads(stored)))

    def _insert(
        self, logic: TemporalLogic, record: dict[str, Any], cti: int | None
    ) -> list[dict[str, Any]]:
        """Insert one input row; the side rows it makes (none when it goes in)."""
        kind = int(record["kind"])
        if kind == CTI:
            return []
        if kind == DEAD:
            return self.rows.rejected(DEAD, record, str(record["reason"]))
        sync = _int(record["sync_ms"])
        adjust = self.query.violation is ViolationPolicy.ADJUST
        if cti is not None and sync is not None and sync < cti and not adjust:
            reason = f"late: sync time {sync} is behind the watermark {cti}"
            return self.rows.rejected(LATE, record, reason)
        try:
            logic.insert(_item(kind, record))
        except (TemporalInputError, CtiViolation) as error:
            return self.rows.rejected(DEAD, record, str(error))
        return []

    def _finish(
        self, key: Any, text: str, logic: TemporalLogic, cti: int | None, done: dict[str, str]
    ) -> list[dict[str, Any]]:
        """The key's rows up to ``cti``; its state into ``done`` unless it holds no event."""
        out = []
        if cti is not None:
            out = [self.rows.result(key, row) for row in logic.advance(cti)]
        if not logic.state.is_idle():
            done[text] = json.dumps(logic.state.to_json(), separators=(",", ":"))
        return out


def _cti(watermark_ms: int) -> int | None:
    """The CTI of a batch: Spark's watermark, None before it first moves (it starts at 0)."""
    return watermark_ms if watermark_ms > 0 else None


def _int(value: Any) -> int | None:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else int(value)


def _item(kind: int, record: dict[str, Any]) -> Item:
    """The core's event for an input row; :class:`TemporalInputError` when it lacks a field."""
    start, end, id = _int(record["start_ms"]), _int(record["end_ms"]), record["id"]
    value = None if record["value"] is None or pd.isna(record["value"]) else record["value"]
    if value is not None and not math.isfinite(value):
        raise TemporalInputError(f"value {value} is not a finite number")
    if kind == END_EDGE:
        if id is None or end is None:
            raise TemporalInputError("an END_EDGE needs its id and end")
        return EndEdge(id, end)
    if start is None:
        raise TemporalInputError(f"an {KIND_NAMES[kind]} needs its start")
    if kind == START_EDGE:
        return StartEdge(start, value, id)
    if end is None:
        raise TemporalInputError("an INTERVAL needs its end (or send a START_EDGE)")
    return IntervalEvent(start, end, value, id)


def _result(key: str | None, row: Row) -> dict[str, Any]:
    values = row.value if isinstance(row.value, list) else []
    value = None if isinstance(row.value, list) or row.value is None else float(row.value)
    end = None if row.end == END_OF_TIME else row.end
    return {"kind": RESULT, "key": key, "start_ms": row.start, "end_ms": end, "value": value,
            "values": [float(v) for v in values]}  # fmt: skip


def _side(kind: int, record: dict[str, Any], reason: str) -> dict[str, Any]:
    """A LATE or DEAD row: the record's own topic, partition, offset, timestamp, headers, key
    and bytes."""
    names = ("key", "sync_ms", "topic", "partition", "offset", "record_key", "raw")
    copied = {name: record[name] for name in names}
    origin = {"record_ts": _int(record["record_ts"]), "headers": _headers(record["headers"])}
    return {"kind": kind, **copied, "reason": reason, **origin}


def _headers(value: Any) -> list[dict[str, Any]] | None:
    """Kafka headers as pandas holds them (an array of dicts, or None) as a list for Arrow."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return [{"key": h["key"], "value": h["value"]} for h in value]
