"""Spark's query progress as Prometheus metrics, and Kafka lag computed from it.

:class:`MetricsListener` hears Spark's streaming query events (through a listener in the JVM
that keeps them as JSON lines): each progress event updates rates, batch and phase durations,
rows, the watermark, state per operator and records read per topic. Spark commits no
consumer-group offsets, so :class:`LagMonitor` computes the lag itself: the latest offset of
each topic-partition (``get_watermark_offsets``) minus the ``endOffset`` of the last progress,
every few seconds.
"""

from __future__ import annotations

import ast
import json
import logging
import threading
import time
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Protocol

from confluent_kafka import Consumer, KafkaException, TopicPartition
from py4j.protocol import Py4JError

from connectors.kafka import client_config
from trending.metrics import Metered, Metrics, MetricsServer, finite
from trending.status import kafka_log_settings

log = logging.getLogger(__name__)

Offsets = dict[str, dict[int, int]]  # topic -> partition -> offset
QUEUE_CLASS = "trending.state.ProgressQueue"
QUEUE_LINES = 10_000  # events kept for Python at most (about an hour of 1 s micro-batches)
POLL_INTERVAL_S = 0.25


class MetricsListener:
    """Feeds :class:`Metrics` from one query's events (every query's while ``query_id`` is None).

    Spark's listener events reach Python through a ``trending.state.ProgressQueue`` in the
    driver's JVM, as lines of JSON taken every ``interval`` seconds in one gateway call
    (:meth:`attach`). A pyspark listener would get each event as a Java object read field by
    field over the gateway: about a tenth of a core per micro-batch on the listener bus (at
    1,000 tweets/s on 2 cores), beside the batch's tasks.
    """

    def __init__(self, metrics: Metrics, query_id: str | None = None) -> None:
        self.metrics = metrics
        self.query_id = query_id
        self.processed: Offsets = {}  # the endOffset of the last progress, per source topic
        self._lock = threading.Lock()
        self._queue: Any = None
        self._streams: Any = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def attach(self, spark: Any, interval: float = POLL_INTERVAL_S) -> MetricsListener:
        """Listen to ``spark``'s streaming queries from now on (until :meth:`detach`)."""
        jvm = spark.sparkContext._jvm
        self._queue = getattr(jvm, QUEUE_CLASS)(QUEUE_LINES)
        self._streams = spark.streams._jsqm
        self._streams.addListener(self._queue)
        self._thread = threading.Thread(
            target=self._loop, args=(interval,), name="trending-progress", daemon=True
        )
        self._thread.start()
        return self

    def detach(self) -> None:
        """Stop listening, after taking the events that came so far."""
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join(timeout=10)
        self._thread = None
        try:
            self._streams.removeListener(self._queue)
            self.poll()
        except Py4JError as error:  # the JVM is gone: nothing more to hear
            log.debug("metrics: progress listener not removed: %s", error)

    def _loop(self, interval: float) -> None:
        while not self._stop.wait(interval):
            try:
                self.poll()
            except Py4JError as error:  # the JVM went away
                log.debug("metrics: progress events no longer read: %s", error)
                return
            except Exception:  # metrics must never stop the job
                log.exception("metrics: a progress event could not be recorded")

    def poll(self) -> None:
        """Record the events waiting in the JVM's queue."""
        text = str(self._queue.drain())
        for line in text.splitlines():
            self.on_event(json.loads(line))

    def on_event(self, event: Mapping[str, Any]) -> None:
        """One line of ``trending.state.ProgressQueue``, parsed."""
        kind = event.get("event")
        if kind == "progress":
            progress = event.get("progress") or {}
            if self._mine(progress.get("id")):
                offsets = record_progress(self.metrics, progress)
                with self._lock:
                    for topic, partitions in offsets.items():
                        self.processed.setdefault(topic, {}).update(partitions)
        elif not self._mine(event.get("id")):
            return
        elif kind == "started":
            self.metrics.set_status("active")
        elif kind == "idle":
            self.metrics.last_progress.set(time.time())
        elif kind == "terminated":
            self.metrics.set_status("failed" if event.get("failed") else None)

    def _mine(self, query: object) -> bool:
        return self.query_id is None or str(query) == self.query_id

    def processed_offsets(self) -> Offsets:
        """A copy of the processed offsets."""
        with self._lock:
            return {topic: dict(parts) for topic, parts in self.processed.items()}


def record_progress(metrics: Metrics, progress: Mapping[str, Any]) -> Offsets:
    """Update ``metrics`` from one ``StreamingQueryProgress``; return its sources' end offsets."""
    m = metrics
    m.last_progress.set(time.time())
    m.batches.inc()
    rows = int(progress.get("numInputRows") or 0)
    m.input_rows.inc(rows)
    m.batch_rows.observe(rows)
    m.input_rate.set(finite(progress.get("inputRowsPerSecond")) or 0.0)
    m.processed_rate.set(finite(progress.get("processedRowsPerSecond")) or 0.0)
    durations = progress.get("durationMs") or {}
    for phase, ms in durations.items():
        if phase == "triggerExecution":
            m.batch_duration.observe(ms / 1000)
        else:
            m.batch_phase.labels("spark", phase).observe(ms / 1000)
    watermark = (progress.get("eventTime") or {}).get("watermark")
    if watermark and not watermark.startswith("1970-01-01"):
        m.set_watermark(parse_timestamp_ms(watermark))
    for operator in progress.get("stateOperators") or ():
        name = operator.get("operatorName") or "state"
        m.state_rows.labels(name).set(operator.get("numRowsTotal") or 0)
        m.state_memory.labels(name).set(operator.get("memoryUsedBytes") or 0)
    ends: Offsets = {}
    for source in progress.get("sources") or ():
        end, start = (
            parse_offsets(source.get("endOffset")),
            parse_offsets(source.get("startOffset")),
        )
        for topic in end:
            m.records_read.labels(topic).inc(_read(source, end, start, topic))
            ends.setdefault(topic, {}).update(end[topic])
    return ends


