"""``trending windows``: tools for the SPL and temporal window cores (``replay`` a spec)."""

from __future__ import annotations

import argparse
import sys

from trending.errors import UserError
from trending.windows import replay


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``windows`` and its ``replay`` sub-command."""
    windows = subparsers.add_parser(
        "windows",
        help="SPL and temporal windows: replay a window spec over JSON lines",
        description="Tools for the SPL and temporal windowing cores.",
    )
    commands = windows.add_subparsers(dest="windows_command", metavar="SUBCOMMAND", required=True)
    parser = commands.add_parser(
        "replay",
        help="replay JSON lines from stdin through a window spec, events to stdout",
        description=replay.__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    replay.add_arguments(parser)
    parser.set_defaults(handler=_replay)


def _replay(args: argparse.Namespace) -> int:
    try:
        replay.run(args.spec, sys.stdin, sys.stdout)
    except replay.ReplayError as error:
        raise UserError(str(error)) from error
    return 0
