"""Pure-core bench of the temporal windows: events/s per window kind, and HoppingWindow2's cost.

No Spark, no Kafka: the per-key steps a stateful operator would run, in a plain loop. Events
(1 to 100 keys, starts 100 ms apart on average, lifetimes up to 2 min) go in batches of 1000,
each closed by a CTI at the batch's last start, and every step's state makes a JSON round trip,
as it would through a state store. Prints one line per run::

    hopping 5m/1m plain     events=20000 rows=... seconds=... events/s=... state_rows=...

then, for one start edge open for an hour or a day under 10 s windows hopping every 1 s, the rows
and the largest state of HoppingWindow2 against the plain hopping window: HoppingWindow2's
output and state follow the input's changes (a point event every minute), not the hops.
``--markdown PATH`` also writes both tables, the parameters and the command to a Markdown file.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

from trending.windows.temporal import (
    Aggregate,
    CountWindow,
    EndEdge,
    HoppingGeometry,
    HoppingWindow,
    IntervalEvent,
    Item,
    SnapshotWindow,
    StartEdge,
    TemporalQuery,
    TemporalState,
    TemporalWindow,
    point_event,
)
from trending.windows.temporal.timeline import END_OF_TIME

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import report

MINUTE, HOUR, DAY = 60_000, 3_600_000, 86_400_000


def events(count: int, keys: int, seed: int = 7) -> list[tuple[str, IntervalEvent]]:
    rnd = random.Random(seed)
    out, start = [], 0
    for _ in range(count):
        start += rnd.randint(0, 200)
        lifetime = rnd.randint(1, 2 * MINUTE)
        out.append(
            (f"k{rnd.randrange(keys)}", IntervalEvent(start, start + lifetime, rnd.randint(0, 99)))
        )
    return out


def batches(
    stream: list[tuple[str, IntervalEvent]], size: int
) -> Iterator[tuple[dict[str, list[Item]], int]]:
    for first in range(0, len(stream), size):
        batch: defaultdict[str, list[Item]] = defaultdict(list)
        for key, event in stream[first : first + size]:
            batch[key].append(event)
        yield batch, stream[min(first + size, len(stream)) - 1][1].start


def run(
    query: TemporalQuery, stream: list[tuple[str, IntervalEvent]], size: int = 1000
) -> tuple[int, int]:
    """Rows out and the most state rows held at once, keyed steps with JSON state between."""
    stored: dict[str, str] = {}
    rows = most = 0
    for batch, cti in [*batches(stream, size), ({}, END_OF_TIME)]:
        held = 0
        for key in stored.keys() | batch.keys():
            state = (
                query.restore(json.loads(stored[key])) if key in stored else query.initial_state()
            )
            step = query.step(state, batch.get(key, []), cti)
            rows += len(step.rows)
            held += _rows(step.state)
            stored[key] = json.dumps(step.state.to_json())
        most = max(most, held)
    return rows, most


def _rows(state: TemporalState) -> int:
    return len(state.closed) + len(state.open)


def measure(name: str, window: TemporalWindow, count: int, keys: int) -> list[str]:
    """Runs ``window`` over generated events, prints its line; its Markdown table's cells."""
    stream = events(count, keys)
    began = time.perf_counter()
    rows, most = run(TemporalQuery(window), stream)
    seconds = time.perf_counter() - began
    print(
        f"{name:<28} keys={keys:<4} events={count:<6} rows={rows:<8} seconds={seconds:<6.2f} "
        f"events/s={count / seconds:<9,.0f} state_rows={most}"
    )
    return [name, str(keys), f"{count:,}", f"{rows:,}", f"{seconds:.2f}", f"{count / seconds:,.0f}",
            f"{most:,}"]  # fmt: skip


