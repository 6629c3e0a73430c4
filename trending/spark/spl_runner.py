"""Run an SPL window per key on a streaming DataFrame: typed output on the JVM core in Spark's
``transformWithState`` where it can, else the Python core inside ``transformWithStateInPandas``.

::

    configure_spark(spark)                      # RocksDB state store + no-data batches
    events = apply_window(df, {"kind": "sliding", "evict": {"count": 3},
                               "trigger": {"count": 1}}, key="user", order_by="id")

``output="typed"`` (:func:`trending.library.spl_window`) runs on the JVM core
(:mod:`trending.spark.spl_jvm_step`: ``trending.spl.SplWindowStep`` in the project's jar) when
:func:`runs_on_jvm` holds: a spec without custom summarizers or an operator's partition
selector, on a classic Spark 4.1+ session, unless ``spark.trending.spl.engine=python``. There
each key is a grouping key of its own whose state is one value (event count, timer, the window
as bytes) and whose timer is Spark's, and no Python worker runs; ``buckets`` does not apply.
The rows are the same as below, event for event. The rest of this docstring is the Python
path, which runs everything else (JSON output, ``output=fn``, specs the JVM core cannot read).

Each key (``key`` column, or the spec's ``partition_by``) gets its own window from the pure
core (:mod:`trending.windows.spl`), run by :class:`trending.windows.spl.stored.StoredWindow`
over the key's rows in Spark's checkpointed state store, so a query restarted on the same
checkpoint continues the windows. Keys are hashed into ``buckets`` grouping keys
(:class:`BucketedSplProcessor`, :mod:`trending.spark.key_buckets`): a bucket's windows are
read with one state call and written with one per micro-batch that touches it, each window
one text; a window larger than :data:`SPILL_BYTES` is a row of its own, read and written only
when its key has rows or a timer. A whole window (partition eviction, below) is one grouping
key whose window is read and written whole (a row per stored record) once per micro-batch:
its size is bounded by its partition eviction policy.
Time policies fire from Spark timers at the next instant each window needs:

* ``time_mode="processing"``: clock = processing time; timers fire on an idle stream, in the
  no-data micro-batches Spark runs while a timer is pending (hence the conf below).
* ``time_mode="event"``: clock = ``time_column`` (timestamp or epoch ms) per row; the runner
  calls ``withWatermark(time_column, watermark)``, and a timer fires once the watermark passes
  it. Spark moves the watermark only when new rows (any key) arrive, so on a fully idle stream
  an event-time window stays open until the next row; use processing time to close idle ones.
* ``time_mode="none"``: count and delta policies only.

Spark may hand a key's rows of one batch in any order; ``order_by`` (and the event time)
sorts them before they go in. The output is one row per window event: the key column, then
``event`` (kind), ``seq`` (per-key event number), ``tuples`` (JSON array of tuples, each the
input row's columns as a JSON object, timestamps as epoch ms), ``time_ms`` (window clock),
``summary`` (JSON, tumbling summarizers) and ``size`` (how many tuples the event concerns: the
window's size for a trigger). ``tuples`` holds the tuples going in or out: the inserted one
(``before_insert``, ``after_insert``), the evicted one (``before_evict``, ``after_evict``),
the flushed window (``before_flush``), the evicted partition (``partition_select``,
``partition_evict``): a tuple is output when it goes in and when it goes out. ``trigger`` and
``initial_full`` leave the window that stays out (``tuples`` is null) unless
``include_window=True``; the window is the tuples inserted and not yet evicted, which the
rows before it (in ``seq`` order) tell. Or ``output=fn`` with ``output_schema`` makes the
rows of each event (``fn(key, event)``; reading ``event.tuples`` loads them).

``output="typed"`` (:class:`TypedEvents`, behind :func:`trending.library.spl_window`) makes the
same rows typed: ``tuples`` an ``array<struct<...>>`` of the input's own columns and types,
``summary`` a struct of the spec's summaries, and no ``summary`` column for a window without
summaries. Timestamps go into the window (and its JSON) as epoch milliseconds computed by Spark,
so they do not depend on the session time zone; typed output turns them back into timestamps.

On a batch DataFrame the runner runs once over all rows: events fired by rows only (no timer
fires in a batch query, so a time window still open at the end emits nothing more), without
any setting of the session (the batch state store needs neither RocksDB nor a checkpoint).

A spec with ``partition_eviction`` runs whole (:func:`trending.windows.spl.keyed.runs_whole`):
every row goes to one Spark grouping key that holds the whole partitioned window, each row into
the partition of its ``key`` column, so LRU, partition count and tuple count compare all
partitions as in the core. A batch loads only the partitions its rows name (all of them when
the spec has a time policy or an operator's selector), finds the least recently used partition
from the stored LRU order in O(1) amortized reads, and removes an evicted partition's rows, so
the state stays as bounded as the window. Such a query runs on one task (one key), and ``seq``
numbers all events of the window in the order they fired. Give ``order_by`` so rows of a batch
go in a deterministic order.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from decimal import Decimal
from functools import partial
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

import pandas as pd
from pyspark.sql.streaming.stateful_processor import (
    ExpiredTimerInfo,
    StatefulProcessor,
    StatefulProcessorHandle,
    TimerValues,
)
from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FractionalType,
    IntegralType,
    LongType,
    NullType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from trending.spark.key_buckets import (
    BUCKET_COLUMN,
    BucketState,
    KeyCodec,
    default_buckets,
    timers_to,
    with_bucket,
)
from trending.spark.project_classes import project_classes_usable
from trending.spark.session import NO_DATA_CONF, PROVIDER_CONF, ROCKSDB_PROVIDER
from trending.spark.spl_jvm_step import jvm_spec, jvm_usable, run_jvm_window
from trending.windows.spl.events import PartitionKey, Record, WindowEvent
from trending.windows.spl.keyed import (
    WINDOW_EVENTS,
    Step,
    TimeMode,
    check_keyed,
    event_row,
    plain_value,
    runs_whole,
    to_record,
)
from trending.windows.spl.spec import SpecError, WindowSpec, parse_spec
from trending.windows.spl.stored import StoredWindow, TextStore
from trending.windows.spl.summarizers import Count, Max, Mean, Min, Sum, Summarizer, TopK
from trending.windows.spl.tumbling import TumblingWindow

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

EventMapper: TypeAlias = Callable[[Any, WindowEvent], Iterable[Mapping[str, Any]]]
"""``fn(key, event)`` -> output rows (mappings from ``output_schema`` field names)."""
RowMaker: TypeAlias = Callable[[Any, WindowEvent, int], Mapping[str, Any]]
"""``fn(key, event, seq)`` -> the output row of one event (``"events"`` and ``"typed"``)."""
Row: TypeAlias = tuple[int | None, PartitionKey, Record]
Engine: TypeAlias = Literal["auto", "python", "jvm"]
"""Which core :func:`apply_window` runs a typed window on (see :func:`runs_on_jvm`)."""

TIME_COLUMN = "spl_runner_time_ms"
TIME_STAMP_COLUMN = "spl_runner_time"
GROUP_COLUMN = "spl_runner_window"
MS_PREFIX = "spl_runner_ms_"  # a timestamp column as epoch ms, computed by Spark
TEXT_SCHEMA = StructType([StructField("json", StringType(), False)])
PART_KEY_SCHEMA = StructType([StructField("pid", StringType(), False)])
SEGMENT_KEY_SCHEMA = StructType(
    [StructField("pid", StringType(), False), StructField("start", LongType(), False)]
)
ORDER_KEY_SCHEMA = StructType([StructField("position", LongType(), False)])
ORDER_SCHEMA = StructType(
    [StructField("pid", StringType(), False), StructField("last_ms", LongType(), False)]
)
SPILL_BYTES = 16_384
"""A key's window longer than this (as text) is kept in a row of its own
(:class:`BucketedSplProcessor`)."""
SPILLED = "*"  # a bucket row's value for a window kept in its own row (no window's text is so)
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
            f"{ROCKSDB_PROVIDER}. Set it in the session conf (SparkSession.builder"
            f'.config("{PROVIDER_CONF}", "{ROCKSDB_PROVIDER}")) or call '
            "trending.spark.spl_runner.configure_spark(spark) before starting the query."
        )
    no_data = str(spark.conf.get(NO_DATA_CONF, "true")).lower()
    if time_mode != "none" and no_data != "true":
        raise SplRunnerError(
            f"{NO_DATA_CONF} is false, so timers would fire only when new rows arrive and "
            "windows would not close on an idle stream. Set it to true (or call "
            "trending.spark.spl_runner.configure_spark(spark)) first."
        )


def prepare_session(df: DataFrame, time_mode: str) -> None:
    """Check the session of a streaming ``df`` (:func:`check_spark`); ready the one of a batch.

    A batch ``transformWithStateInPandas`` keeps its state in a state store too, whose
    coordinator Spark starts with the session's streaming query manager: a session that has not
    run a streaming query yet fails the batch with "Cannot find endpoint: StateStoreCoordinator"
    unless the manager is touched first.
    """
    if df.isStreaming:
        check_spark(df.sparkSession, time_mode)
    else:
        df.sparkSession.streams  # noqa: B018 (starts the state store coordinator)


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
    include_window: bool = False,
    buckets: int | None = None,
    engine: Engine = "auto",
) -> DataFrame:
    """The window events of ``spec`` run per ``key`` over ``df`` (see module doc).

    ``key`` defaults to the spec's ``partition_by``. ``kinds`` keeps only those event kinds
    (e.g. ``["trigger"]``); the per-key ``seq`` still counts every event. Event time needs
    ``time_column`` and ``watermark`` (a delay such as ``"10 seconds"``). ``include_window``
    puts the window content in ``tuples`` of ``trigger`` and ``initial_full`` rows too.
    ``output``: ``"events"`` (tuples and summary as JSON text), ``"typed"``
    (:class:`TypedEvents`) or a function (with ``output_schema``). ``buckets``: how many
    grouping keys hold the keys' windows (:mod:`trending.spark.key_buckets`; by default two
    per shuffle partition; fixed for a checkpoint's lifetime; the Python core only).
    ``engine``: ``"auto"`` runs typed output on the JVM core when it can (:func:`runs_on_jvm`),
    ``"python"`` always on the Python core, ``"jvm"`` on the JVM core (whatever
    ``spark.trending.spl.engine`` says) or fails.
    """
    window = spec if isinstance(spec, WindowSpec) else parse_spec(spec)
    check_keyed(window, time_mode)
    key = _key_column(window, key)
    prepare_session(df, time_mode)
    fields = {f.name: f for f in df.schema.fields}
    for column in [key, *_names(order_by), *([time_column] if time_column else [])]:
        if column not in fields:
            raise SplRunnerError(f"no column {column!r} in the DataFrame: {sorted(fields)}")
    if {TIME_COLUMN, TIME_STAMP_COLUMN, GROUP_COLUMN, BUCKET_COLUMN} & set(fields) or any(
        name.startswith(MS_PREFIX) for name in fields
    ):
        raise SplRunnerError(
            f"{TIME_COLUMN}, {TIME_STAMP_COLUMN}, {GROUP_COLUMN}, {BUCKET_COLUMN} and "
            f"{MS_PREFIX}* are the "
            "runner's columns"
        )
    record_columns = list(fields)
    schema, rows = _output(window, fields, key, output, output_schema, include_window)
    if time_mode == "event":
        df = _with_event_time(df, time_column, watermark)
    spec_json = _jvm_engine(df, window, output, engine)
    if spec_json is not None:
        assert isinstance(schema, StructType)
        return run_jvm_window(
            df,
            spec_json,
            key,
            record_columns,
            schema,
            _names(order_by),
            time_mode,
            TIME_COLUMN if time_mode == "event" else None,
            runs_whole(window),
            include_window,
            kinds,
        )
    df, sources = _with_millis(df, fields.values())
    whole = runs_whole(window)
    if whole:
        from pyspark.sql import functions as F

        df = df.withColumn(GROUP_COLUMN, F.lit(0))
    else:
        buckets = default_buckets(df.sparkSession) if buckets is None else buckets
        df = with_bucket(df, sources.get(key, key), buckets)
    kind = BucketedSplProcessor if not whole else SplProcessor
    processor = kind(
        window,
        key,
        time_mode,
        record_columns,
        list(df.columns),
        _names(order_by),
        output if callable(output) else None,
        None if kinds is None else frozenset(kinds),
        whole,
        rows=rows,
        sources=sources,
    )
    if isinstance(processor, BucketedSplProcessor):
        assert buckets is not None
        processor.buckets = buckets
        processor.codec = KeyCodec(df.schema[sources.get(key, key)].dataType)
    return df.groupBy(GROUP_COLUMN if whole else BUCKET_COLUMN).transformWithStateInPandas(
        statefulProcessor=processor,
        outputStructType=schema,
        outputMode="Append",
        timeMode=_SPARK_TIME_MODES[time_mode],
    )


def runs_on_jvm(df: DataFrame, spec: WindowSpec, output: str | EventMapper = "typed") -> bool:
    """Whether :func:`apply_window` runs ``spec`` over ``df`` on the JVM core: typed output, a
    spec the JVM core reads (no custom summarizer, no operator's selector:
    :func:`~trending.spark.spl_jvm_step.jvm_spec`), a session that loads the project's classes
    (classic Spark 4.1 or newer) and does not set ``spark.trending.spl.engine=python``."""
    return _jvm_engine(df, spec, output, "auto") is not None


def _jvm_engine(
    df: DataFrame, spec: WindowSpec, output: str | EventMapper, engine: Engine
) -> str | None:
    """The spec's JVM JSON when ``engine`` runs it on the JVM core, else None."""
    if engine not in ("auto", "python", "jvm"):
        raise SplRunnerError(f"engine: must be 'auto', 'python' or 'jvm', got {engine!r}")
    if engine == "python":
        return None
    spec_json = jvm_spec(spec)
    usable = output == "typed" and spec_json is not None
    if engine == "auto":
        usable = usable and jvm_usable(df.sparkSession)
    else:
        usable = usable and project_classes_usable(df.sparkSession)
    if engine == "jvm" and not usable:
        raise SplRunnerError(
            "engine='jvm' needs output='typed', a spec without custom summarizers or an "
            "operator's partition selector, and a classic Spark 4.1+ session"
        )
    return spec_json if usable else None


