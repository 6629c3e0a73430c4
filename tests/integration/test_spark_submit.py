"""Every job submitted with ``spark-submit`` from the installed wheel (no checkout on the path, no
TRENDING_JARS_DIR) to a real standalone master and worker, in client mode, as docs/deploy/index.md
says: ``spark-submit --master URL $(trending spark-args) run JOB ...``. Each equals its independent
model, and each is an application the master registered, with its executors on the worker: a job
that ran in local mode on the submitting machine fails the test."""

from __future__ import annotations

import json
import shlex
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from connectors.kafka import ensure_topics
from tests.integration.test_cluster import job_command as hashtags_command
from tests.integration.test_cluster import records
from tests.integration.test_hashtags_job import (
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
from tests.support.queries import SLOW_TEST_TIMEOUT
from tests.support.spark_cluster import HOST, StandaloneCluster, spark_home
from tests.support.wheel import Installed, install, run

pytestmark = [pytest.mark.integration, pytest.mark.chaos]

Check = Callable[[], None]
# The three applications side by side: two cores each (one executor of one core per worker)
SHARE = ["--conf", "spark.cores.max=2", "--conf", "spark.executor.cores=1"]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    return install(tmp_path_factory.mktemp("wheel"))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    folder = tmp_path_factory.mktemp("cluster")
    with StandaloneCluster(folder, workers=2, cores=3, memory="3g") as spark:
        yield spark


def submitted(installed: Installed, master: str, command: list[str]) -> list[str]:
    """``command`` (``python -m trending.cli ARGS``) as ``spark-submit`` from the installed
    package: the command of docs/deploy/index.md, ARGS without ``--master``."""
    args = command[command.index("trending.cli") + 1 :]
    if "--master" in args:
        at = args.index("--master")
        del args[at : at + 2]
    printed = run([str(installed.trending), "spark-args"], installed.work, installed.env)
    assert printed.returncode == 0, printed.stderr
    assert str(installed.venv) in printed.stdout  # the installed package's jar and file
    submit = [str(spark_home() / "bin" / "spark-submit"), "--master", master, *SHARE]
    return [*submit, *shlex.split(printed.stdout), *args]


def finish(installed: Installed, command: list[str]) -> str:
    """What the job told: spark-submit gives the Python driver's stderr on its stdout."""
    done = run(command, installed.work, installed.env, timeout=600)
    told = "\n".join(
        line for line in (done.stdout + done.stderr).splitlines() if not line.startswith("%")
    )
    assert done.returncode == 0, told[-4000:]
    assert "job stopped:" in told, told[-4000:]
    return told


def hashtags_run(installed: Installed, bootstrap: str, master: str, folder: Path) -> Check:
    tag = uuid.uuid4().hex[:8]
    topics = {n: f"{n}-submit-{tag}" for n in ("tweets", "trending", "late", "dlq")}
    tweets = make_tweets(3_000, seed=131)
    ensure_topics(bootstrap, [topics["tweets"]], partitions=3)
    produce(bootstrap, topics["tweets"], tweets)
    command = hashtags_command(bootstrap, topics, master, f"file://{folder}/c")
    told = finish(installed, submitted(installed, master, command))

    def check() -> None:
        expected = oracle_finals(tweets, watermark_after(tweets))
        assert finals_of(records(bootstrap, topics["trending"])) == expected, told[-3000:]

    return check


def sensors_run(installed: Installed, bootstrap: str, master: str, folder: Path) -> Check:
    job = Job(bootstrap, folder)
    events = make_events(1_200, 500, seed=137)
    job.produce(events)
    command = sensors_command(job, "--window-readings", "30", "--max-offsets-per-trigger", "400")
    told = finish(installed, submitted(installed, master, command))

    def check() -> None:
        assert job.results() == sensors_oracle(events, 30, 3, False), told[-3000:]

    return check


def windows_run(installed: Installed, bootstrap: str, master: str, folder: Path) -> Check:
    topics = Topics(bootstrap)
    lines = make_lines(keys=5, events=600, seed=139)
    produce_lines(topics, lines, folder)
    spec = folder / "snapshot.json"
    spec.write_text('{"kind": "snapshot", "aggregate": "sum"}')
    command = [
        "python", "-m", "trending.cli", "run", "windows", str(spec), "--available-now",
        "--checkpoint", f"file://{folder}/checkpoint", "--lateness", f"{WINDOWS_LATENESS_MS}ms",
        "--max-offsets-per-trigger", "200", *topics.flags(),
    ]  # fmt: skip
    told = finish(installed, submitted(installed, master, command))

    def check() -> None:
        assert topics.letters(topics.late) == [], told[-3000:]
        assert topics.rows() == snapshot_sums(lines), told[-3000:]

    return check


def state(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(f"{url}/json", timeout=10) as answer:
        found: dict[str, Any] = json.load(answer)
    return found


@pytest.mark.timeout(SLOW_TEST_TIMEOUT)
def test_spark_submit_runs_every_job_from_the_installed_wheel_on_a_standalone_cluster(
    installed: Installed, kafka_bootstrap: str, cluster: StandaloneCluster, tmp_path: Path
) -> None:
    runs = {"hashtags": hashtags_run, "sensors": sensors_run, "windows": windows_run}
    with ThreadPoolExecutor(len(runs)) as pool:
        started = {}
        for name, job in runs.items():
            (tmp_path / name).mkdir()
            started[name] = pool.submit(
                job, installed, kafka_bootstrap, cluster.master_url, tmp_path / name
            )
        checks = {name: future.result() for name, future in started.items()}
    for check in checks.values():
        check()
    master = state(f"http://{HOST}:{cluster.web_port}")
    apps = {app["name"]: app["id"] for app in master["completedapps"] + master["activeapps"]}
    executors: dict[str, int] = {}
    for worker in master["workers"]:
        found = state(worker["webuiaddress"])
        for executor in found["executors"] + found["finishedexecutors"]:
            executors[executor["appid"]] = executors.get(executor["appid"], 0) + 1
    for name in runs:
        assert f"trending-{name}" in apps, f"no application trending-{name} on the master: {apps}"
        assert executors.get(apps[f"trending-{name}"], 0) >= 1, (name, executors)
