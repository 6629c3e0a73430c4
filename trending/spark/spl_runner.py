"""Run an SPL window per key on a streaming DataFrame, inside ``transformWithStateInPandas``.

::

    configure_spark(spark)                      # RocksDB state store + no-data batches
    events = apply_window(df, {"kind": "sliding", "evict": {"count": 3},
                               "trigger": {"count": 1}}, key="user", order_by="id")

Each key (``key`` column, or the spec's ``partition_by``) gets its own window from the pure
core (:mod:`trending.windows.spl`), run by :mod:`trending.windows.spl.keyed`. Its snapshot,
event counter and pending timer live in one ``ValueState`` row per key, in Spark's
checkpointed state store, so a query restarted on the same checkpoint continues the windows.
Time policies fire from one Spark timer per key at the next instant the window needs:

* ``time_mode="processing"``: clock = processing time; timers fire on an idle stream, in the
  no-data micro-batches Spark runs while a timer is pending (hence the conf below).
* ``time_mode="event"``: clock = ``time_column`` (timestamp or epoch ms) per row; the runner
  calls ``withWatermark(time_column, watermark)``, and a timer fires once the watermark passes
  it. Spark moves the watermark only when new rows (any key) arrive, so on a fully idle stream
  an event-time window stays open until the next row; use processing time to close idle ones.
* ``time_mode="none"``: count and delta policies only.

Spark may hand a key's rows of one batch in any order; ``order_by`` (and the event time)
sorts them before they go in. The output is one row per window event: the key column, then
``event`` (kind), ``seq`` (per-key event number), ``tuples`` (JSON array of the tuples, each
tuple being the input row's columns as a JSON object, timestamps as epoch ms), ``time_ms``
(window clock) and ``summary`` (JSON, tumbling summarizers), or the rows a user function
makes of each event (``output=fn`` with ``output_schema``).

A spec with ``partition_eviction`` runs whole (:func:`trending.windows.spl.keyed.runs_whole`):
every row goes to one Spark grouping key that holds the whole partitioned window, each row into
the partition of its ``key`` column, so LRU, partition count and tuple count compare all
partitions as in the core. Its state is one ``ValueState`` row (clock, counters, timer, the
partitions' order) plus one ``MapState`` row per live partition; evicting a partition removes
its row, so the state rows Spark reports (``numRowsTotal``) stay bounded by the limit. Such a
query runs on one task (one key), and ``seq`` numbers all events of the window in the order
they fired. Give ``order_by`` so rows of a batch go in a deterministic order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

import pandas as pd
from pyspark.sql.streaming.stateful_processor import (
    ExpiredTimerInfo,
    StatefulProcessor,
    StatefulProcessorHandle,
    TimerValues,
)
from pyspark.sql.types import (
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from trending.windows.spl.events import WindowEvent
from trending.windows.spl.keyed import (
    KeyState,
    Step,
    TimeMode,
    check_keyed,
    event_row,
    join_snapshot,
    on_partitioned_rows,
    on_rows,
    on_timer,
    plain_value,
    runs_whole,
    split_snapshot,
    to_record,
)
from trending.windows.spl.spec import SpecError, WindowSpec, parse_spec

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

EventMapper: TypeAlias = Callable[[Any, WindowEvent], Iterable[Mapping[str, Any]]]
"""``fn(key, event)`` -> output rows (mappings from ``output_schema`` field names)."""

PROVIDER_CONF = "spark.sql.streaming.stateStore.providerClass"
ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
NO_DATA_CONF = "spark.sql.streaming.noDataMicroBatches.enabled"
TIME_COLUMN = "spl_runner_time_ms"
TIME_STAMP_COLUMN = "spl_runner_time"
GROUP_COLUMN = "spl_runner_window"
PARTITION_KEY_SCHEMA = StructType([StructField("partition", StringType(), False)])
PARTITION_SCHEMA = StructType([StructField("state", StringType(), False)])
STATE_SCHEMA = StructType(
    [
        StructField("snapshot", StringType(), True),
        StructField("emitted", LongType(), True),
        StructField("timer_ms", LongType(), True),
    ]
)
_SPARK_TIME_MODES = {"none": "None", "event": "EventTime", "processing": "ProcessingTime"}


class SplRunnerError(RuntimeError):
    """The session or the DataFrame cannot run an SPL window (the message says what to do)."""


def configure_spark(spark: SparkSession) -> None:
    """Set what the runner needs on ``spark``, before the query starts.

    * ``spark.sql.streaming.stateStore.providerClass`` = RocksDB (``transformWithState`` runs
      only on it); a restarted query keeps the provider its checkpoint was written with.
    * ``spark.sql.streaming.noDataMicroBatches.enabled`` = true, so timers fire on an idle
      stream (:func:`trending.spark.session.build_session` turns it off for the other jobs).

    Both are session-wide: other queries of the session get them too.
    """
    spark.conf.set(PROVIDER_CONF, ROCKSDB_PROVIDER)
    spark.conf.set(NO_DATA_CONF, "true")


def check_spark(spark: SparkSession, time_mode: str) -> None:
    """Raise :class:`SplRunnerError` unless :func:`configure_spark` (or equal) was applied."""
    provider = spark.conf.get(PROVIDER_CONF, None)
    if provider != ROCKSDB_PROVIDER:
        raise SplRunnerError(
            f"{PROVIDER_CONF} is {provider!r}; transformWithStateInPandas needs "
            f"{ROCKSDB_PROVIDER}. Call trending.spark.spl_runner.configure_spark(spark) "
            "(or set it in the session conf) before starting the query."
        )
    no_data = str(spark.conf.get(NO_DATA_CONF, "true")).lower()
    if time_mode != "none" and no_data != "true":
        raise SplRunnerError(
            f"{NO_DATA_CONF} is false, so timers would fire only when new rows arrive and "
            "windows would not close on an idle stream. Call configure_spark(spark) first."
        )


def apply_window(
    df: DataFrame,
    spec: Mapping[str, Any] | WindowSpec,
    key: str | None = None,
    time_column: str | None = None,
    time_mode: TimeMode = "none",
    output: str | EventMapper = "events",
    output_schema: StructType | str | None = None,
    order_by: str | Sequence[str] | None = None,
    watermark: str | None = None,
    kinds: Iterable[str] | None = None,
) -> DataFrame:
    """The window events of ``spec`` run per ``key`` over streaming ``df`` (see module doc).

    ``key`` defaults to the spec's ``partition_by``. ``kinds`` keeps only those event kinds
    (e.g. ``["trigger"]``); the per-key ``seq`` still counts every event. Event time needs
    ``time_column`` and ``watermark`` (a delay such as ``"10 seconds"``).
    """
    window = spec if isinstance(spec, WindowSpec) else parse_spec(spec)
    check_keyed(window, time_mode)
    key = _key_column(window, key)
    check_spark(df.sparkSession, time_mode)
    fields = {f.name: f for f in df.schema.fields}
    for column in [key, *_names(order_by), *([time_column] if time_column else [])]:
        if column not in fields:
            raise SplRunnerError(f"no column {column!r} in the DataFrame: {sorted(fields)}")
    if {TIME_COLUMN, TIME_STAMP_COLUMN, GROUP_COLUMN} & set(fields):
        raise SplRunnerError(
            f"{TIME_COLUMN}, {TIME_STAMP_COLUMN} and {GROUP_COLUMN} are the runner's columns"
        )
    record_columns = list(fields)
    if time_mode == "event":
        df = _with_event_time(df, time_column, watermark)
    whole = runs_whole(window)
    if whole:
        from pyspark.sql import functions as F

        df = df.withColumn(GROUP_COLUMN, F.lit(0))
    schema = _output_schema(fields[key], output, output_schema)
    processor = SplProcessor(
        window,
        key,
        time_mode,
        record_columns,
        list(df.columns),
        _names(order_by),
        output if callable(output) else None,
        None if kinds is None else frozenset(kinds),
        whole,
    )
    return df.groupBy(GROUP_COLUMN if whole else key).transformWithStateInPandas(
        statefulProcessor=processor,
        outputStructType=schema,
        outputMode="Append",
        timeMode=_SPARK_TIME_MODES[time_mode],
    )


class SplProcessor(StatefulProcessor):
    """The Spark side: moves each key's :class:`KeyState` and timer in and out of Spark."""

    def __init__(
        self,
        spec: WindowSpec,
        key_column: str,
        time_mode: TimeMode,
        record_columns: list[str],
        input_columns: list[str],
        order_by: list[str],
        mapper: EventMapper | None,
        kinds: frozenset[str] | None,
        whole: bool = False,
    ) -> None:
        self.spec, self.key_column, self.time_mode = spec, key_column, time_mode
        self.record_columns, self.input_columns = record_columns, input_columns
        self.order_by = order_by
        self.mapper, self.kinds = mapper, kinds
        self.whole = whole
        self.stored: dict[str, str] = {}  # whole window: the partition rows as loaded

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.handle = handle
        if self.whole:
            self.state = handle.getValueState("spl_window_meta", STATE_SCHEMA)
            self.parts = handle.getMapState(
                "spl_partitions", PARTITION_KEY_SCHEMA, PARTITION_SCHEMA
            )
        else:
            self.state = handle.getValueState("spl_window", STATE_SCHEMA)

    # Spark's names, and Spark passes these arguments by keyword
    def handleInputRows(  # noqa: N802
        self,
        key: Any,
        rows: Iterator[pd.DataFrame],
        timerValues: TimerValues,  # noqa: N803
    ) -> Iterator[pd.DataFrame]:
        key_value = plain_value(key[0])
        frame = pd.concat(list(rows), ignore_index=True)
        frame.columns = self.input_columns  # Spark renames some (those starting with "__")
        sort = ([TIME_COLUMN] if self.time_mode == "event" else []) + self.order_by
        if sort:
            frame = frame.sort_values(sort, kind="stable", ignore_index=True)
        records = [to_record(r) for r in frame[self.record_columns].to_dict("records")]
        times: list[int | None] = (
            [int(t) for t in frame[TIME_COLUMN]]
            if self.time_mode == "event"
            else [None] * len(records)
        )
        clock = timerValues.getCurrentProcessingTimeInMs()
        now = clock if self.time_mode == "processing" else None
        if self.whole:
            keys = [record[self.key_column] for record in records]
            rows = zip(times, keys, records, strict=True)
            step = on_partitioned_rows(self.spec, self._load(), rows, now)
        else:
            pairs = zip(times, records, strict=True)
            step = on_rows(self.spec, key_value, self._load(), pairs, now)
        yield from self._commit(key_value, step)

    def handleExpiredTimer(  # noqa: N802
        self,
        key: Any,
        timerValues: TimerValues,  # noqa: N803
        expiredTimerInfo: ExpiredTimerInfo,  # noqa: N803
    ) -> Iterator[pd.DataFrame]:
        key_value = plain_value(key[0])
        if self.time_mode == "event":
            now = timerValues.getCurrentWatermarkInMs()
        else:
            now = timerValues.getCurrentProcessingTimeInMs()
        fired = expiredTimerInfo.getExpiryTimeInMs()
        step = on_timer(self.spec, self._load(), fired, now)
        step.delete_timer = None  # Spark has already removed the fired timer
        yield from self._commit(key_value, step)

    def close(self) -> None:
        pass

    def _load(self) -> KeyState:
        state = KeyState.from_row(self.state.get() if self.state.exists() else None)
        if not self.whole or state.snapshot is None:
            return state
        self.stored = {k[0]: v[0] for k, v in self.parts.iterator()} if self.parts.exists() else {}
        return KeyState(join_snapshot(state.snapshot, self.stored), state.emitted, state.timer_ms)

    def _save(self, state: KeyState) -> None:
        if not self.whole or state.snapshot is None:
            self.state.update(state.to_row())
            return
        meta, parts = split_snapshot(state.snapshot)
        self.state.update(KeyState(meta, state.emitted, state.timer_ms).to_row())
        for pid, text in parts.items():
            if self.stored.get(pid) != text:
                self.parts.updateValue((pid,), (text,))
        for pid in self.stored.keys() - parts.keys():  # evicted (or flushed) partitions
            self.parts.removeKey((pid,))
        self.stored = parts

    def _commit(self, key: Any, step: Step) -> Iterator[pd.DataFrame]:
        self._save(step.state)
        if step.delete_timer is not None:
            self.handle.deleteTimer(step.delete_timer)
        if step.register_timer is not None:
            self.handle.registerTimer(step.register_timer)
        first = step.state.emitted - len(step.events)
        rows: list[Mapping[str, Any]] = []
        for seq, event in enumerate(step.events, start=first):
            if self.kinds is not None and event.kind.value not in self.kinds:
                continue
            where = event.partition if self.whole else key
            rows.extend(
                self.mapper(where, event)
                if self.mapper
                else [event_row(where, event, seq, self.key_column)]
            )
        if rows:
            yield pd.DataFrame(rows)


