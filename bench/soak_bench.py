"""`make soak`: the hashtags job at a steady rate for ``--minutes``; is its memory flat?

A benchmark, not a test: it prints a table and a verdict, and exits non-zero only when the job
or the producer dies. On a local broker (``$KAFKA_BOOTSTRAP_SERVERS`` when set), it runs

* ``trending run hashtags`` on local[2] with small windows (``--size 1m --hop 10s``, lateness
  5s, trigger 1s), so that windows close and Spark's timers purge state within the warm-up;
* ``trending produce tweets --rate R --events-per-second R --start-ms <now>``: R tweets/s of
  wall time whose event times follow the wall clock (bursts off, ``--burst-share 0``);

and every ``--interval`` seconds prints one row: the input rate (topic growth), the job's read
and output rates, Kafka lag, mean batch duration, watermark delay; the state of Spark's operator
(``StreamingQueryProgress.stateOperators[]``: numRowsTotal, counted for the soak with
``--conf spark.sql.streaming.stateStore.rocksdb.trackTotalNumberOfRows=true``, which the jobs
leave off, and memoryUsedBytes) and its files in the checkpoint; the driver's top-k entries;
the driver JVM's live heap (the total of ``jcmd GC.class_histogram``, which runs a full GC
first; the metrics endpoint exports no heap) and committed heap (``GC.heap_info``); the resident
memory of the JVM and of the Python processes (the driver and any Python workers). The job's
figures come from its Prometheus endpoint (``trending_*``, trending/metrics.py).

Verdict: the first ``--warmup`` samples are dropped; a series is FLAT when the mean of the last
half of the rest is within its tolerance of the mean of the first half (10% for rows and
resident memory, 20% for heap and state memory), else GROWING (or FALLING). The slope is a least-
squares fit per minute over the samples after the warm-up. RocksDB's memory and files still grow
for about 5 minutes here (2 cores): ``--warmup 5`` gives a stricter verdict. ``--conf`` passes a
Spark setting to the job (e.g. ``spark.sql.ui.retainedExecutions=20``, to see how much of the
heap's growth is the driver's status store). Logs and the checkpoint stay in build/bench/soak/.
``--markdown PATH`` also writes the samples, the verdict, the parameters and the command to a
Markdown file.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import report as md
from bench.procmem import bench_broker, tree_rss_bytes
from bench.trending_bench import topic_size
from connectors.broker import free_port
from connectors.jvm import java_executable
from connectors.kafka import admin, ensure_topics

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
CLI = [PY, "-m", "trending.cli"]
TRACK_ROWS = "spark.sql.streaming.stateStore.rocksdb.trackTotalNumberOfRows"  # off in the jobs
DRIVER_TOPK = "driver_topk"  # trending.metrics.DRIVER_OPERATOR: the driver's top-k entries
HEAP_LINE = re.compile(r"total (\d+)K, used (\d+)K")  # G1: one line; serial/parallel: per gen
HISTOGRAM_TOTAL = re.compile(r"^Total\s+\d+\s+(\d+)\s*$", re.MULTILINE)  # instances, bytes
MB = 2**20


class JobDied(RuntimeError):
    """The job or the producer exited before the end of the soak."""


# ---- processes ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Topics:
    tweets: str
    output: str
    late: str
    dead: str

    @classmethod
    def fresh(cls) -> Topics:
        run = f"soak-{uuid.uuid4().hex[:8]}"
        return cls(f"{run}-tweets", f"{run}-trending", f"{run}-late", f"{run}-dlq")

    def all(self) -> list[str]:
        return [self.tweets, self.output, self.late, self.dead]


def launch(command: list[str], log: Path) -> subprocess.Popen[bytes]:
    """``command`` in its own session (Ctrl-C reaches only the bench, which stops it in order),
    output to ``log``."""
    with log.open("wb") as out:
        return subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def start_job(
    args: argparse.Namespace, bootstrap: str, topics: Topics, run_dir: Path, port: int
) -> subprocess.Popen[bytes]:
    command = [
        *CLI, "run", "hashtags", "--master", "local[2]", "--shuffle-partitions", "2",
        "--size", args.size, "--hop", args.hop, "--lateness", args.lateness,
        "--trigger", args.trigger, "--bootstrap-servers", bootstrap,
        "--input-topic", topics.tweets, "--output-topic", topics.output,
        "--late-topic", topics.late, "--dead-letter-topic", topics.dead,
        "--checkpoint", str(run_dir / "checkpoint"), "--metrics-port", str(port),
    ]  # fmt: skip
    for setting in (f"{TRACK_ROWS}=true", *args.conf):  # count the state's rows (a soak's cost)
        command += ["--conf", setting]
    return launch(command, run_dir / "job.log")


def start_producer(
    args: argparse.Namespace, bootstrap: str, topic: str, run_dir: Path
) -> subprocess.Popen[bytes]:
    """Tweets at ``args.rate`` per second of wall time, event time = wall-clock time, for longer
    than the soak (it is stopped at the end)."""
    count = int(args.rate * (args.minutes * 60 + 600))
    command = [
        *CLI, "produce", "tweets", "--topic", topic, "--bootstrap-servers", bootstrap,
        "--count", str(count), "--rate", str(args.rate), "--events-per-second", str(args.rate),
        "--start-ms", str(int(time.time() * 1000)), "--burst-share", "0", "--seed", "7",
        "--quiet",
    ]  # fmt: skip
    return launch(command, run_dir / "producer.log")


def stop(process: subprocess.Popen[bytes] | None, sig: int, timeout: float) -> None:
    """Send ``sig``; kill the process group if it has not exited after ``timeout`` seconds."""
    if process is None or process.poll() is not None:
        return
    process.send_signal(sig)
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def tail(path: Path, lines: int = 25) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


def check_alive(processes: dict[str, subprocess.Popen[bytes]], run_dir: Path) -> None:
    for name, process in processes.items():
        if process.poll() is not None:
            log = tail(run_dir / f"{name}.log")
            raise JobDied(f"the {name} exited with code {process.returncode}:\n{log}")


@contextmanager
def signals_as_interrupt() -> Iterator[None]:
    """Ctrl-C and ``kill <bench>`` raise KeyboardInterrupt, which stops everything in order
    (also when the bench was started with SIGINT ignored, as ``cmd &`` in a script does)."""

    def interrupt(_signum: int, _frame: object) -> None:
        raise KeyboardInterrupt

    previous = {sig: signal.signal(sig, interrupt) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


# ---- measuring ---------------------------------------------------------------------------------


Scrape = dict[str, list[tuple[dict[str, str], float]]]  # sample name -> (labels, value) pairs


def scrape(url: str) -> Scrape:
    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(url, timeout=10) as response:
        text = response.read().decode()
    found: Scrape = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            found.setdefault(s.name, []).append((s.labels, s.value))
    return found


def total(
    metrics: Scrape, name: str, keep: Callable[[dict[str, str]], bool] = lambda _: True
) -> float:
    """Sum of the samples of ``name`` whose labels pass ``keep`` (default: all of them)."""
    return sum(v for labels, v in metrics.get(name, ()) if keep(labels))


def wait_ready(job: subprocess.Popen[bytes], url: str, run_dir: Path, timeout: float) -> float:
    """Seconds until the job's query is active (its metrics say so)."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        check_alive({"job": job}, run_dir)
        try:
            active = scrape(url).get("trending_query_status", [])
            if any(labels == {"state": "active"} and v == 1 for labels, v in active):
                return time.monotonic() - started
        except OSError:
            pass
        time.sleep(1)
    raise JobDied(f"the job was not running after {timeout:.0f}s:\n{tail(run_dir / 'job.log')}")


