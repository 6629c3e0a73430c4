"""What tumbling and sliding windows share: the clock, partitions, inputs and snapshots.

A window has three verbs, each returning the :class:`WindowEvent` values it fired:

* ``insert(tuple, partition=None)`` at the current clock time,
* ``punct()`` a window punctuation,
* ``advance_to(time_ms)`` move the clock, firing every time-based event due up to and
  including ``time_ms`` in time order (at one instant: time triggers and flushes, then
  tuple evictions). A time policy acts when the clock reaches its instant (the SPL runtime's
  threads sleep until that instant and act on waking).

A non-partitioned window is a window whose only partition key is ``None``. Every window can
be given a :class:`PartitionEviction`, checked right after each ``after_insert`` event, before
whatever else the insertion causes (the age limit: before the insertion, a flushing
punctuation and each time tick); see :mod:`.partitioned`. ``snapshot()`` returns the state as
plain data; ``Config.build(snapshot)`` continues from it with identical events.

Empty windows: as in the SPL runtime, a time trigger or tumbling time flush that finds the
whole window empty still fires once, for a made-up empty partition (key ``None``, no tuples).
``empty_window_events = False`` turns that off, so an empty window has nothing due at all
(an engine running one window per key wants that: a key with no tuples costs nothing).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from trending.windows.spl.events import (
    EventKind,
    InputError,
    PartitionKey,
    Record,
    WindowEvent,
)
from trending.windows.spl.partitioned import PartitionAge, PartitionEviction, evict_partitions
from trending.windows.spl.state import PartitionState, WindowState, to_snapshot


@dataclass(frozen=True)
class Insert:
    """Input: insert ``record`` into ``partition`` at the current clock time."""

    record: Record
    partition: PartitionKey = None


@dataclass(frozen=True)
class Punctuation:
    """Input: a window punctuation."""


@dataclass(frozen=True)
class Advance:
    """Input: move the clock to ``time_ms``."""

    time_ms: int


Input: TypeAlias = Insert | Punctuation | Advance


class WindowLogic(ABC):
    """The running state machine of a window; subclasses add the policies' rules."""

    def __init__(
        self,
        partition_eviction: PartitionEviction | None,
        state: WindowState,
        empty_window_events: bool = True,
    ) -> None:
        self._partition_eviction = partition_eviction
        self._state = state
        self.empty_window_events = empty_window_events

    @property
    def now_ms(self) -> int:
        """The window clock, in milliseconds."""
        return self._state.now_ms

    def insert(self, record: Record, partition: PartitionKey = None) -> list[WindowEvent]:
        """Insert ``record`` into ``partition``; the events, in SPL's execution order."""
        if type(record) is not dict and not isinstance(record, Mapping):
            raise InputError(f"a tuple must be a mapping of attributes, got {record!r}")
        if partition is not None and not isinstance(partition, str | int | float | bool):
            raise InputError(f"a partition key must be a scalar, got {partition!r}")
        self._check_record(record)
        out: list[WindowEvent] = []
        self._check_partition_age(out)
        self._on_insert(partition, record, out)
        return out

    def punct(self) -> list[WindowEvent]:
        """Insert a window punctuation (ignored unless the window evicts on punctuation)."""
        out: list[WindowEvent] = []
        self._on_punct(out)
        return out

    def advance_to(self, time_ms: int) -> list[WindowEvent]:
        """Move the clock to ``time_ms``, firing the time-based events due until then."""
        if isinstance(time_ms, bool) or not isinstance(time_ms, int):
            raise InputError(f"clock time must be an integer of ms, got {time_ms!r}")
        if time_ms < self._state.now_ms:
            raise InputError(f"the clock cannot go back from {self._state.now_ms} to {time_ms} ms")
        out: list[WindowEvent] = []
        while (due := self.next_due()) is not None and due <= time_ms:
            due = self._state.now_ms = max(due, self._state.now_ms)
            self._on_tick(due, out)
        self._state.now_ms = time_ms
        return out

    def apply(self, item: Input) -> list[WindowEvent]:
        """Apply one input value (:class:`Insert`, :class:`Punctuation`, :class:`Advance`)."""
        if isinstance(item, Insert):
            return self.insert(item.record, item.partition)
        if isinstance(item, Punctuation):
            return self.punct()
        return self.advance_to(item.time_ms)

    def run(self, items: Iterable[Input]) -> Iterator[WindowEvent]:
        """Apply every input in turn, yielding the events as they fire."""
        for item in items:
            yield from self.apply(item)

    def content(self, partition: PartitionKey = None) -> tuple[Record, ...]:
        """The tuples kept in ``partition``, oldest first (empty if no such partition)."""
        part = self._state.partitions.get(partition)
        return tuple(part.content()) if part else ()

    def partitions(self) -> tuple[PartitionKey, ...]:
        """The keys of the existing partitions, in creation order."""
        return tuple(self._state.partitions)

    def snapshot(self) -> dict[str, Any]:
        """The whole state as plain, JSON-able data (see :mod:`.state`)."""
        return to_snapshot(self._state)

    # -- shared steps ----------------------------------------------------------------------

    def _emit(
        self,
        out: list[WindowEvent],
        kind: EventKind,
        key: PartitionKey,
        tuples: Sequence[Record] = (),
        summary: Mapping[str, Any] | None = None,
    ) -> None:
        out.append(WindowEvent(kind, key, tuples, self._state.now_ms, summary))

    def _partition(self, key: PartitionKey) -> PartitionState:
        """The partition ``key``, created if it does not exist (resuming dormant marks)."""
        state = self._state
        part = state.partitions.get(key)
        if part is None:
            part = state.dormant.pop(key, None) or PartitionState()
            state.partitions[key] = part
        return part

    def _insert_entry(
        self, key: PartitionKey, record: Record, out: list[WindowEvent], keep: bool = True
    ) -> PartitionState | None:
        """``before_insert``, add the tuple (and summarize it), ``after_insert``, then check
        partition eviction; the partition, or ``None`` if that check evicted it."""
        state = self._state
        now, one = state.now_ms, (record,)
        out.append(WindowEvent(EventKind.BEFORE_INSERT, key, one, now))
        part = self._partition(key)
        self._on_added(part, record)
        if keep:
            part.entries.append(now, record)
        part.size += 1
        state.seq += 1
        part.last_seq, part.last_insert_ms = state.seq, now
        out.append(WindowEvent(EventKind.AFTER_INSERT, key, one, now))
        policy = self._partition_eviction
        if policy is None or isinstance(policy.limit, PartitionAge):
            return part
        evict_partitions(state, policy, out)
        return state.partitions.get(key)

    def _check_partition_age(self, out: list[WindowEvent]) -> None:
        """The age limit's check: before an insertion, a flushing punctuation or a tick."""
        policy = self._partition_eviction
        if policy is not None and isinstance(policy.limit, PartitionAge):
            evict_partitions(self._state, policy, out)

    def _fires_now(self) -> bool:
        """Whether a time trigger or flush tick has something to fire on (see module doc)."""
        return self.empty_window_events or bool(self._state.partitions)

    def _nonempty(self) -> list[tuple[PartitionKey, PartitionState]]:
        return [(key, part) for key, part in self._state.partitions.items() if part.size]

    # -- the policies' rules ---------------------------------------------------------------

    @abstractmethod
    def _on_added(self, part: PartitionState, record: Record) -> None:
        """Hook between ``before_insert`` and ``after_insert`` (tumbling summarizers)."""

    @abstractmethod
    def _check_record(self, record: Record) -> None:
        """Raise :class:`InputError` if the policies cannot take ``record``."""

    @abstractmethod
    def _on_insert(self, key: PartitionKey, record: Record, out: list[WindowEvent]) -> None:
        """Insert a tuple with the window's eviction and trigger rules."""

    @abstractmethod
    def _on_punct(self, out: list[WindowEvent]) -> None:
        """React to a punctuation."""

    @abstractmethod
    def next_due(self) -> int | None:
        """The next clock instant at which a time policy has something due, if any."""

    @abstractmethod
    def _on_tick(self, time_ms: int, out: list[WindowEvent]) -> None:
        """Fire the time-based events due at ``time_ms`` (the clock is already there)."""
