"""`make bench-latency`: event-to-result latency of the hashtags job beside Spark's built-in
window count, on steady live input, measured from outside.

Per rate in ``--rates`` and per contender, on a topic of its own (2 partitions, the broker's
``LogAppendTime``, so a record's timestamp is when Kafka appended it):

* the contender starts in its own process: ``trending run hashtags`` (5m/1m windows, top 10,
  the default 1 s trigger, ``local[2]``), or Spark's ``groupBy(window(created_at, 5 minutes,
  1 minute), tag).count()`` in update mode with the same trigger, session and hashtag function,
  written by Spark's Kafka sink (``bench/latency_peer.py``);
* once its query has started, ``trending produce tweets`` in its own process sends tweets at the
  rate, event time = wall clock, for ``--warmup`` + ``--seconds``;
* a ``read_committed`` consumer in this process notes the time each result record becomes
  visible (its commit time; for Spark's non-transactional sink, when it is written).

A result record comes from the micro-batch whose start (``batchTimestampMs`` of Spark's
``offsets/N``) is the last one before the record was produced (its ``CreateTime``); it reflects
that micro-batch's tweets, the newest of which is the last record of each partition the batch
read up to (its end offsets in ``offsets/N``). Its latency is its visible time minus that
tweet's append time. Only records visible after the warm-up and before the sending stopped
count. Printed per run: p50, p99 and max latency over records, the records, the micro-batches'
durations (``commits/N`` written minus the batch's start: p50 and max) and the rate the tweets
were sent at. The sensors job (``--contenders sensors``) gets live readings at the rate and a
query per ten readings; a match's latency is from its query's event time (sent live: its append
time) to the match being visible, the watermark's wait (``--lateness``) included. Uses
``KAFKA_BOOTSTRAP_SERVERS`` when set, else a local broker.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.procmem import CpuSampler, bench_broker

ROOT = Path(__file__).resolve().parents[1]
CONTENDERS = {
    "job": "trending run hashtags",
    "builtin": "Spark groupBy(window).count()",
    "sensors": "trending run sensors (matches)",
}
QUERY_SHARE = 10  # the sensors run sends one query per this many readings
PARTITIONS = 2


@dataclass
class Batch:
    number: int
    start_ms: int  # batchTimestampMs
    end_s: float | None  # commits/N written (epoch s)
    ends: dict[int, int]  # partition -> end offset


@dataclass
class Result:
    contender: str
    rate: float
    sent_per_s: float = 0.0
    latencies: list[float] = field(default_factory=list)
    batch_seconds: list[float] = field(default_factory=list)
    cpu: float | None = None
    error: str | None = None

    def percentile(self, p: float) -> float | None:
        if not self.latencies:
            return None
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(len(ordered) * p))]


def python() -> str:
    return sys.executable


def trending(*args: str) -> list[str]:
    return [python(), "-m", "trending.cli", *args]


def contender_command(
    name: str, bootstrap: str, topic: str, out: str, checkpoint: Path, trigger_ms: int
) -> tuple[list[str], Path]:
    """The contender's command line and its Spark checkpoint folder."""
    if name == "sensors":
        command = trending(
            "run", "sensors", "--bootstrap-servers", bootstrap, "--readings-topic", topic,
            "--queries-topic", f"{topic}-q", "--matches-topic", out,
            "--popular-topic", f"{topic}-popular", "--late-topic", f"{topic}-late",
            "--dead-letter-topic", f"{topic}-dlq", "--checkpoint", str(checkpoint),
            "--trigger", f"{trigger_ms}ms", "--master", "local[2]", "--shuffle-partitions", "2",
            "--partitions", str(PARTITIONS), "--metrics-port", "0",
        )  # fmt: skip
        return command, checkpoint / "spark"
    if name == "job":
        command = trending(
            "run", "hashtags", "--bootstrap-servers", bootstrap, "--input-topic", topic,
            "--output-topic", out, "--late-topic", f"{topic}-late",
            "--dead-letter-topic", f"{topic}-dlq", "--checkpoint", str(checkpoint),
            "--trigger", f"{trigger_ms}ms", "--master", "local[2]", "--shuffle-partitions", "2",
            "--partitions", str(PARTITIONS), "--metrics-port", "0",
        )  # fmt: skip
        return command, checkpoint / "spark"
    peer = [python(), str(ROOT / "bench" / "latency_peer.py")]
    return [*peer, bootstrap, topic, out, str(checkpoint), str(trigger_ms)], checkpoint


