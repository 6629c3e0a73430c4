"""`make bench-library`: the library's windows beside Spark's built-in windowed count, local[2].

Each case runs a library function and Spark's nearest built-in, ``groupBy(window(ts, size,
hop), k).count()`` with a watermark in update output mode, on the same input, with the same
trigger and the same sink, one after the other in one session:

* ``spl-tumbling``: ``trending.spl_window``, a tumbling ``count(N)`` window per key with a count
  and a sum summary (``before_flush`` events only, no tuples kept); the built-in counts tumbling
  windows per key of the event time in which a key gets about N rows;
* ``spl-eviction``: ``trending.spl_window``, a sliding ``count(4)`` window partitioned by key
  with ``partitionCount(P)`` (LRU): the first file opens the P partitions, each later file
  brings rows of keys never seen, so every row evicts a partition (all events out); the
  built-in counts 1-minute tumbling windows per key;
* ``temporal-tumbling``: ``trending.temporal_window``, a StreamInsight tumbling count per key
  over point events; the built-in counts the same tumbling windows per key;
* ``sliding-topk``: ``trending.SlidingTopK`` (``topk.start``), the k most frequent keys of every
  sliding window, over many distinct keys with a Zipf skew; the built-in counts the same sliding
  windows per key (no top-k).

With ``--python-core`` (the default) ``spl_window`` and ``temporal_window`` also run on their
Python core (the session setting ``spark.trending.spl.engine`` / ``spark.trending.temporal.engine``
set to ``python`` while the query is planned), as a contender of its own: what the JVM core
buys, in the same run.

Input: Parquet files generated ahead of time (pyarrow, in a temporary folder), columns
``k LONG, id LONG, ts TIMESTAMP, v LONG``, read by Spark's streaming file source with
``maxFilesPerTrigger=1`` and ``trigger(availableNow=True)``: one micro-batch per file, the same
files for both contenders of a case. Sink: ``foreachBatch`` counting the output rows (for
``SlidingTopK`` its ``handle`` does).

Each contender runs twice on one checkpoint: a run over all files (wall seconds from
``start()`` until the query ends, micro-batches without new rows included), then a run with
nothing to read. Printed: rows/s including start-up (rows / the first run's seconds) and
excluding it (rows / (the first run's seconds - the second's)). Before its first measured run
each function (and the built-in, once) runs over a small file (``--warmup-rows``) on a
checkpoint of its own, so the first one measured does not pay alone for the first use of the
JVM's classes and the Python workers. Each run also prints its micro-batches' rows and seconds.

``own cores``: the CPU seconds of this process, Spark's JVM and its Python workers per wall second
of the run over the input; ``machine busy cores``: the whole machine's (``/proc/stat``): what
the second has more than the first, other processes took.

A run that fails or runs past ``--timeout`` is reported with its error (its rate over the rows
it read marked ``stopped``), and the benchmark goes on. ``--markdown PATH`` also writes the
table, the cases' parameters and the command to a Markdown file. The defaults take a few
minutes; ``--spl-rows``, ``--partitions``, ``--topk-rows`` and the other flags size the cases.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import report
from bench.procmem import CpuSampler, _children

SCHEMA = "k LONG, id LONG, ts TIMESTAMP, v LONG"
T0 = 1_700_000_000_000  # epoch ms of the first row
PROGRESS_SECONDS = 10
PROVIDER_CONF = "spark.sql.streaming.stateStore.providerClass"
ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
CASES = ("spl-tumbling", "spl-eviction", "temporal-tumbling", "sliding-topk")
BUILTIN = "Spark groupBy(window).count()"

Starter = Callable[[Any, Path, str, Callable[[Any, int], None]], Any]
"""``(spark, input folder, checkpoint, sink) -> StreamingQuery``."""


# ---- input --------------------------------------------------------------------------------------


def write_files(folder: Path, columns: dict[str, Any], files: list[tuple[int, int]]) -> None:
    """The rows ``[a, b)`` of ``columns`` (numpy arrays) as Parquet file per ``(a, b)``, dated
    in order so that the file source reads them in order."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir(parents=True)
    stamp = time.time() - len(files)
    for number, (a, b) in enumerate(files):
        table = pa.table({
            "k": pa.array(columns["k"][a:b], pa.int64()),
            "id": pa.array(columns["id"][a:b], pa.int64()),
            "ts": pa.array(columns["ts"][a:b], pa.timestamp("ms", tz="UTC")),
            "v": pa.array(columns["v"][a:b], pa.int64()),
        })  # fmt: skip
        path = folder / f"part-{number:04d}.parquet"
        pq.write_table(table, path)
        os.utime(path, (stamp + number, stamp + number))


