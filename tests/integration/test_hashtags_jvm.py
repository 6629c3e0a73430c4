"""The hashtag rule against the official twitter-text library, and the Spark function against both.

Compiles ``tests/jvm/HashtagOracle.java`` and feeds it seeded random texts plus the unit case
table: our Python extractor must equal twitter-text's ``extractHashtags`` (tags and code point
indices, hence the keys), and the Java function ``trending.udf.HashtagKeys`` must equal Python.
"""

from __future__ import annotations

import importlib.util
import json
import os
import random
import struct
import subprocess
import sys
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from connectors.jvm import compile_java, jars_root, java_executable, length_prefixed, spark_api_jars
from trending.text.hashtags import (
    extract_hashtags,
    extract_hashtags_with_indices,
    hashtag_char_ranges,
    hashtag_key,
    hashtag_keys,
    url_spans,
)

pytestmark = pytest.mark.jvm

REPO = Path(__file__).resolve().parents[2]
HARNESS = REPO / "tests" / "jvm" / "HashtagOracle.java"
RANDOM_TEXTS = 25_000
SEED = 20240917


def _need(folder: Path, pattern: str) -> list[Path]:
    found = sorted(folder.glob(pattern))
    if not found:
        pytest.fail(f"no {pattern} in {folder}: run `make jars`", pytrace=False)
    return found


def _udf_jars() -> list[Path]:
    folder = jars_root() / "udf"
    _need(folder, "trending-udf.jar")
    _need(folder, "twitter-text-*.jar")
    return sorted(folder.glob("*.jar"))


def _oracle_jars() -> list[Path]:
    return _need(jars_root() / "oracle", "twitter-text-*.jar")


@dataclass
class Harness:
    java: str
    classpath: str

    def run(self, mode: str, texts: list[str] | None = None) -> bytes:
        payload = b"" if texts is None else length_prefixed(texts)
        result = subprocess.run(
            [self.java, "-cp", self.classpath, "HashtagOracle", mode],
            input=payload,
            capture_output=True,
            check=False,
            timeout=600,
        )
        assert result.returncode == 0, result.stderr.decode("utf-8", "replace")[-3000:]
        return result.stdout


@pytest.fixture(scope="session")
def harness(tmp_path_factory: pytest.TempPathFactory) -> Harness:
    jars = [*_oracle_jars(), *(j for j in _udf_jars() if "twitter-text" not in j.name)]
    classpath = [*jars, *spark_api_jars()]
    assert classpath[len(jars) :], "pyspark ships no spark-sql-api jar"
    out = tmp_path_factory.mktemp("hashtag-oracle")
    compile_java(HARNESS, classpath, out)
    return Harness(java_executable(), os.pathsep.join([str(out), *map(str, classpath)]))


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def int(self) -> int:
        (value,) = struct.unpack_from(">i", self.data, self.pos)
        self.pos += 4
        return int(value)

    def str(self) -> str:
        size = self.int()
        value = self.data[self.pos : self.pos + size].decode("utf-8")
        self.pos += size
        return value

    def done(self) -> bool:
        return self.pos == len(self.data)


@dataclass
class JavaResult:
    oracle: list[tuple[str, int, int]]
    spans: list[tuple[int, int]]
    udf_keys: list[str]


def _compare(harness: Harness, texts: list[str]) -> list[JavaResult]:
    reader = _Reader(harness.run("compare", texts))
    results = []
    for _ in texts:
        oracle = []
        for _ in range(reader.int()):
            start, end = reader.int(), reader.int()
            oracle.append((reader.str(), start, end))
        spans = [(reader.int(), reader.int()) for _ in range(reader.int())]
        keys = [reader.str() for _ in range(reader.int())]
        results.append(JavaResult(oracle, spans, keys))
    assert reader.done()
    return results


# ---------------------------------------------------------------------------- random texts

