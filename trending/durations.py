"""Durations on the command line and in the configuration file, one dialect for every option:
``500ms``, ``30s``, ``5m``, ``1h``, ``2d``, a bare number (seconds), and Spark's forms
``500 milliseconds``, ``10 seconds``, ``1 minute``, ``2 hours``, ``1 day`` (singular or plural,
any case).

All time inside the package is integer milliseconds.
"""

from __future__ import annotations

import re
from fractions import Fraction

_UNIT_MS = {"ms": 1, "s": 1_000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
# Spark's unit words (singular or plural), by the short unit they stand for
_WORDS = {"millisecond": "ms", "second": "s", "minute": "m", "hour": "h", "day": "d"}
_UNIT = "|".join([*(f"{word}s?" for word in _WORDS), *_UNIT_MS])
_DURATION = re.compile(rf"^\s*(\d+(?:\.\d+)?)\s*({_UNIT})?\s*$", re.IGNORECASE)
# Java's Long.MAX_VALUE: Spark and the JVM side of the jobs hold durations as long milliseconds
LONGEST_MS = 2**63 - 1
ACCEPTED = (
    "a number and a unit: 500ms, 30s, 5m, 1h, 2d, or 500 milliseconds, 10 seconds, 1 minute, "
    "2 hours, 1 day; a bare number is seconds"
)


def parse_duration_ms(text: str) -> int:
    """Parse ``text`` into integer milliseconds; raise ``ValueError`` naming the accepted forms."""
    match = _DURATION.match(text)
    if match is None:
        raise ValueError(f"not a duration: {text!r} (want {ACCEPTED})")
    unit = (match.group(2) or "s").lower()
    ms = Fraction(match.group(1)) * _UNIT_MS[_WORDS.get(unit.removesuffix("s"), unit)]  # exact
    if ms.denominator != 1:
        raise ValueError(f"duration {text!r} is not a whole number of milliseconds")
    if ms > LONGEST_MS:
        raise ValueError(
            f"duration {text!r} is too long: at most {LONGEST_MS}ms (about 292 million years)"
        )
    return int(ms)


def parse_optional_duration_ms(text: str) -> int | None:
    """``None`` for ``none`` (no bound), else a duration as :func:`parse_duration_ms` reads it."""
    return None if text.strip().lower() == "none" else parse_duration_ms(text)


def format_duration_ms(ms: int) -> str:
    """Render milliseconds with the largest unit that divides them exactly."""
    for unit in ("d", "h", "m", "s"):
        if ms and ms % _UNIT_MS[unit] == 0:
            return f"{ms // _UNIT_MS[unit]}{unit}"
    return f"{ms}ms"