def children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return found


def driver_jvm(pid: int) -> int | None:
    """The first ``java`` process below ``pid``: PySpark's driver JVM."""
    queue = children(pid)
    while queue:
        child = queue.pop(0)
        try:
            if Path(f"/proc/{child}/comm").read_text().strip() == "java":
                return child
        except OSError:
            continue
        queue += children(child)
    return None


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def folder_bytes(folder: Path) -> int:
    """Bytes of the files under ``folder`` (files deleted meanwhile count 0)."""
    size = 0
    for path in folder.rglob("*"):
        try:
            size += path.stat().st_size if path.is_file() else 0
        except OSError:
            continue
    return size


def find_jcmd() -> str | None:
    beside = Path(java_executable()).resolve().with_name("jcmd")
    return str(beside) if beside.exists() else shutil.which("jcmd")


def jcmd(tool: str, pid: int, command: str) -> str:
    done = subprocess.run(
        [tool, str(pid), command], capture_output=True, text=True, timeout=60, check=True
    )
    return done.stdout


def heap_bytes(tool: str | None, pid: int, live: bool) -> tuple[float, float]:
    """(used, committed) heap bytes of JVM ``pid``; NaN when jcmd is missing or fails.

    ``live``: the bytes of the objects a full GC keeps, counted in the same pause
    (``GC.class_histogram``). ``GC.run`` then ``GC.heap_info`` is two attaches apart, and the
    job allocates tens of MB in between: that read 130-250 MB for a live set of 120-135 MB.
    """
    if tool is None:
        return math.nan, math.nan
    try:
        pairs = HEAP_LINE.findall(jcmd(tool, pid, "GC.heap_info"))
        histogram = HISTOGRAM_TOTAL.search(jcmd(tool, pid, "GC.class_histogram")) if live else None
    except (OSError, subprocess.SubprocessError):
        return math.nan, math.nan
    committed = sum(int(t) for t, _ in pairs) * 1024.0 if pairs else math.nan
    if histogram is not None:
        return float(histogram.group(1)), committed
    if live or not pairs:
        return math.nan, committed
    return sum(int(u) for _, u in pairs) * 1024.0, committed


