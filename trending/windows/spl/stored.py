"""A keyed window kept row by row in a key-value store: the incremental form of :mod:`.keyed`.

:class:`StoredWindow` runs :func:`.keyed.on_partitioned_rows` and :func:`.keyed.on_timer`
over a :class:`WindowStore` (an engine's key-value state), reading only what a step touches and
writing only what it changes. Layout and costs are in its docstring.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from itertools import chain, islice
from typing import Any, Protocol, TypeAlias

from trending.windows.spl.events import EventKind, PartitionKey, Record, WindowEvent
from trending.windows.spl.keyed import KeyState, Step, compact_json, feed_rows
from trending.windows.spl.partitioned import (
    PartitionAge,
    PartitionCount,
    PartitionLimit,
    TupleCount,
)
from trending.windows.spl.policies import Time
from trending.windows.spl.sliding import SlidingLogic, SlidingWindow
from trending.windows.spl.spec import WindowSpec
from trending.windows.spl.state import Content, Entries, PartitionState, WindowState
from trending.windows.spl.tumbling import TumblingLogic, TumblingWindow
from trending.windows.spl.window import WindowLogic

SEGMENT_TUPLES = 256
"""At most this many tuples per stored segment (a step's new tuples go in as segments)."""

META_VERSION = 2
_FIELDS = (
    "size",
    "first_value",
    "since_trigger",
    "trigger_ref",
    "full",
    "last_insert_ms",
    "last_seq",
    "summaries",
)
Items: TypeAlias = list[tuple[int, Record]]


class WindowStore(Protocol):
    """The rows a :class:`StoredWindow` reads and writes (``get_*`` returns ``None`` if absent).

    * meta: one row, the window-level fields;
    * part: partition id (the JSON of its key) -> the partition's record;
    * segment: ``(partition id, position)`` -> ``(insert ms, tuple)`` pairs whose first
      tuple is the partition's tuple number ``position``;
    * order: position -> ``(partition id, last insertion ms)``, the LRU order.
    """

    def get_meta(self) -> dict[str, Any] | None: ...
    def put_meta(self, meta: dict[str, Any]) -> None: ...
    def has_part(self, pid: str) -> bool: ...
    def get_part(self, pid: str) -> dict[str, Any] | None: ...
    def all_parts(self) -> Iterable[dict[str, Any]]: ...
    def put_part(self, pid: str, record: dict[str, Any]) -> None: ...
    def remove_part(self, pid: str) -> None: ...
    def get_segment(self, pid: str, start: int) -> Items | None: ...
    def put_segment(self, pid: str, start: int, items: Items) -> None: ...
    def remove_segment(self, pid: str, start: int) -> None: ...
    def get_order(self, position: int) -> tuple[str, int] | None: ...
    def put_order(self, position: int, pid: str, last_ms: int) -> None: ...
    def remove_order(self, position: int) -> None: ...


class StoredWindow:
    """A keyed window whose state lives in a :class:`WindowStore`, loaded as a step reads it.

    Layout: a partition numbers its tuples from 0 as they go in; the live ones are
    ``[first, end)``, kept in segments (each the tuples one step inserted, at most
    :data:`SEGMENT_TUPLES`) keyed by the number of their first tuple and chained (a segment
    starts where the previous one ends). The partition's record holds its policy state,
    ``head`` (its first segment), ``first`` and ``end``; the meta row holds the clock,
    counters, timer, dormant partitions, the live partition and tuple counts and the LRU
    order's bounds.

    Writes per step: per partition inserted into, its record and its new tuples as new
    segments (one put each); one removal per segment all of whose tuples left; a deleted
    partition's record and segments are removed. An eviction only moves ``first``: nothing is
    rewritten. Reads: the meta row, the records of the partitions the step's rows name, and a
    segment when one of its tuples is read (evicted, or output as content). A time policy or
    an operator's selector concerns every partition, so a whole window with one loads every
    record.

    Partition eviction by LRU (:class:`_Lru`) finds the least recently used partition in
    O(1) amortized reads, never scanning the partitions.

    ``whole=False`` runs one key's window (its rows all name the key's partition); a whole
    window (:func:`runs_whole`) evicts partitions through :class:`_Lru` unless its spec has an
    operator's selector. Call :meth:`save` after each step.
    """

    def __init__(self, spec: WindowSpec, store: WindowStore, whole: bool = False) -> None:
        self.store, self.whole, config = store, whole, spec.window
        self.meta = store.get_meta() or _fresh_meta(_kind(config))
        if self.meta.get("version") != META_VERSION or self.meta["kind"] != _kind(config):
            raise ValueError(f"stored window {self.meta.get('kind')!r} is not a {_kind(config)}")
        self.table = _Partitions(store, self.meta)
        policy = config.partition_eviction
        selector = policy is not None and policy.selector is not None
        lru = whole and policy is not None and not selector
        self.lru = _Lru(store, self.table, *self.meta["lru"]) if lru else None
        self.loads_all = whole and (_has_time(config) or selector)
        dormant = {r["key"]: _partition(r, Entries()) for r in self.meta["dormant"]}
        now_ms, seq = self.meta["now_ms"], self.meta["seq"]
        self.state = WindowState(_kind(config), now_ms, seq, self.table, dormant)
        self.window = _logic(config, self.state, self.lru)

    def rows(
        self, rows: Sequence[tuple[int | None, PartitionKey, Record]], clock_ms: int | None = None
    ) -> Step:
        """:func:`on_partitioned_rows` on the stored window (``rows`` name their partition)."""
        self._load(key for _, key, _ in rows)
        return self._step(feed_rows(self.window, rows, clock_ms), fired=False)

    def timer(
        self, fired_ms: int, now_ms: int | None = None, keys: Iterable[PartitionKey] = ()
    ) -> Step:
        """:func:`on_timer` on the stored window, loading the partitions ``keys`` first
        (a whole window with a time policy loads them all)."""
        self._load(keys)
        target = max(fired_ms, self.window.now_ms, -1 if now_ms is None else now_ms)
        return self._step(self.window.advance_to(target), fired=True)

    def save(self) -> None:
        """Write what the step changed (see the class doc)."""
        state = self.state
        order = self.lru.save() if self.lru else {}
        self.table.save(order)
        self.meta.update(
            now_ms=state.now_ms,
            seq=state.seq,
            dormant=[_record(key, part) for key, part in state.dormant.items()],
            parts=self.table.count,
            tuples=self.table.total,
            created=self.table.created,
            lru=[self.lru.head, self.lru.next] if self.lru else self.meta["lru"],
        )
        self.store.put_meta(self.meta)

    def _load(self, keys: Iterable[PartitionKey]) -> None:
        if self.loads_all:
            self.table.load_all()
        else:  # one key's window has at most the key's partition
            self.table.load_keys(set(keys), known=not self.whole)

    def _step(self, events: list[WindowEvent], fired: bool) -> Step:
        before = None if fired else self.meta["timer_ms"]
        due = self.window.next_due()
        self.meta["emitted"] += len(events)
        self.meta["timer_ms"] = due
        step = Step(events, KeyState(None, self.meta["emitted"], due))
        if due != before:
            step.delete_timer, step.register_timer = before, due
        return step


class _Run:
    """A partition's stored segments, read (and cached) as they are needed."""

    def __init__(self, store: WindowStore, pid: str, head: int = 0, end: int = 0) -> None:
        self.store, self.pid, self.head, self.end = store, pid, head, end
        self.cursor = head  # the segment holding the last tuple read by :meth:`at`
        self.cache: dict[int, Items] = {}

    def segment(self, start: int) -> Items:
        items = self.cache.get(start)
        if items is None:
            raw = self.store.get_segment(self.pid, start)
            if raw is None:
                raise ValueError(f"window state lacks segment {start} of partition {self.pid}")
            items = self.cache[start] = [(int(at_ms), record) for at_ms, record in raw]
        return items

    def at(self, position: int) -> tuple[int, Record]:
        """The stored tuple number ``position`` (positions read must not go back)."""
        while position >= self.cursor + len(items := self.segment(self.cursor)):
            self.cursor += len(items)
        return items[position - self.cursor]

    def items(self, begin: int) -> Iterator[tuple[int, Record]]:
        """The stored tuples from number ``begin`` on."""
        start = self.head
        while start < self.end:
            items = self.segment(start)
            yield from items[max(0, begin - start) :]
            start += len(items)

    def drop_before(self, position: int) -> int | None:
        """Remove the segments whose tuples all come before ``position``; the first kept."""
        start = self.head
        while start < self.end:
            if start >= position:
                return start
            after = start + len(self.segment(start))
            if after > position:
                return start
            self.store.remove_segment(self.pid, start)
            start = after
        return None


class StoredEntries(Entries):
    """:class:`.state.Entries` over a partition's stored tuples (:class:`_Run`) plus the tuples
    a step appends (kept in memory, numbered on from ``run.end``, until :meth:`save`).

    ``loaded`` is the partition's record as loaded (``None`` for a partition the step made)
    and ``created`` its creation number (creation order orders partitions, see :mod:`.window`).
    """

    __slots__ = ("created", "first", "loaded", "run")

    def __init__(
        self, run: _Run, first: int, created: int, loaded: dict[str, Any] | None = None
    ) -> None:
        super().__init__()
        self.run, self.first = run, first
        self.created, self.loaded = created, loaded

    def __len__(self) -> int:
        return self.run.end - self.first + len(self.records) - self.head

    def __bool__(self) -> bool:
        return len(self) > 0

    def oldest(self) -> tuple[int, Record]:
        if self.first < self.run.end:
            return self.run.at(self.first)
        return super().oldest()

    def pop_oldest(self) -> Record:
        if self.first < self.run.end:
            self.first += 1
            return self.run.at(self.first - 1)[1]
        record = self.records[self.head]
        self.head += 1
        return record

    def remove_where(self, doomed: Callable[[Record], bool]) -> list[Record]:
        """As :meth:`.state.Entries.remove_where`; removing only the oldest just pops them."""
        items = list(self.items())
        flags = [doomed(record) for _, record in items]
        removed = [record for (_, record), gone in zip(items, flags, strict=True) if gone]
        if all(flags[: len(removed)]):
            for _ in removed:
                self.pop_oldest()
            return removed
        self.clear()
        for (at_ms, record), gone in zip(items, flags, strict=True):
            if not gone:
                self.append(at_ms, record)
        return removed

    def clear(self) -> None:
        self.first = self.run.end
        self.records, self.times, self.head = [], [], 0

    def view(self) -> Content:
        if self.first < self.run.end:
            return _StoredContent(self.run, self.first, self.records, self.head)
        return super().view()

    def items(self) -> Iterator[tuple[int, Record]]:
        stored = self.run.items(self.first) if self.first < self.run.end else iter(())
        return chain(stored, zip(self.times[self.head :], self.records[self.head :], strict=True))

    def save(self) -> dict[str, int]:
        """Write the new tuples, remove the segments that emptied; the record's fields."""
        base = self.run.end
        first = self.first if self.first < base else base + self.head
        kept = self.run.drop_before(first)
        new = list(zip(self.times[self.head :], self.records[self.head :], strict=True))
        start, end = base + self.head, base + len(self.records)
        for offset in range(0, len(new), SEGMENT_TUPLES):
            chunk = new[offset : offset + SEGMENT_TUPLES]
            self.run.store.put_segment(self.run.pid, start + offset, chunk)
        head = kept if kept is not None else start if new else end
        return {"head": head, "first": first, "end": end}


class _StoredContent(Content):
    """A view of stored tuples ``[begin, run.end)`` then ``items[start:]``: read when used."""

    __slots__ = ("_begin", "_run")

    def __init__(self, run: _Run, begin: int, items: list[Record], start: int) -> None:
        super().__init__(items, start, len(items))
        self._run, self._begin = run, begin

    def __len__(self) -> int:
        return self._run.end - self._begin + self._stop - self._start

    def __getitem__(self, index: int | slice) -> Any:
        return tuple(self)[index]

    def __iter__(self) -> Iterator[Record]:
        stored = (record for _, record in self._run.items(self._begin))
        return chain(stored, islice(self._items, self._start, self._stop))


class _Partitions(dict[PartitionKey, PartitionState]):
    """``WindowState.partitions`` of a :class:`StoredWindow`: the partitions loaded or made.

    Keeps ``count`` (live partitions) and ``total`` (their tuples) as the window creates,
    deletes and fills partitions, and remembers the deleted ones (``gone``) for :meth:`save`.
    """

    def __init__(self, store: WindowStore, meta: Mapping[str, Any]) -> None:
        super().__init__()
        self.store = store
        self.count, self.total, self.created = meta["parts"], meta["tuples"], meta["created"]
        self.counted: dict[PartitionKey, int] = {}  # each partition's size in ``total``
        self.orders: dict[str, int] = {}  # stored LRU position of each loaded partition
        self.gone: list[StoredEntries] = []
        self.lru: _Lru | None = None

    def __setitem__(self, key: PartitionKey, part: PartitionState) -> None:
        """The window makes (or revives) partition ``key``."""
        self.created += 1
        part.entries = StoredEntries(_Run(self.store, compact_json(key)), 0, self.created)
        self.count += 1
        self.counted[key] = part.size
        self.total += part.size
        super().__setitem__(key, part)

    def __delitem__(self, key: PartitionKey) -> None:
        """The window deletes partition ``key`` (evicted, flushed or emptied)."""
        self.gone.append(_stored(self[key]))
        self.count -= 1
        self.total -= self.counted.pop(key)
        if self.lru is not None:
            self.lru.forget(key)
        super().__delitem__(key)

    def recount(self, key: PartitionKey) -> None:
        """Bring ``total`` up to date with partition ``key``'s size."""
        part = self.get(key)
        if part is not None:
            self.total += part.size - self.counted[key]
            self.counted[key] = part.size

    def load_keys(self, keys: Iterable[PartitionKey], known: bool = False) -> None:
        """The stored partitions among ``keys``; ``known``: any stored partition is one of
        them, so the store need not be asked which exist."""
        for key in keys:
            pid = compact_json(key)
            if self.count and key not in self and (known or self.store.has_part(pid)):
                self._add(self._get(pid))

    def load_all(self) -> None:
        """Every stored partition, in creation order."""
        for record in sorted(self.store.all_parts(), key=lambda r: int(r["created"])):
            if record["key"] not in self:
                self._add(record)

    def load(self, key: PartitionKey) -> PartitionState:
        """Partition ``key``, loaded if it is not yet (it must exist)."""
        if key not in self:
            self._add(self._get(compact_json(key)))
        return self[key]

    def _get(self, pid: str) -> dict[str, Any]:
        record = self.store.get_part(pid)
        if record is None:
            raise ValueError(f"window state lacks the record of partition {pid}")
        return record

    def save(self, order: Mapping[PartitionKey, int]) -> None:
        """Remove the deleted partitions, then write the live ones that changed."""
        for entries in self.gone:
            entries.run.drop_before(entries.run.end)
            if entries.loaded is not None:
                self.store.remove_part(entries.run.pid)
        for key, part in self.items():
            self.recount(key)
            entries = _stored(part)
            loaded = entries.loaded or {}
            record = _record(key, part) | entries.save()
            record |= {"created": entries.created, "order": order.get(key, loaded.get("order"))}
            if record != entries.loaded:
                self.store.put_part(entries.run.pid, record)

    def _add(self, record: dict[str, Any]) -> None:
        key, pid = record["key"], compact_json(record["key"])
        run = _Run(self.store, pid, int(record["head"]), int(record["end"]))
        entries = StoredEntries(run, int(record["first"]), int(record["created"]), record)
        part = _partition(record, entries)
        dict.__setitem__(self, key, part)  # loaded, not made: no counting
        self.counted[key] = part.size
        if record.get("order") is not None:
            self.orders[pid] = int(record["order"])


class _Lru:
    """Partitions least recently inserted into first, for partition eviction by LRU.

    Stored ``order`` rows (positions given at each save, oldest first), then the partitions
    inserted into in this step, in insertion order. A stored row no longer counts once its
    partition is inserted into or deleted; the search moves ``head`` past such rows and past
    removed ones for good, so over a run it reads each position at most once.
    """

    def __init__(self, store: WindowStore, table: _Partitions, head: int, next_: int) -> None:
        self.store, self.table, self.head, self.next = store, table, head, next_
        self.row: tuple[str, int] | None = None  # the order row at ``head``, once read
        self.recent: dict[PartitionKey, None] = {}  # inserted into this step, live, oldest first
        self.stale: set[str] = set()  # partition ids whose stored row no longer counts
        table.lru = self

    def touch(self, key: PartitionKey) -> None:
        """An insertion into ``key``: it becomes the most recently used."""
        self.forget(key)
        self.recent[key] = None

    def forget(self, key: PartitionKey) -> None:
        """Partition ``key`` was deleted (or moves to the end): its stored row is stale."""
        pid = compact_json(key)
        self.recent.pop(key, None)
        self.stale.add(pid)
        if self.row is not None and self.row[0] == pid:
            self.head, self.row = self.head + 1, None

    def oldest(self) -> tuple[PartitionKey, int] | None:
        """The least recently used live partition and its last insertion time."""
        while self.head < self.next:
            if self.row is None:
                self.row = self.store.get_order(self.head)
            if self.row is not None and self.row[0] not in self.stale:
                return json.loads(self.row[0]), int(self.row[1])
            self.head, self.row = self.head + 1, None
        for key in self.recent:
            return key, self.table[key].last_insert_ms
        return None

    def save(self) -> dict[PartitionKey, int]:
        """Move the partitions inserted into to the end of the order; their new positions."""
        for pid in self.stale:
            if pid in self.table.orders:
                self.store.remove_order(self.table.orders[pid])
        positions = {}
        for key in self.recent:
            self.store.put_order(self.next, compact_json(key), self.table[key].last_insert_ms)
            positions[key], self.next = self.next, self.next + 1
        return positions


class _LruEviction(WindowLogic):
    """Partition eviction by LRU over :class:`_Lru`, with the limits of :mod:`.partitioned`.

    Equal to :func:`.partitioned.evict_partitions` with LRU selection: victims go one by
    one, oldest first (deleting fires nothing, so the events are the same as in rounds).
    """

    _lru: _Lru
    _table: _Partitions
    _limit: PartitionLimit

    def advance_to(self, time_ms: int) -> list[WindowEvent]:
        events = super().advance_to(time_ms)
        for key in {event.partition for event in events}:  # time eviction shrinks partitions
            self._table.recount(key)
        return events

    def _insert_entry(
        self, key: PartitionKey, record: Record, out: list[WindowEvent], keep: bool = True
    ) -> PartitionState | None:
        part = super()._insert_entry(key, record, out, keep)
        self._lru.touch(key)
        if isinstance(self._limit, PartitionAge):
            return part
        self._table.recount(key)
        self._evict_partitions(out)
        return self._state.partitions.get(key)

    def _check_partition_age(self, out: list[WindowEvent]) -> None:
        if isinstance(self._limit, PartitionAge):
            self._evict_partitions(out)

    def attach(self, lru: _Lru, limit: PartitionLimit) -> None:
        """Evict through ``lru`` (the core's own check, which scans every partition, is off)."""
        self._lru, self._table, self._limit = lru, lru.table, limit
        self._partition_eviction = None

    def _evict_partitions(self, out: list[WindowEvent]) -> None:
        """Delete the least recently used partition while the limit is exceeded (deleting
        an empty partition leaves a tuple count as it was, so this is the core's rounds)."""
        limit, table = self._limit, self._table
        if isinstance(limit, PartitionCount):
            while table.count > limit.count and self._evict_lru(out):
                pass
        elif isinstance(limit, TupleCount):
            while table.total > limit.tuples and self._evict_lru(out):
                pass
        else:
            oldest = self._lru.oldest()
            if oldest is None or oldest[1] + limit.age_ms >= self.now_ms:
                return
            while (oldest := self._lru.oldest()) and oldest[1] + limit.age_ms <= self.now_ms:
                self._evict_lru(out)

    def _evict_lru(self, out: list[WindowEvent]) -> bool:
        """``partition_evict`` and delete the least recently used partition, if any."""
        oldest = self._lru.oldest()
        if oldest is None:
            return False
        key = oldest[0]
        part = self._table.load(key)
        out.append(WindowEvent(EventKind.PARTITION_EVICT, key, part.content(), self.now_ms))
        del self._state.partitions[key]
        return True


class _LruSliding(_LruEviction, SlidingLogic):
    """A sliding window with :class:`_LruEviction`."""


class _LruTumbling(_LruEviction, TumblingLogic):
    """A tumbling window with :class:`_LruEviction`."""


def _logic(
    config: SlidingWindow | TumblingWindow, state: WindowState, lru: _Lru | None
) -> WindowLogic:
    """The window logic over ``state``; with ``lru``, evicting partitions through it."""
    window: WindowLogic
    if isinstance(config, SlidingWindow):
        window = (SlidingLogic if lru is None else _LruSliding)(config, state)
    else:
        window = (TumblingLogic if lru is None else _LruTumbling)(config, state)
    if isinstance(window, _LruEviction) and lru is not None and config.partition_eviction:
        window.attach(lru, config.partition_eviction.limit)
    window.empty_window_events = False
    return window


def _fresh_meta(kind: str) -> dict[str, Any]:
    return {
        "version": META_VERSION,
        "kind": kind,
        "now_ms": 0,
        "seq": 0,
        "emitted": 0,
        "timer_ms": None,
        "dormant": [],
        "parts": 0,
        "tuples": 0,
        "created": 0,
        "lru": [0, 0],
    }


def _kind(config: SlidingWindow | TumblingWindow) -> str:
    return "sliding" if isinstance(config, SlidingWindow) else "tumbling"


def _has_time(config: SlidingWindow | TumblingWindow) -> bool:
    policies = [config.evict, config.trigger if isinstance(config, SlidingWindow) else None]
    return any(isinstance(policy, Time) for policy in policies)


def _record(key: PartitionKey, part: PartitionState) -> dict[str, Any]:
    """A partition's policy state as a JSON-able record (its tuples are stored apart)."""
    return {"key": key, **{name: getattr(part, name) for name in _FIELDS}}


def _partition(record: Mapping[str, Any], entries: Entries) -> PartitionState:
    fields = {name: record[name] for name in _FIELDS}
    fields["summaries"] = copy.deepcopy(fields["summaries"])  # the window changes its own
    return PartitionState(entries=entries, **fields)


def _stored(part: PartitionState) -> StoredEntries:
    if not isinstance(part.entries, StoredEntries):
        raise TypeError("a stored window's partition without StoredEntries")
    return part.entries


class TextStore:
    """A :class:`WindowStore` in memory whose rows are JSON text, as a state store keeps them
    (a read gives a fresh copy), loaded from and saved as one text (:meth:`text`): a line per
    row, its key and its value. Engines that keep a key's whole window as one state value
    (:mod:`trending.spark.key_buckets`) run :class:`StoredWindow` over it; a row is parsed
    only when a step reads it. A row's key is its table's letter and its key's parts as JSON
    (``p"a"``, ``s"a"12``, ``o7``, ``m``): no tab or newline, never empty."""

    def __init__(self, text: str | None = None) -> None:
        self.rows: dict[str, str] = {}
        for line in (text or "").splitlines():
            key, _, value = line.partition("\t")
            self.rows[key] = value

    def text(self) -> str:
        return "\n".join(f"{key}\t{value}" for key, value in self.rows.items())

    def _get(self, key: str) -> Any:
        text = self.rows.get(key)
        return None if text is None else json.loads(text)

    def get_meta(self) -> dict[str, Any] | None:
        meta: dict[str, Any] | None = self._get("m")
        return meta

    def put_meta(self, meta: dict[str, Any]) -> None:
        self.rows["m"] = _compact(meta)

    def has_part(self, pid: str) -> bool:
        return "p" + _quoted(pid) in self.rows

    def get_part(self, pid: str) -> dict[str, Any] | None:
        part: dict[str, Any] | None = self._get("p" + _quoted(pid))
        return part

    def all_parts(self) -> Iterable[dict[str, Any]]:
        return [json.loads(v) for k, v in self.rows.items() if k[0] == "p"]

    def put_part(self, pid: str, record: dict[str, Any]) -> None:
        self.rows["p" + _quoted(pid)] = _compact(record)

    def remove_part(self, pid: str) -> None:
        self.rows.pop("p" + _quoted(pid), None)

    def get_segment(self, pid: str, start: int) -> Items | None:
        items: Items | None = self._get(f"s{_quoted(pid)}{start}")
        return items

    def put_segment(self, pid: str, start: int, items: Items) -> None:
        self.rows[f"s{_quoted(pid)}{start}"] = _compact(items)

    def remove_segment(self, pid: str, start: int) -> None:
        self.rows.pop(f"s{_quoted(pid)}{start}", None)

    def get_order(self, position: int) -> tuple[str, int] | None:
        row = self._get(f"o{position}")
        return None if row is None else (str(row[0]), int(row[1]))

    def put_order(self, position: int, pid: str, last_ms: int) -> None:
        self.rows[f"o{position}"] = _compact([pid, last_ms])

    def remove_order(self, position: int) -> None:
        self.rows.pop(f"o{position}", None)


_compact = json.JSONEncoder(separators=(",", ":"), default=str).encode
_quoted: Callable[[str], str] = json.encoder.encode_basestring
