"""Helpers for the SPL window tests: tuples named by a number, compact event traces."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from trending.windows.spl import Record, WindowEvent, WindowLogic


def tup(v: int, **attributes: Any) -> dict[str, Any]:
    """A tuple whose identity is ``v`` (plus any other attributes)."""
    return {"v": v, **attributes}


def vals(tuples: Iterable[Record]) -> list[Any]:
    return [record["v"] for record in tuples]


def trace(events: Iterable[WindowEvent]) -> list[str]:
    """``"kind [v, ...]"`` per event, with the partition after the kind when there is one."""
    lines = []
    for event in events:
        where = "" if event.partition is None else f" {event.partition}"
        lines.append(f"{event.kind.value}{where} {vals(event.tuples)}")
    return lines


def insert_all(window: WindowLogic, values: Sequence[int]) -> list[WindowEvent]:
    events: list[WindowEvent] = []
    for v in values:
        events += window.insert(tup(v))
    return events


def chain(events: Iterable[WindowEvent], partition: object = None) -> str:
    """The seed's notation for one partition: newest first, ``*`` marks a triggered state.

    A state is drawn after every insertion and every flush; a ``trigger`` marks the state
    drawn last. Rebuilt from the events alone, so it checks that they tell the whole story.
    """
    content: list[Any] = []
    states = ["()"]
    for event in events:
        if event.partition != partition:
            continue
        kind = event.kind.value
        if kind == "after_insert":
            content.append(event.tuples[0]["v"])
        elif kind == "after_evict":
            content.remove(event.tuples[0]["v"])
        elif kind == "after_flush":
            content.clear()
        if kind in ("after_insert", "after_flush"):
            states.append("(" + ", ".join(str(v) for v in reversed(content)) + ")")
        if kind == "trigger":
            states[-1] = "*" + states[-1]
    return " -> ".join(states)
