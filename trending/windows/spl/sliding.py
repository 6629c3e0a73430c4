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
``before_insert``/``after_insert`` and "trigger" is ``trigger`` carrying the window content
(a view made in O(1), see :class:`~trending.windows.spl.state.Content`). A sliding window
given no trigger policy triggers on every tuple (``count(1)``).

Rules the seed leaves open, as the SPL runtime decides them:

* delta: ``x`` is beyond ``w`` when ``a(x) - a(w) > size`` strictly, and never when
  ``a(x) < a(w)``. Delta eviction evicts every such ``w``. A delta trigger compares ``x`` with
  the tuple that caused the last trigger, or before any trigger with the partition's first
  tuple; the triggering tuple becomes the new reference.
* partition eviction is checked right after ``after_insert``; if it deleted the partition
  just inserted into, the insertion causes nothing more (no ``initial_full``, no trigger), and
  the partition's next tuple starts afresh (trigger count, delta reference, ``initial_full``).
* ``initial_full`` fires once per partition: count(n) eviction right after the insertion that
  makes ``|W| = n`` (before that insertion's trigger); delta eviction right before its first
  eviction; time eviction at the partition's first insertion (SPL deems a time window full
  from the start), right before ``before_insert``.

Time eviction deletes a partition it empties, but (as the runtime) keeps its trigger count,
delta reference and ``initial_full`` mark for its next tuple (:class:`.state.WindowState`'s
``dormant``); a delta trigger may then fire on the new, still empty partition. A time trigger
fires for each partition, or once for a made-up empty partition ``None`` when the window is
empty (unless ``empty_window_events`` is off). Sliding windows cannot evict or trigger on
punctuation (``ValueError``); a punctuation inserted into a sliding window is ignored.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from trending.windows.spl.events import EventKind, PartitionKey, Record, WindowEvent
from trending.windows.spl.partitioned import PartitionEviction
from trending.windows.spl.policies import Count, Delta, Policy, Punct, Time
from trending.windows.spl.state import PartitionState, WindowState, from_snapshot
from trending.windows.spl.window import WindowLogic

KIND = "sliding"


