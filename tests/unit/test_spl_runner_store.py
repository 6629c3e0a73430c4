"""The incremental form of the runner's pure half (:class:`stored.StoredWindow`), without Spark.

A dict of JSON text plays Spark's state store (:class:`MemoryStore`). Each micro-batch and
each fired timer runs on a new ``StoredWindow`` over the same store, as after a restart. What
one key's window publishes (its triggers and flushes) is checked against the SPL rules by brute
force (:func:`tests.support.oracles.spl_outputs`); every event, and the partition eviction of
whole windows, against the pure core (``build_window``) fed every row in one go (the core
itself is checked against brute force in ``tests/unit/windows/spl``). The store's call counts
check the layout's costs: a window's tuples are written once, evictions remove rows, and a
step reads what it touches, not the whole window.
"""

from __future__ import annotations

import itertools
import json
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.oracles import Output, spl_outputs
from trending.windows.spl import PartitionInfo, PartitionKey, WindowEvent, parse_spec
from trending.windows.spl.events import EventKind
from trending.windows.spl.keyed import (
    build_window,
    event_row,
    pure_partitioned_inputs,
)
from trending.windows.spl.stored import SEGMENT_TUPLES, Items, StoredWindow, TextStore

Row = tuple[int | None, PartitionKey, dict[str, Any]]
Essence = tuple[str, PartitionKey, list[int], int, Any]


class MemoryStore:
    """A ``WindowStore`` keeping each row as JSON text (as a state store serializes it),
    counting the calls per kind (``get_part``, ``put_segment``, ...)."""

    def __init__(self) -> None:
        self.rows: dict[tuple[Any, ...], str] = {}
        self.calls: Counter[str] = Counter()
        self.largest_segment = 0  # most tuples in one put_segment

    def _get(self, call: str, key: tuple[Any, ...]) -> Any:
        self.calls[call] += 1
        text = self.rows.get(key)
        return None if text is None else json.loads(text)

    def _put(self, call: str, key: tuple[Any, ...], value: Any) -> None:
        self.calls[call] += 1
        self.rows[key] = json.dumps(value)

    def _remove(self, call: str, key: tuple[Any, ...]) -> None:
        self.calls[call] += 1
        self.rows.pop(key, None)

    def get_meta(self) -> dict[str, Any] | None:
        return self._get("get_meta", ("meta",))  # type: ignore[no-any-return]

    def put_meta(self, meta: dict[str, Any]) -> None:
        self._put("put_meta", ("meta",), meta)

    def has_part(self, pid: str) -> bool:
        self.calls["has_part"] += 1
        return ("part", pid) in self.rows

    def get_part(self, pid: str) -> dict[str, Any] | None:
        return self._get("get_part", ("part", pid))  # type: ignore[no-any-return]

    def all_parts(self) -> Iterable[dict[str, Any]]:
        """In no useful order (here: partition ids descending), as a state store's scan."""
        self.calls["all_parts"] += 1
        parts = sorted((key, text) for key, text in self.rows.items() if key[0] == "part")
        return [json.loads(text) for _, text in reversed(parts)]

    def put_part(self, pid: str, record: dict[str, Any]) -> None:
        self._put("put_part", ("part", pid), record)

    def remove_part(self, pid: str) -> None:
        self._remove("remove_part", ("part", pid))

    def get_segment(self, pid: str, start: int) -> Items | None:
        return self._get("get_segment", ("segment", pid, start))  # type: ignore[no-any-return]

    def put_segment(self, pid: str, start: int, items: Items) -> None:
        self.largest_segment = max(self.largest_segment, len(items))
        self._put("put_segment", ("segment", pid, start), items)

    def remove_segment(self, pid: str, start: int) -> None:
        self._remove("remove_segment", ("segment", pid, start))

    def get_order(self, position: int) -> tuple[str, int] | None:
        row = self._get("get_order", ("order", position))
        return None if row is None else (row[0], row[1])

    def put_order(self, position: int, pid: str, last_ms: int) -> None:
        self._put("put_order", ("order", position), [pid, last_ms])

    def remove_order(self, position: int) -> None:
        self._remove("remove_order", ("order", position))

    def stored_tuples(self) -> int:
        return sum(len(json.loads(t)) for k, t in self.rows.items() if k[0] == "segment")

    def count(self, table: str) -> int:
        return sum(key[0] == table for key in self.rows)


def essence(events: Iterable[WindowEvent]) -> list[Essence]:
    return [
        (e.kind.value, e.partition, [r["i"] for r in e.tuples], e.time_ms, _summary(e))
        for e in events
    ]


