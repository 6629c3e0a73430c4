"""Sliding windows: evict the oldest tuples as new ones arrive (SPL ``SlidingWindow``).

Execution order per eviction (rows) and trigger (columns) policy, the seed's Table 2, per
partition; ``|`` separates steps that happen independently (on the clock):

=========  ==========================  ==========================  =========================
evict      count(n) trigger            delta trigger               time trigger
=========  ==========================  ==========================  =========================
count      evict → insert → trigger    trigger → evict → insert    evict → insert | trigger
delta      evict → insert → trigger    trigger → evict → insert    evict → insert | trigger
time       insert → trigger | evict    trigger → insert | evict    insert | evict | trigger
=========  ==========================  ==========================  =========================

Here "evict" is ``before_evict``/``after_evict`` per evicted tuple (oldest first), "insert" is
``before_insert``/``after_insert`` and "trigger" is ``trigger`` carrying the window content.
A trigger never fires on an empty window (possible only once time eviction emptied it); its
policy state (count since the last trigger, delta reference) moves on as if it had.

``initial_full`` fires once per partition, the first time the window is full:
count(n) eviction right after the insertion that makes ``|W| = n`` (before a count trigger);
delta and time eviction right before the first eviction (for time, before any trigger at that
instant). Sliding windows cannot evict or trigger on punctuation (``ValueError``); a
punctuation inserted into a sliding window is ignored. A partition that time eviction empties
stays, keeping its trigger state, until a partition eviction policy deletes it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from itertools import takewhile
from typing import Any

from trending.windows.spl.events import EventKind, PartitionKey, Record, WindowEvent
from trending.windows.spl.partitioned import PartitionEviction
from trending.windows.spl.policies import Count, Delta, Policy, Punct, Time
from trending.windows.spl.state import Entry, PartitionState, WindowState, from_snapshot
from trending.windows.spl.window import WindowLogic

KIND = "sliding"


@dataclass(frozen=True)
class SlidingWindow:
    """A sliding window's configuration; ``build()`` makes a running window."""

    evict: Policy
    trigger: Policy
    partition_eviction: PartitionEviction | None = None

    def __post_init__(self) -> None:
        for role, policy in (("eviction", self.evict), ("trigger", self.trigger)):
            if isinstance(policy, Punct):
                raise ValueError(
                    f"a sliding window cannot have a punctuation-based {role} policy; "
                    "only tumbling windows evict on punctuation"
                )
            if not isinstance(policy, Count | Delta | Time):
                raise ValueError(f"not a {role} policy: {policy!r}")

    def build(self, snapshot: Mapping[str, Any] | None = None) -> SlidingLogic:
        """A running window, empty at clock 0 or continuing from ``snapshot``."""
        state = WindowState(KIND) if snapshot is None else from_snapshot(snapshot, KIND)
        return SlidingLogic(self, state)


