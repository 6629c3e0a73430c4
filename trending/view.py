"""Live terminal views of the jobs' result topics: the newest windows' top-k as they change
(the demo and ``trending watch``), sensor matches and popular readings, temporal window rows,
and what a job's Prometheus endpoint says about its input.

The boards hold decoded records and render with rich; none of them reads Kafka, and the clocks
of :class:`FeedStats` and :class:`JobMetricsBoard` are arguments, so what a board shows follows
from what it was fed.
"""

from __future__ import annotations

import math
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Protocol

from confluent_kafka import Consumer
from prometheus_client.parser import text_string_to_metric_families
from rich.console import Group, RenderableType
from rich.live import Live
from rich.markup import escape
from rich.table import Table

from connectors.avro import AvroCodec
from connectors.kafka import client_config
from trending.status import kafka_log_settings

WAITING_FOR_SPARK = "waiting for the first results (Spark takes a few seconds to start) ..."


@dataclass
class TopKBoard:
    """The latest record per window, and counts of what arrived."""

    windows: dict[int, dict[str, Any]] = field(default_factory=dict)
    revisions: int = 0
    finals: int = 0
    waiting: str | None = WAITING_FOR_SPARK

    def add(self, record: Mapping[str, Any]) -> None:
        start = record["window_start"]
        known = self.windows.get(start)
        if known is None or record["revision"] > known["revision"]:
            self.windows[start] = dict(record)
        if record["is_final"]:
            self.finals += 1
        else:
            self.revisions += 1

    def newest(self, shown: int = 3) -> list[dict[str, Any]]:
        """The latest record of each of the ``shown`` windows that start last, newest first."""
        return [self.windows[s] for s in sorted(self.windows)[-shown:][::-1]]

    def render(self, shown: int = 3) -> Group:
        tables = [_window_table(record) for record in self.newest(shown)]
        summary = Table.grid()
        if not self.windows and self.waiting:
            summary.add_row(self.waiting)
        summary.add_row(f"[bold]{self.revisions}[/] revisions, [bold]{self.finals}[/] finals")
        return Group(summary, *tables)


@dataclass
class ViewDeadline:
    """When a timed live view ends: ``seconds`` after the first result arrived, or
    ``first_result_timeout`` after ``started`` if none did; never if ``seconds`` is None."""

    seconds: float | None
    started: float
    first_result_timeout: float = 300.0
    ends: float | None = None

    def over(self, now: float, has_results: bool) -> bool:
        if self.seconds is None:
            return False
        if self.ends is None and has_results:
            self.ends = now + self.seconds
        if self.ends is None:
            return now >= self.started + self.first_result_timeout
        return now >= self.ends