def _summary(event: WindowEvent) -> Any:
    return None if event.summary is None else dict(event.summary)


def run_stored(
    spec: Any, rows: Sequence[Row], cuts: Iterable[int], whole: bool, store: MemoryStore
) -> list[Essence]:
    """Batches split at ``cuts``, watermark = the newest time seen; after each batch the
    timer fires while it is at or below the watermark, and a last watermark 10 s later
    closes what is left. Contents are read after each step's save."""
    bounds = [0, *sorted({c for c in cuts if 0 < c < len(rows)}), len(rows)]
    batches = [list(rows[b:e]) for b, e in itertools.pairwise(bounds)]
    newest = max((t for t, _, _ in rows if t is not None), default=0)
    keys = sorted({key for _, key, _ in rows}, key=str)
    out: list[Essence] = []
    timer: int | None = None
    watermarks = [max((t or 0 for t, _, _ in b), default=0) for b in batches]
    for batch, watermark in [*zip(batches, watermarks, strict=True), ([], newest + 10_000)]:
        if batch:
            window = StoredWindow(spec, store, whole)
            step = window.rows(batch)
            window.save()
            out, timer = out + essence(step.events), step.state.timer_ms
        while timer is not None and timer <= watermark:
            window = StoredWindow(spec, store, whole)
            step = window.timer(timer, watermark, keys)
            window.save()
            out, timer = out + essence(step.events), step.state.timer_ms
    return out


def published(events: list[Essence]) -> list[Output]:
    """The triggers and flushes of one key's events, as :func:`spl_outputs` writes them."""
    return [
        (kind, tuple(ids), time_ms, summary)
        for kind, _, ids, time_ms, summary in events
        if kind in ("trigger", "before_flush")
    ]


def pure_run(spec: Any, rows: Sequence[Row]) -> list[Essence]:
    window = build_window(spec)
    events = list(window.run(pure_partitioned_inputs(rows)))
    newest = max((t for t, _, _ in rows if t is not None), default=0)
    return essence(events + window.advance_to(max(newest + 10_000, window.now_ms)))


KEY_SPECS: list[dict[str, Any]] = [
    {"kind": "sliding", "evict": {"count": 3}, "trigger": {"count": 2}},
    {"kind": "sliding", "evict": {"delta": {"attribute": "d", "size": 2}}, "trigger": {"count": 1}},
    {"kind": "sliding", "evict": {"count": 4}, "trigger": {"delta": {"attribute": "d", "size": 1}}},
    {"kind": "tumbling", "evict": {"count": 3}, "summaries": {"n": "count", "s": {"sum": "i"}}},
    {"kind": "tumbling", "evict": {"delta": {"attribute": "d", "size": 3}}, "keep_tuples": False,
     "summaries": {"top": {"top_k": {"attribute": "i", "k": 2}}}},
    {"kind": "tumbling", "evict": {"time": 2}},
    {"kind": "sliding", "evict": {"time": 3}, "trigger": {"time": 2}},
    {"kind": "sliding", "evict": {"count": 3}, "trigger": {"time": 1}},
    {"kind": "sliding", "evict": {"time": 2.5}, "trigger": {"count": 2}},
]  # fmt: skip


class ReloadedTextStore(TextStore):
    """A :class:`TextStore` that goes through its one text at the end of every step, as a
    bucket's row does between micro-batches."""

    def put_meta(self, meta: dict[str, Any]) -> None:
        super().put_meta(meta)
        self.rows = TextStore(self.text()).rows


@settings(max_examples=80, deadline=None)
@given(
    spec_index=st.integers(0, len(KEY_SPECS) - 1),
    gaps=st.lists(st.integers(0, 1700), min_size=1, max_size=30),
    deltas=st.lists(st.integers(-3, 4), min_size=30, max_size=30),
    cuts=st.lists(st.integers(0, 30), max_size=8),
    as_text=st.booleans(),
)
def test_a_stored_key_window_gives_the_events_of_one_pure_run(
    spec_index: int, gaps: list[int], deltas: list[int], cuts: list[int], as_text: bool
) -> None:
    #   one key's rows i = 0.. at increasing times, ``d`` wandering up and down (so delta
    #   eviction removes from the middle too), cut into batches anywhere, each batch and
    #   timer on a new StoredWindow over the same store: what it publishes is what the SPL
    #   rules say (brute force), and every event is that of the core fed everything at once.
    #   ``as_text``: the window kept as one text between steps (tuples with tabs and newlines)
    raw = KEY_SPECS[spec_index]
    spec = parse_spec(raw)
    times = [int(t) for t in np.cumsum(gaps)]
    d = [int(x) for x in np.cumsum(deltas)]
    extra = {"s": "tab\tline\n"} if as_text else {}
    rows: list[Row] = [(t, "k", {"i": i, "d": d[i], **extra}) for i, t in enumerate(times)]
    store = ReloadedTextStore() if as_text else MemoryStore()
    events = run_stored(spec, rows, cuts, False, store)
    by_rule = spl_outputs(raw, [(t, i, d[i]) for i, t in enumerate(times)], times[-1] + 10_000)
    assert published(events) == by_rule
    assert events == pure_run(spec, rows)