class SplProcessor(StatefulProcessor):
    """The Spark side: runs each key's :class:`StoredWindow` over its state and timer."""

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
        include_window: bool = False,
        rows: RowMaker | None = None,
        sources: Mapping[str, str] | None = None,
    ) -> None:
        self.spec, self.key_column, self.time_mode = spec, key_column, time_mode
        self.record_columns, self.input_columns = record_columns, input_columns
        self.order_by = order_by
        self.mapper, self.kinds = mapper, kinds
        self.whole = whole
        self.rows = rows or JsonEvents(key_column, include_window)
        self.sources = dict(sources or {})  # a column -> where its epoch ms are (timestamps)

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.handle = handle
        self.state = BucketState(handle, "spl_whole", 1)
        self.store = TextStore()

    # Spark's names, and Spark passes these arguments by keyword
    def handleInputRows(  # noqa: N802
        self,
        key: Any,
        rows: Iterator[pd.DataFrame],
        timerValues: TimerValues,  # noqa: N803
    ) -> Iterator[pd.DataFrame]:
        key_value = plain_value(key[0])
        clock = timerValues.getCurrentProcessingTimeInMs()
        now = clock if self.time_mode == "processing" else None
        self.store.rows = self.state.load()
        window = StoredWindow(self.spec, self.store, self.whole)
        step = window.rows(self._inputs(key_value, rows), now)
        yield from self._commit(key_value, window, step)

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
        self.store.rows = self.state.load()
        window = StoredWindow(self.spec, self.store, self.whole)
        step = window.timer(fired, now, () if self.whole else [key_value])
        step.delete_timer = None  # Spark has already removed the fired timer
        yield from self._commit(key_value, window, step)

    def close(self) -> None:
        pass

    def _inputs(self, key: Any, rows: Iterator[pd.DataFrame]) -> list[Row]:
        """A key's rows as ``(event time, partition, tuple)``, sorted (see the module doc)."""
        return self._rows_of(self._frame(rows), key)

    def _frame(self, rows: Iterator[pd.DataFrame]) -> pd.DataFrame:
        """A grouping key's rows in one frame, sorted (see the module doc)."""
        frames = list(rows)
        frame = frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)
        frame.columns = self.input_columns  # Spark renames some (those starting with "__")
        order = [self.sources.get(name, name) for name in self.order_by]
        sort = ([TIME_COLUMN] if self.time_mode == "event" else []) + order
        if sort:
            frame = frame.sort_values(sort, kind="stable", ignore_index=True)
        return frame

    def _rows_of(self, frame: pd.DataFrame, key: Any) -> list[Row]:
        """``frame``'s rows as ``(event time, partition, tuple)``; the partition is ``key``
        (the record's key column for a whole window)."""
        values = zip(*(self._column(frame, name) for name in self.record_columns), strict=True)
        records = [to_record(dict(zip(self.record_columns, v, strict=True))) for v in values]
        times: list[int | None] = [None] * len(records)
        if self.time_mode == "event":
            times = [int(t) for t in frame[TIME_COLUMN]]
        if self.whole:
            return list(zip(times, [r[self.key_column] for r in records], records, strict=True))
        return [(time_ms, key, record) for time_ms, record in zip(times, records, strict=True)]

    def _column(self, frame: pd.DataFrame, name: str) -> list[Any]:
        """A record column's values; a timestamp's as epoch ms (pandas has nulls make them
        floats)."""
        if name not in self.sources:
            return list(frame[name].tolist())
        return [None if pd.isna(v) else int(v) for v in frame[self.sources[name]].tolist()]

    def _commit(self, key: Any, window: StoredWindow, step: Step) -> Iterator[pd.DataFrame]:
        rows = self._rows(key, step)  # reads the stored tuples they show, before the save
        window.save()
        self.state.save(self.store.rows)
        if step.delete_timer is not None:
            self.handle.deleteTimer(step.delete_timer)
        if step.register_timer is not None:
            self.handle.registerTimer(step.register_timer)
        if rows:
            yield pd.DataFrame(rows)

    def _rows(self, key: Any, step: Step) -> list[Mapping[str, Any]]:
        first = step.state.emitted - len(step.events)
        rows: list[Mapping[str, Any]] = []
        for seq, event in enumerate(step.events, start=first):
            if self.kinds is not None and event.kind.value not in self.kinds:
                continue
            where = event.partition if self.whole else key
            if self.mapper:
                rows.extend(self.mapper(where, event))
                continue
            rows.append(self.rows(where, event, seq))
        return rows


