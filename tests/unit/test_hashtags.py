"""The hashtag rule (twitter-text's) and the counting keys, in pure Python.

``CASES`` is the project's own table of situations (the JVM test also runs it through the
official twitter-text library); the property tests check invariants on arbitrary text.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from trending.text.hashtags import (
    LETTER,
    NUMERAL,
    extract_hashtags,
    extract_hashtags_with_indices,
    hashtag_char_ranges,
    hashtag_key,
    hashtag_keys,
    url_spans,
)


@dataclass(frozen=True)
class Case:
    text: str
    tags: tuple[str, ...]
    why: str


def case(text: str, *tags: str, why: str) -> Case:
    return Case(text, tags, why)


CASES = [
    # --- what may precede the hash sign
    case("so fun ✌#weekend", "weekend", why="after an emoji"),
    case("so fun ✌\ufe0e#weekend", "weekend", why="after emoji + text variation selector"),
    case("so fun ✌\ufe0f#weekend", "weekend", why="after emoji + emoji variation selector"),
    case("so fun ✌🏽#weekend", "weekend", why="after emoji + skin tone"),
    case("so fun ✌🏽\ufe0f#weekend", "weekend", why="after skin tone + variation selector"),
    case("we 👩\u200d👩\u200d👦#family", "family", why="after a ZWJ emoji sequence"),
    case(
        "[#one] (#two) {#three} ”#four“ ’#five’#six",
        "one",
        "two",
        "three",
        "four",
        "five",
        "six",
        why="after brackets and quotes",
    ),
    case(
        "x:#a x;#b x,#c x.#d x!#e x?#f x/#g x-#h",
        "a",
        "b",
        "c",
        "d",
        "e",
        "f",
        "g",
        "h",
        why="after ASCII punctuation",
    ),
    case("ok!#日本 です。#東京 ！＃大阪", "日本", "東京", "大阪", why="after CJK punctuation"),
    case("#start of text", "start", why="at the start"),
    case("line one\n#two\n#three\n", "two", "three", why="after newlines"),
    case("tab\t#tab nbsp\u00a0#nbsp ideo\u3000#ideo", "tab", "nbsp", "ideo", why="after spaces"),
    case("nospace#tag a1#b _#c ë#d", why="no hashtag right after a hashtag character"),
    case("名古屋#名古屋", why="no hashtag right after a CJK letter"),
    case("2024#year", why="no hashtag right after a digit"),
    case("&#nbsp; &#39; &＃x a&#b", why="no hashtag after '&' (HTML entities)"),
    case("a\u200c#zwnj b\u200d#zwj c·#dot", why="no hashtag after joiners or a middle dot"),
    case("𠀀#astral", why="no hashtag right after an astral letter"),
    case("😀#smile", "smile", why="after an astral emoji"),
    case("#a\ufe0f#b x\ufe0f#c", "c", why="a variation selector ending a rejected run is used up"),
    case("#a\ufe0f##b", "b", why="then the next hash sign may start a hashtag"),
    case("##double ＃＃full #＃mixed", "double", "full", "mixed", why="a hash sign before a hash"),
    # --- what follows the hash sign
    case("# spaced and #\ttab", why="no space after the hash sign"),
    case("#️⃣ keycap #\ufe0fx #\u20e3y", why="no keycap or emoji selector after the hash"),
    case("#", why="a lone hash sign"),
    case("end #", why="a trailing hash sign"),
    # --- what the tag may hold
    case("a #hashtag here", "hashtag", why="letters"),
    case("this is #tag2024", "tag2024", why="letters then digits"),
    case("#1st place", "1st", why="digits then letters"),
    case("bus #42 and #0", why="no tag of digits only"),
    case("#_ #1_2 #__9 #〃 #١٢٣", why="no tag without a letter"),
    case("#_a_ #9_x", "_a_", "9_x", why="underscores with a letter"),
    case("#jalapeño #naïve #Zürich", "jalapeño", "naïve", "Zürich", why="Latin-1 accents"),
    case(
        "#Ærøskøbing #Łódź #Ǳemal #ǃxoo #Şişli",
        "Ærøskøbing",
        "Łódź",
        "Ǳemal",
        "ǃxoo",
        "Şişli",
        why="Latin Extended letters",
    ),
    case("#İzmir #ılık #IŞIK", "İzmir", "ılık", "IŞIK", why="Turkish dotted and dotless i"),
    case("#Москва и #ёлка", "Москва", "ёлка", why="Cyrillic"),
    case("#Ελλάδα_2024 ok", "Ελλάδα_2024", why="Greek with underscore and digits"),
    case("#Հայաստան #საქართველო", "Հայաստան", "საქართველო", why="Armenian, Georgian"),
    case(
        "#שָׁלוֹם #צה״ל #ג׳ירפה #בית־ספר",
        "שָׁלוֹם",
        "צה״ל",
        "ג׳ירפה",
        "בית־ספר",
        why="Hebrew points, gershayim, geresh, maqaf",
    ),
    case("#مرحبا #كرة_القدم، #السعودية.", "مرحبا", "كرة_القدم", "السعودية", why="Arabic"),
    case("#خوش\u200cآمدید #می\u200cروم", "خوش\u200cآمدید", "می\u200cروم", why="Persian ZWNJ"),
    case("#٢٠٢٤عام #سال۱۴۰۳", "٢٠٢٤عام", "سال۱۴۰۳", why="Arabic-Indic digits with letters"),
    case("#भारत #नमस्ते_२०२४ #२०२४", "भारत", "नमस्ते_२०२४", why="Hindi; Devanagari digits alone"),
    case(
        "#ক্রিকেট #ਪੰਜਾਬ #ગુજરાત #ଓଡ଼ିଶା",
        "ক্রিকেট",
        "ਪੰਜਾਬ",
        "ગુજરાત",
        "ଓଡ଼ିଶା",
        why="Bengali, Gurmukhi, Gujarati, Oriya",
    ),
    case(
        "#தமிழ்நாடு #తెలంగాణ #ಬೆಂಗಳೂರು #കേരളം",
        "தமிழ்நாடு",
        "తెలంగాణ",
        "ಬೆಂಗಳೂರು",
        "കേരളം",
        why="Tamil, Telugu, Kannada, Malayalam",
    ),
    case("#ශ්\u200dරී #ලංකාව", "ශ්\u200dරී", "ලංකාව", why="Sinhala with ZWJ"),
    case("#กรุงเทพ #ภาษาไทย", "กรุงเทพ", "ภาษาไทย", why="Thai"),
    case("#ພາສາລາວ #ភាសាខ្មែរ #မြန်မာ", "ພາສາລາວ", "ភាសាខ្មែរ", "မြန်မာ", why="Lao, Khmer, Burmese"),
    case("#ཀློག་ཀློག་ #ལྷ་ས", "ཀློག་ཀློག་", "ལྷ་ས", why="Tibetan tsheg, also last"),
    case("#አዲስ_አበባ", "አዲስ_አበባ", why="Ethiopic"),
    case("#서울 #ﾃｽﾄ #ﾡﾢ", "서울", "ﾃｽﾄ", "ﾡﾢ", why="Korean, half-width kana and Hangul"),
    case("#ひらがな #カタカナ #漢字", "ひらがな", "カタカナ", "漢字", why="Japanese scripts"),
    case("東京タワー #東京タワー は", "東京タワー", why="a Japanese tag in Japanese text"),
    case("#東京タワー。きれい", "東京タワー", why="an ideographic full stop ends the tag"),
    case("#ラーメン #ﾗｰﾒﾝ", "ラーメン", "ﾗｰﾒﾝ", why="long vowel marks"),
    case("#ｶﾞｷﾞ #ﾊﾟﾋﾟ #が゛ #は゜", "ｶﾞｷﾞ", "ﾊﾟﾋﾟ", "が゛", "は゜", why="voiced sound marks"),
    case(
        "#日々 #こゝろ #みすゞ #人〻 #同〃",
        "日々",
        "こゝろ",
        "みすゞ",
        "人〻",
        "同〃",
        why="iteration and ditto marks",
    ),
    case(
        "#ドラ～ #ドラ〜 #ド・ラ #ド゠ラ",
        "ドラ～",
        "ドラ〜",
        "ド・ラ",
        "ド゠ラ",
        why="fullwidth tilde, wave dash, katakana middle dot, double hyphen",
    ),
    case(
        "＃ｔｅｓｔ１２３ and ＃ＡＢＣ",
        "ｔｅｓｔ１２３",
        "ＡＢＣ",
        why="fullwidth hash and letters",
    ),
    case("#col·lecció #ꙮ꙾ꙮ", "col·lecció", "ꙮ꙾ꙮ", why="middle dot, Cyrillic kavyka"),
    case("#𠮷野家 #𝒳 #𞤀𞤢", "𠮷野家", "𝒳", "𞤀𞤢", why="astral letters (CJK, math, Adlam)"),
    case("#𖼀𖽑 #A𝟙 #x𑁦", "𖼀𖽑", "A𝟙", "x𑁦", why="astral letter + mark; astral digits"),
    case("#e\u0301te #\u0301", "e\u0301te", "\u0301", why="combining marks are letters here"),
    case("#x\ufe0f #1\ufe0f", "x\ufe0f", "1\ufe0f", why="a variation selector is a mark"),
    case("#ok\u200b #ok\u2060", "ok", "ok", why="format characters end the tag"),
    case("#ⅫⅠ #②", why="letter-like numbers and symbols are not letters"),
    # --- what follows the tag
    case("#tag, #tag. #tag! #tag? #tag: #tag; #tag)", *["tag"] * 7, why="before punctuation"),
    case("#tag#more #tag＃more", why="no hashtag directly followed by a hash sign"),
    case("#http://example.com #https://t.co/x #ftp://x", why="no hashtag followed by ://"),
    case("#ok:// #ok:/ #ok:", "ok", "ok", why="only the full :// rejects"),
    # --- URLs
    case("see http://example.com/#frag and example.com/#frag", why="fragments of URLs"),
    case("https://example.com/a/b?q=1;#frag", why="fragment after a query"),
    case("example.com #tag example.com/ #tag2", "tag", "tag2", why="after a URL and a space"),
    case("example.com#tag", why="directly after a domain (a letter precedes)"),
    case("https://t.co/abc123/#tag", "tag", why="t.co URLs end at the slug"),
    case("https://ab€＃cd.com", why="fullwidth hash inside a Unicode domain"),
    case(
        "#日本google.com/#x",
        "日本google",
        "x",
        why="a URL inside a hashtag is dropped, so the fragment counts",
    ),
    case("http://#foo.com #bar", "foo", "bar", why="no URL without a domain"),
    case("x.com/(#a)", why="in balanced parentheses of a path"),
    case("x.com/a~(#a)", "a", why="parentheses after '~' are not part of the path"),
    case("abc/#tag", "tag", why="a path without a domain is no URL"),
    # --- several hashtags
    case("#a #b #a", "a", "b", "a", why="duplicates kept in order"),
    case("#a#b #c", "c", why="only the last of a chain"),
]

INDEX_CASES: list[tuple[str, list[tuple[str, int, int]]]] = [
    ("#start here", [("start", 0, 6)]),
    ("at the #end", [("end", 7, 11)]),
    ("in the #middle of it", [("middle", 7, 14)]),
    ("#99 then #valid", [("valid", 9, 15)]),
    ("東京 #tokyo 大阪", [("tokyo", 3, 9)]),
    ("#one two #three", [("one", 0, 4), ("three", 9, 15)]),
    ("Tags: #дом!", [("дом", 6, 10)]),
    (
        "Tags #中国, #日本語, #한국어 and #дом.",
        [
            ("中国", 5, 8),
            ("日本語", 10, 14),
            ("한국어", 16, 20),
            ("дом", 25, 29),
        ],
    ),
    ("😀😀 #astral", [("astral", 3, 10)]),
    ("#𠮷野家 #x", [("𠮷野家", 0, 4), ("x", 5, 7)]),
    ("a\u0301 #e\u0301", [("e\u0301", 3, 6)]),
]


@pytest.mark.parametrize("c", CASES, ids=[c.why for c in CASES])
def test_case_table(c: Case) -> None:
    assert extract_hashtags(c.text) == list(c.tags)


@pytest.mark.parametrize(("text", "expected"), INDEX_CASES)
def test_indices_count_code_points(text: str, expected: list[tuple[str, int, int]]) -> None:
    got = extract_hashtags_with_indices(text)
    assert got == expected
    for tag, start, end in got:
        assert text[start] in "#＃"
        assert text[start + 1 : end] == tag


def test_keys_fold_case_and_compatibility_forms() -> None:
    assert hashtag_keys("#Café #CAFÉ #Cafe\u0301 #café") == ["café"]
    assert hashtag_keys("#Straße #STRASSE #strasse #STRAẞE") == ["strasse"]
    assert hashtag_keys("＃ＨＡＳＨ #Hash #ｈａｓｈ") == ["hash"]
    assert hashtag_keys("#ﬁnal #FINAL") == ["final"]
    assert hashtag_keys("#\u212aelvin #kelvin") == ["kelvin"]  # KELVIN SIGN
    assert hashtag_keys("#ΣΊΣΥΦΟΣ #σίσυφος #σίσυφοσ") == ["σίσυφοσ"]
    assert hashtag_keys("#ｶﾞｷﾞ #ガギ") == ["ガギ"]
    assert hashtag_keys("#𝐓𝐄𝐒𝐓 #test") == ["test"]
    assert hashtag_keys("#İstanbul") == ["i\u0307stanbul"]
    assert hashtag_keys("#𐐀𐐨 #𐐨𐐨") == ["𐐨𐐨"]  # Deseret folds in the astral plane


def test_keys_are_distinct_in_order_of_first_appearance() -> None:
    assert hashtag_keys("#b #A #a #B #c") == ["b", "a", "c"]
    assert hashtag_keys("no tags") == []
    assert hashtag_keys("") == []


def test_key_is_nfkc_then_casefold() -> None:
    for tag in ["Café", "ß", "ǅ", "ﬃ", "Ⅻ", "ｱ", "㍿", "ᾼ", "ΐ", "İ", "𝔄"]:
        assert hashtag_key(tag) == unicodedata.normalize("NFKC", tag).casefold()


def test_character_classes() -> None:
    classes = {c: cls for first, last, cls in hashtag_char_ranges() for c in range(first, last + 1)}
    for char in "aZéßΩдא日ー\u0301\ufe0f\U00020000":
        assert classes.get(ord(char)) == LETTER, char
    for char in "09٣१０_\u200c\u200d·׳״־་༌〃〜～゛゜゠・꙾𝟙":
        assert classes.get(ord(char)) == NUMERAL, char
    for char in "#＃&-.!?@$ \u00a0\u200b\u2060Ⅻ②😀\ue000":
        assert ord(char) not in classes, char
    assert classes[0xF870] == LETTER  # private use code points twitter-text counts


def test_no_hashtag_characters_outside_the_scanned_planes() -> None:
    for code in range(0x40000, 0xE0000, 97):
        assert unicodedata.category(chr(code)) == "Cn"


def test_url_spans() -> None:
    assert url_spans("see https://example.com/a#b now") == [(4, 27)]
    assert url_spans("example.com/#frag") == [(0, 17)]
    assert url_spans("https://t.co/abc123/#tag") == [(0, 19)]
    assert url_spans("no url here") == []
    assert url_spans("x.com/a~(#a)") == [(0, 7)]


# ---------------------------------------------------------------- properties

_LN = "".join(f"\\U{first:08x}-\\U{last:08x}" for first, last, _ in hashtag_char_ranges())
_L = "".join(
    f"\\U{first:08x}-\\U{last:08x}" for first, last, cls in hashtag_char_ranges() if cls == LETTER
)
# twitter-text's hashtag pattern, transcribed: the predecessor is consumed by the match.
_REFERENCE = re.compile(
    f"(^|\ufe0e|\ufe0f|[^&{_LN}])([#\uff03])(?![\ufe0f\u20e3])([{_LN}]*[{_L}][{_LN}]*)"
)


def _reference(text: str) -> list[tuple[str, int, int]]:
    """A slow transcription of the rule, to compare the fast scanner with."""
    found = []
    for match in _REFERENCE.finditer(text):
        if not re.match("[#\uff03]|://", text[match.end() :]):
            found.append((match.group(3), match.start(2), match.end()))
    urls = url_spans(text) if found else []
    entities = sorted(
        [(s, e, True) for _, s, e in found] + [(s, e, False) for s, e in urls], key=lambda x: x[0]
    )
    kept: set[int] = set()
    last_end = -1
    for start, end, is_tag in entities:
        if last_end > start:
            continue
        last_end = end
        if is_tag:
            kept.add(start)
    return [f for f in found if f[1] in kept]


_PIECES = st.sampled_from(
    [
        "#",
        "#",
        "＃",
        "&",
        " ",
        "\n",
        "_",
        "a",
        "Z",
        "é",
        "1",
        "٣",
        "日",
        "ー",
        "\u0301",
        "\ufe0e",
        "\ufe0f",
        "\u20e3",
        "\u200c",
        "\u200d",
        "·",
        "〃",
        ".",
        "/",
        ":",
        "://",
        "(",
        ")",
        "?",
        "=",
        "-",
        "~",
        "😀",
        "𠀀",
        "𝟙",
        "example.com",
        "http://",
        "t.co/",
        "www.",
        "ß",
        "İ",
        "ﬁ",
        "ｈ",
        "\u00a0",
        "\u3000",
        "€",
        "@",
        "$",
    ]
)
_TEXTS = st.one_of(
    st.text(),
    st.lists(st.one_of(_PIECES, st.text(max_size=3)), max_size=30).map("".join),
)


@settings(max_examples=400, deadline=None)
@given(_TEXTS)
@example("#a\ufe0f#b\ufe0f#c")
@example("x.com/#a #b")
def test_scanner_equals_the_transcribed_pattern(text: str) -> None:
    assert extract_hashtags_with_indices(text) == _reference(text)


@settings(max_examples=300, deadline=None)
@given(_TEXTS)
def test_key_invariants(text: str) -> None:
    tags = extract_hashtags(text)
    assert tags == [tag for tag, _, _ in extract_hashtags_with_indices(text)]
    keys = hashtag_keys(text)
    assert keys == list(dict.fromkeys(hashtag_key(tag) for tag in tags))
    assert len(set(keys)) == len(keys)
    for key in keys:
        assert key
        assert key.casefold() == key
    for tag, start, end in extract_hashtags_with_indices(text):
        assert text[start] in "#＃"
        assert text[start + 1 : end] == tag
        assert tag and not tag[0].isspace()


@settings(max_examples=200, deadline=None)
@given(_TEXTS)
def test_a_separate_hashtag_appended_is_found(text: str) -> None:
    assert extract_hashtags(text + " #zz") == [*extract_hashtags(text), "zz"]


@given(st.text(st.characters(exclude_categories=())))
def test_never_crashes(text: str) -> None:
    extract_hashtags(text)
    hashtag_keys(text)