class Watcher(threading.Thread):
    """A read_committed consumer noting (visible time, CreateTime ms) of each record, or with
    ``event_ms``, (visible time, the record's own event time in ms)."""

    def __init__(
        self, bootstrap: str, topic: str, event_ms: Callable[[bytes], int] | None = None
    ) -> None:
        super().__init__(daemon=True)
        from confluent_kafka import Consumer

        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": f"bench-latency-{os.getpid()}-{topic}",
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                "isolation.level": "read_committed",
                "fetch.wait.max.ms": 10,
            }
        )
        self.consumer.subscribe([topic])
        self.seen: list[tuple[float, int]] = []
        self.event_ms = event_ms
        self.stop = threading.Event()

    def run(self) -> None:
        try:
            while not self.stop.is_set():
                for message in self.consumer.consume(10_000, timeout=0.05):
                    if message.error() is not None:
                        continue
                    if self.event_ms is None:
                        self.seen.append((time.time(), message.timestamp()[1]))
                    else:
                        self.seen.append((time.time(), self.event_ms(message.value() or b"")))
        finally:
            self.consumer.close()


def read_batches(spark_checkpoint: Path, topic: str) -> list[Batch]:
    """The micro-batches of a query's checkpoint: start, commit time and end offsets."""
    batches = []
    for path in (spark_checkpoint / "offsets").glob("[0-9]*"):
        lines = path.read_text().splitlines()
        meta = json.loads(lines[1])
        sources = [json.loads(line) for line in lines[2:] if line.startswith("{")]
        ends = {}
        for source in sources:
            if topic in source:
                ends = {int(p): int(o) for p, o in source[topic].items()}
        commit = spark_checkpoint / "commits" / path.name
        end_s = commit.stat().st_mtime if commit.exists() else None
        batches.append(Batch(int(path.name), int(meta["batchTimestampMs"]), end_s, ends))
    return sorted(batches, key=lambda b: b.number)


def append_times(bootstrap: str, topic: str, wanted: set[tuple[int, int]]) -> dict[Any, int]:
    """The append time (ms) of each ``(partition, offset)`` of ``topic``."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-latency-lookup-{os.getpid()}",
            "enable.auto.commit": False,
        }
    )
    found: dict[Any, int] = {}
    try:
        for partition, offset in sorted(wanted):
            consumer.assign([TopicPartition(topic, partition, offset)])
            for message in consumer.consume(1, timeout=10):
                if message.error() is None and message.offset() == offset:
                    found[(partition, offset)] = message.timestamp()[1]
    finally:
        consumer.close()
    return found


def newest_tweets(bootstrap: str, topic: str, batches: list[Batch]) -> dict[int, int]:
    """Per micro-batch with new tweets, the append time (ms) of the newest one it read."""
    previous: dict[int, int] = {}
    last: dict[int, list[tuple[int, int]]] = {}
    for batch in batches:
        grown = [(p, end - 1) for p, end in batch.ends.items() if end > previous.get(p, 0)]
        if grown:
            last[batch.number] = grown
        previous = batch.ends
    times = append_times(bootstrap, topic, {x for xs in last.values() for x in xs})
    return {
        number: max(times[x] for x in points if x in times)
        for number, points in last.items()
        if any(x in times for x in points)
    }


def latencies(
    seen: list[tuple[float, int]],
    batches: list[Batch],
    newest: dict[int, int],
    since: float,
    until: float,
) -> list[float]:
    """Seconds from the newest tweet of its micro-batch to each record's visible time, of the
    records ``(visible s, CreateTime ms)`` visible in ``[since, until]``: a record comes from
    the last micro-batch that started (``start_ms``) at or before it was produced."""
    starts = sorted((b.start_ms, b.number) for b in batches)
    found = []
    for visible, created_ms in seen:
        if not since <= visible <= until:
            continue
        number = max((n for s, n in starts if s <= created_ms), default=None)
        if number is not None and number in newest:
            found.append(visible - newest[number] / 1000)
    return found


def generator_commands(
    name: str, bootstrap: str, topic: str, rate: float, count: int, started: float
) -> list[list[str]]:
    """Live input at ``rate`` (event time = the time it is sent): tweets, or sensor readings
    and one query per :data:`QUERY_SHARE` readings."""
    start_ms = str(int(started * 1000))

    def produce(kind: str, to: str, per_s: float, n: int) -> list[str]:
        return trending(
            "produce", kind, "--bootstrap-servers", bootstrap, "--topic", to, "--count", str(n),
            "--rate", str(per_s), "--events-per-second", str(per_s), "--start-ms", start_ms,
            "--quiet", "--partitions", str(PARTITIONS), "--metrics-port", "0",
        )  # fmt: skip

    if name != "sensors":
        return [[*produce("tweets", topic, rate, count), "--jitter", "0s"]]
    queries = max(1.0, rate / QUERY_SHARE)
    return [
        produce("readings", topic, rate, count),
        produce("queries", f"{topic}-q", queries, max(1, int(count / QUERY_SHARE))),
    ]


def query_time_ms(value: bytes) -> int:
    """A match's query event time (ms), from its Avro value (``schemas/sensor_match.avsc``)."""
    from connectors.avro import AvroCodec

    global _MATCH_CODEC
    if _MATCH_CODEC is None:
        _MATCH_CODEC = AvroCodec("sensor_match")
    when = _MATCH_CODEC.decode(value)["query_ts"]
    return int(when.timestamp() * 1000) if hasattr(when, "timestamp") else int(when)


