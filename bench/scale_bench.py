"""`make bench-scale`: the hashtags job with its counts in Spark's state store, batch by batch.

1M tweets (``--count``) in batches of 100,000 (``--max-offsets-per-trigger``), 5m/1m windows, top
10, on two data sets made once: Zipf 1.1 over 50k hashtags, and Zipf 0.6 over 3M hashtags (a flat,
long tail). Runs, each in its own process (its own JVM): both data sets on ``local[2]``, and the
flat one on ``local[1]``, once free to use both cores and once pinned to one (the process and the
JVM it starts get one CPU, ``sched_setaffinity``); then the flat ones again in warm JVMs, measured
on a second whole run in the same JVM (a cold JVM's JIT compiler keeps most of a core busy for the
whole of a 1M-tweet run). Prints per run the tweets/s from the first batch to the last commit,
median per-batch phase times (``spark``: the executors' work, collected; ``windows`` +
``snapshot``: the driver's merge and state; ``publish``: the Kafka transaction), the driver's share
of batch time, the driver's committed state (bytes), Spark's state (most rows written in a batch,
bytes) and the machine's busy cores over the run (every process, the broker's too), then the ratios
the targets are stated in. Scaling is ``local[2]`` on two cores against ``local[1]`` on one: an
unpinned ``local[1]`` has one task thread, but its driver, JIT compiler and garbage collector run
on the other core, so it is printed too, with its bound: the CPU work per tweet does not shrink
with more task threads, so local[2] can be at most (cores / local[1]'s busy cores) times as fast.

Then a steady run per rate in ``--rates`` (flat data, ``local[2]``, the 1 s trigger, the JVMs
a live job runs with): tweets made live (``created_at`` = the time they are sent, no jitter) at
that rate for ``--seconds`` into a new topic by a generator in its own process while the job
runs, which then gets up to 30 s to finish what was sent.
Printed: the rate the job processed, the backlog when sending stopped (records sent whose
batch had not committed yet) and the event-to-result latency of the records: a batch's
records were sent between the previous batch's newest event and its own, and are visible once
its transaction commits, so each record's latency lies in
``[commit - newest(batch), commit - newest(previous batch)]``; percentiles are over records,
spread evenly in that range. The lag's growth is the least-squares slope of the batches'
``commit - newest(batch)`` against their commit times, over the second half of the sending (the
first half warms the JVM up). A rate is held when every record sent was processed and the lag
grew by less than ``MAX_LAG_GROWTH`` seconds per second: a rate beyond the job's capacity C
grows it by ``(rate - C) / rate``, one within it not at all. The highest rate held is the
highest one held with every lower rate.
Uses ``KAFKA_BOOTSTRAP_SERVERS`` when set, else a local broker. ``--markdown PATH`` also writes
both tables, the ratios, the parameters and the command to a Markdown file.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import report as md
from bench.procmem import CpuSampler, bench_broker, run_measured
from bench.trending_bench import ensure_data

ROOT = Path(__file__).resolve().parents[1]
DATA = {"zipf 1.1 / 50k": (1.1, 50_000), "zipf 0.6 / 3M": (0.6, 3_000_000)}
MAX_LAG_GROWTH = 0.05  # s/s: a backlog 5% of the rate ahead of the job, or 3 s more lag a minute
COLD, WARM = "cold", "warm"
ALL_CPUS = 0  # a run free to use every CPU of the machine


class Run(NamedTuple):
    data: str
    master: str
    jvm: str
    cpus: int = ALL_CPUS  # else pinned to this many CPUs

    def label(self) -> str:
        pinned = f", {self.cpus} core" + ("s" if self.cpus > 1 else "") if self.cpus else ""
        return f"{self.data} {self.master}" + (", warm" if self.jvm == WARM else "") + pinned


FLAT = "zipf 0.6 / 3M"
RUNS = (
    Run("zipf 1.1 / 50k", "local[2]", COLD),
    Run(FLAT, "local[2]", COLD),
    Run(FLAT, "local[1]", COLD),
    Run(FLAT, "local[1]", COLD, cpus=1),
    Run(FLAT, "local[2]", WARM),
    Run(FLAT, "local[1]", WARM),
    Run(FLAT, "local[1]", WARM, cpus=1),
)


def run_one(bootstrap: str, topic: str, master: str, batch: int, jvm: str) -> dict[str, Any]:
    """One job run in this process; its figures as a dict. A ``WARM`` run comes after a whole
    run of the same job over the same topic in the same JVM (own checkpoint and outputs), so
    the JIT compiler has done most of its work before it."""
    from trending.spark.session import build_session

    cores = int(master.removeprefix("local[").removesuffix("]"))
    spark = build_session("bench-scale", master, shuffle_partitions=cores)
    if jvm == WARM:
        measured_run(spark, bootstrap, topic, batch)
    return measured_run(spark, bootstrap, topic, batch)


def measured_run(spark: Any, bootstrap: str, topic: str, batch: int) -> dict[str, Any]:
    """The job over ``topic`` from its start, with a new checkpoint and new output topics."""
    from trending.jobs.hashtags import HashtagJobConfig, start_query

    with tempfile.TemporaryDirectory(prefix="bench-scale-") as work:
        out = f"bench-scale-out-{os.getpid()}-{time.monotonic_ns()}"
        config = HashtagJobConfig(
            bootstrap=bootstrap, checkpoint=f"{work}/checkpoint", input_topic=topic,
            output_topic=out, late_topic=out + "-late", dead_letter_topic=out + "-dlq",
            available_now=True, max_offsets_per_trigger=batch,
        )  # fmt: skip
        with CpuSampler() as cpu:
            query, processor = start_query(spark, config)
            try:
                query.awaitTermination()
            finally:
                processor.close()
        operators = [op for p in query.recentProgress for op in p.stateOperators]
    done = [s for s in processor.history if not s.skipped]
    seconds = done[-1].started_at + done[-1].seconds - done[0].started_at
    return {
        "tweets": sum(s.tweets for s in done),
        "seconds": seconds,
        "busy_cores": cpu.busy_cores(done[0].started_at, done[-1].started_at + done[-1].seconds),
        "batches": [
            {"seconds": s.seconds, "phases": s.phases, "state_bytes": s.state_bytes} for s in done
        ],
        "spark_state_rows": [op.numRowsUpdated for op in operators],  # written in the batch
        "spark_state_bytes": [op.memoryUsedBytes for op in operators],
    }


def run_steady(bootstrap: str, rate: float, seconds: float) -> dict[str, Any]:
    """One steady run in this process: live tweets at ``rate`` while the job runs, sent by a
    generator in its own process (:func:`send_steady`), so that it shares neither the driver's
    interpreter nor its lock."""
    topic = f"bench-steady-{os.getpid()}"
    sender = subprocess.Popen(
        [sys.executable, __file__, "--send", bootstrap, topic, str(rate), str(int(rate * seconds))],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT,
    )  # fmt: skip
    try:
        return steady_job(bootstrap, topic, rate, seconds, sender)
    finally:
        if sender.poll() is None:
            sender.kill()


def steady_job(
    bootstrap: str, topic: str, rate: float, seconds: float, sender: subprocess.Popen[str]
) -> dict[str, Any]:
    """The job's side of :func:`run_steady`, ``sender`` told when to start."""
    from trending.jobs.hashtags import HashtagJobConfig, start_query
    from trending.spark.session import build_session, job_collector

    assert sender.stdin is not None and sender.stdout is not None
    count = int(rate * seconds)
    if sender.stdout.readline().strip() != "READY":
        raise RuntimeError(f"the generator did not start (exit {sender.wait()})")
    spark = build_session(  # the JVMs of a live job (`trending run hashtags` without a backlog)
        "bench-scale-steady", "local[2]", shuffle_partitions=2, collector=job_collector(live=True)
    )
    with tempfile.TemporaryDirectory(prefix="bench-steady-", ignore_cleanup_errors=True) as work:
        config = HashtagJobConfig(
            bootstrap=bootstrap, checkpoint=f"{work}/checkpoint", input_topic=topic,
            output_topic=topic + "-out", late_topic=topic + "-late",
            dead_letter_topic=topic + "-dlq", trigger_ms=1_000,
        )  # fmt: skip
        query, processor = start_query(spark, config)
        started_ms = int(time.time() * 1000)
        sender.stdin.write(f"{started_ms}\n")
        sender.stdin.close()
        try:
            sender.wait(seconds * 3)
        except subprocess.TimeoutExpired:
            sender.kill()
        if sender.wait() != 0:
            raise RuntimeError(f"the generator failed (exit {sender.returncode})")
        sent_s = time.time() - started_ms / 1000
        stopped_at = time.time()
        finished = sum(
            b.tweets for b in processor.history if b.started_at + b.seconds <= stopped_at
        )
        deadline = time.monotonic() + 30  # the batches in flight
        while sum(b.tweets for b in processor.history) < count and time.monotonic() < deadline:
            time.sleep(0.5)
        query.stop()
        processor.close()
        spark.stop()  # before the checkpoint folder goes: state-store maintenance writes there
    done = [s for s in processor.history if not s.skipped and s.newest_event_ms is not None]
    return {
        "rate": rate,
        "sent": count,
        "sent_seconds": sent_s,
        "tweets": sum(s.tweets for s in done),
        "batches": [
            {"end": s.started_at + s.seconds, "newest_ms": s.newest_event_ms, "tweets": s.tweets}
            for s in done
        ],
        "lag_end": count - finished,  # sent but not yet committed when sending stopped
        "stopped_at": stopped_at,
    }


