"""Trending hashtags: the top-k hashtags of every sliding event-time window, from Kafka to Kafka.

Wiring of the library's sliding top-k (:class:`trending.SlidingTopK`) between Kafka and Kafka:

* source and decoding: tweets read from Kafka, decoded, bounded and sorted into counted, late
  and dead records (:func:`trending.spark.hashtag_state.hashtag_records`);
* the top-k: :meth:`SlidingTopK.count_records` counts each tweet's hashtags on the executors,
  :meth:`SlidingTopK.merge` merges each micro-batch's candidates into the last top-k of each open
  window (:class:`trending.windows.topk_merge.TopKMerger`);
* the exactly-once writer: one Kafka transaction per micro-batch with every changed top-k, every
  window the watermark closes, the late tweets, the dead letters, and the merge's small state
  with the batch's marker (:mod:`connectors.transactions`), from which a restart resumes.

The library's own writer, :class:`trending.TopKBatches`, keeps that state in the query's
checkpoint instead; the job keeps it in the transaction, so the state and the results it
produced are committed together.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from connectors.avro import AvroCodec, schema_json
from connectors.kafka import end_offsets, ensure_topics
from connectors.spark_kafka import read_kafka_stream, source_options
from connectors.transactions import (
    RECORD_OVERHEAD,
    OutRecord,
    TransactionalBatchWriter,
    state_json,
)
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
from trending.metrics import DRIVER_OPERATOR, LATE_REASONS, Metrics
from trending.spark.checkpoint import JobCheckpoint
from trending.spark.collect import in_parts
from trending.spark.hashtag_state import (
    LATE,
    SIDE_COLUMNS,
    hashtag_records,
    register_functions,
    warm_up,
)
from trending.spark.sliding_topk import SlidingTopK, TopKSettings
from trending.text.bounds import TweetBounds
from trending.windows.sliding import SlidingWindows
from trending.windows.topk_merge import MergeState, TopKMerger, TopKUpdate

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming.query import StreamingQuery

log = logging.getLogger(__name__)
STATE_LAYOUT = "hashtag-buckets-4096"  # jvm/udf/.../trending/state/BucketState.java


DEFAULT_WARM_UP_ROWS = 200_000


@dataclass(frozen=True)
class HashtagJobConfig(JobSettings):
    """Everything ``trending run hashtags`` can be told (times in milliseconds)."""

    input_topic: str = "tweets"
    output_topic: str = "trending-hashtags"
    late_topic: str = "tweets-late"
    dead_letter_topic: str = "tweets-dlq"
    size_ms: int = 300_000
    hop_ms: int = 60_000
    align_ms: int = 0
    k: int = 10
    lateness_ms: int = 30_000
    warm_up_rows: int = DEFAULT_WARM_UP_ROWS  # see trending.spark.hashtag_state.warm_up
    bounds: TweetBounds = field(default_factory=TweetBounds)

    @property
    def windows(self) -> SlidingWindows:
        return SlidingWindows(self.size_ms, self.hop_ms, self.align_ms)

    @property
    def topk_settings(self) -> TopKSettings:
        return TopKSettings(self.size_ms, self.hop_ms, self.align_ms, self.k, self.lateness_ms)

    @property
    def open_windows(self) -> int:
        """The most windows whose top-k the driver keeps: those starting in
        ``(max event - lateness - size, max event]``."""
        return -(-(self.size_ms + self.lateness_ms) // self.hop_ms) + 1

    def state_bytes_bound(self) -> int:
        """The most bytes the driver's state (:meth:`MergeState.to_json`) can take as JSON."""
        per_window = 60 + self.k * (self.bounds.key_json_bytes + 24)
        return 100 + self.open_windows * per_window

    def result_bytes_bound(self) -> int:
        """The most bytes of a top-k record's value (``schemas/trending_topk.avsc``)."""
        return 48 + self.k * (self.bounds.key_utf8_bytes + 15)

    def state_settings(self) -> dict[str, int | str]:
        """The settings the job's state depends on: a checkpoint keeps them for its lifetime."""
        return {
            "state_layout": STATE_LAYOUT,
            "size_ms": self.size_ms,
            "hop_ms": self.hop_ms,
            "align_ms": self.align_ms,
            "top": self.k,
            "lateness_ms": self.lateness_ms,
        }


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
    newest_event_ms: int | None = None  # newest on-time event time of the batch
    skipped: bool = False
    started_at: float = 0.0  # wall clock, seconds
    state_bytes: int | None = None  # serialized size of the window state after the batch
    phases: dict[str, float] = field(default_factory=dict)  # seconds per phase
    dead_reasons: dict[str, int] = field(default_factory=dict)  # dead letters per reason