@dataclass
class Sample:
    """Cumulative counters and current levels at ``seconds`` after the producer started."""

    seconds: float
    produced: int
    read: float
    written: float
    batch_seconds: float
    batches: float
    lag: float
    watermark_delay: float
    state_rows: float
    state_bytes: float
    state_disk: float
    topk_rows: float
    heap: float
    heap_committed: float
    python_rss: float
    jvm_rss: float


@dataclass
class Probe:
    """Where the figures of one soak come from."""

    url: str
    bootstrap: str
    state_dir: Path
    topics: Topics
    job_pid: int
    jvm_pid: int | None
    jcmd: str | None
    live_heap: bool

    def sample(self, seconds: float) -> Sample:
        m = scrape(self.url)

        def spark_operator(labels: dict[str, str]) -> bool:
            return labels.get("operator") != DRIVER_TOPK

        def output(labels: dict[str, str]) -> bool:
            return labels.get("topic") == self.topics.output

        tree = tree_rss_bytes(self.job_pid)
        jvm = rss_bytes(self.jvm_pid) if self.jvm_pid else 0
        heap, committed = (
            heap_bytes(self.jcmd, self.jvm_pid, self.live_heap) if self.jvm_pid else (math.nan,) * 2
        )
        return Sample(
            seconds=seconds,
            produced=topic_size(self.bootstrap, self.topics.tweets),
            read=total(m, "trending_input_rows_total"),
            written=total(m, "trending_kafka_records_written_total", output),
            batch_seconds=total(m, "trending_batch_duration_seconds_sum"),
            batches=total(m, "trending_batch_duration_seconds_count"),
            lag=total(m, "trending_kafka_lag_records"),
            watermark_delay=total(m, "trending_watermark_delay_seconds"),
            state_rows=total(m, "trending_state_rows", spark_operator),
            state_bytes=total(m, "trending_state_memory_bytes", spark_operator),
            state_disk=folder_bytes(self.state_dir),
            topk_rows=total(m, "trending_state_rows", lambda labels: not spark_operator(labels)),
            heap=heap,
            heap_committed=committed,
            python_rss=tree - jvm,  # the driver's Python and any Python workers below the JVM
            jvm_rss=jvm,
        )


# ---- reporting ---------------------------------------------------------------------------------

COLUMNS = (
    ("min", 6),
    ("prod/s", 9),
    ("read/s", 9),
    ("out/s", 8),
    ("lag", 8),
    ("batch ms", 9),
    ("wm lag s", 9),
    ("state rows", 11),
    ("state MB", 9),
    ("ckpt MB", 8),
    ("topk rows", 10),
    ("heap MB", 9),
    ("heap cap", 9),
    ("py RSS MB", 10),
    ("jvm RSS MB", 11),
)


def header() -> str:
    return "".join(f"{name:>{width}}" for name, width in COLUMNS)


