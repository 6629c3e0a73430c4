"""An oracle of the hashtags job written from its rule, apart from the job's code."""

from __future__ import annotations

from collections import Counter
from typing import Any

from trending.text.hashtags import hashtag_keys


def independent_finals(
    tweets: list[dict[str, Any]], size: int, hop: int, lateness: int
) -> dict[int, list[tuple[str, int]]]:
    """Every window ``[start, start + size)`` (starts at multiples of ``hop``) that the final
    watermark (newest event time - ``lateness``) closed: its top 10 (count desc, tag asc)."""
    watermark = max(t["created_at"] for t in tweets) - lateness
    counts: dict[int, Counter[str]] = {}
    for tweet in tweets:
        t = tweet["created_at"]
        start = t - t % hop
        while start > t - size:
            counts.setdefault(start, Counter()).update(hashtag_keys(tweet["text"]))
            start -= hop
    return {
        start: sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))[:10]
        for start, c in counts.items()
        if c and start + size <= watermark
    }