class HashtagBatchProcessor(CommittedBatches[BatchStats]):
    """The ``foreachBatch`` function: exactly-once top-k publication from the executors' candidates.

    Built by :func:`open_processor`, which claims the checkpoint and reads the committed state.
    """

    def __init__(
        self,
        config: HashtagJobConfig,
        checkpoint: JobCheckpoint,
        job_id: str,
        writer: TransactionalBatchWriter,
        topk: SlidingTopK,
    ) -> None:
        self.config = config
        self.checkpoint = checkpoint
        self.job_id = job_id
        self.writer = writer
        self.topk = topk
        self.input_topics = (config.input_topic,)
        self.control_topic = f"trending-hashtags-control-{job_id}"  # --idle-advance's CTIs
        restored = committed_state(writer, MergeState.from_json)
        self.merger = TopKMerger(config.windows, config.k, config.lateness_ms, restored)
        url = config.schema_registry_url
        self.topk_codec = AvroCodec("trending_topk", url, subject=f"{config.output_topic}-value")
        self.dead_codec = AvroCodec("dead_letter", url, subject=f"{config.dead_letter_topic}-value")
        self.tweet_schema = schema_json("tweet")
        self.history: list[BatchStats] = []
        self.observers: list[Callable[[BatchStats, HashtagBatchProcessor], None]] = []

    def attach_metrics(self, metrics: Metrics) -> None:
        """Count this job's batches in ``metrics`` (call before the query starts)."""
        self.observers.append(HashtagObserver(metrics, self))

    def _new_stats(self, batch_id: int) -> BatchStats:
        return BatchStats(batch_id, watermark_ms=self.merger.watermark_ms, started_at=time.time())

    def _next_watermark_ms(self) -> int | None:
        return self.merger.watermark_ms

    def _describe(self, stats: BatchStats) -> str:
        return _describe(stats)

    def _process(self, batch: DataFrame, batch_id: int, stats: BatchStats) -> None:
        clock_ms = self.checkpoint.batch_clock_ms(batch_id)
        with self.topk.merge(batch, self.merger, clock_ms) as merged:
            stats.phases.update(merged.phases)
            stats.newest_event_ms = merged.newest_event_ms
            clock = time.monotonic()
            updates = merged.updates
            aside = self._side_output()
            results = [aside.result(r, batch_id, stats) for r in self._topk_records(updates)]
            stats.revisions = sum(not u.is_final for u in updates)
            stats.finals = len(updates) - stats.revisions
            state = self.merger.state.to_json()
            stats.state_bytes = len(state_json(state))
            stats.phases["snapshot"] = time.monotonic() - clock
            clock = time.monotonic()
            dead, reasons = stats.dead, dict(stats.dead_reasons)  # oversized results

            def records() -> Iterator[OutRecord]:
                # the side records are counted anew by each attempt of the transaction
                stats.late, stats.dead, stats.dead_reasons = 0, dead, dict(reasons)
                yield from results
                if not merged.side_rows:
                    return  # no late or dead rows: no Spark job to look for them
                for part in in_parts(merged.side, self.config.collect_part_bytes):
                    yield from self._side_records(aside, part, stats)

            self.writer.write_batch(batch_id, records, state)
            stats.phases["publish"] = time.monotonic() - clock
        stats.tweets = merged.counted + stats.late + stats.dead - dead  # each side row once

    def _side_records(
        self, aside: SideOutput, table: Any, stats: BatchStats
    ) -> Iterator[OutRecord]:
        """Late tweets and dead letters of a collected part of the batch's side rows."""
        topic = self.config.input_topic
        columns = [table.column(name).to_pylist() for name in SIDE_COLUMNS]
        for kind, partition, offset, key, value, reason, timestamp_ms, headers in zip(
            *columns, strict=True
        ):
            origin = Origin.of(topic, partition, offset, key, value, timestamp_ms, headers)
            route = aside.late if kind == LATE else aside.dead
            yield route(origin, reason, stats)

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

    def _side_output(self) -> SideOutput:
        """Late tweets go out as they came; dead letters in their envelope."""
        config = self.config
        return SideOutput(
            config.late_topic, config.dead_letter_topic, self.dead_codec, None,
            self.writer.limit_of,
        )  # fmt: skip


