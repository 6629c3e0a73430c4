"""Prometheus metrics of a streaming job: one registry per process, every name ``trending_...``.

Every family is exported from the start: counters at 0 and the known label values (phases,
query states, dead-letter reasons, the job's topics) created up front, so a dashboard panel shows
0 rather than "no data". Names follow Prometheus conventions: base units (seconds, bytes),
``_total`` on counters. The job is told apart by Prometheus's own ``job`` label (the scrape
config), so no metric has a ``job`` label of its own.

Spark's query progress feeds most families (:mod:`trending.spark.listener`); each job adds its
own per-batch figures through an observer it attaches (:class:`Metered`).
"""

from __future__ import annotations

import argparse
import logging
import math
import platform
import re
import sys
import threading
import time
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Protocol

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, Info, start_http_server
from prometheus_client.core import CounterMetricFamily, Metric
from prometheus_client.registry import Collector

from trending import __version__, arg_types

if TYPE_CHECKING:
    from wsgiref.simple_server import WSGIServer

from trending.errors import UserError

log = logging.getLogger(__name__)

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 9108
QUERY_STATES = ("active", "failed")
SPARK_PHASES = (
    "addBatch",
    "getBatch",
    "latestOffset",
    "queryPlanning",
    "walCommit",
    "commitOffsets",
)
JOB_PHASES = ("spark", "windows", "snapshot", "publish")
DEAD_REASONS = {  # the reasons of connectors.spark_kafka.decode_avro, as short label values
    "empty value": "empty_value",
    "not in Confluent wire format (magic byte 0 + schema id)": "bad_header",
    "value is not valid Avro for the schema": "invalid_avro",
    "trailing bytes after the Avro record": "trailing_bytes",  # trending.avro.AvroCheck
    "future-timestamp": "future_timestamp",  # trending.spark.clock
    "past-timestamp": "past_timestamp",
}
MALFORMED_AVRO = "malformed_avro"  # the other reasons of trending.avro.AvroCheck
INVALID_UTF8 = "invalid_utf8"
OVERSIZED = "oversized"  # too large for its topic: trending.jobs.letters
OVERSIZED_RESULT = "oversized_result"  # a job's result too large for its topic: the same
UNKNOWN_SCHEMA = "unknown_schema"  # no schema of that id: trending.avro.WireDecoder
INCOMPATIBLE_SCHEMA = "incompatible_schema"  # its writer schema cannot be read as the job's
# (or is unfit to read values with: recursive, too deep, too large; trending.avro.SchemaShape)
OTHER_REASON = "other"
# a record beyond one of a job's bounds: its reason starts "over --<flag>: " (trending.text.bounds)
BOUND_FLAGS = ("max-text-chars", "max-hashtags", "max-hashtag-chars", "max-url-scan-steps")
BOUND_LABELS = {flag: flag.replace("-", "_") for flag in BOUND_FLAGS}
DEAD_LABELS = (
    *DEAD_REASONS.values(),
    *BOUND_LABELS.values(),
    MALFORMED_AVRO,
    INVALID_UTF8,
    OVERSIZED,
    OVERSIZED_RESULT,
    UNKNOWN_SCHEMA,
    INCOMPATIBLE_SCHEMA,
    OTHER_REASON,
)
LATE_REASONS = ("windows_final", "behind_watermark")  # hashtags; sensors and temporal windows
DURATION_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)
ROW_BUCKETS = (0, 1, 10, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000)