def even_cuts(rows: int, files: int) -> list[tuple[int, int]]:
    bounds = [rows * i // files for i in range(files + 1)]
    return list(itertools.pairwise(bounds))


def round_robin(rows: int, keys: int, step_ms: int) -> dict[str, Any]:
    """Row ``i``: key ``i % keys``, event time ``T0 + i * step_ms``."""
    import numpy as np

    ids = np.arange(rows, dtype=np.int64)
    return {"k": ids % keys, "id": ids, "ts": T0 + ids * step_ms, "v": ids % 97}


def fresh_keys(partitions: int, rows: int, step_ms: int) -> dict[str, Any]:
    """Keys ``0 .. P-1`` once, then ``rows`` rows of keys never seen: ``P, P+1, ...``."""
    return round_robin(partitions + rows, partitions + rows, step_ms)


def skewed(rows: int, keys: int, step_ms: int, skew: float, jitter_ms: int) -> dict[str, Any]:
    """Keys drawn with a Zipf skew (key ``r`` with weight ``1 / (r + 1) ** skew``), event times
    ``step_ms`` apart and up to ``jitter_ms`` earlier (out of order within a file)."""
    import numpy as np

    rng = np.random.default_rng(7)
    weights = 1.0 / np.arange(1, keys + 1, dtype=np.float64) ** skew
    ids = np.arange(rows, dtype=np.int64)
    return {
        "k": rng.choice(keys, size=rows, p=weights / weights.sum()).astype(np.int64),
        "id": ids,
        "ts": T0 + ids * step_ms - rng.integers(0, jitter_ms + 1, size=rows),
        "v": ids % 97,
    }


def tree_cpu(pid: int) -> dict[int, int]:
    """CPU ticks (user and system) of ``pid`` and each of its descendants alive now."""
    ticks, stack = {}, [pid]
    while stack:
        current = stack.pop()
        try:
            fields = Path(f"/proc/{current}/stat").read_text().rsplit(")", 1)[1].split()
            ticks[current] = int(fields[11]) + int(fields[12])  # utime, stime
            stack += _children(current)
        except (FileNotFoundError, ProcessLookupError, IndexError, ValueError):
            continue
    return ticks


class OwnCpu:
    """The CPU seconds this process, Spark's JVM and its Python workers use while it is open,
    sampled every ``interval`` s per process (a process that ends loses its last interval)."""

    def __init__(self, interval: float = 0.5) -> None:
        self.first: dict[int, int] = {}
        self.last: dict[int, int] = {}
        self._interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="own-cpu", daemon=True)

    def __enter__(self) -> OwnCpu:
        self.first = tree_cpu(os.getpid())
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()
        self.last.update(tree_cpu(os.getpid()))

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            self.last.update(tree_cpu(os.getpid()))

    def seconds(self) -> float:
        used = sum(ticks - self.first.get(pid, 0) for pid, ticks in self.last.items())
        return used / os.sysconf("SC_CLK_TCK")


# ---- the contenders -----------------------------------------------------------------------------


def source(spark: Any, folder: Path) -> Any:
    return spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).parquet(str(folder))


def finish(frame: Any, checkpoint: str, sink: Callable[[Any, int], None], mode: str) -> Any:
    return (
        frame.writeStream.outputMode(mode)
        .trigger(availableNow=True)
        .option("checkpointLocation", checkpoint)
        .foreachBatch(sink)
        .start()
    )


