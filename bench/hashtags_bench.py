"""Hashtag key throughput on realistic tweets: Python, the Spark Java function, twitter-text.

Usage: ``.venv/bin/python bench/hashtags_bench.py [--tweets N] [--seconds S] [--no-java]``

All figures are single-threaded tweets per second on the same seeded texts (1-3 hashtags
each, some URLs, mentions, emoji and non-Latin tags). Python is timed in CPU time (best of
``--repeat`` passes); the Java main (jvm/udf/src/test/java/trending/udf/HashtagBench.java)
warms up for a second, then loops for ``--seconds``. Java needs ``make jars``.
``--markdown PATH`` also writes the table, the parameters and the command to a Markdown file.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench import report  # noqa: E402
from connectors.jvm import (  # noqa: E402
    compile_java,
    jars_root,
    java_executable,
    length_prefixed,
    spark_api_jars,
)
from trending.text.hashtags import extract_hashtags, hashtag_keys  # noqa: E402

_WORD_TEXT = (
    "the a to of and in is it you that for on was with be at this have from or one had not "
    "but what all were when we there can an your which their if do will about how up out "
    "them then she many some so would other into has more two like time could no make than "
    "first been who now people my made over did down only way find use may long little very "
    "after just where most know great game today love new live watch win best season team "
    "back right week year night free good big here show check vote happy world news"
)
_WORDS = _WORD_TEXT.split()
_FOREIGN = [
    "今日はいい天気ですね",
    "¡Qué partido tan increíble!",
    "यह बहुत अच्छा है",
    "هذا رائع جدا",
    "Это было невероятно",
    "오늘 정말 좋아요",
    "Ça va très bien",
]
_ASCII_TAGS = [
    "WorldCup",
    "AI",
    "MondayMotivation",
    "BTS",
    "NBA",
    "COVID19",
    "ClimateAction",
    "Bitcoin",
    "music",
    "photography",
    "love",
    "Eurovision2024",
    "tbt",
    "NFL",
    "GameOfThrones",
    "iPhone",
    "SuperBowl",
    "crypto",
    "Python",
    "travel",
    "fitness",
    "MUFC",
    "F1",
    "Oscars",
]
_OTHER_TAGS = [
    "café",
    "Straße",
    "日本",
    "東京オリンピック",
    "मोदी",
    "ฟุตบอล",
    "السعودية",
    "Москва",
    "한국",
    "ÉquipeDeFrance",
    "São_Paulo",
    "ＢＴＳ",
    "İstanbul",
]
_EMOJI = ["😀", "🔥", "❤️", "👍🏽", "🎉", "⚽", "🇯🇵", "👨\u200d👩\u200d👧"]


def realistic_tweets(count: int, seed: int = 7) -> list[str]:
    """Seeded tweet-like texts with 1-3 hashtags each."""
    rng = random.Random(seed)
    tweets = []
    for _ in range(count):
        words = [rng.choice(_WORDS) for _ in range(rng.randint(5, 22))]
        if rng.random() < 0.15:
            words.insert(rng.randrange(len(words) + 1), rng.choice(_FOREIGN))
        if rng.random() < 0.15:
            words.insert(rng.randrange(len(words) + 1), rng.choice(_EMOJI))
        for _ in range(rng.choice([1, 1, 1, 2, 2, 3])):
            tag = "#" + rng.choice(_ASCII_TAGS if rng.random() < 0.8 else _OTHER_TAGS)
            if rng.random() < 0.05:
                tag = rng.choice(["(", "\u2026", "."]) + tag + rng.choice([")", "", "!"])
            words.insert(rng.randrange(len(words) + 1), tag)
        if rng.random() < 0.3:
            slug = "".join(
                rng.choice("abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789")
                for _ in range(10)
            )
            words.append(f"https://t.co/{slug}")
        if rng.random() < 0.2:
            words.insert(0, f"@user{rng.randint(1, 9999)}")
        if rng.random() < 0.1:
            words.insert(0, f"RT @news{rng.randint(1, 99)}:")
        tweets.append(" ".join(words))
    return tweets


def _python_rate(function: Callable[[str], list[str]], texts: list[str], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        for text in texts:
            function(text)
        best = min(best, time.process_time() - start)
    return len(texts) / best


def _java_rates(texts: list[str], seconds: float) -> dict[str, float]:
    jars = sorted((jars_root() / "udf").glob("*.jar"))
    if not any(j.name == "trending-udf.jar" for j in jars):
        raise SystemExit("no build/jars/udf/trending-udf.jar: run `make jars` (or use --no-java)")
    classpath = [*jars, *spark_api_jars()]
    source = (
        REPO / "jvm" / "udf" / "src" / "test" / "java" / "trending" / "udf" / "HashtagBench.java"
    )
    with tempfile.TemporaryDirectory(prefix="hashtag-bench-") as tmp:
        compile_java(source, classpath, Path(tmp))
        data = Path(tmp) / "texts.bin"
        data.write_bytes(length_prefixed(texts))
        result = subprocess.run(
            [
                java_executable(),
                "-cp",
                os.pathsep.join([tmp, *map(str, classpath)]),
                "trending.udf.HashtagBench",
                str(data),
                str(seconds),
            ],
            check=True,
            capture_output=True,
            text=True,
        )
    rates: dict[str, float] = {}
    for line in result.stdout.splitlines():
        name, rate, _ = line.split()
        rates[name] = max(rates.get(name, 0.0), float(rate))
    return rates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tweets", type=int, default=50_000)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-java", action="store_true")
    parser.add_argument(
        "--markdown", type=Path, help="also write the table as Markdown to this file"
    )
    args = parser.parse_args()
    began = time.monotonic()

    texts = realistic_tweets(args.tweets)
    tags = sum(len(extract_hashtags(t)) for t in texts)
    shape = (
        f"{len(texts):,} tweets, {tags / len(texts):.2f} hashtags and "
        f"{sum(map(len, texts)) / len(texts):.0f} characters per tweet on average"
    )
    print(shape)
    rates: dict[str, float] = {}
    for name, function in (
        ("python hashtag_keys", hashtag_keys),
        ("python extract_hashtags", extract_hashtags),
    ):
        rates[name] = _python_rate(function, texts, args.repeat)
        print(f"{name:<40}{rates[name]:>12,.0f} /s")
    if not args.no_java:
        java = _java_rates(texts, args.seconds)
        for name, key in (
            ("java HashtagKeys (Spark UDF class)", "hashtag_keys_udf"),
            ("java twitter-text extractHashtags", "twitter_text_extractHashtags"),
        ):
            rates[name] = java[key]
            print(f"{name:<40}{rates[name]:>12,.0f} /s")
    if args.markdown:
        markdown(args.markdown, shape, rates, args, time.monotonic() - began)


def markdown(
    path: Path, shape: str, rates: dict[str, float], args: argparse.Namespace, seconds: float
) -> None:
    report.write(path, [
        "# The hashtag rule alone",
        "",
        report.measured(__file__, seconds),
        "",
        report.parameters({"tweets": args.tweets, "seconds": args.seconds,
                           "repeat": args.repeat, "java": not args.no_java}),
        "",
        *report.table(("extractor", "tweets/s"), [(n, f"{r:,.0f}") for n, r in rates.items()]),
        "",
        f"Input: {shape} (seeded: 1-3 hashtags each, some URLs, mentions, emoji and non-Latin "
        "tags). Single-threaded tweets per second on the same texts: Python in CPU time, the "
        "best of `repeat` passes; Java (the Spark UDF class and the official twitter-text "
        f"library) after a second's warm-up, the best rate of a {args.seconds:g} s loop.",
    ])  # fmt: skip


if __name__ == "__main__":
    main()
