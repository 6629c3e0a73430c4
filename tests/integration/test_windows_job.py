"""`trending run windows SPEC` through a real broker and Spark: the seed's HoppingWindow2 table
via `produce events --from-jsonl` and `consume`, a snapshot sum per key against a brute-force
sweep written here (for several batch splits), late and bad events routed, and three
SIGKILLs at seeded random points, each followed by a restart from the checkpoint.

Oracle of a snapshot window: per key, every event's final lifetime ``[s, e)`` (an edge: its
start to its end edge, or to the end of time); the sorted distinct starts and ends cut the
timeline into spans; each span some event covers is one row, its value the sum of the values
of the events covering it.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import re
import signal
import subprocess
import sys
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from connectors.avro import AvroCodec
from connectors.kafka import ensure_topics
from tests.support.jobs import (
    CrashCase,
    kill_group,
    run_to_end,
    slow_first_python,
    start_job,
    wait_logged,
)
from tests.support.kafka import read_all
from tests.support.queries import SLOW_TEST_TIMEOUT, await_end
from tests.support.spark_cluster import cluster_env

pytestmark = pytest.mark.integration
T0 = 1_700_000_000_000
EOT = 253_402_300_799_999  # 9999-12-31T23:59:59.999Z, the end of time
SEED_SPEC = {
    "kind": "hopping", "duration": "5s", "hop": "2s", "alignment": "2012-03-15T12:00:00Z",
    "aggregate": "count", "snap": True,
}  # fmt: skip
SEED_LINES = [
    {"start": "2012-06-28T00:00:00Z", "id": "e0", "value": 1},
    {"start": "2012-06-28T00:00:01Z", "id": "e1", "value": 1},
    {"end_edge": "e1", "end": "2012-06-28T00:00:02Z"},
    {"start": "2012-06-28T00:00:03Z", "id": "e2", "value": 1},
    {"start": "2012-06-28T00:00:09Z", "id": "e3", "value": 1},
    {"end_edge": "e2", "end": "2012-06-28T00:00:10Z"},
    {"end_edge": "e3", "end": "2012-06-28T00:00:10Z"},
]
# the seed's "Query" table: (start, end, count), seconds after 2012-06-28T00:00:00Z
SEED_QUERY = [(1, 3, 1), (3, 5, 2), (5, 7, 3), (7, 11, 2), (11, 15, 3), (15, None, 1)]
SEED_T0 = 1_340_841_600_000  # 2012-06-28T00:00:00Z
# More than a batch spans: a rate-limited batch may end its partitions seconds apart in time.
LATENESS_MS = 20_000


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    from trending.spark.session import build_session

    session = build_session("tests-windows", "local[2]", shuffle_partitions=3)
    yield session
    session.stop()


class Topics:
    def __init__(self, bootstrap: str) -> None:
        tag = uuid.uuid4().hex[:8]
        self.bootstrap = bootstrap
        self.input = f"interval-events-{tag}"
        self.output = f"window-rows-{tag}"
        self.late = f"interval-events-late-{tag}"
        self.dlq = f"interval-events-{tag}-dlq"

    def flags(self) -> list[str]:
        return [
            "--bootstrap-servers", self.bootstrap, "--input-topic", self.input,
            "--output-topic", self.output, "--late-topic", self.late,
            "--dead-letter-topic", self.dlq, "--metrics-port", "0",
        ]  # fmt: skip

    def rows(self) -> Counter[tuple[Any, ...]]:
        codec = AvroCodec("window_row")
        rows = [codec.decode(r.value) for r in read_all(self.bootstrap, self.output)]
        return Counter((r["key"], _ms(r["start"]), _ms(r["end"]), r["value"]) for r in rows)

    def letters(self, topic: str) -> list[dict[str, Any]]:
        codec = AvroCodec("dead_letter")
        return [codec.decode(r.value) for r in read_all(self.bootstrap, topic)]


def _ms(value: Any) -> int | None:
    if value is None or isinstance(value, int):
        return value
    return int(value.timestamp() * 1000)


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    command = [sys.executable, "-m", "trending.cli", *args]
    return subprocess.run(
        command, capture_output=True, text=True, timeout=600, env=env, check=False
    )


def produce_lines(topics: Topics, lines: list[dict[str, Any]], tmp_path: Path) -> None:
    source = tmp_path / f"{topics.input}.jsonl"
    source.write_text("".join(json.dumps(line) + "\n" for line in lines))
    done = cli("produce", "events", "--from-jsonl", str(source), "--topic", topics.input,
               "--bootstrap-servers", topics.bootstrap, "--partitions", "3")  # fmt: skip
    assert done.returncode == 0, done.stderr


def test_the_seed_query_table_through_kafka_and_spark(kafka_bootstrap: str, tmp_path: Path) -> None:
    topics = Topics(kafka_bootstrap)
    produce_lines(topics, SEED_LINES, tmp_path)
    spec = tmp_path / "seed.json"
    spec.write_text(json.dumps(SEED_SPEC))
    run = cli("run", "windows", str(spec), "--available-now", "--checkpoint",
              f"file://{tmp_path}/checkpoint", *topics.flags())  # fmt: skip
    assert run.returncode == 0, run.stderr[-4000:]
    expected = Counter(
        (None, SEED_T0 + s * 1000, None if e is None else SEED_T0 + e * 1000, float(n))
        for s, e, n in SEED_QUERY
    )
    assert topics.rows() == expected


def make_lines(keys: int, events: int, seed: int) -> list[dict[str, Any]]:
    """Intervals and start edges (most closed later by end edges) over a few keys, in rough
    time order (jitter well under the lateness), with a few CTIs well behind the newest time."""
    rng = random.Random(seed)
    lines: list[dict[str, Any]] = []
    open_edges: list[tuple[str, str, int]] = []
    for i in range(events):
        now = T0 + i * 100 + rng.randrange(300)
        key = f"k{rng.randrange(keys)}"
        if open_edges and rng.random() < 0.3:
            id, edge_key, start = open_edges.pop(rng.randrange(len(open_edges)))
            lines.append({"end_edge": id, "end": max(now, start + 1), "key": edge_key})
        elif rng.random() < 0.25:
            open_edges.append((f"e{i}", key, now))
            lines.append({"start": now, "key": key, "id": f"e{i}", "value": rng.randrange(1, 9)})
        else:
            end = now + rng.choice([1, 50, 400, 2_000])
            lines.append({"start": now, "end": end, "key": key, "value": rng.randrange(1, 9)})
        if i % 97 == 96:
            lines.append({"cti": now - LATENESS_MS})
    return lines


def snapshot_sums(lines: list[dict[str, Any]]) -> Counter[tuple[Any, ...]]:
    """The rows of a snapshot sum per key over the whole input (see the module docstring)."""
    lifetimes: dict[str, list[tuple[int, int, float]]] = {}
    edges: dict[str, tuple[str, int, float]] = {}
    for line in lines:
        if "cti" in line:
            continue
        if "end_edge" in line:
            key, start, value = edges.pop(line["end_edge"])
            lifetimes.setdefault(key, []).append((start, line["end"], value))
        elif "end" in line:
            lifetimes.setdefault(line["key"], []).append(
                (line["start"], line["end"], line["value"])
            )
        else:
            edges[line["id"]] = (line["key"], line["start"], line["value"])
    for key, start, value in edges.values():
        lifetimes.setdefault(key, []).append((start, EOT, value))
    rows: Counter[tuple[Any, ...]] = Counter()
    for key, spans in lifetimes.items():
        cuts = sorted({t for s, e, _ in spans for t in (s, e)})
        for a, b in itertools.pairwise(cuts):
            covering = [v for s, e, v in spans if s <= a < e]
            if covering:
                rows[(key, a, None if b == EOT else b, float(sum(covering)))] += 1
    return rows


@pytest.mark.parametrize("batch", [None, 150], ids=["one-batch", "batches-of-150"])
def test_snapshot_sums_per_key_equal_a_sweep_for_any_batch_split(
    kafka_bootstrap: str, spark: Any, tmp_path: Path, batch: int | None
) -> None:
    from trending.jobs.windows import WindowsJobConfig, close_input, start_query

    topics = Topics(kafka_bootstrap)
    lines = make_lines(keys=5, events=700, seed=31)
    produce_lines(topics, lines, tmp_path)
    config = WindowsJobConfig(
        bootstrap=kafka_bootstrap, checkpoint=str(tmp_path / "checkpoint"),
        spec={"kind": "snapshot", "aggregate": "sum"}, input_topic=topics.input,
        output_topic=topics.output, late_topic=topics.late, dead_letter_topic=topics.dlq,
        lateness_ms=LATENESS_MS, available_now=True, max_offsets_per_trigger=batch,
    )  # fmt: skip
    query, processor = start_query(spark, config)
    await_end(query)
    assert query.exception() is None
    assert close_input(config, processor)
    query, processor = start_query(spark, config, processor=processor)
    await_end(query)
    processor.close()
    assert query.exception() is None
    if batch is not None:
        assert len([s for s in processor.history if not s.skipped]) > 3
    assert topics.letters(topics.late) == []
    assert topics.rows() == snapshot_sums(lines)


def test_late_and_bad_events_are_routed(kafka_bootstrap: str, spark: Any, tmp_path: Path) -> None:
    from trending.jobs.windows import WindowsJobConfig, close_input, start_query

    topics = Topics(kafka_bootstrap)
    ensure_topics(kafka_bootstrap, [topics.input], partitions=1)
    codec = AvroCodec("interval_event")
    on_time = [
        {"kind": "INTERVAL", "key": "a", "start": T0 + 10_000, "end": T0 + 12_000, "value": 2.0},
        {"kind": "INTERVAL", "key": "a", "start": T0 + 1_000, "end": T0 + 1_500, "value": 5.0},
    ]
    late = {"kind": "INTERVAL", "key": "a", "start": T0, "end": T0 + 100, "value": 1.0}
    bad = [
        b"\x07not avro",
        codec.encode({"kind": "INTERVAL", "key": "a", "start": T0 + 20_000, "end": T0 + 20_000}),
        codec.encode({"kind": "END_EDGE", "key": "a", "id": "nobody", "end": T0 + 20_000}),
        # bad clocks: year 9999, and a CTI in microseconds (it would close everything)
        codec.encode({"kind": "INTERVAL", "key": "a", "start": EOT - 5_000, "end": EOT - 10}),
        codec.encode({"kind": "CTI", "start": T0 * 1_000}),
    ]
    config = WindowsJobConfig(
        bootstrap=kafka_bootstrap, checkpoint=str(tmp_path / "checkpoint"),
        spec={"kind": "snapshot", "aggregate": "sum"}, input_topic=topics.input,
        output_topic=topics.output, late_topic=topics.late, dead_letter_topic=topics.dlq,
        lateness_ms=500, available_now=True,
    )  # fmt: skip
    _produce(kafka_bootstrap, topics.input, [codec.encode(r) for r in on_time])
    query, processor = start_query(spark, config)
    await_end(query)  # W is now 12 s - 0.5 s: the 0 s event comes too late
    _produce(kafka_bootstrap, topics.input, [codec.encode(late), *bad], HEADERS, RECORD_TS)
    query, processor = start_query(spark, config, processor=processor)
    await_end(query)
    assert close_input(config, processor)
    query, processor = start_query(spark, config, processor=processor)
    await_end(query)
    processor.close()
    late_letters = topics.letters(topics.late)
    assert [(d["offset"], d["reason"].split(":")[0]) for d in late_letters] == [(2, "late")]
    (late_record,) = read_all(kafka_bootstrap, topics.late)
    assert dict(late_record.headers) == {
        "origin.topic": topics.input.encode(),
        "origin.partition": b"0",
        "origin.offset": b"2",
    }
    # late and dead letters carry the record's own Kafka timestamp and headers
    routed = late_letters + topics.letters(topics.dlq)
    assert {(d["timestamp"], str(d["headers"])) for d in routed} == {
        (RECORD_TS, str([{"key": k, "value": v} for k, v in HEADERS]))
    }
    assert len(routed) == 6
    dead = sorted((d["offset"], d["reason"]) for d in topics.letters(topics.dlq))
    assert [offset for offset, _ in dead] == [3, 4, 5, 6, 7]
    # b"\x07not avro": enum index -4
    assert dead[0][1] == "enum index of field kind is out of range"
    assert "does not end after it starts" in dead[1][1]
    assert "no open start edge" in dead[2][1]
    assert dead[3][1] == dead[4][1] == "future-timestamp"
    assert topics.rows() == Counter(
        {("a", T0 + 1_000, T0 + 1_500, 5.0): 1, ("a", T0 + 10_000, T0 + 12_000, 2.0): 1}
    )


def test_adjust_moves_late_events_up_to_the_watermark(
    kafka_bootstrap: str, spark: Any, tmp_path: Path
) -> None:
    from trending.jobs.windows import WindowsJobConfig, close_input, start_query

    topics = Topics(kafka_bootstrap)
    ensure_topics(kafka_bootstrap, [topics.input], partitions=1)
    codec = AvroCodec("interval_event")
    config = WindowsJobConfig(
        bootstrap=kafka_bootstrap, checkpoint=str(tmp_path / "checkpoint"),
        spec={"kind": "snapshot", "aggregate": "sum", "violation": "adjust"},
        input_topic=topics.input, output_topic=topics.output, late_topic=topics.late,
        dead_letter_topic=topics.dlq, lateness_ms=500, available_now=True,
    )  # fmt: skip
    first = {"kind": "INTERVAL", "key": "a", "start": T0 + 10_000, "end": T0 + 12_000, "value": 2.0}
    _produce(kafka_bootstrap, topics.input, [codec.encode(first)])
    query, processor = start_query(spark, config)
    await_end(query)  # W = 10 s - 0.5 s
    late = {"kind": "INTERVAL", "key": "a", "start": T0, "end": T0 + 20_000, "value": 1.0}
    _produce(kafka_bootstrap, topics.input, [codec.encode(late)])
    query, processor = start_query(spark, config, processor=processor)
    await_end(query)
    assert close_input(config, processor)
    query, processor = start_query(spark, config, processor=processor)
    await_end(query)
    processor.close()
    assert topics.letters(topics.late) == []
    # the late event's lifetime starts at W = 9.5 s: [9.5, 20) beside [10, 12)
    assert topics.rows() == Counter({
        ("a", T0 + 9_500, T0 + 10_000, 1.0): 1, ("a", T0 + 10_000, T0 + 12_000, 3.0): 1,
        ("a", T0 + 12_000, T0 + 20_000, 1.0): 1,
    })  # fmt: skip


HEADERS = [("trace-id", b"\x00\x01"), ("no-value", None), ("trace-id", b"again")]
RECORD_TS = 1_700_000_000_321


def _produce(
    bootstrap: str,
    topic: str,
    values: list[bytes],
    headers: list[tuple[str, bytes | None]] | None = None,
    timestamp_ms: int = 0,
) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for value in values:
        producer.produce(
            topic, value, key=b"a", partition=0, headers=headers, timestamp=timestamp_ms
        )
    assert producer.flush(30) == 0


def snapshot_job(
    bootstrap: str, tmp_path: Path, seed: int, *flags: str, events: int = 900
) -> tuple[Topics, list[dict[str, Any]], list[str]]:
    """``events`` events over 4 keys in a new input topic, and the command of a snapshot-sum
    job over them (batches of 120 records) with ``flags``."""
    topics = Topics(bootstrap)
    lines = make_lines(keys=4, events=events, seed=seed)
    produce_lines(topics, lines, tmp_path)
    spec = tmp_path / "snapshot.json"
    spec.write_text(json.dumps({"kind": "snapshot", "aggregate": "sum"}))
    command = [
        sys.executable, "-m", "trending.cli", "run", "windows", str(spec),
        "--checkpoint", f"file://{tmp_path}/checkpoint", "--lateness", f"{LATENESS_MS}ms",
        "--max-offsets-per-trigger", "120", *flags, *topics.flags(),
    ]  # fmt: skip
    return topics, lines, command


def crash_case(bootstrap: str, tmp_path: Path) -> CrashCase:
    """Three SIGKILLs of driver and JVM at seeded random points, each followed by a restart
    from the checkpoint (taking over the dead owner's lease at once): the rows, read
    read_committed, equal the sweep's (none missing, none twice)."""
    flags = ("--available-now", "--max-offsets-per-trigger", "40")
    topics, lines, command = snapshot_job(bootstrap, tmp_path, 47, *flags, events=720)

    def check(log: str) -> None:
        assert re.search(r"windows job stopped: \d+ micro-batches", log)
        assert re.search(r"its owner pid \d+ on host .* is gone: taking over", log)
        assert topics.letters(topics.late) == []
        assert topics.rows() == snapshot_sums(lines)

    return CrashCase("windows", command, 47, check)


@pytest.mark.chaos
@pytest.mark.timeout(SLOW_TEST_TIMEOUT)
def test_one_process_per_checkpoint_and_a_stalled_owner_is_fenced(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    """A second job on a running job's checkpoint refuses to start; once the owner stalls
    (SIGSTOP) past --lease-timeout a new job takes over and finishes, and the stalled owner,
    resumed, stops without writing: the output equals the oracle, nothing twice."""
    topics, lines, command = snapshot_job(
        kafka_bootstrap, tmp_path, 53, "--trigger", "500ms", "--lease-timeout", "3s"
    )
    owner, owner_log = start_job(command)
    try:
        wait_logged(owner_log, r"batch 1: \d+ events")
        second = subprocess.run(
            [*command, "--available-now"], capture_output=True, text=True, timeout=300,
            env=cluster_env(), check=False,
        )  # fmt: skip
        assert second.returncode != 0
        assert f"is in use by pid {owner.pid} on host" in second.stderr, second.stderr[-3000:]
        assert owner.poll() is None, "the owner must keep running"

        os.killpg(owner.pid, signal.SIGSTOP)
        stderr = run_to_end([*command, "--available-now"])
        assert f"no heartbeat from pid {owner.pid}" in stderr
        os.killpg(owner.pid, signal.SIGCONT)
        assert owner.wait(120) != 0
        wait_logged(owner_log, r"was taken over", timeout=10)
    finally:
        kill_group(owner)
    assert topics.letters(topics.late) == []
    assert topics.rows() == snapshot_sums(lines)
    again = run_to_end([*command, "--available-now"])  # released on exit: taken at once
    assert "checkpoint lease" not in again


@pytest.mark.chaos
def test_a_python_worker_missing_spark_s_fixed_10_s_has_the_job_start_again(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    """The first Python process Spark starts takes 12 s (an interpreter wrapper that sleeps
    once): the query fails on Spark's fixed 10 s for a Python worker to connect back, the job
    starts again from its checkpoint on its own, and the output equals the oracle. The query
    runs on the Python step (``spark.trending.temporal.engine=python``): the JVM step starts no
    Python worker."""
    engine = "spark.trending.temporal.engine=python"
    topics, lines, command = snapshot_job(
        kafka_bootstrap, tmp_path, 61, "--conf", engine, events=300
    )
    wrapper, once = slow_first_python(tmp_path)
    run = subprocess.run(
        [*command, "--available-now"], capture_output=True, text=True, timeout=300,
        env={**cluster_env(), "PYSPARK_PYTHON": str(wrapper)}, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    assert once.exists()
    assert "Python worker failed to connect back" in run.stderr
    assert re.search(r"starting again from the checkpoint \(run 2 of \d+\)", run.stderr)
    assert topics.letters(topics.late) == []
    assert topics.rows() == snapshot_sums(lines)
