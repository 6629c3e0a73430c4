"""Event-time sliding (hopping) windows over integer milliseconds.

Window ``n`` is ``[a + n*hop, a + n*hop + size)`` for alignment ``a``. A time ``t`` belongs to
every ``n`` with ``ceil((t - a - size + 1) / hop) <= n <= floor((t - a) / hop)``.

Counting goes through *panes* of width ``g = gcd(size, hop)``: pane ``p`` is
``[a + p*g, a + (p+1)*g)`` and lies wholly inside window ``n`` exactly when
``n*hop <= p*g`` and ``p*g + g <= n*hop + size``. A per-pane count is therefore added once to each
of the ``size / hop`` windows that hold it, never split.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Window:
    """A half-open interval ``[start, end)`` of event time in milliseconds."""

    start: int
    end: int


@dataclass(frozen=True)
class SlidingWindows:
    """Windows of ``size_ms`` starting every ``hop_ms``, aligned to ``align_ms``."""

    size_ms: int
    hop_ms: int
    align_ms: int = 0

    def __post_init__(self) -> None:
        if self.size_ms <= 0 or self.hop_ms <= 0:
            raise ValueError(
                f"window size and hop must be positive (size={self.size_ms}ms, hop={self.hop_ms}ms)"
            )
        if self.hop_ms > self.size_ms:
            raise ValueError(
                f"hop ({self.hop_ms}ms) must not exceed size ({self.size_ms}ms): "
                "every instant must belong to a window"
            )

    @property
    def pane_ms(self) -> int:
        """Pane width ``g = gcd(size, hop)``."""
        return math.gcd(self.size_ms, self.hop_ms)

    def window(self, n: int) -> Window:
        """Window ``n``: ``[a + n*hop, a + n*hop + size)``."""
        start = self.align_ms + n * self.hop_ms
        return Window(start, start + self.size_ms)

    def index_range(self, t: int) -> range:
        """Indices ``n`` of the windows holding ``t``, oldest first."""
        last = (t - self.align_ms) // self.hop_ms
        first = -((self.size_ms - 1 - (t - self.align_ms)) // self.hop_ms)  # ceil((t-a-size+1)/hop)
        return range(first, last + 1)

    def windows_of(self, t: int) -> list[Window]:
        """Every window holding ``t``, oldest first."""
        return [self.window(n) for n in self.index_range(t)]

    def last_end(self, t: int) -> int:
        """End of the newest window holding ``t``: ``t - ((t - a) mod hop) + size``."""
        return t - (t - self.align_ms) % self.hop_ms + self.size_ms

    def pane_start(self, t: int) -> int:
        """Start of the pane holding ``t``: ``t - ((t - a) mod g)``."""
        return t - (t - self.align_ms) % self.pane_ms

    def index_range_of_pane(self, pane_start: int) -> range:
        """Indices ``n`` of the windows that hold the pane starting at ``pane_start``."""
        return self.index_range(pane_start)
