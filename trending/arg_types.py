"""Value types for the command line's options: a bad value is argparse's one-line error, with
exit code 2, reported by the subcommand that took it (never a traceback later on)."""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable


def _number(kind: Callable[[str], float], text: str, want: str) -> float:
    try:
        value = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"want {want}, got {text!r}") from None
    if isinstance(value, float) and not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"want {want}, got {text!r}")
    return value


def count(text: str) -> int:
    """A whole number >= 0."""
    value = int(_number(int, text, "a whole number >= 0"))
    if value < 0:
        raise argparse.ArgumentTypeError(f"want a whole number >= 0, got {text!r}")
    return value


def positive_int(text: str) -> int:
    """A whole number >= 1."""
    value = int(_number(int, text, "a whole number >= 1"))
    if value < 1:
        raise argparse.ArgumentTypeError(f"want a whole number >= 1, got {text!r}")
    return value


def positive_float(text: str) -> float:
    """A finite number > 0."""
    value = _number(float, text, "a number > 0")
    if value <= 0:
        raise argparse.ArgumentTypeError(f"want a number > 0, got {text!r}")
    return value


def non_negative_float(text: str) -> float:
    """A finite number >= 0."""
    value = _number(float, text, "a number >= 0")
    if value < 0:
        raise argparse.ArgumentTypeError(f"want a number >= 0, got {text!r}")
    return value


def share(text: str) -> float:
    """A fraction from 0 to 1."""
    value = _number(float, text, "a fraction from 0 to 1")
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"want a fraction from 0 to 1, got {text!r}")
    return value


def port(text: str) -> int:
    """A TCP port, 0 to 65535 (0: as the option says, none or any free one)."""
    value = int(_number(int, text, "a port from 0 to 65535"))
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"want a port from 0 to 65535, got {text!r}")
    return value


# Spark's master URLs (SparkContext.createTaskScheduler, SparkSubmit): local modes, a
# standalone master, YARN, Kubernetes, Mesos.
_MASTER = re.compile(
    r"local(\[(\d+|\*)(\s*,\s*\d+)?\])?|local-cluster\[\d+\s*,\s*\d+\s*,\s*\d+\]"
    r"|spark://\S+|yarn|k8s://\S+|mesos://\S+"
)


def master(text: str) -> str:
    """A Spark master URL."""
    if not _MASTER.fullmatch(text.strip()):
        raise argparse.ArgumentTypeError(
            f"not a Spark master: {text!r} (want local[N], local[*], spark://HOST:PORT, yarn or "
            "k8s://URL)"
        )
    return text.strip()
