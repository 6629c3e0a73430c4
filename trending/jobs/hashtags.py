"""Trending hashtags: the top-k hashtags of every sliding event-time window, from Kafka to Kafka.

Tweets are read from Kafka and reduced in the JVM to per-pane hashtag counts
(:mod:`trending.spark.tweet_batches`); the driver folds them into the open windows
(:class:`trending.windows.sliding_topk.SlidingTopK`) and publishes, in one Kafka transaction per
micro-batch, every changed top-k, every window the watermark closes, the late tweets and the
dead letters.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from connectors.avro import AvroCodec, schema_json
from connectors.kafka import ensure_topics
from connectors.spark_kafka import read_kafka_stream, source_options
from connectors.transactions import OutRecord, TransactionalBatchWriter
from trending.checkpoint import SnapshotStore, reconcile_spark_log
from trending.errors import UserError
from trending.spark.tweet_batches import COUNTED, LATE, SIDE_COLUMNS, plan_batch, warm_up
from trending.windows.sliding import SlidingWindows
from trending.windows.sliding_topk import SlidingTopK, SlidingTopKState, TopKUpdate

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame
    from pyspark.sql.streaming.query import StreamingQuery

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class HashtagJobConfig:
    """Everything ``trending run hashtags`` can be told (times in milliseconds)."""

    bootstrap: str
    checkpoint: Path
    input_topic: str = "tweets"
    output_topic: str = "trending-hashtags"
    late_topic: str = "tweets-late"
    dead_letter_topic: str = "tweets-dlq"
    size_ms: int = 300_000
    hop_ms: int = 60_000
    align_ms: int = 0
    k: int = 10
    lateness_ms: int = 30_000
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
    warm_up_rows: int = 200_000

    @property
    def windows(self) -> SlidingWindows:
        return SlidingWindows(self.size_ms, self.hop_ms, self.align_ms)


@dataclass
class BatchStats:
    """What one micro-batch did, for the progress line and metrics."""

    batch_id: int
    tweets: int = 0
    late: int = 0
    dead: int = 0
    revisions: int = 0
    finals: int = 0
    seconds: float = 0.0
    watermark_ms: int | None = None
    skipped: bool = False
    started_at: float = 0.0  # wall clock, seconds
    state_bytes: int | None = None  # serialized size of the window state after the batch
    phases: dict[str, float] = field(default_factory=dict)  # seconds per phase
    dead_reasons: dict[str, int] = field(default_factory=dict)  # dead letters per reason


class HashtagBatchProcessor:
    """The ``foreachBatch`` function: exactly-once top-k publication from aggregated rows."""

    def __init__(self, config: HashtagJobConfig) -> None:
        self.config = config
        self.job_id = _job_id(config.checkpoint)
        self.snapshots = SnapshotStore(config.checkpoint / "driver-state")
        self.writer = TransactionalBatchWriter(
            config.bootstrap, f"trending-hashtags-{self.job_id}", config.kafka_options
        )
        self.engine = SlidingTopK(
            config.windows, config.k, config.lateness_ms, self._restore(self.writer.last_committed)
        )
        url = config.schema_registry_url
        self.topk_codec = AvroCodec("trending_topk", url, subject=f"{config.output_topic}-value")
        self.dead_codec = AvroCodec("dead_letter", url, subject=f"{config.dead_letter_topic}-value")
        self.tweet_schema = schema_json("tweet")
        self.history: list[BatchStats] = []
        self.observers: list[Callable[[BatchStats, HashtagBatchProcessor], None]] = []
        self.repair = reconcile_spark_log(config.checkpoint / "spark", self.writer.last_committed)
        if self.repair:
            log.warning("checkpoint: %s", self.repair)

    def close(self) -> None:
        """Release the job's Kafka producer; call once the query has stopped."""
        self.writer.close()

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        started = time.monotonic()
        stats = BatchStats(batch_id, watermark_ms=self.engine.watermark_ms, started_at=time.time())
        if batch_id <= self.writer.last_committed:
            stats.skipped = True  # replayed after a crash: its output is already committed
        else:
            self._process(batch, batch_id, stats)
        stats.seconds = time.monotonic() - started
        self.history.append(stats)
        for observe in self.observers:  # metrics (trending.metrics)
            observe(stats, self)
        log.info(_describe(stats))

    def _process(self, batch: DataFrame, batch_id: int, stats: BatchStats) -> None:
        confluent = self.config.schema_registry_url is not None
        plan = plan_batch(
            batch, self.tweet_schema, confluent, self.config.windows, self.engine.watermark_ms
        )
        clock = time.monotonic()
        table = plan.toArrow()
        stats.phases["spark"] = time.monotonic() - clock
        clock = time.monotonic()
        counted, max_event_ms, on_time, side = _split(table)
        stats.tweets = on_time + len(side)
        updates = self.engine.apply_batch(counted, max_event_ms)
        stats.phases["windows"] = time.monotonic() - clock
        clock = time.monotonic()
        records = list(self._topk_records(updates))
        topic = self.config.input_topic
        for kind, partition, offset, key, value, reason in side:
            if kind == LATE:
                stats.late += 1
                records.append(OutRecord(self.config.late_topic, key, value))
            else:
                stats.dead += 1
                stats.dead_reasons[reason] = stats.dead_reasons.get(reason, 0) + 1
                records.append(self._dead_letter(topic, partition, offset, key, value, reason))
        stats.revisions = sum(not u.is_final for u in updates)
        stats.finals = len(updates) - stats.revisions
        stats.state_bytes = self.snapshots.save(batch_id, self.engine.state)
        stats.phases["snapshot"] = time.monotonic() - clock
        clock = time.monotonic()
        self.writer.write_batch(batch_id, records)
        stats.phases["publish"] = time.monotonic() - clock

    def _topk_records(self, updates: list[TopKUpdate]) -> Iterator[OutRecord]:
        now = int(time.time() * 1000)
        for update in updates:
            value = self.topk_codec.encode(
                {
                    "window_start": update.window.start,
                    "window_end": update.window.end,
                    "top": [{"hashtag": tag, "count": count} for tag, count in update.top],
                    "revision": update.revision,
                    "is_final": update.is_final,
                    "emitted_at": now,
                }
            )
            yield OutRecord(self.config.output_topic, str(update.window.start).encode(), value)

    def _dead_letter(
        self,
        topic: str,
        partition: int,
        offset: int,
        key: bytes | None,
        value: bytes | None,
        reason: str,
    ) -> OutRecord:
        letter = {
            "topic": topic,
            "partition": partition,
            "offset": offset,
            "key": key,
            "value": value,
            "reason": reason,
            "failed_at": int(time.time() * 1000),
        }
        return OutRecord(self.config.dead_letter_topic, key, self.dead_codec.encode(letter))

    def _restore(self, committed: int) -> SlidingTopKState | None:
        found = self.snapshots.load(at_most=committed)
        if committed < 0:
            return None
        if found is None or found[0] != committed:
            raise UserError(
                f"the checkpoint {self.config.checkpoint} has no state for committed batch "
                f"{committed}: it was deleted or belongs to another job; start over with a new "
                "--checkpoint"
            )
        state: SlidingTopKState = found[1]
        return state


