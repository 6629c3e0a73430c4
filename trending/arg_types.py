"""Value types for the command line's options: a bad value is argparse's one-line error, with
exit code 2, reported by the subcommand that took it (never a traceback later on).

:data:`PLACEHOLDERS` names the value of each type in ``--help`` (``--lateness DURATION``), the
same for every option that takes that kind of value.
"""

from __future__ import annotations

import argparse
import json
import math
import re
from collections.abc import Callable
from typing import Any

from trending.durations import parse_duration_ms, parse_optional_duration_ms


def _number(kind: Callable[[str], float], text: str, want: str) -> float:
    try:
        value = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"want {want}, got {text!r}") from None
    if isinstance(value, float) and not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"want {want}, got {text!r}")
    return value


# The largest whole number an option takes: Java's Integer.MAX_VALUE, so that every count fits
# the int of Kafka (partitions) and Spark (shuffle partitions) it may end up in.
LARGEST = 2**31 - 1


def count(text: str) -> int:
    """A whole number >= 0 (up to :data:`LARGEST`)."""
    value = int(_number(int, text, "a whole number >= 0"))
    if value < 0:
        raise argparse.ArgumentTypeError(f"want a whole number >= 0, got {text!r}")
    return _at_most_largest(value, text)


def positive_int(text: str) -> int:
    """A whole number >= 1 (up to :data:`LARGEST`)."""
    value = int(_number(int, text, "a whole number >= 1"))
    if value < 1:
        raise argparse.ArgumentTypeError(f"want a whole number >= 1, got {text!r}")
    return _at_most_largest(value, text)


def positive_int_up_to(limit: int) -> Callable[[str], int]:
    """A whole number from 1 to ``limit``: for sizes a command holds in memory at once."""

    def parse(text: str) -> int:
        value = positive_int(text)
        if value > limit:
            raise argparse.ArgumentTypeError(f"want a whole number from 1 to {limit}, got {text!r}")
        return value

    parse.__name__ = "positive_int"
    return parse


def _at_most_largest(value: int, text: str) -> int:
    if value > LARGEST:
        raise argparse.ArgumentTypeError(f"want a whole number <= {LARGEST}, got {text!r}")
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


# Kafka's rule for a topic name (org.apache.kafka.common.internals.Topic)
_TOPIC = re.compile(r"[a-zA-Z0-9._-]{1,249}")


def topic(text: str) -> str:
    """A Kafka topic name: 1 to 249 of a-z, A-Z, 0-9, '.', '_' and '-', not . or .."""
    if not _TOPIC.fullmatch(text) or text in (".", ".."):
        raise argparse.ArgumentTypeError(
            f"not a Kafka topic name: {text!r} (want 1 to 249 letters, digits, '.', '_' or '-')"
        )
    return text


# 9999-12-31T23:59:59.999Z, the last instant a timestamp of the project can hold
LATEST_MS = 253_402_300_799_999


def epoch_ms(text: str) -> int:
    """A time as milliseconds since 1970-01-01T00:00:00Z, up to the end of year 9999."""
    value = int(_number(int, text, "milliseconds since 1970"))
    if not 0 <= value <= LATEST_MS:
        raise argparse.ArgumentTypeError(
            f"want milliseconds since 1970 from 0 to {LATEST_MS} (9999-12-31), got {text!r}"
        )
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


def duration_ms(text: str) -> int:
    """A duration (:mod:`trending.durations`) in milliseconds."""
    try:
        return parse_duration_ms(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def duration_s(text: str) -> float:
    """A duration (:mod:`trending.durations`) in seconds."""
    return duration_ms(text) / 1000


def positive_duration_ms(text: str) -> int:
    """A duration longer than zero, in milliseconds."""
    value = duration_ms(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"want a duration longer than 0, got {text!r}")
    return value


def optional_duration_ms(text: str) -> int | None:
    """A duration in milliseconds, or ``none`` (no bound): None."""
    try:
        return parse_optional_duration_ms(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


# Spark's Kafka source reads startingOffsets as earliest, latest (any case) or JSON offsets by
# topic and partition, -2 standing for earliest and -1 for latest.
STARTING_OFFSETS = (
    "earliest, latest, or a JSON object of offsets by topic and partition, e.g. "
    '{"tweets": {"0": 42, "1": -2}} (-2: earliest, -1: latest)'
)


def starting_offsets(text: str) -> str:
    """Where a new checkpoint starts reading: ``earliest``, ``latest`` or Spark's JSON form."""
    word = text.strip()
    if word.lower() in ("earliest", "latest"):
        return word.lower()
    try:
        offsets = json.loads(word)
    except ValueError:
        offsets = None
    if not _offsets_by_topic(offsets):
        raise argparse.ArgumentTypeError(f"want {STARTING_OFFSETS}, got {text!r}")
    return word


def _offsets_by_topic(value: Any) -> bool:
    """Whether ``value`` is ``{topic: {partition: offset, ...}, ...}``, none of them empty."""
    if not isinstance(value, dict) or not value:
        return False
    for topic, partitions in value.items():
        if not _TOPIC.fullmatch(topic) or not isinstance(partitions, dict) or not partitions:
            return False
        for partition, offset in partitions.items():
            if not (partition.isascii() and partition.isdigit()):
                return False
            if isinstance(offset, bool) or not isinstance(offset, int) or offset < -2:
                return False
    return True


def retired(now: str, what: str) -> Callable[[str], Any]:
    """The type of an option that is gone: every value is refused with the name it has now,
    e.g. ``is now window-readings (a number of readings)`` for a configuration file's key."""

    def refuse(text: str) -> Any:
        raise argparse.ArgumentTypeError(f"is now {now} ({what})")

    return refuse


# The placeholder of an option's value in --help, by its type
PLACEHOLDERS: dict[Callable[[str], Any], str] = {
    duration_ms: "DURATION",
    duration_s: "DURATION",
    positive_duration_ms: "DURATION",
    optional_duration_ms: "DURATION",
    count: "N",
    positive_int: "N",
    port: "PORT",
    master: "URL",
    starting_offsets: "OFFSETS",
    topic: "TOPIC",
    epoch_ms: "MS",
}
