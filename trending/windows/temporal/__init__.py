"""StreamInsight's temporal windows over interval events, as a pure core (no Spark, no Kafka).

Time is integer milliseconds (a tick is 1 ms); lifetimes are half-open ``[s, e)``; the end of
time is :data:`END_OF_TIME`. Formulas (``floor_to(t, r, p)`` = the largest ``t' <= t`` with
``t' = r + n*p``):

* hopping window ``n`` (duration ``d``, hop ``p``, alignment ``a``): ``[a + n*p, a + n*p + d)``;
  tumbling: ``p = d``. An event falls in the windows it intersects, clipped to each:
  ``[max(s, ws), min(e, we))``.
* snapping (HoppingWindow2): ``s' = floor_to(s, a + d, p) + p``,
  ``e' = floor_to(e - 1, a, p) + p + d``; window ``n``'s result then holds over its assignment
  ``[a + n*p + d, a + n*p + d + p)``; ``s' >= e'`` (an event in a gap) means no window.
* snapshot windows: between consecutive event start/end times, one row per non-empty span.
* count windows: ``[t_j, t_{j+n-1} + 1)`` over ``n`` distinct start times, output as the point
  ``[t_{j+n-1}, t_{j+n-1} + 1)``.
* alteration: ``s' = s + shift``, ``e' = s' + duration`` or ``e + shift + extend``, then
  ``min(e', s' + clip)``; CTIs move by ``shift``.
* time-weighted average: ``sum(value * clipped_length) / window_length``.

Usage, per key::

    query = TemporalQuery(SnapshotWindow(Aggregate("count"), snap=HoppingGeometry(5000, 2000)))
    step = query.step(query.initial_state(), [StartEdge(0, "e0", id="e0")], cti=10_000)
    step.rows, step.state.to_json()     # final rows; the state to store

Modules: :mod:`.timeline`, :mod:`.events`, :mod:`.lifetime`, :mod:`.aggregates`,
:mod:`.geometry`, :mod:`.hopping`, :mod:`.snapshot`, :mod:`.count`, :mod:`.altered`,
:mod:`.state`, :mod:`.query`, :mod:`.spec`.
"""

from trending.windows.temporal.aggregates import Aggregate
from trending.windows.temporal.altered import AlteredEvents
from trending.windows.temporal.count import CountWindow
from trending.windows.temporal.events import (
    Cti,
    EndEdge,
    IntervalEvent,
    Item,
    Row,
    StartEdge,
    TemporalInputError,
    point_event,
)
from trending.windows.temporal.geometry import HoppingGeometry
from trending.windows.temporal.hopping import HoppingWindow
from trending.windows.temporal.lifetime import Alteration, CtiViolation, ViolationPolicy
from trending.windows.temporal.query import Step, TemporalLogic, TemporalQuery, TemporalWindow
from trending.windows.temporal.snapshot import SnapshotWindow
from trending.windows.temporal.state import StoredEvent, TemporalState
from trending.windows.temporal.timeline import (
    BEGINNING_OF_TIME,
    END_OF_TIME,
    TICK,
    format_time_ms,
    parse_time_ms,
)

__all__ = [
    "BEGINNING_OF_TIME",
    "END_OF_TIME",
    "TICK",
    "Aggregate",
    "Alteration",
    "AlteredEvents",
    "CountWindow",
    "Cti",
    "CtiViolation",
    "EndEdge",
    "HoppingGeometry",
    "HoppingWindow",
    "IntervalEvent",
    "Item",
    "Row",
    "SnapshotWindow",
    "StartEdge",
    "Step",
    "StoredEvent",
    "TemporalInputError",
    "TemporalLogic",
    "TemporalQuery",
    "TemporalState",
    "TemporalWindow",
    "ViolationPolicy",
    "format_time_ms",
    "parse_time_ms",
    "point_event",
]
