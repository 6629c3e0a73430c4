"""``trending consume TOPIC``: print the decoded records of any of the project's topics."""

from __future__ import annotations

import argparse
import base64
import json
import sys
import time
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from confluent_kafka import KafkaError, Message

from connectors.avro import (
    REGISTRY_ENV,
    AvroCodec,
    MalformedRecord,
    resolve_registry_url,
    schema_for_topic,
)
from connectors.kafka import add_kafka_arguments, consumer, kafka_from_args
from trending import arg_types
from trending.commands import OptionError, checking_options, require_kafka
from trending.errors import UserError
from trending.metrics import add_metrics_arguments, serve_metrics

ASSIGN_GRACE_S = 30.0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "consume",
        help="print the decoded records of a topic",
        description="Print one record a line (read_committed, a fresh consumer group that "
        "commits nothing). The schema comes from the topic name: tweets*, tweets-late -> tweet, "
        "trending-hashtags* -> trending_topk, sensor-readings* -> sensor_reading, "
        "sensor-queries* -> sensor_query, sensor-matches* -> sensor_match, popular-readings* "
        "-> popular_reading, interval-events* -> interval_event, window-rows* -> window_row, "
        "sensor-late*, interval-events-late*, *-dlq/*.dlq/*dead-letter* -> dead_letter. Bytes "
        "fields print as base64; timestamps as epoch ms with --json.",
    )
    parser.add_argument("topic", type=arg_types.topic, metavar="TOPIC", help="the topic to read")
    parser.add_argument("--from-beginning", action="store_true", help="read all, not only new")
    parser.add_argument("--json", action="store_true", help="compact JSON of each value")
    parser.add_argument(
        "--idle-timeout",
        type=arg_types.duration_s,
        help="exit after this long without records, e.g. 5s (default: wait for records until "
        "Ctrl-C)",
    )
    parser.add_argument(
        "--max-records",
        type=arg_types.positive_int,
        help="exit after N records (default: no limit)",
    )
    parser.add_argument("--schema", metavar="NAME", help="schema name or .avsc path to decode")
    parser.add_argument(
        "--schema-registry-url",
        metavar="URL",
        help=f"read the Confluent wire format (default: ${REGISTRY_ENV}; none: plain Avro)",
    )
    add_kafka_arguments(parser)
    add_metrics_arguments(parser, port=0)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    with checking_options():
        bootstrap, extra = kafka_from_args(args)
        schema = args.schema or schema_for_topic(args.topic)
        registry = resolve_registry_url(args.schema_registry_url)
        try:
            codec = AvroCodec(schema, registry, subject=f"{args.topic}-value")
        except ValueError as error:  # a .avsc file that is not an Avro schema
            raise OptionError(f"--schema {schema}: not an Avro schema: {error}") from error
    require_kafka(bootstrap, extra)
    metrics, server = serve_metrics("consume", args.metrics_host, args.metrics_port)
    metrics.add_topics(read=[args.topic])
    read = metrics.records_read.labels(args.topic)
    client = consumer(bootstrap, extra, from_beginning=args.from_beginning)
    idle = _IdleClock(args.idle_timeout)
    client.subscribe([args.topic], on_assign=idle.on_assign)
    printed = 0
    try:
        while args.max_records is None or printed < args.max_records:
            message = client.poll(0.2)
            if message is None:
                if idle.expired():
                    break
                continue
            idle.reset()
            done = _handle(message, codec, schema, as_json=args.json)
            printed += done
            read.inc(done)
    finally:
        client.close()
        if server is not None:
            server.close()
    return 0


class _IdleClock:
    """Time without records, counted from the last record, or from when partitions were
    assigned (joining a fresh group can take seconds, more on a new broker)."""

    def __init__(self, limit: float | None) -> None:
        self.limit, self.since, self.assigned = limit, time.monotonic(), False

    def on_assign(self, *_: Any) -> None:
        self.assigned = True
        self.reset()

    def reset(self) -> None:
        self.since = time.monotonic()

    def expired(self) -> bool:
        if self.limit is None:
            return False
        waited = time.monotonic() - self.since
        if not self.assigned and waited > self.limit + ASSIGN_GRACE_S:
            raise UserError(f"no partitions were assigned after {waited:.0f} s: is Kafka up?")
        return self.assigned and waited > self.limit


def _handle(message: Message, codec: AvroCodec, schema: str, *, as_json: bool) -> int:
    """Print one message (or its error); return 1 if a record was printed."""
    error = message.error()
    if error is not None:
        if error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
            raise UserError(f"topic {message.topic()} does not exist")
        if error.fatal():
            raise UserError(f"Kafka consumer failed: {error.str()}")
        print(f"kafka: {error.str()}", file=sys.stderr, flush=True)
        return 0
    try:
        record = codec.decode(message.value() or b"")
    except MalformedRecord as bad:
        where = f"partition {message.partition()} offset {message.offset()}"
        print(f"undecodable record at {where}: {bad.reason}", file=sys.stderr, flush=True)
        return 0
    line = to_json(record) if as_json else readable(record, schema, message)
    print(line, flush=True)
    return 1


def _plain(value: Any) -> Any:
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def to_json(record: dict[str, Any]) -> str:
    """Compact JSON; bytes as base64, timestamps stay epoch ms ints."""
    return json.dumps(_plain(record), ensure_ascii=False, separators=(",", ":"))


def iso(ms: int) -> str:
    """Epoch ms as ``2026-01-01T12:00:00.000Z``."""
    moment = datetime.fromtimestamp(ms / 1000, tz=timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def readable(record: dict[str, Any], schema: str, message: Message) -> str:
    """One line for people: where the record is, then its main fields."""
    where = f"[{message.partition()}:{message.offset()}]"
    if schema == "tweet":
        lang = f" ({record['lang']})" if record.get("lang") else ""
        return f"{where} {iso(record['created_at'])} @{record['user']}{lang}: {record['text']}"
    if schema == "trending_topk":
        top = " ".join(f"{t['hashtag']}={t['count']}" for t in record["top"])
        final = "final" if record["is_final"] else "early"
        window = f"[{iso(record['window_start'])}, {iso(record['window_end'])})"
        return f"{where} {window} rev {record['revision']} {final}: {top}"
    if schema == "dead_letter":
        origin = f"{record['topic']}[{record['partition']}]@{record['offset']}"
        return f"{where} {iso(record['failed_at'])} {origin}: {record['reason']}"
    if schema in _SENSOR_LINES:
        return f"{where} {_SENSOR_LINES[schema](record)}"
    return f"{where} {to_json(record)}"


_SENSOR_LINES: dict[str, Callable[[dict[str, Any]], str]] = {
    "sensor_reading": lambda r: (
        f"{iso(r['ts'])} sensor {r['sensor_id']} at ({r['x']:.4f}, {r['y']:.4f}): {r['value']:g}"
    ),
    "sensor_query": lambda q: (
        f"{iso(q['ts'])} query {q['query_id']} at ({q['x']:.4f}, {q['y']:.4f}) "
        f"within {q['distance']:g}"
    ),
    "sensor_match": lambda m: (
        f"{iso(m['query_ts'])} query {m['query_id']} matched sensor {m['sensor_id']} "
        f"({iso(m['reading_ts'])}): {m['value']:g}"
    ),
    "popular_reading": lambda p: (
        f"{iso(p['ts'])} sensor {p['sensor_id']} at ({p['x']:.4f}, {p['y']:.4f}): "
        f"{p['value']:g}, {p['matches']} matches"
    ),
}
