"""Random and mutated bytes through every job's Spark decoding path.

Values are valid records of a job's schema (any field value the schema allows, timestamps over
the whole long range), and mutations of them: truncated, extended, bit-flipped, a length prefix
claiming gigabytes, null and empty. The rule, checked with an Avro reader independent of Spark
(fastavro, logical types off): a value is a record when it decodes to exactly one datum of the
schema with every byte used, every string valid UTF-8, every int within 32 bits and every
timestamp within what Spark holds (microseconds in a long). Each record must come out of the
job's decoding path with its fields, every other value with a dead-letter reason. Through each
job end to end (hashtags, sensors, windows, the SPL example): every value garbled beyond decoding
is a dead letter at its offset, the job ends normally, and the valid records around them give
exactly the results of an independent model.
"""

from __future__ import annotations

import copy
import io
import json
import math
import random
import re
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fastavro
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from connectors.avro import AvroCodec, encode_tweet, schema_json
from connectors.kafka import ensure_topics, producer
from connectors.spark_kafka import decode_avro
from tests.support.hashtags import finals_of, hashtags_command, independent_finals, random_tweets
from tests.support.jobs import run_to_end
from tests.support.kafka import read_all

pytestmark = pytest.mark.integration

LONG = st.integers(-(2**63), 2**63 - 1)
INT = st.integers(-(2**31), 2**31 - 1)
# The fields each job decodes (the hashtags job reads two fields of a tweet).
JOBS = {
    "hashtags": ("tweet", ("text", "created_at")),
    "sensors-readings": ("sensor_reading", None),
    "sensors-queries": ("sensor_query", None),
    "windows": ("interval_event", None),
    "spl-example": ("tweet", None),
}
FUZZ = settings(
    max_examples=12,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    from trending.spark.session import build_session

    session = build_session("tests-decode-fuzz", "local[2]", shuffle_partitions=2)
    yield session
    session.stop()


def datum(avro_type: Any) -> st.SearchStrategy[Any]:
    """Any value of ``avro_type`` (logical types as their underlying type)."""
    if isinstance(avro_type, list):
        return st.one_of(*(datum(branch) for branch in avro_type))
    if isinstance(avro_type, dict):
        kind = avro_type["type"]
        if kind == "record":
            fields = {f["name"]: datum(f["type"]) for f in avro_type["fields"]}
            return st.fixed_dictionaries(fields)
        if kind == "enum":
            return st.sampled_from(avro_type["symbols"])
        return datum(kind)
    return {
        "null": st.none(),
        "long": LONG,
        "int": INT,
        "double": st.floats(allow_nan=True, allow_infinity=True),
        "string": st.text(),
        "boolean": st.booleans(),
    }[avro_type]


def plain(schema: Any) -> Any:
    """``schema`` without logical types: an independent reader's view of the raw values."""
    if isinstance(schema, list):
        return [plain(branch) for branch in schema]
    if isinstance(schema, dict):
        if "logicalType" in schema:
            return schema["type"]
        copied = copy.deepcopy(schema)
        if copied["type"] == "record":
            copied["fields"] = [{**f, "type": plain(f["type"])} for f in copied["fields"]]
        return copied
    return schema


def encode(schema: Any, record: dict[str, Any]) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(schema), record)
    return out.getvalue()


def strict_decode(schema: Any, value: bytes | None) -> dict[str, Any] | None:
    """The record ``value`` holds by the rule (module docstring), or None. fastavro reads the
    bytes with enums as their raw index; the ranges are checked here."""
    if not value:
        return None
    stream = io.BytesIO(value)
    try:
        record = fastavro.schemaless_reader(stream, fastavro.parse_schema(raw(schema)), None)
    except Exception:  # any reader failure: not a datum of the schema
        return None
    if stream.tell() != len(value) or not isinstance(record, dict):
        return None
    return checked(schema, record)


class OutOfRange(Exception):
    pass


def raw(avro_type: Any) -> Any:
    """``avro_type`` with every enum read as its index."""
    if isinstance(avro_type, list):
        return [raw(branch) for branch in avro_type]
    if isinstance(avro_type, dict) and avro_type["type"] == "enum":
        return "int"
    if isinstance(avro_type, dict) and avro_type["type"] == "record":
        return {**avro_type, "fields": [{**f, "type": raw(f["type"])} for f in avro_type["fields"]]}
    return avro_type


def checked(schema: Any, record: dict[str, Any]) -> dict[str, Any] | None:
    try:
        return {f["name"]: in_range(f["type"], record[f["name"]]) for f in schema["fields"]}
    except OutOfRange:
        return None


