"""`make bench-sensors`: the sensor job's readings/s and queries/s as the window grows.

For each number N of readings in the window (``--window-readings``, as ``trending run sensors``
takes it: 100, 10^4, 10^6) and each master (``local[2]``, ``local[1]``), one run in its own
process (its own JVM), one global window:

1. **readings**: N + ``--readings`` readings (uniform in the unit square, 100,000/s of event time)
   fill the window; the job runs them with ``--available-now`` in batches of
   ``--max-offsets-per-trigger``: readings/s from the first batch to the last commit;
2. **queries**: then ``--queries`` queries (event times after the readings) are produced and the
   job runs again on the same checkpoint: queries/s, and the cost per query in microseconds;
3. **peer**: then ``bench/sensors_peer.py``, a plain confluent-kafka Python loop (one process,
   single-threaded) with the same rules, size, threshold, lateness and cells, reads the same two
   topics from the beginning to the ends it finds (its own output topics): its readings/s (up
   to its first query applied) and queries/s (from then to its last record written) are
   reported beside the job's, and its counts of readings, queries, matches and popular readings
   must equal the job's (a ``MISMATCH`` line says which do not).

The query distance shrinks with N, ``d = sqrt(m / (pi N))``, so that a query matches ``m`` =
``--matches`` readings on average at every N (its output does not grow with N), and the grid's
cells are ``2d`` wide. Then one more run on ``local[2]`` with every reading in one cell
(``--one-cell`` N, ``--one-cell-queries`` queries). Each run reports the state bytes its
micro-batches wrote (keys and values put into the state stores, keys removed): the most in one
batch, and per event applied. The grid is what keeps a query's cost flat as N grows: the line
``cost per query N=max : N=min`` states the ratio (target <= 2). Peak memory is the resident
set of the run's process tree (Python driver + JVM). Uses ``KAFKA_BOOTSTRAP_SERVERS`` when set,
else a local broker. Then runs ``bench/spl_runner_bench.py`` (the SPL runner's figures).
``--markdown PATH`` also writes the table (the sensor job's, not the SPL runner's), the
parameters and the command to a Markdown file.
"""

from __future__ import annotations

import argparse
import json
import math
import os
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
EVENTS_PER_SECOND = 100_000.0
LATENESS_MS = 200  # 20,000 readings of event time: covers the batches' split over partitions
THRESHOLD = 3  # matches that make an evicted reading popular (the job's default)
COUNTED = ("readings", "queries", "matches", "popular")  # must be the same for the peer
ONE_CELL = 2.0  # a cell this wide holds every reading of the unit square
ONE_CELL_QUERY_RATE = 1_000.0  # queries/s of event time in the one-cell run (see measure)


def distance_for(size: int, matches: float) -> float:
    """The distance at which a query matches ``matches`` of ``size`` uniform readings."""
    return math.sqrt(matches / (math.pi * size))


def readings_topic(bootstrap: str, count: int) -> str:
    """A topic of ``count`` generated readings, made once per broker."""
    from bench.trending_bench import topic_size
    from trending.sensors_data import generate_readings, produce_sensor_records

    topic = f"bench-sensors-readings-{count}"
    held = topic_size(bootstrap, topic)
    if held != count:
        if held:  # a partial topic from an interrupted run: write a new one beside it
            topic = f"{topic}-{uuid.uuid4().hex[:6]}"
        stream = generate_readings(1, count, start_ms=START_MS, events_per_second=EVENTS_PER_SECOND)
        produce_sensor_records(bootstrap, topic, stream, schema="sensor_reading", partitions=4)
    return topic


