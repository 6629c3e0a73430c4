"""Sensor readings and queries: generators, JSON-lines replay, schemas, encoders, topic names."""

from __future__ import annotations

import io
import json
import math
import struct
import time
from collections import Counter
from typing import Any

import fastavro
import pytest
from hypothesis import given
from hypothesis import strategies as st

from connectors.avro import (
    AvroCodec,
    encode_popular_reading,
    encode_sensor_match,
    encode_sensor_query,
    encode_sensor_reading,
    schema_for_topic,
    schema_json,
)
from tests.support.oracles import avro_body
from trending.cli import build_parser, main
from trending.commands.consume import readable
from trending.sensors_data import (
    CHUNK,
    QuerySettings,
    ReadingSettings,
    generate_queries,
    generate_readings,
    parse_event_time,
    parse_query_line,
    parse_reading_line,
    read_queries_jsonl,
    read_readings_jsonl,
)

START = 1_700_000_000_000
Row = dict[str, Any]
MILLIS = {"type": "long", "logicalType": "timestamp-millis"}


def readings(count: int, seed: int = 1, **settings: Any) -> list[dict[str, Any]]:
    return list(generate_readings(seed, count, start_ms=START, **settings))


def queries(count: int, seed: int = 1, **settings: Any) -> list[dict[str, Any]]:
    return list(generate_queries(seed, count, start_ms=START, **settings))


# ---- generators ----------------------------------------------------------------------------


def test_same_seed_same_records_other_seed_other_records() -> None:
    assert readings(3000, seed=5) == readings(3000, seed=5)
    assert readings(3000, seed=5) != readings(3000, seed=6)
    assert queries(3000, seed=5) == queries(3000, seed=5)
    assert [q["x"] for q in queries(100, seed=5)] != [q["x"] for q in queries(100, seed=6)]


def test_readings_and_queries_draw_from_different_streams() -> None:
    xs = {r["x"] for r in readings(1000)}
    assert not xs & {q["x"] for q in queries(1000)}


def test_a_prefix_does_not_depend_on_count() -> None:
    n = CHUNK + 904  # crosses a chunk boundary
    assert readings(3 * CHUNK)[:n] == readings(n)
    assert queries(3 * CHUNK)[:n] == queries(n)
    assert readings(1) == readings(CHUNK)[:1]


def test_reading_fields_ranges_and_types() -> None:
    rows = readings(20_000, sensors=37)
    for row in rows:
        assert list(row) == ["sensor_id", "x", "y", "value", "ts"]
        assert type(row["sensor_id"]) is int and 0 <= row["sensor_id"] < 37
        assert 0.0 <= row["x"] < 1.0 and 0.0 <= row["y"] < 1.0
        assert 0.0 <= row["value"] < 1000.0
        assert all(type(row[f]) is float for f in ("x", "y", "value"))
    assert set(Counter(r["sensor_id"] for r in rows)) == set(range(37))
    assert abs(sum(r["value"] for r in rows) / len(rows) - 500) < 15
    assert abs(sum(r["x"] for r in rows) / len(rows) - 0.5) < 0.015


def test_query_fields_ids_and_fixed_distance() -> None:
    rows = queries(5000, distance=0.125)
    assert [q["query_id"] for q in rows] == list(range(5000))
    assert {q["distance"] for q in rows} == {0.125}
    for row in rows:
        assert list(row) == ["query_id", "x", "y", "distance", "ts"]
        assert 0.0 <= row["x"] < 1.0 and 0.0 <= row["y"] < 1.0


@pytest.mark.parametrize("eps", [1000.0, 3.0, 7.5, 250_000.0])
def test_event_time_is_start_plus_floor_of_index_over_rate(eps: float) -> None:
    expected = [START + math.floor(i * 1000 / eps) for i in range(6000)]
    assert [r["ts"] for r in readings(6000, events_per_second=eps)] == expected
    assert [q["ts"] for q in queries(6000, events_per_second=eps)] == expected


