"""Hashtags as Twitter counts them: the rule of twitter-text 3 ``Extractor.extractHashtags``.

A hashtag is ``#`` or ``＃`` followed by a run of hashtag characters -- letters and marks
(Unicode ``L*``, ``M*``), decimal digits (``Nd``) and a few joiners and signs (``_``, ZWNJ,
ZWJ, middle dots, Hebrew geresh, ...) -- holding at least one letter or mark, where

* the ``#`` starts the text or follows a character that is neither ``&`` nor a hashtag
  character (the variation selectors U+FE0E and U+FE0F are allowed before it, unless they
  end a rejected hashtag run),
* the ``#`` is not followed by U+FE0F or U+20E3 (a keycap emoji),
* the run is not followed by ``#``, ``＃`` or ``://`` (then it is no hashtag), and
* the hashtag does not overlap a URL that starts before it (``example.com/#frag``).

Indices count code points (as the conformance suite and the Twitter API do), not UTF-16 units.
The counting key of a tag is ``casefold(NFKC(tag))``; a tweet counts once per distinct key.
"""

from __future__ import annotations

import re
import stringprep
import unicodedata
from bisect import bisect_right
from collections import defaultdict
from functools import cache
from itertools import chain

__all__ = [
    "LETTER",
    "NOT_IN_URL",
    "NUMERAL",
    "extract_hashtags",
    "extract_hashtags_with_indices",
    "hashtag_char_ranges",
    "hashtag_key",
    "hashtag_keys",
    "url_spans",
]

LETTER = 1
"""Class of letters and marks: a hashtag needs one."""
NUMERAL = 2
"""Class of decimal digits and the allowed joiners and signs."""

# Joiners and signs allowed inside a hashtag besides letters, marks and digits.
_SPECIAL = (
    "_\u200c\u200d\u00b7\u05be\u05f3\u05f4\u0f0b\u0f0c\u3003\u301c\u309b\u309c\u30a0\u30fb"
    "\ua67e\uff5e"
)
# Private-use code points that twitter-text counts as letters.
_PRIVATE_USE_LETTERS = (
    (0xF870, 0xF87F),
    (0xF882, 0xF882),
    (0xF884, 0xF89F),
    (0xF8B8, 0xF8B8),
    (0xF8C1, 0xF8D6),
)
# Planes holding letters, marks or digits: 0-3 and 14 (4-13 are unassigned, 15-16 private use).
_SCANNED_PLANES = (range(0x0, 0x40000), range(0xE0000, 0xF0000))
# Class of each general category; any other category maps to 0.
_CATEGORY_CLASS: defaultdict[str, int] = defaultdict(
    int, {**dict.fromkeys(("Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me"), LETTER), "Nd": NUMERAL}
)


def hashtag_char_ranges() -> list[tuple[int, int, int]]:
    """The hashtag characters as sorted ``(first, last, class)`` code point ranges.

    ``class`` is :data:`LETTER` or :data:`NUMERAL`; categories come from this Python's
    ``unicodedata``. The Spark function's tables are generated from this list.
    """
    ranges: list[tuple[int, int, int]] = []
    for plane in _SCANNED_PLANES:
        classes = bytearray(
            map(_CATEGORY_CLASS.__getitem__, map(unicodedata.category, map(chr, plane)))
        )
        for code in map(ord, _SPECIAL):
            if code in plane:
                classes[code - plane.start] = NUMERAL
        for first, last in _PRIVATE_USE_LETTERS:
            if first in plane:
                classes[first - plane.start : last + 1 - plane.start] = bytes(
                    [LETTER] * (last + 1 - first)
                )
        for run in re.finditer(rb"\x01+|\x02+", classes):
            ranges.append(
                (plane.start + run.start(), plane.start + run.end() - 1, classes[run.start()])
            )
    return ranges