_LATIN = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
_SAMPLES = [
    # letters of many scripts, with case and compatibility forms
    "café",
    "CAFÉ",
    "Cafe\u0301",
    "straße",
    "STRASSE",
    "ẞ",
    "İstanbul",
    "ıi",
    "Ateş",
    "ǅemal",
    "ﬁnal",
    "Å",
    "K",
    "ſ",
    "ΐ",
    "ᾳ",
    "Σίσυφος",
    "ΜΑΧΆΤΜΑ",
    "москва",
    "МОСКВА",
    "ashok",
    "سیاست",
    "می\u200cخواهم",
    "السياسة_٤٠٦",
    "עַל־יְדֵי",
    "וכו׳",
    "מ״כ",
    "महात्मा",
    "१२३४",
    "गांधी",
    "ผู้เริ่ม",
    "การเมือง",
    "日本語",
    "ハッシュタグ",
    "サッカー",
    "ひらがな",
    "ｻｯｶｰ",
    "ﾊﾟﾋﾟﾌﾟ",
    "ｈａｓｈ",
    "１２３",
    "트위터",
    "ﾣﾦﾰ",
    "漢字",
    "学問のすゝめ",
    "各〻",
    "各〃",
    "メ～テレ",
    "メ〜テレ",
    "・",
    "゠",
    "བོད་སྐད་",
    "ශ්\u200dරී",
    "ኢትዮ",
    "Մահաթմա",
    "მაჰათმა",
    "មហាត្មះ",
    "မြင့်",
    "ຊີວະ",
    "il·lusió",
    "ꙮ꙾",
    "ℌ",
    "ª",
    "Ⅷ",
    "②",
    "²",
    # astral letters, digits and marks
    "𠀡",
    "𖼄𖽑",
    "A𐒠",
    "𐐀𐐨",
    "𞤀𞤢",
    "𝐀𝐁",
    "𝟘",
    "𑄃𑄧",
]
_HASHES = ["#", "#", "#", "#", "＃", "##", "&#", "&＃", "#\ufe0f\u20e3", "＃＃"]
_PUNCT = list(".,;:!?()[]'\"’“”。！、-/@$%^*+=~`|\\<>{}&_…—–")
_SPACES = [" ", " ", " ", " ", "\n", "\t", "\u00a0", "\u3000", "\u2009", "\u200b", "\r\n"]
_MARKS = ["\u0301", "\u0308", "\u0323", "\ufe0e", "\ufe0f", "\u20e3", "\u200c", "\u200d", "\u0300"]
_EMOJI = ["😀", "👨\u200d👩\u200d👧", "✌️", "✌︎", "✌🏿", "🇯🇵", "🏳️\u200d🌈", "❤️", "⚽"]
_DIGITS = ["0", "16", "2024", "٣", "۴۵", "१२", "１", "𝟙"]
_URLS = [
    "http://twitter.com",
    "https://example.com/",
    "example.com",
    "www.example.org/path",
    "t.co/abc123",
    "https://t.co/xyz",
    "foo.co.jp",
    "http://日本.jp/",
    "example.com/#frag",
    "https://example.com/a/b?q=1&r=2#frag",
    "x.com/#",
    "sub.example.co.uk/page_(x)#top",
    "http://example.com:8080/p#h",
    "https://ab€＃cd.com",
    "://",
    "http://",
    "mañana.com/#x",
    "http://example.com/#",
    "example.com#tag",
    "https://xn--bcher-kva.com/#b",
]


_RANGES = hashtag_char_ranges()


def _any_char(rng: random.Random, exclude: set[int]) -> str:
    """A hashtag character of any script (by range, not by weight), or any code point."""
    while True:
        if rng.random() < 0.7:
            first, last, _ = rng.choice(_RANGES)
            code = rng.randint(first, last)
        else:
            code = rng.randint(0, 0x2FFFF)
        if not 0xD800 <= code <= 0xDFFF and code not in exclude:
            return chr(code)