def test_default_start_ends_the_stream_about_now() -> None:
    """Without start_ms, 5000 readings at 100/s span 50 s: the start is now - 50 s aligned down
    to the minute, and reading 4999 comes floor(4999 * 1000 / 100) = 49.99 s after it."""
    before = int(time.time() * 1000)
    last = list(generate_readings(1, 5000, events_per_second=100.0))[-1]["ts"]
    after = int(time.time() * 1000)
    possible = {(now - 50_000) // 60_000 * 60_000 + 49_990 for now in range(before, after + 1)}
    assert last in possible


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: ReadingSettings(sensors=0), "sensors"),
        (lambda: ReadingSettings(events_per_second=0.0), "events_per_second"),
        (lambda: QuerySettings(distance=-0.1), "distance"),
        (lambda: QuerySettings(distance=math.inf), "distance"),
        (lambda: generate_queries(1, -1, start_ms=0), "count"),
    ],
)
def test_bad_settings_are_refused(make: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make()


@pytest.mark.parametrize(
    ("generate", "schema", "key"),
    [
        (generate_readings, "sensor_reading", "sensor_id"),
        (generate_queries, "sensor_query", "query_id"),
    ],
)
def test_fast_avro_records_are_the_avro_bodies(generate: Any, schema: str, key: str) -> None:
    rows = list(generate(3, 5000, start_ms=START))
    pairs = list(generate(3, 5000, start_ms=START).avro_records(b"HEAD"))
    assert [k for k, _ in pairs] == [str(r[key]).encode() for r in rows]
    assert [v for _, v in pairs] == [b"HEAD" + avro_body(schema, r) for r in rows]


def test_a_stream_is_read_once() -> None:
    stream = generate_readings(1, 10, start_ms=START)
    next(stream)
    with pytest.raises(ValueError, match="once"):
        list(stream.avro_records())


# ---- schemas, encoders, topics ---------------------------------------------------------------


def fields(name: str) -> dict[str, Any]:
    schema = json.loads(schema_json(name))
    assert schema["namespace"] == "trending" and schema["type"] == "record"
    return {f["name"]: f["type"] for f in schema["fields"]}


def test_sensor_schemas_are_exactly_as_specified() -> None:
    assert fields("sensor_reading") == {
        "sensor_id": "int", "x": "double", "y": "double", "value": "double", "ts": MILLIS,
    }  # fmt: skip
    assert fields("sensor_query") == {
        "query_id": "long", "x": "double", "y": "double", "distance": "double", "ts": MILLIS,
    }  # fmt: skip
    assert fields("sensor_match") == {
        "query_id": "long", "sensor_id": "int", "value": "double",
        "reading_ts": MILLIS, "query_ts": MILLIS,
    }  # fmt: skip
    assert fields("popular_reading") == {
        "sensor_id": "int", "x": "double", "y": "double", "value": "double", "ts": MILLIS,
        "matches": "int",
    }  # fmt: skip
    names = [json.loads(schema_json(n))["name"] for n in ("sensor_reading", "popular_reading")]
    assert names == ["SensorReading", "PopularReading"]


INT32 = st.integers(-(1 << 31), (1 << 31) - 1)
INT64 = st.integers(-(1 << 63), (1 << 63) - 1)
DOUBLE = st.floats(allow_nan=False)
RECORDS = {
    "sensor_reading": st.fixed_dictionaries(
        {"sensor_id": INT32, "x": DOUBLE, "y": DOUBLE, "value": DOUBLE, "ts": INT64}
    ),
    "sensor_query": st.fixed_dictionaries(
        {"query_id": INT64, "x": DOUBLE, "y": DOUBLE, "distance": DOUBLE, "ts": INT64}
    ),
    "sensor_match": st.fixed_dictionaries(
        {
            "query_id": INT64,
            "sensor_id": INT32,
            "value": DOUBLE,
            "reading_ts": INT64,
            "query_ts": INT64,
        }
    ),
    "popular_reading": st.fixed_dictionaries(
        {
            "sensor_id": INT32,
            "x": DOUBLE,
            "y": DOUBLE,
            "value": DOUBLE,
            "ts": INT64,
            "matches": INT32,
        }
    ),
}
WRITERS = {
    "sensor_reading": encode_sensor_reading,
    "sensor_query": encode_sensor_query,
    "sensor_match": encode_sensor_match,
    "popular_reading": encode_popular_reading,
}


@pytest.mark.parametrize("schema", list(RECORDS))
@given(data=st.data())
def test_hand_written_writers_match_fastavro(schema: str, data: st.DataObject) -> None:
    record = data.draw(RECORDS[schema])
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(json.loads(schema_json(schema))), record)
    assert WRITERS[schema](record) == out.getvalue()
    assert AvroCodec(schema).decode(out.getvalue()) == record