class Metrics:
    """Every metric family of a job, in its own registry."""

    def __init__(self, kind: str, spark_version: str = "unknown") -> None:
        self.registry = r = CollectorRegistry()
        Info("trending_build", "Version of trending, Spark and Python.", registry=r).info(
            {
                "version": __version__,
                "job_kind": kind,
                "spark_version": spark_version,
                "python_version": platform.python_version(),
            }
        )
        self.query_status = Gauge(
            "trending_query_status",
            "1 when the streaming query is in this state.",
            ["state"],
            registry=r,
        )
        self.last_progress = Gauge(
            "trending_last_progress_timestamp_seconds",
            "Wall clock of the last progress or idle event of the query.",
            registry=r,
        )
        self.batches = Counter("trending_batches_total", "Micro-batches completed.", registry=r)
        self.input_rows = Counter(
            "trending_input_rows_total", "Rows read by the query.", registry=r
        )
        self.input_rate = Gauge(
            "trending_input_rows_per_second", "Rows arriving per second (last batch).", registry=r
        )
        self.processed_rate = Gauge(
            "trending_processed_rows_per_second",
            "Rows processed per second (last batch).",
            registry=r,
        )
        self.batch_duration = Histogram(
            "trending_batch_duration_seconds",
            "Duration of a micro-batch.",
            buckets=DURATION_BUCKETS,
            registry=r,
        )
        self.batch_phase = Histogram(
            "trending_batch_phase_seconds",
            "Duration of a micro-batch phase: Spark's (source=spark) and the job's (source=job).",
            ["source", "phase"],
            buckets=DURATION_BUCKETS,
            registry=r,
        )
        self.batch_rows = Histogram(
            "trending_batch_rows", "Input rows per micro-batch.", buckets=ROW_BUCKETS, registry=r
        )
        self.watermark = Gauge(
            "trending_watermark_timestamp_seconds",
            "Event-time watermark (0 before the first).",
            registry=r,
        )
        self.watermark_delay = Gauge(
            "trending_watermark_delay_seconds",
            "Wall clock minus the event-time watermark (0 before the first).",
            registry=r,
        )
        self.watermark_delay.set_function(self._watermark_delay)
        self.state_rows = Gauge(
            "trending_state_rows",
            "Rows (entries) held in state, per stateful operator.",
            ["operator"],
            registry=r,
        )
        self.state_memory = Gauge(
            "trending_state_memory_bytes",
            "Memory used by state, per stateful operator.",
            ["operator"],
            registry=r,
        )
        self.open_windows = Gauge("trending_open_windows", "Windows not final yet.", registry=r)
        self.kafka_lag = Gauge(
            "trending_kafka_lag_records",
            "Latest offset minus the offset the query has processed, per topic-partition.",
            ["topic", "partition"],
            registry=r,
        )
        self.records_read = Counter(
            "trending_kafka_records_read_total", "Records read, per topic.", ["topic"], registry=r
        )
        self.records_written = Counter(
            "trending_kafka_records_written_total",
            "Records written, per topic.",
            ["topic"],
            registry=r,
        )
        self.dead_letters = Counter(
            "trending_dead_letters_total",
            "Records dead-lettered, per reason.",
            ["reason"],
            registry=r,
        )
        self.late_records = Counter(
            "trending_late_records_total",
            "Late records routed aside, per reason.",
            ["reason"],
            registry=r,
        )
        self.windows_opened = _counter(r, "windows_opened", "Windows opened.")
        self.windows_revised = _counter(r, "windows_revised", "Revisions published.")
        self.windows_finalized = _counter(r, "windows_finalized", "Windows finalized.")
        self.partitions_evicted = _counter(r, "partitions_evicted", "Window partitions evicted.")
        self.topk_changes = _counter(r, "topk_changes", "Top-k changes (sensor jobs).")
        self.matches = _counter(r, "matches", "Pattern matches (sensor jobs).")
        self.popular_readings = _counter(r, "popular_readings", "Popular readings (sensor jobs).")
        self.pending_events = Gauge(
            "trending_pending_events",
            "Events held until the watermark passes them (sensor jobs).",
            registry=r,
        )
        self.top_hashtags = Gauge(
            "trending_top_hashtag_count",
            "Count of each of the current top-k hashtags of the newest open window.",
            ["hashtag"],
            registry=r,
        )
        self.top_window_start = Gauge(
            "trending_top_window_start_timestamp_seconds",
            "Start of the window trending_top_hashtag_count shows (0 before the first).",
            registry=r,
        )
        self.registry_failures = RegistryFailures()
        r.register(self.registry_failures)
        self._watermark_s: float | None = None
        self._top: set[str] = set()
        self._lock = threading.Lock()
        self._precreate()

    def _precreate(self) -> None:
        for state in QUERY_STATES:
            self.query_status.labels(state)
        for phase in SPARK_PHASES:
            self.batch_phase.labels("spark", phase)
        for phase in JOB_PHASES:
            self.batch_phase.labels("job", phase)
        for reason in DEAD_LABELS:
            self.dead_letters.labels(reason)
        for reason in LATE_REASONS:
            self.late_records.labels(reason)

    def add_topics(self, read: Iterable[str] = (), written: Iterable[str] = ()) -> None:
        """Create the per-topic counters of the topics a job reads and writes."""
        for topic in read:
            self.records_read.labels(topic)
        for topic in written:
            self.records_written.labels(topic)

    def set_status(self, state: str | None) -> None:
        """Set the query state (``active``, ``failed``, or None when stopped cleanly)."""
        for known in QUERY_STATES:
            self.query_status.labels(known).set(1 if known == state else 0)

    def observe_batch(
        self,
        phases: Mapping[str, float],
        dead_reasons: Mapping[str, int],
        late_reason: str,
        late: int,
    ) -> None:
        """A job's batch: its phase durations, dead letters per reason and late records."""
        for phase, seconds in phases.items():
            self.batch_phase.labels("job", phase).observe(seconds)
        for reason, count in dead_reasons.items():
            self.dead_letters.labels(dead_reason_label(reason)).inc(count)
        self.late_records.labels(late_reason).inc(late)

    def set_watermark(self, watermark_ms: int | None) -> None:
        """The event-time watermark in epoch milliseconds (None: not known yet)."""
        self._watermark_s = None if watermark_ms is None else watermark_ms / 1000
        self.watermark.set(self._watermark_s or 0)

    def _watermark_delay(self) -> float:
        return 0.0 if self._watermark_s is None else time.time() - self._watermark_s

    def set_top(self, window_start_ms: int | None, top: Iterable[tuple[str, int]]) -> None:
        """Show ``top`` as the trending view; hashtags no longer in it lose their series."""
        with self._lock:
            current = dict(top)
            for tag in self._top - current.keys():
                self.top_hashtags.remove(tag)
            for tag, count in current.items():
                self.top_hashtags.labels(tag).set(count)
            self._top = set(current)
            self.top_window_start.set(0 if window_start_ms is None else window_start_ms / 1000)


