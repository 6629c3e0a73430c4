"""Helpers for the temporal window tests: seconds-based events and compact rows."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from trending.windows.temporal import END_OF_TIME, Row

S = 1000  # one second in ms


def spans(rows: Iterable[Row]) -> list[tuple[Any, Any, Any]]:
    """``(start, end, value)`` per row, times in seconds (``"EOT"`` for the end of time)."""
    return [(_sec(row.start), _sec(row.end), row.value) for row in rows]


def _sec(ms: int) -> Any:
    if ms == END_OF_TIME:
        return "EOT"
    return ms // S if ms % S == 0 else ms / S