def in_range(avro_type: Any, value: Any) -> Any:
    """``value`` with enum indexes as symbols; :class:`OutOfRange` for an int beyond 32 bits
    (fastavro reads a 5-byte varint of up to 35 bits) or an enum index beyond its symbols
    (fastavro takes -1 as the last one)."""
    if isinstance(avro_type, list):  # a union: the branch the value is of
        branch = next(b for b in avro_type if (b == "null") == (value is None))
        return in_range(branch, value)
    if avro_type == "int" and not -(2**31) <= value < 2**31:
        raise OutOfRange(value)
    if isinstance(avro_type, dict) and avro_type["type"] == "enum":
        if not 0 <= value < len(avro_type["symbols"]):
            raise OutOfRange(value)
        return avro_type["symbols"][value]
    return value


def huge_length(value: bytes) -> bytes:
    """``value`` with a varint claiming ~4 GB spliced in at its start (a string or array
    length, when the first field is one)."""
    return bytes([0xFE, 0xFF, 0xFF, 0xFF, 0x1F]) + value[1:]


def flipped(value: bytes, bit: int) -> bytes:
    at = bit // 8
    return value[:at] + bytes([value[at] ^ (1 << bit % 8)]) + value[at + 1 :]


def mutations(valid: bytes) -> st.SearchStrategy[bytes | None]:
    cut = st.integers(0, max(len(valid) - 1, 0)).map(lambda n: valid[:n])
    extended = st.binary(min_size=1, max_size=8).map(lambda tail: valid + tail)
    flips = st.integers(0, max(len(valid) * 8 - 1, 0)).map(
        lambda bit: flipped(valid, bit) if valid else valid
    )
    return st.one_of(
        st.just(valid), cut, extended, flips, st.just(huge_length(valid)),
        st.none(), st.just(b""), st.binary(max_size=40),
    )  # fmt: skip


def values(schema: Any) -> st.SearchStrategy[list[bytes | None]]:
    records = datum(plain(schema)).map(lambda record: encode(plain(schema), record))
    return st.lists(records.flatmap(mutations), min_size=20, max_size=60)


# Spark keeps a timestamp as microseconds in a long: milliseconds beyond this do not fit.
SPARK_MAX_MS = (2**63 - 1) // 1000


def representable(record: dict[str, Any], timestamps: set[str]) -> bool:
    """Whether Spark can hold every timestamp of ``record`` (else the value is a dead letter)."""
    return all(record[name] is None or abs(record[name]) <= SPARK_MAX_MS for name in timestamps)


def same(expected: Any, got: Any) -> bool:
    if isinstance(expected, float) and isinstance(got, float):
        return (math.isnan(expected) and math.isnan(got)) or expected == got
    return bool(expected == got)


@pytest.mark.parametrize("job", sorted(JOBS))
def test_every_value_is_a_correct_record_or_a_dead_letter(spark: Any, job: str) -> None:
    name, fields = JOBS[job]
    schema = json.loads(schema_json(name))
    kept = [f["name"] for f in schema["fields"] if fields is None or f["name"] in fields]
    timestamps = {
        f["name"] for f in schema["fields"] if "timestamp-millis" in json.dumps(f["type"])
    }

    @FUZZ
    @given(values(schema))
    def check(batch: list[bytes | None]) -> None:
        rows = [(b"k", value, "t", 0, offset) for offset, value in enumerate(batch)]
        raw = spark.createDataFrame(
            rows, "key binary, value binary, topic string, partition int, offset long"
        )
        decoded = decode_avro(raw, schema_json(name), registry=None, fields=fields)
        columns = [  # timestamps as milliseconds: Python's datetime holds years 1-9999 only
            f"unix_millis(record.`{f}`)" if f in timestamps else f"record.`{f}`" for f in kept
        ]
        got = decoded.selectExpr(
            "offset", "reason", "record IS NULL AS no_record", *columns
        ).collect()
        assert sorted(row["offset"] for row in got) == list(range(len(batch)))
        for row in got:
            value = batch[row["offset"]]
            expected = strict_decode(plain(schema), value)
            if expected is not None and not representable(expected, timestamps):
                expected = None
            if expected is None:
                assert row["reason"] is not None and row["no_record"], (value, row)
                continue
            assert row["reason"] is None, (value, row["reason"])
            for position, field in enumerate(kept, start=3):
                assert same(expected[field], row[position]), (field, expected[field], row)

    check()


TAGS = ["spark", "kafka", "flink", "beam", "storm"]


