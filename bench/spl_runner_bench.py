"""The SPL runner on Spark (``spl_window``, ``local[2]``): tuples/s and state bytes per batch.

Two runs over JSON files (one file = one micro-batch) of the public, typed output
(:func:`trending.library.spl_window`, i.e. ``apply_window(output="typed")``), on the JVM core
(``--engine jvm``, what ``spl_window`` runs for these specs) or on the Python core
(``--engine python``):

* per key: ``--keys`` keys (10^4), a sliding ``count(1000)`` window per key with a ``count(1)``
  trigger; each batch holds ``--rows`` rows, the same number per key, so windows grow by
  ``rows / keys`` tuples a batch;
* whole window: one window partitioned by key, sliding ``count(4)``, ``partitionCount(P)``
  with ``P = --partitions`` (10^4) and LRU selection; the first batch opens the P partitions,
  each later batch brings ``--evicting-rows`` rows of keys never seen, so every row evicts the
  least recently used partition.

Printed per batch (``name=... value=... unit=...`` lines): the rows, the batch's seconds
(``processAllAvailable``, output included), tuples/s, and from Spark's progress
(``stateOperators[].customMetrics``) ``rocksdbTotalBytesWritten``, the bytes the batch wrote
into the RocksDB state store, and ``rocksdbBytesCopied``, the bytes its commit copied to the
checkpoint; then the output rows' ``tuples`` as JSON bytes (``to_json``, so the figure means
what it did when the output was JSON text). The first batch of each run also pays for start-up
(workers, JIT), so each run ends with the medians of the other batches. ``--runner FILE`` runs
another copy of the runner module, e.g. ``git show REV:trending/spark/spl_runner.py >
/tmp/runner.py``, for comparison (a runner without engines runs its own typed output).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SCHEMA = "k LONG, id LONG, v LONG"
Rows = list[dict[str, int]]


def report(run: str, name: str, value: float, unit: str) -> None:
    print(f"name={run} {name} value={value:.0f} unit={unit}", flush=True)


def load_runner(path: str | None) -> ModuleType:
    """The runner module: ``trending.spark.spl_runner``, or the file at ``path``."""
    if path is None:
        import trending.spark.spl_runner as runner

        return runner
    spec = importlib.util.spec_from_file_location("bench_spl_runner", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot load a runner from {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    from pyspark import cloudpickle

    # Python workers cannot import the file by that module name: ship the module by value
    cloudpickle.register_pickle_by_value(module)  # type: ignore[no-untyped-call]
    return module


def per_key_batches(keys: int, rows: int, batches: int) -> list[Rows]:
    """Batches of ``rows`` rows; row ``i`` has key ``i % keys``."""
    return [
        [{"k": i % keys, "id": i, "v": i % 97} for i in range(b * rows, (b + 1) * rows)]
        for b in range(batches)
    ]


def evicting_batches(partitions: int, rows: int, batches: int) -> list[Rows]:
    """Keys ``0..P-1`` once, then batches of ``rows`` rows of fresh keys ``P, P+1, ...``."""
    out = [[{"k": i, "id": i, "v": i % 97} for i in range(partitions)]]
    for b in range(batches):
        start = partitions + b * rows
        out.append([{"k": i, "id": i, "v": i % 97} for i in range(start, start + rows)])
    return out


def write_file(folder: Path, name: str, rows: Rows) -> None:
    tmp = folder.parent / name
    tmp.write_text("".join(json.dumps(row) + "\n" for row in rows))
    tmp.rename(folder / name)  # atomic: the file source never sees half a file


class OutputBytes:
    """``foreachBatch`` sink: counts the event rows and the bytes of their ``tuples`` JSON."""

    def __init__(self) -> None:
        self.rows = 0
        self.bytes = 0

    def __call__(self, batch: Any, batch_id: int) -> None:
        from pyspark.sql import functions as F

        row = batch.agg(F.count("*"), F.sum(F.length(F.to_json("tuples")))).collect()[0]
        self.rows += int(row[0])
        self.bytes += int(row[1] or 0)


def run(
    spark: Any, runner: ModuleType, name: str, spec: dict[str, Any], data: list[Rows], engine: str
) -> None:
    """Run ``spec`` over ``data`` (one file a batch), printing each batch's figures."""
    with tempfile.TemporaryDirectory(prefix="bench-spl-runner-") as tmp:
        source = Path(tmp, "in")
        source.mkdir()
        stream = spark.readStream.schema(SCHEMA).json(str(source))
        engines = {"engine": engine} if engine != "auto" else {}
        events = runner.apply_window(
            stream, spec, key="k", order_by="id", output="typed", **engines
        )
        sink = OutputBytes()
        query = (
            events.writeStream.foreachBatch(sink).option("checkpointLocation", f"{tmp}/chk").start()
        )
        rates, writes = [], []
        try:
            for number, rows in enumerate(data):
                seen, out_before = len(query.recentProgress), sink.bytes
                write_file(source, f"batch-{number:04d}.json", rows)
                started = time.monotonic()
                query.processAllAvailable()
                seconds = time.monotonic() - started
                written, copied = state_bytes(query.recentProgress[seen:])
                report(f"{name} batch {number}", "rows", len(rows), "rows")
                report(f"{name} batch {number}", "seconds", seconds * 1000, "ms")
                report(f"{name} batch {number}", "rate", len(rows) / seconds, "tuples/s")
                report(f"{name} batch {number}", "state bytes written", written, "bytes")
                report(f"{name} batch {number}", "checkpoint bytes copied", copied, "bytes")
                out = sink.bytes - out_before
                report(f"{name} batch {number}", "output tuples JSON", out, "bytes")
                rates.append(len(rows) / seconds)
                writes.append(written)
        finally:
            query.stop()
        steady = slice(1, None) if len(data) > 1 else slice(None)
        report(f"{name} median", "rate", statistics.median(rates[steady]), "tuples/s")
        median_written = statistics.median(writes[steady])
        report(f"{name} median", "state bytes written per batch", median_written, "bytes")


