"""Top-k per event-time sliding window, published whenever it changes and once more when final.

The Wallaroo trending-hashtags model made event-time:

* counts arrive pre-aggregated per pane (see :mod:`trending.windows.sliding`) and are added to
  every window holding the pane that is still open;
* the watermark is ``max event time seen - lateness``; window ``[s, e)`` is *final* once
  ``watermark >= e``, and a final window is never revised;
* an event at ``t`` is *late* when even its newest window is final: ``last_end(t) <= watermark``;
* :meth:`SlidingTopK.apply_batch` publishes, per window, at most one revision per batch (only when
  its top-k differs from the last one published), then advances the watermark and publishes a
  final record for every window it closes.

Revisions are numbered 1, 2, ... per window; the final record takes the next number.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from trending.windows.sliding import SlidingWindows, Window
from trending.windows.topk import TopK, top_k, top_k_after_increase


@dataclass(frozen=True)
class TopKUpdate:
    """One published record of a window's top-k."""

    window: Window
    top: TopK
    revision: int
    is_final: bool


@dataclass
class OpenWindow:
    """Counts of one open window and what was last published for it."""

    counts: dict[str, int] = field(default_factory=dict)
    published: TopK = ()
    revision: int = 0


@dataclass
class SlidingTopKState:
    """Everything :class:`SlidingTopK` needs to resume: plain data, picklable."""

    windows: dict[int, OpenWindow] = field(default_factory=dict)  # by window start
    max_event_ms: int | None = None


class SlidingTopK:
    """Sliding-window top-k with change detection, event-time watermark and finals."""

    def __init__(
        self,
        windows: SlidingWindows,
        k: int,
        lateness_ms: int,
        state: SlidingTopKState | None = None,
    ) -> None:
        if k <= 0:
            raise ValueError(f"k must be positive, got {k}")
        if lateness_ms < 0:
            raise ValueError(f"lateness must not be negative, got {lateness_ms}ms")
        self.spec = windows
        self.k = k
        self.lateness_ms = lateness_ms
        self.state = state if state is not None else SlidingTopKState()

    @property
    def watermark_ms(self) -> int | None:
        """``max event time - lateness``, or None before the first event."""
        latest = self.state.max_event_ms
        return None if latest is None else latest - self.lateness_ms

    def is_late(self, t: int) -> bool:
        """True when every window holding ``t`` is final already."""
        watermark = self.watermark_ms
        return watermark is not None and self.spec.last_end(t) <= watermark

    def apply_batch(
        self, pane_counts: Iterable[tuple[int, str, int]], max_event_ms: int | None
    ) -> list[TopKUpdate]:
        """Apply one micro-batch and return what it publishes, in order.

        ``pane_counts`` are ``(pane_start, key, count)`` rows of the batch's on-time events;
        ``max_event_ms`` is the newest event time of any valid event in the batch (keys or not).
        Counts go to the windows still open under the watermark at the start of the batch; then
        each changed window not closing now gets a revision if its top-k changed; then the
        watermark advances and every window it passes gets its final record.
        """
        increased = self._add(pane_counts)
        if max_event_ms is not None and (
            self.state.max_event_ms is None or max_event_ms > self.state.max_event_ms
        ):
            self.state.max_event_ms = max_event_ms
        updates = self._revisions(increased)
        updates.extend(self._finals())
        return updates

    def close_all(self) -> list[TopKUpdate]:
        """Publish every open window as final (the end of a bounded stream)."""
        return [self._finalize(start) for start in sorted(self.state.windows)]

    def _add(self, rows: Iterable[tuple[int, str, int]]) -> dict[int, set[str]]:
        by_pane: dict[int, dict[str, int]] = {}
        for pane_start, key, count in rows:
            pane = by_pane.setdefault(pane_start, {})
            pane[key] = pane.get(key, 0) + count
        increased: dict[int, set[str]] = {}
        for pane_start, pane in by_pane.items():
            for start in self._open_starts_of_pane(pane_start):
                _add_counts(self._open_window(start).counts, pane)
                increased.setdefault(start, set()).update(pane)
        return increased

    def _open_starts_of_pane(self, pane_start: int) -> list[int]:
        """Starts of the windows holding the pane that the watermark has not closed."""
        watermark = self.watermark_ms
        hop, size, align = self.spec.hop_ms, self.spec.size_ms, self.spec.align_ms
        starts = (align + n * hop for n in self.spec.index_range_of_pane(pane_start))
        return [s for s in starts if watermark is None or s + size > watermark]

    def _open_window(self, start: int) -> OpenWindow:
        window = self.state.windows.get(start)
        if window is None:
            window = self.state.windows[start] = OpenWindow()
        return window

    def _revisions(self, increased: dict[int, set[str]]) -> list[TopKUpdate]:
        watermark = self.watermark_ms
        updates = []
        for start in sorted(increased):
            if watermark is not None and start + self.spec.size_ms <= watermark:
                continue  # closes in this batch: its final record carries the new top-k
            window = self.state.windows[start]
            top = top_k_after_increase(window.counts, window.published, increased[start], self.k)
            if top != window.published:
                window.published, window.revision = top, window.revision + 1
                updates.append(TopKUpdate(self._window(start), top, window.revision, False))
        return updates

    def _finals(self) -> list[TopKUpdate]:
        watermark = self.watermark_ms
        if watermark is None:
            return []
        closing = sorted(s for s in self.state.windows if s + self.spec.size_ms <= watermark)
        return [self._finalize(start) for start in closing]

    def _finalize(self, start: int) -> TopKUpdate:
        window = self.state.windows.pop(start)
        top = top_k(window.counts, self.k)
        return TopKUpdate(self._window(start), top, window.revision + 1, True)

    def _window(self, start: int) -> Window:
        return Window(start, start + self.spec.size_ms)


def _add_counts(counts: dict[str, int], added: dict[str, int]) -> None:
    """``counts += added``, key by key (the hot loop: one dict update per key)."""
    get = counts.get
    for key, count in added.items():
        counts[key] = get(key, 0) + count