def open_processor(spark: SparkSession, config: HashtagJobConfig) -> HashtagBatchProcessor:
    """Claim the checkpoint, fence the previous writer and read the committed state."""
    checkpoint = JobCheckpoint(spark, config.checkpoint)

    def build(job_id: str, writer: TransactionalBatchWriter) -> HashtagBatchProcessor:
        check_record_sizes(config, writer)
        topk = SlidingTopK.of_hashtags(config.topk_settings, job_id)
        return HashtagBatchProcessor(config, checkpoint, job_id, writer, topk)

    return open_job(checkpoint, config, "hashtags", config.state_settings(), build)


def check_record_sizes(config: HashtagJobConfig, writer: TransactionalBatchWriter) -> None:
    """Refuse settings whose driver state could outgrow what the commits topic accepts (a batch
    would then fail on every replay); warn when a top-k record could outgrow the output topic
    (it would go to the dead-letter topic)."""
    state_limit = writer.limit_of(writer.commits_topic) - STATE_RECORD_MARGIN
    if config.state_bytes_bound() > state_limit:
        raise UserError(
            f"with --top {config.k}, --max-hashtag-chars {config.bounds.max_hashtag_chars} and "
            f"{config.open_windows} open windows the job's state can take "
            f"{config.state_bytes_bound()} bytes, more than topic {writer.commits_topic} accepts "
            f"({state_limit}): lower --top or --max-hashtag-chars, or raise the topic's "
            "max.message.bytes"
        )
    result_limit = writer.limit_of(config.output_topic) - RECORD_OVERHEAD
    if config.result_bytes_bound() > result_limit:
        log.warning(
            "a top-%d record can take up to %d bytes, more than topic %s accepts (%d): such "
            "records go to %s (reason \"oversized result\")",
            config.k, config.result_bytes_bound(), config.output_topic, result_limit,
            config.dead_letter_topic,
        )  # fmt: skip


STATE_RECORD_MARGIN = RECORD_OVERHEAD + 1_024  # the marker's key and its JSON around the state


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


class HashtagObserver:
    """Per-batch figures of the hashtags job in its metrics
    (:meth:`HashtagBatchProcessor.attach_metrics`)."""

    def __init__(self, metrics: Metrics, processor: HashtagBatchProcessor) -> None:
        config = processor.config
        self.metrics = metrics
        self._windows = len(processor.merger.state.windows)
        metrics.add_topics(
            [config.input_topic], [config.output_topic, config.late_topic, config.dead_letter_topic]
        )
        self._observe_state(processor)

    def __call__(self, stats: BatchStats, processor: HashtagBatchProcessor) -> None:
        if stats.skipped:
            return
        m, config = self.metrics, processor.config
        m.observe_batch(stats.phases, stats.dead_reasons, LATE_REASONS[0], stats.late)
        m.records_written.labels(config.output_topic).inc(stats.revisions + stats.finals)
        m.records_written.labels(config.late_topic).inc(stats.late)
        m.records_written.labels(config.dead_letter_topic).inc(stats.dead)
        m.windows_revised.inc(stats.revisions)
        m.windows_finalized.inc(stats.finals)
        windows = len(processor.merger.state.windows)
        m.windows_opened.inc(max(0, windows - self._windows + stats.finals))
        self._windows = windows
        if stats.state_bytes is not None:  # the driver's state, as committed (JSON bytes)
            m.state_memory.labels(DRIVER_OPERATOR).set(stats.state_bytes)
        self._observe_state(processor)

    def _observe_state(self, processor: HashtagBatchProcessor) -> None:
        m, windows = self.metrics, processor.merger.state.windows
        m.set_watermark(processor.merger.watermark_ms)
        m.open_windows.set(len(windows))
        m.state_rows.labels(DRIVER_OPERATOR).set(sum(len(w.top) for w in windows.values()))
        newest = max(windows, default=None)
        m.set_top(newest, () if newest is None else windows[newest].top)