def _char_class(ranges: list[tuple[int, int, int]], cls: int, limit: int) -> str:
    """Regex class body of the ranges of class ``cls`` (clipped to code points < limit)."""
    return "".join(
        f"\\U{first:08x}-\\U{min(last, limit - 1):08x}"
        for first, last, kind in ranges
        if kind == cls and first < limit
    )


_RANGES = hashtag_char_ranges()


def _bmp_classes() -> bytes:
    classes = bytearray(0x10000)
    for first, last, cls in _RANGES:
        if first <= 0xFFFF:
            stop = min(last, 0xFFFF) + 1
            classes[first:stop] = bytes([cls]) * (stop - first)
    return bytes(classes)


_BMP = _bmp_classes()
_ASTRAL = [(max(first, 0x10000), last, cls) for first, last, cls in _RANGES if last > 0xFFFF]
_ASTRAL_FIRST = [first for first, _, _ in _ASTRAL]


def _class_of(char: str) -> int:
    """:data:`LETTER`, :data:`NUMERAL` or 0 for any other character."""
    code = ord(char)
    if code < 0x10000:
        return _BMP[code]
    i = bisect_right(_ASTRAL_FIRST, code) - 1
    return _ASTRAL[i][2] if i >= 0 and code <= _ASTRAL[i][1] else 0


def _run_pattern(limit: int) -> re.Pattern[str]:
    # The maximal run of hashtag characters; group 1 matched iff the run holds a letter
    # (digits and joiners, then a letter, then anything). The three classes are disjoint.
    letters = _char_class(_RANGES, LETTER, limit)
    numerals = _char_class(_RANGES, NUMERAL, limit)
    return re.compile(f"[{numerals}]*([{letters}][{letters}{numerals}]*)?")


# sre tests astral ranges one by one, so runs are matched with BMP classes first and only
# rematched with the full classes when the BMP run stops at an astral character.
_RUN_BMP = _run_pattern(0x10000).match
_RUN_ALL = _run_pattern(0x110000).match
_HASH_SIGNS = re.compile("[#\uff03]")
_REJECT_AFTER = ("#", "\uff03", "://")
NOT_IN_URL = frozenset(
    ' \t\n\x0b\x0c\r"<>^`{}\u00a0\u1680\u3000'
    + "".join(chr(c) for c in range(0x2000, 0x2070) if c != 0x2013)
)
"""Characters no URL can contain (ASCII white space, ``Z*`` spaces, General Punctuation but
the en dash, and ``"<>^`{}``): a hashtag whose ``#`` starts the text or follows one of them
cannot overlap a URL, so the URL scan is skipped."""

# Valid predecessors of a '#' that no URL can contain (ZWNJ and ZWJ are hashtag characters).
# Neither a URL nor a hashtag contains one, so they also split texts into independent segments.
_CLEAN_BEFORE = frozenset(c for c in NOT_IN_URL if not _class_of(c))
_SEGMENT_BREAK = re.compile("[" + re.escape("".join(sorted(_CLEAN_BEFORE))) + "]")


def _plain_pattern() -> re.Pattern[str]:
    # A plain hashtag: '#' at the start or after a clean predecessor, a run of BMP hashtag
    # characters with a letter, followed by nothing that needs a second look (a hashtag or
    # astral character, a hash sign, ':'). Starting with a literal '#' lets sre skip fast.
    letters = _char_class(_RANGES, LETTER, 0x10000)
    numerals = _char_class(_RANGES, NUMERAL, 0x10000)
    both = letters + numerals
    clean = re.escape("".join(sorted(_CLEAN_BEFORE)))
    return re.compile(
        f"#(?:(?<=^#)|(?<=[{clean}]#))(?![\ufe0f\u20e3])"
        f"([{numerals}]*[{letters}][{both}]*)"
        f"(?![{both}#\uff03:\U00010000-\U0010ffff])"
    )


# When every '#' of a text starts a plain hashtag (and there is no '＃'), these are all its
# hashtags and no URL can hold one: the common case, done in one findall.
_PLAIN_HASHTAGS = _plain_pattern().findall


