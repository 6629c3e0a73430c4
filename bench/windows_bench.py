"""SPL windows: tuples/s of the pure core and of the Spark runner, and memory per partition.

* core: a sliding ``count(1000)`` window with a ``count(1)`` trigger (each tuple evicts one,
  inserts one and triggers the 1000-tuple window); the trigger's content is a view, not a
  copy, so this measures the window logic itself (target: >= 200k tuples/s);
* memory: the same window kept full in ``--partitions`` partitions: bytes per partition
  held by the window (tracemalloc, tuples included) and bytes of its JSON snapshot (what the
  Spark runner stores per partition);
* spark: ``apply_window`` on ``local[2]`` over JSON files (``--keys`` keys), timed on a batch
  after a warm-up batch, output to the ``noop`` sink (``--no-spark`` skips it).

Prints ``name=... value=... unit=...`` lines. ``make bench-windows`` runs it. ``--markdown PATH``
also writes them as a table, with the parameters and the command, to a Markdown file.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import report as md
from trending.windows.spl import Count, SlidingWindow, WindowEvent

WINDOW, TRIGGER = 1000, 1


def report(name: str, value: float, unit: str) -> list[str]:
    """Prints the figure's line; its Markdown table's cells."""
    print(f"name={name} value={value:.0f} unit={unit}", flush=True)
    return [name, unit, f"{value:,.0f}"]


def core_rate(tuples: int, repeats: int = 3) -> float:
    """Best tuples/s of ``repeats`` runs of one sliding count(1000)/count(1) window."""
    records = [{"id": i, "v": i % 97} for i in range(tuples)]
    best = 0.0
    for _ in range(repeats):
        window = SlidingWindow(Count(WINDOW), Count(TRIGGER)).build()
        insert, triggered = window.insert, 0
        started = time.perf_counter()
        for record in records:
            triggered += len(insert(record)[-1].tuples)  # read the trigger's content size
        best = max(best, tuples / (time.perf_counter() - started))
        assert triggered > 0
    return best


def memory_per_partition(partitions: int) -> tuple[float, float]:
    """``(bytes held per partition, snapshot JSON bytes per partition)`` for full windows."""
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    window = SlidingWindow(Count(WINDOW), Count(TRIGGER)).build()
    for i in range(partitions * WINDOW):
        window.insert({"id": i, "v": i % 97}, i % partitions)
    held = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    snapshot = len(json.dumps(window.snapshot(), separators=(",", ":")))
    return held / partitions, snapshot / partitions


def spark_rate(rows: int, keys: int) -> float:
    """Tuples/s through ``apply_window`` on local[2] (one timed batch after a warm-up)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from trending.spark.session import build_session
    from trending.spark.spl_runner import apply_window, configure_spark

    spark = build_session("bench-windows", "local[2]", shuffle_partitions=2)
    configure_spark(spark)
    spec = {"kind": "sliding", "evict": {"count": WINDOW}, "trigger": {"count": TRIGGER}}

    def sizes(key: Any, event: WindowEvent) -> Iterable[Mapping[str, Any]]:
        return [{"k": key, "n": len(event.tuples)}] if event.kind.value == "trigger" else []

    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp, "in")
        source.mkdir()
        stream = spark.readStream.schema("k LONG, id LONG, v LONG").json(str(source))
        events = apply_window(
            stream, spec, key="k", order_by="id", output=sizes, output_schema="k LONG, n LONG"
        )
        query = events.writeStream.format("noop").option("checkpointLocation", f"{tmp}/chk").start()
        try:
            write_rows(source, 0, keys * 10, keys)  # warm-up: workers, state store, JIT paths
            query.processAllAvailable()
            write_rows(source, keys * 10, rows, keys)
            started = time.monotonic()
            query.processAllAvailable()
            elapsed = time.monotonic() - started
        finally:
            query.stop()
            spark.stop()
    return rows / elapsed


def write_rows(folder: Path, start: int, count: int, keys: int) -> None:
    lines = (
        json.dumps({"k": i % keys, "id": i, "v": i % 97}) + "\n"
        for i in range(start, start + count)
    )
    tmp = folder.parent / f"batch-{start}.json"
    tmp.write_text("".join(lines))
    tmp.rename(folder / tmp.name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tuples", type=int, default=300_000, help="core tuples per run")
    parser.add_argument("--partitions", type=int, default=100, help="for the memory figure")
    parser.add_argument("--spark-rows", type=int, default=100_000)
    parser.add_argument("--keys", type=int, default=50)
    parser.add_argument("--no-spark", action="store_true")
    parser.add_argument(
        "--markdown", type=Path, help="also write the table as Markdown to this file"
    )
    args = parser.parse_args()
    began = time.monotonic()
    rows = [report("core sliding count(1000) trigger count(1)", core_rate(args.tuples), "tuples/s")]
    held, snapshot = memory_per_partition(args.partitions)
    rows.append(report("memory per full count(1000) partition", held, "bytes"))
    rows.append(report("snapshot per full count(1000) partition", snapshot, "bytes"))
    if not args.no_spark:
        rate = spark_rate(args.spark_rows, args.keys)
        rows.append(report(f"spark runner local[2] {args.keys} keys", rate, "tuples/s"))
    if args.markdown:
        markdown(args.markdown, rows, args, time.monotonic() - began)


def markdown(path: Path, rows: list[list[str]], args: argparse.Namespace, seconds: float) -> None:
    md.write(path, [
        "# SPL windows: the pure core and the Spark runner",
        "",
        md.measured(__file__, seconds, master=None if args.no_spark else "local[2]"),
        "",
        md.parameters({"tuples": args.tuples, "partitions": args.partitions,
                       "spark-rows": args.spark_rows, "keys": args.keys,
                       "spark": not args.no_spark}),
        "",
        *md.table(("figure", "unit", "value"), rows, left=2),
        "",
        f"Core: a sliding `count({WINDOW})` window with a `count({TRIGGER})` trigger, the best of "
        "3 runs over `tuples` tuples (each tuple evicts one, inserts one and triggers the "
        f"{WINDOW}-tuple window, whose content is a view). Memory: the same window kept full in "
        "`partitions` partitions: bytes held per partition (tracemalloc, tuples included) and "
        "bytes of its JSON snapshot per partition (what the Spark runner stores). Spark: "
        "`apply_window` over JSON files of `keys` keys, `spark-rows` rows timed after a "
        "warm-up batch, output to the `noop` sink.",
    ])  # fmt: skip


if __name__ == "__main__":
    main()