def run_one(args: argparse.Namespace) -> dict[str, Any]:
    """Both phases of one (N, master) run, in this process."""
    from trending.jobs.sensors import SensorJobConfig, start_query
    from trending.sensors_data import generate_queries, produce_sensor_records
    from trending.spark.session import build_session

    size = int(args.window_readings)
    cores = int(args.master.removeprefix("local[").removesuffix("]"))
    spark = build_session("bench-sensors", args.master, shuffle_partitions=cores)
    distance = distance_for(size, args.matches)
    tag = uuid.uuid4().hex[:8]
    queries = f"bench-sensors-queries-{tag}"
    with tempfile.TemporaryDirectory(prefix="bench-sensors-") as work:
        config = SensorJobConfig(
            bootstrap=args.bootstrap, checkpoint=f"{work}/checkpoint",
            readings_topic=args.topic, queries_topic=queries,
            matches_topic=f"bench-sensors-matches-{tag}",
            popular_topic=f"bench-sensors-popular-{tag}", late_topic=f"bench-sensors-late-{tag}",
            dead_letter_topic=f"bench-sensors-dlq-{tag}", size=size, threshold=THRESHOLD,
            lateness_ms=LATENESS_MS, cell_size=args.cell_size or 2 * distance, available_now=True,
            max_offsets_per_trigger=args.batch,
        )  # fmt: skip
        loading = _run(spark, config, start_query)
        last_reading_ms = START_MS + int(args.readings_total * 1000 / EVENTS_PER_SECOND)
        stream = generate_queries(
            2, args.queries, start_ms=last_reading_ms + 1_000, distance=distance,
            events_per_second=args.query_rate,
        )  # fmt: skip
        produce_sensor_records(args.bootstrap, queries, stream, schema="sensor_query")
        querying = _run(spark, config, start_query)
    spark.stop()
    return {"size": size, "master": args.master, "distance": distance,
            "queries_topic": queries, "loading": loading, "querying": querying}  # fmt: skip


def _run(spark: Any, config: Any, start_query: Any) -> dict[str, Any]:
    query, processor = start_query(spark, config)
    try:
        query.awaitTermination()
    finally:
        processor.close()
    done = [s for s in processor.history if not s.skipped]
    seconds = done[-1].started_at + done[-1].seconds - done[0].started_at
    return {
        "seconds": seconds,
        "batches": len(done),
        "readings": sum(s.readings for s in done),
        "queries": sum(s.queries for s in done),
        "matches": sum(s.matches for s in done),
        "popular": sum(s.popular for s in done),
        "state_bytes": [s.state_bytes for s in done],
    }


def measure(
    bootstrap: str,
    topic: str,
    size: int,
    master: str,
    args: argparse.Namespace,
    *,
    one_cell: bool = False,
) -> dict[str, Any]:
    """One (N, master) run and the peer after it; ``one_cell``: every reading in one grid cell
    (cells :data:`ONE_CELL` wide), with ``--one-cell-queries`` queries. Those are spread over
    more event time (:data:`ONE_CELL_QUERY_RATE`) than the lateness, so that most are applied
    (each one scans the cell's N readings, so they are fewer)."""
    queries = args.one_cell_queries if one_cell else args.queries
    command = [
        sys.executable, __file__, "--one", "--bootstrap", bootstrap, "--topic", topic,
        "--window-readings", str(size), "--master", master, "--queries", str(queries),
        "--matches", str(args.matches), "--batch", str(args.batch),
        "--readings-total", str(size + args.readings),
        "--cell-size", repr(ONE_CELL if one_cell else 0.0),
        "--query-rate", repr(ONE_CELL_QUERY_RATE if one_cell else EVENTS_PER_SECOND),
    ]  # fmt: skip
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    seconds, peak, text = run_measured(command, env)
    line = next(x for x in text.splitlines() if x.startswith("RESULT "))
    result: dict[str, Any] = json.loads(line.removeprefix("RESULT "))
    result["peak_rss"] = peak
    result["wall"] = seconds
    result["cells"] = "one" if one_cell else "grid"
    cell = ONE_CELL if one_cell else 2 * result["distance"]
    result["peer"] = run_peer(bootstrap, topic, result["queries_topic"], size, cell)
    return result


