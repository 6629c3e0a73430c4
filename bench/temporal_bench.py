"""`make bench-temporal`: the temporal window job on Spark (local[2]) and the pure core, per spec.

One topic of ``--count`` interval events (``--keys`` keys, starts 10 ms apart on average,
lifetimes 1 ms to 2 min, 4 partitions), made once per broker. For each spec, one run in its own
process (its own JVM): ``trending run windows`` with ``--available-now`` in batches of
``--max-offsets-per-trigger``, then the end-of-input CTI; once per ``--engines`` (``auto``: the
JVM step where the spec runs on it; ``python``: the Python step, the session setting
``spark.trending.temporal.engine=python``), side by side. Printed per spec and engine: events/s
from the first batch to the last commit of the input's batches, the seconds of the closing run, rows
published, and the peak RSS of the process tree. Then ``bench/temporal_core_bench.py`` (the pure
core's events/s, and HoppingWindow2's rows and state for a day-long edge under 1 s hops).
Uses ``KAFKA_BOOTSTRAP_SERVERS`` when set, else a local broker. ``--markdown PATH`` also writes
the table, the core's tables, the parameters and the commands to a Markdown file.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import report as md
from bench.procmem import bench_broker, run_measured

ROOT = Path(__file__).resolve().parents[1]
START_MS = 1_700_000_000_000
ENGINE_CONF = "spark.trending.temporal.engine"
LATENESS_MS = 120_000  # a batch's partitions may end minutes of event time apart
SPECS: dict[str, dict[str, Any]] = {
    "hopping 5m/1m": {"kind": "hopping", "duration": "5m", "hop": "1m", "aggregate": "sum"},
    "hopping 5m/1m snap": {
        "kind": "hopping", "duration": "5m", "hop": "1m", "aggregate": "sum", "snap": True,
    },
    "hopping 1h/1s snap": {
        "kind": "hopping", "duration": "1h", "hop": "1s", "aggregate": "sum", "snap": True,
    },
    "snapshot sum": {"kind": "snapshot", "aggregate": "sum"},
    "count n=10 sum": {"kind": "count", "n": 10, "aggregate": "sum"},
}  # fmt: skip


def events_topic(bootstrap: str, count: int, keys: int) -> str:
    """A topic of ``count`` generated interval events, made once per broker."""
    from bench.trending_bench import topic_size
    from trending.temporal_data import produce_interval_events

    topic = f"bench-interval-events-{count}-{keys}"
    held = topic_size(bootstrap, topic)
    if held != count:
        if held:  # a partial topic from an interrupted run: write a new one beside it
            topic = f"{topic}-{uuid.uuid4().hex[:6]}"
        produce_interval_events(bootstrap, topic, generate(count, keys), partitions=4)
    return topic


def generate(count: int, keys: int, seed: int = 5) -> list[dict[str, Any]]:
    rnd = random.Random(seed)
    records, start = [], START_MS
    for _ in range(count):
        start += rnd.randint(0, 20)
        records.append({
            "kind": "INTERVAL", "id": None, "key": f"k{rnd.randrange(keys)}", "start": start,
            "end": start + rnd.randint(1, 120_000), "value": float(rnd.randint(0, 99)),
        })  # fmt: skip
    return records


def run_one(args: argparse.Namespace) -> dict[str, Any]:
    """Both runs of one spec, in this process."""
    from trending.jobs.windows import WindowsJobConfig, close_input, start_query
    from trending.spark.session import build_session

    spark = build_session("bench-temporal", "local[2]", shuffle_partitions=2)
    spark.conf.set(ENGINE_CONF, args.engine)
    tag = uuid.uuid4().hex[:8]
    with tempfile.TemporaryDirectory(prefix="bench-temporal-") as work:
        config = WindowsJobConfig(
            bootstrap=args.bootstrap, checkpoint=f"{work}/checkpoint", spec=SPECS[args.spec],
            input_topic=args.topic, output_topic=f"bench-window-rows-{tag}",
            late_topic=f"bench-interval-events-late-{tag}",
            dead_letter_topic=f"bench-interval-events-{tag}-dlq", lateness_ms=LATENESS_MS,
            available_now=True, max_offsets_per_trigger=args.batch,
        )  # fmt: skip
        query, processor = start_query(spark, config)
        query.awaitTermination()
        reading = list(processor.history)
        close_input(config, processor)
        query, processor = start_query(spark, config, processor=processor)
        query.awaitTermination()
        processor.close()
    spark.stop()
    closing = processor.history[len(reading) :]
    seconds = reading[-1].started_at + reading[-1].seconds - reading[0].started_at
    return {
        "spec": args.spec,
        "engine": args.engine,
        "events": sum(s.events for s in reading),
        "seconds": seconds,
        "batches": len(reading),
        "late": sum(s.late for s in processor.history),
        "rows": sum(s.rows for s in processor.history),
        "closing_seconds": sum(s.seconds for s in closing),
    }


HEADER = ("spec (local[2])", "engine", "events", "events/s", "batches", "closing s", "rows", "late",
          "peak RSS")  # fmt: skip


def report(results: list[dict[str, Any]]) -> None:
    print(f"\n{HEADER[0]:22} {HEADER[1]:7} {HEADER[2]:>8} {HEADER[3]:>9} {HEADER[4]:>7} "
          f"{HEADER[5]:>9} {HEADER[6]:>9} {HEADER[7]:>5} {HEADER[8]:>9}")  # fmt: skip
    for r in results:
        print(
            f"{r['spec']:22} {r['engine']:7} {r['events']:>8,} "
            f"{r['events'] / r['seconds']:>9,.0f} "
            f"{r['batches']:>7} {r['closing_seconds']:>9.1f} {r['rows']:>9,} {r['late']:>5} "
            f"{r['peak_rss'] / 2**20:>7.0f}MB"
        )


def cells(r: dict[str, Any]) -> tuple[str, ...]:
    return (
        r["spec"], r["engine"], f"{r['events']:,}", f"{r['events'] / r['seconds']:,.0f}",
        str(r["batches"]),
        f"{r['closing_seconds']:.1f}", f"{r['rows']:,}", str(r["late"]),
        f"{r['peak_rss'] / 2**20:.0f} MB",
    )  # fmt: skip


def run_core(markdown: Path | None) -> list[str]:
    """``bench/temporal_core_bench.py``, its output passed on; with ``markdown``, its tables
    too (its own file's lines, the title left out)."""
    core = [sys.executable, str(ROOT / "bench" / "temporal_core_bench.py")]
    if markdown is None:
        subprocess.run(core, check=True)
        return []
    with tempfile.TemporaryDirectory(prefix="bench-temporal-core-") as tmp:
        path = Path(tmp) / "core.md"
        with subprocess.Popen([*core, "--markdown", str(path)], stdout=subprocess.PIPE,
                              text=True) as child:  # fmt: skip
            assert child.stdout is not None
            for line in child.stdout:
                if line != f"wrote {path}\n":  # the output is the core's own, as without a file
                    print(line, end="", flush=True)
        if child.returncode:
            raise subprocess.CalledProcessError(child.returncode, child.args)
        # its command as this bench ran it: the file it wrote for this one is left out
        return [
            line.replace(f" --markdown {path}", "") for line in path.read_text().splitlines()[1:]
        ]


def markdown(
    path: Path, results: list[dict[str, Any]], core: list[str], args: argparse.Namespace,
    seconds: float,
) -> None:  # fmt: skip
    lines = [
        "# The temporal window job on Spark",
        "",
        md.measured(__file__, seconds, master="local[2]"),
        "",
        md.parameters(
            {"count": args.count, "keys": args.keys, "batch": args.batch, "engines": args.engines}
        ),
        "",
        *md.table(HEADER, [cells(r) for r in results]),
        "",
        f"One topic of {args.count:,} interval events ({args.keys} keys, starts 10 ms apart on "
        "average, lifetimes 1 ms to 2 min, 4 partitions). Per spec, one run in its own process "
        "(its own JVM) per engine: `trending run windows --available-now` in batches of "
        f"{args.batch:,} offsets, then the end-of-input CTI. Engine `auto`: the JVM step "
        "where the spec runs on it; `python`: `spark.trending.temporal.engine=python`, the "
        "Python step. Events/s: from the first batch to "
        "the last commit of the input's batches; closing s: the run after the CTI; rows: rows "
        "published; late: events past the lateness; peak RSS: the process tree's most "
        "resident memory (Python driver + JVM).",
        "",
        "Specs: " + "; ".join(f"`{name}`: `{json.dumps(SPECS[name])}`"
                              for name in dict.fromkeys(r["spec"] for r in results)) + ".",
    ]  # fmt: skip
    if core:
        lines += ["", "## The pure core", *core]
    md.write(path, lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=100_000)
    parser.add_argument("--keys", type=int, default=100)
    parser.add_argument("--batch", type=int, default=50_000, help="max offsets per trigger")
    parser.add_argument("--specs", default=",".join(SPECS))
    parser.add_argument(
        "--engines", default="auto,python", help="comma-separated, of auto (JVM step) and python"
    )
    parser.add_argument("--skip-core", action="store_true", help="only the Spark runs")
    parser.add_argument(
        "--markdown", type=Path, help="also write the tables as Markdown to this file"
    )
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--bootstrap", help=argparse.SUPPRESS)
    parser.add_argument("--topic", help=argparse.SUPPRESS)
    parser.add_argument("--spec", help=argparse.SUPPRESS)
    parser.add_argument("--engine", default="auto", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print("RESULT " + json.dumps(run_one(args)), flush=True)
        return 0
    began = time.monotonic()
    results = []
    with bench_broker(ROOT / "build" / "bench-broker") as bootstrap:
        topic = events_topic(bootstrap, args.count, args.keys)
        for spec, engine in itertools.product(args.specs.split(","), args.engines.split(",")):
            command = [
                sys.executable, __file__, "--one", "--bootstrap", bootstrap, "--topic", topic,
                "--spec", spec, "--batch", str(args.batch), "--engine", engine,
            ]  # fmt: skip
            _, peak, text = run_measured(command)
            line = next((x for x in text.splitlines() if x.startswith("RESULT ")), None)
            if line is None:
                print(text[-3000:], file=sys.stderr)
                raise SystemExit(f"the {spec} run ({engine}) failed")
            result = json.loads(line.removeprefix("RESULT ")) | {"peak_rss": peak}
            results.append(result)
            print(json.dumps(result), flush=True)
    report(results)
    core = [] if args.skip_core else run_core(args.markdown)
    if args.markdown:
        markdown(args.markdown, results, core, args, time.monotonic() - began)
    return 0


if __name__ == "__main__":
    sys.exit(main())
