"""Oracles for the tests, written from the rules, apart from the code they check.

Nothing here imports ``trending`` or ``connectors``: results are recomputed from their
definitions, so a test comparing the code with them can fail. Three parts:

* the hashtags job's windowing (docs/jobs/hashtags.md, "Semantics of
  trending run hashtags"), by brute force;
* Avro bodies, written and read by fastavro from the ``schemas/*.avsc`` files;
* what one key's SPL window publishes (:func:`spl_outputs`), by brute force.

The hashtags rules:

* Windows are ``[align + n*hop, align + n*hop + size)`` for every integer ``n``; an event at
  ``t`` belongs to every window whose range holds ``t``.
* A window's top-k: its ``k`` keys of highest count, ties by key ascending; a tweet counts once
  per distinct key.
* Watermark = newest event time seen - lateness. A window is final once the watermark reaches
  its end. An event whose windows are all final when its batch starts is late: routed, not
  counted.
* Per batch: a revision of each window whose top-k differs from the last one published for it
  (numbered 1, 2, ...; by window start), then a final record for each window the batch's
  watermark closes (the next number; by window start). A window that closes in the batch where
  it changed gets only its final record. A window that never held a key gets no record.
"""

from __future__ import annotations

import io
import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

import fastavro

Top = tuple[tuple[str, int], ...]  # (key, count), best first
Event = tuple[int, tuple[str, ...]]  # event time in ms, the keys of one tweet


@lru_cache(maxsize=1 << 16)
def window_starts(t: int, size: int, hop: int, align: int) -> tuple[int, ...]:
    """Starts ``s = align + n*hop`` of the windows ``[s, s + size)`` holding ``t``, oldest first.

    Every ``n`` from one below ``(t - align - size) / hop`` (no window starting earlier can reach
    ``t``) to one above ``(t - align) / hop`` (none starting later can hold it) is tried.
    """
    first = (t - align - size) // hop - 1
    last = (t - align) // hop + 1
    starts = (align + n * hop for n in range(first, last + 1))
    return tuple(s for s in starts if s <= t < s + size)


def top_k(counts: Mapping[str, int], k: int) -> Top:
    """The ``k`` best ``(key, count)`` of ``counts``: count descending, then key ascending."""
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return tuple(ranked[:k])


def window_counts(
    events: Iterable[Event], start: int, size: int, hop: int, align: int
) -> Counter[str]:
    """Counts per key of the events in window ``[start, start + size)``, once per tweet."""
    counts: Counter[str] = Counter()
    for t, keys in events:
        if start in window_starts(t, size, hop, align):
            counts.update(set(keys))
    return counts


@dataclass(frozen=True)
class Record:
    """One published top-k record: the window, its top-k, its number, whether final."""

    start: int
    end: int
    top: Top
    revision: int
    final: bool


@dataclass
class HashtagOutput:
    """The records the hashtags job publishes, batch by batch, recomputed from every event read.

    A window open when a batch starts held no late event (the watermark only grows), so its
    counts are those of every event read so far that it holds: the oracle never needs to know
    which events were counted.
    """

    size: int
    hop: int
    align: int
    k: int
    lateness: int
    read: list[Event] = field(default_factory=list)  # every event of every batch, late or not
    newest: int | None = None
    last: dict[int, Record] = field(default_factory=dict)  # last record of each window

    @property
    def watermark(self) -> int | None:
        """Newest event time seen - lateness; None before the first event."""
        return None if self.newest is None else self.newest - self.lateness

    def is_open(self, start: int, watermark: int | None) -> bool:
        """A window is open until the watermark reaches its end."""
        return watermark is None or start + self.size > watermark

    def is_late(self, t: int) -> bool:
        """Late: every window holding ``t`` is final already."""
        starts = window_starts(t, self.size, self.hop, self.align)
        return not any(self.is_open(s, self.watermark) for s in starts)

    def counts(self) -> dict[int, Counter[str]]:
        """Counts of every window holding a key, over every event read so far."""
        counts: dict[int, Counter[str]] = {}
        for t, keys in self.read:
            for s in window_starts(t, self.size, self.hop, self.align):
                if keys:
                    counts.setdefault(s, Counter()).update(set(keys))
        return counts

    def batch(self, events: list[Event]) -> list[Record]:
        """Read one micro-batch; return its records: revisions, then finals, each by start."""
        before = self.watermark
        on_time = [t for t, _ in events if not self.is_late(t)]
        self.read += events
        if on_time:
            self.newest = max(on_time) if self.newest is None else max(self.newest, *on_time)
        after = self.watermark
        tops = self._open_tops(before)
        revisions = [
            self._record(s, top, final=False)
            for s, top in tops.items()
            if self.is_open(s, after) and top != self._last_top(s)
        ]
        finals = [
            self._record(s, top, final=True)
            for s, top in tops.items()
            if not self.is_open(s, after)
        ]
        return revisions + finals

    def close_all(self) -> list[Record]:
        """The end of a bounded stream: a final record for every open window, by start."""
        tops = self._open_tops(self.watermark)
        return [self._record(s, top, final=True) for s, top in tops.items()]

    def _open_tops(self, watermark: int | None) -> dict[int, Top]:
        """Top-k of each window open under ``watermark`` that holds a key, by start."""
        counts = self.counts()
        return {s: top_k(counts[s], self.k) for s in sorted(counts) if self.is_open(s, watermark)}

    def _last_top(self, start: int) -> Top:
        last = self.last.get(start)
        return () if last is None else last.top

    def _record(self, start: int, top: Top, final: bool) -> Record:
        last = self.last.get(start)
        revision = 1 if last is None else last.revision + 1
        record = Record(start, start + self.size, top, revision, final)
        self.last[start] = record
        return record


