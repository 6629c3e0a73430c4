"""Many keys' state under one grouping key: the state layout of the Python window steps.

In ``transformWithStateInPandas`` each state call is a round trip from the Python worker to the
executor's JVM (about a millisecond on a busy 2-core machine) and each grouping key costs Spark
a few milliseconds more, so a step with one grouping key per window key spends most of a
micro-batch there, not in the window logic. The SPL and temporal steps therefore hash their
keys into a fixed number of *buckets* (:func:`with_bucket`: ``pmod(xxhash64(key), buckets)``,
computed by Spark) and group by the bucket. A bucket's state is one ``ListState`` of
``(key, state)`` text rows (:class:`BucketState`), read with one call and written back with one
call when a micro-batch touches the bucket, whatever the number of its keys; a key's own state
is whatever its step stores (JSON text).

The number of buckets (by default two per shuffle partition) is part of the checkpoint: each
bucket's first row records it, and a query restarted with another number is refused
(:class:`BucketsChanged`) rather than splitting a key's state in two. Keys go into the rows as
text (:class:`KeyCodec`), normalized by the key column's Spark type first, so that a key reads
the same whether or not pandas had to widen its column in a batch (an integer column with a
null arrives as floats). The header also records the layout of the rows (:data:`LAYOUT`), so
that a version of this package that stores them otherwise refuses the checkpoint by name
(:class:`LayoutChanged`) instead of misreading it.
"""

from __future__ import annotations

import base64
import json
import math
import pickle
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from pyspark.sql.types import (
    BooleanType,
    DataType,
    FractionalType,
    IntegralType,
    StringType,
    StructField,
    StructType,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming.stateful_processor import StatefulProcessorHandle

BUCKET_COLUMN = "trending_bucket"
PER_PARTITION = 2
"""Buckets per shuffle partition unless given (:func:`default_buckets`): a task handles about
two grouping keys, whatever the number of keys, so a micro-batch pays Spark's per-group cost
(tens of milliseconds with the state calls) a few times per task, not once per key."""
ROW_SCHEMA = StructType(
    [StructField("key", StringType(), False), StructField("state", StringType(), False)]
)
HEADER = ""  # the key text of a bucket's header row (no key's text is empty)
LAYOUT = 1
"""The layout of the rows this version writes (a header without one was written in layout 1)."""


class BucketsChanged(RuntimeError):
    """A checkpoint written with another number of buckets."""


class LayoutChanged(RuntimeError):
    """A checkpoint whose state another version of the package wrote in another layout."""


def default_buckets(spark: SparkSession) -> int:
    """:data:`PER_PARTITION` buckets per shuffle partition of ``spark``."""
    return PER_PARTITION * int(spark.conf.get("spark.sql.shuffle.partitions") or 1)


def with_bucket(df: DataFrame, key: str, buckets: int) -> DataFrame:
    """``df`` with :data:`BUCKET_COLUMN`, the bucket of its ``key`` column."""
    from pyspark.sql import functions as F

    if buckets < 1:
        raise ValueError(f"buckets must be at least 1, got {buckets}")
    return df.withColumn(BUCKET_COLUMN, F.pmod(F.xxhash64(F.col(key)), F.lit(buckets)))


class KeyCodec:
    """A key's value as the text of its state row and back, by the key column's type."""

    def __init__(self, kind: DataType) -> None:
        self.kind = kind

    def normal(self, value: Any) -> Any:
        """The value as Python has it whatever pandas made of it (None for null and NaN)."""
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return None
        if isinstance(self.kind, BooleanType):
            return bool(value)
        if isinstance(self.kind, IntegralType):
            return int(value)
        if isinstance(self.kind, FractionalType) and not hasattr(value, "as_tuple"):
            return float(value)
        if isinstance(self.kind, StringType):
            return str(value)
        try:
            is_na = bool(value != value)  # noqa: PLR0124 (NaT and other missing values)
        except (TypeError, ValueError):
            is_na = False
        return None if is_na else value

    def text(self, value: Any) -> str:
        """The row text of a :meth:`normal` value."""
        if value is None or isinstance(value, bool | int | float | str):
            return "j" + json.dumps(value)
        return "p" + base64.b64encode(pickle.dumps(value, protocol=4)).decode("ascii")

    def value(self, text: str) -> Any:
        if text.startswith("j"):
            return json.loads(text[1:])
        return pickle.loads(base64.b64decode(text[1:]))


class BucketState:
    """One bucket's keys' states: ``{key text: state text}`` (see the module doc)."""

    def __init__(self, handle: StatefulProcessorHandle, name: str, buckets: int) -> None:
        self.rows = handle.getListState(name, ROW_SCHEMA)
        self.buckets = buckets
        self.header: dict[str, Any] = {"buckets": buckets, "layout": LAYOUT}

    def load(self) -> dict[str, str]:
        """The keys' states, and the header's other fields in :attr:`header` (one call)."""
        self.header = {"buckets": self.buckets, "layout": LAYOUT}
        if not self.rows.exists():
            return {}
        entries = {str(key): str(state) for key, state in self.rows.get()}
        header = json.loads(entries.pop(HEADER, "{}"))
        layout = header.get("layout", 1)
        if layout != LAYOUT:
            raise LayoutChanged(
                f"this checkpoint's state is in layout {layout} of the trending package, and "
                f"this version reads layout {LAYOUT}: run the version that wrote it, or start "
                "on a new checkpoint"
            )
        written = header.get("buckets")
        if written is not None and written != self.buckets:
            raise BucketsChanged(
                f"this checkpoint's state is in {written} buckets, not {self.buckets}: "
                f"give buckets={written} (or start on a new checkpoint)"
            )
        self.header |= header
        self.header |= {"buckets": self.buckets, "layout": LAYOUT}
        return entries

    def save(self, entries: dict[str, str], keep_header: bool = False) -> None:
        """Write ``entries`` back (one call), or clear the bucket when nothing is left."""
        if not entries and not keep_header:
            self.rows.clear()
            return
        header = (HEADER, json.dumps(self.header, separators=(",", ":")))
        self.rows.put([header, *entries.items()])


def timers_to(handle: StatefulProcessorHandle, wanted: Iterable[int], fired: int | None) -> None:
    """Make the grouping key's timers ``wanted``: delete the others (except ``fired``, which
    Spark has removed), register the missing ones."""
    wanted = set(wanted)
    have: set[int] = set()
    for timer in list(handle.listTimers()):
        if timer in wanted:
            have.add(timer)
        elif timer != fired:
            handle.deleteTimer(timer)
    for timer in sorted(wanted - have):
        handle.registerTimer(timer)
