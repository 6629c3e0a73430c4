"""`trending produce readings|queries` and `trending consume` through a real broker."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from connectors.avro import AvroCodec
from connectors.jvm import REPO_ROOT
from connectors.kafka import ensure_topics, partition_count, producer
from tests.support.kafka import read_all
from trending.sensors_data import generate_queries, generate_readings, produce_sensor_records

pytestmark = pytest.mark.integration
START = 1_700_000_000_000
Topic = Callable[[str], str]


def trending(bootstrap: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run ``trending ARGS --bootstrap-servers B``."""
    command = [sys.executable, "-m", "trending.cli", *args, "--bootstrap-servers", bootstrap]
    return subprocess.run(
        command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=timeout, check=False
    )


def consumed(bootstrap: str, topic: str, *extra: str) -> list[dict[str, Any]]:
    """The values of ``topic`` as ``trending consume --json`` prints them."""
    done = trending(
        bootstrap, "consume", topic, "--from-beginning", "--json", "--idle-timeout", "3", *extra
    )
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_generated_readings_round_trip_keyed_by_sensor(
    kafka_bootstrap: str, unique_topic: Topic
) -> None:
    topic = unique_topic("sensor-readings")
    produced = trending(
        kafka_bootstrap,
        "produce", "readings", "--topic", topic, "--count", "5000", "--seed", "4",
        "--start-ms", str(START), "--sensors", "30", "--events-per-second", "250",
        "--partitions", "3",
    )  # fmt: skip
    assert produced.returncode == 0, produced.stderr
    assert f"produced 5000 readings to {topic}" in produced.stdout
    assert partition_count(kafka_bootstrap, topic) == 3
    expected = list(generate_readings(4, 5000, start_ms=START, sensors=30, events_per_second=250))
    key = lambda r: (r["ts"], r["sensor_id"], r["x"])  # noqa: E731
    assert sorted(consumed(kafka_bootstrap, topic), key=key) == sorted(expected, key=key)
    codec = AvroCodec("sensor_reading")
    by_partition: dict[int, list[dict[str, Any]]] = {}
    for record in read_all(kafka_bootstrap, topic):
        assert record.value is not None
        decoded = codec.decode(record.value)
        assert record.key == str(decoded["sensor_id"]).encode()
        by_partition.setdefault(record.partition, []).append(decoded)
    sensors_of = [{r["sensor_id"] for r in rows} for rows in by_partition.values()]
    assert sum(len(s) for s in sensors_of) == 30  # one partition per sensor
    for rows in by_partition.values():  # each sensor's readings in their order
        for sensor in {r["sensor_id"] for r in rows}:
            mine = [r for r in expected if r["sensor_id"] == sensor]
            assert [r for r in rows if r["sensor_id"] == sensor] == mine


def test_generated_queries_round_trip(kafka_bootstrap: str, unique_topic: Topic) -> None:
    topic = unique_topic("sensor-queries")
    produced = trending(
        kafka_bootstrap,
        "produce", "queries", "--topic", topic, "--count", "3000", "--seed", "2",
        "--start-ms", str(START), "--distance", "0.125", "--quiet",
    )  # fmt: skip
    assert produced.returncode == 0, produced.stderr
    assert produced.stdout == ""
    records = consumed(kafka_bootstrap, topic)
    expected = list(generate_queries(2, 3000, start_ms=START, distance=0.125))
    assert sorted(records, key=lambda q: q["query_id"]) == expected
    keys = {r.key for r in read_all(kafka_bootstrap, topic)}
    assert keys == {str(i).encode() for i in range(3000)}


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_jsonl_readings_skip_and_report_bad_lines(
    kafka_bootstrap: str, unique_topic: Topic, tmp_path: Path
) -> None:
    topic = unique_topic("sensor-readings")
    good = [
        {"sensor_id": 1, "x": 0.25, "y": 0.5, "value": 12.5, "ts": "2018-10-10T20:19:24Z"},
        {"sensor_id": 2, "x": 1, "y": -3.5, "value": 0, "ts": "2018-10-10T22:19:24.5+02:00"},
        {"sensor_id": 3, "x": 0.1, "y": 0.2, "value": 7.25, "ts": 1_539_202_764_000},
    ]
    source = write_lines(
        tmp_path / "readings.jsonl",
        [
            json.dumps(good[0]),
            "{oops",
            json.dumps(good[1]),
            '{"sensor_id": 4, "x": NaN, "y": 0, "value": 0, "ts": 0}',
            json.dumps(good[2]),
        ],
    )
    produced = trending(
        kafka_bootstrap, "produce", "readings", "--topic", topic, "--from-jsonl", str(source)
    )
    assert produced.returncode == 0, produced.stderr
    assert "line 2: skipped: not JSON" in produced.stderr
    assert "line 4: skipped: x must be a finite number" in produced.stderr
    assert "produced 3 readings" in produced.stdout and "skipped 2 bad lines" in produced.stdout
    records = sorted(consumed(kafka_bootstrap, topic), key=lambda r: r["sensor_id"])
    assert records == [
        {"sensor_id": 1, "x": 0.25, "y": 0.5, "value": 12.5, "ts": 1_539_202_764_000},
        {"sensor_id": 2, "x": 1.0, "y": -3.5, "value": 0.0, "ts": 1_539_202_764_500},
        {"sensor_id": 3, "x": 0.1, "y": 0.2, "value": 7.25, "ts": 1_539_202_764_000},
    ]


