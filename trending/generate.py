"""Synthetic tweets for tests, demos and benchmarks, and replay of real ones from JSON lines.

A generated stream is deterministic given its seed and settings (and ``start_ms``):

* event time: tweet ``i`` has base time ``start_ms + floor(i * 1000 / events_per_second)``
  and ``created_at = base - delay`` with ``delay`` uniform in ``[0, jitter_ms]``;
* 0-4 hashtags a tweet, drawn Zipf(``zipf_s``) from a fixed vocabulary of ``vocabulary`` tags
  (Latin, accented, Cyrillic, Greek, CJK, Hangul, Arabic, Hebrew, Devanagari, Thai), written
  in case variants that normalise to one key (``#Café``, ``#café``, ``#CAFÉ``);
* bursts: from ``burst_every_ms / 3`` into every ``burst_every_ms`` of event time, for
  ``burst_length_ms``, a new tag replaces each drawn tag with probability ``burst_share``;
* some URLs (a few with ``#fragment``s), and a few tokens that look like but are not
  hashtags (``C#``, ``#1``, ``issue#42``).

Draws are made in fixed chunks, so the first ``n`` tweets do not depend on ``count``.
"""

from __future__ import annotations

import itertools
import json
import math
import random
import re
import time
from abc import abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import lru_cache
from typing import Any, TypeVar

import numpy as np

from connectors.avro import (
    AvroCodec,
    encode_length,
    encode_longs,
    encode_optional_string,
    encode_string,
)
from connectors.kafka import ensure_topics, partition_count, producer

Tweet = dict[str, Any]
T = TypeVar("T")
CHUNK = 4096
TAG_COUNT_P = (0.2, 0.35, 0.25, 0.12, 0.08)  # P(0..4 hashtags)
VARIANT_P = (0.8, 0.1, 0.1)  # as written, lower case, upper case
URL_P = 0.15
NOISE_P = 0.03
LANGS = ("en", "es", "ja", "pt", "ar", "fr", "ru", "ko", "de", None)
LANG_P = (0.4, 0.1, 0.1, 0.07, 0.05, 0.05, 0.05, 0.04, 0.04, 0.1)
NOISE = ("C#", "#1", "issue#42", "F#", "#2024")

