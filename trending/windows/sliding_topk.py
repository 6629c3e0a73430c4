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

Revisions are numbered 1, 2, ... per window; the final record takes the next number. The rules
live in :class:`trending.windows.topk_merge.TopKMerger`, which the distributed job shares: here
the exact counts of every open window are kept in the process, and the current counts of the
keys a batch increased are the merger's candidates.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from trending.windows.sliding import SlidingWindows
from trending.windows.topk_merge import MergeState, TopKMerger, TopKUpdate

__all__ = ["SlidingTopK", "SlidingTopKState", "TopKUpdate"]


@dataclass
class SlidingTopKState:
    """Everything :class:`SlidingTopK` needs to resume: plain data, picklable."""

    counts: dict[int, dict[str, int]] = field(default_factory=dict)  # by window start
    published: MergeState = field(default_factory=MergeState)


class SlidingTopK:
    """Sliding-window top-k with change detection, event-time watermark and finals, in one
    process: the exact counts of every open window, and :class:`TopKMerger` for the rules."""

    def __init__(
        self,
        windows: SlidingWindows,
        k: int,
        lateness_ms: int,
        state: SlidingTopKState | None = None,
    ) -> None:
        self.state = state if state is not None else SlidingTopKState()
        self.merger = TopKMerger(windows, k, lateness_ms, self.state.published)
        self.spec = windows

    @property
    def watermark_ms(self) -> int | None:
        """``max event time - lateness``, or None before the first event."""
        return self.merger.watermark_ms

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
        Counts go to the windows still open under the watermark at the start of the batch; the
        current counts of the keys that grew are the merger's candidates.
        """
        increased = self._add(pane_counts)
        candidates = [
            (start, key, self.state.counts[start][key])
            for start, keys in increased.items()
            for key in keys
        ]
        updates = self.merger.apply_batch(candidates, max_event_ms)
        for update in updates:
            if update.is_final:
                self.state.counts.pop(update.window.start, None)
        return updates

    def close_all(self) -> list[TopKUpdate]:
        """Publish every open window as final (the end of a bounded stream)."""
        self.state.counts.clear()
        return self.merger.close_all()

    def _add(self, rows: Iterable[tuple[int, str, int]]) -> dict[int, set[str]]:
        by_pane: dict[int, dict[str, int]] = {}
        for pane_start, key, count in rows:
            pane = by_pane.setdefault(pane_start, {})
            pane[key] = pane.get(key, 0) + count
        increased: dict[int, set[str]] = {}
        for pane_start, pane in by_pane.items():
            for start in self._open_starts_of_pane(pane_start):
                _add_counts(self.state.counts.setdefault(start, {}), pane)
                increased.setdefault(start, set()).update(pane)
        return increased

    def _open_starts_of_pane(self, pane_start: int) -> list[int]:
        """Starts of the windows holding the pane that the watermark has not closed."""
        watermark = self.watermark_ms
        hop, size, align = self.spec.hop_ms, self.spec.size_ms, self.spec.align_ms
        starts = (align + n * hop for n in self.spec.index_range_of_pane(pane_start))
        return [s for s in starts if watermark is None or s + size > watermark]


def _add_counts(counts: dict[str, int], added: dict[str, int]) -> None:
    """``counts += added``, key by key (the hot loop: one dict update per key)."""
    get = counts.get
    for key, count in added.items():
        counts[key] = get(key, 0) + count
