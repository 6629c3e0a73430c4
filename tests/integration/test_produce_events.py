"""`trending produce events --from-jsonl` and `trending consume` through a real broker."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from connectors.avro import AvroCodec
from connectors.kafka import partition_count
from tests.integration.test_produce_sensors import consumed, trending, write_lines
from tests.support.kafka import read_all

pytestmark = pytest.mark.integration
Topic = Callable[[str], str]
T0 = 1_700_000_000_000  # 2023-11-14T22:13:20Z


def event(kind: str, **fields: Any) -> dict[str, Any]:
    return {"kind": kind, "id": None, "key": None, "start": None, "end": None, "value": None} | (
        fields
    )


def test_replay_file_to_interval_events(
    kafka_bootstrap: str, unique_topic: Topic, tmp_path: Path
) -> None:
    topic = unique_topic("interval-events")
    source = write_lines(
        tmp_path / "events.jsonl",
        [
            '{"start": "2023-11-14T22:13:20Z", "end": "2023-11-14T22:13:25.5Z", "key": "a", '
            '"value": 1}',
            f'{{"start": {T0 + 1000}, "end": {T0 + 2000}, "key": 7, "value": 2.5, "id": 3}}',
            f'{{"start": {T0 + 1500}, "key": "s", "id": "e1", "value": -4}}',
            "{not json",
            "",
            f'{{"end_edge": "e1", "end": {T0 + 9000}}}',
            f'{{"cti": {T0 + 3000}}}',
            f'{{"start": {T0 + 4000}, "end": {T0 + 5000}, "key": "a"}}',
        ],
    )
    produced = trending(
        kafka_bootstrap,
        "produce", "events", "--topic", topic, "--from-jsonl", str(source), "--partitions", "3",
    )  # fmt: skip
    assert produced.returncode == 0, produced.stderr
    assert "line 4: skipped: not JSON" in produced.stderr
    assert f"produced 6 events to {topic}" in produced.stdout
    assert f"skipped 1 bad lines of {source}" in produced.stdout
    assert partition_count(kafka_bootstrap, topic) == 3

    in_order = [
        event("INTERVAL", key="a", start=T0, end=T0 + 5500, value=1.0),
        event("INTERVAL", id="3", key="7", start=T0 + 1000, end=T0 + 2000, value=2.5),
        event("START_EDGE", id="e1", key="s", start=T0 + 1500, value=-4.0),
        event("END_EDGE", id="e1", key="s", end=T0 + 9000),  # the key of its start edge
        event("CTI", start=T0 + 3000),
        event("INTERVAL", key="a", start=T0 + 4000, end=T0 + 5000),
    ]
    cti = in_order[4]
    records = consumed(kafka_bootstrap, topic, "--schema", "interval_event")
    expected = [r for r in in_order if r is not cti] + [cti] * 3  # one copy per partition
    as_text = lambda rs: Counter(json.dumps(r, sort_keys=True) for r in rs)  # noqa: E731
    assert as_text(records) == as_text(expected)

    codec = AvroCodec("interval_event")
    by_partition: dict[int, list[dict[str, Any]]] = {}
    for message in read_all(kafka_bootstrap, topic):
        assert message.value is not None
        record = codec.decode(message.value)
        assert message.key == (None if record["key"] is None else record["key"].encode())
        by_partition.setdefault(message.partition, []).append(record)
    assert sorted(by_partition) == [0, 1, 2]
    partition_of = {
        r["key"]: p for p, rows in by_partition.items() for r in rows if r["key"] is not None
    }
    for partition, rows in by_partition.items():
        # file order within the partition, the CTI after everything read before it
        mine = [r for r in in_order if r is cti or partition_of[r["key"]] == partition]
        assert rows == mine