def row(before: Sample, now: Sample) -> str:
    cells = row_cells(before, now)
    return "".join(f"{cell:>{width}}" for cell, (_, width) in zip(cells, COLUMNS, strict=True))


def row_cells(before: Sample, now: Sample) -> tuple[str, ...]:
    span = max(now.seconds - before.seconds, 1e-9)
    batches = now.batches - before.batches
    return (
        f"{now.seconds / 60:.1f}",
        f"{(now.produced - before.produced) / span:,.0f}",
        f"{(now.read - before.read) / span:,.0f}",
        f"{(now.written - before.written) / span:,.1f}",
        f"{now.lag:,.0f}",
        f"{1000 * (now.batch_seconds - before.batch_seconds) / batches:,.0f}" if batches else "-",
        f"{now.watermark_delay:.1f}",
        f"{now.state_rows:,.0f}" if now.state_rows or not now.state_bytes else "untracked",
        f"{now.state_bytes / MB:,.1f}",
        f"{now.state_disk / MB:,.1f}",
        f"{now.topk_rows:,.0f}",
        _mb(now.heap),
        _mb(now.heap_committed),
        f"{now.python_rss / MB:,.0f}",
        f"{now.jvm_rss / MB:,.0f}",
    )


def _mb(value: float) -> str:
    return "-" if math.isnan(value) else f"{value / MB:,.0f}"


@dataclass(frozen=True)
class Series:
    name: str
    value: Callable[[Sample], float]
    tolerance: float
    unit: float = 1.0  # divide by this to print (MB for bytes)
    when_zero: str = ""  # what it means when every sample is 0


SERIES = (
    Series(
        "state rows (Spark)",
        lambda s: s.state_rows,
        0.10,
        when_zero=f"not tracked: {TRACK_ROWS} is false; see state memory and disk",
    ),
    Series("state memory MB", lambda s: s.state_bytes, 0.20, MB),
    Series("state on disk MB", lambda s: s.state_disk, 0.20, MB),
    Series("driver top-k rows", lambda s: s.topk_rows, 0.10),
    Series("JVM heap MB", lambda s: s.heap, 0.20, MB),
    Series("Python RSS MB", lambda s: s.python_rss, 0.10, MB),
    Series("JVM RSS MB", lambda s: s.jvm_rss, 0.10, MB),
)


@dataclass(frozen=True)
class Trend:
    first: float  # mean of the first half after the warm-up
    last: float  # mean of the last half
    slope: float  # per minute, least squares

    @property
    def change(self) -> float:
        if self.first == 0:
            return 0.0 if self.last == 0 else math.inf
        return (self.last - self.first) / abs(self.first)

    def label(self, tolerance: float) -> str:
        if abs(self.change) <= tolerance:
            return "FLAT"
        return "GROWING" if self.change > 0 else "FALLING"


def trend(points: list[tuple[float, float]]) -> Trend:
    """Halves and slope of ``(minute, value)`` points (at least 2)."""
    values = [v for _, v in points]
    half = len(values) // 2
    first, last = values[:half], values[len(values) - half :]
    mx = sum(t for t, _ in points) / len(points)
    my = sum(values) / len(values)
    spread = sum((t - mx) ** 2 for t, _ in points)
    slope = sum((t - mx) * (v - my) for t, v in points) / spread if spread else 0.0
    return Trend(sum(first) / half, sum(last) / half, slope)


def judged(kept: list[Sample]) -> list[tuple[Series, Trend | str]]:
    """Each series' trend over the samples ``kept``, or why it has none (``n/a``: a sample
    lacks it; else what its being 0 throughout means)."""
    out: list[tuple[Series, Trend | str]] = []
    for s in SERIES:
        points = [(x.seconds / 60, s.value(x) / s.unit) for x in kept]
        if any(math.isnan(v) for _, v in points):
            out.append((s, "n/a"))
        elif s.when_zero and not any(v for _, v in points):
            out.append((s, s.when_zero))
        else:
            out.append((s, trend(points)))
    return out


def verdict_title(kept: list[Sample], warmup: int) -> str:
    if len(kept) < 2:
        return f"verdict: too few samples after the warm-up ({len(kept)}; need 2)"
    return (
        f"verdict over {len(kept)} samples from minute {kept[0].seconds / 60:.1f} "
        f"({warmup} warm-up samples dropped):"
    )


