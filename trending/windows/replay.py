"""Replay a window spec over JSON lines: ``trending windows replay SPEC < in > out``.

SPEC is a JSON or YAML file holding an SPL window spec (see :mod:`trending.windows.spl.spec`)
or a temporal one (StreamInsight windows, :mod:`trending.windows.temporal.spec`): ``kind``
``hopping``, ``snapshot``, ``count`` or ``alter``, or ``tumbling`` with a ``duration``, is
temporal (input and output lines: :mod:`trending.windows.temporal_replay`); ``sliding``, or
``tumbling`` with an ``evict``, is SPL. For an SPL spec, each input line is one JSON object:

* ``{"tuple": {...}}`` insert a tuple (into the partition ``tuple[partition_by]`` if the spec
  has ``partition_by``) at the current clock time,
* ``{"punct": true}`` insert a window punctuation,
* ``{"time": T}`` advance the clock to ``T`` seconds (the clock starts at 0 and only these
  lines move it; there is no wall clock).

Each output line is one window event, in the order the events fire::

    {"event": NAME, "partition": P, "tuples": [...]}

``P`` is the partition key (``null`` for a non-partitioned window); ``tuples`` (oldest first)
is the window content for ``trigger``, ``initial_full``, flush and partition events and the
tuple concerned for insert and evict events. Flush events of a window with summaries also
carry ``"summary": {...}``. Blank input lines are skipped; a malformed line stops the replay
with an error naming its line number (exit code 2).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

import yaml

from trending.windows.spl.events import InputError
from trending.windows.spl.policies import seconds_to_ms
from trending.windows.spl.spec import SpecError, WindowSpec, parse_spec
from trending.windows.spl.window import Advance, Input, Insert, Punctuation, WindowLogic
from trending.windows.temporal.spec import is_temporal_spec, parse_temporal_spec

PROG = "trending windows replay"
_FORMS = '{"tuple": {...}}, {"punct": true}, {"time": T}'


class ReplayError(ValueError):
    """A spec file or an input line the replay cannot use; the message says where."""


def replay(
    spec: Mapping[str, Any], lines: Iterable[str], warn: Callable[[str], None] | None = None
) -> Iterator[str]:
    """The JSON lines that replaying ``lines`` through the window of ``spec`` gives.

    A temporal spec (:func:`~trending.windows.temporal.spec.is_temporal_spec`) goes to
    :mod:`trending.windows.temporal_replay` (``warn`` hears of late input it dropped or
    adjusted); any other spec is an SPL window. Raises
    :class:`~trending.windows.spl.spec.SpecError` at once for a bad spec and
    :class:`ReplayError` (``line N: ...``) when iteration reaches a malformed line.
    """
    if is_temporal_spec(spec):
        from trending.windows.temporal_replay import replay_temporal

        return replay_temporal(parse_temporal_spec(spec), lines, warn)
    parsed = parse_spec(spec)
    return _replay(parsed, parsed.build(), lines)


def _replay(spec: WindowSpec, window: WindowLogic, lines: Iterable[str]) -> Iterator[str]:
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            events = window.apply(parse_line(line, spec, window.now_ms))
        except (InputError, ReplayError) as error:
            raise ReplayError(f"line {number}: {error}") from error
        for event in events:
            yield json.dumps(event.to_json())


def parse_line(line: str, spec: WindowSpec, now_ms: int) -> Input:
    """One input line as a window input; :class:`ReplayError` if it is malformed."""
    try:
        data = json.loads(line)
    except json.JSONDecodeError as error:
        raise ReplayError(f"not JSON ({error.msg} at column {error.colno})") from error
    if not isinstance(data, dict) or len(data) != 1:
        raise ReplayError(f"expected one of {_FORMS}; got {line.strip()[:80]}")
    ((name, value),) = data.items()
    if name == "tuple" and isinstance(value, dict):
        return Insert(value, spec.partition_of(value))
    if name == "punct" and value is True:
        return Punctuation()
    if name == "time":
        return Advance(_time_ms(value, now_ms))
    raise ReplayError(f"expected one of {_FORMS}; got {line.strip()[:80]}")


def _time_ms(value: object, now_ms: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ReplayError(f"time must be a number of seconds, got {value!r}")
    try:
        millis = seconds_to_ms(value)
    except ValueError as error:
        raise ReplayError(str(error)) from error
    if millis < now_ms:
        raise ReplayError(
            f"time {value} s is before the clock ({now_ms / 1000:g} s); time only moves forward"
        )
    return millis


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


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The replay tool's arguments (shared by :func:`main` and the ``trending`` command)."""
    parser.add_argument("spec", metavar="SPEC", help="window spec file (JSON or YAML)")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the replay tool on stdin/stdout; 0 on success, 2 on a bad spec or input line."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description=__doc__,
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


if __name__ == "__main__":
    sys.exit(main())