class RegistryFailures(Collector):
    """``trending_schema_registry_failed_requests_total``: the executors' requests to the schema
    registry that failed (no answer, a timeout, a 5xx, refused credentials...; each is asked
    again, see ``trending.avro.SchemaRegistry``). A Spark accumulator counts them, tasks that
    gave up included; the driver learns a task's count when the task ends, and this reads it at
    each scrape, so a registry that fails shows while the batch still waits for it."""

    NAME = "trending_schema_registry_failed_requests"

    def __init__(self) -> None:
        self._base = 0.0  # the counts of earlier Spark contexts of this process
        self._last = 0.0

    def collect(self) -> Iterable[Metric]:
        now = executor_registry_failures()
        if now is not None:
            if now < self._last:  # a new Spark context counts from 0
                self._base += self._last
            self._last = now
        yield CounterMetricFamily(
            self.NAME,
            "Schema registry requests of the executors that failed (and were asked again).",
            value=self._base + self._last,
        )


def executor_registry_failures() -> float | None:
    """The driver's count of failed registry requests of its Spark context, None without one
    (a command that runs no Spark never imports it)."""
    pyspark = sys.modules.get("pyspark")
    context = None if pyspark is None else pyspark.SparkContext._active_spark_context
    if context is None:
        return None
    try:
        return float(context._jvm.trending.avro.SchemaRegistry.failedRequests(context._jsc.sc()))
    except Exception:  # a context stopping, a JVM without the project's jar
        return None


