"""The state of an SPL window as plain data, and its snapshot form.

A window's whole state is a :class:`WindowState`: the clock, an insertion counter (for LRU)
and one :class:`PartitionState` per partition, in creation order. ``to_snapshot`` turns it
into JSON-able dicts and lists (given JSON-able tuples, keys and summarizer states);
``from_snapshot`` reads that back. An engine moves the snapshot in and out of its own state
store; the tuples inside are shared with the window, not copied.

A partition's tuples live in :class:`Entries`: append-only lists with a moving head. Nothing
is ever changed in place but by appending, so :meth:`Entries.view` hands the window content
to an event in O(1) (a :class:`Content` over ``[head, len)``) and the view stays exactly that
content whatever the window does next (evictions move the head; compaction, removal from the
middle and flushes start new lists).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import islice
from typing import Any, overload

from trending.windows.spl.events import PartitionKey, Record

SNAPSHOT_VERSION = 1


class Content(Sequence[Record]):
    """A read-only view of a window's content at one moment, oldest first (O(1) to make).

    Equal to any sequence holding the same tuples (a ``tuple`` or ``list`` of them).
    """

    __slots__ = ("_items", "_start", "_stop")

    def __init__(self, items: list[Record], start: int, stop: int) -> None:
        self._items, self._start, self._stop = items, start, stop

    def __len__(self) -> int:
        return self._stop - self._start

    @overload
    def __getitem__(self, index: int) -> Record: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[Record]: ...

    def __getitem__(self, index: int | slice) -> Record | Sequence[Record]:
        if isinstance(index, slice):
            return tuple(self)[index]
        size = self._stop - self._start
        if not -size <= index < size:
            raise IndexError("window content index out of range")
        return self._items[self._start + index % size]

    def __iter__(self) -> Iterator[Record]:
        return islice(self._items, self._start, self._stop)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Content({list(self)!r})"


EMPTY: Content = Content([], 0, 0)


class Entries:
    """A partition's tuples and their insertion times, oldest first; see the module doc."""

    __slots__ = ("head", "records", "times")

    def __init__(self, times: Sequence[int] = (), records: Sequence[Record] = ()) -> None:
        self.records: list[Record] = list(records)
        self.times: list[int] = list(times)
        self.head = 0

    def __len__(self) -> int:
        return len(self.records) - self.head

    def __bool__(self) -> bool:
        return len(self.records) > self.head

    def append(self, at_ms: int, record: Record) -> None:
        self.records.append(record)
        self.times.append(at_ms)

    def oldest(self) -> tuple[int, Record]:
        """``(insertion time, tuple)`` of the oldest tuple; :class:`IndexError` if empty."""
        if not self:
            raise IndexError("no tuple in the window")
        return self.times[self.head], self.records[self.head]

    def pop_oldest(self) -> Record:
        """Remove and return the oldest tuple (moving the head; compacting now and then)."""
        record = self.records[self.head]
        self.head += 1
        if self.head >= 64 and self.head * 2 >= len(self.records):
            self.records, self.times = self.records[self.head :], self.times[self.head :]
            self.head = 0
        return record

    def remove_where(self, doomed: Callable[[Record], bool]) -> list[Record]:
        """Remove every tuple ``doomed`` says, returning them oldest first (new lists)."""
        kept_records: list[Record] = []
        kept_times: list[int] = []
        removed: list[Record] = []
        for at_ms, record in zip(self.times[self.head :], self.records[self.head :], strict=True):
            if doomed(record):
                removed.append(record)
            else:
                kept_records.append(record)
                kept_times.append(at_ms)
        if removed:
            self.records, self.times, self.head = kept_records, kept_times, 0
        return removed

    def clear(self) -> None:
        self.records, self.times, self.head = [], [], 0

    def view(self) -> Content:
        """The content now, as a view that later changes of the window do not affect."""
        return Content(self.records, self.head, len(self.records))

    def items(self) -> Iterator[tuple[int, Record]]:
        """``(insertion time, tuple)`` pairs, oldest first."""
        return zip(self.times[self.head :], self.records[self.head :], strict=True)


@dataclass
class PartitionState:
    """One partition's sub-window and the per-partition state of its policies.

    ``size`` counts the tuples of the open window even when a tumbling window does not keep
    them (``entries`` is then empty). ``first_value`` is the delta attribute of the oldest
    tuple of a tumbling delta window; ``since_trigger`` and ``trigger_ref`` are the count and
    delta trigger state; ``full`` says ``initial_full`` has fired; ``last_insert_ms`` and
    ``last_seq`` order partitions for LRU and partition age.
    """

    entries: Entries = field(default_factory=Entries)
    size: int = 0
    first_value: float | None = None
    since_trigger: int = 0
    trigger_ref: float | None = None
    full: bool = False
    last_insert_ms: int = 0
    last_seq: int = 0
    summaries: dict[str, Any] = field(default_factory=dict)

    def content(self) -> Content:
        """The tuples of the window, oldest first, as a view (see :class:`Content`)."""
        return self.entries.view()


@dataclass
class WindowState:
    """A whole window: its kind, clock, insertion counter and partitions.

    ``dormant`` holds the policy marks (trigger count, delta reference, ``initial_full``) of
    sliding partitions that time eviction emptied and removed: the SPL runtime removes such a
    partition but keeps those marks, so the partition's next tuple resumes them.
    """

    kind: str
    now_ms: int = 0
    seq: int = 0
    partitions: dict[PartitionKey, PartitionState] = field(default_factory=dict)
    dormant: dict[PartitionKey, PartitionState] = field(default_factory=dict)


def to_snapshot(state: WindowState) -> dict[str, Any]:
    """The state as plain dicts and lists, ready for JSON or an engine's state store."""
    return {
        "version": SNAPSHOT_VERSION,
        "kind": state.kind,
        "now_ms": state.now_ms,
        "seq": state.seq,
        "partitions": [_partition_to_dict(key, part) for key, part in state.partitions.items()],
        "dormant": [_partition_to_dict(key, part) for key, part in state.dormant.items()],
    }


def from_snapshot(data: Mapping[str, Any], kind: str) -> WindowState:
    """Read a :func:`to_snapshot` result back; :class:`ValueError` if it is not one."""
    if data.get("version") != SNAPSHOT_VERSION:
        raise ValueError(f"unsupported window snapshot version {data.get('version')!r}")
    if data.get("kind") != kind:
        raise ValueError(f"snapshot of a {data.get('kind')!r} window given to a {kind!r} window")
    try:
        partitions = dict(_partition_from_dict(item) for item in data["partitions"])
        dormant = dict(_partition_from_dict(item) for item in data.get("dormant", ()))
        return WindowState(kind, int(data["now_ms"]), int(data["seq"]), partitions, dormant)
    except (KeyError, TypeError) as error:
        raise ValueError(f"malformed window snapshot: {error!r}") from error


def _partition_to_dict(key: PartitionKey, part: PartitionState) -> dict[str, Any]:
    return {
        "key": key,
        "entries": [{"at_ms": at_ms, "tuple": record} for at_ms, record in part.entries.items()],
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
    items = item["entries"]
    entries = Entries([int(e["at_ms"]) for e in items], [e["tuple"] for e in items])
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
