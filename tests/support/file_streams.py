"""Window queries over a folder of JSON files: each file one micro-batch, one query per window,
a restart on the checkpoints part-way, the rows each query wrote collected by ``foreachBatch``."""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from tests.support.queries import poll_until

Rows = list[dict[str, Any]]
SinkT = TypeVar("SinkT", bound="RowSink")


def seeded_cuts(seed: int, rows: Rows, files: int) -> list[Rows]:
    """``rows`` in their order cut at ``files - 1`` seeded points; each file's lines shuffled."""
    rng = random.Random(seed)
    points = sorted(rng.sample(range(1, len(rows)), files - 1))
    parts = [rows[a:b] for a, b in zip([0, *points], [*points, len(rows)], strict=True)]
    for part in parts:
        rng.shuffle(part)
    return parts


def write_file(folder: Path, rows: Rows) -> None:
    """``rows`` as a file of JSON lines in ``folder``."""
    name = f"{uuid.uuid4().hex}.json"
    tmp = folder.parent / name
    tmp.write_text("".join(json.dumps(row) + "\n" for row in rows))  # NaN as NaN, which Spark reads
    tmp.rename(folder / name)  # atomic: the file source never sees half a file


class RowSink:
    """Rows a query wrote, via ``foreachBatch`` (the memory sink cannot restart); each batch
    through ``transform`` first, if given."""

    def __init__(self, transform: Callable[[Any], Any] | None = None) -> None:
        self.rows: list[Any] = []
        self.transform = transform

    def __call__(self, batch: Any, batch_id: int) -> None:
        self.rows.extend((batch if self.transform is None else self.transform(batch)).collect())


def stream_in_files(
    spark: Any,
    folder: Path,
    files: list[Rows],
    windows: Sequence[Callable[[Any], Any]],
    schema: str,
    *,
    sink: Callable[[], SinkT],
    write: Callable[[Path, Rows], None] = write_file,
    restart_after: int | None = None,
    settle: Callable[[list[SinkT]], bool] | None = None,
    trigger: str | None = None,
) -> list[SinkT]:
    """Each file (put in ``folder / "in"`` by ``write``, read as ``schema``) one micro-batch
    through each of ``windows`` (``DataFrame -> DataFrame``), one query per window into a
    ``sink()`` of its own, side by side on the same files; the queries stopped after
    ``restart_after`` files and new ones started on their checkpoints; then, if given, wait
    until ``settle(sinks)`` (for timers that fire in no-data micro-batches). ``trigger``: a
    processing-time interval, else Spark's default (the next micro-batch once one ends)."""
    source, sinks = folder / "in", [sink() for _ in windows]
    source.mkdir(parents=True)
    parts = [files] if restart_after is None else [files[:restart_after], files[restart_after:]]
    for number, part in enumerate(parts):
        queries = []
        for i, (window, into) in enumerate(zip(windows, sinks, strict=True)):
            writer = spark.readStream.schema(schema).json(str(source)).transform(window)
            writer = writer.writeStream.foreachBatch(into)
            if trigger is not None:
                writer = writer.trigger(processingTime=trigger)
            queries.append(writer.option("checkpointLocation", str(folder / f"chk{i}")).start())
        try:
            for rows in part:
                write(source, rows)
                for query in queries:
                    query.processAllAvailable()
            if settle is not None and number == len(parts) - 1:
                poll_until(
                    lambda: settle(sinks),
                    60,
                    lambda: f"not settled, rows {[len(s.rows) for s in sinks]}: {sinks[0].rows}",
                )
        finally:
            for query in queries:
                query.stop()
    return sinks
