"""The per-key state of a temporal query, and its versioned plain-JSON snapshot.

The state holds only what can still change an output:

* ``closed``: events with a known lifetime that may still fall in a not-yet-final window;
* ``open``: start edges waiting for their end edge, one entry each (their provisional end is
  their ``end``: the clip, or the end of time), however long they stay open;
* ``ignored_edges``: ids whose end edge is to be ignored (the start was dropped as late, or the
  event closed at its clip before the end edge came);
* ``cti``: the last CTI (after alteration) and ``frontier``: the window's own progress marker
  (snapshot: start of the first unemitted snapshot; count: last start time already processed).

Times are altered times (after :class:`~trending.windows.temporal.lifetime.Alteration`), never
snapped ones: snapping is recomputed from them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from trending.windows.temporal.events import Value

SNAPSHOT_VERSION = 1


@dataclass(frozen=True)
class StoredEvent:
    """An event in the state: lifetime ``[start, end)`` (provisional if open), value, id."""

    start: int
    end: int
    value: Value
    id: str | None = None

    def to_json(self) -> list[Any]:
        return [self.start, self.end, self.value, self.id]

    @classmethod
    def from_json(cls, data: list[Any]) -> StoredEvent:
        start, end, value, id = data
        return cls(int(start), int(end), value, id)


@dataclass
class TemporalState:
    """Everything one key's temporal query remembers between steps (see the module doc)."""

    window: str
    cti: int
    frontier: int | None = None
    closed: list[StoredEvent] = field(default_factory=list)
    open: dict[str, StoredEvent] = field(default_factory=dict)
    ignored_edges: set[str] = field(default_factory=set)

    def events(self) -> list[StoredEvent]:
        """Closed and open events (open ones with their provisional end)."""
        return [*self.closed, *self.open.values()]

    def is_idle(self) -> bool:
        """Holds no event: a driver may delete it (a fresh state at the current CTI is equal)."""
        return not (self.closed or self.open or self.ignored_edges)

    def copy(self) -> TemporalState:
        """An independent copy (events are immutable and shared)."""
        return TemporalState(
            self.window,
            self.cti,
            self.frontier,
            list(self.closed),
            dict(self.open),
            set(self.ignored_edges),
        )

    def to_json(self) -> dict[str, Any]:
        """Plain JSON-able data (given JSON-able values); :meth:`from_json` reads it back."""
        return {
            "version": SNAPSHOT_VERSION,
            "window": self.window,
            "cti": self.cti,
            "frontier": self.frontier,
            "closed": [event.to_json() for event in self.closed],
            "open": [event.to_json() for event in self.open.values()],
            "ignored_edges": sorted(self.ignored_edges),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any], window: str) -> TemporalState:
        """The state of :meth:`to_json`; ``ValueError`` if made by another version or window."""
        if data.get("version") != SNAPSHOT_VERSION:
            raise ValueError(f"unsupported temporal snapshot version {data.get('version')!r}")
        if data.get("window") != window:
            raise ValueError(f"snapshot of a {data.get('window')!r} window given to {window!r}")
        opened = [StoredEvent.from_json(item) for item in data["open"]]
        return cls(
            window,
            int(data["cti"]),
            data["frontier"],
            [StoredEvent.from_json(item) for item in data["closed"]],
            {str(event.id): event for event in opened},
            set(data["ignored_edges"]),
        )
