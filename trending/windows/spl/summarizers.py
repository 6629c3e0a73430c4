"""Tumbling window summarizers: incremental aggregates per open window.

SPL's ``TumblingWindowSummarizer`` looks at each tuple once, so a tumbling window need not keep
its tuples (``TumblingWindow(keep_tuples=False)``). Here a summarizer is a stateless value with
three functions over a plain, JSON-able state, so summaries go into window snapshots:

* ``initial()`` when a window opens (its first tuple arrives: after ``before_insert``),
* ``add(state, tuple)`` for every tuple (before ``after_insert``),
* ``result(state)`` when the window closes (before ``before_flush``); the results ride on the
  ``before_flush``/``after_flush`` events as ``summary``.

Built-ins: :class:`Count`, :class:`Sum`, :class:`Min`, :class:`Max`, :class:`Mean`,
:class:`TopK`; :class:`Custom` wraps user functions (whose state should be plain data).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from trending.windows.spl.events import InputError, Record


class Summarizer(Protocol):
    """An incremental aggregate over the tuples of one tumbling window."""

    def initial(self) -> Any:
        """The state of a window that has just opened."""
        ...

    def add(self, state: Any, record: Record) -> Any:
        """The state after ``record`` joined the window (do not mutate ``state``)."""
        ...

    def result(self, state: Any) -> Any:
        """The summary of a closing window."""
        ...


@dataclass(frozen=True)
class Count:
    """The number of tuples in the window: ``|W|``."""

    def initial(self) -> int:
        return 0

    def add(self, state: int, record: Record) -> int:
        return state + 1

    def result(self, state: int) -> int:
        return state


@dataclass(frozen=True)
class Sum:
    """``sum(a(t) for t in W)`` of a numeric attribute."""

    attribute: str

    def initial(self) -> float:
        return 0

    def add(self, state: float, record: Record) -> float:
        return state + _number(record, self.attribute)

    def result(self, state: float) -> float:
        return state


@dataclass(frozen=True)
class Min:
    """``min(a(t) for t in W)``."""

    attribute: str

    def initial(self) -> float | None:
        return None

    def add(self, state: float | None, record: Record) -> float:
        value = _number(record, self.attribute)
        return value if state is None else min(state, value)

    def result(self, state: float | None) -> float | None:
        return state


@dataclass(frozen=True)
class Max:
    """``max(a(t) for t in W)``."""

    attribute: str

    def initial(self) -> float | None:
        return None

    def add(self, state: float | None, record: Record) -> float:
        value = _number(record, self.attribute)
        return value if state is None else max(state, value)

    def result(self, state: float | None) -> float | None:
        return state


@dataclass(frozen=True)
class Mean:
    """``sum(a(t)) / |W|``; the state is ``[count, sum]``."""

    attribute: str

    def initial(self) -> list[float]:
        return [0, 0]

    def add(self, state: list[float], record: Record) -> list[float]:
        return [state[0] + 1, state[1] + _number(record, self.attribute)]

    def result(self, state: list[float]) -> float | None:
        return state[1] / state[0] if state[0] else None


@dataclass(frozen=True)
class TopK:
    """The ``k`` largest values of an attribute in the window, largest first.

    The state is the ascending list of at most ``k`` values seen so far.
    """

    attribute: str
    k: int

    def __post_init__(self) -> None:
        if isinstance(self.k, bool) or not isinstance(self.k, int) or self.k < 1:
            raise ValueError(f"top-k needs a positive integer k, got {self.k!r}")

    def initial(self) -> list[float]:
        return []

    def add(self, state: list[float], record: Record) -> list[float]:
        values = list(state)
        bisect.insort(values, _number(record, self.attribute))
        return values[-self.k :]

    def result(self, state: list[float]) -> list[float]:
        return state[::-1]


@dataclass(frozen=True)
class Custom:
    """A user-defined summarizer from three functions."""

    initial_fn: Callable[[], Any]
    add_fn: Callable[[Any, Record], Any]
    result_fn: Callable[[Any], Any]

    def initial(self) -> Any:
        return self.initial_fn()

    def add(self, state: Any, record: Record) -> Any:
        return self.add_fn(state, record)

    def result(self, state: Any) -> Any:
        return self.result_fn(state)


def check_numbers(summarizers: Mapping[str, Summarizer], record: Record) -> None:
    """Raise :class:`InputError` before a tuple goes in if a built-in cannot summarize it."""
    for summarizer in summarizers.values():
        if isinstance(summarizer, Sum | Min | Max | Mean | TopK):
            _number(record, summarizer.attribute)


def _number(record: Record, attribute: str) -> float:
    value = record.get(attribute)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InputError(f"summarized attribute {attribute!r} must be a number, got {value!r}")
    return value