def builtin(size: str, hop: str, watermark: str) -> Starter:
    def start(spark: Any, folder: Path, checkpoint: str, sink: Callable[[Any, int], None]) -> Any:
        from pyspark.sql import functions as F

        counts = (
            source(spark, folder)
            .withWatermark("ts", watermark)
            .groupBy(F.window("ts", size, hop), "k")
            .count()
        )
        return finish(counts, checkpoint, sink, "update")

    return start


def on_engine(setting: str, engine: str, start: Starter) -> Starter:
    """``start`` with the session setting ``setting`` (a step's engine, read when the query is
    planned) set to ``engine`` while the query is built and started, then restored."""

    def started(spark: Any, folder: Path, checkpoint: str, sink: Callable[[Any, int], None]) -> Any:
        before = spark.conf.get(setting, None)
        spark.conf.set(setting, engine)
        try:
            return start(spark, folder, checkpoint, sink)
        finally:
            if before is None:
                spark.conf.unset(setting)
            else:
                spark.conf.set(setting, before)

    return started


def spl(spec: dict[str, Any], kinds: list[str] | None, engine: str = "auto") -> Starter:
    def start(spark: Any, folder: Path, checkpoint: str, sink: Callable[[Any, int], None]) -> Any:
        from trending import spl_window

        events = source(spark, folder).transform(
            spl_window, spec, key="k", order_by="id", kinds=kinds
        )
        return finish(events, checkpoint, sink, "append")

    return on_engine("spark.trending.spl.engine", engine, start)


def temporal(query: dict[str, Any], watermark: str, engine: str = "auto") -> Starter:
    def start(spark: Any, folder: Path, checkpoint: str, sink: Callable[[Any, int], None]) -> Any:
        from trending import temporal_window

        rows = source(spark, folder).transform(
            temporal_window, query, key="k", start="ts", watermark=watermark
        )
        return finish(rows, checkpoint, sink, "append")

    return on_engine("spark.trending.temporal.engine", engine, start)


def topk(size: str, hop: str, k: int, lateness: str) -> Starter:
    def start(spark: Any, folder: Path, checkpoint: str, sink: Callable[[Any, int], None]) -> Any:
        from trending import SlidingTopK

        top = SlidingTopK(size=size, hop=hop, k=k, lateness=lateness)
        return top.start(
            source(spark, folder), sink, key="k", time="ts", checkpoint=checkpoint,
            trigger={"availableNow": True},
        )  # fmt: skip

    return start


# ---- the runs -----------------------------------------------------------------------------------


class OutputRows:
    """``foreachBatch`` sink (or ``SlidingTopK`` handle): counts the rows it is handed."""

    def __init__(self) -> None:
        self.rows = 0

    def __call__(self, batch: Any, batch_id: int) -> None:
        self.rows += batch.count()


@dataclass
class Run:
    seconds: float
    rows: int  # input rows Spark read
    batches: int  # micro-batches, those without new rows included
    output: int
    busy: float | None  # the machine's busy cores
    own: float  # this process tree's CPU seconds / wall seconds
    error: str | None = None
    per_batch: list[tuple[int, float]] = field(default_factory=list)  # rows, seconds


@dataclass
class Result:
    case: str
    contender: str
    data: Run | None = None
    empty: Run | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def error(self) -> str | None:
        for run in (self.data, self.empty):
            if run is not None and run.error:
                return run.error
        return None

    def rate_with_startup(self) -> float | None:
        """Also of a run stopped or failed part-way, over the rows it read."""
        if self.data is None or not self.data.rows:
            return None
        return self.data.rows / self.data.seconds

    def rate_without_startup(self) -> float | None:
        if self.data is None or self.empty is None or self.error:
            return None
        net = self.data.seconds - self.empty.seconds
        return self.data.rows / net if net > 0 else None


def short_error(error: BaseException) -> str:
    """The error's first lines, without the JVM's stack trace."""
    lines = [line for line in str(error).splitlines() if line.strip()]
    kept = [line for line in lines if not line.lstrip().startswith("at ")][:6]
    return f"{type(error).__name__}: " + " / ".join(kept)[:1200]