def state_bytes(progress: list[Any]) -> tuple[int, int]:
    """Sum of ``rocksdbTotalBytesWritten`` and ``rocksdbBytesCopied`` over ``progress``."""
    written = copied = 0
    for entry in progress:
        for operator in entry.stateOperators:
            metrics = operator.customMetrics
            written += int(metrics.get("rocksdbTotalBytesWritten", 0))
            copied += int(metrics.get("rocksdbBytesCopied", 0))
    return written, copied


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument("--rows", type=int, default=100_000, help="rows per per-key batch")
    parser.add_argument("--batches", type=int, default=5, help="per-key batches")
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--evicting-rows", type=int, default=5_000)
    parser.add_argument("--evicting-batches", type=int, default=3)
    parser.add_argument("--runner", default=None, help="a runner module file to run instead")
    parser.add_argument("--only", choices=["per-key", "whole"], default=None)
    parser.add_argument(
        "--engine", choices=["auto", "jvm", "python"], default="auto",
        help="the core typed output runs on (auto: what spl_window picks; auto for --runner)",
    )  # fmt: skip
    args = parser.parse_args()

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from trending.spark.session import build_session

    runner = load_runner(args.runner)
    spark = build_session("bench-spl-runner", "local[2]", shuffle_partitions=2)
    runner.configure_spark(spark)
    try:
        if args.only in (None, "per-key"):
            spec = {"kind": "sliding", "evict": {"count": 1000}, "trigger": {"count": 1}}
            data = per_key_batches(args.keys, args.rows, args.batches)
            run(spark, runner, f"per-key {args.keys} keys count(1000)", spec, data, args.engine)
        if args.only in (None, "whole"):
            spec = {
                "kind": "sliding",
                "evict": {"count": 4},
                "partition_by": "k",
                "partition_eviction": {"count": args.partitions},
            }
            data = evicting_batches(args.partitions, args.evicting_rows, args.evicting_batches)
            run(spark, runner, f"whole partitionCount({args.partitions})", spec, data, args.engine)
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
