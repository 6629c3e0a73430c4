"""The temporal timeline: integer milliseconds between a finite beginning and end of time.

A tick is one millisecond. ``END_OF_TIME`` (9999-12-31T23:59:59.999Z) stands for "never", as
``DateTimeOffset.MaxValue`` does in StreamInsight: an event ending there lasts forever, and a CTI
there makes everything final. Times from lifetime arithmetic are clamped into
``[BEGINNING_OF_TIME, END_OF_TIME]`` instead of overflowing, and the end of time stays the end of
time under every alteration.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

TICK = 1
BEGINNING_OF_TIME = -62_135_596_800_000  # 0001-01-01T00:00:00.000Z
END_OF_TIME = 253_402_300_799_999  # 9999-12-31T23:59:59.999Z

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_ONE_MS = timedelta(milliseconds=1)


def clamp(t: int) -> int:
    """``t`` moved into ``[BEGINNING_OF_TIME, END_OF_TIME]``."""
    return min(max(t, BEGINNING_OF_TIME), END_OF_TIME)


def floor_to(t: int, alignment: int, period: int) -> int:
    """The largest ``t' <= t`` with ``t' = alignment + n * period`` for an integer ``n``."""
    return t - (t - alignment) % period


def parse_time_ms(value: object) -> int:
    """Epoch milliseconds from an integer or an ISO-8601 string (UTC when no offset is given)."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ValueError(f"a time must be epoch milliseconds or ISO-8601, got {value!r}")
    millis = value if isinstance(value, int) else _iso_ms(value)
    if not BEGINNING_OF_TIME <= millis <= END_OF_TIME:
        raise ValueError(f"time {value!r} is outside years 1 to 9999")
    return millis


def _iso_ms(text: str) -> int:
    iso = text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text
    try:
        moment = datetime.fromisoformat(iso)
    except ValueError as error:
        raise ValueError(f"not an ISO-8601 time: {text!r}") from error
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    since_epoch = moment - _EPOCH
    if since_epoch % _ONE_MS:
        raise ValueError(f"time {text!r} is not a whole number of milliseconds")
    return since_epoch // _ONE_MS


def format_time_ms(millis: int) -> str:
    """ISO-8601 UTC with milliseconds, e.g. ``2012-03-15T12:00:05.000Z``."""
    moment = _EPOCH + millis * _ONE_MS
    return (
        f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}T{moment.hour:02d}:"
        f"{moment.minute:02d}:{moment.second:02d}.{moment.microsecond // 1000:03d}Z"
    )
