"""What every streaming job shares: its Spark and Kafka settings, the state store it runs on,
claiming its checkpoint and output, its trigger, and reading the driver state it committed with
its last batch."""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from confluent_kafka import KafkaError

from connectors.kafka_settings import SchemaRegistryAccess, registry_access
from connectors.spark_kafka import source_options
from connectors.transactions import TXN_STEP_TIMEOUT_S, TransactionalBatchWriter
from trending.errors import UserError
from trending.jobs.batching import batch_bound
from trending.jobs.faults import crash_after_commit
from trending.lease import DEFAULT_TIMEOUT_S, CheckpointLease, LeaseLost
from trending.spark.clock import DEFAULT_MAX_FUTURE_MS, ClockSkew, advance_value
from trending.spark.session import PROVIDER_CONF, ROCKSDB_PROVIDER

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming.readwriter import DataStreamWriter

    from trending.spark.checkpoint import JobCheckpoint


class BatchRecord(Protocol):
    """What every job's per-batch figures hold."""

    batch_id: int
    skipped: bool
    seconds: float


T = TypeVar("T")
P = TypeVar("P", bound="CommittedBatches[Any]")
S = TypeVar("S", bound=BatchRecord)
log = logging.getLogger("trending.jobs")


class CommittedBatches(Generic[S]):
    """The ``foreachBatch`` frame every job shares: a batch whose output is already committed
    (replayed after a crash) is skipped, any other is processed; each is timed, kept in
    ``history``, shown to the ``observers`` (metrics) and logged. Subclasses set ``checkpoint``,
    ``writer``, ``history`` and ``observers`` and define the four hooks below."""

    checkpoint: JobCheckpoint
    writer: TransactionalBatchWriter
    history: list[S]
    observers: list[Callable[[S, Any], None]]
    repair: str | None = None  # what settling the checkpoint did, if anything
    lease: CheckpointLease | None = None  # this process's ownership of the checkpoint
    lease_lost: LeaseLost | None = None  # set by the lease's heartbeat when taken over
    failure: str | None = None  # why the last batch failed, in one line
    running: int | None = None  # the id of the batch being processed, if any
    input_topics: tuple[str, ...] = ()  # the topics of the job's input (not its control topic)
    control_topic: str = ""  # the job's own topic, read with the input (trending.jobs.idle)

    def _new_stats(self, batch_id: int) -> S:
        raise NotImplementedError

    def _process(self, batch: DataFrame, batch_id: int, stats: S) -> None:
        raise NotImplementedError

    def _describe(self, stats: S) -> str:
        raise NotImplementedError

    def _next_watermark_ms(self) -> int | None:
        """The watermark the next batch runs under (Spark records it when a batch is done)."""
        raise NotImplementedError

    def watermark_ms(self) -> int | None:
        """The job's event-time watermark now (None before any event)."""
        return self._next_watermark_ms()

    def advance_value(self, watermark_ms: int) -> bytes:
        """The record of :attr:`control_topic` that moves the watermark to ``watermark_ms``."""
        return advance_value(watermark_ms)

    def settle_checkpoint(self) -> None:
        """Match the query's checkpoint with the committed output (before the query starts)."""
        self.repair = self.checkpoint.settle(self.writer.last_committed, self._next_watermark_ms())
        if self.repair:
            log.warning("checkpoint: %s", self.repair)

    def close(self) -> None:
        """Release the job's Kafka clients and its checkpoint; call once the query stopped."""
        self.writer.close()
        if self.lease is not None:
            self.lease.release()

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        self.running = batch_id
        try:
            self._run(batch, batch_id)
        finally:
            self.running = None

    def _run(self, batch: DataFrame, batch_id: int) -> None:
        started = time.monotonic()
        stats = self._new_stats(batch_id)
        if self.lease is not None:
            self.lease.check()  # a process whose checkpoint was taken over writes nothing
        if batch_id <= self.writer.last_committed:
            stats.skipped = True  # replayed after a crash: its output is already committed
        else:
            try:
                self._process(batch, batch_id, stats)
            except Exception as error:
                self.failure = f"batch {batch_id} failed: {brief(error)}"
                raise
            crash_after_commit(batch_id)  # a fault the tests inject (trending.jobs.faults)
            self.failure = None  # an earlier failure of this processor was redone
        stats.seconds = time.monotonic() - started
        self.history.append(stats)
        for observe in self.observers:  # metrics (trending.metrics)
            try:
                observe(stats, self)
            except Exception:  # metrics must never fail a batch
                log.exception("metrics: could not record batch %d", stats.batch_id)
        log.info(self._describe(stats), extra={"batch": stats.batch_id})


