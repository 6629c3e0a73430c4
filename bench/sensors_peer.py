"""Peer: a plain confluent-kafka Python loop computing the same results as ``trending run sensors``.

Single-threaded, one process. It reads the readings and queries topics (``read_committed``, from
the beginning, a fresh group) up to the end offsets it finds at start, like the job's
``--available-now``, decodes the Avro values (fastavro), and applies the job's rules
(``docs/jobs/sensors.md``):

* the watermark is ``W = max ts seen - lateness``; an event waits until ``ts < W`` and events
  are applied by ``(ts, readings before queries, partition, offset)``; an event already behind
  the watermark of the round it arrives in is late (counted, not applied);
* a window of the last ``size`` readings (one, or one per sensor with ``--per-sensor``) kept
  with a uniform grid of side ``--cell-size``: a query probes only the cells its square
  ``[x +- d] x [y +- d]`` touches, or every non-empty cell if that is fewer, and matches every
  reading with ``sqrt(dx^2 + dy^2) <= d``;
* a reading evicted with at least ``max(1, threshold)`` matches is popular.

At the end it applies what the final watermark allows and no more: events within ``lateness``
of the newest stay unapplied, as the job keeps them in state for its next run. Matches (keyed
by query id) and popular readings (keyed by sensor id) are written as plain Avro
(``sensor_match``, ``popular_reading``) by an idempotent producer. Records that do not decode,
hold non-finite numbers, a negative or NaN distance, or a time more than an hour ahead of the
clock (the job's default ``--max-future-skew``) are dead: counted, not applied.

Kafka does not order two topics, and reading one partition far ahead of the others would move
the watermark past events not read yet. So events wait per partition until every partition
still being read has reached within ``lateness`` of them (:class:`Alignment`), and a partition
holding many such events is paused meanwhile.

Prints one line: ``readings=N queries=M matches=K popular=P late=L dead=D seconds=S
readings_seconds=A queries_seconds=B`` with the readings and queries applied; ``seconds`` runs
from the first record read to the last record written, split at the first query applied
(``readings_seconds`` before it, ``queries_seconds`` after).
"""

from __future__ import annotations

import argparse
import functools
import heapq
import io
import json
import math
import struct
import sys
import time
import uuid
from collections import deque
from collections.abc import Hashable, Iterable
from typing import Any

import fastavro
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition

from connectors.avro import (
    encode_checked_long,
    encode_int,
    encode_popular_reading,
    schema_json,
    strip_time_types,
)
from connectors.kafka import ensure_topics

READING, QUERY = 0, 1
MARGIN = 1e-9  # the job's grid widens a query's square by (|center| + d + cell) * MARGIN
MAX_FUTURE_MS = 3_600_000  # the job's default --max-future-skew
HOLD_LIMIT = 1_000  # events held for one partition before it is paused
DOUBLE = struct.Struct("<d")

# (ts, kind, partition, offset, id, x, y, value or distance): tuples compare in the job's order
Event = tuple[int, int, int, int, int, float, float, float]
# (query_id, sensor_id, value, reading_ts, query_ts)
Match = tuple[int, int, float, int, int]
# (sensor_id, x, y, value, ts, matches)
Popular = tuple[int, float, float, float, int, int]


