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
    """Validate ``raw`` and build its :class:`TemporalQuery`; :class:`SpecError` if it is bad."""
    spec = _mapping(raw, "spec")
    kind = spec.get("kind")
    if kind not in _FIELDS:
        raise SpecError(f"kind: must be one of {', '.join(KINDS)}, got {kind!r}")
    if kind == "tumbling" and "evict" in spec:
        raise SpecError("evict: an SPL tumbling window; a temporal one has a duration, not both")
    unknown = sorted(set(spec) - _FIELDS[kind])
    if unknown:
        raise SpecError(f"spec: unknown field {unknown[0]!r} for a {kind} window")
    if kind == "alter":
        alteration = _alteration(spec, "")
        window: TemporalWindow = AlteredEvents()
    else:
        alteration = _alteration(_mapping(spec.get("alter", {}), "alter"), "alter.")
        window = _window(kind, spec)
    return TemporalQuery(window, alteration, _violation(spec.get("violation", "fail")))


def _window(kind: str, spec: Mapping[str, Any]) -> TemporalWindow:
    aggregate = _aggregate(_required(spec, "aggregate"))
    if kind == "snapshot":
        return SnapshotWindow(aggregate)
    if kind == "count":
        return CountWindow(_positive_int(_required(spec, "n"), "n"), aggregate)
    duration = _duration(_required(spec, "duration"), "duration")
    hop = _duration(_required(spec, "hop"), "hop") if kind == "hopping" else duration
    alignment = _time(spec.get("alignment", 0), "alignment")
    geometry = _checked(lambda: HoppingGeometry(duration, hop, alignment), "duration")
    snap = spec.get("snap", False)
    if not isinstance(snap, bool):
        raise SpecError(f"snap: must be true or false, got {snap!r}")
    if snap:
        return _checked(lambda: SnapshotWindow(aggregate, snap=geometry), "aggregate")
    return HoppingWindow(geometry, aggregate)


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
