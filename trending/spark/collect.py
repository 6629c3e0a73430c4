"""Bringing a batch's output to the driver a part at a time, so that the driver's memory is bounded
by a number of bytes, not by the batch.

A job publishes a micro-batch from the driver, in one Kafka transaction: every result, late
event and dead letter passes through it. :func:`in_parts` fetches a cached DataFrame whole when
it is small (one Arrow collect, the common case), else in parts of about ``part_bytes`` each,
one Spark job per part, so that a batch of huge dead letters or a query matching millions of
readings never sits on the driver at once.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from pyspark.sql import functions as F

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

ROW_OVERHEAD = 64  # bytes a row costs beyond its binary and string columns, roughly


def row_bytes(frame: DataFrame) -> Column:
    """About how many bytes a row of ``frame`` takes: its binary and string columns, and a few
    dozen bytes for the rest."""
    sized = [
        F.coalesce(F.octet_length(F.col(f.name)), F.lit(0))
        for f in frame.schema.fields
        if f.dataType.typeName() in ("binary", "string")
    ]
    total = F.lit(ROW_OVERHEAD)
    for size in sized:
        total = total + size
    return total


def in_parts(frame: DataFrame, part_bytes: int, by: tuple[str, ...] = ()) -> Iterator[Any]:
    """The rows of ``frame`` (cache it first: it is read more than once), as Arrow tables of at
    most about ``part_bytes`` each. Each part is a hash partition of the rows by the columns
    ``by`` (default: all): rows equal in them are in one part, no order holds across parts."""
    figures = frame.agg(F.count(F.lit(1)).alias("rows"), F.sum(row_bytes(frame)).alias("bytes"))
    first = figures.first()
    rows, size = (0, 0) if first is None else (int(first["rows"]), int(first["bytes"] or 0))
    if rows == 0:
        return
    parts = min(rows, -(-size // part_bytes))
    if parts <= 1:
        yield frame.toArrow()
        return
    spread = frame.withColumn(
        "_part", F.pmod(F.xxhash64(*(by or frame.columns)), F.lit(parts))
    ).persist()
    try:
        for part in range(parts):
            yield spread.where(F.col("_part") == part).drop("_part").toArrow()
    finally:
        spread.unpersist()