class SensorWindows:
    """The window(s) of the last ``size`` readings with a grid index of the readings in them.

    An entry is ``[sensor_id, x, y, value, ts, matches, seq, cell]``.
    """

    def __init__(
        self, size: int, threshold: int, cell_size: float, per_sensor: bool = False
    ) -> None:
        if size <= 0 or threshold < 0 or not (math.isfinite(cell_size) and cell_size > 0):
            raise ValueError(f"bad settings: size={size} threshold={threshold} cell={cell_size}")
        self.size = size
        self.popular_at = max(1, threshold)
        self.cell_size = cell_size
        self.per_sensor = per_sensor
        self.windows: dict[int, deque[list[Any]]] = {}
        self.cells: dict[tuple[int, int], dict[int, list[Any]]] = {}
        self.seq = 0

    def reading(
        self, sensor_id: int, x: float, y: float, value: float, ts: int, popular: list[Popular]
    ) -> None:
        """Put a reading in its window, evicting the oldest one of a full window."""
        key = sensor_id if self.per_sensor else 0
        window = self.windows.get(key)
        if window is None:
            window = self.windows[key] = deque()
        if len(window) == self.size:
            old = window.popleft()
            cell = self.cells[old[7]]
            del cell[old[6]]
            if not cell:
                del self.cells[old[7]]
            if old[5] >= self.popular_at:
                popular.append((old[0], old[1], old[2], old[3], old[4], old[5]))
        c = self.cell_size
        where = (math.floor(x / c), math.floor(y / c))
        entry = [sensor_id, x, y, value, ts, 0, self.seq, where]
        window.append(entry)
        cell = self.cells.get(where)
        if cell is None:
            cell = self.cells[where] = {}
        cell[self.seq] = entry
        self.seq += 1

    def query(
        self, query_id: int, x: float, y: float, distance: float, ts: int, matches: list[Match]
    ) -> None:
        """Match a query against every reading in the window(s) within its distance."""
        c = self.cell_size
        mx = (abs(x) + distance + c) * MARGIN
        my = (abs(y) + distance + c) * MARGIN
        span = ((x - distance - mx) / c, (x + distance + mx) / c,
                (y - distance - my) / c, (y + distance + my) / c)  # fmt: skip
        cells = self.cells
        probed: Iterable[dict[int, list[Any]] | None] = cells.values()
        if all(map(math.isfinite, span)):
            x0, x1, y0, y1 = map(math.floor, span)
            if (x1 - x0 + 1) * (y1 - y0 + 1) <= len(cells):
                probed = [cells.get((i, j)) for i in range(x0, x1 + 1) for j in range(y0, y1 + 1)]
        sqrt = math.sqrt
        for cell in probed:
            if cell is None:
                continue
            for e in cell.values():
                dx, dy = e[1] - x, e[2] - y
                if sqrt(dx * dx + dy * dy) <= distance:
                    e[5] += 1
                    matches.append((query_id, e[0], e[3], e[4], ts))


class SensorPeer:
    """Events arrive in rounds; each waits for the watermark, then is applied in order."""

    def __init__(
        self,
        size: int,
        threshold: int,
        lateness_ms: int,
        cell_size: float,
        per_sensor: bool = False,
    ) -> None:
        self.windows = SensorWindows(size, threshold, cell_size, per_sensor)
        self.lateness_ms = lateness_ms
        self.watermark: int | None = None
        self.pending: list[Event] = []
        self.late = 0
        self.readings = 0  # applied
        self.queries = 0  # applied
        self.first_query_at: float | None = None  # time.monotonic() of the first query applied

    def arrive(self, events: Iterable[Event]) -> list[Event]:
        """One round of events: the late ones (returned) are dropped, the others wait; then the
        watermark moves to ``max(W, newest on-time ts - lateness)``."""
        watermark, pending, late = self.watermark, self.pending, []
        newest: int | None = None
        for event in events:
            ts = event[0]
            if watermark is not None and ts < watermark:
                late.append(event)
                continue
            heapq.heappush(pending, event)
            if newest is None or ts > newest:
                newest = ts
        if newest is not None:
            candidate = newest - self.lateness_ms
            self.watermark = candidate if watermark is None else max(watermark, candidate)
        self.late += len(late)
        return late

    def apply(self) -> tuple[list[Match], list[Popular]]:
        """Apply the waiting events the watermark has passed (``ts < W``), in order."""
        matches: list[Match] = []
        popular: list[Popular] = []
        watermark, pending, windows = self.watermark, self.pending, self.windows
        if watermark is None:
            return matches, popular
        pop = heapq.heappop
        while pending and pending[0][0] < watermark:
            ts, kind, _, _, ident, x, y, v = pop(pending)
            if kind == READING:
                windows.reading(ident, x, y, v, ts, popular)
                self.readings += 1
            else:
                if self.first_query_at is None:
                    self.first_query_at = time.monotonic()
                windows.query(ident, x, y, v, ts, matches)
                self.queries += 1
        return matches, popular


