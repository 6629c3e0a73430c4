"""The tweet generator (determinism, Zipf skew, jitter, bursts) and JSON-lines replay."""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter
from typing import Any

import pytest

from tests.support.oracles import avro_body
from trending.generate import (
    CURATED,
    TweetSettings,
    burst_tag,
    case_variants,
    default_start_ms,
    generate_tweets,
    parse_created_at,
    parse_tweet_line,
    read_jsonl,
    vocabulary,
)

START = 1_700_000_000_000
TAG = re.compile(r"(?:^|\s)#(\w+)")  # good enough for generated text (no URL fragments)


def tags_of(text: str) -> list[str]:
    return [t.lower() for t in TAG.findall(text)]


def tweets(count: int, seed: int = 1, **settings: Any) -> list[dict[str, Any]]:
    return list(generate_tweets(seed, count, start_ms=START, **settings))


def test_same_seed_same_tweets_other_seed_other_tweets() -> None:
    assert tweets(3000, seed=5) == tweets(3000, seed=5)
    assert tweets(3000, seed=5) != tweets(3000, seed=6)


def test_a_prefix_does_not_depend_on_count() -> None:
    assert tweets(10_000)[:5000] == tweets(5000)


def test_fields_and_types() -> None:
    for tweet in tweets(2000):
        assert set(tweet) == {"id", "user", "text", "created_at", "lang"}
        assert type(tweet["id"]) is int and type(tweet["created_at"]) is int
        assert tweet["lang"] is None or isinstance(tweet["lang"], str)
    assert [t["id"] for t in tweets(100)] == list(range(1, 101))


def test_zero_to_four_hashtags_and_some_without() -> None:
    counts = Counter(len(tags_of(t["text"])) for t in tweets(20_000, burst_share=0.0))
    assert set(counts) <= {0, 1, 2, 3, 4, 5}  # 5: a noise token such as "#1" after 4 tags
    assert counts[0] > 2000 and counts[4] > 500
    assert any("https://" in t["text"] for t in tweets(200))


def test_hashtag_frequencies_follow_zipf() -> None:
    """Rank-frequency on log-log axes: slope about -s for the head of the distribution."""
    keys = Counter(tag for t in tweets(60_000, burst_share=0.0) for tag in tags_of(t["text"]))
    top = [count for _, count in keys.most_common(50)]
    xs = [math.log(rank) for rank in range(1, len(top) + 1)]
    ys = [math.log(count) for count in top]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum(
        (x - mx) ** 2 for x in xs
    )
    assert -1.4 < slope < -0.8
    assert top[0] > 20 * keys.most_common()[len(keys) // 2][1]


def test_case_variants_normalise_to_one_key() -> None:
    written = Counter(
        tag for t in tweets(30_000, burst_share=0.0) for tag in TAG.findall(t["text"])
    )
    cafe = {tag for tag in written if tag.lower() == "café"}
    assert {"Café", "café", "CAFÉ"} <= cafe
    assert case_variants("Straße") == ("Straße", "straße", "Straße")  # STRASSE is another key


def test_vocabulary_is_large_distinct_and_multi_script() -> None:
    words = vocabulary(50_000)
    assert len(set(words)) == 50_000
    assert set(CURATED) <= set(words[: 3 * len(CURATED)])
    scripts = {
        "cyrillic": r"[\u0400-\u04ff]",
        "greek": r"[\u0370-\u03ff]",
        "cjk": r"[\u4e00-\u9fff]",
        "hangul": r"[\uac00-\ud7af]",
        "arabic": r"[\u0600-\u06ff]",
        "accented": r"[à-ÿ]",
    }
    for name, pattern in scripts.items():
        assert any(re.search(pattern, w) for w in words), name


@pytest.mark.parametrize("jitter_ms", [0, 5000])
def test_created_at_is_base_time_minus_a_uniform_delay_up_to_the_jitter(jitter_ms: int) -> None:
    """250 tweets/s: tweet i has base time START + floor(i * 1000 / 250) = START + 4i and
    created_at = base - delay, delay uniform in [0, jitter]."""
    stream = list(
        generate_tweets(1, 5000, start_ms=START, events_per_second=250.0, jitter_ms=jitter_ms)
    )
    delays = [START + 4 * i - t["created_at"] for i, t in enumerate(stream)]
    out_of_order = sum(a["created_at"] > b["created_at"] for a, b in itertools.pairwise(stream))
    if not jitter_ms:
        assert set(delays) == {0} and out_of_order == 0
        return
    assert 0 <= min(delays) < 50 and jitter_ms - 50 < max(delays) <= jitter_ms
    assert abs(sum(delays) / len(delays) - jitter_ms / 2) < 150  # the mean of 5000 draws
    assert out_of_order > 100


def test_a_burst_tag_trends_only_inside_its_window() -> None:
    """Event time with 100 tweets/s (tweet i at base time START + 10i): burst k covers base
    times [k*10m + 200 s, k*10m + 380 s) (from burst_every / 3, for burst_length), where 30 %
    of the drawn tags are its tag.

    |--- 200 s ---|=== burst 0 (180 s) ===|--- 220 s ---|--- 200 s ---|=== burst 1 ...
    """
    stream = list(generate_tweets(1, 100 * 900, start_ms=START, events_per_second=100.0))
    first, second = burst_tag(0).lower(), burst_tag(1).lower()
    assert first != second
    inside = [tags_of(t["text"]) for t in stream[20_000:38_000]]  # base times [200 s, 380 s)
    drawn = Counter(tag for tags in inside for tag in tags)
    assert drawn.most_common(1)[0][0] == first
    assert 0.27 < drawn[first] / sum(drawn.values()) < 0.33
    # tweet indexes holding each tag, ascending
    where = {
        tag: [i for i, t in enumerate(stream) if tag in tags_of(t["text"])]
        for tag in (first, second)
    }
    assert where[first][0] >= 20_000 and where[first][-1] < 38_000
    assert where[second][0] >= 80_000  # burst 1 starts at 800 s; the stream ends at 900 s


def test_avro_records_are_the_encoded_dicts() -> None:
    dicts = tweets(9000)
    records = list(generate_tweets(1, 9000, start_ms=START).avro_records(b"HDR"))
    assert [key for key, _ in records] == [t["user"].encode() for t in dicts]
    assert [value for _, value in records] == [b"HDR" + avro_body("tweet", t) for t in dicts]


def test_a_stream_is_read_one_way_only() -> None:
    stream = generate_tweets(1, 10, start_ms=START)
    next(stream)
    with pytest.raises(ValueError, match="once"):
        next(stream.avro_records())


def test_default_start_ends_the_data_about_now() -> None:
    now = 1_700_000_123_456
    start = default_start_ms(600_000, 1000.0, now_ms=now)
    assert start % 60_000 == 0
    assert now - 600_000 - 60_000 < start <= now - 600_000


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="events_per_second"):
        TweetSettings(events_per_second=0)
    with pytest.raises(ValueError, match="burst_share"):
        TweetSettings(burst_share=2)