def timed_run(
    label: str, spark: Any, start: Starter, folder: Path, checkpoint: str, timeout: float,
    cpu: CpuSampler,
) -> Run:  # fmt: skip
    """One query from ``start()`` until it ends (availableNow), with a progress line every
    ``PROGRESS_SECONDS``; stopped after ``timeout`` seconds."""
    sink = OutputRows()
    began, wall = time.monotonic(), time.time()
    with OwnCpu() as own:
        query, error = await_query(label, spark, start, folder, checkpoint, sink, timeout, began)
    seconds = time.monotonic() - began
    progress = query.recentProgress if query is not None else []
    if query is not None and query.isActive:
        query.stop()
    return Run(
        seconds=seconds,
        rows=sum(p.numInputRows for p in progress),
        batches=len(progress),
        output=sink.rows,
        busy=cpu.busy_cores(wall, time.time()),
        own=own.seconds() / seconds,
        error=error,
        per_batch=[(p.numInputRows, p.batchDuration / 1000) for p in progress],
    )


def await_query(
    label: str, spark: Any, start: Starter, folder: Path, checkpoint: str, sink: OutputRows,
    timeout: float, began: float,
) -> tuple[Any, str | None]:  # fmt: skip
    """Start the query and wait for its end: ``(query or None, error)``."""
    query, error = None, None
    try:
        query = start(spark, folder, checkpoint, sink)
        while not query.awaitTermination(PROGRESS_SECONDS):
            elapsed = time.monotonic() - began
            done = query.recentProgress
            rows = sum(p.numInputRows for p in done)
            status = query.status.get("message", "")
            print(f"    {label}: {elapsed:.0f} s, {len(done)} micro-batches done, {rows:,} rows "
                  f"read; {status}", flush=True)  # fmt: skip
            if elapsed > timeout:
                error = f"stopped after {timeout:.0f} s (timeout), {rows:,} rows read"
                query.stop()
                break
    except Exception as failure:  # a failed query raises StreamingQueryException here
        error = short_error(failure)
    return query, error


def measure(
    spark: Any, case: str, name: str, start: Starter, folder: Path, work: Path, timeout: float,
    cpu: CpuSampler,
) -> Result:  # fmt: skip
    """The run over all files, then the run with nothing to read, on one checkpoint."""
    result = Result(case, name)
    checkpoint = str(work / "checkpoints" / f"{case}-{slug(name)}")
    print(f"  {case} | {name}: run over the input", flush=True)
    result.data = timed_run(f"{case} | {name}", spark, start, folder, checkpoint, timeout, cpu)
    show(result.data)
    if result.data.error:
        return result
    print(f"  {case} | {name}: run with nothing to read, same checkpoint", flush=True)
    result.empty = timed_run(f"{case} | {name}", spark, start, folder, checkpoint, timeout, cpu)
    show(result.empty)
    if result.empty.rows:
        result.notes.append(f"the run with nothing to read read {result.empty.rows} rows")
    return result


def warm_up(
    spark: Any, case: str, name: str, start: Starter, folder: Path, work: Path, cpu: CpuSampler
) -> None:
    checkpoint = str(work / "checkpoints" / f"warmup-{case}-{slug(name)}")
    run = timed_run(f"warm-up {case} | {name}", spark, start, folder, checkpoint, 600, cpu)
    state = f"error: {run.error}" if run.error else f"{run.seconds:.1f} s"
    print(f"  warm-up {case} | {name}: {state}", flush=True)


def show(run: Run) -> None:
    text = (
        f"    {run.seconds:.1f} s, {run.rows:,} rows read, {run.batches} micro-batches, "
        f"{run.output:,} output rows"
    )
    print(text + (f"; error: {run.error}" if run.error else ""), flush=True)
    if run.rows:
        batches = ", ".join(f"{rows:,} rows {seconds:.1f} s" for rows, seconds in run.per_batch)
        print(f"    micro-batches: {batches}", flush=True)


def slug(name: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in name).strip("-").lower()


# ---- the cases ----------------------------------------------------------------------------------


@dataclass
class Case:
    name: str
    params: str
    columns: dict[str, Any]
    files: list[tuple[int, int]]
    contenders: list[tuple[str, Starter]]


def code(value: Any) -> str:
    return json.dumps(value)


