"""The driver's half of a distributed sliding-window top-k: merge at most k candidates per window.

The counts live elsewhere (per hashtag, in Spark's state store); per micro-batch the executors
send, for each window still open, the current counts of the hashtags that changed in the batch,
at most ``k`` of them (count desc, then tag asc). Counts only grow (late events are routed, never
counted), so a window's new top-k lies in ``published ∪ changed``, and of the changed keys only
the k best can enter it: the new top-k is ``top_k(published updated by the candidates)``.

The rules are those of :mod:`trending.windows.sliding_topk`:

* the watermark is ``max event time seen - lateness``; window ``[s, e)`` is final once
  ``watermark >= e``, and a final window is never revised;
* per batch, a window whose top-k differs from the last one published gets one revision, unless
  the watermark closes it in the same batch: then only its final record, which carries the new
  top-k; revisions are numbered 1, 2, ... and the final record takes the next number.

The state is the last published top-k and revision of each open window and the newest event
time: its size grows with the number of open windows times ``k``, never with the number of keys.
It goes in and out as JSON (:meth:`MergeState.to_json`), committed with the batch's output.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from trending.windows.sliding import SlidingWindows, Window
from trending.windows.topk import TopK, top_k

STATE_VERSION = 1


@dataclass(frozen=True)
class TopKUpdate:
    """One published record of a window's top-k."""

    window: Window
    top: TopK
    revision: int
    is_final: bool


@dataclass
class Published:
    """What was last published for one open window: its top-k (always the current one)."""

    top: TopK = ()
    revision: int = 0


@dataclass
class MergeState:
    """Everything :class:`TopKMerger` resumes from: open windows by start, newest event time."""

    windows: dict[int, Published] = field(default_factory=dict)
    max_event_ms: int | None = None

    def to_json(self) -> dict[str, Any]:
        """A versioned, JSON-serializable form."""
        return {
            "version": STATE_VERSION,
            "max_event_ms": self.max_event_ms,
            "windows": [
                [start, w.revision, [[tag, count] for tag, count in w.top]]
                for start, w in sorted(self.windows.items())
            ],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> MergeState:
        """The inverse of :meth:`to_json`; ValueError on another version or shape."""
        if not isinstance(data, dict) or data.get("version") != STATE_VERSION:
            raise ValueError(f"not a top-k merge state of version {STATE_VERSION}: {data!r:.200}")
        windows = {
            int(start): Published(tuple((str(t), int(c)) for t, c in top), int(revision))
            for start, revision, top in data["windows"]
        }
        newest = data["max_event_ms"]
        return cls(windows, None if newest is None else int(newest))


class TopKMerger:
    """Top-k per sliding window from per-batch candidates, with revisions and finals."""

    def __init__(
        self,
        windows: SlidingWindows,
        k: int,
        lateness_ms: int,
        state: MergeState | None = None,
    ) -> None:
        if k <= 0:
            raise ValueError(f"k must be positive, got {k}")
        if lateness_ms < 0:
            raise ValueError(f"lateness must not be negative, got {lateness_ms}ms")
        self.spec = windows
        self.k = k
        self.lateness_ms = lateness_ms
        self.state = state if state is not None else MergeState()

    @property
    def watermark_ms(self) -> int | None:
        """``max event time - lateness``, or None before the first event."""
        newest = self.state.max_event_ms
        return None if newest is None else newest - self.lateness_ms

    def thresholds(self) -> dict[int, int]:
        """Per open window with a full top-k, its k-th count: a changed count below it cannot
        enter the top-k, so the executors need not send it."""
        return {
            start: w.top[-1][1] for start, w in self.state.windows.items() if len(w.top) == self.k
        }

    def apply_batch(
        self, candidates: Iterable[tuple[int, str, int]], max_event_ms: int | None
    ) -> list[TopKUpdate]:
        """Apply one batch; return its revisions (by window start), then its finals.

        ``candidates`` are ``(window_start, key, count)``: current counts of keys that changed
        in the batch, in windows open at its start, including every one that can enter the
        window's top-k. ``max_event_ms`` is the batch's newest on-time event time (or None).
        """
        changed = self._merge(candidates)
        if max_event_ms is not None and (
            self.state.max_event_ms is None or max_event_ms > self.state.max_event_ms
        ):
            self.state.max_event_ms = max_event_ms
        updates = self._revisions(changed)
        updates.extend(self._finals())
        return updates

    def close_all(self) -> list[TopKUpdate]:
        """Publish every open window as final (the end of a bounded stream)."""
        starts = sorted(self.state.windows)
        return [self._final(start) for start in starts]

    def _merge(self, candidates: Iterable[tuple[int, str, int]]) -> dict[int, TopK]:
        """New top-k of each window with candidates (not yet published)."""
        by_window: dict[int, dict[str, int]] = {}
        for start, key, count in candidates:
            by_window.setdefault(start, {})[key] = count
        merged = {}
        for start, counts in by_window.items():
            current = dict(self.state.windows.get(start, Published()).top)
            current.update(counts)
            merged[start] = top_k(current, self.k)
        return merged

    def _revisions(self, merged: dict[int, TopK]) -> list[TopKUpdate]:
        watermark = self.watermark_ms
        updates = []
        for start in sorted(merged):
            window = self.state.windows.setdefault(start, Published())
            if merged[start] == window.top:
                continue
            window.top = merged[start]
            if watermark is not None and start + self.spec.size_ms <= watermark:
                continue  # closes in this batch: its final record carries the new top-k
            window.revision += 1
            updates.append(TopKUpdate(self._window(start), window.top, window.revision, False))
        return updates

    def _finals(self) -> list[TopKUpdate]:
        watermark = self.watermark_ms
        if watermark is None:
            return []
        closing = sorted(s for s in self.state.windows if s + self.spec.size_ms <= watermark)
        return [self._final(start) for start in closing]

    def _final(self, start: int) -> TopKUpdate:
        window = self.state.windows.pop(start)
        return TopKUpdate(self._window(start), window.top, window.revision + 1, True)

    def _window(self, start: int) -> Window:
        return Window(start, start + self.spec.size_ms)
