"""``trending watch TOPIC``: a live terminal view of a job's result topic.

What it shows depends on the topic's kind (:data:`KINDS`): the top-k of the newest windows
(hashtags), the newest matches per query (sensor matches), the newest popular readings, or each
key's newest row (temporal windows); above them, the topic's rate and the age of its newest
record, and, with ``--metrics-url``, the job's input lag and rates from its Prometheus endpoint.
It reads committed records only, with no consumer group (it assigns itself every partition,
and picks up partitions added later), and commits nothing.
"""

from __future__ import annotations

import argparse
import http.client
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from typing import Any

from confluent_kafka import (
    OFFSET_BEGINNING,
    OFFSET_END,
    TIMESTAMP_NOT_AVAILABLE,
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    TopicPartition,
)
from rich.console import Console
from rich.live import Live

from connectors.avro import (
    REGISTRY_ENV,
    AvroCodec,
    resolve_registry_url,
    schema_for_topic,
)
from connectors.kafka import add_kafka_arguments, consumer, kafka_from_args
from connectors.kafka_settings import mask_url
from trending import arg_types
from trending.commands import require_kafka
from trending.errors import UserError
from trending.view import (
    Board,
    FeedStats,
    JobMetricsBoard,
    MatchBoard,
    PopularBoard,
    TopKBoard,
    WatchScreen,
    WindowRowBoard,
)

# The kinds of result, in the order ``--kind auto`` tries them, and their schemas
KINDS: dict[str, str] = {
    "hashtags": "trending_topk",
    "matches": "sensor_match",
    "popular": "popular_reading",
    "windows": "window_row",
}
# The jobs' default output topics (trending.jobs.hashtags, .sensors, .windows), by kind
DEFAULT_TOPICS: dict[str, str] = {
    "trending-hashtags": "hashtags",
    "sensor-matches": "matches",
    "popular-readings": "popular",
    "window-rows": "windows",
}
METRICS_EVERY_S = 2.0
METRICS_TIMEOUT_S = 1.5
# A timestamp of the view's records is plausible before the year 2200 (epoch ms)
LATEST_PLAUSIBLE_MS = 7_258_118_400_000
Decoded = dict[str, Any]


def metrics_url(text: str) -> str:
    """``--metrics-url``: an http(s) URL, for argparse."""
    parts = urllib.parse.urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise argparse.ArgumentTypeError(
            f"not an http or https URL: {text!r} (e.g. http://localhost:9108/metrics)"
        )
    return text


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "watch",
        help="a live view of a job's results",
        description="Show the results on TOPIC live, refreshing in place: the top-k of the "
        "newest windows (trending run hashtags), the newest matches per query or the newest "
        "popular readings (trending run sensors), each key's newest row (trending run windows). "
        "Above them: records a second over the last 10 s, how long ago the newest record was "
        "written, and how many records did not decode; with --metrics-url, the job's input lag "
        "and rates. Reads committed records only and commits nothing. Ctrl-C stops it.",
    )
    parser.add_argument(
        "topic", type=arg_types.topic, metavar="TOPIC", help="the result topic to show"
    )
    parser.add_argument(
        "--kind",
        choices=("auto", *KINDS),
        default="auto",
        help="what TOPIC holds: hashtags (trending_topk), matches (sensor_match), popular "
        "(popular_reading) or windows (window_row). auto goes by the jobs' default output "
        "topics, trending-hashtags, sensor-matches, popular-readings and window-rows (or one of "
        "them followed by -SUFFIX or .SUFFIX), else by the first record that one of the four "
        "schemas decodes, tried in that order",
    )
    parser.add_argument(
        "--from",
        dest="start",
        choices=("earliest", "latest"),
        default="earliest",
        help="where to start in each partition: earliest shows the results already on the "
        "topic, latest only new ones",
    )
    parser.add_argument(
        "--duration",
        type=arg_types.duration_s,
        help="stop after this long, e.g. 30s (default: until Ctrl-C)",
    )
    parser.add_argument(
        "--metrics-url",
        type=metrics_url,
        metavar="URL",
        help="the job's Prometheus endpoint, e.g. http://localhost:9108/metrics: show its input "
        f"lag and rates, read every {METRICS_EVERY_S:g}s (default: not shown)",
    )
    parser.add_argument(
        "--schema-registry-url",
        metavar="URL",
        help=f"read the Confluent wire format, as the job wrote it with the same setting "
        f"(default: ${REGISTRY_ENV}; none: plain Avro)",
    )
    add_kafka_arguments(parser)
    parser.set_defaults(handler=run)