# Popular tags, placed among the top ranks so that non-ASCII and case-folded keys trend.
CURATED = (
    "Café", "Python", "Москва", "東京", "서울", "Αθήνα", "भारत", "رمضان", "ירושלים",
    "ラーメン", "SãoPaulo", "Zürich", "Naïve", "Київ", "北京", "Ελλάδα", "Crème", "München",
    "ประเทศไทย", "Niño", "Straße", "Éire", "Ångström", "Санкт_Петербург", "WorldCup",
    "Kafka", "Spark", "Montréal", "İstanbul", "Ölüdeniz", "Ωμέγα", "ÇaVa", "BigData",
    "MachineLearning", "Vinyl", "Coffee", "Monday", "Music", "NowPlaying", "Travel",
)  # fmt: skip
SYLLABLES = {
    "latin": (
        "ka", "lo", "mi", "ra", "te", "su", "no", "vi", "be", "da", "fe", "gu", "ho", "ji", "lu",
        "ma", "ne", "po", "qi", "re", "sa", "ti", "ul", "vo", "wa", "xe", "yo", "zu", "an", "el",
        "in", "or", "us", "ber", "cal", "dor", "fin", "gar", "hel", "jor", "kin", "lam", "mor",
        "nas", "pol", "ros", "tan", "val", "wen",
    ),
    "accent": ("é", "è", "à", "ü", "ö", "ä", "ñ", "ç", "ø", "å", "í", "ó", "ú", "ê"),
    "cyrillic": (
        "ка", "ло", "ми", "ра", "те", "су", "но", "ви", "бе", "да", "фе", "го", "жи", "лу", "ма",
        "не", "по", "ре", "са", "ти",
    ),
    "greek": (
        "κα", "λο", "μι", "ρα", "τε", "συ", "νο", "βι", "δα", "φε", "γο", "λυ", "μα", "νε", "πο",
        "ρε", "σα", "τι",
    ),
    "kana": (
        "カ", "ロ", "ミ", "ラ", "テ", "ス", "ノ", "ビ", "ベ", "ダ", "フ", "グ", "ホ", "ジ", "ル",
        "マ", "ネ", "ポ", "レ", "サ",
    ),
    "hangul": (
        "가", "나", "다", "라", "마", "바", "사", "아", "자", "차", "카", "타", "파", "하", "서",
        "울", "한", "국",
    ),
    "cjk": (
        "東", "京", "北", "山", "川", "火", "水", "木", "金", "土", "日", "月", "花", "雨", "風",
        "雪", "海", "空",
    ),
}  # fmt: skip
WORDS = (
    "the", "a", "of", "and", "to", "in", "is", "it", "you", "that", "was", "for", "on", "are",
    "with", "as", "I", "his", "they", "be", "at", "one", "have", "this", "from", "or", "had", "by",
    "hot", "word", "but", "what", "some", "we", "can", "out", "other", "were", "all", "there",
    "when", "up", "use", "your", "how", "said", "an", "each", "she", "which", "do", "their",
    "time", "if", "will", "way", "about", "many", "then", "them", "write", "would", "like", "so",
    "these", "her", "long", "make", "thing", "see", "him", "two", "has", "look", "more", "day",
    "could", "go", "come", "did", "number", "sound", "no", "most", "people", "my", "over",
    "know", "water", "than", "call", "first", "who", "may", "down", "side", "been", "now",
    "find", "any", "new", "work", "part", "take", "get", "place", "made", "live", "where",
    "after", "back", "little", "only", "round", "man", "year", "came", "show", "every", "good",
    "me", "give", "our", "under", "name", "very", "through", "just", "form", "great", "think",
    "say", "help", "low", "line", "differ", "hola", "gracias", "mañana", "café", "bonjour",
    "merci", "très", "привет", "спасибо", "こんにちは", "ありがとう", "안녕하세요", "شكرا",
    "שלום", "नमस्ते", "γεια", "danke", "schön", "obrigado",
)  # fmt: skip
EVENTS = (
    "SolarStorm", "Eclipse", "Earthquake", "GoalOfTheYear", "NewAlbum", "Blackout", "Landslide",
    "Überraschung", "Переворот", "大雪", "Εκλογές", "축제", "Aurora", "Heatwave", "Launch",
)  # fmt: skip


@dataclass(frozen=True)
class TweetSettings:
    """How a synthetic tweet stream looks; see the module docstring for the formulas."""

    seed: int = 1
    start_ms: int = 0
    events_per_second: float = 1000.0
    jitter_ms: int = 2000
    vocabulary: int = 50_000
    zipf_s: float = 1.1
    users: int = 100_000
    burst_every_ms: int = 600_000
    burst_length_ms: int = 180_000
    burst_share: float = 0.3
    first_id: int = 1

    def __post_init__(self) -> None:
        checks = {
            "events_per_second must be > 0": self.events_per_second > 0,
            "jitter_ms must be >= 0": self.jitter_ms >= 0,
            "vocabulary must be >= 10": self.vocabulary >= 10,
            "zipf_s must be > 0": self.zipf_s > 0,
            "users must be >= 1": self.users >= 1,
            "burst_every_ms must be > 0": self.burst_every_ms > 0,
            "burst_length_ms must be in [0, burst_every_ms]": 0
            <= self.burst_length_ms
            <= self.burst_every_ms,
            "burst_share must be in [0, 1]": 0 <= self.burst_share <= 1,
        }
        failed = [message for message, ok in checks.items() if not ok]
        if failed:
            raise ValueError("; ".join(failed))

    def base_time(self, index: int) -> int:
        """Event time of tweet ``index`` before jitter."""
        return self.start_ms + math.floor(index * 1000 / self.events_per_second)

    def burst_window(self, k: int) -> tuple[int, int]:
        """Event-time interval ``[start, end)`` of burst ``k`` (k = 0, 1, ...)."""
        start = self.start_ms + k * self.burst_every_ms + self.burst_every_ms // 3
        return start, start + self.burst_length_ms


