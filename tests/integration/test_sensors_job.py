"""The sensor query job on a real Kafka broker and a real Spark session.

The oracle is the SensorQuery application of the SPL seed, by brute force: events sorted by
``(ts, kind, partition, offset)``, those with ``ts < max ts - lateness`` applied one by one to a
list of the last N readings (one list, or one per sensor), every query compared with every reading
in the list(s), a reading evicted when the (N+1)-th reading of its list arrives.
"""

from __future__ import annotations

import itertools
import math
import random
import re
import sys
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from connectors.avro import AvroCodec
from connectors.kafka import ensure_topics
from connectors.transactions import TransactionalBatchWriter
from tests.support.jobs import CrashCase
from tests.support.kafka import read_all
from tests.support.queries import await_end
from trending.errors import UserError
from trending.jobs.sensors import SensorJobConfig, start_query

pytestmark = pytest.mark.integration

BASE_MS = 1_700_000_000_000
LATENESS_MS = 2_000
Event = dict[str, Any]


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    from trending.spark.session import build_session

    session = build_session("tests-sensors", "local[2]", shuffle_partitions=3)
    yield session
    session.stop()


def make_events(readings: int, queries: int, seed: int, sensors: int = 7) -> list[Event]:
    """Readings and queries interleaved in event time, 10 ms apart, jitter < lateness, some
    equal timestamps; positions on a coarse lattice so that some lie exactly at a distance."""
    rng = random.Random(seed)
    kinds = ["r"] * readings + ["q"] * queries
    rng.shuffle(kinds)
    events: list[Event] = []
    for i, kind in enumerate(kinds):
        ts = BASE_MS + (i // 3) * 10 - rng.randrange(800)
        x, y = rng.randrange(21) / 20, rng.randrange(21) / 20
        if kind == "r":
            value = rng.random() * 1000
            events.append({"kind": "r", "sensor_id": rng.randrange(sensors), "x": x, "y": y,
                           "value": value, "ts": ts})  # fmt: skip
        else:
            distance = rng.choice([0.05, 0.1, 0.15, 0.3])
            events.append({"kind": "q", "query_id": i, "x": x, "y": y, "distance": distance,
                           "ts": ts})  # fmt: skip
    return events


def oracle(
    events: list[Event], size: int, threshold: int, per_sensor: bool
) -> tuple[Counter[tuple[Any, ...]], Counter[tuple[Any, ...]]]:
    """Matches and popular readings as multisets, from the seed's rules (see module docstring)."""
    watermark = max(e["ts"] for e in events) - LATENESS_MS
    ordered = sorted(
        (e for e in events if e["ts"] < watermark),
        key=lambda e: (e["ts"], 0 if e["kind"] == "r" else 1, e["partition"], e["offset"]),
    )
    windows: dict[Any, list[list[Any]]] = {}
    matches: Counter[tuple[Any, ...]] = Counter()
    popular: Counter[tuple[Any, ...]] = Counter()
    for e in ordered:
        if e["kind"] == "r":
            window = windows.setdefault(e["sensor_id"] if per_sensor else 0, [])
            if len(window) == size:
                old, count = window.pop(0)
                if count >= threshold:
                    popular[(old["sensor_id"], old["x"], old["y"], old["value"], old["ts"],
                             count)] += 1  # fmt: skip
            window.append([e, 0])
            continue
        for window in windows.values():
            for entry in window:
                r = entry[0]
                if math.sqrt((r["x"] - e["x"]) ** 2 + (r["y"] - e["y"]) ** 2) <= e["distance"]:
                    entry[1] += 1
                    matches[(e["query_id"], r["sensor_id"], r["value"], r["ts"], e["ts"])] += 1
    return matches, popular


# Kafka-only fields of a test event: headers and a record timestamp routed records must keep
KAFKA_ONLY = ("headers", "timestamp_ms")
HEADERS = [("trace-id", b"\x00\x01"), ("no-value", None), ("trace-id", b"again")]
HEADER_RECORDS = [{"key": k, "value": v} for k, v in HEADERS]
RECORD_TS = 1_700_000_000_321


class Job:
    """One job's topics and checkpoint; with ``registry_url``, values in the wire format."""

    def __init__(self, bootstrap: str, tmp_path: Path, registry_url: str | None = None) -> None:
        tag = uuid.uuid4().hex[:8]
        self.bootstrap = bootstrap
        self.registry_url = registry_url
        names = ("readings", "queries", "matches", "popular", "late", "dlq")
        self.topics = {n: f"sensor-{n}-{tag}" for n in names}
        self.checkpoint = tmp_path / f"checkpoint-{tag}"
        ensure_topics(bootstrap, [self.topics["readings"], self.topics["queries"]], partitions=3)

    def produce(self, events: list[Event], extra: tuple[bytes | None, ...] = ()) -> None:
        """Write ``events``, noting each one's partition and offset on it."""
        url = self.registry_url
        codecs = {"r": AvroCodec("sensor_reading", url), "q": AvroCodec("sensor_query", url)}
        topics = {"r": self.topics["readings"], "q": self.topics["queries"]}
        producer = Producer({"bootstrap.servers": self.bootstrap, "enable.idempotence": True})
        for event in events:
            record = {k: v for k, v in event.items() if k not in ("kind", *KAFKA_ONLY)}

            def delivered(error: Any, message: Any, event: Event = event) -> None:
                assert error is None
                event["partition"], event["offset"] = message.partition(), message.offset()

            key = str(event.get("sensor_id", event.get("query_id"))).encode()
            producer.produce(
                topics[event["kind"]], codecs[event["kind"]].encode(record), key=key,
                on_delivery=delivered, headers=event.get("headers"),
                timestamp=event.get("timestamp_ms", 0),
            )  # fmt: skip
            producer.poll(0)
        for raw in extra:
            producer.produce(self.topics["readings"], raw, key=b"bad")
        assert producer.flush(30) == 0

    def config(self, **overrides: Any) -> SensorJobConfig:
        settings: dict[str, Any] = {
            "bootstrap": self.bootstrap,
            "checkpoint": str(self.checkpoint),
            "readings_topic": self.topics["readings"],
            "queries_topic": self.topics["queries"],
            "matches_topic": self.topics["matches"],
            "popular_topic": self.topics["popular"],
            "late_topic": self.topics["late"],
            "dead_letter_topic": self.topics["dlq"],
            "lateness_ms": LATENESS_MS,
            "available_now": True,
            "cell_size": 0.1,
        }
        settings.update(overrides)
        return SensorJobConfig(**settings)

    def run(self, spark: Any, **overrides: Any) -> Any:
        query, processor = start_query(spark, self.config(**overrides))
        try:
            await_end(query)
        finally:
            processor.close()
        assert query.exception() is None
        return processor

    def results(self) -> tuple[Counter[tuple[Any, ...]], Counter[tuple[Any, ...]]]:
        url = self.registry_url
        match_codec = AvroCodec("sensor_match", url)
        popular_codec = AvroCodec("popular_reading", url)
        matches: Counter[tuple[Any, ...]] = Counter()
        for r in read_all(self.bootstrap, self.topics["matches"]):
            m = match_codec.decode(r.value)
            key = (m["query_id"], m["sensor_id"], m["value"], m["reading_ts"], m["query_ts"])
            matches[key] += 1
        popular: Counter[tuple[Any, ...]] = Counter()
        for r in read_all(self.bootstrap, self.topics["popular"]):
            p = popular_codec.decode(r.value)
            popular[(p["sensor_id"], p["x"], p["y"], p["value"], p["ts"], p["matches"])] += 1
        return matches, popular


@pytest.mark.parametrize("per_sensor", [False, True], ids=["global", "per-sensor"])
def test_matches_and_popular_equal_the_seed_model(
    kafka_bootstrap: str, spark: Any, tmp_path: Path, per_sensor: bool
) -> None:
    job = Job(kafka_bootstrap, tmp_path)
    events = make_events(1_500, 600, seed=11)
    job.produce(events, extra=(b"\x01garbage", None))
    size, threshold = (6, 2) if per_sensor else (25, 3)
    processor = job.run(
        spark, size=size, threshold=threshold, partition_by_sensor=per_sensor,
        max_offsets_per_trigger=500,
    )  # fmt: skip
    matches, popular = job.results()
    expected_matches, expected_popular = oracle(events, size, threshold, per_sensor)
    assert sum(expected_matches.values()) > 500 and sum(expected_popular.values()) > 20
    assert matches == expected_matches
    assert popular == expected_popular
    assert len(processor.history) >= 4
    assert sum(s.late for s in processor.history) == 0
    letters = read_all(kafka_bootstrap, job.topics["dlq"])
    reasons = sorted(AvroCodec("dead_letter").decode(r.value)["reason"] for r in letters)
    # b"\x01garbage": sensor_id -1, then 7 of the 8 bytes of the double x
    assert reasons == ["empty value", "value ends inside field x"]


@pytest.mark.parametrize("per_sensor", [False, True], ids=["global", "per-sensor"])
def test_far_readings_and_a_query_matching_everything_are_exact_and_bounded(
    kafka_bootstrap: str, spark: Any, tmp_path: Path, per_sensor: bool
) -> None:
    """Two readings at (+-1e12, +-1e12) stretch the cells readings were put in to 2e13 cells a
    side, and a query of distance 1e300 matches every reading: enumerating its square's cells
    ran out of memory. Every match is published, exactly as the model says, and the run ends."""
    job = Job(kafka_bootstrap, tmp_path)
    events = make_events(1_500, 700, seed=14)
    ts = events[len(events) // 2]["ts"]
    far = [
        {"kind": "r", "sensor_id": 3, "x": 1e12, "y": 1e12, "value": 1.0, "ts": ts},
        {"kind": "r", "sensor_id": 4, "x": -1e12, "y": -1e12, "value": 2.0, "ts": ts + 1},
        {"kind": "q", "query_id": 10**9, "x": 0.5, "y": 0.5, "distance": 1e300, "ts": ts + 2},
        {"kind": "q", "query_id": 10**9 + 1, "x": 1e12, "y": 1e12, "distance": 0.0, "ts": ts + 3},
    ]
    events[len(events) // 2 : len(events) // 2] = far
    job.produce(events)
    size, threshold = (6, 2) if per_sensor else (25, 3)
    query, processor = start_query(
        spark, job.config(size=size, threshold=threshold, partition_by_sensor=per_sensor)
    )
    try:
        assert query.awaitTermination(300), "the run did not end in 300 s"
    finally:
        processor.close()
    assert query.exception() is None
    expected_matches, expected_popular = oracle(events, size, threshold, per_sensor)
    wide = sum(n for m, n in expected_matches.items() if m[0] == 10**9)
    assert wide == (7 * size if per_sensor else size)  # every reading in the window(s)
    assert job.results() == (expected_matches, expected_popular)


def test_every_query_probing_the_cells_that_hold_readings_changes_no_result(
    kafka_bootstrap: str, spark: Any, tmp_path: Path
) -> None:
    """With --max-query-cells 1 every query that touches more than one cell probes every cell
    holding readings instead: the same matches and popular readings."""
    job = Job(kafka_bootstrap, tmp_path)
    events = make_events(900, 400, seed=15)
    job.produce(events)
    job.run(spark, size=10, threshold=2, partition_by_sensor=True, max_query_cells=1)
    assert job.results() == oracle(events, 10, 2, True)


# Bytes of the state rows of one reading's life (keys and values are Spark UnsafeRows: 8 bytes of
# null bits, then 8 per fixed-width column): held pending (key ts, kind, partition, offset and
# value id, x, y, v: 40 + 40, then the key removed), in the window index (key w, seq: 24, value
# cell: 16, then the key removed) and in its cell (key cell, w, seq: 32, value of 8 columns: 72,
# then the key removed). A match rewrites the reading's cell row (32 + 72).
READING_LIFE_BYTES = (40 + 40 + 40) + (24 + 16 + 24) + (32 + 72 + 32)
MATCH_BYTES = 32 + 72


def test_a_batch_writes_the_state_of_its_own_events_not_its_cells_readings(
    kafka_bootstrap: str, spark: Any, tmp_path: Path
) -> None:
    """Every reading in one grid cell, the window 4,000 readings: after a first batch of 3,000
    events, ten small ones. Each batch writes state for the events it reads or had pending and
    for the readings its queries match, never for the readings its cell holds (a cell
    rewritten whole would write over 3,000 readings a batch). The results follow the rule."""
    job = Job(kafka_bootstrap, tmp_path)
    events = make_events(6_000, 60, seed=16)
    size, threshold = 4_000, 2
    cuts = [0, 3_000, *range(3_306, 6_060, 306), 6_060]
    chunks = [events[a:b] for a, b in itertools.pairwise(cuts)]
    before = 0
    for chunk in chunks:  # one run, one micro-batch per chunk
        job.produce(chunk)
        processor = job.run(spark, size=size, threshold=threshold, cell_size=2.0)
        for batch in (s for s in processor.history if not s.skipped):
            bound = READING_LIFE_BYTES * (len(chunk) + before) + MATCH_BYTES * batch.matches
            assert 0 < batch.state_bytes <= bound, (batch, bound)
        before = len(chunk)
    assert job.results() == oracle(events, size, threshold, False)


def test_batch_splits_do_not_change_the_results(
    kafka_bootstrap: str, spark: Any, tmp_path: Path
) -> None:
    events = make_events(900, 400, seed=12)
    results = []
    for cap in (260, None):
        job = Job(kafka_bootstrap, tmp_path)
        produced = [dict(e) for e in events]
        job.produce(produced)  # same keys, same order: same partitions and offsets
        processor = job.run(
            spark, size=10, threshold=2, partition_by_sensor=True, max_offsets_per_trigger=cap
        )
        assert len(processor.history) >= (5 if cap else 1)
        results.append(job.results())
    assert results[0] == results[1] == oracle(produced, 10, 2, True)


def test_a_failed_batch_is_redone_and_a_restart_goes_on(
    kafka_bootstrap: str, spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = Job(kafka_bootstrap, tmp_path)
    first, second = make_events(800, 300, seed=13), make_events(800, 300, seed=14)
    for e in second:
        e["ts"] += 60_000
    job.produce(first)
    original = TransactionalBatchWriter.write_batch

    def fail_on_batch_2(
        self: TransactionalBatchWriter, batch_id: int, records: Any, state: Any = None
    ) -> int:
        if batch_id == 2:
            raise RuntimeError("injected delivery failure")
        return original(self, batch_id, records, state)

    monkeypatch.setattr(TransactionalBatchWriter, "write_batch", fail_on_batch_2)
    query, failed = start_query(spark, job.config(size=30, max_offsets_per_trigger=300))
    with pytest.raises(Exception, match="injected delivery failure"):
        await_end(query)
    failed.close()
    monkeypatch.setattr(TransactionalBatchWriter, "write_batch", original)
    processor = job.run(spark, size=30, max_offsets_per_trigger=300)
    assert processor.history[0].batch_id == 2
    job.produce(second)
    job.run(spark, size=30)
    assert job.results() == oracle(first + second, 30, 3, False)


def test_late_events_are_routed_and_other_settings_refused(
    kafka_bootstrap: str, spark: Any, tmp_path: Path
) -> None:
    job = Job(kafka_bootstrap, tmp_path)
    events = make_events(900, 300, seed=15)
    job.produce(events)
    job.run(spark)
    late = {"kind": "q", "query_id": 10**9, "x": 0.5, "y": 0.5, "distance": 1.0}
    late["ts"] = BASE_MS - 10_000
    late["headers"], late["timestamp_ms"] = HEADERS, RECORD_TS
    job.produce([late])
    processor = job.run(spark)
    assert [s.late for s in processor.history] == [1]
    codec = AvroCodec("dead_letter")
    letters = [codec.decode(r.value) for r in read_all(job.bootstrap, job.topics["late"])]
    assert [(d["topic"], d["offset"]) for d in letters] == [(job.topics["queries"], late["offset"])]
    assert letters[0]["reason"].startswith("late: event time")
    assert (letters[0]["timestamp"], letters[0]["headers"]) == (RECORD_TS, HEADER_RECORDS)
    assert job.results() == oracle(events, 100, 3, False)
    with pytest.raises(UserError, match="size 100 -> 50"):
        job.run(spark, size=50)


def test_events_from_a_bad_clock_are_dead_lettered_and_move_no_watermark(
    kafka_bootstrap: str, spark: Any, tmp_path: Path
) -> None:
    """A reading in year 9999 and a query in microseconds, between two runs of valid events:
    without the rule the next events would all be late."""
    job = Job(kafka_bootstrap, tmp_path)
    first, second = make_events(500, 200, seed=16), make_events(500, 200, seed=17)
    for e in second:
        e["ts"] += 30_000
    future = {"kind": "r", "sensor_id": 5, "x": 0.5, "y": 0.5, "value": 1.0,
              "ts": 253_402_300_799_000}  # fmt: skip
    micros = {"kind": "q", "query_id": 10**9, "x": 0.5, "y": 0.5, "distance": 1.0,
              "ts": BASE_MS * 1_000}  # fmt: skip
    for event in (future, micros):
        event["headers"], event["timestamp_ms"] = HEADERS, RECORD_TS
    job.produce([*first, future, micros])
    job.run(spark, size=20)
    job.produce(second)
    job.run(spark, size=20)
    assert job.results() == oracle(first + second, 20, 3, False)
    assert read_all(job.bootstrap, job.topics["late"]) == []
    codec = AvroCodec("dead_letter")
    letters = [codec.decode(r.value) for r in read_all(job.bootstrap, job.topics["dlq"])]
    assert sorted((d["reason"], d["topic"], d["offset"]) for d in letters) == sorted(
        ("future-timestamp", job.topics["readings" if e is future else "queries"], e["offset"])
        for e in (future, micros)
    )
    # each letter carries the record's own Kafka timestamp and headers
    assert [(d["timestamp"], d["headers"]) for d in letters] == [(RECORD_TS, HEADER_RECORDS)] * 2


def job_command(job: Job, *extra: str, master: str = "local[2]") -> list[str]:
    t = job.topics
    return [
        sys.executable, "-m", "trending.cli", "run", "sensors", "--available-now",
        "--master", master, "--checkpoint", f"file://{job.checkpoint}",
        "--bootstrap-servers", job.bootstrap, "--readings-topic", t["readings"],
        "--queries-topic", t["queries"], "--matches-topic", t["matches"],
        "--popular-topic", t["popular"], "--late-topic", t["late"],
        "--dead-letter-topic", t["dlq"], "--lateness", f"{LATENESS_MS}ms",
        "--cell-size", "0.1", "--metrics-port", "0", *extra,
    ]  # fmt: skip


def crash_case(bootstrap: str, tmp_path: Path) -> CrashCase:
    """Three SIGKILLs of driver and JVM at seeded random points, each followed by a restart
    from the checkpoint: matches and popular readings, read read_committed, equal the seed
    model's as multisets (none missing, none twice)."""
    job = Job(bootstrap, tmp_path)
    events = make_events(1_300, 500, seed=16)  # 18 batches
    job.produce(events)
    command = job_command(job, "--window-readings", "40", "--max-offsets-per-trigger", "100")

    def check(log: str) -> None:
        assert re.search(r"sensors job stopped: \d+ micro-batches", log)
        expected = oracle(events, 40, 3, False)
        assert all(expected)  # some matches and some popular readings
        assert job.results() == expected
        assert read_all(bootstrap, job.topics["late"]) == []

    return CrashCase("sensors", command, 16, check)
