"""Property tests: HoppingWindow2 against a brute-force hopping window, count windows against a
brute force over distinct start times, and batching never matters.

The brute force below is written from the definition (windows ``[a + n*p, a + n*p + d)``, an
event in every window it intersects, window ``n`` reported over ``[end(n), end(n) + p)``), not
from the core's formulas.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from trending.windows.temporal import (
    END_OF_TIME,
    Aggregate,
    Alteration,
    AlteredEvents,
    CountWindow,
    Cti,
    EndEdge,
    HoppingGeometry,
    HoppingWindow,
    IntervalEvent,
    Row,
    SnapshotWindow,
    StartEdge,
    TemporalQuery,
    TemporalWindow,
)
from trending.windows.temporal.events import Item

PROPERTIES = settings(max_examples=200, deadline=None)
HORIZON = 60


@dataclass(frozen=True)
class Event:
    start: int
    end: int | None  # None: a start edge never closed
    value: int
    edge: bool  # arrives as a start edge (+ an end edge if it has an end)


EVENTS = st.lists(
    st.builds(
        lambda start, length, value, edge, open_: Event(
            start, None if open_ else start + length, value, edge or open_
        ),
        st.integers(0, HORIZON),
        st.integers(1, 15),
        st.integers(-5, 9),
        st.booleans(),
        st.integers(0, 9).map(lambda x: x == 0),
    ),
    max_size=12,
)
GEOMETRY = st.tuples(st.integers(1, 8), st.integers(1, 8), st.integers(0, 20))
AGGREGATES = st.sampled_from(["count", "sum", "min", "max"])


def end_of(event: Event) -> int:
    return END_OF_TIME if event.end is None else event.end


def brute_force_at(events: list[Event], t: int, d: int, p: int, a: int, aggregate: str) -> Any:
    """The hopping result holding at instant ``t``: window n with end(n) <= t < end(n) + p."""
    n = next(n for n in range(-100, 100) if a + n * p + d <= t < a + n * p + d + p)
    start, end = a + n * p, a + n * p + d
    values = [e.value for e in events if e.start < end and end_of(e) > start]
    if not values:
        return None
    return {"count": len(values), "sum": sum(values), "min": min(values), "max": max(values)}[
        aggregate
    ]


def value_at(rows: list[Row], t: int) -> Any:
    held = [row.value for row in rows if row.start <= t < row.end]
    assert len(held) <= 1, f"rows overlap at {t}"
    return held[0] if held else None


def in_order(events: list[Event], ctis: list[int]) -> list[Item | Cti]:
    """Events as edges or intervals, end edges soon after, CTIs never behind an input."""
    timed: list[tuple[int, int, Item | Cti]] = []
    for number, event in enumerate(events):
        name = f"e{number}"
        if not event.edge:
            timed.append((event.start, 1, IntervalEvent(event.start, end_of(event), event.value)))
            continue
        timed.append((event.start, 1, StartEdge(event.start, event.value, name)))
        if event.end is not None:
            timed.append(((event.start + event.end) // 2, 2, EndEdge(name, event.end)))
    timed.extend((cti, 0, Cti(cti)) for cti in ctis)
    return [item for _, _, item in sorted(timed, key=lambda entry: entry[:2])]


@PROPERTIES
@given(EVENTS, GEOMETRY, AGGREGATES, st.lists(st.integers(0, HORIZON), max_size=4))
def test_hopping_window_2_matches_brute_force_at_every_instant(
    events: list[Event], geometry: tuple[int, int, int], aggregate: str, ctis: list[int]
) -> None:
    d, p, a = geometry
    window = SnapshotWindow(Aggregate(aggregate), snap=HoppingGeometry(d, p, a))
    rows = TemporalQuery(window).run(in_order(events, ctis))
    for t in range(-20, HORIZON + 40):
        assert value_at(rows, t) == brute_force_at(events, t, d, p, a, aggregate), t


@PROPERTIES
@given(EVENTS, GEOMETRY, AGGREGATES)
def test_plain_hopping_rows_are_the_brute_force_windows(
    events: list[Event], geometry: tuple[int, int, int], aggregate: str
) -> None:
    d, p, a = geometry
    finite = [e for e in events if e.end is not None]
    rows = TemporalQuery(HoppingWindow(HoppingGeometry(d, p, a), Aggregate(aggregate))).run(
        in_order(finite, [])
    )
    expected = []
    for n in range(-100, 100):
        t = a + n * p + d  # the window reported at its end
        if (value := brute_force_at(finite, t, d, p, a, aggregate)) is not None:
            expected.append(Row(a + n * p, a + n * p + d, value))
    assert rows == expected


def windows() -> st.SearchStrategy[TemporalQuery]:
    hopping = st.builds(
        lambda g, snap: (
            SnapshotWindow(Aggregate("sum"), snap=HoppingGeometry(*g))
            if snap
            else HoppingWindow(HoppingGeometry(*g), Aggregate("time_weighted_average"))
        ),
        GEOMETRY,
        st.booleans(),
    )
    window: st.SearchStrategy[TemporalWindow] = st.one_of(
        hopping,
        st.just(SnapshotWindow(Aggregate("top_k", k=2))),
        st.integers(1, 4).map(lambda n: CountWindow(n, Aggregate("average"))),
        st.just(AlteredEvents()),
    )
    alteration = st.builds(
        Alteration,
        shift=st.integers(-5, 5),
        extend=st.integers(0, 4),
        clip=st.none() | st.integers(1, 10),
    ) | st.builds(Alteration, duration=st.integers(1, 6))
    return st.builds(TemporalQuery, window, alteration)


@PROPERTIES
@given(
    windows(),
    EVENTS,
    st.lists(st.integers(0, HORIZON), max_size=6),
    st.lists(st.integers(0, HORIZON), max_size=6),
    st.randoms(use_true_random=False),
)
def test_ctis_batches_and_state_round_trips_do_not_change_results(
    query: TemporalQuery, events: list[Event], ctis: list[int], other_ctis: list[int], rnd: Any
) -> None:
    if isinstance(query.window, HoppingWindow) and query.alteration.cap(0) == END_OF_TIME:
        events = [e for e in events if e.end is not None]  # forever: a window per hop
    whole = sorted_rows(query.run(in_order(events, [])))
    assert sorted_rows(query.run(in_order(events, other_ctis))) == whole
    state, rows = query.initial_state(), []
    for items, cti in batches(in_order(events, ctis), rnd):
        step = query.step(state, items, cti)
        rows.extend(step.rows)
        state = query.restore(json.loads(json.dumps(step.state.to_json())))
        assert state == step.state
    rows.extend(query.step(state, [], END_OF_TIME).rows)
    assert sorted_rows(rows) == whole


def batches(inputs: list[Item | Cti], rnd: Any) -> list[tuple[list[Item], int | None]]:
    """Steps: items up to each CTI (itself the step's CTI), cut at random places as well."""
    steps: list[tuple[list[Item], int | None]] = [([], None)]
    for item in inputs:
        if isinstance(item, Cti):
            steps[-1] = (steps[-1][0], item.time)
            steps.append(([], None))
        else:
            if rnd.random() < 0.3:
                steps.append(([], None))
            steps[-1][0].append(item)
    return steps


def sorted_rows(rows: list[Row]) -> list[Row]:
    return sorted(rows, key=lambda row: (row.start, row.end, json.dumps(row.value)))


@PROPERTIES
@given(
    st.lists(
        st.tuples(st.integers(0, HORIZON), st.integers(1, 15), st.integers(-5, 9)), max_size=14
    ),
    st.integers(1, 5),
    st.sampled_from(["count", "sum", "max"]),
)
def test_count_windows_equal_a_brute_force_over_distinct_start_times(
    spans: list[tuple[int, int, int]], n: int, aggregate: str
) -> None:
    # from the seed: window j spans the distinct start times t_j .. t_{j+n-1}, holds the events
    # starting there, and is reported as the point [t_{j+n-1}, t_{j+n-1} + 1)
    starts = sorted({start for start, _, _ in spans})
    expected = []
    for j in range(len(starts) - n + 1):
        first, last = starts[j], starts[j + n - 1]
        values = [value for start, _, value in spans if first <= start <= last]
        result = {"count": len(values), "sum": sum(values), "max": max(values)}[aggregate]
        expected.append((last, last + 1, result))
    query = TemporalQuery(CountWindow(n, Aggregate(aggregate)))
    events = [IntervalEvent(start, start + length, value) for start, length, value in spans]
    rows = query.run(sorted(events, key=lambda e: e.start))
    assert [(row.start, row.end, row.value) for row in rows] == expected