def choose_largest(infos: Sequence[PartitionInfo]) -> list[PartitionKey]:
    """An operator's selector: the partition with the most tuples (ties: smallest key)."""
    return [max(infos, key=lambda info: (info.size, -ord(str(info.key)))).key]


WHOLE_SPECS = [
    {"kind": "sliding", "evict": {"count": 3}, "trigger": {"count": 2},
     "partition_eviction": {"count": 2}},
    {"kind": "sliding", "evict": {"count": 3}, "partition_eviction": {"tuples": 5}},
    {"kind": "sliding", "evict": {"count": 2}, "partition_eviction": {"count": 0}},
    {"kind": "tumbling", "evict": {"count": 3}, "partition_eviction": {"count": 2},
     "summaries": {"n": "count"}},
    {"kind": "tumbling", "evict": {"count": 4}, "partition_eviction": {"tuples": 3}},
    {"kind": "sliding", "evict": {"count": 2}, "trigger": {"count": 1},
     "partition_eviction": {"age": 2}},
    {"kind": "sliding", "evict": {"delta": {"attribute": "d", "size": 2}},
     "partition_eviction": {"count": 3}},
    {"kind": "sliding", "evict": {"time": 3}, "trigger": {"time": 2},
     "partition_eviction": {"count": 2}},
    {"kind": "sliding", "evict": {"time": 2}, "trigger": {"count": 2},
     "partition_eviction": {"tuples": 4}},
    {"kind": "tumbling", "evict": {"time": 2}, "partition_eviction": {"age": 1.5}},
    {"kind": "sliding", "evict": {"count": 3}, "partition_eviction": {"tuples": 4,
                                                                      "select": "operator"}},
]  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(
    spec_index=st.integers(0, len(WHOLE_SPECS) - 1),
    keys=st.lists(st.sampled_from("abcdefg"), min_size=1, max_size=40),
    gaps=st.lists(st.integers(0, 1500), min_size=40, max_size=40),
    deltas=st.lists(st.integers(-3, 4), min_size=40, max_size=40),
    cuts=st.lists(st.integers(0, 40), max_size=8),
)
def test_a_stored_whole_window_gives_the_events_of_one_pure_run(
    spec_index: int, keys: list[str], gaps: list[int], deltas: list[int], cuts: list[int]
) -> None:
    #   one window partitioned by key, a..g in any order, at increasing times, cut anywhere:
    #   LRU eviction over the stored order (or an operator's selector over every partition)
    #   == the core's partition eviction over all partitions at once
    raw = {**WHOLE_SPECS[spec_index], "partition_by": "u"}
    spec = parse_spec(raw, choose_largest)
    times = np.cumsum(gaps).tolist()
    d = np.cumsum(deltas).tolist()
    rows: list[Row] = [
        (int(times[i]), key, {"i": i, "u": key, "d": d[i]}) for i, key in enumerate(keys)
    ]
    store = MemoryStore()
    assert run_stored(spec, rows, cuts, True, store) == pure_run(spec, rows)
    meta = store.get_meta()
    assert meta is not None and meta["parts"] == store.count("part")


def evictions(events: list[Essence]) -> list[tuple[str, PartitionKey, list[int]]]:
    return [(kind, p, ids) for kind, p, ids, _, _ in events if kind.endswith("evict")]


@pytest.mark.parametrize("cuts", [[], [1, 2, 3]], ids=["one batch", "one row a batch"])
def test_delta_eviction_from_the_middle_of_the_window(cuts: list[int]) -> None:
    #   delta(d, 2): d = 5 1 6; 6 goes in: 6 - 1 > 2 evicts tuple 1, 6 - 5 <= 2 keeps tuple 0
    spec = parse_spec({"kind": "sliding", "evict": {"delta": {"attribute": "d", "size": 2}}})
    rows: list[Row] = [(None, "k", {"i": i, "d": d}) for i, d in enumerate([5, 1, 6, 4])]
    events = run_stored(spec, rows, cuts, False, MemoryStore())
    assert events == pure_run(spec, rows)
    assert evictions(events) == [("before_evict", "k", [1]), ("after_evict", "k", [1])]
    assert events[-1][:3] == ("trigger", "k", [0, 2, 3])


