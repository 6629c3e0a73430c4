"""Event times the wall clock cannot vouch for.

One event stamped far in the future (a bad clock, a year 9999, microseconds read as
milliseconds) would move an event-time watermark past every open window: every later event
would be late, and the state would keep the damage across restarts. So an event whose time
``t`` lies outside ``[C - max_past, C + max_future]``, where ``C`` is the micro-batch's clock,
is a dead letter (reason ``future-timestamp`` or ``past-timestamp``) and moves no watermark.

``C`` is Spark's batch timestamp: in a streaming plan ``current_timestamp()`` is fixed per
micro-batch and recorded in the offset log, so a batch replayed after a crash judges its events
by the same clock.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column, SparkSession
from pyspark.sql import functions as F

from trending.spark.batch_values import BatchParams, set_batch_params

FUTURE_TIMESTAMP = "future-timestamp"
PAST_TIMESTAMP = "past-timestamp"
CLOCK_FUNCTION = ("trending_batch_clock", "trending.state.BatchClock")
DEFAULT_MAX_FUTURE_MS = 3_600_000


@dataclass(frozen=True)
class ClockSkew:
    """How far an event time may be from the batch's clock (ms; None: no bound)."""

    max_future_ms: int | None = DEFAULT_MAX_FUTURE_MS
    max_past_ms: int | None = None

    def __post_init__(self) -> None:
        for flag, bound in (("max-future-skew", self.max_future_ms),
                            ("max-past-skew", self.max_past_ms)):  # fmt: skip
            if bound is not None and bound < 0:
                raise ValueError(f"{flag} must be >= 0, got {bound} ms")


def batch_clock_ms() -> Column:
    """The micro-batch's clock in epoch ms (fixed per batch in a streaming plan)."""
    return F.unix_millis(F.current_timestamp())


def batch_clock(spark: SparkSession, job: str) -> Column:
    """The clock :func:`set_batch_clock` set for ``job``'s running micro-batch, in epoch ms
    (null when none was set): a function of the plan, not a literal Spark writes into each
    batch's generated code as it does ``current_timestamp()``, so the code is compiled once."""
    from pyspark.sql.types import LongType

    spark.udf.registerJavaFunction(*CLOCK_FUNCTION, LongType())
    return F.call_function(CLOCK_FUNCTION[0], F.lit(job))


def set_batch_clock(spark: SparkSession, job: str, clock_ms: int) -> None:
    """Give the tasks of ``job``'s next Spark jobs the clock ``clock_ms`` (:func:`batch_clock`):
    Spark hands the session's ``spark.*`` settings to the tasks of each query it runs."""
    set_batch_params(spark, job, BatchParams(None, {}, clock_ms))


def skew_reason(event_ms: Column, clock_ms: Column, skew: ClockSkew) -> Column:
    """``future-timestamp`` if ``t > C + max_future``, ``past-timestamp`` if
    ``t < C - max_past``, else null (also for a null ``t``)."""
    reason = F.lit(None).cast("string")
    if skew.max_past_ms is not None:
        too_old = event_ms < clock_ms - F.lit(skew.max_past_ms)
        reason = F.when(too_old, F.lit(PAST_TIMESTAMP)).otherwise(reason)
    if skew.max_future_ms is not None:
        too_new = event_ms > clock_ms + F.lit(skew.max_future_ms)
        reason = F.when(too_new, F.lit(FUTURE_TIMESTAMP)).otherwise(reason)
    return reason


ADVANCE_FIELD = "watermark_ms"
NOT_AN_ADVANCE = "not an event-time advance"


def advance_value(watermark_ms: int) -> bytes:
    """A record of a job's control topic asking for the watermark ``watermark_ms``
    (``--idle-advance``, :mod:`trending.jobs.idle`): ``{"watermark_ms": N}`` in UTF-8."""
    return b'{"%s":%d}' % (ADVANCE_FIELD.encode(), watermark_ms)


def advance_of(value: Column) -> Column:
    """The watermark an :func:`advance_value` asks for (null for any other bytes)."""
    text = value.cast("string")
    return F.get_json_object(text, f"$.{ADVANCE_FIELD}").cast("long")
