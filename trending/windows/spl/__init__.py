"""The IBM Streams SPL windowing model as a pure core (no Spark, no Kafka).

Configure a window with frozen values, ``build()`` it, and feed it; every verb returns the
window events it fired, as values::

    window = SlidingWindow(evict=Count(4), trigger=Count(2)).build()
    events = window.insert({"v": 1}, partition="a")   # before_insert, after_insert, ...
    events = window.advance_to(8_000)                  # time-based events (ms clock)
    state = window.snapshot()                          # plain data; .build(state) resumes

Modules: :mod:`.policies` (count, delta, time, punct), :mod:`.tumbling`, :mod:`.sliding`,
:mod:`.partitioned` (partition eviction), :mod:`.events`, :mod:`.summarizers`,
:mod:`.state` (snapshots), :mod:`.spec` (JSON-able window specs), :mod:`.window` (shared).
"""

from trending.windows.spl import summarizers
from trending.windows.spl.events import EventKind, InputError, PartitionKey, Record, WindowEvent
from trending.windows.spl.partitioned import (
    PartitionAge,
    PartitionCount,
    PartitionEviction,
    PartitionInfo,
    Selector,
    TupleCount,
)
from trending.windows.spl.policies import Count, Delta, Policy, Punct, Time
from trending.windows.spl.sliding import SlidingLogic, SlidingWindow
from trending.windows.spl.spec import SpecError, WindowSpec, parse_spec
from trending.windows.spl.tumbling import TumblingLogic, TumblingWindow
from trending.windows.spl.window import Advance, Input, Insert, Punctuation, WindowLogic

__all__ = [
    "Advance",
    "Count",
    "Delta",
    "EventKind",
    "Input",
    "InputError",
    "Insert",
    "PartitionAge",
    "PartitionCount",
    "PartitionEviction",
    "PartitionInfo",
    "PartitionKey",
    "Policy",
    "Punct",
    "Punctuation",
    "Record",
    "Selector",
    "SlidingLogic",
    "SlidingWindow",
    "SpecError",
    "Time",
    "TumblingLogic",
    "TumblingWindow",
    "TupleCount",
    "WindowEvent",
    "WindowLogic",
    "WindowSpec",
    "parse_spec",
    "summarizers",
]
