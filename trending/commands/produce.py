"""``trending produce tweets|readings|queries|events``: write generated (or replayed) records to
Kafka as Avro."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any, TextIO

from connectors.avro import REGISTRY_ENV, resolve_registry_url
from connectors.kafka import DeliveryError, add_kafka_arguments, kafka_from_args
from trending import arg_types
from trending.commands import OptionError, checking_options, require_kafka
from trending.errors import UserError
from trending.generate import generate_tweets, produce_tweets, read_jsonl
from trending.metrics import MetricsServer, add_metrics_arguments, serve_metrics
from trending.sensors_data import (
    generate_queries,
    generate_readings,
    produce_sensor_records,
    read_queries_jsonl,
    read_readings_jsonl,
)
from trending.temporal_data import produce_interval_events, read_events_jsonl

MAX_REPORTED_BAD_LINES = 20
# The generator holds each distinct user and hashtag (and its Zipf weight) in memory.
DISTINCT = arg_types.positive_int_up_to(10_000_000)
Records = Iterable[Mapping[str, Any]]
Reader = Callable[[Iterable[str], Callable[[int, str], None]], Iterator[dict[str, Any]]]
Write = Callable[..., int]


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("produce", help="write test data to Kafka")
    kinds = parser.add_subparsers(dest="kind", metavar="KIND", required=True)
    tweets = kinds.add_parser(
        "tweets",
        help="synthetic tweets (Zipf hashtags, bursts, out-of-order) or --from-jsonl",
        description="Write tweets as Avro to a topic (created when missing). Generated tweets "
        "are deterministic given --seed and --start-ms.",
    )
    _add_source_arguments(tweets, "tweets", "tweets", 100_000)
    tweets.add_argument(
        "--jitter", type=arg_types.duration_ms, default="2s", help="max out-of-order delay"
    )
    tweets.add_argument(
        "--vocabulary", type=DISTINCT, metavar="N", default=50_000, help="distinct hashtags"
    )
    tweets.add_argument(
        "--zipf-s", type=arg_types.positive_float, metavar="S", default=1.1, help="Zipf exponent"
    )
    tweets.add_argument(
        "--users", type=DISTINCT, metavar="N", default=100_000, help="distinct users"
    )
    tweets.add_argument(
        "--burst-every",
        type=arg_types.duration_ms,
        default="10m",
        help="a new trending tag every this long of event time",
    )
    tweets.add_argument(
        "--burst-length",
        type=arg_types.duration_ms,
        default="3m",
        help="how long a burst lasts, of event time",
    )
    tweets.add_argument(
        "--burst-share",
        type=arg_types.share,
        metavar="F",
        default=0.3,
        help="the bursting tag's share of the tags in a burst",
    )
    _add_common_arguments(tweets)
    tweets.set_defaults(handler=run_tweets)
    _register_readings(kinds)
    _register_queries(kinds)
    _register_events(kinds)


def _add_topic_arguments(parser: argparse.ArgumentParser, topic: str) -> None:
    """The topic written to, and its partitions when it is created."""
    parser.add_argument("--topic", type=arg_types.topic, default=topic, help="target topic")
    parser.add_argument(
        "--partitions",
        type=arg_types.positive_int,
        default=4,
        help="partitions of the topic when it is created",
    )


def _add_source_arguments(
    parser: argparse.ArgumentParser, noun: str, topic: str, count: int
) -> None:
    """The target topic and the records' source, generated or replayed, of a generating kind."""
    _add_topic_arguments(parser, topic)
    parser.add_argument("--count", type=arg_types.count, default=count, help=f"{noun} to generate")
    parser.add_argument("--from-jsonl", type=Path, metavar="FILE", help="replay a JSON-lines file")
    parser.add_argument(
        "--rate",
        type=arg_types.positive_float,
        metavar="R",
        help=f"cap in {noun}/s of wall time (default: no cap)",
    )
    parser.add_argument("--seed", type=int, default=1, metavar="N", help="random seed, >= 0")
    parser.add_argument(
        "--start-ms",
        type=arg_types.epoch_ms,
        help="the first event time, in milliseconds since 1970 (default: so that the last "
        "event time is about now)",
    )
    parser.add_argument(
        "--events-per-second",
        type=arg_types.positive_float,
        metavar="E",
        default=1000.0,
        help="event-time rate",
    )


