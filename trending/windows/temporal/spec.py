"""Temporal window specs: JSON-able dicts describing a temporal query, parsed and validated.

Forms (durations are strings such as ``"500ms"``, ``"5s"``, ``"1h"``; times are ISO-8601 or
epoch milliseconds)::

    {"kind": "hopping", "duration": D, "hop": D, "alignment": T, "aggregate": A, "snap": bool}
    {"kind": "tumbling", "duration": D, "alignment": T, "aggregate": A, "snap": bool}
    {"kind": "snapshot", "aggregate": A}
    {"kind": "count", "n": N, "aggregate": A}
    {"kind": "alter", "shift": D, "duration": D, "extend": D, "clip": D}

    A = "count" | "sum" | "min" | "max" | "average" | "time_weighted_average" | {"top_k": K}

Every form also takes ``"violation": "fail" | "drop" | "adjust"`` (default ``fail``) and the
window forms an ``"alter": {...}`` (the alter fields) applied before the window. ``alignment``
defaults to the epoch, ``snap`` (HoppingWindow2) to false; ``shift`` and ``extend`` may be
negative (``"-1s"``). A temporal tumbling spec has a ``duration``; an SPL tumbling spec has an
``evict`` instead (:func:`is_temporal_spec`). A bad spec raises
:class:`~trending.windows.spl.spec.SpecError` naming the field, e.g. ``hop: ...``.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from trending.durations import parse_duration_ms
from trending.windows.spl.spec import SpecError
from trending.windows.temporal.aggregates import NAMES, Aggregate
from trending.windows.temporal.altered import AlteredEvents
from trending.windows.temporal.count import CountWindow
from trending.windows.temporal.geometry import HoppingGeometry
from trending.windows.temporal.hopping import HoppingWindow
from trending.windows.temporal.lifetime import Alteration, ViolationPolicy
from trending.windows.temporal.query import TemporalQuery, TemporalWindow
from trending.windows.temporal.snapshot import SnapshotWindow
from trending.windows.temporal.timeline import parse_time_ms

_ALTER_FIELDS = {"shift", "duration", "extend", "clip"}
_COMMON = {"kind", "violation", "alter", "aggregate"}
_FIELDS = {
    "hopping": _COMMON | {"duration", "hop", "alignment", "snap"},
    "tumbling": _COMMON | {"duration", "alignment", "snap"},
    "snapshot": _COMMON,
    "count": _COMMON | {"n"},
    "alter": {"kind", "violation"} | _ALTER_FIELDS,
}
KINDS = tuple(_FIELDS)
T = TypeVar("T")


def is_temporal_spec(raw: object) -> bool:
    """Whether ``raw`` asks for a temporal window (else it is left to the SPL specs)."""
    if not isinstance(raw, Mapping):
        return False
    kind = raw.get("kind")
    return kind in _FIELDS and (kind != "tumbling" or "duration" in raw)


def parse_temporal_spec(raw: object) -> TemporalQuery:
    """Validate ``raw`` and build its :class:`TemporalQuery`; :class:`SpecError` if it is bad,
    naming every problem found (``; ``-separated), not only the first."""
    spec = _mapping(raw, "spec")
    kind = spec.get("kind")
    if kind not in _FIELDS:
        near = difflib.get_close_matches(str(kind), KINDS, n=1)
        hint = f" (did you mean {near[0]!r}?)" if near else ""
        raise SpecError(f"kind: must be one of {', '.join(KINDS)}, got {kind!r}{hint}")
    problems: list[str] = []

    def checked(build: Callable[[], T]) -> T | None:
        try:
            return build()
        except SpecError as error:
            problems.append(str(error))
            return None

    if kind == "tumbling" and "evict" in spec:
        problems.append("evict: an SPL tumbling window; a temporal one has a duration, not both")
    for name in sorted(set(spec) - _FIELDS[kind] - {"evict"}):
        near = difflib.get_close_matches(name, sorted(_FIELDS[kind]), n=1)
        hint = f" (did you mean {near[0]!r}?)" if near else ""
        problems.append(f"spec: unknown field {name!r} for a {kind} window{hint}")
    window: TemporalWindow | None
    if kind == "alter":
        alteration = checked(lambda: _alteration(spec, ""))
        window = AlteredEvents()
    else:
        alteration = checked(
            lambda: _alteration(_mapping(spec.get("alter", {}), "alter"), "alter.")
        )
        window = _window(kind, spec, checked)
    violation = checked(lambda: _violation(spec.get("violation", "fail")))
    if problems:
        raise SpecError.of(problems)
    assert window is not None and alteration is not None and violation is not None
    return TemporalQuery(window, alteration, violation)


def _window(
    kind: str, spec: Mapping[str, Any], checked: Callable[[Callable[[], Any]], Any]
) -> TemporalWindow | None:
    """The window of ``spec``, each field's problem noted through ``checked`` (None then)."""
    aggregate = checked(lambda: _aggregate(_required(spec, "aggregate")))
    if kind == "snapshot":
        return None if aggregate is None else SnapshotWindow(aggregate)
    if kind == "count":
        n = checked(lambda: _positive_int(_required(spec, "n"), "n"))
        return None if aggregate is None or n is None else CountWindow(n, aggregate)
    duration = checked(lambda: _duration(_required(spec, "duration"), "duration"))
    hop = duration
    if kind == "hopping":
        hop = checked(lambda: _duration(_required(spec, "hop"), "hop"))
    alignment = checked(lambda: _time(spec.get("alignment", 0), "alignment"))
    snap = spec.get("snap", False)
    if not isinstance(snap, bool):
        checked(lambda: _fail(f"snap: must be true or false, got {snap!r}"))
        return None
    if aggregate is None or duration is None or hop is None or alignment is None:
        return None
    geometry: HoppingGeometry | None = checked(
        lambda: _checked(lambda: HoppingGeometry(duration, hop, alignment), "duration")
    )
    if geometry is None:
        return None
    if snap:
        snapped: SnapshotWindow | None = checked(
            lambda: _checked(lambda: SnapshotWindow(aggregate, snap=geometry), "aggregate")
        )
        return snapped
    return HoppingWindow(geometry, aggregate)