def python_core(args: argparse.Namespace, name: str, start: Starter) -> list[tuple[str, Starter]]:
    """The function on its Python core (the engine setting ``python``) as a contender of its
    own, with ``--python-core``: what the JVM core buys, in the same run."""
    return [(f"{name}, Python core", start)] if args.python_core else []


def cases(args: argparse.Namespace) -> list[Case]:
    out = []
    step = args.step_ms
    lateness = f"{args.lateness_s} seconds"
    if "spl-tumbling" in args.cases:
        n, keys = args.spl_count, args.spl_keys
        spec: dict[str, Any] = {
            "kind": "tumbling",
            "evict": {"count": n},
            "summaries": {"n": "count", "sum": {"sum": "v"}},
            "keep_tuples": args.spl_keep_tuples,
        }
        kinds = ["before_flush"]
        window_ms = n * keys * step  # a key's N rows per window
        out.append(Case(
            "spl-tumbling",
            f"{args.spl_rows:,} rows of {keys:,} keys (round robin, {step} ms apart) in "
            f"{args.files} files; spl_window `{code(spec)}` per key, `kinds={code(kinds)}`, "
            "`order_by=id`; "
            f"built-in: tumbling window of {window_ms:,} ms (about {n:,} rows per key), "
            f"watermark {lateness}",
            round_robin(args.spl_rows, keys, step),
            even_cuts(args.spl_rows, args.files),
            [("trending.spl_window", spl(spec, kinds)),
             *python_core(args, "trending.spl_window", spl(spec, kinds, "python")),
             (BUILTIN, builtin(f"{window_ms} milliseconds", f"{window_ms} milliseconds",
                               lateness))],
        ))  # fmt: skip
    if "spl-eviction" in args.cases:
        p, rows, files = args.partitions, args.evicting_rows, args.evicting_files
        spec = {
            "kind": "sliding",
            "evict": {"count": 4},
            "partition_by": "k",
            "partition_eviction": {"count": p},
        }
        cuts = [(0, p)] + [(p + a, p + b) for a, b in even_cuts(rows, files)]
        out.append(Case(
            "spl-eviction",
            f"{p:,} rows opening {p:,} partitions in one file, then {rows:,} rows of new keys "
            f"in {files} files (every row evicts a partition), {step} ms apart; spl_window "
            f"`{code(spec)}`, every event, `order_by=id`; built-in: tumbling window of 1 minute, "
            f"watermark {lateness}",
            fresh_keys(p, rows, step),
            cuts,
            [("trending.spl_window", spl(spec, None)),
             *python_core(args, "trending.spl_window", spl(spec, None, "python")),
             (BUILTIN, builtin("1 minute", "1 minute", lateness))],
        ))  # fmt: skip
    if "temporal-tumbling" in args.cases:
        query = {"kind": "tumbling", "duration": args.temporal_window, "aggregate": "count"}
        keys, rows = args.temporal_keys, args.temporal_rows
        out.append(Case(
            "temporal-tumbling",
            f"{rows:,} point events of {keys:,} keys (round robin, {step} ms apart) in "
            f"{args.files} files; temporal_window `{code(query)}` per key, watermark {lateness}; "
            f"built-in: the same tumbling windows, watermark {lateness}",
            round_robin(rows, keys, step),
            even_cuts(rows, args.files),
            [("trending.temporal_window", temporal(query, lateness)),
             *python_core(args, "trending.temporal_window", temporal(query, lateness, "python")),
             (BUILTIN, builtin(args.temporal_window_spark, args.temporal_window_spark,
                               lateness))],
        ))  # fmt: skip
    if "sliding-topk" in args.cases:
        keys, rows = args.topk_keys, args.topk_rows
        out.append(Case(
            "sliding-topk",
            f"{rows:,} rows of {keys:,} distinct keys (Zipf skew {args.topk_skew}), "
            f"{args.topk_step_ms} ms apart and up to {args.topk_jitter_ms} ms out of order, in "
            f"{args.files} files; `SlidingTopK(size=\"5m\", hop=\"1m\", k={args.topk_k}, "
            f"lateness=\"{args.lateness_s}s\")` via `topk.start`; built-in: "
            f"`window(ts, \"5 minutes\", \"1 minute\")`, watermark {lateness}",
            skewed(rows, keys, args.topk_step_ms, args.topk_skew, args.topk_jitter_ms),
            even_cuts(rows, args.files),
            [("trending.SlidingTopK", topk("5m", "1m", args.topk_k, f"{args.lateness_s}s")),
             (BUILTIN, builtin("5 minutes", "1 minute", lateness))],
        ))  # fmt: skip
    return out