def run_peer(
    bootstrap: str, readings: str, queries: str, size: int, cell_size: float
) -> dict[str, Any] | None:
    """The peer loop over the job's two topics, in its own process; None if it failed."""
    tag = uuid.uuid4().hex[:8]
    command = [
        sys.executable, str(ROOT / "bench" / "sensors_peer.py"), bootstrap, readings, queries,
        f"bench-sensors-peer-matches-{tag}", f"bench-sensors-peer-popular-{tag}",
        "--size", str(size), "--threshold", str(THRESHOLD), "--lateness-ms", str(LATENESS_MS),
        "--cell-size", repr(cell_size),
    ]  # fmt: skip
    try:
        wall, peak, text = run_measured(command)
    except RuntimeError as error:
        print(f"peer failed at N={size:,}: {error}", flush=True)
        return None
    line = next((x for x in text.splitlines() if x.startswith("readings=")), None)
    if line is None:
        print(f"peer failed at N={size:,}: no figures in its output:\n{text[-2000:]}", flush=True)
        return None
    figures: dict[str, Any] = {}
    for name, value in (pair.split("=") for pair in line.split()):
        figures[name] = float(value) if "seconds" in name else int(value)
    figures["peak_rss"] = peak
    figures["wall"] = wall
    return figures


def job_counts(r: dict[str, Any]) -> dict[str, int]:
    """What the job's two runs applied and wrote."""
    return {name: r["loading"][name] + r["querying"][name] for name in COUNTED}


def peer_check(r: dict[str, Any]) -> str:
    """A line saying whether the peer's counts equal the job's (``MISMATCH`` when not)."""
    where = f"N={r['size']:,} on {r['master']}" + (" in one cell" if r["cells"] == "one" else "")
    peer, job = r.get("peer"), job_counts(r)
    if peer is None:
        return f"MISMATCH peer vs job at {where}: the peer did not finish"
    differ = [f"{n} peer {peer[n]:,} != job {job[n]:,}" for n in COUNTED if peer[n] != job[n]]
    if differ:
        return f"MISMATCH peer vs job at {where}: " + "; ".join(differ)
    return f"peer = job at {where}: " + ", ".join(f"{job[n]:,} {n}" for n in COUNTED)


def peer_rates(r: dict[str, Any]) -> tuple[str, str]:
    """The peer's readings/s and queries/s, as text ("-" when it did not run)."""
    peer = r.get("peer")
    if peer is None:
        return "-", "-"
    reads = peer["readings"] / peer["readings_seconds"] if peer["readings_seconds"] else 0.0
    asks = peer["queries"] / peer["queries_seconds"] if peer["queries_seconds"] else 0.0
    return f"{reads:,.0f}", f"{asks:,.0f}"


HEADER = ("N", "master", "cells", "readings/s", "queries/s", "us/query", "matches/q", "popular",
          "state KB/batch", "peak RSS", "peer readings/s", "peer queries/s",
          "peer RSS")  # fmt: skip


def cells(r: dict[str, Any]) -> tuple[str, ...]:
    load, ask = r["loading"], r["querying"]
    return (
        f"{r['size']:,}", r["master"], r["cells"], f"{load['readings'] / load['seconds']:,.0f}",
        f"{ask['queries'] / ask['seconds']:,.0f}",
        f"{ask['seconds'] / max(ask['queries'], 1) * 1e6:.1f}",
        f"{ask['matches'] / max(ask['queries'], 1):.2f}", f"{load['popular'] + ask['popular']:,}",
        f"{max_state_bytes(r) / 1024:,.0f}", f"{r['peak_rss'] / 2**20:.0f} MB", *peer_rates(r),
        f"{r['peer']['peak_rss'] / 2**20:.0f} MB" if r.get("peer") else "-",
    )  # fmt: skip


def max_state_bytes(r: dict[str, Any]) -> int:
    """The most state bytes a micro-batch of the run wrote (both phases)."""
    return max(r["loading"]["state_bytes"] + r["querying"]["state_bytes"], default=0)


