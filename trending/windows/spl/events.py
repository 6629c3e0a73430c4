"""Window events as values: what an SPL window fires, returned instead of called back.

SPL delivers window events to registered ``WindowEvent`` handlers. Here every verb of a window
(``insert``, ``punct``, ``advance_to``) returns the list of :class:`WindowEvent` values it fired,
in the order SPL would have called the handlers, so one logic runs the same in a unit test, in
a plain loop and inside an engine's stateful operator.

Event kinds (SPL handler in brackets) and the tuples each one carries, oldest first:

==================  ==========================================  ===============================
kind                SPL handler                                 ``tuples``
==================  ==========================================  ===============================
before_insert       beforeTupleInsertionEvent                   the tuple being inserted
after_insert        afterTupleInsertionEvent                    the tuple just inserted
before_flush        beforeWindowFlushEvent (tumbling)           the window content to flush
after_flush         afterWindowFlushEvent (tumbling)            nothing: the window is now empty
empty_punct         onEmptyWindowPunctEvent (tumbling, punct)   nothing; partition is ``None``
before_evict        beforeTupleEvictionEvent (sliding)          the tuple being evicted
after_evict         afterTupleEvictionEvent (sliding)           the tuple just evicted
trigger             onWindowTriggerEvent (sliding)              the window content
initial_full        onWindowInitialFullEvent (sliding)          the window content
partition_select    onWindowPartitionEvictionSelection          the chosen partition's content
partition_evict     onWindowPartitionEviction                   the evicted partition's content
==================  ==========================================  ===============================

``partition_select`` is fired once per partition an operator-defined selector chose for
eviction (LRU selection is internal and fires none); then ``partition_evict`` once per chosen
partition, right before it is deleted. A tumbling window's trigger *is* its flush, so tumbling
windows fire no ``trigger``; ``before_flush`` carries the flushed content and the summaries,
``after_flush`` (fired once the window is flushed, so empty) the summaries only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from enum import Enum
from typing import Any, NamedTuple, TypeAlias

Record: TypeAlias = Mapping[str, Any]
"""A tuple in the window: a mapping from attribute names to values (JSON-able for snapshots)."""

PartitionKey: TypeAlias = str | int | float | bool | None
"""A partition's key; ``None`` is the single partition of a non-partitioned window."""


class InputError(ValueError):
    """An input the window cannot take (a tuple without a delta attribute, time going back).

    The window is left unchanged when it raises this.
    """


class EventKind(str, Enum):
    """The window events of the SPL windowing library, named as in the replay format."""

    BEFORE_INSERT = "before_insert"
    AFTER_INSERT = "after_insert"
    BEFORE_FLUSH = "before_flush"
    AFTER_FLUSH = "after_flush"
    EMPTY_PUNCT = "empty_punct"
    BEFORE_EVICT = "before_evict"
    AFTER_EVICT = "after_evict"
    TRIGGER = "trigger"
    INITIAL_FULL = "initial_full"
    PARTITION_SELECT = "partition_select"
    PARTITION_EVICT = "partition_evict"


class WindowEvent(NamedTuple):
    """One window event: its kind, partition, the tuples it concerns and when it fired.

    ``time_ms`` is the window clock at the event. ``summary`` holds the tumbling summarizers'
    results on ``before_flush``/``after_flush`` of a window that has summarizers, else ``None``.
    ``tuples`` is a read-only sequence; for window content (trigger, flush, ...) it is a view
    made in O(1), not a copy of the window, that keeps the content of the moment it fired.
    An immutable named tuple, because windows make millions of them.
    """

    kind: EventKind
    partition: PartitionKey
    tuples: Sequence[Record] = ()
    time_ms: int = 0
    summary: Mapping[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        """The replay form: ``{"event", "partition", "tuples"}`` plus ``"summary"`` if any."""
        data: dict[str, Any] = {
            "event": self.kind.value,
            "partition": self.partition,
            "tuples": [dict(record) for record in self.tuples],
        }
        if self.summary is not None:
            data["summary"] = dict(self.summary)
        return data