def send_steady(bootstrap: str, topic: str, rate: float, count: int) -> None:
    """``--send``: the steady run's generator. Builds the flat data's hashtags, prints
    ``READY``, reads the first event time (ms) from stdin, then sends ``count`` tweets at
    ``rate`` with event time = the time they are sent."""
    from trending.generate import generate_tweets, produce_tweets

    zipf_s, vocabulary = DATA["zipf 0.6 / 3M"]
    generate_tweets(seed=5, count=1, vocabulary=vocabulary, zipf_s=zipf_s)  # build assets
    print("READY", flush=True)
    started_ms = int(sys.stdin.readline())
    tweets = generate_tweets(
        seed=5, count=count, start_ms=started_ms, events_per_second=rate, jitter_ms=0,
        vocabulary=vocabulary, zipf_s=zipf_s,
    )  # fmt: skip
    produce_tweets(bootstrap, topic, tweets, rate=rate)


def latency_percentiles(batches: list[dict[str, Any]]) -> tuple[float, float]:
    """p50 and p99 event-to-result seconds over records (see the module docstring)."""
    samples: list[float] = []
    for previous, batch in itertools.pairwise(batches):
        newest, oldest = (
            batch["end"] - batch["newest_ms"] / 1000,
            batch["end"] - previous["newest_ms"] / 1000,
        )
        n = max(1, min(batch["tweets"], 1_000))
        samples += [newest + (oldest - newest) * (i + 0.5) / n for i in range(n)]
    if not samples:
        return float("nan"), float("nan")
    samples.sort()
    return samples[len(samples) // 2], samples[min(len(samples) - 1, int(len(samples) * 0.99))]


def lag_growth(run: dict[str, Any]) -> float:
    """Seconds of lag gained per second over the second half of the sending (see the module
    docstring); infinite when fewer than three batches committed in it."""
    stopped = run["stopped_at"]
    since = stopped - run["sent_seconds"] / 2
    points = [
        (b["end"], b["end"] - b["newest_ms"] / 1000)
        for b in run["batches"]
        if since <= b["end"] <= stopped
    ]
    if len(points) < 3:
        return float("inf")
    times, lags = zip(*points, strict=True)
    return float(statistics.linear_regression(times, lags).slope)


def is_held(run: dict[str, Any]) -> bool:
    """Every record sent was processed, and the lag did not grow (:data:`MAX_LAG_GROWTH`)."""
    return run["tweets"] >= run["sent"] and lag_growth(run) < MAX_LAG_GROWTH


STEADY = "steady run (flat, local[2], 1s trigger)"
STEADY_HEADER = ("sent/s", "processed/s", "backlog", "growth s/s", "p50 s", "p99 s", "held")


def steady_cells(run: dict[str, Any]) -> tuple[str, ...]:
    p50, p99 = latency_percentiles(run["batches"])
    return (
        f"{run['rate']:,.0f}",
        f"{min(run['tweets'], run['sent']) / run['sent_seconds']:,.0f}",
        f"{run['lag_end']:,}",
        f"{lag_growth(run):.3f}",
        f"{p50:.2f}",
        f"{p99:.2f}",
        "yes" if is_held(run) else "no",
    )


def steady_label(run: dict[str, Any]) -> str:
    return "rate " + format(run["rate"], ",.0f") + "/s"


def highest_held(runs: list[dict[str, Any]]) -> str:
    kept = list(itertools.takewhile(is_held, sorted(runs, key=lambda r: r["rate"])))
    return f"highest rate held: {kept[-1]['rate']:,.0f} tweets/s" if kept else "no rate held"


def report_steady(runs: list[dict[str, Any]]) -> None:
    print(f"\n{STEADY:<40}" + "".join(f"{h:>12}" for h in STEADY_HEADER))
    for run in runs:
        print(f"{steady_label(run):<40}" + "".join(f"{c:>12}" for c in steady_cells(run)))
    print(highest_held(runs))


def median_of(batches: list[dict[str, Any]], key: str) -> float:
    return float(statistics.median(b["phases"].get(key, 0.0) for b in batches))


BATCH = "run (median batch)"
BATCH_HEADER = ("tweets/s", "batch s", "spark s", "driver s", "publish s", "driver %",
                "driver state", "rows written", "spark MB", "peak MB", "busy cores")  # fmt: skip


def batch_cells(r: dict[str, Any]) -> tuple[str, ...]:
    batches = r["batches"][1:] or r["batches"]  # the first batch also loads the state store
    batch_s = statistics.median(b["seconds"] for b in batches)
    driver = median_of(batches, "windows") + median_of(batches, "snapshot")
    return (
        f"{r['tweets'] / r['seconds']:,.0f}",
        f"{batch_s:.2f}",
        f"{median_of(batches, 'spark'):.2f}",
        f"{driver:.3f}",
        f"{median_of(batches, 'publish'):.3f}",
        f"{100 * driver / batch_s:.1f}",
        f"{max(b['state_bytes'] or 0 for b in r['batches']):,} B",
        f"{max(r['spark_state_rows'], default=0):,}",
        f"{max(r['spark_state_bytes'], default=0) / 2**20:,.0f}",
        f"{r['peak'] / 2**20:,.0f}",
        "-" if r.get("busy_cores") is None else f"{r['busy_cores']:.2f}",
    )


def ratios(results: dict[Run, dict[str, Any]]) -> list[str]:
    """The lines stating the ratios the targets are stated in."""
    lines = []
    rate = {run: r["tweets"] / r["seconds"] for run, r in results.items()}
    zipf2, flat2 = rate.get(RUNS[0]), rate.get(RUNS[1])
    if flat2 and zipf2:
        lines.append(f"flat vs zipf-50k rate (local[2]): {flat2 / zipf2:.2f}x   (target >= 0.8x)")
    for jvm in (COLD, WARM):
        two = rate.get(Run(FLAT, "local[2]", jvm))
        one_core = rate.get(Run(FLAT, "local[1]", jvm, cpus=1))
        one = Run(FLAT, "local[1]", jvm)
        if two and one_core:
            lines.append(f"local[2] on 2 cores vs local[1] on 1 core (flat, {jvm}): "
                         f"{two / one_core:.2f}x   (target >= 1.6x)")  # fmt: skip
        busy = results[one].get("busy_cores") if one in results else None
        if two and busy:
            lines.append(f"  vs local[1] free to use both cores: {two / rate[one]:.2f}x; it kept "
                         f"{busy:.2f} of {cpu_count()} cores busy, so local[2] can be at most "
                         f"{cpu_count() / busy:.2f}x as fast as it")  # fmt: skip
    return lines


def report(results: dict[Run, dict[str, Any]]) -> None:
    print(f"\n{BATCH:<38}" + "".join(f"{h:>13}" for h in BATCH_HEADER))
    for run, r in results.items():
        print(f"{run.label():<38}" + "".join(f"{c:>13}" for c in batch_cells(r)))
    print()
    for line in ratios(results):
        print(line)


def markdown(
    path: Path, results: dict[Run, dict[str, Any]], steady: list[dict[str, Any]],
    args: argparse.Namespace, seconds: float,
) -> None:  # fmt: skip
    lines = [
        "# The hashtags job at scale",
        "",
        md.measured(__file__, seconds, master="local[2], local[1]" if results else "local[2]"),
        "",
        md.parameters({"count": args.count, "max-offsets-per-trigger": args.max_offsets_per_trigger,
                       "rates": args.rates, "seconds": args.seconds,
                       "skip-batch": args.skip_batch}),
    ]  # fmt: skip
    if results:
        lines += [
            "",
            *md.table((BATCH, *BATCH_HEADER), [(run.label(), *batch_cells(r))
                                              for run, r in results.items()]),
            "",
            *(f"* {line.strip()}" for line in ratios(results)),
            "",
            f"{args.count:,} tweets per data set (Zipf 1.1 over 50k hashtags; Zipf 0.6 over 3M, "
            f"the flat one) in batches of {args.max_offsets_per_trigger:,}, 5m/1m windows, top "
            "10, each run in its own process (its own JVM); `1 core`: pinned to one CPU; "
            "`warm`: a second whole run in the same JVM. Tweets/s: from the first batch to the "
            "last commit; the other columns are medians over the batches after the first: "
            "`spark s` the executors' work, `driver s` the driver's merge and state, `publish s` "
            "the Kafka transaction, `driver %` the driver's share of a batch; driver state: the "
            "driver's committed state; rows written and spark MB: Spark's state store; peak MB: "
            "the run's process tree; busy cores: the whole machine's over the run.",
        ]  # fmt: skip
    if steady:
        lines += [
            "",
            *md.table((STEADY, *STEADY_HEADER), [(steady_label(r), *steady_cells(r))
                                                for r in steady]),
            "",
            f"* {highest_held(steady)}",
            "",
            f"Each rate: live tweets (the flat data set, event time = send time) for "
            f"{args.seconds:g} s into a new topic while the job runs (`local[2]`, 1 s trigger). "
            "Backlog: records sent whose batch had not committed when sending stopped; growth: "
            "the least-squares slope of the lag over the second half of the sending; p50/p99: "
            "event-to-result latency over records. Held: every record processed and the lag "
            f"grew by less than {MAX_LAG_GROWTH} s/s.",
        ]  # fmt: skip
    md.write(path, lines)


def cpu_count() -> int:
    return os.cpu_count() or 1


def pin_to_cpus(count: int) -> None:
    """This process, and the JVM it starts, on the first ``count`` of its allowed CPUs."""
    allowed = sorted(os.sched_getaffinity(0))
    if count > len(allowed):
        raise SystemExit(f"cannot pin to {count} CPUs: this process may use {len(allowed)}")
    os.sched_setaffinity(0, allowed[:count])


def result_of(text: str, what: str) -> dict[str, Any]:
    """The ``RESULT {json}`` line a child run printed."""
    line = next((x for x in text.splitlines() if x.startswith("RESULT ")), None)
    if line is None:
        raise RuntimeError(f"no result from {what}:\n{text[-3000:]}")
    figures: dict[str, Any] = json.loads(line[len("RESULT ") :])
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=1_000_000)
    parser.add_argument("--max-offsets-per-trigger", type=int, default=100_000)
    parser.add_argument("--rates", default="40000,50000,60000,70000", help="steady rates, tweets/s")
    parser.add_argument("--seconds", type=float, default=60.0, help="length of a steady run")
    parser.add_argument("--skip-batch", action="store_true", help="only the steady runs")
    parser.add_argument(
        "--markdown", type=Path, help="also write the tables as Markdown to this file"
    )
    parser.add_argument(
        "--steady-one", nargs=2, metavar=("BOOTSTRAP", "RATE"), help=argparse.SUPPRESS
    )
    parser.add_argument(
        "--one", nargs=4, metavar=("BOOTSTRAP", "TOPIC", "MASTER", "JVM"), help=argparse.SUPPRESS
    )
    parser.add_argument("--cpus", type=int, default=ALL_CPUS, help=argparse.SUPPRESS)
    parser.add_argument(
        "--send", nargs=4, metavar=("BOOTSTRAP", "TOPIC", "RATE", "COUNT"), help=argparse.SUPPRESS
    )
    args = parser.parse_args()
    if args.send:
        send_steady(args.send[0], args.send[1], float(args.send[2]), int(args.send[3]))
        return 0
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    if args.steady_one:
        figures = run_steady(args.steady_one[0], float(args.steady_one[1]), args.seconds)
        print("RESULT " + json.dumps(figures), flush=True)
        return 0
    if args.one:
        bootstrap, topic, master, jvm = args.one
        if args.cpus != ALL_CPUS:
            pin_to_cpus(args.cpus)
        figures = run_one(bootstrap, topic, master, args.max_offsets_per_trigger, jvm)
        print("RESULT " + json.dumps(figures), flush=True)
        return 0
    began = time.monotonic()
    with bench_broker(ROOT / "build" / "bench" / "broker") as bootstrap:
        results: dict[Run, dict[str, Any]] = {}
        topics = (
            {}
            if args.skip_batch
            else {
                name: ensure_data(bootstrap, args.count, zipf_s=zipf_s, vocabulary=vocabulary)
                for name, (zipf_s, vocabulary) in DATA.items()
            }
        )
        for run in RUNS if topics else ():
            command = [sys.executable, __file__, "--one", bootstrap, topics[run.data], run.master,
                       run.jvm, "--cpus", str(run.cpus),
                       "--max-offsets-per-trigger", str(args.max_offsets_per_trigger)]  # fmt: skip
            wall, peak, text = run_measured(command)
            results[run] = result_of(text, run.label()) | {"wall": wall, "peak": peak}
            print(f"ran {run.label()} ({run.jvm} JVM) in {wall:.0f}s", flush=True)
        if results:
            report(results)
        steady = []
        for rate in (float(r) for r in args.rates.split(",") if r):
            command = [sys.executable, __file__, "--steady-one", bootstrap, str(rate),
                       "--seconds", str(args.seconds)]  # fmt: skip
            _, _, text = run_measured(command)
            steady.append(result_of(text, f"steady {rate:,.0f}/s"))
        if steady:
            report_steady(steady)
    if args.markdown:
        markdown(args.markdown, results, steady, args, time.monotonic() - began)
    return 0


if __name__ == "__main__":
    sys.exit(main())
