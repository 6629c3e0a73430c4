"""The sensors job's query matching (IBM Streams SPL's ``SensorQuery``) for any two DataFrames.

The same engine as ``trending run sensors`` (``trending.sensors.SensorBatch`` in the JVM, state
in Spark's state stores on the executors)::

    readings ─┐                     per micro-batch, in foreachBatch (:class:`SensorBatches`):
               ├─ union, with kind ─ late (behind the watermark) and invalid rows aside
    queries  ──┘                    ─ events waiting for the watermark      (pending store)
                                    ─ readings numbered in their window     (index store)
                                    ─ grid cells: readings, evictions, query probes (cells store)
                                    ─ matches, popular readings

The window holds the last ``size`` readings (of all sensors, or of each sensor), in event-time
order, so a micro-batch's events are applied once the watermark passes them, and the driver
keeps only the watermark, the count of readings numbered so far and the bounds of the reading
positions (saved in the query's checkpoint after each micro-batch). That is why the step is a
writer (``foreachBatch``) and not a DataFrame function: its stores go from version ``b`` to
``b + 1`` in micro-batch ``b`` beside the query's own.
"""

from __future__ import annotations

import logging
import math
import tempfile
import time as clock
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import IntegralType, NumericType, TimestampType

from trending.durations import parse_duration_ms
from trending.errors import UserError
from trending.spark.batch_state import BatchStates
from trending.spark.batch_values import batch_long
from trending.spark.project_classes import use_project_classes
from trending.spark.sensor_steps import (
    DEAD,
    LATE,
    MATCH,
    QUERY,
    READING,
    STATE_LAYOUT,
    BatchFigures,
    SensorSteps,
    batch_figures,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

STATE_FOLDER = "trending-sensors"
DEFAULT_PARTITIONS = 4


class SensorMatchingError(UserError):
    """Sensor matching that cannot run as asked (bad settings or columns, or a checkpoint of
    other settings)."""


@dataclass
class SensorState:
    """The driver's small state between micro-batches."""

    watermark_ms: int | None = None
    readings: int = 0  # readings the global window numbered so far
    bounds: tuple[float, float, float, float] | None = None  # of every reading position seen

    def to_json(self) -> dict[str, Any]:
        return {
            "v": 1,
            "watermark_ms": self.watermark_ms,
            "readings": self.readings,
            "bounds": None if self.bounds is None else list(self.bounds),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SensorState:
        if data.get("v") != 1:
            raise ValueError(f"unknown state version {data.get('v')!r}")
        bounds = data.get("bounds")
        return cls(
            data.get("watermark_ms"),
            int(data["readings"]),
            None if bounds is None else (bounds[0], bounds[1], bounds[2], bounds[3]),
        )

    def advanced(self, figures: BatchFigures, lateness_ms: int) -> SensorState:
        """The state after a batch of these figures: ``W' = max(W, newest - lateness)``, the
        bounds widened by the batch's readings (``readings`` is set once the batch ran)."""
        watermark = self.watermark_ms
        if figures.newest_ms is not None:
            candidate = figures.newest_ms - lateness_ms
            watermark = candidate if watermark is None else max(watermark, candidate)
        bounds = self.bounds
        if figures.bounds is not None:
            b = figures.bounds
            bounds = b if bounds is None else (
                min(bounds[0], b[0]), min(bounds[1], b[1]), max(bounds[2], b[2]),
                max(bounds[3], b[3]),
            )  # fmt: skip
        return SensorState(watermark, self.readings, bounds)


@dataclass(frozen=True)
class SensorSettings:
    """What the matching computes; a checkpoint's state only fits the settings it was written
    with."""

    size: int
    threshold: int
    lateness_ms: int
    per_sensor: bool
    cell_size: float
    max_query_cells: int
    state_partitions: int

    def arguments(self) -> dict[str, Any]:
        """The :class:`SensorMatching` arguments of these settings."""
        return {
            "size": self.size,
            "threshold": self.threshold,
            "lateness": self.lateness_ms,
            "per_sensor": self.per_sensor,
            "cell_size": self.cell_size,
            "max_query_cells": self.max_query_cells,
            "state_partitions": self.state_partitions,
        }

    def as_dict(self) -> dict[str, Any]:
        """The settings the state depends on, and the layout the engine keeps it in."""
        return {
            "state_layout": STATE_LAYOUT,
            "size": self.size,
            "threshold": self.threshold,
            "lateness_ms": self.lateness_ms,
            "per_sensor": self.per_sensor,
            "cell_size": self.cell_size,
            "state_partitions": self.state_partitions,
        }


@dataclass
class AppliedBatch:
    """A micro-batch after :meth:`SensorMatching.apply`."""

    output: DataFrame  # Cells.OUTPUT rows: kind (MATCH, POPULAR), query_id, sensor_id, ...
    state: SensorState  # the driver's state after the batch
    figures: BatchFigures  # events per kind, newest event time, reading bounds
    counts: dict[str, int]  # readings, queries, matches, popular applied; pending after
    phases: dict[str, float] = field(default_factory=dict)  # seconds: "read", "windows"


class SensorMatching:
    """Matches of queries against the last ``size`` readings, and the readings that were
    popular when they left the window (SPL's ``SensorQuery``), on two streaming DataFrames
    (:meth:`start` or :meth:`batches`) or two batch ones (:meth:`run`).

    A reading ``(sensor, x, y, value, t)`` goes into the window at event time ``t``; the window
    holds the last ``size`` readings in event-time order (of all sensors, or of each sensor
    with ``per_sensor``). A query ``(query, x, y, distance, t)`` at event time ``t`` matches
    every reading in the window then (every partition) with ``sqrt(dx² + dy²) <= distance``:
    one match row each, and each matched reading counts one. A reading that leaves the window
    after ``m >= max(1, threshold)`` matches is a popular reading with ``matches = m``.

    Order: events are applied by event time; at equal times readings go before queries, then
    by arrival (micro-batch, then Spark partition and position in it). The watermark is
    ``W = max event time seen - lateness``; an event is applied once ``W`` passes it
    (``t < W``), and an event behind the watermark its micro-batch starts under is late: it
    goes to ``on_late``, as do rows that cannot be applied (a null time or id, a non-finite
    position or value, a negative or NaN distance), with their ``reason``.
    """

    def __init__(
        self,
        *,
        size: int = 100,
        threshold: int = 3,
        lateness: str | int = 0,
        per_sensor: bool = False,
        cell_size: float = 0.05,
        max_query_cells: int = 4_096,
        state_partitions: int = DEFAULT_PARTITIONS,
    ) -> None:
        problems = []
        lateness_ms = 0
        try:
            if isinstance(lateness, bool) or not isinstance(lateness, int | str):
                raise ValueError(f"a duration such as '5s' or milliseconds, not {lateness!r}")
            lateness_ms = lateness if isinstance(lateness, int) else parse_duration_ms(lateness)
        except ValueError as error:
            problems.append(f"lateness: {error}")
        for name, value, least in (
            ("size", size, 1), ("threshold", threshold, 0), ("max_query_cells", max_query_cells, 1),
            ("state_partitions", state_partitions, 1),
        ):  # fmt: skip
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                problems.append(f"{name} must be an integer >= {least}, got {value!r}")
        if lateness_ms < 0:
            problems.append("lateness must not be negative")
        if (
            isinstance(cell_size, bool)
            or not isinstance(cell_size, int | float)
            or not (math.isfinite(cell_size) and cell_size > 0)
        ):
            problems.append(f"cell_size must be a positive number, got {cell_size!r}")
        if problems:
            raise SensorMatchingError("sensor matching: " + "; ".join(problems))
        self.settings = SensorSettings(
            size, threshold, lateness_ms, bool(per_sensor), float(cell_size), max_query_cells,
            state_partitions,
        )  # fmt: skip
        self._steps: SensorSteps | None = None

    # ---- the engine's steps, as the sensors job and SensorBatches use them ---------------------

    def engine(self, spark: SparkSession, location: str, job: str) -> SensorSteps:
        """The executors' half (JVM), its state stores under ``location`` (made on first use)."""
        if self._steps is None:
            s = self.settings
            self._steps = SensorSteps(
                spark, location, s.state_partitions, s.size, s.threshold, s.cell_size,
                s.per_sensor, s.max_query_cells, job,
            )  # fmt: skip
        return self._steps

    @contextmanager
    def apply(
        self,
        events: DataFrame,
        batch_id: int,
        state: SensorState,
        steps: SensorSteps,
        final: bool = False,
    ) -> Iterator[AppliedBatch]:
        """Apply micro-batch ``batch_id``'s ``events`` (the engine's form: ``kind, ts, id, x, y,
        v, partition, offset``) under ``state``; the output stays cached while the block runs.
        ``state`` must be the state after the batch before (a batch run again starts from it).
        ``final``: no event follows, so every on-time event is applied (``W`` = newest + 1)."""
        started = clock.monotonic()
        figures = batch_figures(events)
        after = state.advanced(figures, -1 if final else self.settings.lateness_ms)
        phases = {"read": clock.monotonic() - started}
        started = clock.monotonic()
        try:
            output = steps.run(events, batch_id, after.watermark_ms, state.readings, after.bounds)
            counts = steps.figures()
            phases["windows"] = clock.monotonic() - started
            if not self.settings.per_sensor:
                after.readings = state.readings + counts["readings"]
            yield AppliedBatch(output, after, figures, counts, phases)
        finally:
            steps.release()

    # ---- DataFrames ----------------------------------------------------------------------------

    def events(
        self,
        readings: DataFrame,
        queries: DataFrame,
        *,
        sensor: str = "sensor_id",
        query: str = "query_id",
        x: str = "x",
        y: str = "y",
        value: str = "value",
        distance: str = "distance",
        time: str = "ts",
    ) -> DataFrame:
        """Both inputs as one DataFrame of events (finish it with :meth:`batches` or
        :meth:`start`): ``kind`` (0 reading, 1 query), ``ts`` (ms), ``id``, ``x``, ``y``, ``v``
        (value or distance) and the row as JSON; ``time`` is a timestamp or epoch ms. Both
        streaming, or both batch DataFrames (for :meth:`run`)."""
        if readings.isStreaming != queries.isStreaming:
            raise SensorMatchingError(
                "sensor matching runs on two streaming DataFrames, or on two batch ones "
                f"(readings streaming: {readings.isStreaming}, queries: {queries.isStreaming})"
            )
        spark = readings.sparkSession
        from trending.spark.spl_runner import check_spark

        check_spark(spark, "none")
        use_project_classes(spark)
        parts = []
        for df, kind, name, id_column, v_column in (
            (readings, READING, "readings", sensor, value),
            (queries, QUERY, "queries", query, distance),
        ):
            parts.append(self._events(df, kind, name, id_column, x, y, v_column, time))
        return parts[0].unionByName(parts[1])

    def _events(
        self, df: DataFrame, kind: int, name: str, id_column: str, x: str, y: str, v: str,
        time: str,
    ) -> DataFrame:  # fmt: skip
        fields = {f.name: f.dataType for f in df.schema.fields}
        missing = [c for c in (id_column, x, y, v, time) if c not in fields]
        if missing:
            raise SensorMatchingError(f"{name}: no column {missing} in {sorted(fields)}")
        for column in (id_column,):
            if not isinstance(fields[column], IntegralType):
                raise SensorMatchingError(
                    f"{name}: column {column!r} must be an integer, not "
                    f"{fields[column].simpleString()}"
                )
        for column in (x, y, v):
            if not isinstance(fields[column], NumericType):
                raise SensorMatchingError(
                    f"{name}: column {column!r} must be a number, not "
                    f"{fields[column].simpleString()}"
                )
        kind_of_time = fields[time]
        if isinstance(kind_of_time, TimestampType):
            ts: Column = F.unix_millis(F.col(time))
        elif isinstance(kind_of_time, IntegralType):
            ts = F.col(time).cast("long")
        else:
            raise SensorMatchingError(
                f"{name}: column {time!r} must be a timestamp or epoch milliseconds, not "
                f"{kind_of_time.simpleString()}"
            )
        return df.select(
            F.lit(kind).alias("kind"),
            ts.alias("ts"),
            F.col(id_column).cast("long").alias("id"),
            F.col(x).cast("double").alias("x"),
            F.col(y).cast("double").alias("y"),
            F.col(v).cast("double").alias("v"),
            F.to_json(F.struct(*[F.col(c) for c in fields])).alias("row"),
        )

    def batches(
        self,
        on_match: Callable[[DataFrame, int], None],
        *,
        checkpoint: str,
        on_popular: Callable[[DataFrame, int], None] | None = None,
        on_late: Callable[[DataFrame, int], None] | None = None,
    ) -> SensorBatches:
        """The ``foreachBatch`` function of a query on :meth:`events`: ``on_match(rows,
        batch_id)`` gets each micro-batch's matches (:data:`MATCH_COLUMNS`), ``on_popular``
        its popular readings (:data:`POPULAR_COLUMNS`), ``on_late`` the rows not applied
        (``input`` ``readings``/``queries``, ``row`` as JSON, ``reason``); ``checkpoint`` is the
        query's ``checkpointLocation``, where the state goes (``trending-sensors/``)."""
        return SensorBatches(self, on_match, on_popular, on_late, checkpoint)

    def start(
        self,
        readings: DataFrame,
        queries: DataFrame,
        on_match: Callable[[DataFrame, int], None],
        *,
        checkpoint: str,
        on_popular: Callable[[DataFrame, int], None] | None = None,
        on_late: Callable[[DataFrame, int], None] | None = None,
        trigger: dict[str, Any] | None = None,
        query_name: str | None = None,
        **columns: str,
    ) -> Any:
        """Start the streaming query (a ``StreamingQuery``): :meth:`events` (``columns``: its
        column names, e.g. ``sensor="id"``), then :meth:`batches` as its ``foreachBatch``."""
        events = self.events(readings, queries, **columns)
        writer = (
            events.writeStream.option("checkpointLocation", checkpoint)
            .foreachBatch(
                self.batches(
                    on_match, checkpoint=checkpoint, on_popular=on_popular, on_late=on_late
                )
            )
        )  # fmt: skip
        if trigger:
            writer = writer.trigger(**trigger)
        if query_name:
            writer = writer.queryName(query_name)
        return writer.start()

    def run(
        self,
        readings: DataFrame,
        queries: DataFrame,
        *,
        location: str | None = None,
        **columns: str,
    ) -> SensorResults:
        """The matches, popular readings and rows not applied of two batch DataFrames, all at
        once: every event is applied in the order above (all of the input is there, so none is
        late), and a reading still in the window at the end has not left it (it is not
        popular). ``columns`` as for :meth:`events`. The engine's state stores go under
        ``location`` and are not read again; the results are kept on the executors (Spark's
        local checkpoints), nothing on the driver.

        Without ``location`` the stores go to a new folder under Spark's checkpoint directory
        (``sparkContext.setCheckpointDir``) when one is set, else, with a ``local`` master, to a
        new temporary folder. On a cluster with neither, it raises :class:`SensorMatchingError`:
        the executors need a folder they all reach (HDFS, S3, a shared mount)."""
        events = self.events(readings, queries, **columns)
        if events.isStreaming:
            raise SensorMatchingError(
                "run takes two batch DataFrames; for streams use start() or batches()"
            )
        folder = location or _run_folder(events.sparkSession)
        kept: dict[str, DataFrame] = {}

        def keep(name: str) -> Callable[[DataFrame, int], None]:
            return lambda rows, _: kept.__setitem__(name, rows.localCheckpoint(eager=True))

        once = SensorMatching(**self.settings.arguments())  # a new engine on a new folder
        writer = SensorBatches(once, keep("matches"), keep("popular"), keep("rejected"), folder)
        writer.final = True
        writer(events, 0)
        spark = events.sparkSession
        rejected = kept.get("rejected") or spark.createDataFrame(
            [], "input STRING, row STRING, reason STRING"
        )
        return SensorResults(kept["matches"], kept["popular"], rejected)


def _run_folder(spark: SparkSession) -> str:
    """A new folder for one :meth:`SensorMatching.run`'s state stores (see there)."""
    context = spark.sparkContext
    shared = context.getCheckpointDir()
    if shared:
        return f"{shared.rstrip('/')}/trending-sensors-{uuid.uuid4().hex}"
    if str(context.master).startswith("local"):
        return tempfile.mkdtemp(prefix="trending-sensors-")
    raise SensorMatchingError(
        f"run on master {context.master} needs a folder every executor reaches for its state "
        "stores: give location= (an HDFS, S3 or shared path) or set "
        "spark.sparkContext.setCheckpointDir(...)"
    )


@dataclass
class SensorResults:
    """What :meth:`SensorMatching.run` found: :data:`MATCH_COLUMNS` rows, :data:`POPULAR_COLUMNS`
    rows, and the rows not applied (``input``, ``row`` as JSON, ``reason``)."""

    matches: DataFrame
    popular: DataFrame
    rejected: DataFrame


MATCH_COLUMNS = ("query_id", "sensor_id", "value", "reading_time", "query_time", "x", "y")
"""A match row: the query, the matched reading (its sensor, value, time and position)."""
POPULAR_COLUMNS = ("sensor_id", "x", "y", "value", "reading_time", "matches")
"""A popular reading: the reading that left the window, and how many queries matched it."""


def _problem() -> Column:
    """Why an event cannot be applied (null when it can)."""

    def not_finite(c: Column) -> Column:
        return c.isNull() | F.isnan(c) | (F.abs(c) == F.lit(float("inf")))

    query = F.col("kind") == F.lit(QUERY)
    return (
        F.when(F.col("ts").isNull(), F.lit("no event time"))
        .when(F.col("id").isNull(), F.lit("no id"))
        .when(not_finite(F.col("x")) | not_finite(F.col("y")), F.lit("x and y must be finite"))
        .when(
            query & (F.col("v").isNull() | F.isnan("v") | (F.col("v") < 0)),
            F.lit("distance must be a number >= 0"),
        )
        .when(~query & not_finite(F.col("v")), F.lit("value must be finite"))
    )


class SensorBatches:
    """The ``foreachBatch`` function of a streaming :class:`SensorMatching` (see
    :meth:`SensorMatching.batches`).

    After micro-batch ``b`` the driver's state is written to
    ``<checkpoint>/trending-sensors/<b>.json`` once the handlers returned; the engine's state
    stores live in ``<checkpoint>/trending-sensors/state`` and go from version ``b`` to
    ``b + 1``. A batch Spark runs again starts from the state of the batch before, so the
    handlers get the same rows with the same ``batch_id``.
    """

    def __init__(
        self,
        matching: SensorMatching,
        on_match: Callable[[DataFrame, int], None],
        on_popular: Callable[[DataFrame, int], None] | None,
        on_late: Callable[[DataFrame, int], None] | None,
        checkpoint: str,
    ) -> None:
        self.matching = matching
        self.on_match = on_match
        self.on_popular = on_popular
        self.on_late = on_late
        self.checkpoint = checkpoint
        self.late = 0  # rows not applied, since the writer started
        self._states = BatchStates(
            checkpoint, STATE_FOLDER, matching.settings.as_dict(), SensorMatchingError,
            "sensor matching",
        )  # fmt: skip
        self._state: SensorState | None = None
        self._batch: int | None = None  # the batch self._state is after
        self.job = f"sensors-{id(self):x}"
        self.final = False  # a batch DataFrame: every on-time event is applied

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        spark = batch.sparkSession
        use_project_classes(spark)
        state = self._state_before(spark, batch_id)
        location = self.checkpoint.rstrip("/") + f"/{STATE_FOLDER}/state"
        steps = self.matching.engine(spark, location, self.job)
        problem = _problem()
        watermark = None if state.watermark_ms is None else batch_long(spark, state.watermark_ms)
        late = F.lit(False) if watermark is None else F.col("ts") < watermark
        kind = F.when(problem.isNotNull(), F.lit(DEAD)).when(late, F.lit(LATE))
        events = (
            batch.withColumn("reason", F.coalesce(problem, F.when(late, F.lit("late"))))
            .withColumn("input", F.when(F.col("kind") == READING, "readings").otherwise("queries"))
            .withColumn("kind", F.coalesce(kind, F.col("kind")))
            .withColumn("partition", batch_long(spark, batch_id).cast("int"))  # arrival: batch,
            .withColumn("offset", F.monotonically_increasing_id())  # partition, position
        ).persist()
        try:
            with self.matching.apply(events, batch_id, state, steps, self.final) as applied:
                output = applied.output
                millis = F.timestamp_millis
                matches = output.where(F.col("kind") == MATCH).select(
                    "query_id", "sensor_id", "value",
                    millis("reading_ts").alias("reading_time"),
                    millis("query_ts").alias("query_time"), "x", "y",
                )  # fmt: skip
                self.on_match(matches, batch_id)
                if self.on_popular is not None:
                    popular = output.where(F.col("kind") != MATCH).select(
                        "sensor_id", "x", "y", "value",
                        millis("reading_ts").alias("reading_time"), "matches",
                    )  # fmt: skip
                    self.on_popular(popular, batch_id)
                late_count = applied.figures.counts.get(LATE, 0) + applied.figures.counts.get(
                    DEAD, 0
                )
                if late_count:
                    self.late += late_count
                    if self.on_late is not None:
                        side = events.where(F.col("kind").isin(LATE, DEAD))
                        self.on_late(side.select("input", "row", "reason"), batch_id)
                    else:
                        log.warning(
                            "batch %d: %d rows not applied (late or invalid)",
                            batch_id, late_count,
                        )  # fmt: skip
                after = applied.state
        finally:
            events.unpersist()
        self._states.save(spark, batch_id, after.to_json())
        self._state, self._batch = after, batch_id

    def _state_before(self, spark: SparkSession, batch_id: int) -> SensorState:
        if self._state is not None and self._batch == batch_id - 1:
            return self._state
        saved = self._states.before(spark, batch_id)
        return SensorState() if saved is None else SensorState.from_json(saved)
