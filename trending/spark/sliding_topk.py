"""The hashtags job's sliding top-k for any key column of any DataFrame.

The same engine as the job (:mod:`trending.spark.hashtag_state`), one key per row instead of a
tweet's hashtags::

    rows ─ kind (counted, late, no event time), key as text, event time in ms
      ─ per task: counts per (key, pane), packed per state bucket           (executors)
      ─ transformWithState by bucket: pane counts, window counts of changed keys
      ─ per task, the k best changed keys per window (count desc, key asc)
    per micro-batch, in ``foreachBatch`` (:class:`TopKBatches`):
      ─ merge the <= k candidates per open window and task into its last top-k
                                                          (driver, O(windows × tasks × k))
      ─ revisions of changed windows, finals of windows the watermark closed

The merge is a driver step, once per micro-batch, because a window's new top-k is
``top_k(last top-k ∪ candidates)`` over every task's candidates, and the executors' cut of the
candidates needs each window's k-th count of the last top-k before the batch runs (a setting of
the batch, read by the tasks). So a streaming query ends in a writer, :class:`TopKBatches`, which
hands each batch's typed top-k rows to the user's function, and keeps its small state (the last
top-k of each open window) in the query's checkpoint, beside Spark's own logs.
"""

from __future__ import annotations

import logging
import time as clock
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    IntegralType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from trending.durations import parse_duration_ms
from trending.errors import UserError
from trending.spark.batch_state import BatchStates
from trending.spark.batch_values import BatchParams, batch_watermark
from trending.spark.hashtag_state import (
    COUNTED,
    DEAD,
    LATE,
    CollectedCandidates,
    HashtagState,
    _last_end,
    counted_rows,
    top_candidates,
)
from trending.spark.project_classes import use_project_classes
from trending.windows.sliding import SlidingWindows
from trending.windows.topk_merge import MergeState, TopKMerger, TopKUpdate

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

EMITS = ("change", "close")
STATE_FOLDER = "trending-topk"
LATE_REASON, NO_TIME_REASON = "late", "no event time"
ENTRY = StructType([StructField("key", StringType()), StructField("count", LongType())])
TOPK_SCHEMA = StructType(
    [
        StructField("window_start", TimestampType(), False),
        StructField("window_end", TimestampType(), False),
        StructField("revision", LongType(), False),
        StructField("is_final", BooleanType(), False),
        StructField("top", ArrayType(ENTRY, False), False),
    ]
)
"""The rows of :class:`SlidingTopK`: one per published top-k of a window."""
_HEADERS = "array<struct<key:string,value:binary>>"


class TopKError(UserError):
    """A sliding top-k that cannot run as asked (bad settings or columns, or a checkpoint of
    other settings)."""


Duration = str | int  # "30s", "5m", "10 seconds" or integer milliseconds