def _fail(message: str) -> None:
    raise SpecError(message)


def _alteration(spec: Mapping[str, Any], path: str) -> Alteration:
    unknown = sorted(set(spec) - _ALTER_FIELDS - {"kind", "violation"})
    if unknown:
        raise SpecError(f"{path}{unknown[0]}: unknown alter field")
    fields = {name: _signed(spec[name], path + name) for name in _ALTER_FIELDS if name in spec}
    return _checked(lambda: Alteration(**fields), path + "duration")


def _aggregate(raw: object) -> Aggregate:
    if isinstance(raw, Mapping) and set(raw) == {"top_k"}:
        return Aggregate("top_k", _positive_int(raw["top_k"], "aggregate.top_k"))
    if raw == "top_k" or not isinstance(raw, str) or raw not in NAMES:
        choices = ", ".join(name for name in NAMES if name != "top_k")
        raise SpecError(f'aggregate: must be one of {choices} or {{"top_k": K}}, got {raw!r}')
    return Aggregate(raw)


def _violation(raw: object) -> ViolationPolicy:
    try:
        return ViolationPolicy(raw)
    except ValueError:
        raise SpecError(f"violation: must be fail, drop or adjust, got {raw!r}") from None


def _duration(raw: object, path: str) -> int:
    value = _signed(raw, path)
    if value <= 0:
        raise SpecError(f"{path}: must be a positive duration, got {raw!r}")
    return value


def _signed(raw: object, path: str) -> int:
    if not isinstance(raw, str):
        raise SpecError(f'{path}: must be a duration string such as "5s", got {raw!r}')
    text = raw.strip()
    sign = -1 if text.startswith("-") else 1
    try:
        return sign * parse_duration_ms(text.lstrip("+-"))
    except ValueError as error:
        raise SpecError(f"{path}: {error}") from error


def _time(raw: object, path: str) -> int:
    try:
        return parse_time_ms(raw)
    except ValueError as error:
        raise SpecError(f"{path}: {error}") from error


def _positive_int(raw: object, path: str) -> int:
    if isinstance(raw, bool) or not isinstance(raw, int) or raw < 1:
        raise SpecError(f"{path}: must be a positive integer, got {raw!r}")
    return raw


def _required(spec: Mapping[str, Any], name: str) -> Any:
    if name not in spec:
        raise SpecError(f"{name}: required for a {spec.get('kind')} window")
    return spec[name]


def _mapping(raw: object, path: str) -> Mapping[str, Any]:
    if not isinstance(raw, Mapping):
        raise SpecError(f"{path}: must be a mapping, got {type(raw).__name__}")
    return raw


def _checked(build: Callable[[], T], path: str) -> T:
    """``build()``, its ``ValueError`` reported as a spec error at ``path``."""
    try:
        return build()
    except ValueError as error:
        raise SpecError(f"{path}: {error}") from error