def garbled(valid: bytes, rng: random.Random) -> bytes | None:
    """One random mutation of ``valid`` (it may still be a valid record)."""
    kind = rng.randrange(7)
    if kind == 0:
        return valid[: rng.randrange(len(valid))]
    if kind == 1:
        return valid + rng.randbytes(rng.randint(1, 8))
    if kind == 2:
        return flipped(valid, rng.randrange(len(valid) * 8))
    if kind == 3:
        return huge_length(valid)
    return [None, b"", rng.randbytes(rng.randint(1, 40))][kind - 4]


def test_the_hashtags_job_dead_letters_every_bad_value_and_counts_the_rest_exactly(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    """2,000 tweets with 600 values garbled beyond decoding among them, through the job: each
    garbled value is a dead letter naming its offset, the job ends normally, and the finals
    equal an independent count of the valid tweets."""
    rng = random.Random(83)
    tweets = random_tweets(rng, 2_000, TAGS, 7, 1_000)
    reader = plain(json.loads(schema_json("tweet")))
    values: list[bytes | None] = [encode(reader, t) for t in tweets]
    for _ in range(600):
        while True:  # valid mutations: the test above
            value = garbled(encode(reader, rng.choice(tweets)), rng)
            if strict_decode(reader, value) is None:
                break
        values.insert(rng.randrange(len(values) + 1), value)
    bad = {i for i, v in enumerate(values) if strict_decode(reader, v) is None}
    assert len(bad) == 600
    tag = uuid.uuid4().hex[:8]
    ensure_topics(kafka_bootstrap, [f"tweets-{tag}"], partitions=1)
    sink = producer(kafka_bootstrap)
    sink.produce_many(f"tweets-{tag}", ((b"k", v) for v in values))  # type: ignore[misc]
    sink.flush(30)
    command = hashtags_command(
        kafka_bootstrap, tag, tmp_path / "checkpoint", "--available-now",
        "--max-offsets-per-trigger", "700",
    )  # fmt: skip
    log = run_to_end(command)
    assert re.search(rf"hashtags job stopped: \d+ micro-batches: .* {len(bad)} dead letters", log)
    letters = [
        AvroCodec("dead_letter").decode(r.value) for r in read_all(kafka_bootstrap, f"dlq-{tag}")
    ]
    assert sorted(letter["offset"] for letter in letters) == sorted(bad)
    wrong = [
        (letter["offset"], values[letter["offset"]], letter["value"])
        for letter in letters
        if letter["value"] != values[letter["offset"]]
    ]
    assert wrong == []
    assert all(letter["reason"] for letter in letters)
    assert read_all(kafka_bootstrap, f"late-{tag}") == []
    codec = AvroCodec("trending_topk")
    records = [codec.decode(x.value) for x in read_all(kafka_bootstrap, f"trending-{tag}")]
    assert finals_of(records) == independent_finals(tweets, 120_000, 30_000, 0)


def invalid_mutations(
    schema: Any, valid: list[bytes], count: int, rng: random.Random
) -> list[bytes | None]:
    """``count`` random mutations of the ``valid`` values that are no record by the rule."""
    found: list[bytes | None] = []
    while len(found) < count:
        value = garbled(rng.choice(valid), rng)
        if strict_decode(plain(schema), value) is None:
            found.append(value)
    return found


def produce_raw(
    bootstrap: str, topic: str, values: list[bytes | None], partitions: int = 1
) -> dict[tuple[int, int], bytes | None]:
    """Write ``values`` round-robin over ``partitions`` of ``topic``; their (partition, offset)."""
    from confluent_kafka import Producer

    sink = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    offsets: dict[tuple[int, int], bytes | None] = {}

    def delivered(error: Any, message: Any) -> None:
        assert error is None
        offsets[(message.partition(), message.offset())] = message.value()

    for i, value in enumerate(values):
        sink.produce(topic, value, b"bad", i % partitions, on_delivery=delivered)
        sink.poll(0)
    assert sink.flush(30) == 0
    assert len(offsets) == len(values)
    return offsets


def test_the_sensors_job_dead_letters_every_bad_value_and_matches_the_rest_exactly(
    kafka_bootstrap: str, spark: Any, tmp_path: Path
) -> None:
    """800 readings and queries with 150 garbled values amid them on each topic: each garbled
    value is a dead letter with its topic and offset, and the matches and popular readings
    equal the seed model's over the valid events."""
    from tests.integration.test_sensors_job import Job, make_events, oracle

    rng = random.Random(89)
    job = Job(kafka_bootstrap, tmp_path)
    events = make_events(600, 200, seed=89)
    half = len(events) // 2
    job.produce(events[:half])
    bad: dict[tuple[str, int], bytes | None] = {}
    for kind, name in (("r", "sensor_reading"), ("q", "sensor_query")):
        schema = json.loads(schema_json(name))
        valid = [
            encode(plain(schema), {k: v for k, v in e.items() if k != "kind"})
            for e in events
            if e["kind"] == kind
        ]
        topic = job.topics["readings" if kind == "r" else "queries"]
        garbage = produce_raw(kafka_bootstrap, topic, invalid_mutations(schema, valid, 150, rng))
        bad.update({(topic, offset): value for (_, offset), value in garbage.items()})
    job.produce(events[half:])
    processor = job.run(spark, size=25, threshold=3, max_offsets_per_trigger=300)
    assert job.results() == oracle(events, 25, 3, False)
    letters = [
        AvroCodec("dead_letter").decode(r.value)
        for r in read_all(kafka_bootstrap, job.topics["dlq"])
    ]
    assert {(d["topic"], d["offset"]): d["value"] for d in letters} == bad
    assert all(d["reason"] for d in letters)
    assert sum(s.dead for s in processor.history) == len(bad) == 300


def test_the_windows_job_dead_letters_every_bad_value_and_sums_the_rest_exactly(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    """900 interval events with 201 garbled values after them in the topic: each garbled value
    is a dead letter, the job ends normally, and the snapshot sums equal a sweep of the valid
    events."""
    from tests.integration.test_windows_job import snapshot_job, snapshot_sums

    rng = random.Random(97)
    topics, lines, command = snapshot_job(kafka_bootstrap, tmp_path, 97, "--available-now")
    schema = json.loads(schema_json("interval_event"))
    samples = [
        {"kind": "INTERVAL", "id": None, "key": "k1", "start": 1_000, "end": 2_000, "value": 1.5},
        {"kind": "START_EDGE", "id": "e", "key": "k2", "start": 5_000, "end": None, "value": 2.0},
        {"kind": "END_EDGE", "id": "e", "key": "k2", "start": None, "end": 9_000, "value": None},
        {"kind": "CTI", "id": None, "key": None, "start": 3_000, "end": None, "value": None},
    ]
    valid = [encode(plain(schema), record) for record in samples]
    # spread like the events (3 partitions), so each partition's backlog keeps its share of a
    # batch and no partition falls behind the others in event time
    garbage = invalid_mutations(schema, valid, 201, rng)
    bad = produce_raw(kafka_bootstrap, topics.input, garbage, partitions=3)
    log = run_to_end(command)
    assert re.search(r"windows job stopped: \d+ micro-batches", log)
    letters = topics.letters(topics.dlq)
    assert {(d["partition"], d["offset"]): d["value"] for d in letters} == bad
    assert topics.letters(topics.late) == []
    assert topics.rows() == snapshot_sums(lines)


def test_the_spl_example_dead_letters_every_bad_value_and_windows_the_rest_exactly(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    """300 tweets with 120 garbled values among them through the SPL example: each garbled
    value is a dead letter at its offset, and every user's window events equal the pure
    window's over the valid tweets."""
    from tests.integration.test_spl_kafka_example import (
        EXAMPLE,
        SPEC,
        expected_events,
        published_events,
        tweets,
    )  # fmt: skip

    rng = random.Random(101)
    users = [f"u{rng.randrange(5)}" for _ in range(300)]
    values: list[tuple[bool, bytes | None]] = [(False, encode_tweet(t)) for t in tweets(users)]
    valid = [value for _, value in values if value is not None]
    for value in invalid_mutations(json.loads(schema_json("tweet")), valid, 120, rng):
        values.insert(rng.randrange(len(values) + 1), (True, value))
    tag = uuid.uuid4().hex[:8]
    source, sink, dead = f"tweets-{tag}", f"windows-{tag}", f"dead-{tag}"
    ensure_topics(kafka_bootstrap, [source], partitions=1)
    produced = produce_raw(kafka_bootstrap, source, [value for _, value in values])
    command = [
        sys.executable, str(EXAMPLE), "--bootstrap", kafka_bootstrap, "--topic", source,
        "--spec", json.dumps(SPEC), "--output-topic", sink, "--dead-letter-topic", dead,
        "--checkpoint", str(tmp_path / "checkpoint"), "--available-now",
        "--max-offsets-per-trigger", "100",
    ]  # fmt: skip
    run_to_end(command)
    assert published_events(kafka_bootstrap, sink) == expected_events(users)
    letters = [AvroCodec("dead_letter").decode(r.value) for r in read_all(kafka_bootstrap, dead)]
    assert {d["offset"]: d["value"] for d in letters} == {
        offset: value for (_, offset), value in produced.items() if values[offset][0]
    }
    assert all(d["reason"] for d in letters)