def duration_ms(value: Duration, name: str) -> int:
    """``value`` as milliseconds: an int is milliseconds, a string a duration (``"500ms"``,
    ``"30s"``, ``"5m"``, ``"1h"``, ``"2d"``, or Spark's ``"10 seconds"``)."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise TopKError(f"{name}: a duration such as '5m' or milliseconds, not {value!r}")
    if isinstance(value, int):
        return value
    try:
        return parse_duration_ms(value)
    except ValueError as error:
        raise TopKError(f"{name}: {error}") from None


@dataclass(frozen=True)
class TopKSettings:
    """What a sliding top-k computes; a checkpoint's state only fits the settings it was
    written with."""

    size_ms: int
    hop_ms: int
    align_ms: int
    k: int
    lateness_ms: int

    @property
    def windows(self) -> SlidingWindows:
        return SlidingWindows(self.size_ms, self.hop_ms, self.align_ms)

    def as_dict(self) -> dict[str, int]:
        return {
            "size_ms": self.size_ms,
            "hop_ms": self.hop_ms,
            "align_ms": self.align_ms,
            "k": self.k,
            "lateness_ms": self.lateness_ms,
        }


@dataclass
class MergedBatch:
    """A micro-batch of a streaming top-k after :meth:`SlidingTopK.merge`."""

    updates: list[TopKUpdate]  # revisions of changed windows, finals of closed ones, in order
    counted: int  # keys counted (on time)
    newest_event_ms: int | None  # newest event time counted
    collected: CollectedCandidates  # the micro-batch, run once; its side rows kept while the
    # merge's block runs
    side_rows: int  # late and dead rows, or more (never fewer): 0 when there are none to read
    phases: dict[str, float] = field(default_factory=dict)  # seconds: "spark", "windows"

    @property
    def side(self) -> DataFrame:
        """The late and dead rows (``SIDE_COLUMNS``), from the executors' copies. Built only
        when asked for: a DataFrame costs an analysis (tens of ms) every micro-batch, and most
        batches have no side rows."""
        return self.collected.side()


class SlidingTopK:
    """The ``k`` most frequent values of a key column in every sliding event-time window.

    Windows ``[s, s + size)`` start every ``hop`` at ``s ≡ align (mod hop)``; a row at event
    time ``t`` counts in every window that holds ``t``. A window's top-k is its ``k`` keys of
    the highest counts, ties broken by key (ascending); a row whose key is null counts in no
    top-k. The watermark is ``W = max event time seen - lateness``: a window is final once
    ``W >= its end``, and a row all of whose windows are final when it arrives is late: it
    counts nowhere and goes to ``on_late``.

    A streaming query: ``df.transform(topk.counts, key=..., time=...)`` counts on the
    executors, and ``.writeStream.foreachBatch(topk.batches(handle, checkpoint=...))`` (or
    :meth:`start`) publishes, per micro-batch, one row per window whose top-k changed
    (``emit`` ``"change"``; revisions 1, 2, ...) and one final row per window the watermark
    closed (``"close"``; the next revision). A batch DataFrame: ``df.transform(topk)`` gives
    each window's top-k as one final row (revision 1), every row counted.
    """

    def __init__(
        self,
        *,
        size: Duration,
        hop: Duration,
        k: int = 10,
        lateness: Duration = 0,
        align: Duration = 0,
        emit: str | Iterable[str] = EMITS,
    ) -> None:
        settings = TopKSettings(
            duration_ms(size, "size"),
            duration_ms(hop, "hop"),
            duration_ms(align, "align"),
            k,
            duration_ms(lateness, "lateness"),
        )
        problems = []
        if settings.size_ms <= 0 or settings.hop_ms <= 0:
            problems.append("size and hop must be positive")
        if isinstance(k, bool) or not isinstance(k, int) or k <= 0:
            problems.append(f"k must be a positive integer, got {k!r}")
        if settings.lateness_ms < 0:
            problems.append("lateness must not be negative")
        emits = (emit,) if isinstance(emit, str) else tuple(emit)
        if not emits or any(e not in EMITS for e in emits):
            problems.append(f"emit must be 'change', 'close' or both, got {emit!r}")
        if problems:
            raise TopKError("sliding top-k: " + "; ".join(problems))
        self.settings = settings
        self.emit = frozenset(emits)
        self.job = f"topk-{uuid.uuid4().hex[:12]}"
        self._keys_from_text = False
        self._state: HashtagState | None = None
        self._columns: StructType | None = None

    @classmethod
    def of_hashtags(cls, settings: TopKSettings, job: str) -> SlidingTopK:
        """The top-k of the hashtags in a tweet's text (``trending run hashtags``): the same
        windows and merge, but a record of :func:`~trending.spark.hashtag_state.hashtag_records`
        counts once for each distinct hashtag of its ``text``, found on the executors (JVM);
        ``job`` names the engine's batch settings (the job's checkpoint id)."""
        s = settings
        topk = cls(size=s.size_ms, hop=s.hop_ms, k=s.k, lateness=s.lateness_ms, align=s.align_ms)
        topk.job = job
        topk._keys_from_text = True
        return topk

    def __call__(self, df: DataFrame, *, key: str, time: str) -> DataFrame:
        """The top-k of every window of batch ``df`` (:data:`TOPK_SCHEMA`, final rows)."""
        if df.isStreaming:
            raise TopKError(
                "a streaming DataFrame's top-k comes out per micro-batch: use "
                "df.transform(topk.counts, ...) with foreachBatch(topk.batches(...)), or "
                "topk.start(...)"
            )
        spark = df.sparkSession
        use_project_classes(spark)
        spark.streams  # noqa: B018 (starts the state store coordinator the count needs)
        state = self.engine(spark)
        records = self._records(df, key, time)
        state.prepare(records, BatchParams(None, {}, None))
        counts = DataFrame(state._java.batchCounts(records._jdf), spark)
        best = counted_rows(top_candidates(counts, self.settings.k))
        size = self.settings.size_ms
        entries = F.sort_array(F.collect_list(F.struct((-F.col("count")).alias("rank"), "tag")))
        grouped = best.groupBy("window_start").agg(entries.alias("entries"))
        top = F.transform(
            "entries", lambda e: F.struct(e["tag"].alias("key"), (-e["rank"]).alias("count"))
        )
        return grouped.select(
            F.timestamp_millis("window_start").alias("window_start"),
            F.timestamp_millis(F.col("window_start") + F.lit(size)).alias("window_end"),
            F.lit(1).cast("long").alias("revision"),
            F.lit(True).alias("is_final"),
            top.alias("top"),
        ).orderBy("window_start")

    def counts(self, df: DataFrame, *, key: str, time: str) -> DataFrame:
        """The executors' half of a streaming top-k of ``df``: finish the query with
        ``foreachBatch(self.batches(...))``; its rows are this engine's own."""
        if not df.isStreaming:
            raise TopKError("counts() is for a streaming DataFrame: use topk(df, ...) on a batch")
        from trending.spark.spl_runner import check_spark

        spark = df.sparkSession
        check_spark(spark, "none")
        use_project_classes(spark)
        return self.count_records(self._records(df, key, time))

    def count_records(self, records: DataFrame) -> DataFrame:
        """The engine's half on the executors, on records already in its form
        (``PaneCombiner.INPUT_COLUMNS``: ``kind``, ``event_ms``, ``text``, the source's
        coordinates, ``reason``, and a watermark on ``on_time_at``): the changed window counts
        that can enter a window's top-k, and the late and dead rows. :meth:`counts` builds those
        records from a DataFrame's columns; the hashtags job from Kafka's tweets."""
        state = self.engine(records.sparkSession)
        return state.apply(records)

    @contextmanager
    def merge(
        self, batch: DataFrame, merger: TopKMerger, clock_ms: int | None = None
    ) -> Iterator[MergedBatch]:
        """Run micro-batch ``batch`` of :meth:`count_records` and merge its candidates into
        ``merger`` (the last top-k of each open window, which the caller keeps from batch to
        batch): each task cuts its candidates at each window's k-th count, the driver merges
        them. ``batch`` runs once; its side rows (:attr:`MergedBatch.side`) stay on the
        executors while the block runs, so they are read without running the plan again.
        ``clock_ms``: the batch's processing time, for a clock-skew test in the records (the
        job's)."""
        spark = batch.sparkSession
        state = self.engine(spark)
        state.prepare(batch, BatchParams(merger.watermark_ms, merger.thresholds(), clock_ms))
        started = clock.monotonic()
        with state.collect(batch, self.settings.k) as collected:  # the plan runs once
            figures = state.figures()
            newest = figures.newest_event_ms
            merged = MergedBatch([], figures.counted, newest, collected, figures.side_rows)
            merged.phases["spark"] = clock.monotonic() - started
            started = clock.monotonic()
            merged.updates = merger.apply_batch(collected.counted(), newest)
            merged.phases["windows"] = clock.monotonic() - started
            yield merged

    def batches(
        self,
        handle: Callable[[DataFrame, int], None],
        *,
        checkpoint: str,
        on_late: Callable[[DataFrame, int], None] | None = None,
    ) -> TopKBatches:
        """The ``foreachBatch`` function of a query on :meth:`counts`: ``handle(rows, batch_id)``
        gets each micro-batch's top-k rows (:data:`TOPK_SCHEMA`); ``checkpoint`` is the query's
        ``checkpointLocation``, where the state goes (``trending-topk/``);
        ``on_late(rows, batch_id)`` gets the rows not counted: the input's columns and
        ``reason`` (``late``, ``no event time``)."""
        if self._state is None or self._columns is None:
            raise TopKError("call counts() before batches(): the writer belongs to its counts")
        return TopKBatches(self, self._columns, handle, checkpoint, on_late)

    def start(
        self,
        df: DataFrame,
        handle: Callable[[DataFrame, int], None],
        *,
        key: str,
        time: str,
        checkpoint: str,
        on_late: Callable[[DataFrame, int], None] | None = None,
        trigger: dict[str, Any] | None = None,
        query_name: str | None = None,
    ) -> Any:
        """Start the streaming query of ``df``'s top-k (a ``StreamingQuery``): :meth:`counts`,
        then :meth:`batches` as its ``foreachBatch``; ``trigger``: ``writeStream.trigger``'s
        keywords, e.g. ``{"processingTime": "5 seconds"}``."""
        counts = self.counts(df, key=key, time=time)
        writer = (
            counts.writeStream.option("checkpointLocation", checkpoint)
            .outputMode("update")
            .foreachBatch(self.batches(handle, checkpoint=checkpoint, on_late=on_late))
        )
        if trigger:
            writer = writer.trigger(**trigger)
        if query_name:
            writer = writer.queryName(query_name)
        return writer.start()

    def engine(self, spark: SparkSession) -> HashtagState:
        """The engine's stateful step in ``spark``'s JVM (made on first use)."""
        if self._state is None:
            s = self.settings
            self._state = HashtagState(spark, s.windows, self.job, self._keys_from_text)
        return self._state

    def _records(self, df: DataFrame, key: str, time: str) -> DataFrame:
        """The rows as the engine's records (``PaneCombiner.INPUT_COLUMNS``); a late row and one
        without an event time carry the row as JSON in ``value``."""
        fields = {f.name: f.dataType for f in df.schema.fields}
        for name, what in ((key, "key"), (time, "time")):
            if name not in fields:
                raise TopKError(f"{what}: no column {name!r} in the DataFrame: {sorted(fields)}")
        kind_of_time = fields[time]
        if isinstance(kind_of_time, TimestampType):
            event_ms: Column = F.unix_millis(F.col(time))
        elif isinstance(kind_of_time, IntegralType):
            event_ms = F.col(time).cast("long")
        else:
            raise TopKError(
                f"time: column {time!r} must be a timestamp or epoch milliseconds (an integer), "
                f"not a {kind_of_time.simpleString()}"
            )
        self._columns = df.schema
        watermark = batch_watermark(df.sparkSession, self.job)
        windows = self.settings.windows
        kind = F.when(event_ms.isNull(), F.lit(DEAD)).when(
            _last_end(event_ms, windows) <= watermark, F.lit(LATE)
        )
        reason = F.when(event_ms.isNull(), F.lit(NO_TIME_REASON)).when(
            kind.isNotNull(), F.lit(LATE_REASON)
        )
        row = F.when(kind.isNotNull(), F.to_json(F.struct(*[F.col(c) for c in fields])))
        records = df.select(
            F.coalesce(kind, F.lit(COUNTED)).alias("kind"),
            event_ms.alias("event_ms"),
            F.col(key).cast("string").alias("text"),
            F.spark_partition_id().alias("partition"),
            F.coalesce(F.crc32(row.cast("binary")), F.lit(0)).alias("offset"),
            F.lit(None).cast("binary").alias("record_key"),
            row.cast("binary").alias("value"),
            reason.alias("reason"),
            F.lit(None).cast("long").alias("record_ts"),
            F.lit(None).cast(_HEADERS).alias("headers"),
        )
        on_time = F.when(F.col("kind") == COUNTED, F.timestamp_millis("event_ms"))
        delay = f"{self.settings.lateness_ms} milliseconds"
        return records.withColumn("on_time_at", on_time).withWatermark("on_time_at", delay)