class Alignment:
    """Events read but held back, per source (an input partition), until every source still
    being read has reached within ``lateness`` of them: an event is released once its ``ts``
    is at most ``lateness`` past the smallest newest ``ts`` read from the open sources (none
    while an open source has given nothing yet; all once every source is closed)."""

    def __init__(self, sources: Iterable[Hashable], lateness_ms: int) -> None:
        self.lateness_ms = lateness_ms
        self.held: dict[Hashable, deque[Event]] = {s: deque() for s in sources}
        self.newest: dict[Hashable, int | None] = dict.fromkeys(self.held)
        self.open = set(self.held)

    def put(self, source: Hashable, event: Event) -> None:
        self.held[source].append(event)
        newest = self.newest[source]
        if newest is None or event[0] > newest:
            self.newest[source] = event[0]

    def close(self, source: Hashable) -> None:
        """``source`` has nothing more to read."""
        self.open.discard(source)

    def release(self) -> list[Event]:
        """The held events now allowed to arrive, each source's in the order read."""
        bound: float = math.inf
        for source in self.open:
            newest = self.newest[source]
            if newest is None:
                return []
            bound = min(bound, newest + self.lateness_ms)
        out: list[Event] = []
        for queue in self.held.values():
            while queue and queue[0][0] <= bound:
                out.append(queue.popleft())
        return out

    def holding(self, source: Hashable) -> int:
        return len(self.held[source])


def valid(kind: int, record: dict[str, Any], now_ms: int) -> bool:
    """Whether the job would apply this decoded record rather than dead-letter it."""
    x, y = record["x"], record["y"]
    if not (math.isfinite(x) and math.isfinite(y)) or record["ts"] > now_ms + MAX_FUTURE_MS:
        return False
    if kind == QUERY:
        distance = record["distance"]
        return not math.isnan(distance) and distance >= 0
    return math.isfinite(record["value"])


_long = functools.lru_cache(maxsize=1 << 16)(encode_checked_long)
_int = functools.lru_cache(maxsize=1 << 16)(encode_int)


@functools.lru_cache(maxsize=1 << 10)
def match_key(query_id: int) -> bytes:
    """A match's key: the query id as text (a query's matches come together: cached)."""
    return str(query_id).encode()


def encode_match(m: Match) -> bytes:
    """The ``sensor_match`` Avro body (ids and times encoded once per value seen lately)."""
    return b"".join((_long(m[0]), _int(m[1]), DOUBLE.pack(m[2]), _long(m[3]), _long(m[4])))


def encode_popular(p: Popular) -> bytes:
    """The ``popular_reading`` Avro body."""
    record = {"sensor_id": p[0], "x": p[1], "y": p[2], "value": p[3], "ts": p[4], "matches": p[5]}
    return encode_popular_reading(record)


def _produce(producer: Any, topic: str, value: bytes, key: bytes) -> None:
    while True:
        try:
            producer.produce(topic, value, key=key)
            return
        except BufferError:  # the local queue is full: let deliveries drain it
            producer.poll(0.05)


