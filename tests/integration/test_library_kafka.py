"""``trending.publish_exactly_once`` on a plain ``SparkSession.builder`` session and a real broker:
a library function's streaming output published to Kafka, each row once, also when Spark runs
the last micro-batch again (its commit lost, as after a crash between Kafka's commit and
Spark's).

Input: rows of seeded random keys and values, as JSON files of a folder (each file one
micro-batch). The window: an SPL tumbling window of 2 tuples per key; by the rule a key's
``n``-th flush holds its rows ``2n-1`` and ``2n`` in order, whatever the cut into batches.
"""

from __future__ import annotations

import json
import os
import random
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from connectors.kafka import ensure_topics
from tests.support.kafka import read_all
from tests.support.plain_session import plain_session

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    yield from plain_session("tests-library-kafka")


def write_file(folder: Path, number: int, rows: list[tuple[str, int]]) -> None:
    path = folder / f"{number:04d}.json"
    path.write_text("".join(json.dumps({"k": k, "seq": s}) + "\n" for k, s in rows))
    stamp = time.time() + number
    os.utime(path, (stamp, stamp))


def publish(spark: Any, folder: Path, checkpoint: Path, bootstrap: str, topic: str) -> Any:
    from pyspark.sql import functions as F

    from trending import publish_exactly_once, spl_window

    rows = spark.readStream.schema("k STRING, seq INT").option("maxFilesPerTrigger", 1)
    flushes = rows.json(str(folder)).transform(
        spl_window, {"kind": "tumbling", "evict": {"count": 2}}, key="k", order_by="seq",
        kinds=["before_flush"],
    )  # fmt: skip
    out = flushes.select(
        F.lit(topic).alias("topic"),
        F.col("k").alias("key"),
        F.to_json(F.transform("tuples", lambda t: t["seq"])).alias("value"),
    )
    publication = publish_exactly_once(
        out, bootstrap=bootstrap, checkpoint=str(checkpoint), name="flushes",
        available_now=True,
    )  # fmt: skip
    try:
        publication.await_termination(300)
    finally:
        publication.stop()
    return publication


def test_a_library_stream_goes_to_kafka_once_also_when_a_batch_runs_again(
    spark: Any, tmp_path: Path, kafka_bootstrap: str, unique_topic: Any
) -> None:
    rng = random.Random(7)
    rows = [(rng.choice("abc"), seq) for seq in range(60)]
    topic = unique_topic("flushes")
    ensure_topics(kafka_bootstrap, [topic], partitions=2)
    folder, checkpoint = tmp_path / "in", tmp_path / "cp"
    folder.mkdir()
    for number, part in enumerate([rows[:17], rows[17:40], rows[40:]]):
        write_file(folder, number, part)
    first = publish(spark, folder, checkpoint, kafka_bootstrap, topic)
    assert first.batches_published >= 3

    expected: list[tuple[str, list[int]]] = []
    for key in "abc":
        seqs = [s for k, s in rows if k == key]
        expected += [(key, seqs[i : i + 2]) for i in range(0, len(seqs) - 1, 2)]
    got = [(r.key.decode(), json.loads(r.value)) for r in read_all(kafka_bootstrap, topic)]
    assert sorted(got) == sorted(expected)

    # Spark's commit of the last micro-batch lost: the batch runs again, its output is skipped
    commits = checkpoint / "spark" / "commits"
    last = max(int(p.name) for p in commits.iterdir() if p.name.isdigit())
    (commits / str(last)).unlink()
    (commits / f".{last}.crc").unlink(missing_ok=True)
    again = publish(spark, folder, checkpoint, kafka_bootstrap, topic)
    assert again.batches_published == 0
    assert len(read_all(kafka_bootstrap, topic)) == len(expected)


def test_the_kafka_example_publishes_each_final_window_once(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    """``examples/library_kafka.py``, run twice on one checkpoint as a user would: per user,
    the clicks of each 10-second tumbling window ``[10 s * n, 10 s * (n + 1))``, published once
    the watermark (newest click - 5 s) passes the window's end. A second run, after one later
    click, makes every window of the first clicks final; none comes out twice."""
    import uuid

    from confluent_kafka import Producer

    from tests.support.examples import run_example

    tag = uuid.uuid4().hex[:8]
    clicks_topic, counts_topic = f"clicks-{tag}", f"click-counts-{tag}"
    ensure_topics(kafka_bootstrap, [clicks_topic, counts_topic], partitions=2)
    rng = random.Random(5)
    t0 = 1_700_000_000_000
    first = [(rng.choice("abc"), t0 + rng.randrange(0, 60_000)) for _ in range(120)]
    producer = Producer({"bootstrap.servers": kafka_bootstrap})

    def send(clicks: list[tuple[str, int]]) -> None:
        for user, ts in clicks:
            producer.produce(clicks_topic, json.dumps({"user": user, "ts": ts}).encode())
        assert producer.flush(30) == 0

    def run() -> list[str]:
        return run_example(
            "library_kafka.py", "--bootstrap", kafka_bootstrap, "--input-topic", clicks_topic,
            "--output-topic", counts_topic, "--checkpoint", str(tmp_path / "cp"),
            "--available-now", timeout=300,
        )  # fmt: skip

    send(first)
    run()
    send([("z", t0 + 200_000)])
    run()
    expected: dict[tuple[str, int], int] = {}
    for user, ts in first:
        start = ts - ts % 10_000
        expected[(user, start)] = expected.get((user, start), 0) + 1
    got = [json.loads(r.value) for r in read_all(kafka_bootstrap, counts_topic)]
    windows = [(g["user"], g["start"]) for g in got]
    assert len(windows) == len(set(windows)), "a window was published twice"
    assert {(g["user"], g["start"]): g["clicks"] for g in got} == expected
    assert all(g["end"] - g["start"] == 10_000 for g in got)