def state_line(r: dict[str, Any]) -> str:
    """State bytes written per micro-batch and per event applied, per phase."""
    where = f"N={r['size']:,} on {r['master']}" + (" in one cell" if r["cells"] == "one" else "")
    parts = []
    for phase in ("loading", "querying"):
        p = r[phase]
        written, events = p["state_bytes"], p["readings"] + p["queries"]
        parts.append(
            f"{phase} max {max(written, default=0):,} B/batch over {len(written)} batches, "
            f"{sum(written) / max(events, 1):,.0f} B per event applied"
        )
    return f"state bytes written at {where}: " + "; ".join(parts)


def ratios(results: list[dict[str, Any]]) -> list[str]:
    """The lines stating the cost per query's growth with N (grid runs), the scaling with
    cores, the state bytes written, and whether the peer's counts equal the job's."""
    lines = []
    grid = [r for r in results if r["cells"] == "grid"]
    for master in sorted({r["master"] for r in grid}):
        runs = sorted((r for r in grid if r["master"] == master), key=lambda r: r["size"])
        cost = [r["querying"]["seconds"] / max(r["querying"]["queries"], 1) for r in runs]
        lines.append(f"cost per query N={runs[-1]['size']:,} : N={runs[0]['size']:,} on {master}: "
                     f"{cost[-1] / cost[0]:.2f} (target <= 2)")  # fmt: skip
    for size in sorted({r["size"] for r in grid}):
        pair = {r["master"]: r for r in grid if r["size"] == size}
        if {"local[1]", "local[2]"} <= pair.keys():
            rate = {m: pair[m]["loading"]["readings"] / pair[m]["loading"]["seconds"] for m in pair}
            lines.append(f"readings/s local[2] : local[1] at N={size:,}: "
                         f"{rate['local[2]'] / rate['local[1]']:.2f}")  # fmt: skip
    lines += [state_line(r) for r in results]
    lines += [peer_check(r) for r in results]
    return lines


def markdown(
    path: Path, results: list[dict[str, Any]], args: argparse.Namespace, seconds: float
) -> None:
    md.write(path, [
        "# The sensor job as the window grows",
        "",
        md.measured(__file__, seconds, master=args.masters),
        "",
        md.parameters({"window-readings": args.window_readings, "masters": args.masters,
                       "readings": args.readings, "queries": args.queries,
                       "matches": args.matches, "batch": args.batch,
                       "one-cell": args.one_cell,
                       "one-cell-queries": args.one_cell_queries}),
        "",
        *md.table(HEADER, [cells(r) for r in results], left=2),
        "",
        *(f"* {line}" for line in ratios(results)),
        "",
        "Per window size N and master, one run in its own process (its own JVM), one global "
        "window: N + `readings` readings (uniform in the unit square) fill the window, read "
        "with `--available-now` in batches of `batch` offsets (readings/s from the first batch "
        "to the last commit); then `queries` queries run on the same checkpoint (queries/s, "
        "and the cost per query in microseconds). The query distance shrinks with N, "
        "d = sqrt(m / (pi N)), so that a query matches m = `matches` readings on average at "
        "every N; the grid's cells are 2d wide (cells: grid). The one-cell run (cells: one) puts "
        "N = `one-cell` readings in one cell and runs `one-cell-queries` queries, each "
        "scanning them all. State KB/batch: the most a micro-batch wrote to the state stores "
        "(keys and values put, keys removed). Popular: the job's popular-sensor rows; peak "
        "RSS: the run's process tree (Python driver + JVM). Peer: `bench/sensors_peer.py`, a "
        "plain confluent-kafka Python loop in one process (single-threaded) with the same "
        "rules and settings, over the same two topics after the job: readings/s up to its "
        "first query applied, queries/s from then to its last record written; its counts of "
        "readings, queries, matches and popular readings are checked against the job's.",
    ])  # fmt: skip


