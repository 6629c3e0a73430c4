"""Sensor query matching (the SensorQuery application), from Kafka to Kafka.

A sliding window of the last N sensor readings (SPL: eviction count(N), trigger count(1)), one
global window or one per sensor. Every query yields one match per reading in the window within
its distance, ``sqrt((x_r - x_q)^2 + (y_r - y_q)^2) <= d``; every reading counts the queries that
matched it while it was in the window, and one that leaves the window (is evicted) with at least
``threshold`` matches is published as popular.

Order: readings and queries are applied by ``(ts, kind, partition, offset)`` (readings before
queries at equal ts), each once the watermark ``W = max ts seen - lateness`` is past it
(``ts < W``), so results depend neither on arrival timing nor on batching. Events already behind
``W`` when they arrive are late: counted and routed to the late topic.

Wiring of the library's :class:`trending.SensorMatching` between Kafka and Kafka: the two topics
read and decoded (:func:`trending.spark.sensor_steps.sensor_events`), each micro-batch applied
by :meth:`SensorMatching.apply` (the windows on the executors, in Spark's state store), and the
results, late and dead records published with the driver's state (the watermark, the global
window's reading count and the bounds of the reading positions) in one Kafka transaction
(:mod:`connectors.transactions`).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from connectors.avro import AvroCodec, schema_json
from connectors.kafka import ensure_topics
from connectors.spark_kafka import read_kafka_stream
from connectors.transactions import OutRecord, TransactionalBatchWriter
from trending.durations import format_duration_ms
from trending.errors import UserError
from trending.jobs.common import (
    CommittedBatches,
    JobSettings,
    committed_state,
    open_job,
    stream_options,
    triggered,
    use_state_store,
)
from trending.jobs.letters import Origin, SideOutput
from trending.jobs.startup import phase
from trending.metrics import LATE_REASONS, Metrics
from trending.spark.batch_values import BatchParams, set_batch_params
from trending.spark.checkpoint import JobCheckpoint
from trending.spark.collect import in_parts
from trending.spark.sensor_matching import SensorMatching, SensorState
from trending.spark.sensor_steps import (
    DEAD,
    LATE,
    MATCH,
    SIDE_COLUMNS,
    STATE_LAYOUT,
    OutputSchemas,
    SensorTopics,
    encoded_output,
    sensor_events,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming.query import StreamingQuery

ORIGIN_COLUMNS = ("topic", "partition", "offset", "key", "value", "record_ts", "headers")
log = logging.getLogger(__name__)
STATE_FOLDER = "sensor-state"


@dataclass(frozen=True)
class SensorJobConfig(JobSettings):
    """Everything ``trending run sensors`` can be told (times in milliseconds)."""

    readings_topic: str = "sensor-readings"
    queries_topic: str = "sensor-queries"
    matches_topic: str = "sensor-matches"
    popular_topic: str = "popular-readings"
    late_topic: str = "sensor-late"
    dead_letter_topic: str = "sensor-dlq"
    size: int = 100
    threshold: int = 3
    lateness_ms: int = 5_000
    partition_by_sensor: bool = False
    cell_size: float = 0.05
    max_query_cells: int = 4_096  # see trending.spark.sensor_steps.SensorSteps

    def validate(self) -> None:
        """Raise :class:`UserError` for settings no window can run with."""
        if self.size <= 0:
            raise UserError(f"--window-readings must be positive, got {self.size}")
        if self.threshold < 0:
            raise UserError(f"--threshold must be >= 0, got {self.threshold}")
        if self.lateness_ms < 0:
            raise UserError("--lateness must be >= 0")
        if not (math.isfinite(self.cell_size) and self.cell_size > 0):
            raise UserError(f"--cell-size must be a positive number, got {self.cell_size}")
        if self.max_query_cells <= 0:
            raise UserError(f"--max-query-cells must be positive, got {self.max_query_cells}")

    def state_settings(self, partitions: int) -> dict[str, Any]:
        """The settings the job's state depends on: a checkpoint keeps them for its lifetime."""
        return {
            "state_layout": STATE_LAYOUT,
            "size": self.size,
            "threshold": self.threshold,
            "lateness_ms": self.lateness_ms,
            "partition_by": "sensor" if self.partition_by_sensor else "none",
            "cell_size": self.cell_size,
            "state_partitions": partitions,
        }


