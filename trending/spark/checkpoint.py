"""A job's checkpoint on any path Spark accepts, read and written only through Hadoop's FileSystem.

Layout under the ``--checkpoint`` location (``/dir``, ``file:///dir``, ``hdfs://...``,
``s3a://...``)::

    trending-job.json   which job owns the checkpoint and with which window settings
    lease/              which process runs the job now (:mod:`trending.lease`)
    spark/              the streaming query's own checkpoint (offsets, commits, state store)
    sensor-state/       the sensor job's state stores (pending events, window index, cells)

The driver keeps no state files here: its state is committed with each batch's output in Kafka
(:mod:`connectors.transactions`). On start-up :meth:`JobCheckpoint.claim` refuses settings other
than those the checkpoint was written with, and :meth:`JobCheckpoint.settle` matches Spark's logs
with the last batch committed to Kafka. Nothing is ever deleted but an offset-log entry of a
batch that published nothing.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from trending.errors import UserError
from trending.lease import DEFAULT_TIMEOUT_S, CheckpointLease

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

IDENTITY_FILE = "trending-job.json"
QUERY = "spark"
LEASE = "lease"
_JAVA_CLASS = "trending.state.CheckpointFiles"


class JobCheckpoint:
    """The checkpoint of one job: its identity file and its query's logs."""

    def __init__(self, spark: SparkSession, location: str) -> None:
        self.location = location
        jvm: Any = spark.sparkContext._jvm
        try:
            self._files = getattr(jvm, _JAVA_CLASS)(spark._jsparkSession, location)
        except Exception as error:  # py4j wraps the JVM's IllegalArgumentException
            raise UserError(f"cannot use --checkpoint {location}: {error}") from error
        self.uri: str = self._files.uri("")

    @property
    def query_location(self) -> str:
        """Where the streaming query keeps its checkpoint."""
        return str(self._files.uri(QUERY))

    def child_location(self, name: str) -> str:
        """The URI of ``name`` under the checkpoint (e.g. a job's own state stores)."""
        return str(self._files.uri(name))

    def batch_clock_ms(self, batch_id: int) -> int:
        """Spark's clock for micro-batch ``batch_id`` (its batch timestamp, epoch ms, from the
        offset log): what ``current_timestamp()`` is in that batch, also when it runs again."""
        return int(self._files.batchTimestampMs(QUERY, batch_id))

    def lease(self, timeout_s: float = DEFAULT_TIMEOUT_S) -> CheckpointLease:
        """The lease that makes this process the checkpoint's one owner (not yet taken)."""
        return CheckpointLease(_LeaseFolder(self._files, self.uri), timeout_s)

    def recorded_settings(self) -> dict[str, Any] | None:
        """The settings the checkpoint was claimed with, or None for a new checkpoint."""
        text = self._files.readText(IDENTITY_FILE)
        return None if text is None else dict(json.loads(text).get("settings", {}))

    def claim(self, job: str, settings: Mapping[str, Any]) -> str:
        """The job id this checkpoint belongs to; a new one for a new checkpoint.

        Raises :class:`UserError` when the checkpoint belongs to another job, was written with
        other ``settings``, or holds a query but no identity (another program's checkpoint).
        """
        text = self._files.readText(IDENTITY_FILE)
        if text is None:
            if self._files.lastPlanned(QUERY) >= 0:
                raise UserError(
                    f"the checkpoint {self.uri} holds a streaming query but no {IDENTITY_FILE}: "
                    "it was not written by this version of `trending run`; use a new "
                    "--checkpoint (nothing was deleted)"
                )
            identity = {"job": job, "job_id": uuid.uuid4().hex[:16], "settings": dict(settings)}
            self._files.writeTextAtomically(IDENTITY_FILE, json.dumps(identity, indent=2))
            return str(identity["job_id"])
        identity = json.loads(text)
        _check_same(self.uri, job, settings, identity)
        return str(identity["job_id"])

    def has_batches(self) -> bool:
        """Whether Spark planned a batch on this checkpoint."""
        return bool(self._files.lastPlanned(QUERY) >= 0)

    def done_watermark_ms(self) -> int | None:
        """The watermark Spark recorded with the last batch it marked done, or None."""
        done = self._files.lastDone(QUERY)
        text = None if done < 0 else self._files.readText(f"{QUERY}/commits/{done}")
        if text is None:
            return None
        lines = str(text).splitlines()  # "v1", then the commit's JSON
        return int(json.loads(lines[1]).get("nextBatchWatermarkMs", 0)) if len(lines) > 1 else None

    def done_offsets(self, topic: str) -> dict[int, int] | None:
        """The offsets of ``topic`` the last batch Spark marked done read up to (from its
        offset log), or None before the first one."""
        done = self._files.lastDone(QUERY)
        text = None if done < 0 else self._files.readText(f"{QUERY}/offsets/{done}")
        for line in [] if text is None else str(text).splitlines()[2:]:
            try:
                source = json.loads(line)
            except ValueError:
                continue
            if isinstance(source, dict) and topic in source:
                return {int(p): int(o) for p, o in source[topic].items()}
        return None

    def settle(self, committed_batch: int, next_watermark_ms: int | None) -> str | None:
        """Match Spark's logs with the last batch committed to Kafka, before the query starts.

        * a batch Spark planned and whose output committed, but that Spark did not mark done
          (the driver died in between), is marked done, as Spark would have;
        * a batch Spark planned that published nothing is forgotten, and Spark plans it again
          (Spark 4.1.1's Kafka source fails when it re-runs a planned batch, SPARK-57438);
        * any other mismatch raises :class:`UserError` and changes nothing; so does a checkpoint
          with batches done when Kafka holds none of this job (``committed_batch`` -1: its
          marker and state record both gone), since the driver state to resume from is lost and
          a run on the same output topics would publish windows again.

        Returns what was done, or None when the logs already matched.
        """
        planned, done = self._files.lastPlanned(QUERY), self._files.lastDone(QUERY)
        if planned == done == committed_batch:
            return None
        if planned == done + 1 and committed_batch == planned:
            self._files.markDone(QUERY, planned, max(next_watermark_ms or 0, 0))
            return f"batch {planned} was published but not marked done: marked done"
        if planned == done + 1 and committed_batch == done:
            self._files.forgetPlannedAfter(QUERY, done)
            return f"batch {planned} was planned but not published: planned again"
        if committed_batch < 0 <= done:
            raise UserError(
                f"the checkpoint {self.uri} shows batch {done} done, but Kafka holds no batch "
                "of this job: its commit marker and its state record in the commits topic are "
                "both gone (the topic deleted, or the record removed), and with them the state "
                "it resumes from. Start a new job with a new --checkpoint and new output topics, "
                "which it fills from the input once (nothing was deleted)"
            )
        raise UserError(
            f"the checkpoint {self.uri} does not match the output committed to Kafka: Spark "
            f"planned batch {planned} and finished batch {done}, but the last batch committed "
            f"for this job is {committed_batch}. The checkpoint or the commits topic was "
            "replaced or belongs to another cluster; start over with a new --checkpoint "
            "(nothing was deleted)"
        )