def test_time_eviction_that_shrinks_a_partition_makes_room_under_a_tuple_count() -> None:
    #   sliding time(2 s), tupleCount(3), one batch: a@0 a@1.5 b@1.6 c@2.1 (seconds);
    #   at 2 s a's first tuple times out (a keeps 1), so c makes 3 tuples: nothing evicted
    raw = {"kind": "sliding", "evict": {"time": 2}, "partition_by": "u",
           "partition_eviction": {"tuples": 3}}  # fmt: skip
    spec = parse_spec(raw)
    timed = [(0, "a"), (1500, "a"), (1600, "b"), (2100, "c")]
    rows: list[Row] = [(t, u, {"i": i, "u": u}) for i, (t, u) in enumerate(timed)]
    events = run_stored(spec, rows, [], True, MemoryStore())
    assert events == pure_run(spec, rows)
    assert evictions(events)[:2] == [("before_evict", "a", [0]), ("after_evict", "a", [0])]
    assert not [e for e in events if e[0] == "partition_evict" and e[3] <= 2100]


def test_partition_age_is_exceeded_strictly_and_then_takes_every_partition_that_old() -> None:
    #   partitionAge(1 s): a@0 b@1 c@1000 d@1001 (ms). At c, a is exactly 1 s old: not
    #   exceeded, nothing goes. At d, a is older than 1 s: exceeded, and every partition at
    #   least 1 s old goes: a, then b (exactly 1 s); c stays
    raw = {"kind": "sliding", "evict": {"count": 2}, "partition_by": "u",
           "partition_eviction": {"age": 1}}  # fmt: skip
    spec = parse_spec(raw)
    timed = [(0, "a"), (1, "b"), (1000, "c"), (1001, "d")]
    rows: list[Row] = [(t, u, {"i": i, "u": u}) for i, (t, u) in enumerate(timed)]
    events = run_stored(spec, rows, [1, 2, 3], True, MemoryStore())
    assert events == pure_run(spec, rows)
    evicted = [(e[1], e[3]) for e in events if e[0] == "partition_evict" and e[3] <= 1001]
    assert evicted == [("a", 1001), ("b", 1001)]


def test_an_insertion_is_one_put_and_a_segment_goes_once_all_its_tuples_left() -> None:
    #   sliding count(1000), trigger count(1): 1000 rows in one batch (4 segments:
    #   256 256 256 232), then 600 batches of one row; each evicts the oldest tuple.
    #   tuples 0..599 leave: segments [0, 256) and [256, 512) are removed, once each
    spec = parse_spec({"kind": "sliding", "evict": {"count": 1000}, "trigger": {"count": 1}})
    store = MemoryStore()
    run_stored(spec, [(None, "k", {"i": i}) for i in range(1000)], [], False, store)
    assert store.calls["put_segment"] == 4 and store.largest_segment == SEGMENT_TUPLES
    store.calls.clear()
    for i in range(1000, 1600):
        window = StoredWindow(spec, store)
        step = window.rows([(None, "k", {"i": i})])
        window.save()
        evicted = [e.tuples[0]["i"] for e in step.events if e.kind == EventKind.AFTER_EVICT]
        assert evicted == [i - 1000]
    assert store.calls["put_segment"] == 600  # one put per insertion, of that tuple alone
    assert store.largest_segment == SEGMENT_TUPLES  # nothing bigger was ever rewritten
    assert store.calls["remove_segment"] == 2
    assert store.calls["get_segment"] <= 600 + 2  # the oldest tuple's segment, per step
    assert (store.calls["get_part"], store.calls["has_part"]) == (600, 0)  # its one record
    assert store.stored_tuples() == 1000 + 88  # 1000 live + tuples 512..599 of a segment


def test_a_trigger_reads_no_tuple_unless_its_content_is_read() -> None:
    #   a step that only inserts and triggers touches no segment; reading the content does
    spec = parse_spec({"kind": "sliding", "evict": {"count": 50}, "trigger": {"count": 1}})
    store = MemoryStore()
    run_stored(spec, [(None, "k", {"i": i}) for i in range(10)], [], False, store)
    store.calls.clear()
    window = StoredWindow(spec, store)
    step = window.rows([(None, "k", {"i": 10})])
    window.save()
    trigger = step.events[-1]
    assert trigger.kind == EventKind.TRIGGER and len(trigger.tuples) == 11
    assert store.calls["get_segment"] == 0
    assert [r["i"] for r in trigger.tuples] == list(range(11))
    assert store.calls["get_segment"] == 1