def default_start_ms(count: int, events_per_second: float, now_ms: int | None = None) -> int:
    """A start time so that ``count`` tweets end about now, aligned down to the minute."""
    now = int(time.time() * 1000) if now_ms is None else now_ms
    span = math.ceil(count * 1000 / events_per_second)
    return (now - span) // 60_000 * 60_000


def case_variants(tag: str) -> tuple[str, str, str]:
    """``(tag, lower, upper)``; a variant whose lower case differs from ``tag``'s is ``tag``."""
    key = tag.lower()
    lower = tag.lower()
    upper = tag.upper() if tag.upper().lower() == key else tag
    return tag, lower, upper


@lru_cache(maxsize=4)
def vocabulary(size: int) -> tuple[str, ...]:
    """``size`` distinct tags (no ``#``), by popularity rank; the same for every seed."""
    rng = random.Random(20_240_601)
    scripts, weights = list(SYLLABLES), (55, 10, 8, 6, 7, 6, 8)
    tags: dict[str, None] = dict.fromkeys(CURATED)
    while len(tags) < size + len(CURATED):
        tags[_synthetic_tag(rng, rng.choices(scripts, weights)[0])] = None
    synthetic = list(tags)[len(CURATED) :]
    ranked = synthetic[: size - len(CURATED)]
    for offset, tag in enumerate(CURATED[:size]):  # ranks 0, 3, 6, ...: popular
        ranked.insert(min(offset * 3, len(ranked)), tag)
    return tuple(ranked[:size])


def _synthetic_tag(rng: random.Random, script: str) -> str:
    if script == "accent":
        latin = SYLLABLES["latin"]
        word = rng.choice(latin) + rng.choice(SYLLABLES["accent"]) + rng.choice(latin)
    else:
        word = "".join(rng.choices(SYLLABLES[script], k=rng.randint(2, 4)))
    if rng.random() < 0.5:
        word = word[:1].upper() + word[1:]
    if rng.random() < 0.15:
        word += str(rng.randrange(100))
    return word


def burst_tag(k: int) -> str:
    """The tag that trends in burst ``k``."""
    name = EVENTS[k % len(EVENTS)]
    return name if k < len(EVENTS) else f"{name}{k // len(EVENTS) + 1}"


class _Assets:
    """Everything drawn from once: tag tokens, fillers, URLs, user names."""

    def __init__(self, vocabulary_size: int, zipf_s: float, users: int) -> None:
        tags = vocabulary(vocabulary_size)
        self.tokens = [tuple(f"#{v}" for v in case_variants(tag)) for tag in tags]
        weights = 1.0 / np.arange(1, len(tags) + 1, dtype=np.float64) ** zipf_s
        self.cdf = np.cumsum(weights) / weights.sum()
        rng = np.random.default_rng(7)
        self.fillers = [_filler(rng) for _ in range(2048)]
        self.urls = [f" https://t.co/{_code(rng)}" for _ in range(480)] + [
            f" https://example.org/p/{i}#section-{i}" for i in range(32)
        ]
        self.users = [f"user{n:06d}" for n in range(users)]


_assets = lru_cache(maxsize=4)(_Assets)  # shared by streams of the same shape


def _filler(rng: np.random.Generator) -> tuple[str, str, str, str]:
    """Words without tags, then ``%s`` templates with the tags at the end, start, middle."""
    words = [WORDS[i] for i in rng.integers(len(WORDS), size=int(rng.integers(3, 15)))]
    cut = int(rng.integers(1, len(words)))
    head, tail = " ".join(words[:cut]), " ".join(words[cut:])  # WORDS have no '%'
    return f"{head} {tail}", f"{head} {tail} %s", f"%s {head} {tail}", f"{head} %s {tail}"


