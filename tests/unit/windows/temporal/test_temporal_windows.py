"""Windows on small timelines: boundaries, gaps, count windows, clipping, long-lived events."""

from __future__ import annotations

import json

import pytest

from trending.windows.temporal import (
    END_OF_TIME,
    Aggregate,
    CountWindow,
    Cti,
    EndEdge,
    HoppingGeometry,
    HoppingWindow,
    IntervalEvent,
    SnapshotWindow,
    StartEdge,
    TemporalInputError,
    TemporalQuery,
    point_event,
)

from .helpers import S, spans


def hopping(duration: int, hop: int, aggregate: str = "count", snap: bool = False) -> TemporalQuery:
    geometry = HoppingGeometry(duration * S, hop * S)
    if snap:
        return TemporalQuery(SnapshotWindow(Aggregate(aggregate), snap=geometry))
    return TemporalQuery(HoppingWindow(geometry, Aggregate(aggregate)))


def test_point_events_on_window_boundaries() -> None:
    # tumbling 5 s:  |0 . . . . |5 . . . . |10
    #                 p         p p
    # a point at 5 s lies in [5, 10) only; the one just before 5 s in [0, 5) only
    events = [point_event(0, 1), point_event(5 * S - 1, 1), point_event(5 * S, 1)]
    assert spans(hopping(5, 5).run(events)) == [(0, 5, 2), (5, 10, 1)]


def test_point_event_in_overlapping_hopping_windows() -> None:
    # windows [2n, 2n+5): a point at 4 s is in [0, 5), [2, 7), [4, 9), not in [-2, 3)
    assert spans(hopping(5, 2).run([point_event(4 * S, 1)])) == [(0, 5, 1), (2, 7, 1), (4, 9, 1)]


def test_snapshot_boundaries_at_every_edge() -> None:
    # a: [0, 4)  b: [2, 6)  c: [4, 5)   -> [0,2) 1  [2,4) 2  [4,5) 2  [5,6) 1
    events = [
        IntervalEvent(0, 4 * S, 1),
        IntervalEvent(2 * S, 6 * S, 2),
        IntervalEvent(4 * S, 5 * S, 4),
    ]
    query = TemporalQuery(SnapshotWindow(Aggregate("sum")))
    assert spans(query.run(events)) == [(0, 2, 1), (2, 4, 3), (4, 5, 6), (5, 6, 2)]