def _hash_positions(text: str) -> list[int]:
    if "\uff03" in text:
        return [match.start() for match in _HASH_SIGNS.finditer(text)]
    positions = []
    find = text.find
    i = find("#")
    while i >= 0:
        positions.append(i)
        i = find("#", i + 1)
    return positions


def _spans(text: str) -> list[tuple[int, int]]:
    """``(index of '#', end of tag)`` of each hashtag in ``text``, in order."""
    spans: list[tuple[int, int]] = []
    size = len(text)
    consumed = -1
    suspects: list[int] = []
    for i in _hash_positions(text):
        start = i + 1
        maybe_in_url = False
        if i:
            before = text[i - 1]
            if before not in _CLEAN_BEFORE:
                if before == "&" or i == consumed:
                    # (consumed: the predecessor ends a run rejected for this '#')
                    continue
                if before not in "\ufe0e\ufe0f" and _class_of(before):
                    continue
                maybe_in_url = True
        if start == size or text[start] in "\ufe0f\u20e3":
            continue
        run = _RUN_BMP(text, start)
        assert run is not None  # (the pattern matches the empty string)
        end = run.end()
        if end < size and text[end] >= "\U00010000":
            run = _RUN_ALL(text, start)
            assert run is not None
            end = run.end()
        if run.group(1) is None:
            continue
        if text.startswith(_REJECT_AFTER, end):
            consumed = end
            continue
        spans.append((i, end))
        if maybe_in_url:
            suspects.append(i)
    if suspects and "." in text:
        return _drop_url_overlaps(text, spans, suspects)
    return spans


def _drop_url_overlaps(
    text: str, spans: list[tuple[int, int]], suspects: list[int]
) -> list[tuple[int, int]]:
    """Drop the hashtags twitter-text drops after merging them with the URL entities.

    Entities are ordered by start (hashtags first on ties); one is dropped when the last
    kept entity ends after its start. No entity contains a character of ``_SEGMENT_BREAK``,
    so this is done per segment between two of them, only for segments with a ``suspect``
    hashtag (one whose ``#`` follows a character URLs may contain) and a ``.``.
    """
    breaks = [match.start() for match in _SEGMENT_BREAK.finditer(text)]
    dropped: set[tuple[int, int]] = set()
    segment_end = -1
    for suspect in suspects:
        if suspect < segment_end:
            continue
        k = bisect_right(breaks, suspect)
        segment_start = breaks[k - 1] + 1 if k else 0
        segment_end = breaks[k] if k < len(breaks) else len(text)
        if text.find(".", segment_start, segment_end) < 0:
            continue
        urls = url_spans(text[segment_start:segment_end])
        if not urls:
            continue
        entities = sorted(
            chain(
                ((s, e, True) for s, e in spans if segment_start <= s < segment_end),
                ((s + segment_start, e + segment_start, False) for s, e in urls),
            ),
            key=lambda entity: entity[0],
        )
        last_end = -1
        for start, end, is_hashtag in entities:
            if last_end > start:
                if is_hashtag:
                    dropped.add((start, end))
                continue
            last_end = end
    return [span for span in spans if span not in dropped] if dropped else spans


# -- URLs ---------------------------------------------------------------------------------
# twitter-text's URL entities (Regex.VALID_URL plus Extractor.extractURLsWithIndices), only
# needed when a hashtag's '#' follows a character a URL may contain. Case-insensitive matching
# is ASCII-only there (hence re.ASCII); the top-level domains are twitter-text's own lists, as
# its Python port ships them.