def _read(source: Mapping[str, Any], end: Offsets, start: Offsets, topic: str) -> int:
    """Records read from ``topic``: the source's rows when it has one topic, else offset deltas."""
    if len(end) == 1:
        return int(source.get("numInputRows") or 0)
    before = start.get(topic, {})
    return sum(max(0, o - before.get(p, o)) for p, o in end[topic].items())


def parse_offsets(text: object) -> Offsets:
    """Kafka source offsets ``{"topic": {"0": 12, ...}}`` (parsed, JSON, or a dict's repr) as
    ints."""
    if isinstance(text, Mapping):
        raw: Any = text
    elif not isinstance(text, str) or not text.strip():
        return {}
    else:
        try:
            raw = json.loads(text)
        except ValueError:
            try:
                raw = ast.literal_eval(text)
            except (ValueError, SyntaxError):
                return {}
    if not isinstance(raw, dict):
        return {}
    return {
        str(topic): {int(p): int(o) for p, o in parts.items()}
        for topic, parts in raw.items()
        if isinstance(parts, dict)
    }


def parse_timestamp_ms(text: str) -> int:
    """Spark's ISO-8601 UTC timestamp (``2023-11-14T22:13:20.000Z``) in epoch milliseconds."""
    return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)


def compute_lag(latest: Offsets, processed: Offsets) -> dict[tuple[str, int], int]:
    """``latest - processed`` per topic-partition known to both, never negative."""
    return {
        (topic, p): max(0, high - processed[topic][p])
        for topic, parts in latest.items()
        for p, high in parts.items()
        if p in processed.get(topic, {})
    }


class LagMonitor:
    """Every ``interval`` seconds, set ``trending_kafka_lag_records`` from the latest offsets."""

    def __init__(
        self,
        metrics: Metrics,
        listener: MetricsListener,
        bootstrap: str,
        extra: Mapping[str, str] | None = None,
        interval: float = 10.0,
    ) -> None:
        self.metrics, self.listener, self.interval = metrics, listener, interval
        settings = {**client_config(bootstrap, extra), "group.id": "trending-lag-monitor"}
        self.consumer = Consumer({**settings, "enable.auto.commit": False, **kafka_log_settings()})
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="trending-lag", daemon=True)

    def start(self) -> LagMonitor:
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.consumer.poll(0)  # hands over the client's log lines (and its errors)
                self.poll_once()
            except KafkaException as error:
                log.warning("metrics: Kafka lag not updated: %s", error)

    def poll_once(self) -> None:
        """Fetch the latest offsets of the processed partitions and set the lag."""
        processed = self.listener.processed_offsets()
        latest: Offsets = {}
        for topic, parts in processed.items():
            for p in parts:
                _low, high = self.consumer.get_watermark_offsets(
                    TopicPartition(topic, p), timeout=5, cached=False
                )
                latest.setdefault(topic, {})[p] = high
        for (topic, p), lag in compute_lag(latest, processed).items():
            self.metrics.kafka_lag.labels(topic, str(p)).set(lag)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=self.interval + 10)
        self.consumer.close()


class Monitoring:
    """A job process's metrics: the HTTP endpoint, the query listener and the lag monitor."""

    def __init__(
        self,
        spark: Any,
        metrics: Metrics,
        address: tuple[str, int],
        bootstrap: str,
        extra: Mapping[str, str] | None = None,
        lag_interval: float = 10.0,
    ) -> None:
        self.spark, self.metrics = spark, metrics
        self.query: Any = None
        self.server = MetricsServer(metrics, *address)
        self.listener = MetricsListener(metrics).attach(spark)
        self.lag = LagMonitor(metrics, self.listener, bootstrap, extra, lag_interval).start()

    def watch(self, query: Any, processor: Metered | None = None) -> None:
        """Follow only ``query`` from now on, and the ``processor``'s batches."""
        self.query = query
        self.listener.query_id = str(query.id)
        if query.isActive:
            self.metrics.set_status("active")
        if processor is not None:
            self.attach(processor)

    def attach(self, processor: Metered) -> None:
        """Count the job ``processor``'s batches (call before the query starts)."""
        processor.attach_metrics(self.metrics)

    def close(self) -> None:
        """Stop the lag monitor and the endpoint; remove the listener."""
        self.listener.detach()
        if self.query is not None and not self.query.isActive:  # the listener may not have heard
            self.metrics.set_status("failed" if self.query.exception() else None)
        self.lag.close()
        self.server.close()


class KafkaAccess(Protocol):
    """Where a job's Kafka is (a job's settings have both)."""

    @property
    def bootstrap(self) -> str: ...

    @property
    def kafka_options(self) -> Mapping[str, str]: ...


def start_monitoring(
    spark: Any,
    config: KafkaAccess,
    address: tuple[str, int],
    lag_interval: float = 10.0,
    kind: str = "hashtags",
) -> Monitoring | None:
    """Serve a job's metrics on ``address`` (host, port); None when the port is 0."""
    if address[1] == 0:
        return None
    metrics = Metrics(kind, str(spark.version))
    return Monitoring(spark, metrics, address, config.bootstrap, config.kafka_options, lag_interval)
