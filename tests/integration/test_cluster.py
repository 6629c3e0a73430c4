"""The jobs on a real Spark standalone cluster (a master and two workers, each its own JVM), with a
``file://`` checkpoint URI, against brute-force oracles (and, for hashtags, the same job on
``local[2]``); each job's driver is killed (SIGKILL) mid-stream and started again. The temporal
windows job runs its Python state processor in the workers' Python processes. The three jobs
run side by side, each an application with one executor on each worker (a job's start leaves
the cores idle much of the time)."""

from __future__ import annotations

import re
import sys
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
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
from tests.support.spark_archive import CLIENT_COMPILER
from tests.support.spark_cluster import StandaloneCluster

pytestmark = [pytest.mark.integration, pytest.mark.chaos]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    folder = tmp_path_factory.mktemp("spark-cluster")
    with StandaloneCluster(folder, workers=2, cores=3, memory="3g") as spark:
        yield spark


# Each job an application of one 1-core executor on each worker, so three fit side by side
# (by default the first application would take every core and the others would wait); the
# executors use the quick JIT compiler only, as the tests' drivers do (short runs).
APPLICATION_SHARE = (
    "--conf", "spark.cores.max=2", "--conf", "spark.executor.cores=1",
    "--conf", f"spark.executor.extraJavaOptions={CLIENT_COMPILER}",
)  # fmt: skip

Check = Callable[[], None]


def job_command(bootstrap: str, topics: dict[str, str], master: str, checkpoint: str) -> list[str]:
    return [
        sys.executable, "-m", "trending.cli", "run", "hashtags", "--available-now",
        "--warm-up-rows", "0",
        "--master", master, "--checkpoint", checkpoint, "--bootstrap-servers", bootstrap,
        "--input-topic", topics["tweets"], "--output-topic", topics["trending"],
        "--late-topic", topics["late"], "--dead-letter-topic", topics["dlq"],
        "--size", f"{SIZE_MS}ms", "--hop", f"{HOP_MS}ms", "--lateness", f"{LATENESS_MS}ms",
        "--top", str(TOP), "--max-offsets-per-trigger", "400", "--metrics-port", "0",
    ]  # fmt: skip


def records(bootstrap: str, topic: str) -> list[dict[str, Any]]:
    codec = AvroCodec("trending_topk")
    return [codec.decode(r.value) for r in read_all(bootstrap, topic)]


def hashtags_run(bootstrap: str, master: str, tmp_path: Path) -> Check:
    """Hashtags on the cluster, its driver killed after batch 3 and restarted, and on
    ``local[2]`` beside it: both publish the independent count's finals, each window's final
    once, and no (window, revision) twice."""
    tag = uuid.uuid4().hex[:8]
    tweets_topic = f"tweets-cluster-{tag}"
    ensure_topics(bootstrap, [tweets_topic], partitions=4)
    tweets = make_tweets(6_000, seed=11)
    produce(bootstrap, tweets_topic, tweets)

    def topics(run: str) -> dict[str, str]:
        names = {n: f"{n}-{run}-{tag}" for n in ("trending", "late", "dlq")}
        return {"tweets": tweets_topic, **names}

    local, on_cluster = topics("local"), topics("cluster")
    command = [
        *job_command(bootstrap, on_cluster, master, f"file://{tmp_path}/c"),
        *APPLICATION_SHARE,
    ]
    with ThreadPoolExecutor(1) as pool:  # the local run beside the cluster's: starts overlap
        local_run = pool.submit(
            run_to_end, job_command(bootstrap, local, "local[2]", f"file://{tmp_path}/local")
        )
        killed = kill_after(command, r"batch 3: \d+ revisions")
        assert "batch 3:" in killed
        restarted = run_to_end(command)
        local_run.result()

    def check() -> None:
        assert re.search(r"hashtags job stopped: \d+ micro-batches", restarted)
        expected = oracle_finals(tweets, watermark_after(tweets))
        cluster_records = records(bootstrap, on_cluster["trending"])
        assert finals_of(records(bootstrap, local["trending"])) == expected  # none twice, too
        assert finals_of(cluster_records) == expected
        revisions = Counter((r["window_start"], r["revision"]) for r in cluster_records)
        assert max(revisions.values()) == 1, "a (window, revision) was published twice"

    return check


def sensors_run(bootstrap: str, master: str, tmp_path: Path) -> Check:
    """Sensors with one global window (its numbering crosses executors; windows per sensor run
    locally too), its driver killed after batch 2 and restarted: the seed model's matches and
    popular readings."""
    job = Job(bootstrap, tmp_path)
    events = make_events(1_600, 700, seed=23)
    job.produce(events)
    command = sensors_command(
        job, "--window-readings", "30", "--max-offsets-per-trigger", "400", *APPLICATION_SHARE,
        master=master,
    )  # fmt: skip
    kill_after(command, r"batch 2: \d+ readings")
    restarted = run_to_end(command)

    def check() -> None:
        assert re.search(r"sensors job stopped: \d+ micro-batches", restarted)
        assert job.results() == sensors_oracle(events, 30, 3, False)

    return check


def windows_run(bootstrap: str, master: str, tmp_path: Path) -> Check:
    """Temporal snapshot sums per key, the driver killed after batch 1 and restarted: nothing
    late, and every row of a sweep written in the test."""
    topics = Topics(bootstrap)
    lines = make_lines(keys=6, events=800, seed=59)
    produce_lines(topics, lines, tmp_path)
    spec = tmp_path / "snapshot.json"
    spec.write_text('{"kind": "snapshot", "aggregate": "sum"}')
    command = [
        sys.executable, "-m", "trending.cli", "run", "windows", str(spec), "--available-now",
        "--master", master, "--checkpoint", f"file://{tmp_path}/checkpoint",
        "--lateness", f"{WINDOWS_LATENESS_MS}ms", "--max-offsets-per-trigger", "200",
        *topics.flags(), *APPLICATION_SHARE,
    ]  # fmt: skip
    kill_after(command, r"batch 1: \d+ events")
    restarted = run_to_end(command)

    def check() -> None:
        assert re.search(r"windows job stopped: \d+ micro-batches", restarted)
        assert topics.letters(topics.late) == []
        assert topics.rows() == snapshot_sums(lines)

    return check


@pytest.mark.timeout(SLOW_TEST_TIMEOUT)
def test_every_job_on_a_standalone_cluster_equals_its_model_across_a_killed_driver(
    kafka_bootstrap: str, cluster: StandaloneCluster, tmp_path: Path
) -> None:
    """Hashtags, sensors and temporal windows side by side on the cluster, each driver killed
    (SIGKILL) mid-stream and restarted from its ``file://`` checkpoint (see each ``*_run``)."""
    runs = {"hashtags": hashtags_run, "sensors": sensors_run, "windows": windows_run}
    with ThreadPoolExecutor(len(runs)) as pool:
        started = {}
        for name, run in runs.items():
            folder = tmp_path / name
            folder.mkdir()
            started[name] = pool.submit(run, kafka_bootstrap, cluster.master_url, folder)
        checks = {name: future.result() for name, future in started.items()}
    for check in checks.values():
        check()