_LATIN_ACCENTS = (
    "\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u00ff\u0100-\u024f\u0253\u0254\u0256\u0257\u0259"
    "\u025b\u0263\u0268\u026f\u0272\u0289\u028b\u02bb\u0300-\u036f\u1e00-\u1eff"
)
_CYRILLIC = "\u0400-\u04ff"
_DOMAIN_CHAR = f"[a-z0-9{_LATIN_ACCENTS}]"
_SUBDOMAIN = f"(?:(?:{_DOMAIN_CHAR}[a-z0-9{_LATIN_ACCENTS}\\-_]*)?{_DOMAIN_CHAR}\\.)"
_DOMAIN_NAME = f"(?:(?:{_DOMAIN_CHAR}[a-z0-9{_LATIN_ACCENTS}\\-]*)?{_DOMAIN_CHAR}\\.)"
# Anything but ASCII punctuation, white space (ASCII \s and Z*) and General Punctuation.
_NOT_UNICODE_DOMAIN = (
    "!\"#$%&'()*+,./:;<=>?@\\[\\]^_`{|}~ \\t\\n\\x0b\\x0c\\r\\u00a0\\u1680\\u2000-\\u206f\\u3000"
)
_UNICODE_CHAR = f"[^\\-{_NOT_UNICODE_DOMAIN}]"
_UNICODE_DOMAIN_NAME = f"(?:(?:{_UNICODE_CHAR}[^{_NOT_UNICODE_DOMAIN}]*)?{_UNICODE_CHAR}\\.)"
_PATH_CHAR = f"[a-z0-9!*';:=+,.$/%#\\[\\]\\-\\u2013_~|&@{_LATIN_ACCENTS}{_CYRILLIC}]"
_PARENS = f"\\((?:{_PATH_CHAR}+|{_PATH_CHAR}*\\({_PATH_CHAR}+\\){_PATH_CHAR}*)\\)"
# A path segment: chars ending in an ending char, or balanced parentheses alone, or @chars/.
_PATH = (
    f"(?:{_PATH_CHAR}*(?:{_PARENS}{_PATH_CHAR}*)*[a-z0-9=_#/\\-+{_LATIN_ACCENTS}{_CYRILLIC}]"
    f"|{_PARENS}|@{_PATH_CHAR}+/)"
)
_QUERY = "\\?[a-z0-9!?*'();:&=+$/%#\\[\\]\\-_.,~|@]*[a-z0-9\\-_&=#/]"
_MAX_URL_LENGTH = 4096
_MAX_TCO_SLUG_LENGTH = 40


@cache
def _url_patterns() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """The URL pattern and the t.co pattern, compiled on first use (the rare path)."""
    from twitter_text.regexp.valid_cctld import valid_cctld
    from twitter_text.regexp.valid_gtld import valid_gtld

    # Each TLD pattern ends in a lookahead for a character that cannot continue the TLD.
    tld = f"(?:{valid_gtld.pattern}|{valid_cctld.pattern})"
    domain = (
        f"{_SUBDOMAIN}*{_DOMAIN_NAME}(?:{tld}|xn--[\\-0-9a-z]+)"
        f"|(?:(?<=http://)|(?<=https://))"
        f"(?:{_DOMAIN_NAME}{valid_cctld.pattern}|{_UNICODE_DOMAIN_NAME}{tld})"
        f"|{_DOMAIN_NAME}{valid_cctld.pattern}(?=/)"
    )
    url = re.compile(
        "([^a-z0-9@\uff20$#\uff03\ufffe\ufeff\uffff]|^)"
        f"((https?://)?({domain})(?::[0-9]+)?(?:/{_PATH}*)?(?:{_QUERY})?)",
        re.IGNORECASE | re.ASCII,
    )
    tco = re.compile(f"https?://t\\.co/([a-z0-9]+)(?:{_QUERY})?", re.IGNORECASE | re.ASCII)
    return url, tco


_DOTS = re.compile("[.\u3002\uff0e\uff61]")
_PROHIBITED = (
    stringprep.in_table_c12,
    stringprep.in_table_c22,
    stringprep.in_table_c3,
    stringprep.in_table_c4,
    stringprep.in_table_c5,
    stringprep.in_table_c6,
    stringprep.in_table_c7,
    stringprep.in_table_c8,
    stringprep.in_table_c9,
)