def _word(rng: random.Random, exclude: set[int]) -> str:
    kind = rng.random()
    if kind < 0.30:
        return "".join(rng.choice(_LATIN) for _ in range(rng.randint(1, 8)))
    if kind < 0.70:
        return rng.choice(_SAMPLES)
    if kind < 0.80:
        return rng.choice(_DIGITS) + rng.choice(["", "_", "x", rng.choice(_SAMPLES)])
    if kind < 0.90:
        return "".join(_any_char(rng, exclude) for _ in range(rng.randint(1, 4)))
    return "".join(
        rng.choice([rng.choice(_LATIN), rng.choice(_MARKS), "_", rng.choice(_DIGITS)])
        for _ in range(rng.randint(1, 5))
    )


def _token(rng: random.Random, exclude: set[int]) -> str:
    kind = rng.random()
    if kind < 0.30:
        return rng.choice(_HASHES) + _word(rng, exclude) + rng.choice(["", "", rng.choice(_MARKS)])
    if kind < 0.45:
        return _word(rng, exclude)
    if kind < 0.58:
        return rng.choice(_SPACES)
    if kind < 0.68:
        return rng.choice(_PUNCT)
    if kind < 0.78:
        url = rng.choice(_URLS)
        if rng.random() < 0.5:
            url += rng.choice(["#", "/#", "?a=1#", "#!", ""]) + _word(rng, exclude)
        return url
    if kind < 0.85:
        return rng.choice(_EMOJI)
    if kind < 0.90:
        return rng.choice(_MARKS)
    if kind < 0.95:
        return _any_char(rng, exclude)
    return rng.choice(_DIGITS)


def random_texts(count: int, seed: int = SEED, exclude: set[int] | None = None) -> Iterator[str]:
    """Seeded random texts, dense in hashtags and in the situations around them.

    Code points in ``exclude`` are never drawn at random (the samples hold none).
    """
    rng = random.Random(seed)
    skip = exclude or set()
    for _ in range(count):
        tokens = [_token(rng, skip) for _ in range(rng.randint(1, 14))]
        glue = "" if rng.random() < 0.4 else " "
        yield glue.join(tokens)


def _url_texts(count: int, seed: int, exclude: set[int]) -> list[str]:
    """Seeded random texts made of URL pieces (domains, IDNs, paths, t.co, long labels)."""
    rng = random.Random(seed)
    labels = [
        "example",
        "a" * 63,
        "b" * 64,
        "xn--",
        "xn--abc",
        "münchen",
        "日本",
        "עברית",
        "عربي",
        "aעב",
        "ß",
        "ẞ",
        "İ",
        "ς",
        "\u00ad",
        "\u200b",
        "\u0301",
        "Ⅻ",
        "𝐀",
        "😀",
        "€",
        "＃",
        "\u3002",
        "\uff0e",
        "K",
        "ﬁ",
        "\u202e",
        "t",
        "co",
        "x_y",
        "-x",
        "x-",
    ]
    tlds = ["com", "COM", "jp", "co", "org", "uk", "рф", "みんな", "中国", "xn--p1ai", "Com"]
    tails = [
        "",
        "/",
        "/a#b",
        "/#x",
        "?q=1#f",
        "/a(b)#c",
        "/a~(b)",
        "/p_(a(b))",
        ":8080/#p",
        "/" + "p" * 4100,
        "/@user/",
        "?q=a.",
        "/%20#",
        "/–#",
    ]
    texts = []
    for _ in range(count):
        parts = []
        for _ in range(rng.randint(1, 4)):
            name = ".".join(
                rng.choice(labels) + rng.choice(["", "a", "1", "-x"])
                if rng.random() < 0.9
                else _any_char(rng, exclude)
                for _ in range(rng.randint(1, 3))
            )
            url = rng.choice(["", "", "http://", "https://", "HTTPS://", "www."])
            url += name + "." + rng.choice(tlds) + rng.choice(tails)
            if rng.random() < 0.1:
                url = "https://t.co/" + "z" * rng.randint(1, 50) + rng.choice(tails)
            parts.append(url)
        texts.append(rng.choice([" ", "", "#", "(", ".", "/", "@", "\u200e", "_"]).join(parts))
    return texts


