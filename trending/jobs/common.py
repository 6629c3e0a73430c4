"""What every streaming job shares: its Spark and Kafka settings, the state store it runs on,
claiming its checkpoint and output, its trigger, and reading the driver state it committed with
its last batch."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from connectors.transactions import TransactionalBatchWriter
from trending.errors import UserError
from trending.spark.session import PROVIDER_CONF, ROCKSDB_PROVIDER

if TYPE_CHECKING:
    from pyspark.sql.streaming.readwriter import DataStreamWriter

    from trending.spark.checkpoint import JobCheckpoint


class BatchProcessor(Protocol):
    """A job's ``foreachBatch`` function, as :func:`open_job` builds it."""

    def settle_checkpoint(self) -> None: ...


T = TypeVar("T")
P = TypeVar("P", bound=BatchProcessor)
STATE_STORE_CONF = {
    PROVIDER_CONF: ROCKSDB_PROVIDER,
    "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
    # Counting rows costs a read before every write; the state's size is reported in bytes.
    "spark.sql.streaming.stateStore.rocksdb.trackTotalNumberOfRows": "false",
}


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
    schema_registry_url: str | None = None
    topic_partitions: int = 4
    spark_kafka_options: Mapping[str, str] = field(default_factory=dict)
    kafka_options: Mapping[str, str] = field(default_factory=dict)
    spark_conf: Mapping[str, str] = field(default_factory=dict)


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
    """Claim ``checkpoint`` for ``job`` with ``settings``, fence the previous writer of its
    output (a new transactional producer), then ``build(job_id, writer)`` the processor and
    settle the checkpoint with the output committed last."""
    job_id = checkpoint.claim(job, settings)
    writer = TransactionalBatchWriter(
        config.bootstrap, f"trending-{job}-{job_id}", config.kafka_options
    )
    try:
        processor = build(job_id, writer)
        processor.settle_checkpoint()
    except BaseException:
        writer.close()
        raise
    return processor


def triggered(writer: DataStreamWriter, config: JobSettings) -> DataStreamWriter:
    """``writer`` with the job's trigger: available-now, or every ``trigger_ms``."""
    if config.available_now:
        return writer.trigger(availableNow=True)
    return writer.trigger(processingTime=f"{config.trigger_ms} milliseconds")