# ---- the report ---------------------------------------------------------------------------------

HEADERS = (
    "case", "contender", "input rows", "micro-batches", "wall s", "wall s, nothing to read",
    "rows/s incl. start-up", "rows/s excl. start-up", "output rows", "own cores",
    "machine busy cores",
)  # fmt: skip


def cells(result: Result) -> list[str]:
    data, empty = result.data, result.empty

    def rate(value: float | None) -> str:
        return "-" if value is None else f"{value:,.0f}"

    return [
        result.case,
        result.contender,
        "-" if data is None else f"{data.rows:,}",
        "-" if data is None else str(data.batches),
        "-" if data is None else f"{data.seconds:.1f}",
        "-" if empty is None else f"{empty.seconds:.1f}",
        rate(result.rate_with_startup()) + (" (stopped)" if result.error else ""),
        rate(result.rate_without_startup()),
        "-" if data is None else f"{data.output:,}",
        "-" if data is None else f"{data.own:.2f}",
        "-" if data is None or data.busy is None else f"{data.busy:.2f}",
    ]


def print_table(results: list[Result]) -> None:
    rows = [list(HEADERS)] + [cells(r) for r in results]
    widths = [max(len(row[i]) for row in rows) for i in range(len(HEADERS))]
    print()
    for number, row in enumerate(rows):
        print("  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in
                        enumerate(zip(row, widths, strict=True))))  # fmt: skip
        if number == 0:
            print("  ".join("-" * w for w in widths))
    for result in results:
        if result.error:
            print(f"{result.case} | {result.contender}: {result.error}")
        for note in result.notes:
            print(f"{result.case} | {result.contender}: {note}")


def markdown(
    path: Path, results: list[Result], case_list: list[Case], settings: dict[str, str],
    total_seconds: float, spark_version: str,
) -> None:  # fmt: skip
    lines = [
        "# The library's windows beside Spark's built-in windowed count",
        "",
        report.measured(__file__, total_seconds, spark_version=spark_version, master="local[2]"),
        "",
        *report.table(HEADERS, [cells(r) for r in results], left=2),
    ]
    lines += [
        "",
        "Rows/s including start-up: input rows / wall seconds of the run over all files (query "
        "start to end). Excluding start-up: input rows / (that run's seconds - the seconds of a "
        "run on the same checkpoint with nothing to read). Own cores: CPU seconds of the "
        "benchmark's processes (driver, JVM, Python workers) per wall second; machine busy "
        "cores: every process's; both during the run over the input. Output rows: the rows "
        "the sink got: the built-in emits a window's count in each micro-batch that changes it; "
        "`spl_window` and `temporal_window` their events and final rows, `SlidingTopK` a row per "
        "window whose top-k changed or closed.",
        "",
        "Input: Parquet files generated before the runs, read by the streaming file source "
        "(`maxFilesPerTrigger=1`, `trigger(availableNow=True)`: one micro-batch per file), the "
        "same files for both contenders of a case; output counted by a `foreachBatch` sink (the "
        "`SlidingTopK` handle). The built-in runs in update output mode with a watermark.",
        "",
    ]
    for case in case_list:
        lines.append(f"* `{case.name}`: {case.params}.")
    lines += ["", "Session settings: " + ", ".join(f"`{k}={v}`" for k, v in settings.items())]
    errors = [r for r in results if r.error or r.notes]
    if errors:
        lines.append("")
        for r in errors:
            for text in ([r.error] if r.error else []) + r.notes:
                lines.append(f"* {r.case}, {r.contender}: {text}")
    report.write(path, lines)


# ---- main ---------------------------------------------------------------------------------------


