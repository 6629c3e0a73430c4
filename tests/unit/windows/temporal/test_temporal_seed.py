"""The seeds' own examples: HoppingWindow2's "Adjusted Events" and "Query" tables (seed 000)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

from trending.windows.replay import replay
from trending.windows.temporal import (
    END_OF_TIME,
    Aggregate,
    EndEdge,
    HoppingGeometry,
    HoppingWindow,
    SnapshotWindow,
    StartEdge,
    TemporalQuery,
    parse_time_ms,
)

from .helpers import S, spans

START = parse_time_ms("2012-06-28T00:00:00Z")
GEOMETRY = HoppingGeometry(5 * S, 2 * S, parse_time_ms("2012-03-15T12:00:00Z"))

# EdgeEvent.CreateStart/CreateEnd of the seed's Main(), in its order (seconds after START).
SEED_INPUT = [
    StartEdge(START + 0 * S, "e0", "e0"),
    StartEdge(START + 1 * S, "e1", "e1"),
    EndEdge("e1", START + 2 * S),
    StartEdge(START + 3 * S, "e2", "e2"),
    StartEdge(START + 9 * S, "e3", "e3"),
    EndEdge("e2", START + 10 * S),
    EndEdge("e3", START + 10 * S),
]
SEED_LIFETIMES = {"e0": (0, None), "e1": (1, 2), "e2": (3, 10), "e3": (9, 10)}

# The seed's tables, typed from the text (StartTime, EndTime, Payload).
ADJUSTED_EVENTS = [
    ("6/28/2012 12:00:01 AM", "12/31/9999 11:59:59 PM", "e0"),
    ("6/28/2012 12:00:03 AM", "6/28/2012 12:00:07 AM", "e1"),
    ("6/28/2012 12:00:05 AM", "6/28/2012 12:00:15 AM", "e2"),
    ("6/28/2012 12:00:11 AM", "6/28/2012 12:00:15 AM", "e3"),
]
QUERY = [
    ("6/28/2012 12:00:01 AM", "6/28/2012 12:00:03 AM", 1),
    ("6/28/2012 12:00:03 AM", "6/28/2012 12:00:05 AM", 2),
    ("6/28/2012 12:00:05 AM", "6/28/2012 12:00:07 AM", 3),
    ("6/28/2012 12:00:07 AM", "6/28/2012 12:00:11 AM", 2),
    ("6/28/2012 12:00:11 AM", "6/28/2012 12:00:15 AM", 3),
    ("6/28/2012 12:00:15 AM", "12/31/9999 11:59:59 PM", 1),
]


def shown(ms: int) -> str:
    """A time as the seed's DisplayResults shows it (US format, whole seconds)."""
    moment = datetime(1970, 1, 1, tzinfo=timezone.utc) + timedelta(milliseconds=ms)
    hour = moment.hour % 12 or 12
    half = "AM" if moment.hour < 12 else "PM"
    return f"{moment.month}/{moment.day}/{moment.year} {hour}:{moment:%M:%S} {half}"


def hopping_window_2() -> TemporalQuery:
    return TemporalQuery(SnapshotWindow(Aggregate("count"), snap=GEOMETRY))


def test_adjusted_events_table() -> None:
    adjusted = []
    for name, (start, end) in SEED_LIFETIMES.items():
        end_ms = END_OF_TIME if end is None else START + end * S
        snapped = GEOMETRY.snap(START + start * S, end_ms)
        assert snapped is not None
        adjusted.append((shown(snapped[0]), shown(snapped[1]), name))
    assert adjusted == ADJUSTED_EVENTS


def test_query_table() -> None:
    rows = hopping_window_2().run(SEED_INPUT)
    assert [(shown(row.start), shown(row.end), row.value) for row in rows] == QUERY
    assert rows[-1].end == END_OF_TIME


def test_query_table_through_the_replay_tool() -> None:
    spec = {
        "kind": "hopping",
        "duration": "5s",
        "hop": "2s",
        "alignment": "2012-03-15T12:00:00Z",
        "aggregate": "count",
        "snap": True,
    }
    out = [json.loads(line) for line in replay(spec, _seed_lines())]
    assert [(row["start"][11:19], row["end"], row["value"]) for row in out] == [
        ("00:00:01", "2012-06-28T00:00:03.000Z", 1),
        ("00:00:03", "2012-06-28T00:00:05.000Z", 2),
        ("00:00:05", "2012-06-28T00:00:07.000Z", 3),
        ("00:00:07", "2012-06-28T00:00:11.000Z", 2),
        ("00:00:11", "2012-06-28T00:00:15.000Z", 3),
        ("00:00:15", None, 1),
    ]


def _seed_lines() -> list[str]:
    lines = []
    for item in SEED_INPUT:
        if isinstance(item, StartEdge):
            lines.append({"start": item.start, "id": item.id, "value": item.value})
        else:
            lines.append({"end_edge": item.id, "end": item.end})
    return [json.dumps(line) for line in lines]


def test_open_start_edge_gives_one_row_to_the_end_of_time() -> None:
    # one start edge, never closed; 2 s hops: HoppingWindow2 emits one row, not one per hop
    rows = hopping_window_2().run([StartEdge(START, "e0", "e0")])
    assert spans(rows) == [((START + S) // S, "EOT", 1)]


def test_plain_hopping_gives_a_row_per_window_of_an_open_edge() -> None:
    # the seed's problem: a hopping window emits every window up to the CTI
    query = TemporalQuery(HoppingWindow(GEOMETRY, Aggregate("count")))
    step = query.step(query.initial_state(), [StartEdge(START, "e0", "e0")], START + 21 * S)
    # windows ending by +21 s that hold +0 s: [-4, 1), [-2, 3), ..., [16, 21): 11 windows
    assert len(step.rows) == 11
    assert {row.value for row in step.rows} == {1}