# ---- Avro bodies -------------------------------------------------------------------------------

SCHEMAS = Path(__file__).resolve().parents[2] / "schemas"  # the .avsc files, the source of truth


@cache
def _parsed(schema: str) -> Any:
    """The schema without its logical types: timestamps are read as the longs they are
    written as (epoch milliseconds), as the project's records hold them."""
    return fastavro.parse_schema(
        _without_logical_types(json.loads((SCHEMAS / f"{schema}.avsc").read_text("utf-8")))
    )


def _without_logical_types(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _without_logical_types(v) for k, v in node.items() if k != "logicalType"}
    if isinstance(node, list):
        return [_without_logical_types(v) for v in node]
    return node


def avro_body(schema: str, record: Mapping[str, Any]) -> bytes:
    """``record`` as a plain Avro body of ``schemas/<schema>.avsc``, written by fastavro (an
    implementation of the Avro spec apart from the project's codecs)."""
    parsed = _parsed(schema)
    out = io.BytesIO()
    fastavro.schemaless_writer(out, parsed, dict(record))
    return out.getvalue()


def avro_record(schema: str, body: bytes) -> Any:
    """The record a plain Avro body of ``schemas/<schema>.avsc`` holds, read by fastavro;
    ValueError unless the body is exactly one datum."""
    parsed = _parsed(schema)
    stream = io.BytesIO(body)
    record = fastavro.schemaless_reader(stream, parsed, return_record_name=False)
    if stream.tell() != len(body):
        raise ValueError(f"{len(body) - stream.tell()} bytes after the datum")
    return record


# ---- SPL windows of one key --------------------------------------------------------------------

SplRow = tuple[int, int, int]  # event time in ms, the tuple's id ``i``, its attribute ``d``
Output = tuple[str, tuple[int, ...], int, dict[str, Any] | None]  # kind, ids, time, summary


def spl_outputs(spec: Mapping[str, Any], rows: Sequence[SplRow], end_ms: int) -> list[Output]:
    """What one key's SPL window publishes, oldest first: each ``trigger`` (sliding) or
    ``before_flush`` (tumbling) with the ids of the tuples it carries, its time and summary.

    ``rows`` come at non-decreasing times (the clock is the newest time), then the clock moves
    to ``end_ms``. Written from the SPL rules (the seed's Tables 1 and 2), for these policies:

    * sliding, evict ``count(n)``: the last ``n`` tuples; ``delta(d, s)``: a new tuple ``x``
      evicts every ``w`` with ``x.d - w.d > s``; ``time(p)``: a tuple leaves ``p`` after it came,
      before anything else at that instant;
    * sliding, trigger ``count(c)``: after every ``c``-th insertion, on the window holding it;
      ``delta(d, s)``: before inserting ``x`` when ``x.d - ref.d > s`` (``ref``: the tuple of
      the last trigger, at first the first tuple), on the window before ``x``; ``time(P)``: at
      every multiple of ``P``, before the tuples of that instant, when the window holds any;
    * tumbling ``count(n)``: every ``n`` tuples; ``delta(d, s)``: before inserting ``x`` when
      ``x.d - oldest.d > s``; ``time(p)``: at every multiple of ``p``, the tuples of the period
      ``[m - p, m)`` when there are any; summaries ``count``, ``sum``, ``top_k`` (largest first),
      and no tuples when ``keep_tuples`` is false.
    """
    if spec["kind"] == "sliding":
        return _sliding_outputs(spec, rows, end_ms)
    return _tumbling_outputs(spec, rows, end_ms)


