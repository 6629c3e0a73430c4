"""The ``trending`` command: one sub-command per module in :mod:`trending.commands`."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from typing import Protocol

from trending import __version__
from trending.commands import Parser
from trending.config import CONFIG_ENV, ConfigError, configure, exposed_secrets_warnings
from trending.errors import UserError

# Each module registers its own sub-command(s) with ``register(subparsers)``.
COMMAND_MODULES = (
    "trending.commands.broker",
    "trending.commands.produce",
    "trending.commands.consume",
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
    args = parser.parse_args(arguments)
    for warning in exposed_secrets_warnings(config, args, os.environ):
        print(f"trending: warning: {warning}", file=sys.stderr)
    try:
        code: int = args.handler(args)
    except UserError as error:
        return _report(error)
    except KeyboardInterrupt:
        return 130
    return code


def _report(error: UserError) -> int:
    """Print ``error`` (each problem of a configuration file on its own line); exit code 2."""
    for problem in error.problems if isinstance(error, ConfigError) else [str(error)]:
        print(f"trending: error: {problem}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
