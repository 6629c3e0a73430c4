"""A command's status lines (a job ready, running, stopped; a resolver fetching): plain
``trending: ...`` lines on standard error, or with ``--log-format json`` one JSON object a line
like every other log record. A line is written at once, without the logging module's locks, so
a signal handler may say one too."""

from __future__ import annotations

import logging
import sys
from typing import TextIO

_formatter: logging.Formatter | None = None
_stream: TextIO | None = None


def use_formatter(formatter: logging.Formatter | None, stream: TextIO | None = None) -> None:
    """Write status lines with ``formatter`` (None: plain text) on ``stream`` (else stderr)."""
    global _formatter, _stream
    _formatter, _stream = formatter, stream


def say(message: str, level: int = logging.INFO) -> None:
    """One status line."""
    stream = sys.stderr if _stream is None else _stream
    if _formatter is None:
        stream.write(f"trending: {message}\n")
    else:
        record = logging.LogRecord("trending", level, __file__, 0, message, None, None)
        stream.write(_formatter.format(record) + "\n")
    stream.flush()
