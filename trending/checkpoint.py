"""Driver-side state snapshots, one per committed micro-batch, in the job's checkpoint folder.

A snapshot ``<batch>.snapshot`` holds the state *after* that batch. It is written (atomically,
by rename) before the batch's output transaction commits, so after a crash the newest snapshot at
or below the last committed batch is always the state to resume from.
"""

from __future__ import annotations

import os
import pickle
from pathlib import Path
from typing import Any

_SUFFIX = ".snapshot"


class SnapshotStore:
    """Numbered pickled snapshots in ``folder``, keeping the newest ``keep``."""

    def __init__(self, folder: Path, keep: int = 3) -> None:
        self.folder = folder
        self.keep = keep
        folder.mkdir(parents=True, exist_ok=True)

    def batches(self) -> list[int]:
        """Batch ids that have a snapshot, oldest first."""
        return sorted(int(p.name[: -len(_SUFFIX)]) for p in self.folder.glob(f"*{_SUFFIX}"))

    def save(self, batch_id: int, state: Any) -> int:
        """Write the state after ``batch_id`` durably, drop old snapshots; return its bytes."""
        final = self.folder / f"{batch_id}{_SUFFIX}"
        temporary = final.with_suffix(".tmp")
        with temporary.open("wb") as file:
            pickle.dump(state, file, protocol=pickle.HIGHEST_PROTOCOL)
            file.flush()
            os.fsync(file.fileno())
            size = file.tell()
        temporary.replace(final)
        for old in self.batches()[: -self.keep]:
            (self.folder / f"{old}{_SUFFIX}").unlink(missing_ok=True)
        return size

    def load(self, at_most: int) -> tuple[int, Any] | None:
        """The newest snapshot with batch id ``<= at_most``; newer ones are discarded."""
        for batch_id in reversed(self.batches()):
            path = self.folder / f"{batch_id}{_SUFFIX}"
            if batch_id > at_most:
                path.unlink()  # its output transaction never committed
                continue
            with path.open("rb") as file:
                return batch_id, pickle.load(file)
        return None


def reconcile_spark_log(spark_checkpoint: Path, committed_batch: int) -> str | None:
    """Settle a micro-batch Spark planned but never marked done, before the query restarts.

    Spark 4.1.1's Kafka source fails when it re-runs such a batch (a null-offsets bug in its
    progress metrics, SPARK-57438), so the batch is never left for Spark to re-run:

    * if its output transaction committed (``batch <= committed_batch``), Spark's commit entry
      is written, as Spark would have done had it not been stopped;
    * otherwise its offset entry is removed and Spark plans the batch again from the last
      committed offsets (nothing of it was published and the state is from before it).

    Returns what was done, or None when the log was consistent. Needs a local checkpoint path.
    """
    offsets, commits = spark_checkpoint / "offsets", spark_checkpoint / "commits"
    planned = _log_batches(offsets)
    if not planned:
        return None
    last_planned = planned[-1]
    done = _log_batches(commits)
    if done and done[-1] >= last_planned:
        return None
    if last_planned <= committed_batch:
        commits.mkdir(parents=True, exist_ok=True)
        (commits / str(last_planned)).write_text('v1\n{"nextBatchWatermarkMs":0}')
        return f"batch {last_planned} was published but not marked done: marked done"
    (offsets / str(last_planned)).unlink()
    (offsets / f".{last_planned}.crc").unlink(missing_ok=True)
    return f"batch {last_planned} was planned but not published: planned again"


def _log_batches(folder: Path) -> list[int]:
    if not folder.is_dir():
        return []
    return sorted(int(p.name) for p in folder.iterdir() if p.name.isdigit())