class BucketedSplProcessor(SplProcessor):
    """Per-key windows, the keys of a bucket under one grouping key
    (:mod:`trending.spark.key_buckets`): each key's window is one text (a
    :class:`~trending.windows.spl.stored.TextStore`) in its bucket's state, and the bucket's
    header keeps each key's next timer. The bucket has a Spark timer per distinct instant;
    when one fires, every key of the bucket due by then fires at its own instant.

    A window whose text outgrows :data:`SPILL_BYTES` moves to a row of its own (``spl_large``,
    a ``MapState`` by key), read and written only when a batch touches its key, so a bucket's
    own rows stay small and a batch does not rewrite large windows it does not touch.
    """

    buckets = 1
    codec = KeyCodec(StringType())

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.handle = handle
        self.stored = BucketState(handle, "spl_keys", self.buckets)
        self.large = handle.getMapState("spl_large", PART_KEY_SCHEMA, TEXT_SCHEMA)

    def _load(self, entries: dict[str, str], text: str) -> TextStore:
        stored = entries.get(text)
        if stored == SPILLED:
            row = self.large.getValue((text,))
            if row is None:
                raise SplRunnerError(f"window state lacks the window of key {text[1:]}")
            stored = str(row[0])
        return TextStore(stored)

    def _keep(self, entries: dict[str, str], text: str, store: TextStore) -> None:
        value = store.text()
        if len(value) > SPILL_BYTES:
            self.large.updateValue((text,), (value,))
            entries[text] = SPILLED
            return
        if entries.get(text) == SPILLED:
            self.large.removeKey((text,))
        entries[text] = value

    def handleInputRows(  # noqa: N802
        self,
        key: Any,
        rows: Iterator[pd.DataFrame],
        timerValues: TimerValues,  # noqa: N803
    ) -> Iterator[pd.DataFrame]:
        clock = timerValues.getCurrentProcessingTimeInMs()
        now = clock if self.time_mode == "processing" else None
        entries = self.stored.load()
        due: dict[str, int] = dict(self.stored.header.get("due", {}))
        out: list[Mapping[str, Any]] = []
        for key_value, inputs in self._by_key(rows):
            text = self.codec.text(key_value)
            run = partial(StoredWindow.rows, rows=inputs, clock_ms=now)
            out.extend(self._step(entries, due, text, run))
        yield from self._save(entries, due, None, out)

    def handleExpiredTimer(  # noqa: N802
        self,
        key: Any,
        timerValues: TimerValues,  # noqa: N803
        expiredTimerInfo: ExpiredTimerInfo,  # noqa: N803
    ) -> Iterator[pd.DataFrame]:
        if self.time_mode == "event":
            now = timerValues.getCurrentWatermarkInMs()
        else:
            now = timerValues.getCurrentProcessingTimeInMs()
        fired = expiredTimerInfo.getExpiryTimeInMs()
        entries = self.stored.load()
        due: dict[str, int] = dict(self.stored.header.get("due", {}))
        out: list[Mapping[str, Any]] = []
        for text, at_ms in sorted(due.items(), key=lambda item: item[1]):
            if at_ms > max(now, fired):
                continue
            keys = [plain_value(self.codec.value(text))]
            run = partial(StoredWindow.timer, fired_ms=at_ms, now_ms=now, keys=keys)
            out.extend(self._step(entries, due, text, run))
        yield from self._save(entries, due, fired, out)

    def _step(
        self,
        entries: dict[str, str],
        due: dict[str, int],
        text: str,
        run: Callable[[StoredWindow], Step],
    ) -> list[Mapping[str, Any]]:
        """Run one key's window (``run``), keep it and its next timer; its output rows."""
        store = self._load(entries, text)
        window = StoredWindow(self.spec, store, False)
        step = run(window)
        out = self._rows(plain_value(self.codec.value(text)), step)
        window.save()
        self._keep(entries, text, store)
        if step.state.timer_ms is None:
            due.pop(text, None)
        else:
            due[text] = step.state.timer_ms
        return out

    def _by_key(self, rows: Iterator[pd.DataFrame]) -> Iterator[tuple[Any, list[Row]]]:
        """A bucket's rows per key (:meth:`SplProcessor._inputs` order within a key)."""
        frame = self._frame(rows)
        column = self.sources.get(self.key_column, self.key_column)
        keys = [self.codec.normal(value) for value in frame[column].tolist()]
        by_key: dict[Any, list[Row]] = {}
        for value, (time_ms, _, record) in zip(keys, self._rows_of(frame, None), strict=True):
            by_key.setdefault(value, []).append((time_ms, plain_value(value), record))
        yield from by_key.items()

    def _save(
        self,
        entries: dict[str, str],
        due: dict[str, int],
        fired: int | None,
        out: list[Mapping[str, Any]],
    ) -> Iterator[pd.DataFrame]:
        self.stored.header["due"] = due
        self.stored.save(entries)
        if self.time_mode != "none":
            timers_to(self.handle, due.values(), fired)
        if out:
            yield pd.DataFrame(out)