def _key_column(spec: WindowSpec, key: str | None) -> str:
    if key is None and spec.partition_by is None:
        raise SpecError("key: give the key column (or partition_by in the spec)")
    if key is not None and spec.partition_by not in (None, key):
        raise SpecError(f"key {key!r} differs from the spec's partition_by {spec.partition_by!r}")
    return key if key is not None else str(spec.partition_by)


def _with_event_time(df: DataFrame, time_column: str | None, watermark: str | None) -> DataFrame:
    from pyspark.sql import functions as F

    if time_column is None or watermark is None:
        raise SplRunnerError("time_mode='event' needs time_column and watermark (e.g. '10 s')")
    kind = df.schema[time_column].dataType
    if isinstance(kind, TimestampType | TimestampNTZType):
        df = df.withWatermark(time_column, watermark)
        return df.withColumn(TIME_COLUMN, F.unix_millis(F.col(time_column).cast("timestamp")))
    # epoch milliseconds: the watermark needs a timestamp column beside them
    df = df.withColumn(TIME_COLUMN, F.col(time_column).cast("long"))
    df = df.withColumn(TIME_STAMP_COLUMN, F.timestamp_millis(F.col(TIME_COLUMN)))
    return df.withWatermark(TIME_STAMP_COLUMN, watermark)


def _output_schema(
    key_field: StructField, output: str | EventMapper, schema: StructType | str | None
) -> StructType | str:
    if callable(output):
        if schema is None:
            raise SplRunnerError("output=fn needs output_schema (the rows fn returns)")
        return schema
    if output != "events":
        raise SplRunnerError(f"output: must be 'events' or a function, got {output!r}")
    return StructType(
        [
            StructField(key_field.name, key_field.dataType, True),
            StructField("event", StringType(), False),
            StructField("seq", LongType(), False),
            StructField("tuples", StringType(), False),
            StructField("time_ms", LongType(), False),
            StructField("summary", StringType(), True),
        ]
    )


def _names(columns: str | Sequence[str] | None) -> list[str]:
    if columns is None:
        return []
    return [columns] if isinstance(columns, str) else list(columns)