def _clock(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%H:%M:%S")


def _window_table(record: Mapping[str, Any]) -> Table:
    state = "[green]final[/]" if record["is_final"] else "[yellow]open[/]"
    title = (
        f"window {_clock(record['window_start'])}-{_clock(record['window_end'])} UTC  "
        f"{state}  rev {record['revision']}"
    )
    table = Table(title=title, title_justify="left", min_width=48)
    table.add_column("#", justify="right")
    table.add_column("hashtag")
    table.add_column("count", justify="right")
    for rank, entry in enumerate(record["top"], start=1):
        table.add_row(str(rank), escape("#" + entry["hashtag"]), str(entry["count"]))
    return table


def watch_topk(
    bootstrap: str,
    topic: str,
    seconds: float | None = None,
    extra: Mapping[str, str] | None = None,
    registry_url: str | None = None,
    alive: Callable[[], bool] = lambda: True,
    first_result_timeout: float = 300.0,
) -> TopKBoard:
    """Show the newest windows of ``topic`` live (read_committed) until Ctrl-C, or for
    ``seconds`` counted from the first record (giving up after ``first_result_timeout``
    seconds without one), or until ``alive()`` turns false.
    """
    codec = AvroCodec("trending_topk", registry_url, subject=f"{topic}-value")
    consumer = Consumer(
        client_config(bootstrap, extra)
        | {
            "group.id": f"trending-view-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
        }
        | kafka_log_settings()
    )
    consumer.subscribe([topic])
    board = TopKBoard()
    deadline = ViewDeadline(seconds, time.monotonic(), first_result_timeout)
    try:
        with Live(board.render(), refresh_per_second=4) as live:
            while alive() and not deadline.over(time.monotonic(), bool(board.windows)):
                for message in consumer.consume(500, timeout=0.25):
                    if message.error() is None and message.value():
                        board.add(codec.decode(message.value() or b""))
                live.update(board.render())
    except KeyboardInterrupt:
        pass
    finally:
        consumer.close()
    return board


# ``trending watch``: a board per kind of result, the topic's feed, the job's metrics.

Clock = Callable[[], float]
RATE_WINDOW_S = 10.0
_BUCKET_MS = 100
# The families of trending.metrics.Metrics the view shows (summed over their labels)
LAG_METRIC = "trending_kafka_lag_records"
INPUT_RATE_METRIC = "trending_input_rows_per_second"
PROCESSED_RATE_METRIC = "trending_processed_rows_per_second"


def _moment(ms: int) -> str:
    """Epoch milliseconds as ``2026-11-28 16:30:34.123`` (UTC)."""
    try:
        moment = datetime.fromtimestamp(ms / 1000, tz=timezone.utc)
    except (OverflowError, OSError, ValueError):
        return str(ms)
    return moment.strftime("%Y-%m-%d %H:%M:%S.") + f"{ms % 1000:03d}"


def _number(value: float | None, unit: str = "", sign: bool = False) -> str:
    if value is None:
        return "n/a"
    return (f"{value:+,.1f}" if sign else f"{value:,.1f}").removesuffix(".0") + unit


@dataclass
class FeedStats:
    """What arrived on a topic: records, undecodable ones, the newest one's age and the rate of
    the last ``window_s`` seconds of the wall clock ``wall``. Rate and age go by the records'
    own Kafka timestamps (when the job wrote them), so a backlog read from the start is not a
    burst of news; a record without a timestamp counts as written when it arrived."""

    wall: Clock = time.time
    window_s: float = RATE_WINDOW_S
    records: int = 0
    undecodable: int = 0
    newest_ms: int | None = None
    _buckets: dict[int, int] = field(default_factory=dict, repr=False)

    def add(self, timestamp_ms: int | None, *, decoded: bool = True) -> None:
        """One record written at ``timestamp_ms``; ``decoded=False``: one that did not decode."""
        now_ms = self.wall() * 1000
        stamp = timestamp_ms if timestamp_ms is not None and timestamp_ms >= 0 else int(now_ms)
        self.newest_ms = stamp if self.newest_ms is None else max(self.newest_ms, stamp)
        if not decoded:
            self.undecodable += 1
            return
        self.records += 1
        if stamp >= now_ms - self.window_s * 1000:
            bucket = stamp // _BUCKET_MS
            self._buckets[bucket] = self._buckets.get(bucket, 0) + 1
            if len(self._buckets) > 2 * self.window_s * 1000 / _BUCKET_MS:
                self._prune(now_ms)

    def rate(self) -> float:
        """Decoded records a second written in the last ``window_s`` seconds."""
        self._prune(self.wall() * 1000)
        return sum(self._buckets.values()) / self.window_s

    def age_s(self) -> float | None:
        """Seconds since the newest record was written (None before the first)."""
        if self.newest_ms is None:
            return None
        return max(0.0, self.wall() - self.newest_ms / 1000)

    def describe(self) -> str:
        age = self.age_s()
        parts = [
            f"{self.records:,} records",
            f"{_number(self.rate())}/s over the last {self.window_s:g} s",
            "no record yet" if age is None else f"last record {age:,.0f} s ago",
            f"{self.undecodable:,} undecodable",
        ]
        return ", ".join(parts)

    def _prune(self, now_ms: float) -> None:
        oldest = (now_ms - self.window_s * 1000) // _BUCKET_MS
        for bucket in [b for b in self._buckets if b < oldest]:
            del self._buckets[bucket]


class Board(Protocol):
    """What a result topic's records show as."""

    def add(self, record: Mapping[str, Any]) -> None: ...

    def render(self) -> RenderableType: ...


@dataclass
class QueryMatches:
    """The matches of one sensor query: how many, and the newest few (newest first)."""

    query_id: int
    query_ts: int
    count: int = 0
    recent: deque[dict[str, Any]] = field(default_factory=deque)
    seen: int = 0  # when the board last saw one of its matches (an arrival number)


@dataclass
class MatchBoard:
    """Sensor matches (``sensor_match``): per query its count and newest matches; the queries
    matched most recently first."""

    per_query: int = 3
    shown: int = 10
    queries: dict[int, QueryMatches] = field(default_factory=dict)
    matches: int = 0

    def add(self, record: Mapping[str, Any]) -> None:
        self.matches += 1
        query = self.queries.setdefault(
            record["query_id"], QueryMatches(record["query_id"], record["query_ts"])
        )
        query.count += 1
        query.seen = self.matches
        query.recent.appendleft(dict(record))
        while len(query.recent) > self.per_query:
            query.recent.pop()

    def newest(self) -> list[QueryMatches]:
        return sorted(self.queries.values(), key=lambda q: q.seen, reverse=True)[: self.shown]

    def render(self) -> RenderableType:
        title = f"{self.matches:,} matches of {len(self.queries):,} queries"
        table = Table(title=title, title_justify="left")
        table.add_column("query", justify="right")
        table.add_column("query time (UTC)")
        table.add_column("matches", justify="right")
        table.add_column("newest: sensor = value (reading time)")
        for query in self.newest():
            newest = ", ".join(
                f"{m['sensor_id']} = {m['value']:g} ({_clock(m['reading_ts'])})"
                for m in query.recent
            )
            table.add_row(str(query.query_id), _moment(query.query_ts), f"{query.count:,}", newest)
        return table


@dataclass
class PopularBoard:
    """Popular readings (``popular_reading``): the newest few, newest first, and how many of
    each sensor."""

    shown: int = 10
    recent: deque[dict[str, Any]] = field(default_factory=deque)
    readings: int = 0
    sensors: dict[int, int] = field(default_factory=dict)

    def add(self, record: Mapping[str, Any]) -> None:
        self.readings += 1
        sensor = record["sensor_id"]
        self.sensors[sensor] = self.sensors.get(sensor, 0) + 1
        self.recent.appendleft(dict(record))
        while len(self.recent) > self.shown:
            self.recent.pop()

    def render(self) -> RenderableType:
        table = Table(
            title=f"{self.readings:,} popular readings of {len(self.sensors):,} sensors",
            title_justify="left",
        )
        for name in ("time (UTC)", "sensor", "at", "value", "matches", "sensor's popular"):
            table.add_column(name, justify="left" if name in ("time (UTC)", "at") else "right")
        for reading in self.recent:
            table.add_row(
                _moment(reading["ts"]),
                str(reading["sensor_id"]),
                f"({reading['x']:.4f}, {reading['y']:.4f})",
                f"{reading['value']:g}",
                f"{reading['matches']:,}",
                f"{self.sensors[reading['sensor_id']]:,}",
            )
        return table


@dataclass
class KeyRows:
    """The newest row of one key of a temporal window job, and how many rows the key had."""

    row: dict[str, Any]
    count: int
    seen: int


@dataclass
class WindowRowBoard:
    """Temporal window rows (``window_row``): each key's newest row (the latest start; of
    equal starts, the later arrival), the newest rows first."""

    shown: int = 15
    keys: dict[str | None, KeyRows] = field(default_factory=dict)
    rows: int = 0

    def add(self, record: Mapping[str, Any]) -> None:
        self.rows += 1
        known = self.keys.get(record["key"])
        if known is None:
            self.keys[record["key"]] = KeyRows(dict(record), 1, self.rows)
            return
        known.count += 1
        if record["start"] >= known.row["start"]:
            known.row, known.seen = dict(record), self.rows

    def newest(self) -> list[tuple[str | None, KeyRows]]:
        ranked = sorted(
            self.keys.items(), key=lambda item: (item[1].row["start"], item[1].seen), reverse=True
        )
        return ranked[: self.shown]

    def render(self) -> RenderableType:
        table = Table(title=f"{self.rows:,} rows of {len(self.keys):,} keys", title_justify="left")
        for name in ("key", "start (UTC)", "end (UTC)", "value", "rows"):
            table.add_column(name, justify="right" if name in ("value", "rows") else "left")
        for key, rows in self.newest():
            row = rows.row
            value = row["value"]
            shown = (
                f"{value:g}" if value is not None else ", ".join(f"{v:g}" for v in row["values"])
            )
            table.add_row(
                "(no key)" if key is None else escape(key),
                _moment(row["start"]),
                "end of time" if row["end"] is None else _moment(row["end"]),
                shown,
                f"{rows.count:,}",
            )
        return table


@dataclass(frozen=True)
class JobSample:
    """What a job's Prometheus endpoint said: its input lag (records, over every partition it
    reads) and its rates (rows a second of the last micro-batch); None where it did not say."""

    lag: float | None
    input_rate: float | None
    processed_rate: float | None


def parse_job_metrics(text: str) -> JobSample:
    """The :class:`JobSample` of a Prometheus text exposition; ``ValueError`` if it is none."""
    wanted = (LAG_METRIC, INPUT_RATE_METRIC, PROCESSED_RATE_METRIC)
    found: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        if family.name in wanted:
            values = [
                s.value for s in family.samples if s.name == family.name and math.isfinite(s.value)
            ]
            if values:
                found[family.name] = float(sum(values))
    return JobSample(
        found.get(LAG_METRIC), found.get(INPUT_RATE_METRIC), found.get(PROCESSED_RATE_METRIC)
    )


@dataclass
class JobMetricsBoard:
    """The latest reading of a job's metrics endpoint (``url``, shown as given), the change of
    its lag a second between the last two readings, or why the last reading failed."""

    url: str
    sample: JobSample | None = None
    at: float | None = None
    lag_rate: float | None = None
    error: str | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def update(self, text: str, now: float) -> None:
        """A reading of the endpoint at ``now`` (seconds of a monotonic clock)."""
        try:
            sample = parse_job_metrics(text)
        except Exception as error:  # the parser's ValueError, or worse on a page of another kind
            self.failed(f"not Prometheus metrics ({error})")
            return
        with self._lock:
            before, at = self.sample, self.at
            self.lag_rate = None
            old = None if before is None else before.lag
            if old is not None and sample.lag is not None and at is not None and now > at:
                self.lag_rate = (sample.lag - old) / (now - at)
            self.sample, self.at, self.error = sample, now, None

    def failed(self, reason: str) -> None:
        with self._lock:
            self.error = reason

    def line(self) -> str:
        with self._lock:
            sample, error, lag_rate = self.sample, self.error, self.lag_rate
        where = escape(self.url)
        if error is not None:
            return f"[red]job metrics: cannot read {where}: {escape(error)}[/]"
        if sample is None:
            return f"job metrics: reading {where} ..."
        if sample == JobSample(None, None, None):
            return f"[yellow]job metrics: {where} shows no trending job metrics[/]"
        lag = "n/a" if sample.lag is None else f"{sample.lag:,.0f} records"
        return (
            f"job input lag [bold]{lag}[/] ({_number(lag_rate, '/s', sign=True)}), "
            f"input {_number(sample.input_rate, ' rows/s')}, "
            f"processed {_number(sample.processed_rate, ' rows/s')}"
        )


@dataclass
class WatchScreen:
    """What ``trending watch`` shows: the topic's feed, the job's metrics (if asked for), and
    the board of the topic's kind (None until ``--kind auto`` has chosen one)."""

    topic: str
    feed: FeedStats
    kind: str | None = None
    board: Board | None = None
    metrics: JobMetricsBoard | None = None
    missing: bool = False  # the topic does not exist (yet)
    note: str | None = None  # the Kafka client's last complaint

    def render(self) -> Group:
        lines = Table.grid()
        topic = escape(self.topic)
        if self.feed.records + self.feed.undecodable == 0:
            why = " (no such topic yet)" if self.missing else ""
            lines.add_row(f"waiting for records on [bold]{topic}[/]{why} ...")
        else:
            kind = f" ({self.kind})" if self.kind else ""
            lines.add_row(f"[bold]{topic}[/]{kind}: {self.feed.describe()}")
        if self.metrics is not None:
            lines.add_row(self.metrics.line())
        if self.note:
            lines.add_row(f"[yellow]kafka: {escape(self.note)}[/]")
        return Group(lines, *([] if self.board is None else [self.board.render()]))