def long_edge(span: int, snap: bool) -> tuple[int, int, int]:
    """Rows, most state rows and most state bytes for an edge open ``span`` ms, 1 s hops."""
    geometry = HoppingGeometry(10_000, 1_000)
    aggregate = Aggregate("count")
    window: TemporalWindow = (
        SnapshotWindow(aggregate, snap=geometry) if snap else HoppingWindow(geometry, aggregate)
    )
    query = TemporalQuery(window)
    step = query.step(query.initial_state(), [StartEdge(0, 1, "long")], 0)
    rows, most_rows, most_bytes = 0, 0, 0
    for minute in range(1, span // MINUTE + 1):
        items: list[Item] = [point_event(minute * MINUTE - 1, 1)]
        if minute * MINUTE == span:
            items.append(EndEdge("long", span))
        step = query.step(step.state, items, minute * MINUTE)
        rows += len(step.rows)
        most_rows = max(most_rows, _rows(step.state))
        most_bytes = max(most_bytes, len(json.dumps(step.state.to_json())))
    rows += len(query.step(step.state, [], END_OF_TIME).rows)
    return rows, most_rows, most_bytes


KINDS = ("window", "keys", "events", "rows", "seconds", "events/s", "most state rows")
EDGES = ("start edge open", "window", "rows", "most state rows", "most state JSON bytes")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--keys", type=int, default=100)
    parser.add_argument(
        "--markdown", type=Path, help="also write the tables as Markdown to this file"
    )
    args = parser.parse_args()
    began = time.monotonic()
    n, keys = args.events, args.keys
    five_one = HoppingGeometry(5 * MINUTE, MINUTE)
    hour_second = HoppingGeometry(HOUR, 1_000)
    count, total = Aggregate("count"), Aggregate("sum")
    kinds = [
        measure("hopping 5m/1m plain", HoppingWindow(five_one, count), n, keys),
        measure("hopping 5m/1m snap (HW2)", SnapshotWindow(count, snap=five_one), n, keys),
        measure("hopping 1h/1s plain", HoppingWindow(hour_second, count), n // 40, keys),
        measure("hopping 1h/1s snap (HW2)", SnapshotWindow(count, snap=hour_second), n, keys),
        measure("snapshot sum", SnapshotWindow(total), n, keys),
        measure("count n=10 sum", CountWindow(10, total), n, keys),
        measure("hopping 5m/1m snap, 1 key", SnapshotWindow(count, snap=five_one), n, 1),
    ]
    print("\none start edge + a point each minute, windows 10 s hopping 1 s:")
    edges = []
    for label, span in (("1 hour", HOUR), ("1 day", DAY)):
        for snap in (True, False):
            rows, most_rows, most_bytes = long_edge(span, snap)
            kind = "HoppingWindow2" if snap else "plain hopping"
            print(
                f"  open {label:<7} {kind:<15} rows={rows:<7} "
                f"max_state_rows={most_rows} max_state_json_bytes={most_bytes}"
            )
            edges.append([label, kind, f"{rows:,}", f"{most_rows:,}", f"{most_bytes:,}"])
    if args.markdown:
        markdown(args.markdown, kinds, edges, args, time.monotonic() - began)


def markdown(
    path: Path, kinds: list[list[str]], edges: list[list[str]], args: argparse.Namespace,
    seconds: float,
) -> None:  # fmt: skip
    report.write(path, [
        "# The temporal windows' pure core",
        "",
        report.measured(__file__, seconds),
        "",
        report.parameters({"events": args.events, "keys": args.keys}),
        "",
        *report.table(KINDS, kinds),
        "",
        "No Spark, no Kafka: the per-key steps a stateful operator runs, in a plain loop, "
        "single-threaded. Events (starts 100 ms apart on average, lifetimes up to 2 min) go in "
        "batches of 1000, each closed by a CTI at the batch's last start; every step's state "
        "makes a JSON round trip, as through a state store. Seconds: wall time of the whole "
        "run; most state rows: the most rows all keys' states held at once.",
        "",
        "One start edge open for an hour or a day, a point event each minute, windows 10 s "
        "hopping every 1 s: HoppingWindow2 against the plain hopping window.",
        "",
        *report.table(EDGES, edges, left=2),
    ])  # fmt: skip


if __name__ == "__main__":
    main()
