"""The temporal replay format as ``interval_event`` records: line mapping, end edge keys, bad
lines, the Avro round trip and how records are routed to partitions."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import pytest

from connectors.avro import AvroCodec, schema_for_topic
from connectors.kafka import Routed
from tests.support.oracles import avro_body
from trending import temporal_data
from trending.cli import build_parser
from trending.temporal_data import (
    parse_event_line,
    produce_interval_events,
    read_events_jsonl,
)
from trending.windows.temporal_replay import (
    CtiLine,
    EndEdgeLine,
    EventLine,
    parse_replay_line,
)

T0 = 1_700_000_000_000  # 2023-11-14T22:13:20Z


def event(
    kind: str,
    *,
    id: str | None = None,
    key: str | None = None,
    start: int | None = None,
    end: int | None = None,
    value: float | None = None,
) -> dict[str, Any]:
    return {"kind": kind, "id": id, "key": key, "start": start, "end": end, "value": value}


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (
            '{"start": 1000, "end": 2000, "key": "a", "value": 2, "id": "x"}',
            event("INTERVAL", id="x", key="a", start=1000, end=2000, value=2.0),
        ),
        (
            '{"start": "2023-11-14T22:13:20Z", "end": "2023-11-14T23:13:20.5+01:00"}',
            event("INTERVAL", start=T0, end=T0 + 500),
        ),
        ('{"start": 5, "end": 6, "value": -1.25}', event("INTERVAL", start=5, end=6, value=-1.25)),
        ('{"start": 5, "end": 6, "value": null}', event("INTERVAL", start=5, end=6)),
        ('{"start": 5, "key": "k", "id": "e"}', event("START_EDGE", id="e", key="k", start=5)),
        ('{"start": 5, "end": null, "value": 3}', event("START_EDGE", start=5, value=3.0)),
        ('{"end_edge": "e", "end": 9}', event("END_EDGE", id="e", end=9)),
        ('{"end_edge": "e", "end": 9, "key": "k"}', event("END_EDGE", id="e", key="k", end=9)),
        ('{"cti": 42}', event("CTI", start=42)),
        ('{"cti": "1970-01-01T00:00:01Z"}', event("CTI", start=1000)),
    ],
)
def test_line_kinds_and_fields(line: str, expected: dict[str, Any]) -> None:
    assert parse_event_line(line) == expected


@pytest.mark.parametrize(
    ("raw", "text"),
    [
        ("k", "k"),
        ("", ""),
        ("été", "été"),
        (7, "7"),
        (-1.5, "-1.5"),
        (True, "true"),
        (False, "false"),
        ([1, "a"], '[1,"a"]'),
        ({"b": 2, "a": [1, 2]}, '{"a":[1,2],"b":2}'),
        (None, None),
    ],
)
def test_keys_and_ids_are_text(raw: Any, text: str | None) -> None:
    line = parse_event_line(json.dumps({"start": 0, "end": 1, "key": raw, "id": raw}))
    assert (line["key"], line["id"]) == (text, text)
    if raw is not None:
        edge = parse_event_line(json.dumps({"end_edge": raw, "end": 1, "key": raw}))
        assert (edge["key"], edge["id"]) == (text, text)


def test_absent_key_and_id_are_null() -> None:
    assert parse_event_line('{"start": 0, "end": 1}') == event("INTERVAL", start=0, end=1)


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("{oops", "not JSON"),
        ("[1, 2]", "expected one of"),
        ('{"end": 5, "key": "a"}', "missing 'start'"),
        ('{"end_edge": "e"}', "missing 'end'"),
        ('{"start": "yesterday", "end": 5}', "start: not an ISO-8601 time"),
        ('{"start": 0, "end": "soon"}', "end: not an ISO-8601 time"),
        ('{"cti": true}', "cti: a time must be epoch milliseconds or ISO-8601"),
        ('{"start": 5, "end": 5}', "end 5 is not after start 5"),
        ('{"start": 6, "end": 5}', "end 5 is not after start 6"),
        ('{"start": 0, "end": 1, "value": "3"}', "value must be a finite number"),
        ('{"start": 0, "end": 1, "value": [1]}', "value must be a finite number"),
        ('{"start": 0, "end": 1, "value": true}', "value must be a finite number"),
        ('{"start": 0, "end": 1, "value": NaN}', "value must be a finite number"),
        ('{"start": 0, "end": 1, "value": 1e400}', "value must be a finite number"),
        ('{"end_edge": null, "end": 5}', "an end edge needs the id"),
        ('{"start": 0, "end": 1, "colour": "red"}', "unknown field 'colour'"),
    ],
)
def test_bad_lines_say_why(line: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        parse_event_line(line)


def read(lines: Iterable[str]) -> tuple[list[dict[str, Any]], list[tuple[int, str]]]:
    bad: list[tuple[int, str]] = []
    records = list(read_events_jsonl(lines, lambda number, reason: bad.append((number, reason))))
    return records, bad


def test_end_edges_take_the_key_of_their_start_edge() -> None:
    records, bad = read(
        [
            '{"start": 1, "key": "a", "id": "e1", "value": 1}',
            '{"start": 2, "key": 5, "id": 9}',
            '{"start": 3, "id": "nokey"}',
            '{"end_edge": "e1", "end": 10}',
            '{"end_edge": 9, "end": 11}',
            '{"end_edge": "nokey", "end": 12}',
            '{"end_edge": "never-opened", "end": 13}',
            '{"end_edge": "e1", "end": 14}',
            '{"start": 4, "key": "b", "id": "e2"}',
            '{"end_edge": "e2", "end": 15, "key": "own"}',
        ]
    )
    assert bad == []
    assert records[3:8] + records[9:] == [
        event("END_EDGE", id="e1", key="a", end=10),
        event("END_EDGE", id="9", key="5", end=11),
        event("END_EDGE", id="nokey", end=12),
        event("END_EDGE", id="never-opened", end=13),
        event("END_EDGE", id="e1", end=14),  # e1 was closed by line 4
        event("END_EDGE", id="e2", key="own", end=15),
    ]


def test_an_end_edge_not_after_its_start_is_a_bad_line_and_keeps_the_edge_open() -> None:
    records, bad = read(
        [
            '{"start": 10, "key": "a", "id": "e"}',
            '{"end_edge": "e", "end": 10}',
            '{"end_edge": "e", "end": 11}',
        ]
    )
    assert [number for number, _ in bad] == [2]
    assert "not after its start 10" in bad[0][1]
    assert records[1:] == [event("END_EDGE", id="e", key="a", end=11)]


def test_bad_lines_are_skipped_by_number_and_order_is_kept() -> None:
    records, bad = read(
        [
            '{"start": 0, "end": 5, "key": "a", "value": 1}',
            "",
            "not json",
            '{"cti": 3}',
            "   ",
            '{"start": 1, "end": 0}',
            '{"start": 1, "end": 2, "value": "x"}',
            '{"end": 2}',
            '{"start": 1, "end": 2, "key": 3}',
        ]
    )
    assert [number for number, _ in bad] == [3, 6, 7, 8]
    assert records == [
        event("INTERVAL", key="a", start=0, end=5, value=1.0),
        event("CTI", start=3),
        event("INTERVAL", key="3", start=1, end=2),
    ]


def test_replay_line_forms() -> None:
    assert parse_replay_line('{"cti": 5}') == CtiLine(5)
    assert parse_replay_line('{"end_edge": [1], "end": 5}') == EndEdgeLine([1], 5)
    assert parse_replay_line('{"start": 1, "value": "v", "key": {"a": 1}}') == EventLine(
        1, None, {"a": 1}, "v"
    )


def test_records_fit_the_schema_both_ways() -> None:
    codec = AvroCodec("interval_event")
    records = [
        event("INTERVAL", id="x", key="a", start=-5, end=T0, value=0.5),
        event("START_EDGE", start=T0),
        event("END_EDGE", id="x", end=T0 + 1),
        event("CTI", start=T0),
    ]
    assert [codec.encode(r) for r in records] == [avro_body("interval_event", r) for r in records]
    assert [codec.decode(avro_body("interval_event", r)) for r in records] == records
    assert schema_for_topic("interval-events") == "interval_event"
    assert schema_for_topic("interval-events-late") == "dead_letter"


class FakeProducer:
    def __init__(self) -> None:
        self.sent: list[Routed] = []
        self.flushed = False

    def produce_routed(self, topic: str, records: Iterable[Routed], **_: Any) -> int:
        self.sent.extend(records)
        return len(self.sent)

    def flush(self) -> None:
        self.flushed = True


def test_ctis_go_to_every_partition_events_by_key_and_keyless_ones_to_0(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sink = FakeProducer()
    monkeypatch.setattr(temporal_data, "ensure_topics", lambda *a, **k: [])
    monkeypatch.setattr(temporal_data, "partition_count", lambda *a, **k: 3)
    monkeypatch.setattr(temporal_data, "producer", lambda *a, **k: sink)
    records = [
        event("INTERVAL", key="a", start=0, end=1),
        event("CTI", start=1),
        event("START_EDGE", id="e", start=2),
        event("END_EDGE", id="e", key="é", end=3),
    ]
    assert produce_interval_events("broker:9092", "interval-events", records) == 4
    body = [avro_body("interval_event", r) for r in records]
    assert sink.sent == [
        (b"a", body[0], -1),
        (None, body[1], 0),
        (None, body[1], 1),
        (None, body[1], 2),
        (None, body[2], 0),  # no key: partition 0, in order
        ("é".encode(), body[3], -1),
    ]
    assert sink.flushed


def test_cli_defaults() -> None:
    args = build_parser().parse_args(["produce", "events", "--from-jsonl", "in.jsonl"])
    assert (args.topic, args.partitions, args.rate) == ("interval-events", 4, None)
    with pytest.raises(SystemExit):
        build_parser().parse_args(["produce", "events"])
