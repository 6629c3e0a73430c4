"""The bounds on what one tweet may cost the hashtags job."""

from __future__ import annotations

from dataclasses import dataclass

SHALLOW_SEGMENT = 1_000  # trending.udf.Hashtags.SHALLOW_SEGMENT
# The most one character of a hashtag can grow in its key, casefold(NFKC(c)): U+FDFA becomes 18
# characters, 33 bytes of UTF-8, as Avro and the state's JSON (connectors.transactions.state_json)
# hold it (checked over every code point).
KEY_UTF8_BYTES_PER_CHAR = 33


@dataclass(frozen=True)
class TweetBounds:
    """What one tweet may cost the job; a tweet beyond a bound is a dead letter whose reason
    names the bound's flag (``over --max-hashtags: ...``).

    * ``max_text_chars``: characters (code points) of the text; 25,000 is the longest post X
      allows;
    * ``max_hashtags``: hashtags in the text (a 280-character tweet holds at most 93);
    * ``max_hashtag_chars``: characters of one hashtag, without its ``#``;
    * ``max_url_scan_steps``: regex steps per character (at least 64 characters' worth) that
      finding the text's URLs may take. twitter-text's URL pattern backtracks far beyond linear
      time on crafted text (``"-a" * n + ".x/#tag"``); on URL-dense prose it takes at most about
      100 per character.

    A text of at most :attr:`unchecked_chars` characters cannot break the hashtag bounds and
    costs a bounded scan, so only longer texts are checked (``trending.udf.HashtagBounds``, by
    :func:`trending.spark.hashtag_state.bounds_reason`), before the counting scans them again.
    """

    max_text_chars: int = 25_000
    max_hashtags: int = 100
    max_hashtag_chars: int = 280
    max_url_scan_steps: int = 256

    def __post_init__(self) -> None:
        for name in ("max_text_chars", "max_hashtags", "max_hashtag_chars", "max_url_scan_steps"):
            if getattr(self, name) <= 0:
                flag = "--" + name.replace("_", "-")
                raise ValueError(f"{flag} must be positive, got {getattr(self, name)}")

    @property
    def unchecked_chars(self) -> int:
        """Texts this long or shorter hold at most ``n / 2`` hashtags of at most ``n - 1``
        characters each, and their URL scan is short."""
        return min(2 * self.max_hashtags, self.max_hashtag_chars, SHALLOW_SEGMENT)

    @property
    def key_utf8_bytes(self) -> int:
        """The most bytes of UTF-8 the key of a hashtag within the bounds can take."""
        return KEY_UTF8_BYTES_PER_CHAR * self.max_hashtag_chars

    @property
    def key_json_bytes(self) -> int:
        """The most bytes the key of a hashtag within the bounds can take as a JSON string."""
        return self.key_utf8_bytes + 2