@dataclass
class SensorBatchStats:
    """What one micro-batch did, for the progress line and metrics."""

    batch_id: int
    events: int = 0  # records read, of every kind
    readings: int = 0  # readings applied (put in the window)
    queries: int = 0  # queries applied
    matches: int = 0
    popular: int = 0
    pending: int = 0  # events waiting for the watermark after the batch
    state_bytes: int = 0  # bytes of the keys and values put into the state stores, and removed
    late: int = 0
    dead: int = 0
    seconds: float = 0.0
    watermark_ms: int | None = None
    skipped: bool = False
    started_at: float = 0.0
    phases: dict[str, float] = field(default_factory=dict)
    dead_reasons: dict[str, int] = field(default_factory=dict)


class SensorBatchProcessor(CommittedBatches[SensorBatchStats]):
    """The ``foreachBatch`` function: exactly-once matches and popular readings."""

    def __init__(
        self,
        spark: SparkSession,
        config: SensorJobConfig,
        checkpoint: JobCheckpoint,
        job_id: str,
        partitions: int,
        writer: TransactionalBatchWriter,
    ) -> None:
        self.config = config
        self.checkpoint = checkpoint
        self.job_id = job_id
        self.writer = writer
        self.input_topics = (config.readings_topic, config.queries_topic)
        self.control_topic = f"trending-sensors-control-{job_id}"  # --idle-advance's CTIs
        self.state = committed_state(writer, SensorState.from_json) or SensorState()
        url = config.schema_registry_url
        self.dead_codec = AvroCodec("dead_letter", url, subject=f"{config.dead_letter_topic}-value")
        self.late_codec = AvroCodec("dead_letter", url, subject=f"{config.late_topic}-value")
        match = AvroCodec("sensor_match", url, subject=f"{config.matches_topic}-value")
        popular = AvroCodec("popular_reading", url, subject=f"{config.popular_topic}-value")
        self.outputs = OutputSchemas(match.text, popular.text, match.header, popular.header)
        self.topics = SensorTopics(
            config.readings_topic,
            config.queries_topic,
            schema_json("sensor_reading"),
            schema_json("sensor_query"),
        )
        self.matching = SensorMatching(
            size=config.size,
            threshold=config.threshold,
            lateness=config.lateness_ms,
            per_sensor=config.partition_by_sensor,
            cell_size=config.cell_size,
            max_query_cells=config.max_query_cells,
            state_partitions=partitions,
        )
        self.steps = self.matching.engine(spark, checkpoint.child_location(STATE_FOLDER), job_id)
        self.history: list[SensorBatchStats] = []
        self.observers: list[Callable[[SensorBatchStats, SensorBatchProcessor], None]] = []

    def attach_metrics(self, metrics: Metrics) -> None:
        """Count this job's batches in ``metrics`` (call before the query starts)."""
        self.observers.append(SensorObserver(metrics, self))

    def _new_stats(self, batch_id: int) -> SensorBatchStats:
        return SensorBatchStats(
            batch_id, watermark_ms=self.state.watermark_ms, started_at=time.time()
        )

    def _next_watermark_ms(self) -> int | None:
        return self.state.watermark_ms

    def _describe(self, stats: SensorBatchStats) -> str:
        return _describe(stats)

    def _process(self, batch: DataFrame, batch_id: int, stats: SensorBatchStats) -> None:
        params = BatchParams(self.state.watermark_ms, {}, self.checkpoint.batch_clock_ms(batch_id))
        set_batch_params(batch.sparkSession, self.job_id, params)  # read by sensor_events' plan
        events = batch.persist()
        try:
            with self.matching.apply(events, batch_id, self.state, self.steps) as applied:
                stats.phases.update(applied.phases)
                clock = time.monotonic()
                state = applied.state
                aside = self._side_output()
                results = encoded_output(applied.output, self.outputs)
                side = events.where(events.kind.isin(LATE, DEAD)).select(*SIDE_COLUMNS)
                part_bytes = self.config.collect_part_bytes
                result_topics = (self.config.matches_topic, self.config.popular_topic)

                # the batch's counts say which of the two holds rows: no Spark job for the other
                has_results = applied.counts["matches"] + applied.counts["popular"] > 0
                aside_counts = applied.figures.counts
                has_side = aside_counts.get(LATE, 0) + aside_counts.get(DEAD, 0) > 0

                def records() -> Iterator[OutRecord]:
                    # fetched in parts, and counted anew by each attempt of the transaction
                    stats.late, stats.dead, stats.dead_reasons = 0, 0, {}
                    for part in in_parts(results, part_bytes) if has_results else ():
                        fit = aside.all_fit(part, result_topics)
                        for record in self._result_records(part):
                            yield record if fit else aside.result(record, batch_id, stats)
                    for part in in_parts(side, part_bytes) if has_side else ():
                        yield from self._side_records(aside, part, stats)

                self.writer.write_batch(batch_id, records, state.to_json())
        finally:
            events.unpersist()
        stats.phases["publish"] = _lap(clock)
        self.state = state
        stats.events = sum(applied.figures.counts.values())
        stats.watermark_ms = state.watermark_ms
        for name in ("readings", "queries", "matches", "popular", "pending", "state_bytes"):
            setattr(stats, name, applied.counts[name])

    def _result_records(self, table: Any) -> Iterator[OutRecord]:
        kinds = table.column("kind").to_pylist()
        keys = table.column("key").to_pylist()
        values = table.column("value").to_pylist()
        matches, popular = self.config.matches_topic, self.config.popular_topic
        for kind, key, value in zip(kinds, keys, values, strict=True):
            yield OutRecord(matches if kind == MATCH else popular, key, value)

    def _side_output(self) -> SideOutput:
        return SideOutput(
            self.config.late_topic, self.config.dead_letter_topic, self.dead_codec,
            self.late_codec, self.writer.limit_of,
        )  # fmt: skip

    def _side_records(
        self, aside: SideOutput, table: Any, stats: SensorBatchStats
    ) -> Iterator[OutRecord]:
        columns = {name: table.column(name).to_pylist() for name in table.column_names}
        watermark = self.state.watermark_ms
        for i, kind in enumerate(columns["kind"]):
            origin = Origin.of(*(columns[name][i] for name in ORIGIN_COLUMNS))
            if kind == LATE:
                reason = f"late: event time {columns['ts'][i]} is behind the watermark {watermark}"
                yield aside.late(origin, reason, stats)
            else:
                yield aside.dead(origin, str(columns["reason"][i]), stats)


