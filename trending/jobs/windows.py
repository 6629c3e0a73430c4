"""``trending run windows SPEC``: a temporal window spec per key, from Kafka to Kafka.

Input: interval events, edges and CTIs (``schemas/interval_event.avsc``) on ``--input-topic``.
Per key, the spec's query (:mod:`trending.windows.temporal`) runs in Spark's state store on the
executors: the engine of the library's :func:`trending.temporal_window`
(:func:`trending.spark.temporal_steps.run_temporal`), here over the decoded Kafka events and
giving rows that keep each event's Kafka origin for the late and dead-letter topics, with
Spark's event-time watermark
``W = max sync time - lateness`` (raised by CTI records) as every key's CTI. Output: the rows
each CTI makes final (``schemas/window_row.avsc``) on ``--output-topic``, keyed by key; late
events (sync time behind ``W``) to ``--late-topic``, bad ones to ``--dead-letter-topic``, both
in the dead-letter envelope. One Kafka transaction per batch, with the driver's state: the
watermark the next batch runs under.

``--available-now`` processes what is in the topic, then closes the input as the replay tool
does: the end of the input is a CTI at the end of time (a CTI record the job writes to its own
control topic, read with the input), so every row becomes final. ``--keep-open`` skips that.

Only that control topic closes the input. A CTI at the end of time on the input topic is a dead
letter (reason :data:`~trending.spark.temporal_steps.FOREIGN_END_OF_INPUT`) and moves no
watermark: a CTI promises that nothing before its time changes any more, and one at the end of
time would make every later event of every key late, for good, across restarts; an upstream
producer (a replayed file's last line, a test, a bad clock) is not in a position to promise that
for the job. An input CTI at any other time is an ordinary CTI (under ``--max-future-skew``).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from confluent_kafka import Producer

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
from trending.spark.checkpoint import JobCheckpoint
from trending.spark.clock import batch_clock, set_batch_clock
from trending.spark.collect import in_parts
from trending.spark.key_buckets import default_buckets
from trending.spark.session import NO_DATA_CONF
from trending.spark.temporal_jvm_step import jvm_query
from trending.spark.temporal_steps import (
    DEAD,
    LATE,
    PROGRESS,
    RESULT,
    apply_temporal,
    encoded_results,
    temporal_events,
)
from trending.windows.spl.spec import SpecError
from trending.windows.temporal import END_OF_TIME, TemporalQuery
from trending.windows.temporal.spec import parse_temporal_spec

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming.query import StreamingQuery

log = logging.getLogger(__name__)
STATE_LAYOUT = "temporal-keys-jvm-1"
"""The keys' state on the JVM core (:mod:`trending.spark.temporal_jvm_step`: state
``temporal_jvm``, one grouping key per key)."""
PYTHON_STATE_LAYOUT = "temporal-buckets-1"
"""The keys' state on the Python core (state ``temporal_keys`` in buckets of keys): a query
only the Python core runs, or ``spark.trending.temporal.engine=python``."""


@dataclass(frozen=True)
class WindowsJobConfig(JobSettings):
    """Everything ``trending run windows`` can be told (times in milliseconds)."""

    spec: Mapping[str, Any] = field(default_factory=dict)
    input_topic: str = "interval-events"
    output_topic: str = "window-rows"
    late_topic: str = "interval-events-late"
    dead_letter_topic: str = "interval-events-dlq"
    lateness_ms: int = 5_000
    keep_open: bool = False

    def query(self) -> TemporalQuery:
        """The spec's query; :class:`UserError` for a spec that is not a temporal one."""
        try:
            return parse_temporal_spec(dict(self.spec))
        except SpecError as error:
            raise UserError(f"spec: {error}") from error

    def validate(self) -> None:
        self.query()
        if self.lateness_ms < 0:
            raise UserError("--lateness must be >= 0")

    def state_settings(self, buckets: int | None, on_jvm: bool = True) -> dict[str, Any]:
        """The settings the job's state depends on: a checkpoint keeps them for its lifetime.
        ``on_jvm``: the query runs on the JVM core (the buckets do not apply there)."""
        return {
            "state_layout": STATE_LAYOUT if on_jvm else PYTHON_STATE_LAYOUT,
            "spec": json.loads(json.dumps(self.spec, sort_keys=True)),
            "lateness_ms": self.lateness_ms,
            "buckets": None if on_jvm else buckets,
        }


