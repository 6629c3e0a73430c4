"""``FindReadings``, the seed's SensorQuery operator, on the core's SPL sliding window.

Rules (the seed's, with the choices it leaves open made explicit):

* **Window.** Readings go into a :class:`~trending.windows.spl.SlidingWindow` with
  ``count(size)`` eviction and ``count(1)`` trigger: it holds the last ``size`` readings. With
  ``partition_by_sensor`` the window is partitioned by ``sensor_id``: the last ``size``
  readings of each sensor. A reading arriving at a full window (partition) first evicts the
  oldest one (``before_evict``), then goes in (``after_insert``).
* **Matching.** A query matches every reading in the window (all partitions) with
  ``sqrt(dx*dx + dy*dy) <= distance``, ``dx = x_reading - x_query``, ``dy`` alike, in float64.
  It emits one :class:`Match` per matching reading, oldest reading first (arrival order,
  across partitions), and adds one to each matched reading's count.
* **Popular readings.** On a reading's ``before_evict`` event: if it was matched ``m`` times,
  ``m >= 1`` and ``m >= threshold``, a :class:`PopularReading` with ``matches = m`` is emitted.
  Readings still in the window are not reported.
* **Index.** A grid of cells ``(floor(x / cell_size), floor(y / cell_size))`` holds the
  window's readings, added on ``after_insert`` and removed on ``before_evict``, so a query
  reads only the cells its circle's bounding box touches (or, when that box spans more cells
  than are occupied, the occupied cells inside it), not the whole window.
* **Order.** The operator applies records in the order it is given them; :func:`apply_in_order`
  sorts both inputs the job's way (:func:`in_order`).

State goes out with :meth:`FindReadings.snapshot` (JSON-able) and back with
``FindReadingsConfig.build(snapshot)``; the grid is rebuilt from the window.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any, NamedTuple

from trending.windows.spl import Count, EventKind, InputError, SlidingWindow
from trending.windows.spl.events import Record

SNAPSHOT_VERSION = 1
KIND = "find_readings"
_FAR = 1 << 1024  # beyond floor() of any finite double: the cell of an overflowed coordinate


class Match(NamedTuple):
    """A reading within a query's distance (schema ``sensor_match``)."""

    query_id: int
    sensor_id: int
    value: float
    reading_ts: int
    query_ts: int


class PopularReading(NamedTuple):
    """A reading evicted after ``matches >= threshold`` matches (schema ``popular_reading``)."""

    sensor_id: int
    x: float
    y: float
    value: float
    ts: int
    matches: int


class Side(IntEnum):
    """The input port a record arrives on; at equal ``ts`` readings come first."""

    READING = 0
    QUERY = 1


@dataclass(frozen=True)
class FindReadingsConfig:
    """The operator's parameters: ``size`` readings kept (per sensor if ``partition_by_sensor``),
    the popularity ``threshold`` and the grid's ``cell_size``."""

    size: int = 100
    threshold: int = 3
    partition_by_sensor: bool = False
    cell_size: float = 0.05

    def __post_init__(self) -> None:
        if not _is_int(self.size) or self.size < 1:
            raise ValueError(f"size must be an integer >= 1, got {self.size!r}")
        if not _is_int(self.threshold) or self.threshold < 0:
            raise ValueError(f"threshold must be an integer >= 0, got {self.threshold!r}")
        if not _is_finite(self.cell_size) or self.cell_size <= 0:
            raise ValueError(f"cell_size must be a finite number > 0, got {self.cell_size!r}")

    def window(self) -> SlidingWindow:
        """The seed's window: ``count(size)`` eviction, ``count(1)`` trigger."""
        return SlidingWindow(evict=Count(self.size), trigger=Count(1))

    def build(self, snapshot: Mapping[str, Any] | None = None) -> FindReadings:
        """A running operator, empty or continuing from ``snapshot``."""
        return FindReadings(self, snapshot)