def session(shuffle_partitions: int) -> tuple[Any, dict[str, str]]:
    """A plain session, as a library user builds one, with what the library documents."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    settings = {
        PROVIDER_CONF: ROCKSDB,
        "spark.sql.shuffle.partitions": str(shuffle_partitions),
        "spark.sql.streaming.numRecentProgressUpdates": "1000",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
    }
    builder = SparkSession.builder.master("local[2]").appName("bench-library")
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark, settings


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    add = parser.add_argument
    add("--cases", default=",".join(CASES), help=f"comma-separated, of {', '.join(CASES)}")
    add("--files", type=int, default=4, help="input files (micro-batches) per case")
    add("--step-ms", type=int, default=10, help="event time between rows")
    add("--lateness-s", type=int, default=30, help="watermark delay, every contender")
    add("--spl-rows", type=int, default=100_000)
    add("--spl-keys", type=int, default=1_000)
    add("--spl-count", type=int, default=50, help="N of the tumbling count(N) window")
    add("--spl-keep-tuples", action="store_true", help="keep the window's tuples too")
    add("--partitions", type=int, default=10_000, help="P of partitionCount(P)")
    add("--evicting-rows", type=int, default=10_000, help="rows of new keys after the first file")
    add("--evicting-files", type=int, default=2)
    add("--temporal-rows", type=int, default=100_000)
    add("--temporal-keys", type=int, default=1_000)
    add("--temporal-window", default="1m")
    add("--topk-rows", type=int, default=500_000)
    add("--topk-keys", type=int, default=100_000, help="distinct keys")
    add("--topk-skew", type=float, default=1.1, help="Zipf exponent of the keys")
    add("--topk-step-ms", type=int, default=2)
    add("--topk-jitter-ms", type=int, default=5_000)
    add("--topk-k", type=int, default=10)
    add(
        "--python-core",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also run spl_window and temporal_window on their Python core",
    )
    add("--shuffle-partitions", type=int, default=2)
    add("--warmup-rows", type=int, default=2_000, help="0: no warm-up runs")
    add("--timeout", type=float, default=600, help="seconds before a run is stopped")
    add("--markdown", type=Path, help="also write the table as Markdown to this file")
    args = parser.parse_args()
    args.cases = [c for c in args.cases.split(",") if c]
    unknown = set(args.cases) - set(CASES)
    if unknown:
        parser.error(f"unknown cases {sorted(unknown)}: choose from {', '.join(CASES)}")
    args.temporal_window_spark = spark_interval(args.temporal_window)
    return args


def spark_interval(duration: str) -> str:
    from trending.durations import parse_duration_ms

    return f"{parse_duration_ms(duration)} milliseconds"


def main() -> int:
    args = parse_args()
    began = time.monotonic()
    case_list = cases(args)
    results: list[Result] = []
    warmed: set[str] = set()
    with tempfile.TemporaryDirectory(prefix="bench-library-") as tmp, CpuSampler() as cpu:
        work = Path(tmp)
        print(f"input: Parquet files in {work}", flush=True)
        for case in case_list:
            write_files(work / case.name / "in", case.columns, case.files)
            if args.warmup_rows:
                write_files(work / case.name / "warmup", case.columns, [(0, args.warmup_rows)])
            print(f"  {case.name}: {case.params}", flush=True)
        spark, settings = session(args.shuffle_partitions)
        try:
            print(f"Spark {spark.version}, local[2], {settings}", flush=True)
            for case in case_list:
                print(f"case {case.name}", flush=True)
                for name, start in case.contenders:
                    if args.warmup_rows and name not in warmed:
                        warm_up(spark, case.name, name, start, work / case.name / "warmup",
                                work, cpu)  # fmt: skip
                        warmed.add(name)
                for name, start in case.contenders:
                    result = measure(spark, case.name, name, start, work / case.name / "in",
                                     work, args.timeout, cpu)  # fmt: skip
                    results.append(result)
            version = spark.version
        finally:
            spark.stop()
    total = time.monotonic() - began
    print_table(results)
    print(f"\nall runs: {total:.0f} s")
    if args.markdown:
        markdown(args.markdown, results, case_list, settings, total, version)
    return 1 if any(r.error for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