@dataclass
class DriverState:
    """The driver's state, committed with each batch: the watermark the next batch runs under."""

    watermark_ms: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"v": 1, "watermark_ms": self.watermark_ms}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> DriverState:
        if data.get("v") != 1:
            raise ValueError(f"unknown state version {data.get('v')!r}")
        return cls(int(data["watermark_ms"]))

    @property
    def closed(self) -> bool:
        """The end-of-time CTI has passed: every row is final."""
        return self.watermark_ms >= END_OF_TIME


@dataclass
class WindowsBatchStats:
    """What one micro-batch did, for the progress line."""

    batch_id: int
    events: int = 0
    rows: int = 0
    late: int = 0
    dead: int = 0
    watermark_ms: int = 0
    seconds: float = 0.0
    started_at: float = 0.0
    skipped: bool = False
    phases: dict[str, float] = field(default_factory=dict)
    dead_reasons: dict[str, int] = field(default_factory=dict)


class WindowsBatchProcessor(CommittedBatches[WindowsBatchStats]):
    """The ``foreachBatch`` function: exactly-once window rows, late and dead letters."""

    def __init__(
        self,
        config: WindowsJobConfig,
        checkpoint: JobCheckpoint,
        job_id: str,
        writer: TransactionalBatchWriter,
        buckets: int | None = None,
    ) -> None:
        self.config, self.checkpoint, self.job_id, self.writer = config, checkpoint, job_id, writer
        self.buckets = buckets  # of the keys' state (:mod:`trending.spark.key_buckets`)
        self.input_topics = (config.input_topic,)
        # the job's own topic: ``--available-now``'s end-of-input CTI, ``--idle-advance``'s CTIs
        self.control_topic = f"trending-windows-cti-{job_id}"
        self.state = committed_state(writer, DriverState.from_json) or DriverState()
        url = config.schema_registry_url
        self.rows_codec = AvroCodec("window_row", url, subject=f"{config.output_topic}-value")
        self.late_codec = AvroCodec("dead_letter", url, subject=f"{config.late_topic}-value")
        self.dead_codec = AvroCodec("dead_letter", url, subject=f"{config.dead_letter_topic}-value")
        self.cti_codec = AvroCodec("interval_event", url)
        self.history: list[WindowsBatchStats] = []
        self.observers: list[Callable[[WindowsBatchStats, WindowsBatchProcessor], None]] = []

    def attach_metrics(self, metrics: Metrics) -> None:
        """Count this job's batches in ``metrics`` (call before the query starts)."""
        self.observers.append(WindowsObserver(metrics, self))

    def advance_value(self, watermark_ms: int) -> bytes:
        """A CTI at ``watermark_ms`` (the control topic's records are interval events)."""
        return self.cti_codec.encode({"kind": "CTI", "start": watermark_ms})

    def _new_stats(self, batch_id: int) -> WindowsBatchStats:
        return WindowsBatchStats(batch_id, started_at=time.time())

    def _next_watermark_ms(self) -> int | None:
        return self.state.watermark_ms

    def _describe(self, stats: WindowsBatchStats) -> str:
        return _describe(stats)

    def _process(self, batch: DataFrame, batch_id: int, stats: WindowsBatchStats) -> None:
        from pyspark.sql import functions as F

        clock = time.monotonic()
        set_batch_clock(batch.sparkSession, self.job_id, self.checkpoint.batch_clock_ms(batch_id))
        kept = batch.persist()
        try:
            progress = F.col("kind") == F.lit(PROGRESS)
            figures = kept.agg(
                F.max(F.when(progress, F.col("sync_ms"))).alias("mark"),
                F.sum(F.when(progress, F.col("events"))).alias("events"),
            ).first()
            assert figures is not None
            state = DriverState(self.state.watermark_ms)
            if figures["mark"] is not None:
                mark = figures["mark"] - self.config.lateness_ms
                state.watermark_ms = max(state.watermark_ms, mark)
            stats.events = int(figures["events"] or 0)
            stats.phases["spark"] = time.monotonic() - clock
            clock = time.monotonic()
            rows = encoded_results(
                kept.where(~progress), self.rows_codec.text, self.rows_codec.header
            )
            part_bytes = self.config.collect_part_bytes

            def records() -> Iterator[OutRecord]:
                # fetched in parts (a key's rows in one), counted anew by each attempt
                stats.rows, stats.late, stats.dead, stats.dead_reasons = 0, 0, 0, {}
                for part in in_parts(rows, part_bytes, by=("key",)):
                    yield from self._records(part.to_pylist(), batch_id, stats)

            self.writer.write_batch(batch_id, records, state.to_json())
        finally:
            kept.unpersist()
        stats.phases["publish"] = time.monotonic() - clock
        self.state = state
        stats.watermark_ms = state.watermark_ms

    def _records(
        self, rows: list[dict[str, Any]], batch_id: int, stats: WindowsBatchStats
    ) -> Iterator[OutRecord]:
        """The results of collected ``rows`` in order of start, end and key, then their late
        and dead records."""
        results = sorted(
            (r for r in rows if r["kind"] == RESULT),
            key=lambda r: (r["start_ms"], _end(r["end_ms"]), r["key"] or ""),
        )
        aside = SideOutput(
            self.config.late_topic, self.config.dead_letter_topic, self.dead_codec,
            self.late_codec, self.writer.limit_of,
        )  # fmt: skip
        topic = self.config.output_topic
        for row in results:
            stats.rows += 1
            yield aside.result(OutRecord(topic, _utf8(row["key"]), row["avro"]), batch_id, stats)
        for row in rows:
            if row["kind"] in (LATE, DEAD):
                origin = Origin.of(
                    row["topic"], row["partition"], row["offset"], row["record_key"], row["raw"],
                    row["record_ts"], row["headers"],
                )  # fmt: skip
                route = aside.late if row["kind"] == LATE else aside.dead
                yield route(origin, str(row["reason"]), stats)