# Bidi class of unassigned code points by range (Unicode's DerivedBidiClass defaults); any
# other unassigned code point is L, or BN if default-ignorable or a noncharacter.
_DEFAULT_BIDI = (
    (0x0590, 0x05FF, "R"),
    (0x0600, 0x07BF, "AL"),
    (0x07C0, 0x085F, "R"),
    (0x0860, 0x08FF, "AL"),
    (0x20A0, 0x20CF, "ET"),
    (0xFB1D, 0xFB4F, "R"),
    (0xFB50, 0xFDCF, "AL"),
    (0xFDF0, 0xFDFF, "AL"),
    (0xFE70, 0xFEFF, "AL"),
    (0x10800, 0x10CFF, "R"),
    (0x10D00, 0x10D3F, "AL"),
    (0x10D40, 0x10EBF, "R"),
    (0x10EC0, 0x10EFF, "AL"),
    (0x10F00, 0x10F2F, "R"),
    (0x10F30, 0x10F6F, "AL"),
    (0x10F70, 0x10FFF, "R"),
    (0x1E800, 0x1EC6F, "R"),
    (0x1EC70, 0x1ECBF, "AL"),
    (0x1ECC0, 0x1ECFF, "R"),
    (0x1ED00, 0x1ED4F, "AL"),
    (0x1ED50, 0x1EDFF, "R"),
    (0x1EE00, 0x1EEFF, "AL"),
    (0x1EF00, 0x1EFFF, "R"),
    (0x2060, 0x206F, "BN"),
    (0xFDD0, 0xFDEF, "BN"),
    (0xFFF0, 0xFFF8, "BN"),
    (0xE0000, 0xE0FFF, "BN"),
)


def _default_bidi(char: str) -> str:
    code = ord(char)
    if code & 0xFFFE == 0xFFFE:
        return "BN"
    for first, last, bidi in _DEFAULT_BIDI:
        if first <= code <= last:
            return bidi
    return "L"


def _map_b2(char: str) -> str:
    """RFC 3454 tables B.1 (map to nothing) and B.2 (case folding), Unicode 3.2 only.

    ``stringprep.map_table_b2`` lowercases with the current Unicode, which also maps code
    points that had no case in 3.2 (Georgian, Cherokee) to code points added since.
    """
    if stringprep.in_table_a1(char):
        return char
    if stringprep.in_table_b1(char):
        return ""
    mapped = stringprep.map_table_b2(char)
    return char if any(map(stringprep.in_table_a1, mapped)) else mapped


def _nfkc_3_2(text: str) -> str:
    """NFKC of Unicode 3.2, code points unassigned there acting as starters that never combine.

    (``ucd_3_2_0.normalize`` takes their combining classes from the current Unicode.)
    """
    normalize = unicodedata.ucd_3_2_0.normalize
    if not any(map(stringprep.in_table_a1, text)):
        return normalize("NFKC", text)
    out: list[str] = []
    segment_start = 0
    for i, char in enumerate(text):
        if stringprep.in_table_a1(char):
            out.append(normalize("NFKC", text[segment_start:i]))
            out.append(char)
            segment_start = i + 1
    out.append(normalize("NFKC", text[segment_start:]))
    return "".join(out)


def _nameprep(label: str) -> str | None:
    """RFC 3491 nameprep allowing unassigned code points, or None for an invalid label.

    Like Java's ``IDN``: mapping, normalization and prohibition use Unicode 3.2 data (code
    points unassigned in 3.2 pass unchanged), the bidi rule uses current bidi classes.
    """
    prepared = _nfkc_3_2("".join(map(_map_b2, label)))
    if any(check(c) for c in prepared for check in _PROHIBITED):
        return None
    bidi = [unicodedata.bidirectional(c) or _default_bidi(c) for c in prepared]
    right_to_left = ("R", "AL")
    if ("R" in bidi or "AL" in bidi) and (
        "L" in bidi or bidi[0] not in right_to_left or bidi[-1] not in right_to_left
    ):
        return None
    return prepared