def _policy(raw: Mapping[str, Any]) -> tuple[str, Any]:
    ((name, value),) = raw.items()
    return name, value


def _ms(seconds: float) -> int:
    return round(seconds * 1000)


def _delta_content(size: float, rows: Sequence[SplRow]) -> list[int]:
    """Ids left by delta eviction after inserting ``rows`` one by one."""
    held: list[SplRow] = []
    for row in rows:
        held = [w for w in held if not row[2] - w[2] > size] + [row]
    return [i for _, i, _ in held]


def _content(evict: tuple[str, Any], rows: Sequence[SplRow], now: int) -> tuple[int, ...]:
    """A sliding window's ids once ``rows`` went in and the clock reached ``now``."""
    kind, value = evict
    if kind == "count":
        return tuple(i for _, i, _ in rows[max(0, len(rows) - value) :])
    if kind == "delta":
        return tuple(_delta_content(value["size"], rows))
    if kind == "time":
        return tuple(i for t, i, _ in rows if t + _ms(value) > now)
    raise NotImplementedError(kind)


def _sliding_outputs(spec: Mapping[str, Any], rows: Sequence[SplRow], end_ms: int) -> list[Output]:
    evict = _policy(spec["evict"])
    kind, value = _policy(spec.get("trigger") or {"count": 1})
    out: list[Output] = []
    if kind == "count":
        for j in range(value - 1, len(rows), value):
            out.append(("trigger", _content(evict, rows[: j + 1], rows[j][0]), rows[j][0], None))
    elif kind == "delta":
        ref = rows[0][2] if rows else 0
        for j in range(1, len(rows)):
            if rows[j][2] - ref > value["size"]:
                out.append(("trigger", _content(evict, rows[:j], rows[j][0]), rows[j][0], None))
                ref = rows[j][2]
    elif kind == "time":
        period = _ms(value)
        for m in range(period, end_ms + 1, period):
            # at m the trigger comes before the tuples of m and before the evictions due at m
            ids = _content(evict, [r for r in rows if r[0] < m], m - 1)
            if ids:
                out.append(("trigger", ids, m, None))
    else:
        raise NotImplementedError(kind)
    return out


def _tumbling_outputs(spec: Mapping[str, Any], rows: Sequence[SplRow], end_ms: int) -> list[Output]:
    kind, value = _policy(spec["evict"])
    flushes: list[tuple[list[SplRow], int]] = []  # the tuples flushed, the time
    if kind == "count":
        for j in range(value - 1, len(rows), value):
            flushes.append((list(rows[j - value + 1 : j + 1]), rows[j][0]))
    elif kind == "delta":
        window: list[SplRow] = []
        for row in rows:
            if window and row[2] - window[0][2] > value["size"]:
                flushes.append((window, row[0]))
                window = []
            window.append(row)
    elif kind == "time":
        period = _ms(value)
        for m in range(period, end_ms + 1, period):
            held = [r for r in rows if m - period <= r[0] < m]
            if held:
                flushes.append((held, m))
    else:
        raise NotImplementedError(kind)
    keep = spec.get("keep_tuples", True)
    summaries = spec.get("summaries")
    return [
        (
            "before_flush",
            tuple(i for _, i, _ in flushed) if keep else (),
            at,
            None if summaries is None else _summaries(summaries, flushed),
        )
        for flushed, at in flushes
    ]


def _summaries(wanted: Mapping[str, Any], rows: Sequence[SplRow]) -> dict[str, Any]:
    """``count``; ``{"sum": attribute}``; ``{"top_k": {"attribute", "k"}}``, largest first."""
    values = {"i": [i for _, i, _ in rows], "d": [d for _, _, d in rows]}
    out: dict[str, Any] = {}
    for name, how in wanted.items():
        if how == "count":
            out[name] = len(rows)
        elif "sum" in how:
            out[name] = sum(values[how["sum"]])
        elif "top_k" in how:
            out[name] = sorted(values[how["top_k"]["attribute"]], reverse=True)[: how["top_k"]["k"]]
        else:
            raise NotImplementedError(how)
    return out
