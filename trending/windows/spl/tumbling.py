"""Tumbling windows: fill up, then flush every tuple at once (SPL ``TumblingWindow``).

Execution order per eviction policy (the seed's Table 1), per partition:

==============  ==========================================================================
eviction        on ``insert(x)``
==============  ==========================================================================
count(n)        before_insert, after_insert, then if ``|W| = n``: before_flush, after_flush
                (no flush if partition eviction just deleted the partition)
delta(a, s)     if ``a(x) - a(oldest) > s``: before_flush, after_flush; then the insertion
time(p)         the insertion only; flushes happen on the clock at ``k * p``: every
                partition in creation order, or once a made-up empty partition ``None``
                when the window is empty (as the SPL runtime; ``empty_window_events``)
punct()         the insertion only; a punctuation flushes every partition (in creation
                order), or fires ``empty_punct`` when there is no tuple in the window
==============  ==========================================================================

Delta comparisons follow the SPL runtime: the window is full when ``a(x) - a(oldest) > s``
strictly, and a tuple whose value is below the oldest one's never flushes. Partition eviction
is checked right after ``after_insert`` (see :mod:`.partitioned`). A flushed partition is
deleted (its sub-window is gone until the next tuple for it), so empty partitions do not count
toward partition eviction limits and a tumbling window's partitions always hold a tuple.
The flush is the trigger: a tumbling window fires no ``trigger`` event. ``before_flush``
carries the content being flushed; ``after_flush`` fires once it is flushed, so it carries no
tuples (as in the SPL runtime, which clears the window between the two). Summarizers
(:mod:`.summarizers`) close right before ``before_flush``; their results ride on both flush
events as ``summary``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from trending.windows.spl.events import EventKind, PartitionKey, Record, WindowEvent
from trending.windows.spl.partitioned import PartitionEviction
from trending.windows.spl.policies import Count, Delta, Policy, Punct, Time
from trending.windows.spl.state import PartitionState, WindowState, from_snapshot
from trending.windows.spl.summarizers import Summarizer, check_numbers
from trending.windows.spl.window import WindowLogic

KIND = "tumbling"


@dataclass(frozen=True)
class TumblingWindow:
    """A tumbling window's configuration; ``build()`` makes a running window.

    ``keep_tuples=False`` keeps only counts and summaries, so flush events carry no tuples.
    """

    evict: Policy
    partition_eviction: PartitionEviction | None = None
    summarizers: Mapping[str, Summarizer] = field(default_factory=dict)
    keep_tuples: bool = True
    empty_window_events: bool = True

    def __post_init__(self) -> None:
        if not isinstance(self.evict, Count | Delta | Time | Punct):
            raise ValueError(f"not an eviction policy: {self.evict!r}")
        object.__setattr__(self, "summarizers", MappingProxyType(dict(self.summarizers)))

    def build(self, snapshot: Mapping[str, Any] | None = None) -> TumblingLogic:
        """A running window, empty at clock 0 or continuing from ``snapshot``."""
        state = WindowState(KIND) if snapshot is None else from_snapshot(snapshot, KIND)
        return TumblingLogic(self, state)


class TumblingLogic(WindowLogic):
    """A running tumbling window (see the module docstring for its rules)."""

    def __init__(self, config: TumblingWindow, state: WindowState) -> None:
        super().__init__(config.partition_eviction, state, config.empty_window_events)
        self.config = config

    def _check_record(self, record: Record) -> None:
        if isinstance(self.config.evict, Delta):
            self.config.evict.value(record)
        check_numbers(self.config.summarizers, record)

    def _on_insert(self, key: PartitionKey, record: Record, out: list[WindowEvent]) -> None:
        evict = self.config.evict
        if isinstance(evict, Delta):
            self._delta_flush(evict, key, evict.value(record), out)
        part = self._insert_entry(key, record, out, keep=self.config.keep_tuples)
        if part is None:  # partition eviction deleted the partition just inserted into
            return
        if isinstance(evict, Delta) and part.first_value is None:
            part.first_value = evict.value(record)
        if isinstance(evict, Count) and part.size >= evict.size:
            self._flush(key, out)

    def _delta_flush(
        self, evict: Delta, key: PartitionKey, value: float, out: list[WindowEvent]
    ) -> None:
        """Flush first if ``value - a(oldest) > size`` (delta: evict, then insert)."""
        part = self._state.partitions.get(key)
        first = None if part is None else part.first_value
        if first is not None and value - first > evict.size:
            self._flush(key, out)

    def _on_added(self, part: PartitionState, record: Record) -> None:
        summarizers = self.config.summarizers
        if part.size == 0:
            part.summaries = {name: s.initial() for name, s in summarizers.items()}
        for name, summarizer in summarizers.items():
            part.summaries[name] = summarizer.add(part.summaries[name], record)

    def _on_punct(self, out: list[WindowEvent]) -> None:
        if not isinstance(self.config.evict, Punct):
            return
        if not self._state.partitions:
            self._emit(out, EventKind.EMPTY_PUNCT, None)
            return
        self._check_partition_age(out)
        for key in list(self._state.partitions):
            self._flush(key, out)

    def next_due(self) -> int | None:
        evict = self.config.evict
        if isinstance(evict, Time) and self._fires_now():
            return evict.next_boundary(self._state.now_ms)
        return None

    def _on_tick(self, time_ms: int, out: list[WindowEvent]) -> None:
        evict = self.config.evict
        if not (isinstance(evict, Time) and evict.is_boundary(time_ms)):
            return
        self._check_partition_age(out)
        if not self._state.partitions and self.empty_window_events:
            self._flush_empty(out)
        for key in list(self._state.partitions):
            self._flush(key, out)

    def _flush_empty(self, out: list[WindowEvent]) -> None:
        """The flush of an empty window: a made-up partition ``None``, summaries of nothing."""
        names = self.config.summarizers
        summary = {name: s.result(s.initial()) for name, s in names.items()} if names else None
        self._emit(out, EventKind.BEFORE_FLUSH, None, (), summary)
        self._emit(out, EventKind.AFTER_FLUSH, None, (), summary)

    def _flush(self, key: PartitionKey, out: list[WindowEvent]) -> None:
        """Close the summaries, ``before_flush``, delete the partition, ``after_flush``."""
        part = self._state.partitions[key]
        content, summary = part.content(), self._summary(part)
        self._emit(out, EventKind.BEFORE_FLUSH, key, content, summary)
        del self._state.partitions[key]
        self._emit(out, EventKind.AFTER_FLUSH, key, (), summary)

    def _summary(self, part: PartitionState) -> dict[str, Any] | None:
        summarizers = self.config.summarizers
        if not summarizers:
            return None
        return {name: s.result(part.summaries[name]) for name, s in summarizers.items()}