def kind_for_topic(topic: str) -> str | None:
    """The kind of a job's default output topic (or of one with a ``-`` or ``.`` suffix to
    it), else None. A topic named for one of the jobs' inputs or side outputs is a mistake."""
    if topic in DEFAULT_TOPICS:
        return DEFAULT_TOPICS[topic]
    prefixes = [p for p in DEFAULT_TOPICS if topic.startswith((f"{p}-", f"{p}."))]
    if prefixes:
        return DEFAULT_TOPICS[max(prefixes, key=len)]
    try:
        schema = schema_for_topic(topic)
    except UserError:
        return None
    raise UserError(
        f"topic {topic} holds {schema} records, not a job's results: read it with "
        f"trending consume {topic}, or pass --kind"
    )


def plausible(kind: str, record: Mapping[str, Any]) -> bool:
    """Whether a record decoded as ``kind`` is one a job could have written (every timestamp
    between 1970 and 2200, windows that end after they start, counts not negative)."""

    def stamps(*names: str) -> bool:
        values = [record[n] for n in names if record[n] is not None]
        return all(0 <= value < LATEST_PLAUSIBLE_MS for value in values)

    if kind == "hashtags":
        return (
            stamps("window_start", "window_end", "emitted_at")
            and record["window_end"] > record["window_start"]
            and record["revision"] >= 0
            and all(entry["count"] >= 0 for entry in record["top"])
        )
    if kind == "matches":
        return stamps("reading_ts", "query_ts")
    if kind == "popular":
        return stamps("ts") and record["matches"] >= 0
    return stamps("start", "end") and (record["end"] is None or record["end"] >= record["start"])


def decode(codec: AvroCodec, value: bytes | None) -> Decoded | None:
    """The record in ``value``, or None when it does not decode with ``codec``'s schema (a
    schema registry that is not set up right is the user's mistake: :class:`UserError`)."""
    if not value:
        return None
    try:
        return codec.decode(value)
    except UserError:
        raise
    except Exception:  # MalformedRecord, or fastavro refusing to resolve another writer schema
        return None


def guess_kind(value: bytes | None, codecs: Mapping[str, AvroCodec]) -> tuple[str, Decoded] | None:
    """The first kind (in the order of ``codecs``) whose schema decodes ``value`` into a
    :func:`plausible` record, with the record; None if none does."""
    for kind, codec in codecs.items():
        record = decode(codec, value)
        if record is not None and plausible(kind, record):
            return kind, record
    return None


def new_board(kind: str) -> Board:
    if kind == "hashtags":
        return TopKBoard(waiting=None)
    if kind == "matches":
        return MatchBoard()
    if kind == "popular":
        return PopularBoard()
    return WindowRowBoard()


class Feed:
    """Takes the messages of the topic into a :class:`WatchScreen`."""

    def __init__(self, screen: WatchScreen, codecs: Mapping[str, AvroCodec]) -> None:
        self.screen, self.codecs = screen, codecs
        self.note: str | None = None  # the consumer's last complaint, until the next record

    def take(self, message: Message) -> None:
        error = message.error()
        if error is not None:
            if error.fatal():
                raise UserError(f"Kafka consumer failed: {error.str()}")
            self.note = error.str()
            return
        self.note = None
        kind_of_stamp, stamp = message.timestamp()
        timestamp = None if kind_of_stamp == TIMESTAMP_NOT_AVAILABLE else stamp
        value = message.value()
        screen = self.screen
        record: Decoded | None = None
        if screen.kind is None:
            guessed = guess_kind(value, self.codecs)
            if guessed is not None:
                screen.kind, record = guessed
                screen.board = new_board(screen.kind)
        else:
            record = decode(self.codecs[screen.kind], value)
            if record is not None and not plausible(screen.kind, record):
                record = None
        screen.feed.add(timestamp, decoded=record is not None)
        if record is not None and screen.board is not None:
            screen.board.add(record)