def _code(rng: np.random.Generator) -> str:
    alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
    return "".join(alphabet[i] for i in rng.integers(len(alphabet), size=10))


@dataclass(frozen=True)
class _Columns:
    """One chunk of tweets, column by column (users and langs as indexes)."""

    first_id: int
    users: list[int]
    texts: list[str]
    created: np.ndarray[Any, Any]
    langs: list[int]


class ReadOnceStream(Iterator[T]):
    """A generated stream read one way, once: iterated as dicts, or as Avro records."""

    def __init__(self) -> None:
        self._rows: Iterator[T] | None = None
        self._used = False

    def __next__(self) -> T:
        if self._rows is None:
            self._claim()
            self._rows = self._iter_rows()
        return next(self._rows)

    def _claim(self) -> None:
        if self._used:
            name = type(self).__name__
            raise ValueError(f"a {name} is read either as dicts or as Avro records, once")
        self._used = True

    @abstractmethod
    def _iter_rows(self) -> Iterator[T]:
        """The stream's records as dicts."""


class TweetStream(ReadOnceStream[Tweet]):
    """An iterator of generated tweets that can also hand out ready Avro records.

    Iterate for dicts, or call :meth:`avro_records` (about twice as fast) for the whole
    stream as ``(key, value)`` bytes; a stream is read one way, once.
    """

    def __init__(self, settings: TweetSettings, count: int) -> None:
        super().__init__()
        self.settings, self.count = settings, count
        self._assets = _assets(settings.vocabulary, settings.zipf_s, settings.users)
        self._rng = np.random.default_rng(settings.seed)

    def _chunks(self) -> Iterator[_Columns]:
        for first in range(0, self.count, CHUNK):
            size = min(CHUNK, self.count - first)
            yield _chunk(self.settings, self._assets, self._rng, first, size)

    def _iter_rows(self) -> Iterator[Tweet]:
        users, langs = self._assets.users, LANGS
        for cols in self._chunks():
            rows = zip(cols.users, cols.texts, cols.created.tolist(), cols.langs, strict=True)
            for i, (user, text, created, lang) in enumerate(rows, cols.first_id):
                yield {
                    "id": i,
                    "user": users[user],
                    "text": text,
                    "created_at": created,
                    "lang": langs[lang],
                }

    def avro_records(self, header: bytes = b"") -> Iterator[tuple[bytes, bytes]]:
        """``(user, header + Avro body)`` of every tweet; the bytes of ``encode_tweet``."""
        self._claim()
        keys = [user.encode() for user in self._assets.users]
        users = [encode_string(user) for user in self._assets.users]
        langs = [encode_optional_string(lang) for lang in LANGS]
        lengths = [encode_length(n) for n in range(4096)]  # UTF-8 sizes of most tweets
        join = b"".join
        for cols in self._chunks():
            ids = encode_longs(np.arange(cols.first_id, cols.first_id + len(cols.texts)))
            created = encode_longs(cols.created)
            rows = zip(ids, cols.users, cols.texts, created, cols.langs, strict=True)
            for id_, user, text, created_at, lang in rows:
                raw = text.encode()
                n = len(raw)
                size = lengths[n] if n < 4096 else encode_length(n)
                yield (
                    keys[user],
                    join((header, id_, users[user], size, raw, created_at, langs[lang])),
                )


def generate_tweets(seed: int, count: int, **settings: Any) -> TweetStream:
    """``count`` synthetic tweets; keyword arguments are :class:`TweetSettings` fields.

    Without ``start_ms`` the stream ends about now (:func:`default_start_ms`).
    """
    if settings.get("start_ms") is None:
        eps = float(settings.get("events_per_second", TweetSettings.events_per_second))
        settings["start_ms"] = default_start_ms(count, eps)
    return TweetStream(TweetSettings(seed=seed, **settings), count)