def lag_line(kept: list[Sample]) -> str:
    return f"{'kafka lag (records)':<20}max {max(x.lag for x in kept):,.0f} after the warm-up"


def verdict(samples: list[Sample], warmup: int) -> list[str]:
    kept = samples[warmup:]
    if len(kept) < 2:
        return [verdict_title(kept, warmup)]
    lines = [
        verdict_title(kept, warmup),
        f"{'series':<20}{'first half':>12}{'last half':>12}{'change':>9}{'slope/min':>11}"
        f"{'tolerance':>11}  verdict",
    ]
    for s, t in judged(kept):
        if t == "n/a":
            lines.append(f"{s.name:<20}{'n/a':>12}")
        elif isinstance(t, str):
            lines.append(f"{s.name:<20}  {t}")
        else:
            lines.append(
                f"{s.name:<20}{t.first:>12,.1f}{t.last:>12,.1f}{t.change:>+9.1%}"
                f"{t.slope:>+11,.2f}{s.tolerance:>11.0%}  {t.label(s.tolerance)}"
            )
    lines.append(lag_line(kept))
    return lines


VERDICT = ("series", "first half", "last half", "change", "slope/min", "tolerance", "verdict")


def markdown(
    path: Path, args: argparse.Namespace, baseline: Sample | None, samples: list[Sample],
    stopped: list[str], seconds: float,
) -> None:  # fmt: skip
    lines = [
        "# The hashtags job at a steady rate: is its memory flat?",
        "",
        md.measured(__file__, seconds, master="local[2]"),
        "",
        md.parameters({"minutes": args.minutes, "interval": args.interval,
                       "warmup": args.warmup, "rate": args.rate, "size": args.size,
                       "hop": args.hop, "lateness": args.lateness, "trigger": args.trigger,
                       "heap": "used" if args.no_gc else "live after a full GC",
                       "conf": " ".join(args.conf) or "none"}),
        "",
    ]  # fmt: skip
    if baseline is not None and samples:
        before = [baseline, *samples[:-1]]
        lines += [
            *md.table([name for name, _ in COLUMNS],
                      [row_cells(b, now) for b, now in zip(before, samples, strict=True)],
                      left=0),
            "",
            f"A sample every {args.interval:g} s: rates over the interval (tweets produced, read "
            "by the job, rows out), Kafka lag, mean batch duration, watermark delay; Spark's "
            "state (rows, memory, checkpoint files), the driver's top-k entries, the driver "
            "JVM's heap and committed heap (`heap cap`), resident memory of the Python "
            "processes and of the JVM.",
            "",
        ]  # fmt: skip
    kept = samples[args.warmup :]
    lines.append(verdict_title(kept, args.warmup))
    if len(kept) >= 2:
        rows = []
        for s, t in judged(kept):
            if isinstance(t, str):
                rows.append((s.name, "-", "-", "-", "-", f"{s.tolerance:.0%}", t))
            else:
                rows.append(
                    (
                        s.name,
                        f"{t.first:,.1f}",
                        f"{t.last:,.1f}",
                        f"{t.change:+.1%}",
                        f"{t.slope:+,.2f}",
                        f"{s.tolerance:.0%}",
                        t.label(s.tolerance),
                    )
                )
        lines += [
            "",
            *md.table(VERDICT, rows),
            "",
            f"Kafka lag: at most {max(x.lag for x in kept):,.0f} records after the warm-up. A "
            "series is FLAT when the mean of the last half of the samples after the warm-up is "
            "within its tolerance of the mean of the first half; the slope is a least-squares "
            "fit per minute.",
        ]  # fmt: skip
    if stopped:
        lines += ["", *(f"* {line.strip()}" for line in stopped)]
    md.write(path, lines)


# ---- the soak ----------------------------------------------------------------------------------