class JsonEvents:
    """Window events as rows with ``tuples`` and ``summary`` as JSON text (``"events"``)."""

    def __init__(self, key_column: str, include_window: bool) -> None:
        self.key_column, self.include_window = key_column, include_window

    def __call__(self, key: Any, event: WindowEvent, seq: int) -> Mapping[str, Any]:
        row = event_row(key, event, seq, self.key_column, self.include_window)
        return row | {"size": len(event.tuples)}

    def schema(self, key: StructField) -> StructType:
        """The key column's own name and type, then :data:`EVENT_FIELDS` with JSON text."""
        fields = {"tuples": StringType(), "summary": StringType()}
        return _event_schema(key, fields)


class TypedEvents:
    """Window events as typed rows (``output="typed"``).

    Columns: the key column (its own name and type), ``event``, ``seq``, ``tuples`` as
    ``array<struct<...>>`` of the input's columns with their own types, ``time_ms``,
    ``summary`` (only for a window with summaries) and ``size``. ``summary`` is a struct with a
    field per summary of the spec: ``count`` a long; ``sum``, ``min``, ``max``, ``mean``
    doubles (null where the core has none, e.g. the mean of nothing); ``top_k`` an
    ``array<double>``, largest first. It is set on ``before_flush`` and ``after_flush`` and
    null on the other events. A tuple's values come back from its JSON-able form in the window
    (:func:`~trending.windows.spl.keyed.plain_value`): timestamps to the millisecond, NaN as
    null. Columns of other types (binary, arrays, maps, structs, intervals) have no exact JSON
    form and are refused (:class:`SplRunnerError`): convert or drop them first.
    """

    def __init__(
        self,
        key: StructField,
        columns: Sequence[StructField],
        summaries: Mapping[str, Summarizer],
        include_window: bool,
    ) -> None:
        if key.name in EVENT_FIELDS:
            raise SplRunnerError(f"key {key.name!r}: the output has a column of that name")
        self.key_column, self.include_window = key.name, include_window
        self.key_value = _from_plain(key.dataType, key.name)
        self.columns = [(f.name, _from_plain(f.dataType, f.name)) for f in columns]
        self.summaries = [(name, *_summary_field(name, s)) for name, s in summaries.items()]
        self.record = StructType([StructField(f.name, f.dataType, True) for f in columns])

    def __call__(self, key: Any, event: WindowEvent, seq: int) -> Mapping[str, Any]:
        content = self.include_window or event.kind not in WINDOW_EVENTS
        row = {
            self.key_column: self.key_value(key),
            "event": event.kind.value,
            "seq": seq,
            "tuples": [self._tuple(record) for record in event.tuples] if content else None,
            "time_ms": event.time_ms,
        }
        if self.summaries:
            row["summary"] = self._summary(event.summary)
        return row | {"size": len(event.tuples)}

    def schema(self, key: StructField) -> StructType:
        fields: dict[str, DataType] = {"tuples": ArrayType(self.record, True)}
        if self.summaries:
            summary = [StructField(name, kind, True) for name, kind, _ in self.summaries]
            fields["summary"] = StructType(summary)
        return _event_schema(key, fields)

    def _tuple(self, record: Record) -> dict[str, Any]:
        return {name: convert(record.get(name)) for name, convert in self.columns}

    def _summary(self, summary: Mapping[str, Any] | None) -> dict[str, Any] | None:
        if summary is None:
            return None
        return {name: convert(summary.get(name)) for name, _, convert in self.summaries}


