"""Lifetime alteration (seed 004): shifts, durations, clips, CTI violations and their policies."""

from __future__ import annotations

import pytest

from trending.windows.temporal import (
    END_OF_TIME,
    Alteration,
    AlteredEvents,
    Cti,
    CtiViolation,
    EndEdge,
    IntervalEvent,
    StartEdge,
    TemporalQuery,
    ViolationPolicy,
)
from trending.windows.temporal.events import Item

from .helpers import S, spans


def altered(policy: str = "fail", **alteration: int) -> TemporalQuery:
    return TemporalQuery(AlteredEvents(), Alteration(**alteration), ViolationPolicy(policy))


def test_shift_moves_events_and_ctis_together() -> None:
    # shifting by -10 s keeps an in-order stream in order: the CTI moves with the events
    query = altered(shift=-10 * S)
    rows = query.run([IntervalEvent(20 * S, 30 * S, "a"), Cti(25 * S), StartEdge(25 * S, "b", "b")])
    assert spans(rows) == [(10, 20, "a"), (15, "EOT", "b")]


def test_fixed_duration_needs_no_end_edges() -> None:
    # the loophole: a fixed duration ends every event at start + 3 s, end edges are ignored,
    # so an end edge behind the CTI is no violation
    query = altered(duration=3 * S)
    items: list[Item | Cti] = [StartEdge(0, "a", "a"), Cti(10 * S), EndEdge("a", S)]
    assert spans(query.run(items)) == [(0, 3, "a")]


def test_extend_and_clip() -> None:
    query = altered(extend=2 * S, clip=5 * S)
    items: list[Item | Cti] = [IntervalEvent(0, S, "short"), IntervalEvent(0, 9 * S, "long")]
    assert spans(query.run(items)) == [(0, 3, "short"), (0, 5, "long")]


def test_clipped_edge_closes_at_its_clip() -> None:
    # an edge clipped to 2 s is final once the CTI passes 2 s; its late end edge is ignored
    query = altered(clip=2 * S)
    rows = query.run([StartEdge(0, "e", "e"), Cti(5 * S), EndEdge("e", 7 * S)])
    assert spans(rows) == [(0, 2, "e")]


def test_negative_extension_can_vanish_an_event() -> None:
    query = altered(extend=-2 * S)
    assert spans(query.run([IntervalEvent(0, S, "gone"), IntervalEvent(0, 3 * S, "kept")])) == [
        (0, 1, "kept")
    ]


def test_end_of_time_stays_the_end_of_time() -> None:
    query = altered(shift=-S, extend=-S)
    assert [row.end for row in query.run([StartEdge(5 * S, "a", "a")])] == [END_OF_TIME]


LATE_START: list[Item | Cti] = [
    IntervalEvent(0, 4 * S, "early"),
    Cti(2 * S),
    IntervalEvent(S, 3 * S, "late"),
]


def test_late_start_fails_naming_the_event() -> None:
    late = [IntervalEvent(0, 4 * S, "early"), Cti(2 * S), IntervalEvent(S, 3 * S, "late", "e7")]
    with pytest.raises(
        CtiViolation, match=r"event 'e7' starts at 1970-01-01T00:00:01.000Z, before"
    ):
        altered().run(late)


def test_late_start_dropped_and_counted() -> None:
    query = altered("drop")
    step = query.step(query.initial_state(), [IntervalEvent(0, 4 * S, "early")], 2 * S)
    step = query.step(step.state, [IntervalEvent(S, 3 * S, "late")], None)
    assert step.dropped == 1
    assert spans(altered("drop").run(LATE_START)) == [(0, 4, "early")]


def test_late_start_adjusted_to_the_cti() -> None:
    query = altered("adjust")
    assert spans(query.run(LATE_START)) == [(0, 4, "early"), (2, 3, "late")]
    step = query.step(query.initial_state(2 * S), [IntervalEvent(0, S, "all late")], None)
    assert (step.dropped, step.adjusted) == (1, 0)  # nothing left after the CTI


# a duration change (seed 004): an end edge pulled 3 s earlier lands behind the CTI
SHORTENED: list[Item | Cti] = [StartEdge(0, "e", "e"), Cti(4 * S), EndEdge("e", 5 * S)]


def test_late_end_edge_fails() -> None:
    with pytest.raises(CtiViolation, match=r"end edge 'e' ends at 1970-01-01T00:00:02\.000Z"):
        altered(extend=-3 * S).run(SHORTENED)


def test_late_end_edge_dropped_keeps_the_committed_lifetime() -> None:
    assert spans(altered("drop", extend=-3 * S).run(SHORTENED)) == [(0, "EOT", "e")]


def test_late_end_edge_adjusted_to_the_cti() -> None:
    assert spans(altered("adjust", extend=-3 * S).run(SHORTENED)) == [(0, 4, "e")]


def test_edge_of_a_dropped_start_is_ignored() -> None:
    query = altered("drop")
    rows = query.run(
        [Cti(5 * S), StartEdge(S, "late", "x"), EndEdge("x", 9 * S), StartEdge(6 * S, "ok", "x")]
    )
    assert spans(rows) == [(6, "EOT", "ok")]


def test_alteration_checks() -> None:
    with pytest.raises(ValueError, match="not both"):
        Alteration(duration=S, extend=S)
    with pytest.raises(ValueError, match="positive"):
        Alteration(clip=0)