def _add_common_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags every ``produce`` kind takes: registry, quiet, Kafka and metrics."""
    parser.add_argument(
        "--schema-registry-url",
        metavar="URL",
        help=f"write the Confluent wire format (default: ${REGISTRY_ENV}; none: plain Avro)",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar or summary")
    add_kafka_arguments(parser)
    add_metrics_arguments(parser, port=0)


def _register_readings(kinds: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    readings = _sensor_parser(
        kinds,
        "readings",
        help="synthetic sensor readings (the SensorQuery Beacon) or --from-jsonl",
        fields="sensor_id, x, y, value, ts",
    )
    readings.add_argument(
        "--sensors", type=arg_types.positive_int, default=100, help="N sensors, ids 0 to N-1"
    )
    readings.set_defaults(handler=run_readings)


def _register_queries(kinds: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    queries = _sensor_parser(
        kinds,
        "queries",
        help="synthetic sensor queries (ids 0, 1, 2, ...) or --from-jsonl",
        fields="query_id, x, y, distance, ts",
    )
    queries.add_argument(
        "--distance",
        type=arg_types.non_negative_float,
        metavar="D",
        default=0.05,
        help="of every query",
    )
    queries.set_defaults(handler=run_queries)


def _sensor_parser(
    kinds: argparse._SubParsersAction[argparse.ArgumentParser], kind: str, help: str, fields: str
) -> argparse.ArgumentParser:
    """The flags ``produce readings`` and ``produce queries`` share."""
    topic, key = f"sensor-{kind}", fields.split(",", maxsplit=1)[0]
    parser = kinds.add_parser(
        kind,
        help=help,
        description=f"Write sensor {kind} as Avro to a topic (created when missing), keyed by "
        f"{key}. Generated {kind} are deterministic given --seed and --start-ms; x, y uniform "
        f"in [0, 1); record i has ts = start + floor(i * 1000 / E). A --from-jsonl line holds "
        f"{fields} (ts as epoch ms or ISO-8601).",
    )
    _add_source_arguments(parser, kind, topic, 10_000)
    _add_common_arguments(parser)
    return parser


def _register_events(kinds: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    events = kinds.add_parser(
        "events",
        help="intervals, edges and CTIs of the temporal replay format (--from-jsonl)",
        description="Write the lines of a temporal replay file as interval_event Avro records "
        "to a topic (created when missing), in file order: "
        '{"start": T, "end": T, "key": K, "value": V, "id": ID} -> INTERVAL (no end: '
        'START_EDGE), {"end_edge": ID, "end": T} -> END_EDGE, {"cti": T} -> CTI; times as '
        "epoch ms or ISO-8601. Keys and ids are text (non-strings as compact JSON), values "
        "numbers. Events are keyed by key; an end edge gets the key of its start edge earlier "
        "in the file. Each CTI goes to every partition of the topic.",
    )
    _add_topic_arguments(events, "interval-events")
    events.add_argument(
        "--from-jsonl", type=Path, metavar="FILE", required=True, help="the replay file to load"
    )
    events.add_argument(
        "--rate",
        type=arg_types.positive_float,
        metavar="R",
        help="cap in messages/s of wall time (default: no cap)",
    )
    _add_common_arguments(events)
    events.set_defaults(handler=run_events)


def run_tweets(args: argparse.Namespace) -> int:
    with checking_options():
        kafka = kafka_from_args(args)
    bad = _BadLines(MAX_REPORTED_BAD_LINES, quiet=args.quiet)
    if args.from_jsonl is not None:
        tweets: Records = _replay(args.from_jsonl, bad)
        total = None
    else:
        tweets, total = _generated(args), args.count
    return _produce(args, kafka, "tweets", (tweets, total), bad, produce_tweets)


def run_readings(args: argparse.Namespace) -> int:
    with checking_options():
        kafka = kafka_from_args(args)
    bad = _BadLines(MAX_REPORTED_BAD_LINES, quiet=args.quiet)
    if args.from_jsonl is not None:
        readings: Records = _replay(args.from_jsonl, bad, read_readings_jsonl)
        total = None
    else:
        readings = _generated_sensors(args, generate_readings, sensors=args.sensors)
        total = args.count
    write = partial(produce_sensor_records, schema="sensor_reading")
    return _produce(args, kafka, "readings", (readings, total), bad, write)


def run_queries(args: argparse.Namespace) -> int:
    with checking_options():
        kafka = kafka_from_args(args)
    bad = _BadLines(MAX_REPORTED_BAD_LINES, quiet=args.quiet)
    if args.from_jsonl is not None:
        queries: Records = _replay(args.from_jsonl, bad, read_queries_jsonl)
        total = None
    else:
        queries = _generated_sensors(args, generate_queries, distance=args.distance)
        total = args.count
    write = partial(produce_sensor_records, schema="sensor_query")
    return _produce(args, kafka, "queries", (queries, total), bad, write)


def run_events(args: argparse.Namespace) -> int:
    with checking_options():
        kafka = kafka_from_args(args)
    bad = _BadLines(MAX_REPORTED_BAD_LINES, quiet=args.quiet)
    events = _replay(args.from_jsonl, bad, read_events_jsonl)
    return _produce(args, kafka, "events", (events, None), bad, produce_interval_events)


def _produce(
    args: argparse.Namespace,
    kafka: tuple[str, dict[str, str]],
    noun: str,
    source: tuple[Records, int | None],
    bad: _BadLines,
    write: Write,
) -> int:
    """Write ``source`` (records, their count if known) with ``write`` (a ``produce_*``
    function) under a progress bar and metrics; print the summary line (and the bad lines of a
    replay) unless ``--quiet``."""
    (bootstrap, extra), (records, total) = kafka, source
    require_kafka(bootstrap, extra)
    metrics, server = serve_metrics("produce", args.metrics_host, args.metrics_port)
    metrics.add_topics(written=[args.topic])
    started = time.monotonic()
    with (
        _progress(total, quiet=args.quiet or not sys.stderr.isatty()) as bar,
        _closing(server),
    ):
        advance = _counting(bar, metrics.records_written.labels(args.topic))
        try:
            count = write(
                bootstrap,
                args.topic,
                records,
                extra=extra,
                registry_url=resolve_registry_url(args.schema_registry_url),
                partitions=args.partitions,
                rate=args.rate,
                progress=advance,
            )
        except DeliveryError as error:
            raise UserError(f"producing to {args.topic} failed: {error}") from error
    seconds = time.monotonic() - started
    if not args.quiet:
        rate = count / seconds if seconds > 0 else float("inf")
        print(f"produced {count} {noun} to {args.topic} in {seconds:.2f} s ({rate:,.0f}/s)")
        if args.from_jsonl is not None:
            print(f"skipped {bad.count} bad lines of {args.from_jsonl}")
    return 0


def _counting(bar: Callable[[int], None] | None, counter: Any) -> Callable[[int], None]:
    """A progress callback (count so far) that also moves the records-written counter."""
    seen = 0

    def advance(done: int) -> None:
        nonlocal seen
        counter.inc(done - seen)
        seen = done
        if bar is not None:
            bar(done)

    return advance


@contextmanager
def _closing(server: MetricsServer | None) -> Iterator[None]:
    try:
        yield
    finally:
        if server is not None:
            server.close()


def _generated(args: argparse.Namespace) -> Iterator[dict[str, Any]]:
    if args.seed < 0:  # as the sensor generators say it (numpy's own words name no option)
        raise OptionError(f"seed must be >= 0, got {args.seed}")
    try:
        return generate_tweets(
            args.seed,
            args.count,
            start_ms=args.start_ms,
            events_per_second=args.events_per_second,
            jitter_ms=args.jitter,
            vocabulary=args.vocabulary,
            zipf_s=args.zipf_s,
            users=args.users,
            burst_every_ms=args.burst_every,
            burst_length_ms=args.burst_length,
            burst_share=args.burst_share,
        )
    except ValueError as error:
        raise OptionError(str(error)) from error


def _generated_sensors(
    args: argparse.Namespace, generate: Callable[..., Iterator[dict[str, Any]]], **settings: Any
) -> Iterator[dict[str, Any]]:
    try:
        return generate(
            args.seed,
            args.count,
            start_ms=args.start_ms,
            events_per_second=args.events_per_second,
            **settings,
        )
    except ValueError as error:
        raise OptionError(str(error)) from error


class _BadLines:
    """Counts bad input lines and prints the first few to stderr."""

    def __init__(self, shown: int, *, quiet: bool) -> None:
        self.count, self.shown, self.quiet = 0, shown, quiet

    def __call__(self, line: int, reason: str) -> None:
        self.count += 1
        if not self.quiet and self.count <= self.shown:
            print(f"line {line}: skipped: {reason}", file=sys.stderr)
        elif not self.quiet and self.count == self.shown + 1:
            print("more bad lines: counting them only", file=sys.stderr)


def _replay(path: Path, bad: _BadLines, reader: Reader = read_jsonl) -> Iterator[dict[str, Any]]:
    """The records ``reader`` finds in a JSON-lines file (opened now); bad lines go to ``bad``."""
    try:
        handle = path.open(encoding="utf-8", errors="replace")
    except OSError as error:
        raise OptionError(f"cannot read {path}: {error.strerror or error}") from error
    except ValueError as error:  # a NUL in the name
        raise OptionError(f"cannot read {str(path)!r}: {error}") from error
    return _read_all(handle, bad, reader)


def _read_all(handle: TextIO, bad: _BadLines, reader: Reader) -> Iterator[dict[str, Any]]:
    with handle:
        yield from reader(handle, bad)


@contextmanager
def _progress(total: int | None, *, quiet: bool) -> Iterator[Callable[[int], None] | None]:
    """A rich progress bar on stderr whose callback takes the count so far (None when quiet)."""
    if quiet:
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    columns = (BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("producing", total=total)
        yield lambda done: bar.update(task, completed=done)