EVENT_FIELDS = ("event", "seq", "tuples", "time_ms", "summary", "size")
"""The output columns after the key column, in order (``summary`` only where it is typed)."""
_EPOCH = dt.datetime(1970, 1, 1)
_EPOCH_UTC = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def _event_schema(key: StructField, types: Mapping[str, DataType]) -> StructType:
    fields = [StructField(key.name, key.dataType, True)]
    for name in EVENT_FIELDS:
        if name in ("tuples", "summary"):
            if name in types:
                fields.append(StructField(name, types[name], True))
        else:
            fields.append(StructField(name, StringType() if name == "event" else LongType(), False))
    return StructType(fields)


def _nullable(convert: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return lambda value: None if value is None else convert(value)


def _from_plain(kind: DataType, column: str) -> Callable[[Any], Any]:
    """How a tuple's JSON-able value becomes a value of ``kind`` again (see
    :class:`TypedEvents`); :class:`SplRunnerError` for a type without an exact JSON form."""
    if isinstance(kind, NullType):
        return lambda value: None
    if isinstance(kind, BooleanType):
        return _nullable(bool)
    if isinstance(kind, IntegralType):
        return _nullable(int)
    if isinstance(kind, DecimalType):
        return _nullable(lambda value: Decimal(str(value)))
    if isinstance(kind, FractionalType):
        return _nullable(float)
    if isinstance(kind, StringType):
        return _nullable(str)
    if isinstance(kind, DateType):
        return _nullable(lambda value: dt.date.fromisoformat(str(value)))
    if isinstance(kind, TimestampType):
        return _nullable(lambda ms: _EPOCH_UTC + dt.timedelta(milliseconds=int(ms)))
    if isinstance(kind, TimestampNTZType):
        return _nullable(lambda ms: _EPOCH + dt.timedelta(milliseconds=int(ms)))
    raise SplRunnerError(
        f"column {column!r}: a {kind.simpleString()} cannot go into a window's typed tuples; "
        "drop it or convert it first (e.g. to a string with F.to_json)"
    )


def _summary_field(name: str, summarizer: Summarizer) -> tuple[DataType, Callable[[Any], Any]]:
    """The type of a summary in ``summary`` and how its result becomes one."""
    if isinstance(summarizer, Count):
        return LongType(), _nullable(int)
    if isinstance(summarizer, Sum | Min | Max | Mean):
        return DoubleType(), _nullable(float)
    if isinstance(summarizer, TopK):
        return ArrayType(DoubleType(), True), _nullable(lambda top: [float(v) for v in top])
    raise SplRunnerError(
        f"summaries.{name}: a custom summarizer has no output type; use output='events' (JSON)"
    )


def _parsed(row: Sequence[Any] | None) -> Any:
    return None if row is None else json.loads(row[0])


def _text(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), default=str)


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