def test_windows_with_gaps() -> None:
    # windows [3n, 3n+1) with hop 3 s: [0,1) [3,4) [6,7); gaps [1,3) [4,6)
    inside_gap = IntervalEvent(1 * S, 3 * S, 1, "gap")
    spanning = IntervalEvent(S // 2, 6 * S + 1, 1, "long")  # windows 0, 1 and 2
    for snap in (False, True):
        assert hopping(1, 3, snap=snap).run([inside_gap]) == []
    assert spans(hopping(1, 3).run([inside_gap, spanning])) == [(0, 1, 1), (3, 4, 1), (6, 7, 1)]
    # snapped: the results hold over the assignments [1,4) [4,7) [7,10)
    assert spans(hopping(1, 3, snap=True).run([inside_gap, spanning])) == [(1, 10, 1)]


def test_clipped_time_weighted_average() -> None:
    # tumbling 4 s: value 8 over [1, 3) and value 4 over [2, 6)
    # [0,4): (8*2 + 4*2) / 4 = 6;  [4,8): (4*2) / 4 = 2
    events = [IntervalEvent(S, 3 * S, 8), IntervalEvent(2 * S, 6 * S, 4)]
    assert spans(hopping(4, 4, "time_weighted_average").run(events)) == [(0, 4, 6.0), (4, 8, 2.0)]


@pytest.mark.parametrize(
    ("aggregate", "value"),
    [("count", 3), ("sum", 9), ("min", 1), ("max", 5), ("average", 3.0)],
)
def test_aggregates(aggregate: str, value: object) -> None:
    events = [IntervalEvent(0, S, v) for v in (5, 1, 3)]
    assert spans(hopping(1, 1, aggregate).run(events)) == [(0, 1, value)]


def test_top_k() -> None:
    query = TemporalQuery(SnapshotWindow(Aggregate("top_k", k=2)))
    events = [IntervalEvent(0, S, v) for v in (5, 1, 7, 5)]
    assert spans(query.run(events)) == [(0, 1, [7, 5])]


def test_count_window_over_duplicated_start_times() -> None:
    # start times 1, 1, 2, 4, 4, 4, 7 (points); n = 2 distinct start times per window
    # windows [1, 2+1), [2, 4+1), [4, 7+1): points at 2, 4, 7
    times = [1, 1, 2, 4, 4, 4, 7]
    events = [point_event(t * S, 1) for t in times]
    query = TemporalQuery(CountWindow(2, Aggregate("count")))
    assert spans(query.run(events)) == [(2, 2.001, 3), (4, 4.001, 4), (7, 7.001, 4)]


def test_count_window_clips_to_its_last_start_plus_a_tick() -> None:
    # n = 2: e1 [0, 10) and e2 [2, 3): window [0, 2 s + 1 ms); e1 clipped to 2001 ms
    events = [IntervalEvent(0, 10 * S, 1), IntervalEvent(2 * S, 3 * S, 1)]
    query = TemporalQuery(CountWindow(2, Aggregate("time_weighted_average")))
    assert spans(query.run(events)) == [(2, 2.001, (2001 + 1) / 2001)]


def test_count_window_waits_for_the_cti_past_its_last_start() -> None:
    query = TemporalQuery(CountWindow(2, Aggregate("count")))
    state = query.initial_state()
    step = query.step(state, [point_event(0, 1), point_event(S, 1)], S)
    assert step.rows == []  # more events could still start at 1 s
    step = query.step(step.state, [point_event(S, 1)], S + 1)
    assert spans(step.rows) == [(1, 1.001, 3)]


def test_count_window_of_one() -> None:
    query = TemporalQuery(CountWindow(1, Aggregate("sum")))
    events = [point_event(0, 1), point_event(0, 2), point_event(S, 3)]
    assert spans(query.run(events)) == [(0, 0.001, 3), (1, 1.001, 3)]


def test_day_long_edge_under_one_second_hops() -> None:
    day = 86_400 * S
    query = hopping(10, 1, snap=True)
    state = query.initial_state()
    step = query.step(state, [StartEdge(0, 1, "long")], 0)
    rows = []
    for hour in range(1, 25):
        step = query.step(step.state, [point_event(hour * 3600 * S - S, 1)], hour * 3600 * S)
        rows.extend(step.rows)
        assert len(step.state.events()) <= 2  # the open edge and at most one recent point
    step = query.step(step.state, [EndEdge("long", day)], END_OF_TIME)
    rows.extend(step.rows)
    # snapped: the edge [1 s, day + 10 s), each point [h*3600 s, h*3600 s + 10 s): a row with
    # the edge alone before each point and one with both, 48 rows (not 86 410 windows)
    assert len(rows) == 2 * 24
    assert sum(row.end - row.start for row in rows if row.value == 2) == 24 * 10 * S
    assert len(json.dumps(step.state.to_json())) < 200


def test_plain_hopping_refuses_an_event_in_too_many_windows_at_once() -> None:
    query = TemporalQuery(HoppingWindow(HoppingGeometry(S, S), Aggregate("count"), max_windows=100))
    with pytest.raises(TemporalInputError, match=r"falls in 1000 hopping windows.*snap"):
        query.run([StartEdge(0, 1, "e"), EndEdge("e", 1000 * S)])


def test_snapped_time_weighted_average_is_refused() -> None:
    with pytest.raises(ValueError, match="without snap"):
        SnapshotWindow(Aggregate("time_weighted_average"), snap=HoppingGeometry(S, S))


def test_edges_must_match() -> None:
    query = TemporalQuery(SnapshotWindow(Aggregate("count")))
    with pytest.raises(TemporalInputError, match="no open start edge"):
        query.run([EndEdge("x", S)])
    with pytest.raises(TemporalInputError, match="already open"):
        query.run([StartEdge(0, 1, "x"), StartEdge(S, 1, "x")])
    with pytest.raises(TemporalInputError, match="does not end after"):
        query.run([IntervalEvent(S, S, 1)])
    with pytest.raises(TemporalInputError, match="numeric"):
        TemporalQuery(SnapshotWindow(Aggregate("sum"))).run([IntervalEvent(0, S, "x")])


def test_rows_wait_for_the_cti() -> None:
    query = TemporalQuery(SnapshotWindow(Aggregate("count")))
    rows = query.run([IntervalEvent(0, 2 * S, 1), Cti(S), IntervalEvent(S, 3 * S, 1), Cti(2 * S)])
    assert spans(rows) == [(0, 1, 1), (1, 2, 2), (2, 3, 1)]


def test_a_count_window_keeps_its_first_start_times_across_an_early_cti() -> None:
    # n = 4 and a CTI after two start times, both ended: the window [0, 4) still holds them
    query = TemporalQuery(CountWindow(4, Aggregate("count")))
    first = query.step(query.initial_state(), [IntervalEvent(0, 1), IntervalEvent(1, 2)], 2)
    second = query.step(first.state, [IntervalEvent(2, 3), IntervalEvent(3, 4)], 10)
    assert first.rows == []
    assert [(row.start, row.end, row.value) for row in second.rows] == [(3, 4, 4)]