def warm_up_rows(config: HashtagJobConfig, checkpoint: JobCheckpoint) -> int:
    """``--warm-up-rows``, but in an ``--available-now`` run at most the tweets the run has to
    read (input end offsets minus what the checkpoint's last done batch read): warming up on
    more than that costs more than it saves, and a run with nothing to read needs none."""
    if not (config.available_now and config.warm_up_rows):
        return config.warm_up_rows
    try:
        ends = end_offsets(config.bootstrap, config.input_topic, config.kafka_options)
    except Exception as error:  # the warm-up is an optimisation: the run goes on
        log.warning("cannot read the end offsets of %s (%s)", config.input_topic, error)
        return config.warm_up_rows
    done = checkpoint.done_offsets(config.input_topic) or {}
    backlog = sum(max(0, high - done.get(p, low)) for p, (low, high) in ends.items())
    return min(config.warm_up_rows, backlog)


def start_query(
    spark: SparkSession,
    config: HashtagJobConfig,
    on_processor: Callable[[HashtagBatchProcessor], None] | None = None,
) -> tuple[StreamingQuery, HashtagBatchProcessor]:
    """Create the topics, then start the streaming query (not waiting for it)."""
    with phase("topics"):
        ensure_topics(
            config.bootstrap,
            [config.input_topic, config.output_topic, config.late_topic, config.dead_letter_topic],
            partitions=config.topic_partitions,
            extra=config.kafka_options,
        )
    use_state_store(spark, config)
    register_functions(spark)
    with phase("checkpoint and lease"):
        processor = open_processor(spark, config)
    if on_processor is not None:
        on_processor(processor)  # e.g. attach metrics before the first batch
    options = source_options(
        config.bootstrap,
        config.input_topic,
        config.starting_offsets,
        config.batch_bound,
        config.spark_kafka_options,
    )
    registry = config.registry
    with phase("backlog"):
        rows = warm_up_rows(config, processor.checkpoint)
    if rows:
        with phase("warm-up"):
            engine = processor.topk.engine(spark)
            warmed = dataclasses.replace(config, warm_up_rows=rows)
            warm_up(spark, engine, processor.tweet_schema, registry, warmed, options)
    with phase("topics"):
        ensure_topics(config.bootstrap, [processor.control_topic], 1, extra=config.kafka_options)
    with phase("plan"):
        records = hashtag_records(
            read_kafka_stream(
                spark, stream_options(config, processor.input_topics, processor.control_topic)
            ),
            processor.tweet_schema,
            registry,
            config.windows,
            processor.job_id,
            config.lateness_ms,
            config.clock_skew,
            config.bounds,
            processor.control_topic,
        )
        writer = (
            processor.topk.count_records(records)
            .writeStream.queryName(f"trending-hashtags-{processor.job_id}")
            .option("checkpointLocation", processor.checkpoint.query_location)
            .outputMode("update")
            .foreachBatch(processor)
        )
    with phase("query start"):
        return triggered(writer, config).start(), processor


class HashtagsJob:
    """``trending run hashtags`` for :func:`trending.jobs.runtime.run`."""

    name = "hashtags"

    def start(
        self,
        spark: SparkSession,
        config: HashtagJobConfig,
        on_processor: Callable[[Any], None] | None,
    ) -> tuple[StreamingQuery, HashtagBatchProcessor]:
        return start_query(spark, config, on_processor)

    def describe(self, config: HashtagJobConfig) -> str:
        return (
            f"{config.input_topic} -> {config.output_topic} "
            f"(size {format_duration_ms(config.size_ms)}, hop {format_duration_ms(config.hop_ms)}, "
            f"top {config.k}, lateness {format_duration_ms(config.lateness_ms)})"
        )

    def summarize(self, history: Sequence[Any]) -> str:
        return summarize(list(history))

    def follow(self, spark: SparkSession, config: HashtagJobConfig, ended: Any, runs: int) -> None:
        return None  # a run that ended (available-now) is the end of the job


HASHTAGS = HashtagsJob()
