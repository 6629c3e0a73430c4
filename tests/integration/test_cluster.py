"""The jobs on a real Spark standalone cluster (a master and two workers, each its own JVM), with a
``file://`` checkpoint URI, against brute-force oracles (and, for hashtags, the same job on
``local[2]``); each job's driver is killed (SIGKILL) mid-stream and started again. The temporal
windows job runs its Python state processor in the workers' Python processes."""

from __future__ import annotations

import re
import sys
import uuid
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from connectors.avro import AvroCodec
from connectors.kafka import ensure_topics
from tests.integration.test_hashtags_job import (
    HOP_MS,
    LATENESS_MS,
    SIZE_MS,
    TOP,
    finals_of,
    make_tweets,
    oracle_finals,
    produce,
    watermark_after,
)
from tests.integration.test_sensors_job import Job, make_events
from tests.integration.test_sensors_job import job_command as sensors_command
from tests.integration.test_sensors_job import oracle as sensors_oracle
from tests.integration.test_windows_job import LATENESS_MS as WINDOWS_LATENESS_MS
from tests.integration.test_windows_job import Topics, make_lines, produce_lines, snapshot_sums
from tests.support.jobs import kill_after, run_to_end
from tests.support.kafka import read_all
from tests.support.queries import SLOW_TEST_TIMEOUT
from tests.support.spark_cluster import StandaloneCluster

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    folder = tmp_path_factory.mktemp("spark-cluster")
    with StandaloneCluster(folder, workers=2, memory="2g") as spark:
        yield spark


def job_command(bootstrap: str, topics: dict[str, str], master: str, checkpoint: str) -> list[str]:
    return [
        sys.executable, "-m", "trending.cli", "run", "hashtags", "--available-now",
        "--warm-up-rows", "2000",
        "--master", master, "--checkpoint", checkpoint, "--bootstrap-servers", bootstrap,
        "--input-topic", topics["tweets"], "--output-topic", topics["trending"],
        "--late-topic", topics["late"], "--dead-letter-topic", topics["dlq"],
        "--size", f"{SIZE_MS}ms", "--hop", f"{HOP_MS}ms", "--lateness", f"{LATENESS_MS}ms",
        "--top", str(TOP), "--max-offsets-per-trigger", "400", "--metrics-port", "0",
    ]  # fmt: skip


def records(bootstrap: str, topic: str) -> list[dict[str, Any]]:
    codec = AvroCodec("trending_topk")
    return [codec.decode(r.value) for r in read_all(bootstrap, topic)]


@pytest.mark.timeout(SLOW_TEST_TIMEOUT)
def test_hashtags_on_a_standalone_cluster_equal_local_and_survive_a_killed_driver(
    kafka_bootstrap: str, cluster: StandaloneCluster, tmp_path: Path
) -> None:
    tag = uuid.uuid4().hex[:8]
    tweets_topic = f"tweets-cluster-{tag}"
    ensure_topics(kafka_bootstrap, [tweets_topic], partitions=4)
    tweets = make_tweets(6_000, seed=11)
    produce(kafka_bootstrap, tweets_topic, tweets)

    def topics(run: str) -> dict[str, str]:
        names = {n: f"{n}-{run}-{tag}" for n in ("trending", "late", "dlq")}
        return {"tweets": tweets_topic, **names}

    local, on_cluster = topics("local"), topics("cluster")
    command = job_command(kafka_bootstrap, on_cluster, cluster.master_url, f"file://{tmp_path}/c")
    with ThreadPoolExecutor(1) as pool:  # the local run beside the cluster's: starts overlap
        local_run = pool.submit(
            run_to_end, job_command(kafka_bootstrap, local, "local[2]", f"file://{tmp_path}/local")
        )
        killed = kill_after(command, r"batch 3: \d+ revisions")
        assert "batch 3:" in killed
        restarted = run_to_end(command)
        local_run.result()
    assert re.search(r"hashtags job stopped: \d+ micro-batches", restarted)

    expected = oracle_finals(tweets, watermark_after(tweets))
    local_records = records(kafka_bootstrap, local["trending"])
    cluster_records = records(kafka_bootstrap, on_cluster["trending"])
    assert finals_of(local_records) == expected  # also: no window finalized twice
    assert finals_of(cluster_records) == expected
    revisions = Counter((r["window_start"], r["revision"]) for r in cluster_records)
    assert max(revisions.values()) == 1, "a (window, revision) was published twice"


@pytest.mark.timeout(SLOW_TEST_TIMEOUT)
def test_sensors_on_a_standalone_cluster_equal_the_seed_model_across_a_killed_driver(
    kafka_bootstrap: str, cluster: StandaloneCluster, tmp_path: Path
) -> None:
    # one global window: its numbering crosses executors (windows per sensor run locally too)
    job = Job(kafka_bootstrap, tmp_path)
    events = make_events(1_600, 700, seed=23)
    job.produce(events)
    command = sensors_command(
        job, "--size", "30", "--max-offsets-per-trigger", "400", master=cluster.master_url
    )
    kill_after(command, r"batch 2: \d+ readings")
    restarted = run_to_end(command)
    assert re.search(r"sensors job stopped: \d+ micro-batches", restarted)
    assert job.results() == sensors_oracle(events, 30, 3, False)


@pytest.mark.timeout(SLOW_TEST_TIMEOUT)
def test_temporal_windows_on_a_standalone_cluster_equal_a_sweep_across_a_killed_driver(
    kafka_bootstrap: str, cluster: StandaloneCluster, tmp_path: Path
) -> None:
    topics = Topics(kafka_bootstrap)
    lines = make_lines(keys=6, events=800, seed=59)
    produce_lines(topics, lines, tmp_path)
    spec = tmp_path / "snapshot.json"
    spec.write_text('{"kind": "snapshot", "aggregate": "sum"}')
    command = [
        sys.executable, "-m", "trending.cli", "run", "windows", str(spec), "--available-now",
        "--master", cluster.master_url, "--checkpoint", f"file://{tmp_path}/checkpoint",
        "--lateness", f"{WINDOWS_LATENESS_MS}ms", "--max-offsets-per-trigger", "200",
        *topics.flags(),
    ]  # fmt: skip
    kill_after(command, r"batch 1: \d+ events")
    restarted = run_to_end(command)
    assert re.search(r"windows job stopped: \d+ micro-batches", restarted)
    assert topics.letters(topics.late) == []
    assert topics.rows() == snapshot_sums(lines)
