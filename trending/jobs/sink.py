"""Exactly-once Kafka output for a streaming DataFrame of your own: :func:`publish_exactly_once`.

The DataFrame has columns ``topic`` (string), ``key`` (binary or string, may be null) and
``value`` (binary or string). Each micro-batch's rows are published in one Kafka transaction with
the batch's marker (:mod:`connectors.transactions`), under a lease on the checkpoint (one process
per checkpoint, :mod:`trending.lease`), so that after any crash and restart a reader with
``isolation.level=read_committed`` sees every row exactly once. Spark's own Kafka sink is
at-least-once: a batch re-run after a crash is published a second time.

The rows pass through the driver on their way to Kafka (a batch's output, not the window state).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from connectors.transactions import OutRecord, TransactionalBatchWriter
from trending.errors import UserError
from trending.jobs.common import CommittedBatches, JobSettings, open_job, triggered
from trending.spark.checkpoint import JobCheckpoint

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.streaming.query import StreamingQuery

COLUMNS = ("topic", "key", "value")


@dataclass
class SinkBatchStats:
    """What one micro-batch published."""

    batch_id: int
    records: int = 0
    seconds: float = 0.0
    skipped: bool = False


class KafkaSinkProcessor(CommittedBatches[SinkBatchStats]):
    """The ``foreachBatch`` function: a batch's rows in one transaction, a replayed batch
    (already committed) skipped."""

    def __init__(self, checkpoint: JobCheckpoint, writer: TransactionalBatchWriter) -> None:
        self.checkpoint, self.writer = checkpoint, writer
        self.history: list[SinkBatchStats] = []
        self.observers: list[Callable[[SinkBatchStats, Any], None]] = []

    def _new_stats(self, batch_id: int) -> SinkBatchStats:
        return SinkBatchStats(batch_id)

    def _next_watermark_ms(self) -> int | None:
        return self.checkpoint.done_watermark_ms()

    def _describe(self, stats: SinkBatchStats) -> str:
        if stats.skipped:
            return f"batch {stats.batch_id}: already committed, skipped"
        return f"batch {stats.batch_id}: {stats.records} records in {stats.seconds:.2f}s"

    def _process(self, batch: DataFrame, batch_id: int, stats: SinkBatchStats) -> None:
        typed = [batch[name].cast("string" if name == "topic" else "binary") for name in COLUMNS]
        rows = batch.select(*typed)
        stats.records = self.writer.write_batch(batch_id, _records(rows.toLocalIterator()))


def _records(rows: Iterator[Any]) -> Iterator[OutRecord]:
    for topic, key, value in rows:
        if topic is None:
            raise UserError("a row to publish has no topic: the topic column must not be null")
        yield OutRecord(topic, None if key is None else bytes(key), _bytes(value))


def _bytes(value: Any) -> bytes | None:
    return None if value is None else bytes(value)


def publish_exactly_once(
    rows: DataFrame, settings: JobSettings, name: str = "sink"
) -> tuple[StreamingQuery, KafkaSinkProcessor]:
    """Start a query that publishes the streaming DataFrame ``rows`` (columns ``topic``,
    ``key``, ``value``) exactly once, with ``settings``' bootstrap servers, Kafka options,
    checkpoint, trigger and lease timeout. ``name`` identifies the output: a checkpoint keeps
    it for its lifetime. Call ``processor.close()`` once the query stopped."""
    missing = [column for column in COLUMNS if column not in rows.columns]
    if missing:
        raise UserError(f"publish_exactly_once needs the columns {', '.join(missing)}")
    checkpoint = JobCheckpoint(rows.sparkSession, settings.checkpoint)
    processor = open_job(
        checkpoint, settings, name, {"output": name}, lambda _id, writer: KafkaSinkProcessor(
            checkpoint, writer
        )
    )  # fmt: skip
    writer = (
        rows.writeStream.queryName(f"trending-{name}")
        .option("checkpointLocation", checkpoint.query_location)
        .foreachBatch(processor)
    )
    try:
        return triggered(writer, settings).start(), processor
    except BaseException:
        processor.close()
        raise