def add_metrics_arguments(parser: argparse.ArgumentParser, port: int = DEFAULT_PORT) -> None:
    """Add ``--metrics-host`` and ``--metrics-port`` (0 disables the endpoint).

    Jobs serve on the default port; helper commands (producer, reader) pass ``port=0`` so they
    can run beside a job without a clash, and serve only when given a port.
    """
    group = parser.add_argument_group("metrics")
    group.add_argument(
        "--metrics-host",
        default=DEFAULT_HOST,
        help="address of the Prometheus endpoint /metrics",
    )
    group.add_argument(
        "--metrics-port",
        type=arg_types.port,
        default=port,
        help="port of the Prometheus endpoint; 0 disables it (default: %(default)s)",
    )


def _counter(registry: CollectorRegistry, name: str, documentation: str) -> Counter:
    return Counter(f"trending_{name}_total", documentation, registry=registry)


def dead_reason_label(reason: str | None) -> str:
    """The short label value of a dead-letter reason."""
    text = reason or ""
    if text in DEAD_REASONS:
        return DEAD_REASONS[text]
    if text.endswith("is not valid UTF-8"):
        return INVALID_UTF8
    if _AVRO_CHECK.search(text):
        return MALFORMED_AVRO
    if text.startswith(f"{OVERSIZED}: "):
        return OVERSIZED
    if text.startswith("oversized result: "):
        return OVERSIZED_RESULT
    bound = _BOUND.match(text)
    if bound and bound[1] in BOUND_LABELS:
        return BOUND_LABELS[bound[1]]
    if text.startswith("unknown schema id "):
        return UNKNOWN_SCHEMA
    if _WRITER_SCHEMA.search(text):
        return INCOMPATIBLE_SCHEMA
    return OTHER_REASON


_BOUND = re.compile(r"over --([a-z-]+): ")
_WRITER_SCHEMA = re.compile(  # not compatible, not Avro, not valid, recursive, too deep...
    r"^(schema id \d+ |value of schema id \d+ cannot be read)"
)


_AVRO_CHECK = re.compile(
    r"^(value ends inside field|(length|item count) of field .* (is negative|is beyond the value)"
    r"|varint of field|(union|enum) index of field|(boolean|int) field .* (is not 0 or 1|is out "
    r"of range)|field .* has an unknown type)"
)


DRIVER_OPERATOR = "driver_topk"  # the driver's published top-k entries; Spark's operators report
# their own rows and bytes under their names (trending.spark.listener)


class Metered(Protocol):
    """A job's batch processor that counts its batches in :class:`Metrics` through an observer
    of its own (for instance ``trending.jobs.hashtags.HashtagObserver``)."""

    def attach_metrics(self, metrics: Metrics) -> None:
        """Count this job's batches in ``metrics`` (call before the query starts)."""


class MetricsServer:
    """The HTTP endpoint ``/metrics`` of one registry, in a daemon thread."""

    def __init__(self, metrics: Metrics, host: str, port: int) -> None:
        server, thread = start_http_server(port, addr=host, registry=metrics.registry)
        self._server: WSGIServer = server
        self._thread = thread
        self.port: int = server.server_port
        log.info("metrics: http://%s:%d/metrics", host, self.port)

    def close(self) -> None:
        """Stop serving."""
        self._server.shutdown()
        self._server.server_close()


def finite(value: object) -> float | None:
    """``value`` as a finite float, else None (Spark reports NaN rates for empty batches)."""
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def serve_metrics(kind: str, host: str, port: int) -> tuple[Metrics, MetricsServer | None]:
    """The metrics of a command, served on ``host:port`` unless the port is 0."""
    metrics = Metrics(kind)
    if port == 0:
        return metrics, None
    try:
        return metrics, MetricsServer(metrics, host, port)
    except OSError as error:
        raise UserError(
            f"cannot serve metrics on {host}:{port} ({error.strerror}): pick another "
            "--metrics-port, or 0 to turn the endpoint off"
        ) from error