def _label_to_ascii(label: str) -> str | None:
    prepared = _nameprep(label)
    if prepared is None or prepared.isascii():
        return prepared
    if prepared[:4].isascii() and prepared[:4].lower() == "xn--":
        return None
    return "xn--" + prepared.encode("punycode").decode("ascii")


def _idna_to_ascii(host: str) -> str | None:
    """``java.net.IDN.toASCII(host, ALLOW_UNASSIGNED)``, or None where it throws."""
    if len(host) == 1 and _DOTS.match(host):
        return "."
    labels = _DOTS.split(host)
    trailing_dot = len(labels) > 1 and not labels[-1]
    if trailing_dot:
        labels.pop()
    out = []
    for label in labels:
        ascii_label = label if label.isascii() else _label_to_ascii(label)
        if ascii_label is None or not 0 < len(ascii_label) < 64:
            return None
        out.append(ascii_label)
    return ".".join(out) + ("." if trailing_dot else "")


def _utf16_length(text: str) -> int:
    if text.isascii():
        return len(text)
    return len(text) + sum(1 for c in text if ord(c) > 0xFFFF)


def url_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of the URLs twitter-text extracts from ``text`` (code point indices)."""
    if "." not in text:
        return []
    spans: list[tuple[int, int]] = []
    url_pattern, tco_pattern = _url_patterns()
    for match in url_pattern.finditer(text):
        before, url, protocol, host = match.group(1, 2, 3, 4)
        if not protocol and before in ("-", "_", ".", "/"):
            continue
        start, end = match.span(2)
        tco = tco_pattern.match(url)
        if tco:
            if len(tco.group(1)) > _MAX_TCO_SLUG_LENGTH:
                continue
            url = tco.group(0)
            end = start + len(url)
        ascii_host = _idna_to_ascii(host)
        if ascii_host is None:
            continue
        length = _utf16_length(url) + len(ascii_host) - _utf16_length(host)
        if length + (0 if protocol else len("https://")) <= _MAX_URL_LENGTH:
            spans.append((start, end))
    return spans


def extract_hashtags(text: str) -> list[str]:
    """The hashtags of ``text`` without ``#``, in order, duplicates kept."""
    if "#" in text:
        tags: list[str] = _PLAIN_HASHTAGS(text)
        if len(tags) == text.count("#") and "\uff03" not in text:
            return tags
    elif "\uff03" not in text:
        return []
    return [text[start + 1 : end] for start, end in _spans(text)]


def extract_hashtags_with_indices(text: str) -> list[tuple[str, int, int]]:
    """``(tag, start, end)`` per hashtag: ``text[start:end]`` is the ``#`` and the tag.

    Indices count code points.
    """
    if "#" not in text and "\uff03" not in text:
        return []
    return [(text[start + 1 : end], start, end) for start, end in _spans(text)]


def hashtag_key(tag: str) -> str:
    """The counting key of a tag: NFKC-normalized, then case-folded."""
    if tag.isascii():
        return tag.lower()
    return unicodedata.normalize("NFKC", tag).casefold()


def hashtag_keys(text: str) -> list[str]:
    """The distinct keys of the hashtags of ``text``, in order of first appearance."""
    if "#" in text:
        tags: list[str] = _PLAIN_HASHTAGS(text)
        if len(tags) != text.count("#") or "\uff03" in text:
            tags = [text[start + 1 : end] for start, end in _spans(text)]
    elif "\uff03" in text:
        tags = [text[start + 1 : end] for start, end in _spans(text)]
    else:
        return []
    if text.isascii():  # (O(1): a flag of the string)
        return list(dict.fromkeys(map(str.lower, tags)))
    normalize = unicodedata.normalize
    return list(
        dict.fromkeys(
            tag.lower() if tag.isascii() else normalize("NFKC", tag).casefold() for tag in tags
        )
    )
