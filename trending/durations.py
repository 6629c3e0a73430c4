"""Durations on the command line: ``250ms``, ``30s``, ``5m``, ``1h``, ``2d`` (bare number: seconds).

All time inside the package is integer milliseconds.
"""

from __future__ import annotations

import re

_UNIT_MS = {"ms": 1, "s": 1_000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$")


def parse_duration_ms(text: str) -> int:
    """Parse ``text`` into integer milliseconds; raise ``ValueError`` with the accepted forms."""
    match = _DURATION.match(text)
    if match is None:
        raise ValueError(f"not a duration: {text!r} (use e.g. 500ms, 30s, 5m, 1h, 2d)")
    value, unit = float(match.group(1)), match.group(2) or "s"
    ms = value * _UNIT_MS[unit]
    if ms != int(ms):
        raise ValueError(f"duration {text!r} is not a whole number of milliseconds")
    return int(ms)


def parse_optional_duration_ms(text: str) -> int | None:
    """``None`` for ``none`` (no bound), else :func:`parse_duration_ms`."""
    return None if text.strip().lower() == "none" else parse_duration_ms(text)


def format_duration_ms(ms: int) -> str:
    """Render milliseconds with the largest unit that divides them exactly."""
    for unit in ("d", "h", "m", "s"):
        if ms and ms % _UNIT_MS[unit] == 0:
            return f"{ms // _UNIT_MS[unit]}{unit}"
    return f"{ms}ms"