def _chunk(
    settings: TweetSettings, assets: _Assets, rng: np.random.Generator, first: int, size: int
) -> _Columns:
    n = CHUNK  # always draw a full chunk: a prefix does not depend on count
    index = np.arange(first, first + n, dtype=np.int64)
    base = settings.start_ms + np.floor(index * 1000 / settings.events_per_second).astype(np.int64)
    created = base - rng.integers(0, settings.jitter_ms + 1, size=n)
    ntags = rng.choice(len(TAG_COUNT_P), size=n, p=TAG_COUNT_P)
    tokens = _tag_tokens(settings, assets, rng, np.repeat(base, ntags))
    fillers = rng.integers(len(assets.fillers), size=n).tolist()
    modes = rng.integers(1, 4, size=n).tolist()
    urls = np.where(rng.random(n) < URL_P, rng.integers(len(assets.urls), size=n), -1).tolist()
    noise = np.where(rng.random(n) < NOISE_P, rng.integers(len(NOISE), size=n), -1).tolist()
    users = rng.integers(settings.users, size=n).tolist()
    langs = rng.choice(len(LANGS), size=n, p=LANG_P).tolist()
    texts: list[str] = []
    pos, all_fillers, all_urls = 0, assets.fillers, assets.urls
    rows = zip(ntags.tolist(), fillers, modes, urls, noise, strict=True)
    for k, f, mode, url, bad in itertools.islice(rows, size):
        if k:
            text = all_fillers[f][mode] % " ".join(tokens[pos : pos + k])
            pos += k
        else:
            text = all_fillers[f][0]
        if bad >= 0:
            text += " " + NOISE[bad]
        texts.append(text + all_urls[url] if url >= 0 else text)
    return _Columns(settings.first_id + first, users[:size], texts, created[:size], langs[:size])


def _tag_tokens(
    settings: TweetSettings, assets: _Assets, rng: np.random.Generator, base: np.ndarray[Any, Any]
) -> list[str]:
    """One ``#tag`` token per drawn tag; ``base`` is the base time of each tag's tweet."""
    total = len(base)
    ranks = np.searchsorted(assets.cdf, rng.random(total), side="right")
    ranks = np.minimum(ranks, len(assets.tokens) - 1).tolist()
    variants = rng.choice(3, size=total, p=VARIANT_P).tolist()
    tokens = [assets.tokens[r][v] for r, v in zip(ranks, variants, strict=True)]
    since = base - settings.start_ms
    k, phase = since // settings.burst_every_ms, since % settings.burst_every_ms
    offset = settings.burst_every_ms // 3
    hit = (phase >= offset) & (phase < offset + settings.burst_length_ms)
    hit &= rng.random(total) < settings.burst_share
    for j in np.flatnonzero(hit).tolist():
        tokens[j] = "#" + case_variants(burst_tag(int(k[j])))[variants[j]]
    return tokens


# ---- replaying real tweets -------------------------------------------------------------------

_MONTHS = {
    name: number
    for number, name in enumerate(
        ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"), 1
    )
}
# Twitter's classic created_at: "Wed Oct 10 20:19:24 +0000 2018"
_TWITTER_TIME = re.compile(
    r"^[A-Z][a-z]{2} ([A-Z][a-z]{2}) (\d{1,2}) (\d{2}):(\d{2}):(\d{2}) "
    r"([+-])(\d{2})(\d{2}) (\d{4})$"
)


