"""``trending windows``: tools for the SPL and temporal window cores (``replay`` a spec).

``trending windows replay SPEC`` reads the spec file and standard input and writes the events
of :func:`trending.windows.replay.replay` to standard output; :func:`main` is the same tool on
its own.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

import yaml

from trending.commands import OptionError, RawDescriptionFormatter
from trending.windows.replay import ReplayError, replay
from trending.windows.spl.spec import SpecError

PROG = "trending windows replay"
# Plain text: ``--help`` prints it as written
REPLAY_DESCRIPTION = """\
Replay a window spec over JSON lines: trending windows replay SPEC < in > out

SPEC is a JSON or YAML file holding one window spec; its kind decides which windows run:

  an SPL window (IBM Streams): kind sliding, or tumbling with an evict policy, e.g.
    {"kind": "sliding", "evict": {"count": 4}, "trigger": {"count": 2}, "partition_by": "p"}
  a temporal window (StreamInsight): kind hopping, snapshot, count or alter, or tumbling
  with a duration, e.g.
    {"kind": "hopping", "duration": "5s", "hop": "2s", "aggregate": "count"}

Every field of both kinds, and the input and output lines of a temporal spec, are described
in the documentation, page Windows on sample data and on Kafka (docs/jobs/windows.md). For an
SPL spec, each input line is one JSON object:

  {"tuple": {...}}  insert a tuple (into the partition tuple[partition_by] if the spec has
                    partition_by) at the current clock time,
  {"punct": true}   insert a window punctuation,
  {"time": T}       advance the clock to T seconds (the clock starts at 0 and only these
                    lines move it; there is no wall clock).

Each output line is one window event, in the order the events fire:

    {"event": NAME, "partition": P, "tuples": [...]}

P is the partition key (null for a non-partitioned window); tuples (oldest first) is the
window content for trigger, initial_full, flush and partition events and the tuple concerned
for insert and evict events. Flush events of a window with summaries also carry
"summary": {...}. For a temporal spec, each input line is an interval event
{"start": T, "end": T, "key": K, "value": V, "id": ID} (no end: a start edge), an end edge
{"end_edge": ID, "end": T} or a CTI {"cti": T}, times as ISO-8601 or epoch milliseconds; each
output line is a row {"start": T, "end": T, "key": K, "value": V} once a CTI makes it final.

Blank input lines are skipped; a malformed line stops the replay with an error naming its line
number (exit code 2).
"""


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
        description=REPLAY_DESCRIPTION,
        formatter_class=RawDescriptionFormatter,
    )
    add_arguments(parser)
    parser.set_defaults(handler=_replay)


def _replay(args: argparse.Namespace) -> int:
    try:
        run(args.spec, sys.stdin, sys.stdout)
    except ReplayError as error:
        raise OptionError(str(error)) from error
    return 0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The replay tool's arguments (shared by :func:`main` and the ``trending`` command)."""
    parser.add_argument(
        "spec", metavar="SPEC", help="the window spec file, JSON (.json) or YAML, SPL or temporal"
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the replay tool on stdin/stdout; 0 on success, 2 on a bad spec or input line."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description=REPLAY_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        run(args.spec, sys.stdin, sys.stdout)
    except ReplayError as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return 2
    return 0


def run(spec_path: str, stdin: TextIO, stdout: TextIO) -> None:
    """Replay ``stdin`` through the window of the spec file, writing event lines to ``stdout``."""
    spec = load_spec(spec_path)
    try:
        lines = replay(spec, stdin, _warn)
    except SpecError as error:
        raise ReplayError(f"spec {spec_path}: {error}") from error
    for line in lines:
        stdout.write(line + "\n")
        stdout.flush()


def _warn(message: str) -> None:
    print(f"{PROG}: {message}", file=sys.stderr)


def load_spec(path: str) -> Any:
    """Read a JSON (``.json``) or YAML spec file; :class:`ReplayError` if unreadable."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise ReplayError(f"cannot read spec {path}: {error.strerror or error}") from error
    try:
        return json.loads(text) if path.endswith(".json") else yaml.safe_load(text)
    except json.JSONDecodeError as error:
        where = f"line {error.lineno}, column {error.colno}"
        raise ReplayError(f"spec {path} is not valid JSON: {error.msg} at {where}") from error
    except yaml.YAMLError as error:
        raise ReplayError(f"spec {path} is not valid YAML: {_yaml_problem(error)}") from error


def _yaml_problem(error: yaml.YAMLError) -> str:
    """PyYAML's multi-line message as one line: the problem and where it is."""
    if isinstance(error, yaml.MarkedYAMLError) and error.problem_mark is not None:
        mark = error.problem_mark
        return f"{error.problem} at line {mark.line + 1}, column {mark.column + 1}"
    return " ".join(str(error).split())


if __name__ == "__main__":
    sys.exit(main())
