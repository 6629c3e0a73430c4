"""One SPL window per key, driven by rows and timers: the pure half of the Spark runner.

An engine's stateful operator calls two steps per key, each taking the key's saved
:class:`KeyState` and returning a :class:`Step` (the events, the new state and the timer to
keep):

* :func:`on_rows` with the key's new rows, oldest first, each ``(time_ms, record)``;
* :func:`on_timer` when the timer the previous step asked for has fired.

The window's clock per key (integer ms, see :mod:`.window`) is, by time mode:

* ``"none"``: never moves (count and delta policies only);
* ``"event"``: each row moves it to the row's event time before the row goes in (a row older
  than the clock goes in at the clock: clamped), and a fired timer moves it to
  ``max(timer, watermark)``;
* ``"processing"``: the batch's processing time for rows, ``max(timer, now)`` for timers.

The timer is always the next instant a time policy acts (``window.next_due()``): the next time
trigger or tumbling flush ``k * period``, or the oldest tuple's time eviction ``s + period``;
``None`` when nothing is due (for instance an empty window), so idle empty keys cost nothing.

Each key's window is an ordinary core window whose only partition is the key, so the events
equal those of :func:`build_window` fed the key's rows alone (:func:`pure_inputs`). That window
has ``empty_window_events`` off: SPL's trigger or flush of an empty window belongs to the whole
operator window, not to a key, and a key with no tuples must cost nothing (no timer, no row).

Partition eviction compares partitions with each other (LRU, partition count, tuple count), so
a spec with ``partition_eviction`` runs *whole* (:func:`runs_whole`): one engine key holds the
whole partitioned window, each row goes into the partition of its key column, and the events
equal those of :func:`build_window` fed every row in order (:func:`pure_partitioned_inputs`).
:func:`check_keyed` refuses punctuation (a DataFrame row carries none).

Those steps move a whole snapshot in and out (:func:`split_snapshot` / :func:`join_snapshot`
cut a whole window's into one row per partition). :class:`.stored.StoredWindow` runs the same steps
incrementally over a :class:`WindowStore` (an engine's key-value state), reading only what a
step touches and writing only what it changes; the Spark runner uses it. Its layout and costs
are in its docstring.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from trending.windows.spl.events import EventKind, PartitionKey, Record, WindowEvent
from trending.windows.spl.policies import Policy, Punct, Time
from trending.windows.spl.sliding import SlidingWindow
from trending.windows.spl.spec import SpecError, WindowSpec
from trending.windows.spl.window import Advance, Input, Insert, WindowLogic

TimeMode: TypeAlias = Literal["none", "event", "processing"]
TIME_MODES: tuple[TimeMode, ...] = ("none", "event", "processing")
EVENT_COLUMNS = ("event", "seq", "tuples", "time_ms", "summary")
"""The columns of an event row after the key column (see :func:`event_row`)."""


@dataclass
class KeyState:
    """What a key keeps between batches: the window snapshot, events emitted, the timer."""

    snapshot: dict[str, Any] | None = None
    emitted: int = 0
    timer_ms: int | None = None

    def to_row(self) -> tuple[str | None, int, int | None]:
        """The state-store row ``(snapshot JSON, emitted, timer_ms)``."""
        text = None if self.snapshot is None else json.dumps(self.snapshot, separators=(",", ":"))
        return text, self.emitted, self.timer_ms

    @classmethod
    def from_row(cls, row: Sequence[Any] | None) -> KeyState:
        """Read :meth:`to_row` back; ``None`` (no state yet) is a fresh key."""
        if row is None:
            return cls()
        text, emitted, timer = row
        snapshot = None if text is None else json.loads(text)
        timer_ms = None if timer is None or _is_nan(timer) else int(timer)
        return cls(snapshot, int(emitted), timer_ms)


@dataclass
class Step:
    """The outcome of one step for a key: events fired, new state and timer changes."""

    events: list[WindowEvent] = field(default_factory=list)
    state: KeyState = field(default_factory=KeyState)
    delete_timer: int | None = None
    register_timer: int | None = None


def runs_whole(spec: WindowSpec) -> bool:
    """Whether ``spec`` must run as one whole partitioned window (it evicts partitions)."""
    return spec.window.partition_eviction is not None


def check_keyed(spec: WindowSpec, time_mode: str) -> None:
    """Raise :class:`SpecError` if ``spec`` cannot run in an engine in ``time_mode``."""
    if time_mode not in TIME_MODES:
        raise SpecError(f"time_mode: must be one of {list(TIME_MODES)}, got {time_mode!r}")
    window = spec.window
    policies: list[Policy] = [window.evict]
    if isinstance(window, SlidingWindow):
        policies.append(window.trigger)
    if any(isinstance(p, Punct) for p in policies):
        raise SpecError("evict: punctuation-based windows need punctuations, which rows lack")
    if time_mode == "none" and any(isinstance(p, Time) for p in policies):
        raise SpecError("a time policy needs time_mode 'event' or 'processing', not 'none'")


def build_window(spec: WindowSpec, snapshot: Mapping[str, Any] | None = None) -> WindowLogic:
    """``spec.build(snapshot)`` with ``empty_window_events`` off (see the module doc)."""
    window = spec.build(snapshot)
    window.empty_window_events = False
    return window


def on_rows(
    spec: WindowSpec,
    key: PartitionKey,
    state: KeyState,
    rows: Iterable[tuple[int | None, Record]],
    clock_ms: int | None = None,
) -> Step:
    """Insert ``rows`` (oldest first) into ``key``'s window.

    A row's ``time_ms`` (event time) moves the clock first, clamped to the clock; ``None``
    leaves it. ``clock_ms`` (processing time) moves the clock once, before the first row.
    """
    keyed = ((time_ms, key, record) for time_ms, record in rows)
    return on_partitioned_rows(spec, state, keyed, clock_ms)


def on_partitioned_rows(
    spec: WindowSpec,
    state: KeyState,
    rows: Iterable[tuple[int | None, PartitionKey, Record]],
    clock_ms: int | None = None,
) -> Step:
    """Insert ``rows`` ``(time_ms, partition, record)``, oldest first, into one window whose
    partitions they name (a window that :func:`runs_whole`); clock as :func:`on_rows`."""
    window = build_window(spec, state.snapshot)
    return _finish(window, state, feed_rows(window, rows, clock_ms))


def feed_rows(
    window: WindowLogic,
    rows: Iterable[tuple[int | None, PartitionKey, Record]],
    clock_ms: int | None,
) -> list[WindowEvent]:
    """The clock rules of :func:`on_rows`, then each row into its partition."""
    events: list[WindowEvent] = []
    if clock_ms is not None:
        events += window.advance_to(max(clock_ms, window.now_ms))
    for time_ms, key, record in rows:
        if time_ms is not None and time_ms > window.now_ms:
            events += window.advance_to(time_ms)
        events += window.insert(record, key)
    return events


def split_snapshot(snapshot: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """A window snapshot as ``(window-level part, {partition id: partition JSON})``.

    The partition id is the JSON of its key; the window-level part keeps the partitions'
    order (creation order, which orders events across partitions) as a list of ids.
    """
    parts = {compact_json(part["key"]): compact_json(part) for part in snapshot["partitions"]}
    meta = {name: value for name, value in snapshot.items() if name != "partitions"}
    meta["order"] = list(parts)
    return meta, parts


def join_snapshot(meta: Mapping[str, Any], parts: Mapping[str, str]) -> dict[str, Any]:
    """Inverse of :func:`split_snapshot`."""
    snapshot = {name: value for name, value in meta.items() if name != "order"}
    snapshot["partitions"] = [json.loads(parts[pid]) for pid in meta["order"]]
    return snapshot


def on_timer(spec: WindowSpec, state: KeyState, fired_ms: int, now_ms: int | None = None) -> Step:
    """The timer at ``fired_ms`` fired: move the clock to ``max(fired_ms, now_ms, clock)``."""
    window = build_window(spec, state.snapshot)
    fired = KeyState(state.snapshot, state.emitted, None)  # a fired timer is gone
    target = max(fired_ms, window.now_ms, -1 if now_ms is None else now_ms)
    return _finish(window, fired, window.advance_to(target))


def _finish(window: WindowLogic, before: KeyState, events: list[WindowEvent]) -> Step:
    due = window.next_due()
    state = KeyState(window.snapshot(), before.emitted + len(events), due)
    step = Step(events, state)
    if due != before.timer_ms:
        step.delete_timer, step.register_timer = before.timer_ms, due
    return step


WINDOW_EVENTS = frozenset({EventKind.TRIGGER, EventKind.INITIAL_FULL})
"""The events whose tuples are the window content that stays in the window; every other
event carries the tuples entering or leaving it (each tuple once in, at most once out)."""


def event_row(
    key: Any,
    event: WindowEvent,
    seq: int,
    key_column: str = "key",
    include_window: bool = True,
) -> dict[str, Any]:
    """An output row: the key, ``event`` kind, per-key ``seq``, ``tuples`` JSON, time, summary.

    ``seq`` numbers a key's events from 0 in the order they fired, across batches and
    restarts, so a sink can restore the order Spark does not keep. ``include_window=False``
    leaves ``tuples`` out (``None``) on :data:`WINDOW_EVENTS`.
    """
    summary = None if event.summary is None else compact_json(dict(event.summary))
    content = include_window or event.kind not in WINDOW_EVENTS
    return {
        key_column: key,
        "event": event.kind.value,
        "seq": seq,
        "tuples": compact_json([dict(record) for record in event.tuples]) if content else None,
        "time_ms": event.time_ms,
        "summary": summary,
    }


def to_record(row: Mapping[str, Any]) -> dict[str, Any]:
    """A DataFrame row as a JSON-able tuple: numpy scalars to Python, NaN/NaT to ``None``,
    datetimes to epoch milliseconds."""
    return {str(name): plain_value(value) for name, value in row.items()}


def plain_value(value: Any) -> Any:
    """One value as plain JSON-able Python (see :func:`to_record`)."""
    if value is None or isinstance(value, bool | str | int):
        return value
    if isinstance(value, float):
        return None if math.isnan(value) else value
    if isinstance(value, dt.datetime):
        if str(value) == "NaT":  # pandas' missing timestamp is a datetime
            return None
        aware = value if value.tzinfo else value.replace(tzinfo=dt.timezone.utc)
        return round(aware.timestamp() * 1000)
    item = getattr(value, "item", None)  # numpy scalars
    if callable(item):
        return plain_value(item())
    if isinstance(value, list | tuple):
        return [plain_value(v) for v in value]
    if isinstance(value, Mapping):
        return to_record(value)
    return str(value)


def pure_inputs(key: PartitionKey, rows: Iterable[tuple[int | None, Record]]) -> list[Input]:
    """The core inputs equivalent to feeding ``rows`` of ``key`` to :func:`on_rows`."""
    return pure_partitioned_inputs((time_ms, key, record) for time_ms, record in rows)


def pure_partitioned_inputs(
    rows: Iterable[tuple[int | None, PartitionKey, Record]],
) -> list[Input]:
    """The core inputs equivalent to feeding ``rows`` to :func:`on_partitioned_rows`."""
    inputs: list[Input] = []
    clock = 0
    for time_ms, key, record in rows:
        if time_ms is not None and time_ms > clock:
            clock = time_ms
            inputs.append(Advance(time_ms))
        inputs.append(Insert(record, key))
    return inputs


def compact_json(value: Any) -> str:
    """``value`` as JSON without spaces (non-JSON values by ``str``)."""
    return _COMPACT(value)


_COMPACT = json.JSONEncoder(separators=(",", ":"), default=str).encode


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)
