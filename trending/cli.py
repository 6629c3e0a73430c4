"""The ``trending`` command: one sub-command per module in :mod:`trending.commands`."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import Protocol

from trending import __version__
from trending.errors import UserError

# Each module registers its own sub-command(s) with ``register(subparsers)``.
COMMAND_MODULES = (
    "trending.commands.broker",
    "trending.commands.produce",
    "trending.commands.consume",
    "trending.commands.run",
    "trending.commands.windows",
    "trending.commands.demo",
)


class _CommandModule(Protocol):
    def register(self, subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None: ...


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="trending",
        description="Exact windowing for Spark Structured Streaming on Kafka.",
    )
    parser.add_argument("--version", action="version", version=f"trending {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMAND_MODULES:
        module: _CommandModule = importlib.import_module(name)
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the process exit code."""
    args = build_parser().parse_args(argv)
    try:
        code: int = args.handler(args)
    except UserError as error:
        print(f"trending: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return code


if __name__ == "__main__":
    sys.exit(main())