def test_jsonl_queries_round_trip(
    kafka_bootstrap: str, unique_topic: Topic, tmp_path: Path
) -> None:
    topic = unique_topic("sensor-queries")
    good = {"query_id": 9_000_000_000, "x": 0.5, "y": 0.5, "distance": 0.0, "ts": 5}
    source = write_lines(
        tmp_path / "queries.jsonl",
        [json.dumps(good), json.dumps({**good, "distance": -1}), ""],
    )
    produced = trending(
        kafka_bootstrap, "produce", "queries", "--topic", topic, "--from-jsonl", str(source)
    )
    assert produced.returncode == 0, produced.stderr
    assert "line 2: skipped: distance must be >= 0" in produced.stderr
    assert "produced 1 queries" in produced.stdout and "skipped 1 bad lines" in produced.stdout
    assert consumed(kafka_bootstrap, topic) == [good]
    readable = trending(kafka_bootstrap, "consume", topic, "--from-beginning", "--max-records", "1")
    line = r"\[\d:0\] 1970-01-01T00:00:00\.005Z query 9000000000 at \(0\.5000, 0\.5000\) within 0"
    assert re.fullmatch(line, readable.stdout.strip()), readable.stdout


def test_wire_format_with_mock_registry(kafka_bootstrap: str, unique_topic: Topic) -> None:
    """Mock registry: confluent-kafka's in-process ``mock://`` registry, shared in this process."""
    topic, url = unique_topic("sensor-readings"), "mock://produce-sensors"
    expected = list(generate_readings(5, 400, start_ms=START))
    count = produce_sensor_records(
        kafka_bootstrap,
        topic,
        generate_readings(5, 400, start_ms=START),
        schema="sensor_reading",
        registry_url=url,
    )
    assert count == 400
    codec = AvroCodec("sensor_reading", url, subject=f"{topic}-value")
    values = [r.value for r in read_all(kafka_bootstrap, topic) if r.value is not None]
    assert all(v[0] == 0 and int.from_bytes(v[1:5], "big") == codec.schema_id for v in values)
    key = lambda r: r["ts"]  # noqa: E731
    assert sorted((codec.decode(v) for v in values), key=key) == expected


def test_late_sensor_topics_decode_as_dead_letters(
    kafka_bootstrap: str, unique_topic: Topic
) -> None:
    topic = unique_topic("sensor-late")
    ensure_topics(kafka_bootstrap, [topic], partitions=1)
    reading = AvroCodec("sensor_reading").encode(
        {"sensor_id": 1, "x": 0.0, "y": 0.0, "value": 1.0, "ts": START}
    )
    letter = {
        "topic": "sensor-readings", "partition": 0, "offset": 3, "key": b"1", "value": reading,
        "reason": "late: ts below the watermark", "failed_at": START,
    }  # fmt: skip
    sink = producer(kafka_bootstrap)
    sink.produce(topic, AvroCodec("dead_letter").encode(letter))
    sink.flush()
    [got] = consumed(kafka_bootstrap, topic, "--max-records", "1")
    assert got["reason"] == "late: ts below the watermark" and got["offset"] == 3
