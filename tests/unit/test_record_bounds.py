"""The bounds on what one record may cost a job: flags, defaults and what they rule out."""

from __future__ import annotations

import pytest

from trending.cli import build_parser
from trending.commands.run import _tweet_bounds
from trending.errors import UserError
from trending.text.bounds import TweetBounds


def test_the_flags_default_to_the_documented_bounds() -> None:
    args = build_parser().parse_args(["run", "hashtags"])
    assert _tweet_bounds(args) == TweetBounds(25_000, 100, 280, 256)


def test_the_flags_set_each_bound() -> None:
    args = build_parser().parse_args(
        ["run", "hashtags", "--max-text-chars", "5000", "--max-hashtags", "7",
         "--max-hashtag-chars", "40", "--max-url-scan-steps", "99"]
    )  # fmt: skip
    assert _tweet_bounds(args) == TweetBounds(5_000, 7, 40, 99)


@pytest.mark.parametrize("flag", ["--max-text-chars", "--max-hashtags", "--max-hashtag-chars"])
def test_a_zero_bound_is_refused_by_its_flag(flag: str) -> None:
    args = build_parser().parse_args(["run", "hashtags", flag, "0"])
    with pytest.raises(UserError, match=f"^{flag} must be positive, got 0$"):
        _tweet_bounds(args)


@pytest.mark.parametrize(
    ("tags", "tag_chars", "unchecked"), [(100, 280, 200), (7, 280, 14), (100, 40, 40)]
)
def test_unchecked_texts_cannot_break_a_hashtag_bound(
    tags: int, tag_chars: int, unchecked: int
) -> None:
    """A text of n characters holds at most n / 2 hashtags ('#' and a letter each) and no
    hashtag longer than n - 1: texts up to min(2 * tags, tag characters) need no check."""
    bounds = TweetBounds(max_hashtags=tags, max_hashtag_chars=tag_chars)
    assert bounds.unchecked_chars == unchecked
    assert unchecked // 2 <= tags and unchecked - 1 < tag_chars


def test_the_sensor_jobs_query_cell_bound_must_be_positive() -> None:
    from trending.jobs.sensors import SensorJobConfig

    args = build_parser().parse_args(["run", "sensors", "--max-query-cells", "0"])
    assert args.max_query_cells == 0
    config = SensorJobConfig(bootstrap="b", checkpoint="c", max_query_cells=args.max_query_cells)
    with pytest.raises(UserError, match=r"^--max-query-cells must be positive, got 0$"):
        config.validate()
    assert build_parser().parse_args(["run", "sensors"]).max_query_cells == 4_096


@pytest.mark.parametrize(("k", "tag_chars"), [(1, 1), (10, 280), (37, 50)])
def test_the_size_bounds_hold_for_the_largest_keys(k: int, tag_chars: int) -> None:
    """The largest key a hashtag of n characters can have: n times U+FDFA, which NFKC and
    casefold make 18 characters (33 bytes) each; the state with every open window holding k
    such keys with the largest counts, and a top-k record of them, fit their bounds (tightly,
    when they are large)."""
    import unicodedata

    from connectors.avro import AvroCodec
    from connectors.transactions import state_json
    from trending.jobs.hashtags import HashtagJobConfig
    from trending.windows.topk_merge import MergeState, Published

    config = HashtagJobConfig(
        bootstrap="b", checkpoint="c", k=k, bounds=TweetBounds(max_hashtag_chars=tag_chars)
    )
    key = unicodedata.normalize("NFKC", "\ufdfa" * tag_chars).casefold()
    assert len(key.encode()) == 33 * tag_chars
    big = 2**62
    top = ((key, big),) * k
    windows = {big - i: Published(top, big) for i in range(config.open_windows)}
    state = {"batch": big, "state": MergeState(windows, big).to_json()}
    size, bound = len(state_json(state)), config.state_bytes_bound()
    assert size <= bound and (bound < 10_000 or size > 0.9 * bound)
    record = {"window_start": big, "window_end": big, "revision": 2**31 - 1, "is_final": True,
              "emitted_at": big, "top": [{"hashtag": t, "count": c} for t, c in top]}  # fmt: skip
    size, bound = len(AvroCodec("trending_topk").encode(record)), config.result_bytes_bound()
    assert size <= bound and (bound < 10_000 or size > 0.9 * bound)