class SlidingLogic(WindowLogic):
    """A running sliding window (see the module docstring for its rules)."""

    def __init__(self, config: SlidingWindow, state: WindowState) -> None:
        super().__init__(config.partition_eviction, state)
        self.config = config

    def _check_record(self, record: Record) -> None:
        for policy in (self.config.evict, self.config.trigger):
            if isinstance(policy, Delta):
                policy.value(record)

    def _on_insert(self, key: PartitionKey, record: Record, out: list[WindowEvent]) -> None:
        part = self._partition(key)
        if isinstance(self.config.trigger, Delta):
            self._delta_trigger(self.config.trigger, key, part, record, out)
        self._evict_for(key, part, record, out)
        self._insert_entry(key, record, out)
        evict = self.config.evict
        if isinstance(evict, Count) and part.size >= evict.size:
            self._initial_full(key, part, out)
        if isinstance(self.config.trigger, Count):
            self._count_trigger(self.config.trigger, key, part, out)

    def _delta_trigger(
        self,
        trigger: Delta,
        key: PartitionKey,
        part: PartitionState,
        record: Record,
        out: list[WindowEvent],
    ) -> None:
        """Trigger before ``x`` goes in if ``a(x) > a(ref) + size``; ``x`` becomes ``ref``."""
        value = trigger.value(record)
        if part.trigger_ref is None:
            part.trigger_ref = value
        elif value > part.trigger_ref + trigger.size:
            part.trigger_ref = value
            self._trigger(key, part, out)

    def _count_trigger(
        self, trigger: Count, key: PartitionKey, part: PartitionState, out: list[WindowEvent]
    ) -> None:
        """Trigger after the ``n``-th insertion since the last trigger."""
        part.since_trigger += 1
        if part.since_trigger >= trigger.size:
            part.since_trigger = 0
            self._trigger(key, part, out)

    def _evict_for(
        self, key: PartitionKey, part: PartitionState, record: Record, out: list[WindowEvent]
    ) -> None:
        """Make room for ``record``: count evicts the oldest, delta every tuple too far."""
        evict = self.config.evict
        if isinstance(evict, Count):
            while part.size >= evict.size:
                self._evict(key, part, [part.entries[0]], out)
        elif isinstance(evict, Delta):
            value = evict.value(record)
            far = [e for e in part.entries if value - evict.value(e.record) > evict.size]
            if far:
                self._initial_full(key, part, out)
                self._evict(key, part, far, out)

    def _evict(
        self, key: PartitionKey, part: PartitionState, victims: list[Entry], out: list[WindowEvent]
    ) -> None:
        """``before_evict``, remove, ``after_evict`` for each victim, oldest first."""
        for victim in victims:
            self._emit(out, EventKind.BEFORE_EVICT, key, (victim.record,))
            if part.entries[0] is victim:
                part.entries.popleft()
            else:
                part.entries.remove(victim)
            part.size -= 1
            self._emit(out, EventKind.AFTER_EVICT, key, (victim.record,))

    def _initial_full(
        self, key: PartitionKey, part: PartitionState, out: list[WindowEvent]
    ) -> None:
        if not part.full:
            part.full = True
            self._emit(out, EventKind.INITIAL_FULL, key, part.content())

    def _trigger(self, key: PartitionKey, part: PartitionState, out: list[WindowEvent]) -> None:
        if part.size:
            self._emit(out, EventKind.TRIGGER, key, part.content())

    def _on_added(self, part: PartitionState, record: Record) -> None:
        """Sliding windows have no summarizers."""

    def _on_punct(self, out: list[WindowEvent]) -> None:
        """Sliding windows ignore punctuation."""

    def _next_timer_due(self) -> int | None:
        dues: list[int] = []
        evict, trigger = self.config.evict, self.config.trigger
        nonempty = self._nonempty()
        if isinstance(evict, Time):
            dues.extend(part.entries[0].at_ms + evict.period_ms for _, part in nonempty)
        if isinstance(trigger, Time) and nonempty:
            dues.append(trigger.next_boundary(self._state.now_ms))
        return min(dues, default=None)

    def _on_tick(self, time_ms: int, out: list[WindowEvent]) -> None:
        evict, trigger = self.config.evict, self.config.trigger
        expired = self._expired(evict, time_ms) if isinstance(evict, Time) else []
        for key, part, _ in expired:
            self._initial_full(key, part, out)
        if isinstance(trigger, Time) and trigger.is_boundary(time_ms):
            for key, part in self._nonempty():
                self._trigger(key, part, out)
        for key, part, victims in expired:
            self._evict(key, part, victims, out)

    def _expired(
        self, evict: Time, time_ms: int
    ) -> list[tuple[PartitionKey, PartitionState, list[Entry]]]:
        """Per partition, the tuples inserted at ``s`` with ``s + period <= time_ms``."""
        expired: list[tuple[PartitionKey, PartitionState, list[Entry]]] = []
        for key, part in self._nonempty():
            due = takewhile(lambda e: e.at_ms + evict.period_ms <= time_ms, part.entries)
            victims = list(due)
            if victims:
                expired.append((key, part, victims))
        return expired