class Grid:
    """The readings of a window by cell ``(floor(x / cell), floor(y / cell))``."""

    def __init__(self, cell: float) -> None:
        self.cell = cell
        self.cells: dict[tuple[int, int], dict[int, Record]] = {}

    def index(self, value: float) -> int:
        """``floor(value / cell)``, or ``±2^1024`` when that quotient overflows."""
        scaled = value / self.cell
        if math.isinf(scaled):
            return _FAR if scaled > 0 else -_FAR
        return math.floor(scaled)

    def add(self, reading: Record) -> None:
        key = (self.index(reading["x"]), self.index(reading["y"]))
        self.cells.setdefault(key, {})[reading["seq"]] = reading

    def remove(self, reading: Record) -> None:
        key = (self.index(reading["x"]), self.index(reading["y"]))
        cell = self.cells[key]
        del cell[reading["seq"]]
        if not cell:
            del self.cells[key]

    def near(self, x: float, y: float, distance: float) -> Iterator[Record]:
        """Every reading in a cell that the box ``[x ± distance] x [y ± distance]`` touches.

        The box is widened by a rounding margin (``1e-9`` relative, ``1e-150`` absolute), so a
        reading that passes the float64 distance test is never left out.
        """
        margin = 1e-9 * (abs(x) + abs(y) + distance) + 1e-150
        reach = distance + margin
        lo_x, hi_x = self.index(x - reach), self.index(x + reach)
        lo_y, hi_y = self.index(y - reach), self.index(y + reach)
        if (hi_x - lo_x + 1) * (hi_y - lo_y + 1) > len(self.cells):
            keys: Iterable[tuple[int, int]] = [
                (cx, cy) for cx, cy in self.cells if lo_x <= cx <= hi_x and lo_y <= cy <= hi_y
            ]
        else:
            keys = ((cx, cy) for cx in range(lo_x, hi_x + 1) for cy in range(lo_y, hi_y + 1))
        for key in keys:
            found = self.cells.get(key)
            if found:
                yield from found.values()


class FindReadings:
    """The running operator; see the module docstring for its rules.

    ``on_reading`` returns the popular readings its eviction emitted, ``on_query`` the
    matches; both raise :class:`~trending.windows.spl.InputError` (leaving the state as it
    was) for a record without the schema's fields or with non-finite coordinates.
    """

    def __init__(
        self,
        config: FindReadingsConfig | None = None,
        snapshot: Mapping[str, Any] | None = None,
    ) -> None:
        self.config = config = config or FindReadingsConfig()
        state = _read_snapshot(snapshot, config) if snapshot is not None else None
        self._window = config.window().build(state["window"] if state else None)
        self._matched: dict[int, int] = dict(state["matched"]) if state else {}
        self._next_seq: int = state["next_seq"] if state else 0
        self._grid = Grid(config.cell_size)
        for reading in self._held():
            self._grid.add(reading)

    def on_reading(self, reading: Mapping[str, Any]) -> list[PopularReading]:
        """Insert ``reading`` (evicting the oldest of a full window first)."""
        record = _reading_record(reading, self._next_seq)
        self._next_seq += 1
        partition = record["sensor_id"] if self.config.partition_by_sensor else None
        popular: list[PopularReading] = []
        for event in self._window.insert(record, partition):
            if event.kind is EventKind.BEFORE_EVICT:
                popular.extend(self._evicted(event.tuples[0]))
            elif event.kind is EventKind.AFTER_INSERT:
                self._grid.add(event.tuples[0])
        return popular

    def _evicted(self, reading: Record) -> list[PopularReading]:
        """``before_evict``: leave the grid; popular if matched ``>= max(1, threshold)`` times."""
        self._grid.remove(reading)
        matches = self._matched.pop(reading["seq"], 0)
        if matches < max(1, self.config.threshold):
            return []
        r = reading
        return [PopularReading(r["sensor_id"], r["x"], r["y"], r["value"], r["ts"], matches)]

    def on_query(self, query: Mapping[str, Any]) -> list[Match]:
        """The matches of ``query``, oldest reading first; each matched reading counts one."""
        query_id, x, y, distance, ts = _query_fields(query)
        found = [r for r in self._grid.near(x, y, distance) if _within(r, x, y, distance)]
        found.sort(key=lambda r: r["seq"])
        matched = self._matched
        for reading in found:
            matched[reading["seq"]] = matched.get(reading["seq"], 0) + 1
        return [Match(query_id, r["sensor_id"], r["value"], r["ts"], ts) for r in found]

    def apply(self, side: Side, record: Mapping[str, Any]) -> list[Match] | list[PopularReading]:
        """``on_reading`` or ``on_query`` by ``side``."""
        return self.on_reading(record) if side is Side.READING else self.on_query(record)

    def readings(self) -> list[dict[str, Any]]:
        """The readings in the window (all partitions), oldest first."""
        return [{k: v for k, v in r.items() if k != "seq"} for r in self._held()]

    def _held(self) -> list[Record]:
        window = self._window
        held = [r for key in window.partitions() for r in window.content(key)]
        return sorted(held, key=lambda r: r["seq"])

    def snapshot(self) -> dict[str, Any]:
        """The state as JSON-able data: the window's snapshot, match counts, next sequence."""
        return {
            "version": SNAPSHOT_VERSION,
            "kind": KIND,
            "size": self.config.size,
            "partition_by_sensor": self.config.partition_by_sensor,
            "window": self._window.snapshot(),
            "matched": sorted(self._matched.items()),
            "next_seq": self._next_seq,
        }


