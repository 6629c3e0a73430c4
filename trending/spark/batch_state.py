"""A library writer's small driver state, one JSON file per micro-batch in the query's checkpoint.

A ``foreachBatch`` writer whose step keeps state on the driver between micro-batches
(:class:`trending.spark.sliding_topk.TopKBatches`, :class:`trending.spark.sensor_matching
.SensorBatches`) saves it after batch ``b`` as ``<checkpoint>/<folder>/<b>.json``, beside Spark's
own logs and on the same file system (``CheckpointFiles`` in the JVM: local, HDFS, S3, ...). A
batch Spark runs again (the last one it had not committed) starts from the state of the batch
before it, so it hands its handlers the same rows. The two newest files are kept.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from trending.errors import UserError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

VERSION = 1
_SAVED = re.compile(r"\d+\.json")


class BatchStates:
    """The saved states of one writer under ``<checkpoint>/<folder>``, each with the settings it
    was computed with: a checkpoint of other settings is refused (``error``)."""

    def __init__(
        self,
        checkpoint: str,
        folder: str,
        settings: Mapping[str, Any],
        error: type[UserError],
        what: str,
    ) -> None:
        self.checkpoint = checkpoint
        self.folder = folder
        self.settings = dict(settings)
        self.error = error
        self.what = what  # e.g. "a top-k", for the message
        self._files: Any = None
        self._root: Any = None

    def before(self, spark: SparkSession, batch_id: int) -> Any:
        """The state saved by the last batch before ``batch_id`` (its JSON), or None."""
        files = self._open(spark)
        earlier = [b for b in self.saved() if b < batch_id]
        if not earlier:
            return None
        saved = json.loads(str(files.readText(f"{earlier[-1]}.json")))
        if saved.get("settings") != self.settings:
            raise self.error(
                f"the checkpoint {self.checkpoint} holds {self.what} of other settings "
                f"({saved.get('settings')}, not {self.settings}): use a new checkpoint"
            )
        return saved["state"]

    def save(self, spark: SparkSession, batch_id: int, state: Any) -> None:
        """Save ``state`` (JSON-able) as the state after ``batch_id``; drop older ones."""
        files = self._open(spark)
        text = json.dumps({"version": VERSION, "settings": self.settings, "state": state})
        saved_before = self.saved()
        if batch_id in saved_before:  # the batch ran again: the same state, replaced whole
            files.writeText(f"{batch_id}.json", text)
        else:
            files.writeTextAtomically(f"{batch_id}.json", text)
        for saved in saved_before:
            if saved < batch_id - 1:
                files.delete(f"{saved}.json")

    def saved(self) -> list[int]:
        """The batches whose state is saved, in order."""
        names = [str(name) for name in self._root.list(self.folder)]
        return sorted(int(n[: -len(".json")]) for n in names if _SAVED.fullmatch(n))

    def _open(self, spark: SparkSession) -> Any:
        if self._files is None:
            jvm: Any = spark.sparkContext._jvm
            files = jvm.trending.state.CheckpointFiles
            self._root = files(spark._jsparkSession, self.checkpoint)
            location = self.checkpoint.rstrip("/") + "/" + self.folder
            self._files = files(spark._jsparkSession, location)
        return self._files