def brief(error: BaseException) -> str:
    """``error`` in one line: a Kafka error by its code name and text."""
    cause = error.args[0] if error.args else None
    if isinstance(cause, KafkaError):
        return f"Kafka error {cause.name()}: {cause.str()}"
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}"


STATE_STORE_CONF = {
    PROVIDER_CONF: ROCKSDB_PROVIDER,
    "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
    # Counting rows costs a read before every write; the state's size is reported in bytes.
    "spark.sql.streaming.stateStore.rocksdb.trackTotalNumberOfRows": "false",
}


DEFAULT_SHUTDOWN_TIMEOUT_S = 20.0  # under Kubernetes' default grace period of 30 s
DEFAULT_COLLECT_PART_BYTES = 64 * 2**20  # see trending.spark.collect


@dataclass(frozen=True)
class JobSettings:
    """The settings of a job's query, source and sink (times in milliseconds)."""

    bootstrap: str
    checkpoint: str  # any path Spark accepts: /dir, file:///dir, hdfs://..., s3a://...
    trigger_ms: int = 1_000
    available_now: bool = False
    master: str | None = None
    starting_offsets: str = "earliest"
    max_offsets_per_trigger: int | None = None
    shuffle_partitions: int | None = None
    # Kafka and registry settings may hold secrets: kept out of repr (see connectors.kafka_settings)
    schema_registry_url: str | None = field(default=None, repr=False)
    topic_partitions: int = 4
    spark_kafka_options: Mapping[str, str] = field(default_factory=dict, repr=False)
    kafka_options: Mapping[str, str] = field(default_factory=dict, repr=False)
    spark_conf: Mapping[str, str] = field(default_factory=dict, repr=False)  # may hold keys too
    max_future_skew_ms: int | None = DEFAULT_MAX_FUTURE_MS  # see trending.spark.clock
    max_past_skew_ms: int | None = None
    lease_timeout_s: float = DEFAULT_TIMEOUT_S  # see trending.lease
    shutdown_timeout_s: float = DEFAULT_SHUTDOWN_TIMEOUT_S  # SIGTERM: the batch in progress ends
    kafka_step_timeout_s: float = TXN_STEP_TIMEOUT_S  # see connectors.transactions
    # the most bytes of a batch's output the driver fetches at once (trending.spark.collect)
    collect_part_bytes: int = DEFAULT_COLLECT_PART_BYTES
    idle_advance_ms: int | None = None  # see trending.jobs.idle (None: off)

    @property
    def batch_bound(self) -> int | None:
        """Spark's ``maxOffsetsPerTrigger`` (see :func:`trending.jobs.batching.batch_bound`)."""
        return batch_bound(self.max_offsets_per_trigger, self.trigger_ms)

    @property
    def registry(self) -> SchemaRegistryAccess | None:
        """How the executors reach the schema registry (None: input values are bare Avro)."""
        return registry_access(self.schema_registry_url, os.environ)

    @property
    def clock_skew(self) -> ClockSkew:
        """How far event times may be from the batch's clock before they are dead letters."""
        try:
            return ClockSkew(self.max_future_skew_ms, self.max_past_skew_ms)
        except ValueError as error:
            raise UserError(f"--{error}") from error


