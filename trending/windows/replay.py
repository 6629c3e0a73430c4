"""Replaying a window spec over JSON lines: :func:`replay`, input lines in, event lines out.

A temporal spec (StreamInsight windows, :mod:`trending.windows.temporal.spec`) replays interval
events, edges and CTIs (lines: :mod:`trending.windows.temporal_replay`); any other spec is an
SPL window (:mod:`trending.windows.spl.spec`), whose input lines are ``{"tuple": {...}}`` (insert
a tuple at the current clock time, into the partition ``tuple[partition_by]`` if the spec has
``partition_by``), ``{"punct": true}`` (a window punctuation) and ``{"time": T}`` (advance the
clock to ``T`` seconds: it starts at 0 and only these lines move it), and whose output lines
are the window events, in the order they fire::

    {"event": NAME, "partition": P, "tuples": [...]}

Pure: the spec is a mapping and the lines any iterable; reading the spec file and the standard
streams is the ``trending windows replay`` command's.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from trending.windows.spl.events import InputError
from trending.windows.spl.policies import seconds_to_ms
from trending.windows.spl.spec import SpecError, WindowSpec, parse_spec
from trending.windows.spl.window import Advance, Input, Insert, Punctuation, WindowLogic
from trending.windows.temporal.spec import KINDS as TEMPORAL_KINDS
from trending.windows.temporal.spec import is_temporal_spec, parse_temporal_spec
from trending.windows.temporal_replay import ReplayError, replay_temporal

__all__ = ["ReplayError", "parse_line", "replay"]

_FORMS = '{"tuple": {...}}, {"punct": true}, {"time": T}'


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
        return replay_temporal(parse_temporal_spec(spec), lines, warn)
    check_kind(spec)
    parsed = parse_spec(spec)
    return _replay(parsed, parsed.build(), lines)


SPL_KINDS = ("tumbling", "sliding")


def check_kind(spec: object) -> None:
    """:class:`SpecError` naming every kind of window, SPL and temporal, when ``spec``'s kind is
    none of them (with the nearest one)."""
    kind = spec.get("kind") if isinstance(spec, Mapping) else None
    kinds = [*SPL_KINDS, *(k for k in TEMPORAL_KINDS if k not in SPL_KINDS)]
    if kind in kinds:
        return
    near = difflib.get_close_matches(str(kind), kinds, n=1)
    hint = f" (did you mean {near[0]!r}?)" if near else ""
    raise SpecError(
        f"kind: must be one of {', '.join(kinds)} (SPL: tumbling, sliding; temporal: the "
        f"others, and tumbling with a duration), got {kind!r}{hint}"
    )


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