def _lap(clock: float) -> float:
    return time.monotonic() - clock


def _describe(stats: SensorBatchStats) -> str:
    if stats.skipped:
        return f"batch {stats.batch_id}: already committed, skipped"
    return (
        f"batch {stats.batch_id}: {stats.readings} readings, {stats.queries} queries applied, "
        f"{stats.matches} matches, {stats.popular} popular, {stats.pending} pending, "
        f"{stats.late} late, {stats.dead} dead letters, {stats.state_bytes} state bytes written "
        f"in {stats.seconds:.2f}s ("
        + ", ".join(f"{name} {seconds:.2f}s" for name, seconds in stats.phases.items())
        + ")"
    )


def summarize(history: list[SensorBatchStats]) -> str:
    """One line over a run."""
    done = [s for s in history if not s.skipped]
    if not done:
        return "no new micro-batches"
    events = sum(s.events for s in done)
    seconds = done[-1].started_at + done[-1].seconds - done[0].started_at
    return (
        f"{len(done)} micro-batches: {events} events, {sum(s.readings for s in done)} readings "
        f"and {sum(s.queries for s in done)} queries applied, "
        f"{sum(s.matches for s in done)} matches, {sum(s.popular for s in done)} popular, "
        f"{sum(s.late for s in done)} late, {sum(s.dead for s in done)} dead letters; "
        f"{seconds:.2f}s from first read to last commit = {events / max(seconds, 1e-9):.0f} "
        "events/s"
    )


