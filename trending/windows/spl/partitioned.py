"""Partition eviction: deleting whole partitions of a partitioned window to bound memory.

When it is checked (as the SPL runtime's ``WindowImpl`` does):

* ``partitionCount`` and ``tupleCount``: right after each tuple insertion, after the
  ``after_insert`` event and before the flush, ``initial_full`` or trigger that the insertion
  causes (which do not happen if the partition just inserted into was evicted);
* ``partitionAge``: right *before* each insertion (before any of its events, as inserting
  renews the partition's age), before a punctuation flushes a non-empty punctuation window,
  and at each tick of a time trigger or tumbling time flush, before it fires. Moving the clock
  alone checks nothing: an idle partition goes at the next insertion, punctuation or tick.

Limits (SPL names in brackets), over partitions ordered least recently inserted-into first
(LRU order, the partition just inserted into included, as the newest):

* :class:`PartitionAge` ``partitionAge(n)``: exceeded when the least recently used partition,
  last inserted into at ``L``, is older than the age: ``L + age_ms < now`` (strictly); LRU
  then deletes every partition with ``L + age_ms <= now``.
* :class:`PartitionCount` ``partitionCount(c)``: over while there are more than ``c``
  partitions; LRU deletes the oldest until there are ``c`` (``c = 0`` deletes the partition
  just inserted into as well).
* :class:`TupleCount` ``tupleCount(t)``: over while the partitions hold more than ``t`` tuples
  in total; LRU deletes the oldest partitions up to and including the first one that holds
  tuples, and again while the total is above ``t`` (so one partition alone holding more than
  ``t`` tuples is deleted, even the one just inserted into).

Selection: LRU (the default), or an operator-defined ``selector`` that receives every
partition as :class:`PartitionInfo`, least recently used first, and returns the keys to evict.
The selector is asked once per check; if the limit is still exceeded after its choice, LRU
selection completes the eviction (SPL forces its LRU selector then). The selector's round fires
``partition_select`` per partition it chose (SPL's ``onWindowPartitionEvictionSelection`` is the
operator's handler only with operator-defined selection; LRU selection is the runtime's own and
fires no event), then every round fires ``partition_evict`` per chosen partition and deletes
them. A deleted partition that receives tuples later starts afresh
(counts, delta reference, ``initial_full``).

A tumbling flush deletes the partition, and so does a sliding time eviction that empties it,
so emptied partitions do not count toward these limits.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TypeAlias

from trending.windows.spl.events import EventKind, PartitionKey, Record, WindowEvent
from trending.windows.spl.policies import seconds_to_ms
from trending.windows.spl.state import WindowState


@dataclass(frozen=True)
class PartitionInfo:
    """What a selector sees of a partition: key, tuple count, last insertion, content."""

    key: PartitionKey
    size: int
    last_insert_ms: int
    tuples: Sequence[Record]


Selector: TypeAlias = Callable[[Sequence[PartitionInfo]], Iterable[PartitionKey]]
"""An operator-defined selection: partitions (LRU first) -> keys to evict."""


@dataclass(frozen=True)
class PartitionAge:
    """``partitionAge``: delete a partition not inserted into for ``age_ms`` milliseconds."""

    age_ms: int

    def __post_init__(self) -> None:
        _check_positive("partition age", self.age_ms)

    @classmethod
    def seconds(cls, seconds: float) -> PartitionAge:
        """``partitionAge(seconds)`` as SPL writes it; a whole number of ms."""
        return cls(seconds_to_ms(seconds))

    def exceeded(self, state: WindowState) -> bool:
        """The least recently used partition is strictly older than the age."""
        oldest = min(p.last_insert_ms for p in state.partitions.values())
        return oldest + self.age_ms < state.now_ms

    def lru(self, infos: Sequence[PartitionInfo], now_ms: int) -> list[PartitionKey]:
        """Every partition last inserted into at or before ``now - age``."""
        return [info.key for info in infos if info.last_insert_ms + self.age_ms <= now_ms]


@dataclass(frozen=True)
class PartitionCount:
    """``partitionCount``: keep at most ``count`` partitions."""

    count: int

    def __post_init__(self) -> None:
        _check_non_negative("partition count", self.count)

    def exceeded(self, state: WindowState) -> bool:
        return len(state.partitions) > self.count

    def lru(self, infos: Sequence[PartitionInfo], now_ms: int) -> list[PartitionKey]:
        return [info.key for info in infos[: max(0, len(infos) - self.count)]]


@dataclass(frozen=True)
class TupleCount:
    """``tupleCount``: keep at most ``tuples`` tuples across all partitions."""

    tuples: int

    def __post_init__(self) -> None:
        _check_non_negative("tuple count", self.tuples)

    def exceeded(self, state: WindowState) -> bool:
        return sum(p.size for p in state.partitions.values()) > self.tuples

    def lru(self, infos: Sequence[PartitionInfo], now_ms: int) -> list[PartitionKey]:
        """One round: the oldest partitions up to and including the first holding tuples."""
        chosen = []
        for info in infos:
            chosen.append(info.key)
            if info.size:
                break
        return chosen


PartitionLimit: TypeAlias = PartitionAge | PartitionCount | TupleCount


@dataclass(frozen=True)
class PartitionEviction:
    """A partition eviction policy: a limit and a selection (``None`` selector means LRU)."""

    limit: PartitionLimit
    selector: Selector | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.limit, PartitionAge | PartitionCount | TupleCount):
            raise ValueError(f"not a partition eviction limit: {self.limit!r}")


def partition_infos(state: WindowState) -> list[PartitionInfo]:
    """Every partition, least recently inserted-into first."""
    parts = sorted(state.partitions.items(), key=lambda item: item[1].last_seq)
    return [PartitionInfo(key, p.size, p.last_insert_ms, p.content()) for key, p in parts]


def evict_partitions(state: WindowState, policy: PartitionEviction, out: list[WindowEvent]) -> None:
    """Delete partitions while ``policy.limit`` is exceeded, appending their events to ``out``.

    The selector (if any) chooses once; LRU rounds then run while the limit is exceeded.
    """
    if not state.partitions or not policy.limit.exceeded(state):
        return
    if policy.selector is not None:
        infos = partition_infos(state)
        _delete(state, _checked(policy.selector(infos), infos), out, selected=True)
    while state.partitions and policy.limit.exceeded(state):
        chosen = policy.limit.lru(partition_infos(state), state.now_ms)
        if not chosen:
            return
        _delete(state, chosen, out)


def _checked(
    selected: Iterable[PartitionKey], infos: Sequence[PartitionInfo]
) -> list[PartitionKey]:
    known = {info.key for info in infos}
    chosen = list(dict.fromkeys(selected))
    unknown = [key for key in chosen if key not in known]
    if unknown:
        raise ValueError(f"partition selector returned unknown partitions {unknown!r}")
    return chosen


def _delete(
    state: WindowState, keys: Sequence[PartitionKey], out: list[WindowEvent], selected: bool = False
) -> None:
    """``partition_select`` per key if the operator's selector chose them, ``partition_evict``
    per key, then delete the partitions."""
    kinds = (EventKind.PARTITION_SELECT, EventKind.PARTITION_EVICT)
    for kind in kinds if selected else kinds[1:]:
        for key in keys:
            content = state.partitions[key].content()
            out.append(WindowEvent(kind, key, content, state.now_ms))
    for key in keys:
        del state.partitions[key]


def _check_non_negative(name: str, value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be an integer >= 0, got {value!r}")


def _check_positive(name: str, value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