def _split(
    table: pa.Table,
) -> tuple[list[tuple[int, str, int]], int | None, int, list[tuple[Any, ...]]]:
    """Counted ``(pane_start, tag, n)`` rows, the newest on-time event time, the number of
    on-time tweets, and the late and dead rows ``(kind, partition, offset, key, value, reason)``.
    """
    columns = {name: table.column(name).to_pylist() for name in table.column_names}
    counted, side, newest, on_time = [], [], None, 0
    for i, kind in enumerate(columns["kind"]):
        if kind != COUNTED:
            side.append(tuple(columns[c][i] for c in ("kind", *SIDE_COLUMNS)))
            continue
        if columns["tag"][i] is not None:
            counted.append((columns["pane_start"][i], columns["tag"][i], columns["n"][i]))
        on_time += columns["tweets"][i]
        max_event = columns["max_event_ms"][i]
        newest = max_event if newest is None else max(newest, max_event)
    return counted, newest, on_time, side


def summarize(history: list[BatchStats]) -> str:
    """One line over a run: tweets, records published, rate from first read to last write."""
    done = [s for s in history if not s.skipped]
    if not done:
        return "no new micro-batches"
    tweets = sum(s.tweets for s in done)
    seconds = done[-1].started_at + done[-1].seconds - done[0].started_at
    return (
        f"{len(done)} micro-batches: {tweets} tweets, {sum(s.revisions for s in done)} revisions, "
        f"{sum(s.finals for s in done)} finals, {sum(s.late for s in done)} late, "
        f"{sum(s.dead for s in done)} dead letters; {seconds:.2f}s from first read to last "
        f"commit = {tweets / max(seconds, 1e-9):.0f} tweets/s"
    )


def _describe(stats: BatchStats) -> str:
    if stats.skipped:
        return f"batch {stats.batch_id}: already committed, skipped"
    return (
        f"batch {stats.batch_id}: {stats.revisions} revisions, {stats.finals} finals, "
        f"{stats.late} late, {stats.dead} dead letters in {stats.seconds:.2f}s ("
        + ", ".join(f"{name} {seconds:.2f}s" for name, seconds in stats.phases.items())
        + ")"
    )


def _job_id(checkpoint: Path) -> str:
    """A random id kept in the checkpoint: a new checkpoint is a new job."""
    checkpoint.mkdir(parents=True, exist_ok=True)
    path = checkpoint / "job-id"
    if not path.exists():
        path.write_text(uuid.uuid4().hex[:16])
    return path.read_text().strip()


def start_query(
    spark: Any,
    config: HashtagJobConfig,
    on_processor: Callable[[HashtagBatchProcessor], None] | None = None,
) -> tuple[StreamingQuery, HashtagBatchProcessor]:
    """Create the topics, then start the streaming query (not waiting for it)."""
    ensure_topics(
        config.bootstrap,
        [config.input_topic, config.output_topic, config.late_topic, config.dead_letter_topic],
        partitions=config.topic_partitions,
        extra=config.kafka_options,
    )
    processor = HashtagBatchProcessor(config)
    if on_processor is not None:
        on_processor(processor)  # e.g. attach metrics before the first batch
    options = source_options(
        config.bootstrap,
        config.input_topic,
        config.starting_offsets,
        config.max_offsets_per_trigger,
        config.spark_kafka_options,
    )
    if config.warm_up_rows:
        confluent = config.schema_registry_url is not None
        warm_up(
            spark, processor.tweet_schema, confluent, config.windows, config.warm_up_rows, options
        )
    writer = (
        read_kafka_stream(spark, options)
        .writeStream.queryName(f"trending-hashtags-{processor.job_id}")
        .option("checkpointLocation", str(config.checkpoint / "spark"))
        .foreachBatch(processor)
    )
    if config.available_now:
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime=f"{config.trigger_ms} milliseconds")
    return writer.start(), processor
