"""The ``trending`` command: one sub-command per module in :mod:`trending.commands`."""

from __future__ import annotations

import argparse
import difflib
import importlib
import json
import logging
import os
import sys
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Protocol, TextIO

from trending import __version__
from trending.commands import OptionError, Parser, error_line, hidden
from trending.config import (
    CONFIG_ENV,
    ConfigError,
    configure,
    exposed_secrets_warnings,
    leaves,
    subcommands,
)
from trending.errors import UserError
from trending.status import say, use_formatter

LOG_FORMATS = ("text", "json")
# Each module registers its own sub-command(s) with ``register(subparsers)``.
COMMAND_MODULES = (
    "trending.commands.broker",
    "trending.commands.produce",
    "trending.commands.consume",
    "trending.commands.watch",
    "trending.commands.run",
    "trending.commands.windows",
    "trending.commands.demo",
    "trending.commands.config",
    "trending.commands.spark_args",
)


class _CommandModule(Protocol):
    def register(self, subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None: ...


def build_parser() -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = Parser(
        prog="trending",
        description="Exact windowing for Spark Structured Streaming on Kafka.",
    )
    parser.add_argument("--version", action="version", version=f"trending {__version__}")
    parser.add_argument(
        "--config",
        metavar="FILE",
        help=f"a TOML or YAML file of option values for every command (default: ${CONFIG_ENV}); "
        "flags and environment variables win over it",
    )
    parser.add_argument(
        "--log-format",
        choices=LOG_FORMATS,
        default="text",
        help="log lines on standard error: text for people, or json: one JSON object a line "
        "with time (ISO 8601, UTC), level, job, batch and message",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMAND_MODULES:
        module: _CommandModule = importlib.import_module(name)
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the process exit code."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    try:
        config = configure(parser, arguments, os.environ)
    except UserError as error:
        return _report(error)
    mistake = misplaced_option(parser, arguments)
    if mistake:
        print(f"trending: error: {mistake}", file=sys.stderr)
        return 2
    args = parser.parse_args(arguments)
    command = command_of(parser, args)
    configure_logging(args.log_format, command)
    for warning in exposed_secrets_warnings(config, args, os.environ):
        print(f"trending: warning: {warning}", file=sys.stderr)
    try:
        code: int = args.handler(args)
    except OptionError as error:
        if args.log_format == "json":  # a JSON line, its job the sub-command
            return _report(error)
        # a value the command refuses once parsed: as argparse reports the values it refuses
        sys.stderr.write(error_line(f"{parser.prog} {command}", str(error)))
        return 2
    except UserError as error:
        return _report(error)
    except KeyboardInterrupt:
        return 130
    return code


def misplaced_option(parser: argparse.ArgumentParser, argv: Sequence[str]) -> str | None:
    """What is wrong with an option before the command that ``trending`` itself does not
    have (argparse would take its value for the command): a suggestion of ``trending``'s own
    options, or the commands that have it, e.g. ``trending --size 5m run hashtags``."""
    own = {name: action for action in parser._actions for name in action.option_strings}
    commands = subcommands(parser)
    words = iter(argv)
    for word in words:
        if word in commands or word == "--" or not word.startswith("-"):
            return None
        name = word.partition("=")[0]
        matches = [known for known in own if known.startswith(name)]
        if name in own or len(matches) == 1:
            action = own[name if name in own else matches[0]]
            if action.nargs != 0 and "=" not in word:
                next(words, None)  # its value
            continue
        close = difflib.get_close_matches(name, list(own), n=1)
        if close:
            return f"unrecognized option {name}; did you mean {close[0]}?"
        found = {
            " ".join(path): {
                n for action in leaf._actions if not hidden(action) for n in action.option_strings
            }
            for path, leaf in leaves(parser).items()
        }
        spelled = name
        if not any(name in names for names in found.values()):
            every = sorted({n for names in found.values() for n in names})
            close = difflib.get_close_matches(name, every, n=1)
            if not close:
                return f"unrecognized option {name}"
            spelled = close[0]
        having = [path for path, names in found.items() if spelled in names]
        more = ", ..." if len(having) > 3 else ""
        meant = "it is" if spelled == name else f"did you mean {spelled}? It is"
        return (
            f"unrecognized option {name} before the command: {meant} an option of "
            f"{', '.join(having[:3])}{more}; put it after the command "
            f"(trending {having[0]} {spelled} ...)"
        )
    return None


def command_of(parser: argparse.ArgumentParser, args: argparse.Namespace) -> str:
    """The sub-command ``args`` runs, e.g. ``run hashtags``."""
    words: list[str] = []
    while children := subcommands(parser):
        action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        words.append(getattr(args, action.dest))
        parser = children[words[-1]]
    return " ".join(words)


class JsonLogFormatter(logging.Formatter):
    """One JSON object a line: ``time`` (ISO 8601, UTC), ``level``, ``job`` (the sub-command),
    ``batch`` (the micro-batch a record is about, else null), ``logger`` (the logger's name, as
    the driver JVM's lines have it) and ``message`` (with the traceback of an exception, if
    any)."""

    def __init__(self, job: str) -> None:
        super().__init__()
        self.job = job

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        if record.exc_info:
            message += "\n" + self.formatException(record.exc_info)
        moment = datetime.fromtimestamp(record.created, tz=timezone.utc)
        entry = {
            "time": moment.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "level": record.levelname,
            "job": self.job,
            "batch": getattr(record, "batch", None),
            "logger": record.name,
            "message": message,
        }
        return json.dumps(entry, ensure_ascii=False, default=str)


_installed: list[logging.Handler] = []


def configure_logging(log_format: str, job: str, stream: TextIO | None = None) -> None:
    """Log as ``--log-format`` says. ``text`` leaves logging as the jobs set it up (a time and
    the message); ``json`` puts a :class:`JsonLogFormatter` handler on the root logger (on
    ``stream``, else standard error) first, which the jobs' set-up then keeps."""
    root = logging.getLogger()
    while _installed:
        root.removeHandler(_installed.pop())
    use_formatter(None)
    if log_format != "json":
        return
    handler = logging.StreamHandler(sys.stderr if stream is None else stream)
    handler.setFormatter(JsonLogFormatter(job))
    use_formatter(handler.formatter, stream)  # the status lines (trending.status) too
    root.addHandler(handler)
    _installed.append(handler)
    if root.level == logging.NOTSET or root.level > logging.WARNING:
        root.setLevel(logging.WARNING)
    logging.getLogger("trending").setLevel(logging.INFO)


def _report(error: UserError) -> int:
    """Print ``error`` (each problem of a configuration file on its own line); exit code 2."""
    for problem in error.problems if isinstance(error, ConfigError) else [str(error)]:
        say(f"error: {problem}", logging.ERROR)
    return 2


if __name__ == "__main__":
    sys.exit(main())