class TopKBatches:
    """The ``foreachBatch`` function of a streaming :class:`SlidingTopK` (see
    :meth:`SlidingTopK.batches`).

    After micro-batch ``b`` the state (each open window's last top-k and revision, the newest
    event time) is written to ``<checkpoint>/trending-topk/<b>.json``, once ``handle``
    returned. A batch that runs again (Spark replays the last batch it had not committed) starts
    from the state of the batch before it, so it hands ``handle`` the same rows: with a sink
    that writes each ``batch_id`` once, every top-k is published exactly once.
    """

    def __init__(
        self,
        topk: SlidingTopK,
        columns: StructType,
        handle: Callable[[DataFrame, int], None],
        checkpoint: str,
        on_late: Callable[[DataFrame, int], None] | None,
    ) -> None:
        self.topk = topk
        self.columns = columns
        self.handle = handle
        self.checkpoint = checkpoint
        self.on_late = on_late
        self.late = 0  # rows not counted, since the writer started
        self._states = BatchStates(
            checkpoint, STATE_FOLDER, topk.settings.as_dict(), TopKError, "a top-k"
        )
        self._merger: TopKMerger | None = None
        self._batch: int | None = None  # the batch self._merger's state is after

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        spark = batch.sparkSession
        use_project_classes(spark)
        merger = self._merger_before(spark, batch_id)
        with self.topk.merge(batch, merger) as merged:
            emit = self.topk.emit
            rows = [u for u in merged.updates if ("close" if u.is_final else "change") in emit]
            self.handle(spark.createDataFrame(_rows(rows), TOPK_SCHEMA), batch_id)
            side = merged.side if merged.side_rows else None
            late = side.count() if side is not None else 0
            if side is not None and late:
                self.late += late
                if self.on_late is not None:
                    self.on_late(self._late_rows(side), batch_id)
                else:
                    log.warning(
                        "batch %d: %d rows not counted (late, no event time)", batch_id, late
                    )
        self._states.save(spark, batch_id, merger.state.to_json())
        self._batch = batch_id

    def _late_rows(self, side: DataFrame) -> DataFrame:
        parsed = F.from_json(F.col("value").cast("string"), self.columns)
        return side.select(parsed.alias("row"), "reason").select("row.*", "reason")

    def _merger_before(self, spark: SparkSession, batch_id: int) -> TopKMerger:
        """The merger as it was after the batch before ``batch_id``."""
        s = self.topk.settings
        if self._merger is not None and self._batch == batch_id - 1:
            return self._merger
        saved = self._states.before(spark, batch_id)
        state = None if saved is None else MergeState.from_json(saved)
        self._merger = TopKMerger(s.windows, s.k, s.lateness_ms, state)
        return self._merger


def _rows(updates: list[TopKUpdate]) -> list[tuple[Any, ...]]:
    from datetime import datetime, timezone

    def at(ms: int) -> datetime:
        return datetime.fromtimestamp(ms / 1000, tz=timezone.utc)

    return [
        (at(u.window.start), at(u.window.end), u.revision, u.is_final, [list(e) for e in u.top])
        for u in updates
    ]