@dataclass(frozen=True)
class SlidingWindow:
    """A sliding window's configuration; ``build()`` makes a running window.

    ``trigger`` defaults to ``count(1)``: a trigger after every insertion.
    """

    evict: Policy
    trigger: Policy = field(default_factory=lambda: Count(1))
    partition_eviction: PartitionEviction | None = None
    empty_window_events: bool = True

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
        super().__init__(config.partition_eviction, state, config.empty_window_events)
        self.config = config
        evict, trigger = config.evict, config.trigger
        self._deltas = [p for p in (evict, trigger) if isinstance(p, Delta)]
        self._count_evict = evict.size if isinstance(evict, Count) else 0
        self._count_trigger = trigger.size if isinstance(trigger, Count) else 0

    def _check_record(self, record: Record) -> None:
        for policy in self._deltas:
            policy.value(record)

    def _on_insert(self, key: PartitionKey, record: Record, out: list[WindowEvent]) -> None:
        part = self._partition(key)
        evict, trigger = self.config.evict, self.config.trigger
        if isinstance(trigger, Delta):
            self._delta_trigger(trigger, key, part, record, out)
        size = self._count_evict
        if size:
            while part.size >= size:
                self._evict_oldest(key, part, out)
        elif isinstance(evict, Delta):
            self._delta_evict(evict, key, part, record, out)
        else:
            self._initial_full(key, part, out)  # time eviction: full from the start
        inserted = self._insert_entry(key, record, out)
        if inserted is None:  # partition eviction deleted this very partition
            return
        if size and part.size >= size and not part.full:
            self._initial_full(key, part, out)
        every = self._count_trigger
        if every:
            part.since_trigger += 1
            if part.since_trigger >= every:
                part.since_trigger = 0
                self._trigger(key, part, out)

    def _delta_trigger(
        self,
        trigger: Delta,
        key: PartitionKey,
        part: PartitionState,
        record: Record,
        out: list[WindowEvent],
    ) -> None:
        """Trigger before ``x`` goes in if ``a(x) - a(ref) > size``; ``x`` becomes ``ref``."""
        value = trigger.value(record)
        if part.trigger_ref is None:
            part.trigger_ref = value
        elif value - part.trigger_ref > trigger.size:
            part.trigger_ref = value
            self._trigger(key, part, out)

    def _evict_oldest(
        self, key: PartitionKey, part: PartitionState, out: list[WindowEvent]
    ) -> None:
        now = self._state.now_ms
        one = (part.entries.oldest()[1],)
        out.append(WindowEvent(EventKind.BEFORE_EVICT, key, one, now))
        part.entries.pop_oldest()
        part.size -= 1
        out.append(WindowEvent(EventKind.AFTER_EVICT, key, one, now))

    def _delta_evict(
        self,
        evict: Delta,
        key: PartitionKey,
        part: PartitionState,
        record: Record,
        out: list[WindowEvent],
    ) -> None:
        """Evict every tuple ``w`` with ``a(x) - a(w) > size`` (``initial_full`` first)."""
        value = evict.value(record)
        far = [w for w in part.entries.view() if value - evict.value(w) > evict.size]
        if not far:
            return
        self._initial_full(key, part, out)
        doomed = {id(w) for w in far}
        part.entries.remove_where(lambda w: id(w) in doomed)
        self._evicted(key, part, far, out)

    def _evicted(
        self, key: PartitionKey, part: PartitionState, victims: list[Record], out: list[WindowEvent]
    ) -> None:
        """``before_evict``, ``after_evict`` for each victim, oldest first (already removed)."""
        now = self._state.now_ms
        for victim in victims:
            out.append(WindowEvent(EventKind.BEFORE_EVICT, key, (victim,), now))
            part.size -= 1
            out.append(WindowEvent(EventKind.AFTER_EVICT, key, (victim,), now))

    def _initial_full(
        self, key: PartitionKey, part: PartitionState, out: list[WindowEvent]
    ) -> None:
        if not part.full:
            part.full = True
            self._emit(out, EventKind.INITIAL_FULL, key, part.content())

    def _trigger(self, key: PartitionKey, part: PartitionState, out: list[WindowEvent]) -> None:
        out.append(WindowEvent(EventKind.TRIGGER, key, part.entries.view(), self._state.now_ms))

    def _on_added(self, part: PartitionState, record: Record) -> None:
        """Sliding windows have no summarizers."""

    def _on_punct(self, out: list[WindowEvent]) -> None:
        """Sliding windows ignore punctuation."""

    def next_due(self) -> int | None:
        dues: list[int] = []
        evict, trigger = self.config.evict, self.config.trigger
        if isinstance(evict, Time):
            parts = self._nonempty()
            dues.extend(part.entries.oldest()[0] + evict.period_ms for _, part in parts)
        if isinstance(trigger, Time) and self._fires_now():
            dues.append(trigger.next_boundary(self._state.now_ms))
        return min(dues, default=None)

    def _on_tick(self, time_ms: int, out: list[WindowEvent]) -> None:
        evict, trigger = self.config.evict, self.config.trigger
        if isinstance(trigger, Time) and trigger.is_boundary(time_ms):
            self._time_trigger(out)
        if isinstance(evict, Time):
            self._time_evict(evict, time_ms, out)

    def _time_trigger(self, out: list[WindowEvent]) -> None:
        """A trigger tick: the age check, then a trigger per partition (or the empty one)."""
        self._check_partition_age(out)
        partitions = self._state.partitions
        if not partitions and self.empty_window_events:
            self._emit(out, EventKind.TRIGGER, None)
        for key, part in list(partitions.items()):
            self._trigger(key, part, out)

    def _time_evict(self, evict: Time, time_ms: int, out: list[WindowEvent]) -> None:
        """Evict tuples inserted at or before ``time_ms - period``; emptied partitions go
        dormant (deleted, their trigger marks kept)."""
        state = self._state
        for key, part in list(state.partitions.items()):
            while part.entries and part.entries.oldest()[0] + evict.period_ms <= time_ms:
                self._evict_oldest(key, part, out)
            if not part.size:
                part.entries.clear()
                del state.partitions[key]
                state.dormant[key] = part