class SensorObserver:
    """Per-batch figures of the sensor job in its metrics
    (:meth:`SensorBatchProcessor.attach_metrics`)."""

    def __init__(self, metrics: Metrics, processor: SensorBatchProcessor) -> None:
        config = processor.config
        self.metrics = metrics
        metrics.add_topics(
            [config.readings_topic, config.queries_topic],
            [
                config.matches_topic,
                config.popular_topic,
                config.late_topic,
                config.dead_letter_topic,
            ],
        )
        metrics.set_watermark(processor.state.watermark_ms)

    def __call__(self, stats: SensorBatchStats, processor: SensorBatchProcessor) -> None:
        if stats.skipped:
            return
        m, config = self.metrics, processor.config
        m.observe_batch(stats.phases, stats.dead_reasons, LATE_REASONS[1], stats.late)
        m.records_written.labels(config.matches_topic).inc(stats.matches)
        m.records_written.labels(config.popular_topic).inc(stats.popular)
        m.records_written.labels(config.late_topic).inc(stats.late)
        m.records_written.labels(config.dead_letter_topic).inc(stats.dead)
        m.matches.inc(stats.matches)
        m.popular_readings.inc(stats.popular)
        m.pending_events.set(stats.pending)
        m.set_watermark(stats.watermark_ms)


def store_partitions(
    spark: SparkSession, config: SensorJobConfig, checkpoint: JobCheckpoint
) -> int:
    """The state's partitions: as recorded by the checkpoint, else the session's shuffle
    partitions; an explicit ``--shuffle-partitions`` other than the recorded one is refused."""
    recorded = (checkpoint.recorded_settings() or {}).get("state_partitions")
    if recorded is not None and config.shuffle_partitions in (None, recorded):
        return int(recorded)
    return int(config.shuffle_partitions or spark.conf.get("spark.sql.shuffle.partitions") or 1)


def open_processor(spark: SparkSession, config: SensorJobConfig) -> SensorBatchProcessor:
    """Claim the checkpoint, fence the previous writer and read the committed state."""
    checkpoint = JobCheckpoint(spark, config.checkpoint)
    partitions = store_partitions(spark, config, checkpoint)

    def build(job_id: str, writer: TransactionalBatchWriter) -> SensorBatchProcessor:
        return SensorBatchProcessor(spark, config, checkpoint, job_id, partitions, writer)

    return open_job(checkpoint, config, "sensors", config.state_settings(partitions), build)


def start_query(
    spark: SparkSession,
    config: SensorJobConfig,
    on_processor: Callable[[SensorBatchProcessor], None] | None = None,
) -> tuple[StreamingQuery, SensorBatchProcessor]:
    """Create the topics, then start the streaming query (not waiting for it)."""
    config.validate()
    outputs = [config.matches_topic, config.popular_topic, config.late_topic]
    with phase("topics"):
        ensure_topics(
            config.bootstrap,
            [config.readings_topic, config.queries_topic, *outputs, config.dead_letter_topic],
            partitions=config.topic_partitions,
            extra=config.kafka_options,
        )
    use_state_store(spark, config)
    with phase("checkpoint and lease"):
        processor = open_processor(spark, config)
    if on_processor is not None:
        on_processor(processor)
    with phase("topics"):
        ensure_topics(config.bootstrap, [processor.control_topic], 1, extra=config.kafka_options)
    options = stream_options(config, processor.input_topics, processor.control_topic)
    events = sensor_events(
        read_kafka_stream(spark, options), processor.topics, config.registry, config.clock_skew,
        processor.job_id, processor.control_topic, config.lateness_ms,
    )  # fmt: skip
    writer = (
        events.writeStream.queryName(f"trending-sensors-{processor.job_id}")
        .option("checkpointLocation", processor.checkpoint.query_location)
        .foreachBatch(processor)
    )
    with phase("query start"):
        return triggered(writer, config).start(), processor


class SensorsJob:
    """``trending run sensors`` for :func:`trending.jobs.runtime.run`."""

    name = "sensors"

    def start(
        self,
        spark: SparkSession,
        config: SensorJobConfig,
        on_processor: Callable[[Any], None] | None,
    ) -> tuple[StreamingQuery, SensorBatchProcessor]:
        return start_query(spark, config, on_processor)

    def describe(self, config: SensorJobConfig) -> str:
        windows = "one per sensor" if config.partition_by_sensor else "one window"
        return (
            f"{config.readings_topic} + {config.queries_topic} -> {config.matches_topic}, "
            f"{config.popular_topic} (last {config.size} readings, {windows}, threshold "
            f"{config.threshold}, lateness {format_duration_ms(config.lateness_ms)})"
        )

    def summarize(self, history: Sequence[Any]) -> str:
        return summarize(list(history))

    def follow(self, spark: SparkSession, config: SensorJobConfig, ended: Any, runs: int) -> None:
        return None  # a run that ended (available-now) is the end of the job


SENSORS = SensorsJob()