def _output(
    spec: WindowSpec,
    fields: Mapping[str, StructField],
    key: str,
    output: str | EventMapper,
    schema: StructType | str | None,
    include_window: bool,
) -> tuple[StructType | str, RowMaker | None]:
    """The output schema and the row maker of ``output`` (None for a user's function)."""
    if callable(output):
        if schema is None:
            raise SplRunnerError("output=fn needs output_schema (the rows fn returns)")
        return schema, None
    if output == "events":
        json_rows = JsonEvents(key, include_window)
        return json_rows.schema(fields[key]), json_rows
    if output == "typed":
        window = spec.window
        summaries = window.summarizers if isinstance(window, TumblingWindow) else {}
        typed = TypedEvents(fields[key], list(fields.values()), summaries, include_window)
        return typed.schema(fields[key]), typed
    raise SplRunnerError(f"output: must be 'events', 'typed' or a function, got {output!r}")


def _with_millis(df: DataFrame, fields: Iterable[StructField]) -> tuple[DataFrame, dict[str, str]]:
    """``df`` with each timestamp column's epoch ms beside it (Spark computes them; pandas
    would hand the processor wall-clock times of the session's time zone), and where they are.
    """
    from pyspark.sql import functions as F

    sources: dict[str, str] = {}
    for number, field in enumerate(fields):
        if isinstance(field.dataType, TimestampType):
            sources[field.name] = f"{MS_PREFIX}{number}"
            df = df.withColumn(sources[field.name], F.unix_millis(F.col(field.name)))
    return df, sources


def _names(columns: str | Sequence[str] | None) -> list[str]:
    if columns is None:
        return []
    return [columns] if isinstance(columns, str) else list(columns)