def report(results: list[dict[str, Any]]) -> None:
    print(f"\n{'N':>9} {'master':9} {'cells':5} {'readings/s':>11} {'queries/s':>10} "
          f"{'us/query':>9} {'matches/q':>9} {'popular':>8} {'state KB':>9} {'peak RSS':>9} "
          f"{'peer r/s':>10} {'peer q/s':>9}")  # fmt: skip
    for r in results:
        load, ask = r["loading"], r["querying"]
        per_query = ask["seconds"] / max(ask["queries"], 1) * 1e6
        print(
            f"{r['size']:>9,} {r['master']:9} {r['cells']:5} "
            f"{load['readings'] / load['seconds']:>11,.0f} "
            f"{ask['queries'] / ask['seconds']:>10,.0f} {per_query:>9.1f} "
            f"{ask['matches'] / max(ask['queries'], 1):>9.2f} "
            f"{load['popular'] + ask['popular']:>8,} {max_state_bytes(r) / 1024:>9,.0f} "
            f"{r['peak_rss'] / 2**20:>7.0f}MB {peer_rates(r)[0]:>10} {peer_rates(r)[1]:>9}"
        )
    for line in ratios(results):
        print(line)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--window-readings",
        default="100,10000,1000000",
        metavar="N,...",
        help="the numbers of readings in the window to measure (in --one: the one)",
    )
    parser.add_argument("--masters", default="local[2],local[1]")
    parser.add_argument("--readings", type=int, default=200_000, help="readings beyond N")
    parser.add_argument("--queries", type=int, default=100_000)
    parser.add_argument("--matches", type=float, default=4.0, help="mean matches per query")
    parser.add_argument("--batch", type=int, default=200_000, help="max offsets per trigger")
    parser.add_argument(
        "--one-cell",
        type=int,
        default=10_000,
        metavar="N",
        help="also run N readings in the window all in one grid cell, on local[2] (0: skip)",
    )
    parser.add_argument(
        "--one-cell-queries",
        type=int,
        default=2_000,
        help="queries of the one-cell run (each scans the N readings of the cell)",
    )
    parser.add_argument("--skip-spl", action="store_true", help="do not run the SPL runner bench")
    parser.add_argument(
        "--markdown", type=Path, help="also write the table as Markdown to this file"
    )
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--bootstrap", help=argparse.SUPPRESS)
    parser.add_argument("--topic", help=argparse.SUPPRESS)
    parser.add_argument("--master", help=argparse.SUPPRESS)
    parser.add_argument("--readings-total", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--cell-size", type=float, default=0.0, help=argparse.SUPPRESS)
    parser.add_argument(
        "--query-rate", type=float, default=EVENTS_PER_SECOND, help=argparse.SUPPRESS
    )
    args = parser.parse_args()
    if args.one:
        print("RESULT " + json.dumps(run_one(args)), flush=True)
        return 0
    began = time.monotonic()
    sizes = [int(s) for s in args.window_readings.split(",")]
    masters = args.masters.split(",")
    results = []
    with bench_broker(ROOT / "build" / "bench-broker") as bootstrap:
        for size in sizes:
            topic = readings_topic(bootstrap, size + args.readings)
            for master in masters:
                result = measure(bootstrap, topic, size, master, args)
                results.append(result)
                print(json.dumps(result), flush=True)
                print(peer_check(result), flush=True)
        if args.one_cell:
            topic = readings_topic(bootstrap, args.one_cell + args.readings)
            result = measure(bootstrap, topic, args.one_cell, "local[2]", args, one_cell=True)
            results.append(result)
            print(json.dumps(result), flush=True)
            print(peer_check(result), flush=True)
    report(results)
    if args.markdown:
        markdown(args.markdown, results, args, time.monotonic() - began)
    if not args.skip_spl and (ROOT / "bench" / "spl_runner_bench.py").exists():
        subprocess.run([sys.executable, str(ROOT / "bench" / "spl_runner_bench.py")], check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
