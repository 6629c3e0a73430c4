"""How many records a micro-batch takes: Spark's ``maxOffsetsPerTrigger``, bounded by default."""

from __future__ import annotations

from trending.errors import UserError

# Records a micro-batch takes per second of trigger interval unless told otherwise: about what
# the hashtags job processes per second on two cores.
RECORDS_PER_TRIGGER_SECOND = 100_000


def batch_bound(max_offsets_per_trigger: int | None, trigger_ms: int) -> int | None:
    """``maxOffsetsPerTrigger``: the given bound (0: none), else
    ``max(trigger seconds, 1) x RECORDS_PER_TRIGGER_SECOND``, so that a job catching up on a
    backlog runs batches of about one trigger's work instead of one batch of everything."""
    if max_offsets_per_trigger is not None:
        if max_offsets_per_trigger < 0:
            raise UserError("--max-offsets-per-trigger must be >= 0 (0: no bound)")
        return max_offsets_per_trigger or None
    return round(max(trigger_ms / 1000, 1.0) * RECORDS_PER_TRIGGER_SECOND)