@pytest.mark.parametrize(
    ("limit", "order_reads"), [({"count": 300}, 1), ({"tuples": 300}, 1), ({"age": 1}, 2)]
)
def test_lru_eviction_reads_a_bounded_number_of_rows_whatever_the_partitions(
    limit: dict[str, Any], order_reads: int
) -> None:
    #   300 partitions k0..k299 of one tuple, k_j inserted at 2j ms; then 200 steps of one
    #   row of a new key k_i at 2(i - 300) + 1001 ms: each evicts exactly the least recently
    #   used partition k_(i-300) (count: 301 > 300; tuples: 301 > 300; age 1 s: only k_(i-300)
    #   is 1 s old). Per step the window reads its row, the new key's record (absent), the
    #   victim's order row, record and segment, and (age) the next order row, to see that it
    #   is not old enough: never the other partitions
    spec = parse_spec({"kind": "sliding", "evict": {"count": 2}, "partition_by": "u",
                       "partition_eviction": limit})  # fmt: skip
    store = MemoryStore()
    fill: list[Row] = [(2 * i, f"k{i}", {"i": i, "u": f"k{i}"}) for i in range(300)]
    run_stored(spec, fill, [], True, store)
    store.calls.clear()
    for i in range(300, 500):
        window = StoredWindow(spec, store, whole=True)
        step = window.rows([(2 * (i - 300) + 1001, f"k{i}", {"i": i, "u": f"k{i}"})])
        window.save()
        evicted = [e.partition for e in step.events if e.kind == EventKind.PARTITION_EVICT]
        assert evicted == [f"k{i - 300}"]
    assert store.calls["all_parts"] == 0
    assert store.calls["has_part"] == 200  # the new key: absent
    assert store.calls["get_part"] == 200  # the victim
    assert store.calls["get_segment"] == 200
    assert store.calls["get_order"] == 200 * order_reads
    assert store.count("part") == store.count("order") == 300
    assert store.count("segment") == 300


def test_a_flushed_or_evicted_partition_leaves_no_row_behind() -> None:
    #   tumbling count(3), partitionCount(1): a b a a a -> b evicts a, a evicts b, and
    #   a's window of 3 flushes: no partition, segment or order row is left, only the meta
    spec = parse_spec({"kind": "tumbling", "evict": {"count": 3}, "partition_by": "u",
                       "partition_eviction": {"count": 1}})  # fmt: skip
    store = MemoryStore()
    keys = ["a", "b", "a", "a", "a"]
    rows: list[Row] = [(None, key, {"i": i, "u": key}) for i, key in enumerate(keys)]
    events = run_stored(spec, rows, [1, 2, 3], True, store)
    assert [(kind, p, ids) for kind, p, ids, _, _ in events if "insert" not in kind] == [
        ("partition_evict", "a", [0]),
        ("partition_evict", "b", [1]),
        ("before_flush", "a", [2, 3, 4]),
        ("after_flush", "a", []),
    ]
    assert set(store.rows) == {("meta",)}


def test_a_stored_window_refuses_the_state_of_another_kind() -> None:
    store = MemoryStore()
    sliding = parse_spec({"kind": "sliding", "evict": {"count": 2}})
    run_stored(sliding, [(None, "k", {"i": 0})], [], False, store)
    with pytest.raises(ValueError, match="not a tumbling"):
        StoredWindow(parse_spec({"kind": "tumbling", "evict": {"count": 2}}), store)


def test_the_default_event_row_leaves_out_only_the_window_that_stays() -> None:
    #   trigger and initial_full carry the window that stays: left out unless asked for;
    #   every other event carries the tuples entering or leaving the window
    content = ({"a": 1}, {"a": 2})
    stays = {EventKind.TRIGGER, EventKind.INITIAL_FULL}
    for kind in EventKind:
        event = WindowEvent(kind, "k", content, 5)
        row = event_row("k", event, 0, include_window=False)
        assert row["tuples"] == (None if kind in stays else '[{"a":1},{"a":2}]'), kind
        full = event_row("k", event, 0, include_window=True)
        assert full["tuples"] == '[{"a":1},{"a":2}]'
