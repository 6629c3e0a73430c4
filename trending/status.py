"""A command's status lines (a job ready, running, stopped; a resolver fetching): plain
``trending: ...`` lines on standard error, or with ``--log-format json`` one JSON object a line
like every other log record. A line is written at once, without the logging module's locks, so
a signal handler may say one too.

Under ``--log-format json`` the lines of the programs beside Python take the same form: the Kafka
clients' own log lines (librdkafka's) go through the logger :data:`KAFKA_LOGGER` when a client
is created with :func:`kafka_log_settings`, and the lines a Spark driver JVM writes outside its
logging reach :func:`relay` (:mod:`trending.spark.session`)."""

from __future__ import annotations

import json
import logging
import re
import sys
from typing import Any, TextIO

# The logger of librdkafka's lines (each ``FACILITY [client] text``, e.g.
# ``FAIL [rdkafka#producer-1] [thrd:...]: ... Connection refused``).
KAFKA_LOGGER = "trending.kafka"
# A line another program labels with its level, e.g. the JVM's ``WARNING: Using incubator
# modules: jdk.incubator.vector`` or ``Error: Could not create the Java Virtual Machine.``
_LABELLED = re.compile(r"(WARNING|WARN|ERROR|SEVERE|FATAL|INFO): ?(.*)", re.DOTALL | re.I)
_LEVELS = {
    "WARNING": logging.WARNING, "WARN": logging.WARNING, "ERROR": logging.ERROR,
    "SEVERE": logging.ERROR, "FATAL": logging.CRITICAL, "INFO": logging.INFO,
}  # fmt: skip

_formatter: logging.Formatter | None = None
_stream: TextIO | None = None


def use_formatter(formatter: logging.Formatter | None, stream: TextIO | None = None) -> None:
    """Write status lines with ``formatter`` (None: plain text) on ``stream`` (else stderr)."""
    global _formatter, _stream
    _formatter, _stream = formatter, stream


def say(message: str, level: int = logging.INFO, name: str = "trending") -> None:
    """One status line (``name``: the logger it is a record of, under ``--log-format json``)."""
    stream = sys.stderr if _stream is None else _stream
    if _formatter is None:
        stream.write(f"trending: {message}\n")
    else:
        record = logging.LogRecord(name, level, __file__, 0, message, None, None)
        stream.write(_formatter.format(record) + "\n")
    stream.flush()


def json_job() -> str | None:
    """The job JSON lines name (the sub-command, e.g. ``run hashtags``); None while lines are
    plain text (``--log-format text``, the default)."""
    if _formatter is None:
        return None
    return str(getattr(_formatter, "job", ""))


def kafka_log_settings() -> dict[str, Any]:
    """Settings for a Kafka client (``Producer``, ``Consumer``, ``AdminClient``) that give its
    log lines the form of every other line: under ``--log-format json`` librdkafka logs through
    the Python logger :data:`KAFKA_LOGGER`, whose records the JSON handler writes; with plain
    text, none (librdkafka writes its own lines). A client so created hands its log lines over
    in its calls (``poll``, ``consume``, ``flush``, ``close``): one that makes no other call
    must ``poll(0)`` now and then."""
    if _formatter is None:
        return {}
    return {"logger": logging.getLogger(KAFKA_LOGGER)}


def relay(line: str, name: str = "spark") -> None:
    """One line another program wrote (the Spark driver's JVM, on its standard output or
    error): under ``--log-format json`` as it is when it is a JSON object already (the JVM's
    log lines), else as a line of the logger ``name`` at the level its label says
    (``WARNING: ...``; INFO without one). With plain text, the line as it is."""
    stream = sys.stderr if _stream is None else _stream
    if _formatter is None or _is_json_object(line):
        stream.write(line + "\n")
        stream.flush()
        return
    labelled = _LABELLED.fullmatch(line)
    if labelled is None:
        say(line, logging.INFO, name)
    else:
        say(labelled[2], _LEVELS[labelled[1].upper()], name)


def _is_json_object(line: str) -> bool:
    if not line.startswith("{"):
        return False
    try:
        return isinstance(json.loads(line), dict)
    except ValueError:
        return False
