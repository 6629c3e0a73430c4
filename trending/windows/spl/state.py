"""The state of an SPL window as plain data, and its snapshot form.

A window's whole state is a :class:`WindowState`: the clock, an insertion counter (for LRU)
and one :class:`PartitionState` per partition, in creation order. ``to_snapshot`` turns it
into JSON-able dicts and lists (given JSON-able tuples, keys and summarizer states);
``from_snapshot`` reads that back. An engine moves the snapshot in and out of its own state
store; the tuples inside are shared with the window, not copied.
"""

from __future__ import annotations

import copy
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from trending.windows.spl.events import PartitionKey, Record

SNAPSHOT_VERSION = 1


@dataclass(eq=False)
class Entry:
    """A tuple in a window and the clock time it was inserted at (compared by identity)."""

    at_ms: int
    record: Record


@dataclass
class PartitionState:
    """One partition's sub-window and the per-partition state of its policies.

    ``size`` counts the tuples of the open window even when a tumbling window does not keep
    them (``entries`` is then empty). ``first_value`` is the delta attribute of the oldest
    tuple of a tumbling delta window; ``since_trigger`` and ``trigger_ref`` are the count and
    delta trigger state; ``full`` says ``initial_full`` has fired; ``last_insert_ms`` and
    ``last_seq`` order partitions for LRU and partition age.
    """

    entries: deque[Entry] = field(default_factory=deque)
    size: int = 0
    first_value: float | None = None
    since_trigger: int = 0
    trigger_ref: float | None = None
    full: bool = False
    last_insert_ms: int = 0
    last_seq: int = 0
    summaries: dict[str, Any] = field(default_factory=dict)

    def content(self) -> tuple[Record, ...]:
        """The tuples of the window, oldest first."""
        return tuple(entry.record for entry in self.entries)


@dataclass
class WindowState:
    """A whole window: its kind, clock, insertion counter and partitions."""

    kind: str
    now_ms: int = 0
    seq: int = 0
    partitions: dict[PartitionKey, PartitionState] = field(default_factory=dict)


def to_snapshot(state: WindowState) -> dict[str, Any]:
    """The state as plain dicts and lists, ready for JSON or an engine's state store."""
    return {
        "version": SNAPSHOT_VERSION,
        "kind": state.kind,
        "now_ms": state.now_ms,
        "seq": state.seq,
        "partitions": [_partition_to_dict(key, part) for key, part in state.partitions.items()],
    }


def from_snapshot(data: Mapping[str, Any], kind: str) -> WindowState:
    """Read a :func:`to_snapshot` result back; :class:`ValueError` if it is not one."""
    if data.get("version") != SNAPSHOT_VERSION:
        raise ValueError(f"unsupported window snapshot version {data.get('version')!r}")
    if data.get("kind") != kind:
        raise ValueError(f"snapshot of a {data.get('kind')!r} window given to a {kind!r} window")
    try:
        partitions = dict(_partition_from_dict(item) for item in data["partitions"])
        return WindowState(kind, int(data["now_ms"]), int(data["seq"]), partitions)
    except (KeyError, TypeError) as error:
        raise ValueError(f"malformed window snapshot: {error!r}") from error


def _partition_to_dict(key: PartitionKey, part: PartitionState) -> dict[str, Any]:
    return {
        "key": key,
        "entries": [{"at_ms": entry.at_ms, "tuple": entry.record} for entry in part.entries],
        "size": part.size,
        "first_value": part.first_value,
        "since_trigger": part.since_trigger,
        "trigger_ref": part.trigger_ref,
        "full": part.full,
        "last_insert_ms": part.last_insert_ms,
        "last_seq": part.last_seq,
        "summaries": copy.deepcopy(part.summaries),
    }


def _partition_from_dict(item: Mapping[str, Any]) -> tuple[PartitionKey, PartitionState]:
    entries = deque(Entry(int(e["at_ms"]), e["tuple"]) for e in item["entries"])
    part = PartitionState(
        entries=entries,
        size=int(item["size"]),
        first_value=item["first_value"],
        since_trigger=int(item["since_trigger"]),
        trigger_ref=item["trigger_ref"],
        full=bool(item["full"]),
        last_insert_ms=int(item["last_insert_ms"]),
        last_seq=int(item["last_seq"]),
        summaries=copy.deepcopy(dict(item["summaries"])),
    )
    return item["key"], part