def test_writers_refuse_values_that_do_not_fit() -> None:
    good = {"sensor_id": 1, "x": 0.5, "y": 0.5, "value": 1.0, "ts": 0}
    codec = AvroCodec("sensor_reading")
    for bad in ({"sensor_id": 1 << 31}, {"ts": 1 << 63}, {"x": "0.5"}, {"sensor_id": 1.0}):
        with pytest.raises(ValueError, match="does not fit schema sensor_reading"):
            codec.encode({**good, **bad})
    assert struct.unpack("<d", encode_sensor_reading(good)[1:9]) == (0.5,)


@pytest.mark.parametrize(
    ("topic", "schema"),
    [
        ("sensor-readings", "sensor_reading"),
        ("sensor-readings-test-1a2b", "sensor_reading"),
        ("sensor-queries", "sensor_query"),
        ("sensor-queries.test", "sensor_query"),
        ("sensor-matches-x-1a2b", "sensor_match"),
        ("popular-readings-x-1a2b", "popular_reading"),
        ("sensor-late", "dead_letter"),
        ("sensor-late-x-1a2b", "dead_letter"),
        ("sensor-readings-dlq", "dead_letter"),
    ],
)
def test_sensor_topics_map_to_their_schemas(topic: str, schema: str) -> None:
    assert schema_for_topic(topic) == schema


# ---- replay ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "ms"),
    [
        (1_539_202_764_123, 1_539_202_764_123),
        ("2018-10-10T20:19:24Z", 1_539_202_764_000),
        ("2018-10-10T20:19:24.123Z", 1_539_202_764_123),
        ("2018-10-10T20:19:24.123999Z", 1_539_202_764_123),
        ("2018-10-10T22:19:24+02:00", 1_539_202_764_000),
        ("2018-10-10T20:19:24", 1_539_202_764_000),
        ("1969-12-31T23:59:59.999Z", -1),
    ],
)
def test_event_time_from_epoch_ms_or_iso(value: Any, ms: int) -> None:
    assert parse_event_time(value) == ms


