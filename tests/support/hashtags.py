"""An oracle of the hashtags job written from its rule, apart from the job's code."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from random import Random
from typing import Any

from tests.support.oracles import top_k, window_starts
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
    ``120_000, 30_000, 0``), one partition, no warm-up (``extra`` may add one); ``extra`` flags
    appended (a flag given twice: the last wins)."""
    return [
        sys.executable, "-m", "trending.cli", "run", "hashtags", "--master", "local[2]",
        "--warm-up-rows", "0", "--bootstrap-servers", bootstrap,
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


def windows_holding(t: int, size: int, hop: int, align: int = 0) -> list[tuple[int, int]]:
    """Every window ``(start, end)`` holding ``t`` by the rule of docs/jobs/hashtags.md, oldest
    first (see :func:`tests.support.oracles.window_starts`)."""
    return [(s, s + size) for s in window_starts(t, size, hop, align)]


def rule_top(counts: Counter[str], k: int) -> list[tuple[str, int]]:
    """The top ``k`` by the rule of docs/jobs/hashtags.md: count descending, then hashtag ascending
    (Python's string order: code points)."""
    return list(top_k(counts, k))


def rule_outcome(
    batches: list[list[dict[str, Any]]], size: int, hop: int, align: int, k: int, lateness: int
) -> tuple[dict[tuple[int, int], list[tuple[str, int]]], list[dict[str, Any]]]:
    """The finals and the late tweets of the micro-batches ``batches``, by the rule of
    docs/jobs/hashtags.md.

    A batch's tweets are judged by the watermark the batches before it set (newest event time
    of their on-time tweets - ``lateness``; none before the first): a tweet counts once per
    distinct hashtag key in each of its windows whose end is past that watermark, and is late
    when there is none. A window is final once the watermark reaches its end: the finals are
    the windows the last watermark reached that hold a key, each with its top ``k``."""
    counts: dict[tuple[int, int], Counter[str]] = {}
    late: list[dict[str, Any]] = []
    newest: int | None = None
    for batch in batches:
        watermark = None if newest is None else newest - lateness
        for tweet in batch:
            t = tweet["created_at"]
            windows = windows_holding(t, size, hop, align)
            still_open = [w for w in windows if watermark is None or w[1] > watermark]
            if not still_open:
                late.append(tweet)
                continue
            newest = t if newest is None else max(newest, t)  # the next batch's watermark
            for window in still_open:
                counts.setdefault(window, Counter()).update(set(hashtag_keys(tweet["text"])))
    closed = None if newest is None else newest - lateness
    finals = {
        w: rule_top(c, k) for w, c in counts.items() if c and closed is not None and w[1] <= closed
    }
    return finals, late