def soak(args: argparse.Namespace, bootstrap: str, run_dir: Path) -> int:
    topics = Topics.fresh()
    ensure_topics(bootstrap, topics.all(), 4)
    port = free_port()
    url = f"http://127.0.0.1:{port}/metrics"
    job = start_job(args, bootstrap, topics, run_dir, port)
    producer: subprocess.Popen[bytes] | None = None
    samples: list[Sample] = []
    baseline: Sample | None = None
    began = time.monotonic()
    try:
        ready = wait_ready(job, url, run_dir, timeout=300)
        print(f"job: query active after {ready:.0f}s (log {run_dir / 'job.log'})", flush=True)
        jvm = driver_jvm(job.pid)
        tool = find_jcmd()
        if jvm is None or tool is None:
            print("no driver JVM or no jcmd: the heap columns stay empty", flush=True)
        state_dir = run_dir / "checkpoint" / "spark" / "state"
        probe = Probe(url, bootstrap, state_dir, topics, job.pid, jvm, tool, not args.no_gc)
        producer = start_producer(args, bootstrap, topics.tweets, run_dir)
        started = time.monotonic()
        print(
            f"producer: {args.rate:,.0f} tweets/s to {topics.tweets}, event time = wall clock; "
            f"sampling every {args.interval:.0f}s for {args.minutes:g} min; heap: "
            f"{'used' if args.no_gc else 'live after a full GC'}\n",
            flush=True,
        )
        baseline = probe.sample(0.0)
        print(header(), flush=True)
        steps = max(1, round(args.minutes * 60 / args.interval))
        for step in range(1, steps + 1):
            wait_until(started + step * args.interval, {"job": job, "producer": producer}, run_dir)
            samples.append(probe.sample(time.monotonic() - started))
            print(row(samples[-2] if len(samples) > 1 else baseline, samples[-1]), flush=True)
    except KeyboardInterrupt:
        print("\ninterrupted: stopping", flush=True)
        return_code = 130
    except JobDied as error:
        print(f"\n{error}", flush=True)
        return_code = 1
    else:
        return_code = 0
    finally:
        stop(producer, signal.SIGTERM, 30)  # Python's default: exit at once
        stop(job, signal.SIGTERM, 120)
        _delete_topics(bootstrap, topics)
    print()
    for line in verdict(samples, args.warmup):
        print(line)
    stopped = []
    for line in (run_dir / "job.log").read_text(errors="replace").splitlines():
        if "job stopped" in line:
            print(line)
            stopped.append(line)
    if args.markdown:
        markdown(args.markdown, args, baseline, samples, stopped, time.monotonic() - began)
    return return_code


def wait_until(
    deadline: float, processes: dict[str, subprocess.Popen[bytes]], run_dir: Path
) -> None:
    while (left := deadline - time.monotonic()) > 0:
        check_alive(processes, run_dir)
        time.sleep(min(1.0, left))
    check_alive(processes, run_dir)


def _delete_topics(bootstrap: str, topics: Topics) -> None:
    client = admin(bootstrap, {"log_level": "4"})  # alive until acknowledged; no info lines
    try:
        for future in client.delete_topics(topics.all()).values():
            future.result()
    except Exception as error:  # cleanup only: report and go on
        print(f"could not delete the soak's topics: {error}", file=sys.stderr)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0, help="length of the soak (10)")
    parser.add_argument("--interval", type=float, default=60.0, help="seconds between samples")
    parser.add_argument("--warmup", type=int, default=2, help="samples left out of the verdict")
    parser.add_argument("--rate", type=float, default=2000.0, help="tweets per second (2000)")
    parser.add_argument("--size", default="1m", help="window size (1m)")
    parser.add_argument("--hop", default="10s", help="window hop (10s)")
    parser.add_argument("--lateness", default="5s", help="allowed lateness (5s)")
    parser.add_argument("--trigger", default="1s", help="processing-time trigger (1s)")
    parser.add_argument("--no-gc", action="store_true", help="heap used now, not live after GC")
    parser.add_argument(
        "--conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Spark setting of the job",
    )
    parser.add_argument(
        "--markdown", type=Path, help="also write the tables as Markdown to this file"
    )
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", PY)
    run_dir = ROOT / "build" / "bench" / "soak"
    shutil.rmtree(run_dir / "checkpoint", ignore_errors=True)
    run_dir.mkdir(parents=True, exist_ok=True)
    try:
        with signals_as_interrupt(), bench_broker(ROOT / "build" / "bench" / "soak-broker") as b:
            return soak(args, b, run_dir)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
