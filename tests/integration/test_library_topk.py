"""``trending.SlidingTopK`` on a plain ``SparkSession.builder`` session: the k most frequent keys
of every sliding event-time window, revisions on change, finals on close, late rows routed.

Input: seeded random rows (a skewed key, sometimes null; an event time in ms that drifts forward
with jumps back, sometimes null). A stream gets them as JSON files added to a folder between
``processAllAvailable()`` calls, each file one micro-batch; it runs with two seeded cuts into
files, the first run stopped after its second file and continued by a new query and a new
``SlidingTopK`` on the same checkpoint. Then the last micro-batch's commit is removed, as a crash
between the writer and Spark's commit would leave it: the restarted query runs that batch again
and must hand over the same rows. A batch DataFrame gets all rows at once.

The expected rows come from a brute force written below from the rules in ``docs/library.md``
(count every window of every row, compare whole top-k lists), not from ``trending.windows``.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import random
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.examples import run_example
from tests.support.plain_session import plain_session

pytestmark = pytest.mark.integration

T0 = 1_700_000_000_000
SIZE, HOP, ALIGN, K, LATENESS = 60_000, 20_000, 5_000, 3, 15_000
Row = tuple[str | None, int | None]
Out = tuple[int, int, bool, tuple[tuple[str, int], ...]]  # window start, revision, final, top


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    yield from plain_session("tests-library-topk")


def random_rows(seed: int, count: int) -> list[Row]:
    rng = random.Random(seed)
    keys = [f"k{i}" for i in range(8)]
    weights = [8, 6, 5, 4, 3, 2, 1, 1]
    rows: list[Row] = []
    clock = T0
    for _ in range(count):
        clock += rng.randrange(0, 4_000)
        t: int | None = clock - (rng.randrange(0, 90_000) if rng.random() < 0.15 else 0)
        if rng.random() < 0.03:
            t = None
        key = None if rng.random() < 0.05 else rng.choices(keys, weights)[0]
        rows.append((key, t))
    return rows


def cut(rows: list[Row], seed: int, parts: int) -> list[list[Row]]:
    rng = random.Random(seed)
    points = sorted(rng.sample(range(1, len(rows)), parts - 1))
    return [rows[a:b] for a, b in zip([0, *points], [*points, len(rows)], strict=True)]


def top_of(counts: Counter[str]) -> tuple[tuple[str, int], ...]:
    return tuple(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:K])


def starts_of(t: int, size: int = SIZE, hop: int = HOP) -> list[int]:
    """The starts ``s ≡ ALIGN (mod hop)`` of the windows ``[s, s + size)`` holding ``t``."""
    newest = t - (t - ALIGN) % hop
    candidates = [newest - j * hop for j in range(size // hop + 1, -1, -1)]
    return [s for s in candidates if s <= t < s + size]


def model(batches: list[list[Row]]) -> tuple[list[list[Out]], list[list[tuple[Row, str]]]]:
    """Per micro-batch: the published rows, and the rows not counted with their reason."""
    counts: dict[int, Counter[str]] = {}
    published: dict[int, tuple[tuple[tuple[str, int], ...], int]] = {}
    newest: int | None = None
    outs, lates = [], []
    for rows in batches:
        before = None if newest is None else newest - LATENESS
        changed: set[int] = set()
        late: list[tuple[Row, str]] = []
        for key, t in rows:
            if t is None:
                late.append(((key, t), "no event time"))
                continue
            starts = starts_of(t)
            if before is not None and max(starts) + SIZE <= before:
                late.append(((key, t), "late"))
                continue
            newest = t if newest is None else max(newest, t)
            if key is None:
                continue
            for s in starts:
                if before is None or s + SIZE > before:  # a final window never changes
                    counts.setdefault(s, Counter())[key] += 1
                    changed.add(s)
        after = None if newest is None else newest - LATENESS
        out: list[Out] = []
        for s in sorted(changed):
            top = top_of(counts[s])
            last, revision = published.get(s, ((), 0))
            if top == last:
                continue
            closing = after is not None and s + SIZE <= after
            published[s] = (top, revision if closing else revision + 1)
            if not closing:
                out.append((s, revision + 1, False, top))
        for s in sorted(published):
            if after is not None and s + SIZE <= after:
                top, revision = published.pop(s)
                out.append((s, revision + 1, True, top))
        outs.append(sorted(out))
        lates.append(sorted(late, key=repr))
    return outs, lates


def ms(value: dt.datetime) -> int:
    return int(value.replace(tzinfo=dt.timezone.utc).timestamp() * 1000)


class Sink:
    """What the writer hands over, per batch id (a batch run again replaces its rows)."""

    def __init__(self) -> None:
        self.rows: dict[int, list[Out]] = {}
        self.late: dict[int, list[tuple[Row, str]]] = {}

    def handle(self, rows: Any, batch_id: int) -> None:
        got = []
        for r in rows.collect():
            assert ms(r.window_end) - ms(r.window_start) == SIZE
            top = tuple((e["key"], e["count"]) for e in r.top)
            got.append((ms(r.window_start), r.revision, r.is_final, top))
        self.rows[batch_id] = sorted(got)

    def on_late(self, rows: Any, batch_id: int) -> None:
        self.late[batch_id] = sorted((((r.tag, r.ts), r.reason) for r in rows.collect()), key=repr)


def write_file(folder: Path, number: int, rows: list[Row]) -> None:
    """File ``number``, dated so that the file source takes it after the ones before it."""
    path = folder / f"{number:04d}.json"
    path.write_text("".join(json.dumps({"tag": k, "ts": t}) + "\n" for k, t in rows))
    stamp = time.time() + number
    os.utime(path, (stamp, stamp))


def run_stream(spark: Any, folder: Path, checkpoint: Path, sink: Sink, k: int = K) -> None:
    """One query (a new ``SlidingTopK``) over the files not read yet, one micro-batch each."""
    from trending import SlidingTopK

    topk = SlidingTopK(size="1m", hop="20s", align="5s", k=k, lateness="15 seconds")
    stream = (
        spark.readStream.schema("tag STRING, ts LONG")
        .option("maxFilesPerTrigger", 1)
        .json(str(folder))
    )
    query = topk.start(
        stream, sink.handle, key="tag", time="ts", checkpoint=str(checkpoint),
        on_late=sink.on_late,
    )  # fmt: skip
    try:
        query.processAllAvailable()
    finally:
        query.stop()


def with_data(per_batch: dict[int, list[Any]]) -> list[list[Any]]:
    """The non-empty entries in batch order: Spark also runs micro-batches without new rows
    (after one that moved the watermark), which publish nothing."""
    return [rows for _, rows in sorted(per_batch.items()) if rows]


@pytest.mark.parametrize("seed", [11, 29])
def test_stream_matches_model_across_restart_and_replay(
    spark: Any, tmp_path: Path, seed: int
) -> None:
    rows = random_rows(seed, 400)
    batches = cut(rows, seed, 6)
    # a last batch that leaves the watermark where it is, so Spark runs no batch after it
    newest = max(t for _, t in rows if t is not None)
    batches.append([("k0", newest), ("k5", newest), ("k5", newest - 1)])
    expected, expected_late = model(batches)
    folder, checkpoint = tmp_path / "in", tmp_path / "cp"
    folder.mkdir()
    sink = Sink()
    for number in range(2):
        write_file(folder, number, batches[number])
    run_stream(spark, folder, checkpoint, sink)
    for number in range(2, len(batches)):  # a new query on the same checkpoint
        write_file(folder, number, batches[number])
    run_stream(spark, folder, checkpoint, sink)

    assert with_data(sink.rows) == [b for b in expected if b]
    assert sum(len(b) for b in expected) > 10 and any(r[2] for b in expected for r in b)
    assert with_data(sink.late) == [b for b in expected_late if b]
    assert any(reason == "late" for b in expected_late for _, reason in b)

    # a crash after the writer handed the last batch over and before Spark committed it
    last = max(sink.rows)
    assert sink.rows[last] == expected[-1] != []
    (checkpoint / "commits" / str(last)).unlink()
    (checkpoint / "commits" / f".{last}.crc").unlink(missing_ok=True)
    replayed = Sink()
    run_stream(spark, folder, checkpoint, replayed)
    assert replayed.rows == {last: expected[-1]}

    # the checkpoint keeps its settings: another k is refused, nothing handed over
    write_file(folder, len(batches), batches[0])
    other = Sink()
    with pytest.raises(Exception, match="holds a top-k of other settings"):
        run_stream(spark, folder, checkpoint, other, k=K + 1)
    assert other.rows == {}


@pytest.mark.parametrize("size,hop", [(SIZE, HOP), (50_000, 20_000)])
def test_batch_dataframe_gives_each_window_once(spark: Any, size: int, hop: int) -> None:
    """Also with a hop that does not divide the size (windows of 50 s every 20 s)."""
    from trending import SlidingTopK

    rows = random_rows(5, 300)
    df = spark.createDataFrame(
        [(k, None if t is None else dt.datetime.fromtimestamp(t / 1000, dt.timezone.utc))
         for k, t in rows],
        "tag STRING, ts TIMESTAMP",
    )  # fmt: skip
    topk = SlidingTopK(size=size, hop=hop, align=ALIGN, k=K)
    got = [
        (ms(r.window_start), r.revision, r.is_final, tuple((e["key"], e["count"]) for e in r.top))
        for r in df.transform(topk, key="tag", time="ts").collect()
    ]
    counts: dict[int, Counter[str]] = {}
    for key, t in rows:
        if key is not None and t is not None:
            for s in starts_of(t, size, hop):
                counts.setdefault(s, Counter())[key] += 1
    assert got == [(s, 1, True, top_of(counts[s])) for s in sorted(counts)]


def test_settings_and_columns_are_checked_at_once(spark: Any) -> None:
    from trending import SlidingTopK, TopKError

    with pytest.raises(TopKError) as error:
        SlidingTopK(size="0s", hop="20s", k=0, emit="never")
    message = str(error.value)
    assert "must be positive" in message and "k must be" in message and "emit" in message
    with pytest.raises(TopKError, match="duration"):
        SlidingTopK(size="5 fortnights", hop="1m")
    df = spark.createDataFrame([("a", "x")], "tag STRING, ts STRING")
    with pytest.raises(TopKError, match="timestamp or epoch milliseconds"):
        df.transform(SlidingTopK(size="1m", hop="1m"), key="tag", time="ts")
    with pytest.raises(TopKError, match="no column 'nope'"):
        df.transform(SlidingTopK(size="1m", hop="1m"), key="nope", time="ts")


def test_the_example_runs_on_a_plain_session() -> None:
    lines = run_example("library_sliding_topk.py", "--finals", "3")
    # the batch: 10-second windows every 5 seconds, top 2 (count desc, then page asc)
    assert lines[:4] == [
        "batch: [23:59:55, 00:00:05) final: home 2, blog 1",
        "batch: [00:00:00, 00:00:10) final: docs 3, home 3",
        "batch: [00:00:05, 00:00:15) final: blog 2, docs 2",
        "batch: [00:00:10, 00:00:20) final: blog 2, home 1",
    ]
    # a whole 4-second window of 20 clicks a second: a 40, b 20 and c 20 (b before c)
    assert any(line.endswith(" final: a 40, b 20") for line in lines[4:])
    assert any(" revision 1: " in line for line in lines[4:])