class Partitions:
    """Every partition of ``topic`` assigned to ``client`` from ``offset``, without a consumer
    group: asked for each second until the topic exists, then every ``every_s`` seconds for
    partitions added since."""

    def __init__(
        self, client: Consumer, topic: str, offset: int, bootstrap: str, every_s: float = 5.0
    ) -> None:
        self.client, self.topic, self.offset, self.bootstrap = client, topic, offset, bootstrap
        self.every_s = every_s
        self.assigned: set[int] = set()
        self.missing = False
        self.note: str | None = None
        self._next = 0.0

    def check(self, now: float) -> None:
        if now < self._next:
            return
        self._next = now + 1.0
        try:
            metadata = self.client.list_topics(self.topic, timeout=2.0)
        except KafkaException as failure:
            self.note = f"no answer from Kafka at {self.bootstrap}: {failure.args[0].str()}"
            return
        found = metadata.topics.get(self.topic)
        error = None if found is None else found.error
        self.missing = found is None or (
            error is not None and error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART
        )
        self.note = None if error is None or self.missing else error.str()
        if found is None or error is not None:
            return
        new = sorted(set(found.partitions) - self.assigned)
        if new:
            self.client.incremental_assign(
                [TopicPartition(self.topic, p, self.offset) for p in new]
            )
            self.assigned.update(new)
        self._next = now + self.every_s


def fetch_metrics(url: str, timeout: float = METRICS_TIMEOUT_S) -> str:
    """The text at ``url`` (a Prometheus exposition)."""
    with urllib.request.urlopen(url, timeout=timeout) as response:
        body: bytes = response.read()
    return body.decode("utf-8", errors="replace")


def _reason(error: Exception) -> str:
    if isinstance(error, urllib.error.HTTPError):
        return f"HTTP {error.code} {error.reason}"
    if isinstance(error, urllib.error.URLError):
        reason = error.reason
        return getattr(reason, "strerror", None) or str(reason)
    return str(error) or type(error).__name__


class MetricsPoller:
    """Reads ``url`` into ``board`` now and then every ``every_s`` seconds, in a daemon thread;
    a failure is shown on the board, never raised."""

    def __init__(
        self,
        url: str,
        board: JobMetricsBoard,
        every_s: float = METRICS_EVERY_S,
        fetch: Callable[[str], str] = fetch_metrics,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.url, self.board, self.every_s, self.fetch, self.clock = (
            url,
            board,
            every_s,
            fetch,
            clock,
        )
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="watch-metrics", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(METRICS_TIMEOUT_S + 1)

    def read_once(self) -> None:
        try:
            text = self.fetch(self.url)
        except (OSError, ValueError, http.client.HTTPException) as error:
            self.board.failed(_reason(error))
        else:
            self.board.update(text, self.clock())

    def _run(self) -> None:
        while not self._stop.is_set():
            self.read_once()
            self._stop.wait(self.every_s)


def run(args: argparse.Namespace, console: Console | None = None) -> int:
    topic = args.topic
    kind = kind_for_topic(topic) if args.kind == "auto" else args.kind
    bootstrap, extra = kafka_from_args(args)
    require_kafka(bootstrap, extra)
    registry = resolve_registry_url(args.schema_registry_url)
    codecs = {
        k: AvroCodec(schema, registry, subject=f"{topic}-value") for k, schema in KINDS.items()
    }
    if kind is not None:
        codecs = {kind: codecs[kind]}
    screen = WatchScreen(topic, FeedStats(), kind, None if kind is None else new_board(kind))
    poller = None
    if args.metrics_url:
        screen.metrics = JobMetricsBoard(mask_url(args.metrics_url))
        poller = MetricsPoller(args.metrics_url, screen.metrics)
    client = consumer(bootstrap, extra, from_beginning=args.start == "earliest")
    offset = OFFSET_BEGINNING if args.start == "earliest" else OFFSET_END
    partitions = Partitions(client, topic, offset, bootstrap)
    feed = Feed(screen, codecs)
    ends = None if args.duration is None else time.monotonic() + args.duration
    try:
        if poller is not None:
            poller.start()
        with Live(screen.render(), console=console or Console(), refresh_per_second=4) as live:
            while ends is None or time.monotonic() < ends:
                partitions.check(time.monotonic())
                timeout = 0.25 if ends is None else max(0.0, min(0.25, ends - time.monotonic()))
                for message in client.consume(500, timeout=timeout):
                    feed.take(message)
                screen.missing, screen.note = partitions.missing, partitions.note or feed.note
                live.update(screen.render())
    except KeyboardInterrupt:
        pass
    finally:
        client.close()
        if poller is not None:
            poller.stop()
    return 0
