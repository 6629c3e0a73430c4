"""An oracle of the hashtags job written from its rule, apart from the job's code."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from random import Random
from typing import Any

from trending.text.hashtags import hashtag_keys

BASE_MS = 1_760_000_000_000


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


def random_tweets(
    rng: Random, count: int, tags: list[str], users: int, spacing_ms: int, jitter_ms: int = 0
) -> list[dict[str, Any]]:
    """``count`` tweets of 0-3 of ``tags`` each, ``spacing_ms`` apart in event time from
    :data:`BASE_MS`, each moved by up to ``jitter_ms`` either way."""
    return [
        {"id": i, "user": f"u{i % users}", "lang": None,
         "text": " ".join("#" + t for t in rng.sample(tags, rng.randint(0, 3))) + " hi",
         "created_at": BASE_MS + i * spacing_ms
         + (rng.randrange(-jitter_ms, jitter_ms) if jitter_ms else 0)}
        for i in range(count)
    ]  # fmt: skip


def hashtags_command(bootstrap: str, tag: str, checkpoint: Path, *extra: str) -> list[str]:
    """``trending run hashtags`` over topics ``tweets-``, ``trending-``, ``late-`` and
    ``dlq-<tag>``: 2m windows every 30s, no lateness (:func:`independent_finals` with
    ``120_000, 30_000, 0``), one partition, a small warm-up; ``extra`` flags appended."""
    return [
        sys.executable, "-m", "trending.cli", "run", "hashtags", "--master", "local[2]",
        "--warm-up-rows", "2000", "--bootstrap-servers", bootstrap,
        "--size", "120s", "--hop", "30s", "--lateness", "0s", "--partitions", "1",
        "--input-topic", f"tweets-{tag}", "--output-topic", f"trending-{tag}",
        "--late-topic", f"late-{tag}", "--dead-letter-topic", f"dlq-{tag}",
        "--checkpoint", str(checkpoint), "--metrics-port", "0", *extra,
    ]  # fmt: skip


def finals_of(records: list[dict[str, Any]]) -> dict[int, list[tuple[str, int]]]:
    """Each final top-k record's window start and ``(hashtag, count)`` entries."""
    return {
        r["window_start"]: [(e["hashtag"], e["count"]) for e in r["top"]]
        for r in records
        if r["is_final"]
    }