def _end(end_ms: int | None) -> int:
    return END_OF_TIME if end_ms is None else end_ms


def _utf8(text: str | None) -> bytes | None:
    return None if text is None else text.encode("utf-8")


def _describe(stats: WindowsBatchStats) -> str:
    if stats.skipped:
        return f"batch {stats.batch_id}: already committed, skipped"
    return (
        f"batch {stats.batch_id}: {stats.events} events, {stats.rows} rows, {stats.late} late, "
        f"{stats.dead} dead letters, next watermark {stats.watermark_ms} "
        f"in {stats.seconds:.2f}s"
    )


def summarize(history: list[WindowsBatchStats]) -> str:
    """One line over a run."""
    done = [s for s in history if not s.skipped]
    if not done:
        return "no new micro-batches"
    events = sum(s.events for s in done)
    seconds = done[-1].started_at + done[-1].seconds - done[0].started_at
    return (
        f"{len(done)} micro-batches: {events} events, {sum(s.rows for s in done)} rows, "
        f"{sum(s.late for s in done)} late, {sum(s.dead for s in done)} dead letters; "
        f"{seconds:.2f}s from first read to last commit = {events / max(seconds, 1e-9):.0f} "
        "events/s"
    )


class WindowsObserver:
    """Per-batch figures of the temporal window job in its metrics
    (:meth:`WindowsBatchProcessor.attach_metrics`)."""

    def __init__(self, metrics: Metrics, processor: WindowsBatchProcessor) -> None:
        config = processor.config
        self.metrics = metrics
        metrics.add_topics(
            [config.input_topic],
            [config.output_topic, config.late_topic, config.dead_letter_topic],
        )
        metrics.set_watermark(processor.state.watermark_ms or None)

    def __call__(self, stats: WindowsBatchStats, processor: WindowsBatchProcessor) -> None:
        if stats.skipped:
            return
        m, config = self.metrics, processor.config
        m.observe_batch(stats.phases, stats.dead_reasons, LATE_REASONS[1], stats.late)
        m.records_written.labels(config.output_topic).inc(stats.rows)
        m.records_written.labels(config.late_topic).inc(stats.late)
        m.records_written.labels(config.dead_letter_topic).inc(stats.dead)
        m.set_watermark(stats.watermark_ms or None)


def open_processor(spark: SparkSession, config: WindowsJobConfig) -> WindowsBatchProcessor:
    """Claim the checkpoint, fence the previous writer and read the committed state."""
    checkpoint = JobCheckpoint(spark, config.checkpoint)
    buckets = key_buckets(spark, checkpoint)
    on_jvm = jvm_query(spark, config.query()) is not None
    settings = config.state_settings(buckets, on_jvm)

    def build(job_id: str, writer: TransactionalBatchWriter) -> WindowsBatchProcessor:
        return WindowsBatchProcessor(config, checkpoint, job_id, writer, buckets)

    return open_job(checkpoint, config, "windows", settings, build)


