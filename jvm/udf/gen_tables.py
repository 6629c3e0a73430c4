"""Write the tables of the Spark hashtag function, generated from this Python's Unicode data.

Usage: ``python jvm/udf/gen_tables.py OUT.bin``. The Java side (``HashtagTables``) reads the
file as a class-path resource, so the JVM classifies and case-folds exactly as
``trending.text.hashtags`` does, whatever Unicode version the JVM itself implements.

Format (big-endian, ``java.io.DataInputStream``):

* magic ``b"HTT1"``, then the Unicode version as ``writeUTF`` (u16 length + bytes);
* u32 count, then per range: u32 first, u32 last, u8 class (1 letter/mark, 2 digit/joiner);
* u32 count, then per case-folded code point: u32 code point, u16 length, UTF-16 units of
  ``chr(cp).casefold()`` (code points whose fold is themselves are left out);
* u32 count, then the UTF-16 units of the characters no URL can contain.
"""

from __future__ import annotations

import struct
import sys
import unicodedata
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from trending.text.hashtags import NOT_IN_URL, hashtag_char_ranges


def _utf16_units(text: str) -> list[int]:
    data = text.encode("utf-16-be")
    return [int.from_bytes(data[i : i + 2], "big") for i in range(0, len(data), 2)]


def tables() -> bytes:
    """The table file's bytes."""
    out = bytearray(b"HTT1")
    version = unicodedata.unidata_version.encode("ascii")
    out += struct.pack(">H", len(version)) + version
    ranges = hashtag_char_ranges()
    out += struct.pack(">I", len(ranges))
    for first, last, cls in ranges:
        out += struct.pack(">IIB", first, last, cls)
    folds = [
        (code, _utf16_units(chr(code).casefold()))
        for code in range(0x110000)
        if not 0xD800 <= code <= 0xDFFF and chr(code).casefold() != chr(code)
    ]
    out += struct.pack(">I", len(folds))
    for code, units in folds:
        out += struct.pack(f">IH{len(units)}H", code, len(units), *units)
    no_url = sorted(ord(c) for c in NOT_IN_URL)
    out += struct.pack(f">I{len(no_url)}H", len(no_url), *no_url)
    return bytes(out)


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    path = Path(argv[1])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(tables())
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
