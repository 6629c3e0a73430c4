"""A fault the tests inject at one exact point of a job's life, which no signal can hit reliably.

``TRENDING_CRASH_AFTER_COMMIT=N`` makes a job's process exit at once (no clean-up, as a crash
would) right after micro-batch ``N``'s Kafka transaction committed and before Spark writes the
batch to its commit log: the restart must find the batch published, skip it, and go on with
nothing lost and nothing twice. Unset, it costs one dictionary lookup per batch.
"""

from __future__ import annotations

import os
import sys

CRASH_AFTER_COMMIT = "TRENDING_CRASH_AFTER_COMMIT"
CRASH_EXIT_CODE = 137  # as a SIGKILL's


def crash_after_commit(batch_id: int) -> None:
    """Exit the process now if :data:`CRASH_AFTER_COMMIT` names ``batch_id``."""
    if os.environ.get(CRASH_AFTER_COMMIT) == str(batch_id):
        print(f"crashing after the Kafka commit of batch {batch_id}", file=sys.stderr, flush=True)
        os._exit(CRASH_EXIT_CODE)