def test_a_reading_line_and_a_query_line() -> None:
    reading = {"sensor_id": 7, "x": 1, "y": -0.5, "value": 3.25, "ts": "2018-10-10T20:19:24Z"}
    parsed = parse_reading_line(json.dumps({**reading, "extra": "ignored"}))
    assert parsed == {"sensor_id": 7, "x": 1.0, "y": -0.5, "value": 3.25, "ts": 1_539_202_764_000}
    assert type(parsed["x"]) is float
    query = {"query_id": 1 << 40, "x": 0.1, "y": 0.2, "distance": 0, "ts": 5}
    assert parse_query_line(json.dumps(query)) == {**query, "distance": 0.0}


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("{oops", "not JSON"),
        ("[1, 2]", "not a JSON object"),
        ('{"sensor_id": 1, "x": 0}', "missing y, value, ts"),
        ('{"sensor_id": true, "x": 0, "y": 0, "value": 0, "ts": 0}', "sensor_id must be"),
        ('{"sensor_id": "1", "x": 0, "y": 0, "value": 0, "ts": 0}', "sensor_id must be"),
        ('{"sensor_id": 2147483648, "x": 0, "y": 0, "value": 0, "ts": 0}', "32-bit"),
        ('{"sensor_id": 1, "x": NaN, "y": 0, "value": 0, "ts": 0}', "x must be a finite"),
        ('{"sensor_id": 1, "x": 0, "y": Infinity, "value": 0, "ts": 0}', "y must be a finite"),
        ('{"sensor_id": 1, "x": 0, "y": 0, "value": "3", "ts": 0}', "value must be a finite"),
        ('{"sensor_id": 1, "x": 1e999999, "y": 0, "value": 0, "ts": 0}', "x must be a finite"),
        ('{"sensor_id": 1, "x": 0, "y": 0, "value": 0, "ts": 1.5}', "ts must be epoch ms"),
        ('{"sensor_id": 1, "x": 0, "y": 0, "value": 0, "ts": "yesterday"}', "not an ISO"),
        ('{"sensor_id": 1, "x": 0, "y": 0, "value": 0, "ts": 9223372036854775808}', "64-bit"),
    ],
)
def test_bad_reading_lines_say_why(line: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        parse_reading_line(line)


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ('{"query_id": 1, "x": 0, "y": 0, "distance": -0.01, "ts": 0}', "distance must be >= 0"),
        ('{"query_id": 1, "x": 0, "y": 0, "distance": NaN, "ts": 0}', "distance must be a fin"),
        ('{"query_id": 0.5, "x": 0, "y": 0, "distance": 1, "ts": 0}', "query_id must be"),
        ('{"query_id": 1, "x": 0, "y": 0, "ts": 0}', "missing distance"),
    ],
)
def test_bad_query_lines_say_why(line: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        parse_query_line(line)


def test_readers_skip_blank_and_bad_lines_reporting_their_numbers() -> None:
    good = {"sensor_id": 1, "x": 0.5, "y": 0.5, "value": 2.0, "ts": 10}
    lines = [json.dumps(good), "", "{oops", json.dumps({**good, "sensor_id": 2}), "   ", "7"]
    bad: list[tuple[int, str]] = []
    got = list(read_readings_jsonl(lines, lambda n, why: bad.append((n, why))))
    assert got == [good, {**good, "sensor_id": 2}]
    assert [n for n, _ in bad] == [3, 6]
    query = {"query_id": 3, "x": 0.0, "y": 0.0, "distance": 0.1, "ts": "1970-01-01T00:00:01Z"}
    assert list(read_queries_jsonl([json.dumps(query)], lambda n, why: None)) == [
        {**query, "ts": 1000}
    ]


# ---- the command line ------------------------------------------------------------------------


def test_produce_readings_and_queries_defaults() -> None:
    parser = build_parser()
    readings_args = parser.parse_args(["produce", "readings"])
    assert (readings_args.topic, readings_args.count, readings_args.sensors) == (
        "sensor-readings", 10_000, 100,
    )  # fmt: skip
    assert (readings_args.partitions, readings_args.events_per_second) == (4, 1000.0)
    queries_args = parser.parse_args(["produce", "queries", "--distance", "0.2"])
    assert (queries_args.topic, queries_args.distance, queries_args.seed) == (
        "sensor-queries", 0.2, 1,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["produce", "readings", "--sensors", "0"], "argument --sensors: want a whole number >="),
        (["produce", "queries", "--distance", "-1"], "argument --distance: want a number >= 0"),
        (["produce", "queries", "--count", "-5"], "argument --count: want a whole number >= 0"),
        (["produce", "readings", "--events-per-second", "0"], "--events-per-second: want a"),
        (["produce", "readings", "--seed", "-1"], "seed must be >= 0"),
        (["produce", "readings", "--from-jsonl", "/nonexistent/r.jsonl"], "cannot read"),
    ],
)
def test_bad_flags_fail_before_any_kafka_call(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    try:  # the parser's own checks exit at once, the others return the exit code
        code = main([*argv, "--bootstrap-servers", "127.0.0.1:1"])
    except SystemExit as exit:
        code = int(exit.code or 0)
    assert code == 2
    assert message in capsys.readouterr().err


class _At:
    """Where a consumed message sits (what ``readable`` asks of a Kafka message)."""

    def partition(self) -> int:
        return 2

    def offset(self) -> int:
        return 7


@pytest.mark.parametrize(
    ("schema", "record", "line"),
    [
        (
            "sensor_reading",
            {"sensor_id": 4, "x": 0.25, "y": 0.5, "value": 12.5, "ts": 1000},
            "[2:7] 1970-01-01T00:00:01.000Z sensor 4 at (0.2500, 0.5000): 12.5",
        ),
        (
            "sensor_match",
            {"query_id": 9, "sensor_id": 4, "value": 12.5, "reading_ts": 1000, "query_ts": 2000},
            "[2:7] 1970-01-01T00:00:02.000Z query 9 matched sensor 4 "
            "(1970-01-01T00:00:01.000Z): 12.5",
        ),
        (
            "popular_reading",
            {"sensor_id": 4, "x": 0.25, "y": 0.5, "value": 12.5, "ts": 1000, "matches": 3},
            "[2:7] 1970-01-01T00:00:01.000Z sensor 4 at (0.2500, 0.5000): 12.5, 3 matches",
        ),
    ],
)
def test_consume_prints_readable_sensor_lines(schema: str, record: Row, line: str) -> None:
    assert readable(record, schema, _At()) == line  # type: ignore[arg-type]