def use_state_store(spark: SparkSession, config: JobSettings) -> None:
    """Set :data:`STATE_STORE_CONF` on the session, except what the user's ``--conf`` set
    (e.g. ``trackTotalNumberOfRows=true`` to see the state's row count)."""
    for key, value in STATE_STORE_CONF.items():
        spark.conf.set(key, config.spark_conf.get(key, value))


def committed_state(writer: TransactionalBatchWriter, parse: Callable[[Any], T]) -> T | None:
    """``parse`` of the state committed with the writer's last batch (None before the first);
    :class:`UserError` when it cannot be read."""
    committed = writer.committed
    if committed.batch_id < 0:
        return None
    try:
        return parse(committed.state)
    except (ValueError, KeyError, TypeError, IndexError) as error:
        raise UserError(
            f"the state committed with batch {committed.batch_id} for "
            f"{writer.transactional_id} cannot be read ({error}); start over with a new "
            "--checkpoint"
        ) from error


def open_job(
    checkpoint: JobCheckpoint,
    config: JobSettings,
    job: str,
    settings: Mapping[str, Any],
    build: Callable[[str, TransactionalBatchWriter], P],
) -> P:
    """Take the lease on ``checkpoint`` (one process per checkpoint), claim it for ``job``
    with ``settings``, fence the previous writer of its output (a new transactional producer),
    then ``build(job_id, writer)`` the processor and settle the checkpoint with the output
    committed last. The lease beats until the processor is closed."""
    lease = checkpoint.lease(config.lease_timeout_s)
    lease.acquire()
    writer: TransactionalBatchWriter | None = None
    try:
        job_id = checkpoint.claim(job, settings)
        writer = TransactionalBatchWriter(
            config.bootstrap,
            f"trending-{job}-{job_id}",
            config.kafka_options,
            step_timeout_s=config.kafka_step_timeout_s,
        )
        if writer.last_committed < 0 and checkpoint.has_batches():
            writer.recover_committed()  # the marker expired: its state records stand in
        writer.still_owner = lambda: _holds(lease)  # a fenced producer may then be replaced
        processor = build(job_id, writer)
        processor.lease = lease
        processor.settle_checkpoint()
    except BaseException:
        if writer is not None:
            writer.close()
        lease.release()
        raise

    def on_lost(lost: LeaseLost) -> None:
        log.error("checkpoint lease: %s", lost)
        processor.lease_lost = lost

    lease.start_heartbeat(on_lost)
    return processor


def _holds(lease: CheckpointLease) -> bool:
    """Whether this process still holds ``lease`` (read from the checkpoint)."""
    try:
        lease.check()
    except LeaseLost:
        return False
    return True


def stream_options(
    config: JobSettings, input_topics: Sequence[str], control_topic: str
) -> dict[str, str]:
    """Spark's Kafka source options for a job's query: its input topics and its control topic.
    Starting offsets given per partition (Spark's JSON form, which must name every partition
    read) start the control topic at its beginning unless they name it."""
    starting = config.starting_offsets
    if starting.lstrip().startswith("{"):
        try:
            offsets = json.loads(starting)
        except ValueError as error:
            raise UserError(f"--starting-offsets is not JSON: {error}") from error
        offsets.setdefault(control_topic, {"0": -2})  # -2: earliest
        starting = json.dumps(offsets)
    return source_options(
        config.bootstrap, ",".join([*input_topics, control_topic]), starting,
        config.batch_bound, config.spark_kafka_options,
    )  # fmt: skip


def triggered(writer: DataStreamWriter, config: JobSettings) -> DataStreamWriter:
    """``writer`` with the job's trigger: available-now, or every ``trigger_ms``."""
    if config.available_now:
        return writer.trigger(availableNow=True)
    return writer.trigger(processingTime=f"{config.trigger_ms} milliseconds")