@dataclass
class Outputs:
    """What the operator emitted: matches and popular readings, each in emission order."""

    matches: list[Match] = field(default_factory=list)
    popular: list[PopularReading] = field(default_factory=list)


def in_order(
    readings: Iterable[Mapping[str, Any]], queries: Iterable[Mapping[str, Any]]
) -> list[tuple[Side, Mapping[str, Any]]]:
    """Both inputs in the job's order: by ``ts``, readings before queries at equal ``ts``,
    then by ``(partition, offset)`` when the records carry them, else in input order."""
    tagged = [(Side.READING, r) for r in readings] + [(Side.QUERY, q) for q in queries]
    return sorted(tagged, key=_order_key)  # stable: ties keep input order


def _order_key(item: tuple[Side, Mapping[str, Any]]) -> tuple[int, int, int, int]:
    side, record = item
    return record["ts"], side, record.get("partition", 0), record.get("offset", 0)


def apply_in_order(
    readings: Iterable[Mapping[str, Any]],
    queries: Iterable[Mapping[str, Any]],
    finder: FindReadings | None = None,
) -> Outputs:
    """Feed both inputs to ``finder`` (default: the seed's ``size=100, threshold=3``) in the
    order of :func:`in_order`; what it emitted."""
    finder = finder or FindReadings()
    out = Outputs()
    for side, record in in_order(readings, queries):
        if side is Side.READING:
            out.popular.extend(finder.on_reading(record))
        else:
            out.matches.extend(finder.on_query(record))
    return out


def _within(reading: Record, x: float, y: float, distance: float) -> bool:
    dx, dy = reading["x"] - x, reading["y"] - y
    return math.sqrt(dx * dx + dy * dy) <= distance


def _reading_record(reading: Mapping[str, Any], seq: int) -> dict[str, Any]:
    """The window's tuple for ``reading``: its fields plus an arrival number ``seq``."""
    try:
        record = {
            "seq": seq,
            "sensor_id": _int(reading["sensor_id"], "sensor_id"),
            "x": _coordinate(reading["x"], "x"),
            "y": _coordinate(reading["y"], "y"),
            "value": _number(reading["value"], "value"),
            "ts": _int(reading["ts"], "ts"),
        }
    except KeyError as missing:
        raise InputError(f"a reading needs {missing}") from None
    return record


def _query_fields(query: Mapping[str, Any]) -> tuple[int, float, float, float, int]:
    try:
        distance = _coordinate(query["distance"], "distance")
        if distance < 0:
            raise InputError(f"distance must be >= 0, got {distance!r}")
        x, y = _coordinate(query["x"], "x"), _coordinate(query["y"], "y")
        return _int(query["query_id"], "query_id"), x, y, distance, _int(query["ts"], "ts")
    except KeyError as missing:
        raise InputError(f"a query needs {missing}") from None


def _int(value: Any, name: str) -> int:
    if not _is_int(value):
        raise InputError(f"{name} must be an integer, got {value!r}")
    return int(value)


def _number(value: Any, name: str) -> float:
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise InputError(f"{name} must be a number, got {value!r}")
    return float(value)


def _coordinate(value: Any, name: str) -> float:
    if not _is_finite(value):
        raise InputError(f"{name} must be a finite number, got {value!r}")
    return float(value)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_finite(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _read_snapshot(data: Mapping[str, Any], config: FindReadingsConfig) -> dict[str, Any]:
    """The parts of a :meth:`FindReadings.snapshot`; ``ValueError`` if it is not one of a
    window of this size and partitioning."""
    if data.get("version") != SNAPSHOT_VERSION or data.get("kind") != KIND:
        raise ValueError(f"not a {KIND} snapshot of version {SNAPSHOT_VERSION}")
    shape = (data.get("size"), data.get("partition_by_sensor"))
    if shape != (config.size, config.partition_by_sensor):
        raise ValueError(f"snapshot of (size, partition_by_sensor) {shape} given to {config}")
    try:
        matched = [(int(seq), int(n)) for seq, n in data["matched"]]
        return {"window": data["window"], "matched": matched, "next_seq": int(data["next_seq"])}
    except (KeyError, TypeError, ValueError) as error:
        raise ValueError(f"malformed {KIND} snapshot: {error!r}") from error