def _case_table() -> list[str]:
    path = REPO / "tests" / "unit" / "test_hashtags.py"
    spec = importlib.util.spec_from_file_location("hashtag_case_table", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, module)  # (dataclasses look their module up)
    spec.loader.exec_module(module)
    cases: list[Any] = module.CASES
    index_cases: list[tuple[str, Any]] = module.INDEX_CASES
    return [c.text for c in cases] + [text for text, _ in index_cases]


# ------------------------------------------------------------------------------ the tests


@dataclass
class JavaClasses:
    classes: dict[int, int]
    """Code point -> 1 (letter) or 2 (other hashtag character), as twitter-text's pattern says."""
    undefined: set[int]
    """Code points this JVM does not define (newer than its Unicode): left out of the texts."""


@pytest.fixture(scope="session")
def java_classes(harness: Harness) -> JavaClasses:
    classes: dict[int, int] = {}
    undefined: set[int] = set()
    for line in harness.run("classes").decode().splitlines():
        parts = line.split()
        if parts[0] == "undefined":
            undefined.update(range(int(parts[1]), int(parts[2]) + 1))
        else:
            first, last, cls = map(int, parts)
            classes.update(dict.fromkeys(range(first, last + 1), cls))
    return JavaClasses(classes, undefined)


def test_character_classes_equal_twitter_text(java_classes: JavaClasses) -> None:
    ours = {c: cls for first, last, cls in _RANGES for c in range(first, last + 1)}
    java = java_classes.classes
    differ = [
        hex(c)
        for c in range(0x110000)
        if c not in java_classes.undefined and ours.get(c, 0) != java.get(c, 0)
    ]
    assert differ == []
    # Left out above: only characters this JVM's older Unicode lacks and Python's newer Unicode
    # has (the JVM cannot classify them), none that is unassigned in both.
    skipped = [c for c in java_classes.undefined if ours.get(c, 0) != java.get(c, 0)]
    assert [hex(c) for c in skipped if unicodedata.category(chr(c)) == "Cn"] == []


def _check(texts: list[str], results: list[JavaResult]) -> list[str]:
    failures = []
    for text, java in zip(texts, results, strict=True):
        ours = extract_hashtags_with_indices(text)
        expected_keys = list(dict.fromkeys(hashtag_key(tag) for tag, _, _ in java.oracle))
        problems = []
        if ours != java.oracle:
            problems.append(f"python {ours} != twitter-text {java.oracle}")
        if extract_hashtags(text) != [tag for tag, _, _ in java.oracle]:
            problems.append(f"python tags {extract_hashtags(text)} != twitter-text")
        if hashtag_keys(text) != expected_keys:
            problems.append(f"python keys {hashtag_keys(text)} != {expected_keys}")
        if java.spans != [(s, e) for _, s, e in java.oracle]:
            problems.append(f"java spans {java.spans} != twitter-text")
        if java.udf_keys != expected_keys:
            problems.append(f"udf keys {java.udf_keys} != {expected_keys}")
        if problems:
            failures.append(f"{text!r}: " + "; ".join(problems))
    return failures


def test_case_table_against_twitter_text(harness: Harness) -> None:
    texts = _case_table()
    failures = _check(texts, _compare(harness, texts))
    assert failures == []


def test_random_texts_against_twitter_text(harness: Harness, java_classes: JavaClasses) -> None:
    texts = list(random_texts(RANDOM_TEXTS, exclude=java_classes.undefined))
    results = _compare(harness, texts)
    failures = _check(texts, results)
    assert failures[:20] == [], f"{len(failures)} of {len(texts)} texts differ"
    with_tags = sum(1 for r in results if r.oracle)
    assert with_tags > len(texts) // 2  # the texts do exercise the rule


def test_every_hashtag_character(harness: Harness, java_classes: JavaClasses) -> None:
    """Each hashtag character inside a tag: same tags, and Java's key equals Python's."""
    skew = java_classes.undefined
    texts = [
        f"#a{chr(code)} ＃{chr(code)}"
        for first, last, _ in _RANGES
        for code in range(first, last + 1)
        if code not in skew
    ]
    failures = _check(texts, _compare(harness, texts))
    assert failures[:20] == [], f"{len(failures)} of {len(texts)} texts differ"