def run(args: argparse.Namespace) -> str:
    """Read, match and write; the summary line."""
    ensure_topics(args.bootstrap, [args.matches_topic, args.popular_topic])
    schemas = {
        args.readings_topic: (READING, "sensor_id", "value", "sensor_reading"),
        args.queries_topic: (QUERY, "query_id", "distance", "sensor_query"),
    }
    parsed = {
        topic: fastavro.parse_schema(strip_time_types(json.loads(schema_json(name))))
        for topic, (_, _, _, name) in schemas.items()
    }
    consumer = Consumer(
        {
            "bootstrap.servers": args.bootstrap,
            "group.id": f"sensors-peer-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
            "fetch.max.bytes": 64 * 1024 * 1024,
            "max.partition.fetch.bytes": 64 * 1024,  # small chunks: partitions stay interleaved
        }
    )
    failures: list[str] = []

    def failed(error: Any, message: Any) -> None:
        failures.append(str(error))

    producer = Producer(
        {
            "bootstrap.servers": args.bootstrap,
            "enable.idempotence": True,
            "linger.ms": 5,
            "queue.buffering.max.messages": 1_000_000,
            "delivery.report.only.error": True,
            "on_delivery": failed,
        }
    )
    ends: dict[tuple[str, int], int] = {}  # the next offset, per partition, at start
    empty = []
    for topic in schemas:
        for p in consumer.list_topics(topic, timeout=30).topics[topic].partitions:
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)
            ends[(topic, p)] = high
            if low >= high:
                empty.append((topic, p))
    consumer.assign([TopicPartition(t, p, OFFSET_BEGINNING) for t, p in ends])
    align = Alignment(ends, args.lateness_ms)
    for source in empty:
        align.close(source)
    peer = SensorPeer(args.size, args.threshold, args.lateness_ms, args.cell_size, args.per_sensor)
    reader, dead, read, first = fastavro.schemaless_reader, 0, 0, None
    matches_written = popular_written = 0
    paused: set[tuple[str, int]] = set()

    def step() -> None:
        nonlocal matches_written, popular_written
        peer.arrive(align.release())
        matches, popular = peer.apply()
        for m in matches:
            _produce(producer, args.matches_topic, encode_match(m), match_key(m[0]))
        for p in popular:
            _produce(producer, args.popular_topic, encode_popular(p), str(p[0]).encode())
        matches_written += len(matches)
        popular_written += len(popular)
        producer.poll(0)

    while align.open:
        batch = consumer.consume(10_000, timeout=0.1)  # returns at the count or the timeout
        now_ms = int(time.time() * 1000)
        for message in batch:
            source = (message.topic(), message.partition())
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    align.close(source)
                    continue
                raise RuntimeError(f"consuming {source}: {error}")
            offset = message.offset()
            if offset >= ends[source]:
                align.close(source)
                continue
            if first is None:
                first = time.monotonic()
            read += 1
            kind, id_field, v_field, _ = schemas[source[0]]
            try:
                record = reader(io.BytesIO(message.value()), parsed[source[0]], None)
                ok = valid(kind, record, now_ms)
            except Exception:  # bytes that are not this schema's Avro: the job's dead letters
                ok = False
            if not ok:
                dead += 1
            else:
                event = (record["ts"], kind, source[1], offset, record[id_field], record["x"],
                         record["y"], record[v_field])  # fmt: skip
                align.put(source, event)
            if offset >= ends[source] - 1:
                align.close(source)
        step()
        for source in align.open:
            held = align.holding(source)
            if held >= HOLD_LIMIT and source not in paused:
                consumer.pause([TopicPartition(*source)])
                paused.add(source)
            elif held < HOLD_LIMIT and source in paused:
                consumer.resume([TopicPartition(*source)])
                paused.discard(source)
    step()  # every source closed: whatever is held arrives, and the final watermark applies
    left = producer.flush(120)
    finished = time.monotonic()
    consumer.close()
    if left or failures:
        raise RuntimeError(f"{left} records not delivered, {len(failures)} failed: {failures[:3]}")
    started = first if first is not None else finished
    split = peer.first_query_at if peer.first_query_at is not None else finished
    return (
        f"readings={peer.readings} queries={peer.queries} matches={matches_written} "
        f"popular={popular_written} late={peer.late} dead={dead} "
        f"seconds={finished - started:.3f} readings_seconds={split - started:.3f} "
        f"queries_seconds={finished - split:.3f}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bootstrap")
    parser.add_argument("readings_topic")
    parser.add_argument("queries_topic")
    parser.add_argument("matches_topic")
    parser.add_argument("popular_topic")
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--threshold", type=int, default=3)
    parser.add_argument("--lateness-ms", type=int, default=5_000)
    parser.add_argument("--cell-size", type=float, default=0.05)
    parser.add_argument("--per-sensor", action="store_true", help="one window per sensor")
    args = parser.parse_args(argv)
    print(run(args), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