def key_buckets(spark: SparkSession, checkpoint: JobCheckpoint) -> int:
    """How many buckets the keys' state is in on the Python core: as recorded by the
    checkpoint, else two per shuffle partition of the session
    (:mod:`trending.spark.key_buckets`)."""
    recorded = (checkpoint.recorded_settings() or {}).get("buckets")
    return default_buckets(spark) if recorded is None else int(recorded)


def start_query(
    spark: SparkSession,
    config: WindowsJobConfig,
    on_processor: Callable[[WindowsBatchProcessor], None] | None = None,
    processor: WindowsBatchProcessor | None = None,
) -> tuple[StreamingQuery, WindowsBatchProcessor]:
    """Create the topics, then start the streaming query (not waiting for it); a given
    ``processor`` (of a run that ended) goes on with its checkpoint."""
    config.validate()
    outputs = [config.output_topic, config.late_topic, config.dead_letter_topic]
    with phase("topics"):
        ensure_topics(
            config.bootstrap, [config.input_topic, *outputs],
            partitions=config.topic_partitions, extra=config.kafka_options,
        )  # fmt: skip
    use_state_store(spark, config)
    spark.conf.set(NO_DATA_CONF, "true")  # a batch without input still fires the keys' timers
    if processor is None:
        with phase("checkpoint and lease"):
            processor = open_processor(spark, config)
        if on_processor is not None:
            on_processor(processor)
    with phase("topics"):
        ensure_topics(config.bootstrap, [processor.control_topic], 1, extra=config.kafka_options)
    options = stream_options(config, processor.input_topics, processor.control_topic)
    events = temporal_events(
        read_kafka_stream(spark, options), schema_json("interval_event"), config.registry,
        config.lateness_ms, config.clock_skew, processor.control_topic,
        batch_clock(spark, processor.job_id),
    )  # fmt: skip
    writer = (
        apply_temporal(events, config.query(), processor.buckets)
        .writeStream.queryName(f"trending-windows-{processor.job_id}")
        .option("checkpointLocation", processor.checkpoint.query_location)
        .foreachBatch(processor)
    )
    with phase("query start"):
        return triggered(writer, config).start(), processor


def close_input(config: WindowsJobConfig, processor: WindowsBatchProcessor) -> bool:
    """Write the end-of-input CTI to the job's control topic, unless every row is final
    already or ``--keep-open``; True when a run must follow to apply it."""
    if config.keep_open or processor.state.closed:
        return False
    from trending.status import kafka_log_settings

    codec = AvroCodec("interval_event", config.schema_registry_url)
    producer = Producer(
        {"bootstrap.servers": config.bootstrap, "enable.idempotence": True,
         **config.kafka_options, **kafka_log_settings()}
    )  # fmt: skip
    producer.produce(processor.control_topic, codec.encode({"kind": "CTI", "start": END_OF_TIME}))
    if producer.flush(30) != 0:
        raise UserError(f"could not write the end-of-input CTI to {processor.control_topic}")
    return True


class WindowsJob:
    """``trending run windows`` for :func:`trending.jobs.runtime.run`: with ``--available-now``
    (and not ``--keep-open``), a run that ended is followed by one that applies the end-of-input
    CTI (:func:`close_input`)."""

    name = "windows"

    def start(
        self,
        spark: SparkSession,
        config: WindowsJobConfig,
        on_processor: Callable[[Any], None] | None,
    ) -> tuple[StreamingQuery, WindowsBatchProcessor]:
        return start_query(spark, config, on_processor)

    def describe(self, config: WindowsJobConfig) -> str:
        return (
            f"{config.input_topic} -> {config.output_topic} ({config.query().window.name} per "
            f"key, lateness {format_duration_ms(config.lateness_ms)})"
        )

    def summarize(self, history: Sequence[Any]) -> str:
        return summarize(list(history))

    def follow(
        self, spark: SparkSession, config: WindowsJobConfig, ended: Any, runs: int
    ) -> tuple[StreamingQuery, WindowsBatchProcessor] | None:
        closing = config.available_now and not config.keep_open
        if runs > 1 or not closing or not close_input(config, ended):
            return None
        return start_query(spark, config, processor=ended)


WINDOWS = WindowsJob()