# ---- replay from JSON lines ---------------------------------------------------------------------

MS_2018 = 1_539_202_764_000  # 2018-10-10T20:19:24Z


@pytest.mark.parametrize(
    "value",
    [
        MS_2018,
        "2018-10-10T20:19:24Z",
        "2018-10-10T20:19:24.000Z",
        "2018-10-10T22:19:24+02:00",
        "2018-10-10T15:19:24-05:00",
        "2018-10-10T20:19:24",  # no offset: UTC
        "2018-10-10 20:19:24+00:00",
        "Wed Oct 10 20:19:24 +0000 2018",
        "Wed Oct 10 22:49:24 +0230 2018",
    ],
)
def test_created_at_formats(value: Any) -> None:
    assert parse_created_at(value) == MS_2018


def test_created_at_keeps_milliseconds() -> None:
    assert parse_created_at("2018-10-10T20:19:24.123Z") == MS_2018 + 123


@pytest.mark.parametrize("value", ["yesterday", "Wed Foo 10 20:19:24 +0000 2018", True, 1.5, None])
def test_bad_created_at(value: Any) -> None:
    with pytest.raises(ValueError):
        parse_created_at(value)


def test_parse_tweet_line_accepts_twitter_shapes() -> None:
    line = '{"id": "42", "user": {"screen_name": "ada"}, "text": "hi #x", "created_at": 5}'
    assert parse_tweet_line(line) == {
        "id": 42,
        "user": "ada",
        "text": "hi #x",
        "created_at": 5,
        "lang": None,
    }


def test_read_jsonl_reports_bad_lines_and_goes_on() -> None:
    lines = [
        '{"id": 1, "user": "a", "text": "#a", "created_at": "2018-10-10T20:19:24Z", "lang": "en"}',
        "{not json",
        "",
        '{"id": 2, "user": "b", "text": "t"}',
        '["a list"]',
        '{"id": -1, "user": "c", "text": "t", "created_at": 1}',
        '{"id": 3, "user": "c", "text": "t", "created_at": "Wed Oct 10 20:19:24 +0000 2018"}',
    ]
    errors: list[tuple[int, str]] = []
    good = list(read_jsonl(lines, lambda n, reason: errors.append((n, reason))))
    assert [t["id"] for t in good] == [1, 3]
    assert good[0]["created_at"] == good[1]["created_at"] == MS_2018
    assert [n for n, _ in errors] == [2, 4, 5, 6]
    assert "not JSON" in errors[0][1]
    assert "missing created_at" in errors[1][1]
    assert "not a JSON object" in errors[2][1]
    assert "id must be" in errors[3][1]
