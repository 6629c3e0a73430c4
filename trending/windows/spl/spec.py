"""Window specs: JSON-able dicts that describe an SPL window, parsed and validated.

Form (times in seconds, as SPL writes them)::

    {"kind": "tumbling" | "sliding",
     "evict": POLICY,                      # required
     "trigger": POLICY,                    # sliding only; default {"count": 1}
     "partition_by": "attribute",          # optional: partition key = tuple[attribute]
     "partition_eviction": {"age": S} | {"count": C} | {"tuples": T},
                                           # C, T >= 0; + optional "select": "lru" (default)
                                           #   | "operator"
     "summaries": {NAME: SUMMARY, ...},    # tumbling only
     "keep_tuples": true,                  # tumbling only; false keeps counts and summaries
     "empty_window_events": true}          # false: a time trigger/flush skips empty windows

    POLICY  = {"count": N} | {"delta": {"attribute": A, "size": S}} | {"time": SECONDS}
              (SECONDS: a number, or a duration such as "500ms", "30s", "10 seconds")
              | "punct" | {"punct": true}
    SUMMARY = "count" | {"sum": A} | {"min": A} | {"max": A} | {"mean": A}
              | {"top_k": {"attribute": A, "k": K}}

A bad spec raises :class:`SpecError` whose message starts with the field's path, e.g.
``evict.count: must be a positive integer, got 0``. ``"select": "operator"`` needs the
selector function passed to :func:`parse_spec` (selectors are code, not data).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from trending.durations import parse_duration_ms
from trending.windows.spl import summarizers as summ
from trending.windows.spl.events import InputError, PartitionKey, Record
from trending.windows.spl.partitioned import (
    PartitionAge,
    PartitionCount,
    PartitionEviction,
    PartitionLimit,
    Selector,
    TupleCount,
)
from trending.windows.spl.policies import Count, Delta, Policy, Punct, Time, seconds_to_ms
from trending.windows.spl.sliding import SlidingWindow
from trending.windows.spl.summarizers import Summarizer
from trending.windows.spl.tumbling import TumblingWindow
from trending.windows.spl.window import WindowLogic

_FIELDS = {
    "tumbling": {
        "kind",
        "evict",
        "partition_by",
        "partition_eviction",
        "summaries",
        "keep_tuples",
        "empty_window_events",
    },
    "sliding": {
        "kind",
        "evict",
        "trigger",
        "partition_by",
        "partition_eviction",
        "empty_window_events",
    },
}
_ATTRIBUTE_SUMMARIES: dict[str, Callable[[str], Summarizer]] = {
    "sum": summ.Sum,
    "min": summ.Min,
    "max": summ.Max,
    "mean": summ.Mean,
}


class SpecError(ValueError):
    """A window spec that cannot be used; the message names the offending field, or each of
    several (``problems``, joined by ``; ``)."""

    def __init__(self, message: str, problems: list[str] | None = None) -> None:
        super().__init__(message)
        self.problems = problems if problems is not None else [message]

    @classmethod
    def of(cls, problems: list[str]) -> SpecError:
        """One error for all of ``problems``."""
        return cls("; ".join(problems), problems)


@dataclass(frozen=True)
class WindowSpec:
    """A parsed spec: the window configuration and the partitioning attribute."""

    window: TumblingWindow | SlidingWindow
    partition_by: str | None = None

    def build(self, snapshot: Mapping[str, Any] | None = None) -> WindowLogic:
        """A running window (continuing from ``snapshot`` if given)."""
        return self.window.build(snapshot)

    def partition_of(self, record: Record) -> PartitionKey:
        """The partition key of ``record``: ``None`` unless the spec has ``partition_by``."""
        if self.partition_by is None:
            return None
        if self.partition_by not in record:
            raise InputError(f"tuple has no partition attribute {self.partition_by!r}")
        key = record[self.partition_by]
        if not isinstance(key, str | int | float | bool) and key is not None:
            raise InputError(f"partition attribute {self.partition_by!r} must be a scalar")
        return key

    def to_jvm_json(self) -> str:
        """The spec in the normal form the JVM core reads (``trending.spl.SpecJson``).

        Canonical JSON (sorted keys, no spaces): every field explicit and defaults filled,
        times in integer milliseconds, summaries a list in their order::

            {"version": 1, "kind": "tumbling" | "sliding", "partition_by": A | null,
             "evict": P, "trigger": P | null, "partition_eviction": null
                | {"limit": "age" | "count" | "tuples", "value": N, "select": "lru" | "operator"},
             "summaries": [{"name": S, "summary": "count" | "sum" | "min" | "max" | "mean"
                            | "top_k", "attribute": A | null, "k": K | null}, ...],
             "keep_tuples": B, "empty_window_events": B}
            P = {"policy": "count", "size": N} | {"policy": "delta", "attribute": A, "size": X}
                | {"policy": "time", "period_ms": N} | {"policy": "punct"}

        A sliding window's ``summaries`` is empty and its ``keep_tuples`` true; a tumbling
        window's ``trigger`` is null. An operator-defined selector is written as
        ``"operator"`` (the JVM core refuses it: selectors are Python code); a
        :class:`~trending.windows.spl.summarizers.Custom` summarizer raises ``ValueError``.
        """
        window = self.window
        data: dict[str, Any] = {
            "version": 1,
            "partition_by": self.partition_by,
            "evict": _policy_json(window.evict),
            "partition_eviction": _eviction_json(window.partition_eviction),
            "empty_window_events": window.empty_window_events,
        }
        if isinstance(window, SlidingWindow):
            trigger = _policy_json(window.trigger)
            data |= {"kind": "sliding", "trigger": trigger, "summaries": [], "keep_tuples": True}
        else:
            summaries = [_summary_json(name, s) for name, s in window.summarizers.items()]
            data |= {"kind": "tumbling", "trigger": None, "summaries": summaries}
            data["keep_tuples"] = window.keep_tuples
        return json.dumps(data, sort_keys=True, separators=(",", ":"), allow_nan=False)


def parse_spec(raw: object, selector: Selector | None = None) -> WindowSpec:
    """Validate ``raw`` and build its :class:`WindowSpec`; :class:`SpecError` if it is bad."""
    spec = _mapping(raw, "spec")
    kind = spec.get("kind")
    if not isinstance(kind, str) or kind not in _FIELDS:
        raise SpecError(f"kind: must be 'tumbling' or 'sliding', got {kind!r}")
    problems: list[str] = []
    failed = object()

    def checked(build: Callable[[], Any]) -> Any:
        try:
            return build()
        except SpecError as error:
            problems.extend(error.problems)
            return failed

    checked(lambda: _no_unknown(spec, _FIELDS[kind], "spec", f"a {kind} window"))
    partition_by = checked(lambda: _partition_by(spec.get("partition_by")))
    eviction = None
    if partition_by is not failed:
        eviction = checked(
            lambda: _partition_eviction(spec.get("partition_eviction"), partition_by, selector)
        )
    evict = checked(lambda: _policy(_required(spec, "evict"), "evict"))
    empty = checked(lambda: _flag(spec, "empty_window_events"))
    sliding = kind == "sliding"  # the fields of the other kind are unknown fields above
    trigger = checked(
        lambda: _policy(spec.get("trigger", {"count": 1}), "trigger") if sliding else None
    )
    keep = checked(lambda: None if sliding else _flag(spec, "keep_tuples"))
    summaries = checked(lambda: None if sliding else _summaries(spec.get("summaries", {})))
    if problems:
        raise SpecError.of(problems)
    if sliding:
        window: TumblingWindow | SlidingWindow = _sliding(evict, trigger, eviction, empty)
    else:
        window = TumblingWindow(evict, eviction, summaries, keep, empty)
    return WindowSpec(window, partition_by)


def _policy_json(policy: Policy) -> dict[str, Any]:
    if isinstance(policy, Count):
        return {"policy": "count", "size": policy.size}
    if isinstance(policy, Delta):
        return {"policy": "delta", "attribute": policy.attribute, "size": policy.size}
    if isinstance(policy, Time):
        return {"policy": "time", "period_ms": policy.period_ms}
    return {"policy": "punct"}


def _eviction_json(eviction: PartitionEviction | None) -> dict[str, Any] | None:
    if eviction is None:
        return None
    limit = eviction.limit
    if isinstance(limit, PartitionAge):
        name, value = "age", limit.age_ms
    elif isinstance(limit, PartitionCount):
        name, value = "count", limit.count
    else:
        name, value = "tuples", limit.tuples
    select = "lru" if eviction.selector is None else "operator"
    return {"limit": name, "value": value, "select": select}


def _summary_json(name: str, summarizer: Summarizer) -> dict[str, Any]:
    if isinstance(summarizer, summ.Count):
        kind, attribute, k = "count", None, None
    elif isinstance(summarizer, summ.TopK):
        kind, attribute, k = "top_k", summarizer.attribute, summarizer.k
    elif isinstance(summarizer, summ.Sum | summ.Min | summ.Max | summ.Mean):
        kind, attribute, k = type(summarizer).__name__.lower(), summarizer.attribute, None
    else:
        raise ValueError(f"summaries.{name}: a custom summarizer has no JVM form")
    return {"name": name, "summary": kind, "attribute": attribute, "k": k}


def _sliding(
    evict: Policy, trigger: Policy, eviction: PartitionEviction | None, empty: bool
) -> SlidingWindow:
    for path, policy in (("evict", evict), ("trigger", trigger)):
        if isinstance(policy, Punct):
            raise SpecError(
                f"{path}: a sliding window cannot evict or trigger on punctuation "
                "(only tumbling windows can)"
            )
    return SlidingWindow(evict, trigger, eviction, empty)


def _flag(spec: Mapping[str, Any], name: str) -> bool:
    """A true/false field, true by default."""
    value = spec.get(name, True)
    if not isinstance(value, bool):
        raise SpecError(f"{name}: must be true or false, got {value!r}")
    return value


def _policy(raw: object, path: str) -> Policy:
    if raw == "punct":
        return Punct()
    body = _mapping(raw, path)
    if len(body) != 1:
        raise SpecError(f"{path}: give exactly one of count, delta, time, punct; got {raw!r}")
    ((name, value),) = body.items()
    here = f"{path}.{name}"
    if name == "count":
        return Count(_positive_int(value, here))
    if name == "delta":
        return _delta(value, here)
    if name == "time":
        return Time(_positive_ms(value, here))
    if name == "punct" and value in (True, {}):
        return Punct()
    raise SpecError(f"{path}: unknown policy {name!r} (use count, delta, time or punct)")


def _delta(raw: object, path: str) -> Delta:
    body = _mapping(raw, path)
    _no_unknown(body, {"attribute", "size"}, path, "a delta policy")
    attribute, size = _required(body, "attribute", path), _required(body, "size", path)
    if not isinstance(attribute, str) or not attribute:
        raise SpecError(f"{path}.attribute: must be a non-empty string, got {attribute!r}")
    if isinstance(size, bool) or not isinstance(size, int | float) or not 0 <= size < 1e300:
        raise SpecError(f"{path}.size: must be a number >= 0, got {size!r}")
    return Delta(attribute, size)


def _partition_by(raw: object) -> str | None:
    if raw is None:
        return None
    if not isinstance(raw, str) or not raw:
        raise SpecError(f"partition_by: must be an attribute name, got {raw!r}")
    return raw


def _partition_eviction(
    raw: object, partition_by: str | None, selector: Selector | None
) -> PartitionEviction | None:
    if raw is None:
        return None
    path = "partition_eviction"
    if partition_by is None:
        raise SpecError(f"{path}: needs partition_by (only partitioned windows evict partitions)")
    body = _mapping(raw, path)
    _no_unknown(body, {"age", "count", "tuples", "select"}, path, "partition eviction")
    limits = [name for name in ("age", "count", "tuples") if name in body]
    if len(limits) != 1:
        raise SpecError(f"{path}: give exactly one of age, count, tuples; got {sorted(body)}")
    limit = _limit(limits[0], body[limits[0]], f"{path}.{limits[0]}")
    return PartitionEviction(limit, _selection(body.get("select", "lru"), selector))


def _limit(name: str, value: object, path: str) -> PartitionLimit:
    if name == "age":
        return PartitionAge(_positive_ms(value, path))
    if name == "count":
        return PartitionCount(_natural_int(value, path))
    return TupleCount(_natural_int(value, path))


def _selection(raw: object, selector: Selector | None) -> Selector | None:
    path = "partition_eviction.select"
    if isinstance(raw, str) and raw.lower() == "lru":
        return None
    if raw == "operator":
        if selector is None:
            raise SpecError(f"{path}: 'operator' needs a selector function passed in code")
        return selector
    raise SpecError(f"{path}: must be 'lru' or 'operator', got {raw!r}")


def _summaries(raw: object) -> dict[str, Summarizer]:
    body = _mapping(raw, "summaries")
    return {str(name): _summary(value, f"summaries.{name}") for name, value in body.items()}


def _summary(raw: object, path: str) -> Summarizer:
    if raw == "count":
        return summ.Count()
    body = _mapping(raw, path)
    if len(body) != 1:
        raise SpecError(f"{path}: give one of count, sum, min, max, mean, top_k; got {raw!r}")
    ((name, value),) = body.items()
    if name in _ATTRIBUTE_SUMMARIES:
        return _ATTRIBUTE_SUMMARIES[name](_attribute(value, f"{path}.{name}"))
    if name == "top_k":
        top = _mapping(value, f"{path}.top_k")
        _no_unknown(top, {"attribute", "k"}, f"{path}.top_k", "top_k")
        attribute = _attribute(_required(top, "attribute", f"{path}.top_k"), f"{path}.top_k")
        k = _positive_int(_required(top, "k", f"{path}.top_k"), f"{path}.top_k.k")
        return summ.TopK(attribute, k)
    raise SpecError(f"{path}: unknown summary {name!r} (count, sum, min, max, mean, top_k)")


def _attribute(raw: object, path: str) -> str:
    if not isinstance(raw, str) or not raw:
        raise SpecError(f"{path}: must be an attribute name, got {raw!r}")
    return raw


def _mapping(raw: object, path: str) -> Mapping[str, Any]:
    if not isinstance(raw, Mapping):
        raise SpecError(f"{path}: must be an object, got {raw!r}")
    return raw


def _required(body: Mapping[str, Any], name: str, path: str = "") -> Any:
    if name not in body:
        raise SpecError(f"{path + '.' if path else ''}{name}: missing")
    return body[name]


def _no_unknown(body: Mapping[str, Any], known: set[str], path: str, what: str) -> None:
    unknown = sorted(str(name) for name in body if name not in known)
    if unknown:
        raise SpecError(f"{path}: unknown field(s) {unknown} for {what}; known: {sorted(known)}")


def _positive_int(raw: object, path: str) -> int:
    if isinstance(raw, bool) or not isinstance(raw, int) or raw < 1:
        raise SpecError(f"{path}: must be a positive integer, got {raw!r}")
    return raw


def _natural_int(raw: object, path: str) -> int:
    if isinstance(raw, bool) or not isinstance(raw, int) or raw < 0:
        raise SpecError(f"{path}: must be an integer >= 0, got {raw!r}")
    return raw


def _positive_ms(raw: object, path: str) -> int:
    """Seconds (a number) or a duration (``"500ms"``, ``"30s"``, ``"10 seconds"``) ->
    milliseconds, at least 1 ms and a whole number of ms."""
    try:
        if isinstance(raw, str):
            millis, unit = parse_duration_ms(raw), ""
        elif isinstance(raw, int | float) and not isinstance(raw, bool) and 0 < raw < 1e12:
            millis, unit = seconds_to_ms(raw), " s"
        else:
            millis, unit = -1, ""
    except ValueError as error:
        raise SpecError(f"{path}: {error}") from None
    if millis < 0:
        raise SpecError(f"{path}: must be a positive number of seconds or a duration, got {raw!r}")
    if millis < 1:
        raise SpecError(f"{path}: must be at least 1 ms, got {raw!r}{unit}")
    return millis