_MATCH_CODEC: Any = None


def wait_for(path: Path, process: subprocess.Popen[bytes], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        if process.poll() is not None:
            raise RuntimeError(f"the contender exited with code {process.returncode}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"no {path} after {seconds:.0f} s")
        time.sleep(0.2)


def run_case(
    bootstrap: str, name: str, rate: float, args: argparse.Namespace, work: Path,
    cpu: CpuSampler,
) -> Result:  # fmt: skip
    from connectors.kafka import ensure_topics

    result = Result(name, rate)
    topic = f"latency-{name}-{int(rate)}-{os.getpid()}"
    out = f"{topic}-out"
    inputs = [topic, f"{topic}-q"] if name == "sensors" else [topic]
    ensure_topics(
        bootstrap, inputs, partitions=PARTITIONS,
        config={"message.timestamp.type": "LogAppendTime"},
    )  # fmt: skip
    ensure_topics(bootstrap, [out], partitions=PARTITIONS)
    checkpoint = work / f"{name}-{int(rate)}"
    command, spark_checkpoint = contender_command(
        name, bootstrap, topic, out, checkpoint, args.trigger_ms
    )
    log = (work / f"{name}-{int(rate)}.log").open("wb")
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
    watcher = Watcher(bootstrap, out, query_time_ms if name == "sensors" else None)
    watcher.start()
    try:
        wait_for(spark_checkpoint / "metadata", process, 180)
        count = int(rate * (args.warmup + args.seconds))
        started = time.time()
        generators = [
            subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            for command in generator_commands(name, bootstrap, topic, rate, count, started)
        ]
        failures = []
        for generator in generators:
            _, err = generator.communicate()
            if generator.returncode != 0:
                failures.append(err.decode(errors="replace")[-2000:])
        stopped = time.time()
        if failures:
            raise RuntimeError(f"a generator failed: {failures[0]}")
        result.sent_per_s = count / (stopped - started)  # tweets or readings
        steady_from = started + args.warmup
        result.cpu = cpu.busy_cores(steady_from, stopped)
        time.sleep(args.drain)
    except RuntimeError as error:
        result.error = str(error)
        return result
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(90)
        except subprocess.TimeoutExpired:
            process.kill()
        watcher.stop.set()
        watcher.join(10)
        log.close()
    batches = read_batches(spark_checkpoint, topic)
    if name == "sensors":  # from the query's own time (sent live: its append time) to a match
        result.latencies = [
            visible - event_ms / 1000
            for visible, event_ms in watcher.seen
            if steady_from <= visible <= stopped
        ]
    else:
        newest = newest_tweets(bootstrap, topic, batches)
        result.latencies = latencies(watcher.seen, batches, newest, steady_from, stopped)
    result.batch_seconds = [
        b.end_s - b.start_ms / 1000
        for b in batches
        if b.end_s is not None and steady_from <= b.start_ms / 1000 <= stopped
    ]
    return result


def fmt(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def table(results: list[Result]) -> tuple[list[str], list[list[str]]]:
    header = [
        "rate/s", "contender", "sent/s", "records", "p50 s", "p99 s", "max s",
        "batch p50 s", "batch max s", "busy cores",
    ]  # fmt: skip
    rows = []
    for r in results:
        batches = sorted(r.batch_seconds)
        rows.append([
            f"{r.rate:,.0f}", CONTENDERS[r.contender] + (f" ({r.error})" if r.error else ""),
            f"{r.sent_per_s:,.0f}", f"{len(r.latencies):,}", fmt(r.percentile(0.5)),
            fmt(r.percentile(0.99)), fmt(max(r.latencies, default=None)),
            fmt(batches[len(batches) // 2] if batches else None),
            fmt(batches[-1] if batches else None), fmt(r.cpu, 1),
        ])  # fmt: skip
    return header, rows


def print_table(header: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(str(c)) for c in column) for column in zip(header, *rows, strict=True)]
    for line in (header, ["-" * w for w in widths], *rows):
        print("  ".join(str(c).ljust(w) for c, w in zip(line, widths, strict=True)))


def markdown(
    path: Path, header: list[str], rows: list[list[str]], args: argparse.Namespace
) -> None:
    command = "python " + shlex.join(["bench/latency_bench.py", *sys.argv[1:]])
    import pyspark

    lines = [
        f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {os.cpu_count()} "
        f"cores, Python {platform.python_version()}, pyspark {pyspark.__version__}, with "
        f"`{command}`: {args.warmup:.0f} s of warm-up, then {args.seconds:.0f} s measured per "
        f"run, trigger {args.trigger_ms} ms.",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---" for _ in header) + "|",
        *("| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows),
        "",
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines))


# A live query's first micro-batches are slow while the JVM compiles Spark's planning and
# execution paths: at 1,000 tweets/s the job's batches took 4.4, 2.5, 2.4 s, then about 1 s up to
# batch 20 and 0.6 s from batch 25 on (Spark's query planning alone 819 ms, then 100 ms). 45 s
# leaves that out for every contender alike; with 20 s the p99 measured the catch-up.
WARMUP_S = 45.0


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    add = parser.add_argument
    add("--rates", default="1000,10000,30000",
        help="tweets/s, comma-separated (30,000: half of the 60,000/s a live job holds in "
        "make bench-scale's steady runs on 2 cores)")  # fmt: skip
    add("--contenders", default="job,builtin,sensors", help="of job, builtin, sensors")
    add("--seconds", type=float, default=120.0, help="measured, after the warm-up")
    add("--warmup", type=float, default=WARMUP_S,
        help="seconds of sending not measured (see WARMUP_S)")  # fmt: skip
    add("--drain", type=float, default=10.0, help="seconds after sending before stopping")
    add("--trigger-ms", type=int, default=1_000, help="both contenders' trigger")
    add("--markdown", type=Path, help="also write the table as Markdown to this file")
    add("--keep-logs", type=Path, help="copy each contender's log (its per-batch lines) here")
    args = parser.parse_args()
    args.rates = [float(r) for r in args.rates.split(",") if r]
    args.contenders = [c for c in args.contenders.split(",") if c]
    unknown = set(args.contenders) - set(CONTENDERS)
    if unknown:
        parser.error(f"unknown contenders {sorted(unknown)}: choose from job, builtin, sensors")
    return args


def main() -> int:
    args = parse_args()
    results = []
    with (
        tempfile.TemporaryDirectory(prefix="bench-latency-") as tmp,
        CpuSampler() as cpu,
    ):
        work = Path(tmp)
        with bench_broker(work / "broker") as bootstrap:
            for rate in args.rates:
                for name in args.contenders:
                    print(f"{CONTENDERS[name]} at {rate:,.0f} tweets/s ...", flush=True)
                    result = run_case(bootstrap, name, rate, args, work, cpu)
                    if result.error:
                        print(f"  failed: {result.error}", flush=True)
                        log = work / f"{name}-{int(rate)}.log"
                        print(log.read_text(errors="replace")[-3000:], flush=True)
                    else:
                        print(
                            f"  {len(result.latencies):,} records, p50 "
                            f"{fmt(result.percentile(0.5))} s, p99 "
                            f"{fmt(result.percentile(0.99))} s",
                            flush=True,
                        )
                    results.append(result)
                    if args.keep_logs:
                        args.keep_logs.mkdir(parents=True, exist_ok=True)
                        log = work / f"{name}-{int(rate)}.log"
                        shutil.copy(log, args.keep_logs / log.name)
    header, rows = table(results)
    print()
    print_table(header, rows)
    if args.markdown:
        markdown(args.markdown, header, rows, args)
    return 1 if any(r.error for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