def parse_created_at(value: Any) -> int:
    """Epoch milliseconds from an int, an ISO-8601 string (``Z`` or an offset; none = UTC)
    or Twitter's ``Wed Oct 10 20:19:24 +0000 2018``."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if not isinstance(value, str):
        raise ValueError(f"created_at must be epoch ms or a date string, not {value!r}")
    match = _TWITTER_TIME.match(value.strip())
    if match:
        return _twitter_time(match)
    text = value.strip()
    try:
        moment = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith("Z") else text)
    except ValueError:
        raise ValueError(f"created_at is not a known date format: {value!r}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return _epoch_ms(moment)


def _twitter_time(match: re.Match[str]) -> int:
    month, day, hh, mm, ss, sign, oh, om, year = match.groups()
    if month not in _MONTHS:
        raise ValueError(f"unknown month {month!r}")
    moment = datetime(int(year), _MONTHS[month], int(day), int(hh), int(mm), int(ss))
    offset_s = (int(oh) * 3600 + int(om) * 60) * (1 if sign == "+" else -1)
    return _epoch_ms(moment.replace(tzinfo=timezone.utc)) - offset_s * 1000


def _epoch_ms(moment: datetime) -> int:
    delta = moment - datetime(1970, 1, 1, tzinfo=timezone.utc)
    return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000


def parse_tweet_line(line: str) -> Tweet:
    """One JSON line as a tweet; ``ValueError`` says what is wrong."""
    try:
        data = json.loads(line)
    except json.JSONDecodeError as error:
        raise ValueError(f"not JSON: {error.msg}") from None
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    missing = [f for f in ("id", "user", "text", "created_at") if f not in data]
    if missing:
        raise ValueError(f"missing {', '.join(missing)}")
    return {
        "id": _tweet_id(data["id"]),
        "user": _user(data["user"]),
        "text": _string(data["text"], "text"),
        "created_at": parse_created_at(data["created_at"]),
        "lang": None if data.get("lang") is None else _string(data["lang"], "lang"),
    }


def _tweet_id(value: Any) -> int:
    if isinstance(value, str) and value.isdigit():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < 1 << 63:
        raise ValueError(f"id must be a non-negative 64-bit integer, not {value!r}")
    return value


def _user(value: Any) -> str:
    if isinstance(value, Mapping) and "screen_name" in value:  # Twitter's user object
        value = value["screen_name"]
    return _string(value, "user")


def _string(value: Any, field: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{field} must be a string, not {type(value).__name__}")
    return value


def read_jsonl(lines: Iterable[str], on_error: Callable[[int, str], None]) -> Iterator[Tweet]:
    """The tweets of JSON lines; a bad line calls ``on_error(line_number, reason)``."""
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            yield parse_tweet_line(line)
        except ValueError as error:
            on_error(number, str(error))


# ---- producing ---------------------------------------------------------------------------------


def produce_tweets(
    bootstrap: str,
    topic: str,
    tweets: Iterable[Mapping[str, Any]],
    *,
    extra: Mapping[str, str] | None = None,
    registry_url: str | None = None,
    partitions: int = 4,
    rate: float | None = None,
    progress: Callable[[int], None] | None = None,
    settings: Mapping[str, Any] | None = None,
) -> int:
    """Write ``tweets`` as Avro to ``topic`` (created with ``partitions`` when missing);
    ``settings`` go to the producer as they are (e.g. a ``logger``).

    Keys are the user names; records go round-robin over the topic's partitions. A
    :class:`TweetStream` is encoded on its fast path. Returns the count once every record is
    acknowledged; raises :class:`~connectors.kafka.DeliveryError` if any is not.
    """
    ensure_topics(bootstrap, [topic], partitions, extra)
    spread = partition_count(bootstrap, topic, extra)
    codec = AvroCodec("tweet", registry_url, subject=f"{topic}-value")
    if isinstance(tweets, TweetStream):
        records: Iterable[tuple[bytes | None, bytes]] = tweets.avro_records(codec.header)
    else:
        records = ((t["user"].encode(), codec.encode(t)) for t in tweets)
    sink = producer(bootstrap, extra, settings=settings)
    count = sink.produce_many(topic, records, partitions=spread, rate=rate, progress=progress)
    sink.flush()
    return count