class _LeaseFolder:
    """The checkpoint's ``lease/`` folder as :class:`trending.lease.LeaseStorage`, on Hadoop
    (``location`` names the checkpoint in messages)."""

    def __init__(self, files: Any, location: str) -> None:
        self._files = files
        self.location = location

    def read(self, name: str) -> str | None:
        text = self._files.readText(f"{LEASE}/{name}")
        return None if text is None else str(text)

    def create(self, name: str, text: str) -> bool:
        return bool(self._files.createExclusively(f"{LEASE}/{name}", text))

    def write(self, name: str, text: str) -> None:
        self._files.writeText(f"{LEASE}/{name}", text)

    def names(self) -> list[str]:
        return [str(name) for name in self._files.list(LEASE)]

    def delete(self, name: str) -> None:
        self._files.delete(f"{LEASE}/{name}")


def _check_same(
    uri: str, job: str, settings: Mapping[str, Any], identity: Mapping[str, Any]
) -> None:
    if identity.get("job") != job:
        raise UserError(
            f"the checkpoint {uri} belongs to a `{identity.get('job')}` job, not `{job}`: "
            "use another --checkpoint"
        )
    written = identity.get("settings", {})
    changed = [
        f"{name} {written.get(name)!r} -> {value!r}"
        for name, value in settings.items()
        if written.get(name) != value
    ]
    if changed:
        raise UserError(
            f"the checkpoint {uri} was written with other settings ({'; '.join(changed)}): "
            "its state only fits those. Run with the original settings, or start a new job "
            "with a new --checkpoint (nothing was deleted)"
        )