def test_url_entities_equal_twitter_text(harness: Harness, java_classes: JavaClasses) -> None:
    """The Python URL extractor (used to drop hashtags inside URLs) against twitter-text's."""
    texts = _url_texts(20_000, SEED, java_classes.undefined)
    reader = _Reader(harness.run("urls", texts))
    failures = []
    for text in texts:
        java = [(reader.int(), reader.int()) for _ in range(reader.int())]
        if url_spans(text) != java:
            failures.append(f"{text!r}: python {url_spans(text)} != twitter-text {java}")
    assert reader.done()
    assert failures[:20] == [], f"{len(failures)} of {len(texts)} texts differ"


_SPARK_SCRIPT = """
import json, sys
from pyspark.sql import SparkSession
from pyspark.sql.types import ArrayType, StringType

jars, local_dir, texts = json.loads(sys.stdin.read())
spark = (
    SparkSession.builder.master("local[1]")
    .appName("hashtag-keys-test")
    .config("spark.jars", ",".join(jars))
    .config("spark.ui.enabled", "false")
    .config("spark.local.dir", local_dir)
    .getOrCreate()
)
try:
    spark.udf.registerJavaFunction(
        "hashtag_keys", "trending.udf.HashtagKeys", ArrayType(StringType())
    )
    frame = spark.createDataFrame([(i, t) for i, t in enumerate(texts)], "i int, text string")
    frame.createOrReplaceTempView("tweets")
    result = spark.sql("SELECT i, hashtag_keys(text) AS keys FROM tweets ORDER BY i")
    print(json.dumps({
        "type": result.schema["keys"].dataType.simpleString(),
        "keys": [list(row["keys"]) for row in result.collect()],
    }))
finally:
    spark.stop()
"""


def test_hashtags_around_urls(harness: Harness, java_classes: JavaClasses) -> None:
    """Hash signs spliced into URL-heavy texts: the rare path that drops hashtags in URLs."""
    rng = random.Random(SEED)
    texts = []
    for url_text in _url_texts(10_000, SEED + 1, java_classes.undefined):
        text = url_text
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(len(text) + 1)
            sign = rng.choice(["#", "#", "＃", "(#", ".#", "/#", " #", "&#", "?#"])
            tag = rng.choice(["a", "tag", "日本", "x1", "1", "_", "ß", "\u0301", "Ab_9"])
            text = text[:i] + sign + tag + text[i:]
        texts.append(text)
    results = _compare(harness, texts)
    failures = _check(texts, results)
    assert failures[:20] == [], f"{len(failures)} of {len(texts)} texts differ"
    assert sum(1 for r in results if r.oracle) > len(texts) // 2


def test_spark_sql_function(tmp_path: Path) -> None:
    """``hashtag_keys`` registered in a real local Spark session (a fresh process, so the
    session surely has the jars whatever other tests started)."""
    jars = [str(j) for j in _udf_jars()]
    texts = [
        "#Café et #CAFÉ et #Cafe\u0301 #café",
        "see example.com/#frag and #Straße #STRASSE",
        "नमस्ते #महात्मा_१२३४ #१२३४ #_ #ผู้เริ่ม #日本語ハッシュタグ。",
        "#𠮷野家 https://t.co/abc/#x #ａｂｃ",
        "no tags here",
        "",
        None,
    ]
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    result = subprocess.run(
        [sys.executable, "-c", _SPARK_SCRIPT],
        input=json.dumps([jars, str(tmp_path), texts]),
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert out["type"] == "array<string>"
    assert out["keys"] == [hashtag_keys(t) if t is not None else [] for t in texts]
    assert out["keys"][0] == ["café"]
    assert out["keys"][1] == ["strasse"]
    assert out["keys"][3] == ["𠮷野家", "x", "abc"]
