"""Metrics against a real Prometheus: the hashtags job on the test broker, scraped every second.

Needs Debian's ``prometheus`` package (``prometheus`` and ``promtool`` on PATH); a missing binary
fails the test with the command to install it.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.test_hashtags_job import Job, make_tweets, produce
from tests.support.ports import free_port, retry_on_bind
from trending.jobs.hashtags import start_query
from trending.metrics import Metrics
from trending.spark.listener import Monitoring

pytestmark = pytest.mark.integration

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
DASHBOARD = DEPLOY / "grafana" / "dashboards" / "trending.json"
ALERTS = DEPLOY / "prometheus" / "alerts.yml"
SCRAPE_JOB = "trending-hashtags"
READY_WHEN = (
    "trending_kafka_lag_records",
    "trending_top_hashtag_count",
    "trending_batches_total > 2",
)
METRIC_NAME = re.compile(r"\btrending_[a-z0-9_]+")


def binary(name: str) -> str:
    """The path of ``name``; the test fails (never skips) when it is not installed."""
    path = shutil.which(name)
    if path is None:
        pytest.fail(
            f"{name} is not installed: run `apt-get update && apt-get install -y prometheus`"
        )
    return path


def test_promtool_accepts_config_and_rules_and_alerts_fire() -> None:
    promtool = binary("promtool")
    for command in (
        [promtool, "check", "config", str(DEPLOY / "prometheus" / "prometheus.yml")],
        [promtool, "check", "rules", str(ALERTS)],
        [promtool, "test", "rules", str(DEPLOY / "prometheus" / "alerts_test.yml")],
    ):
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stdout + done.stderr


def dashboard_queries() -> list[str]:
    """Every panel's PromQL, with Grafana's variables replaced by what Prometheus accepts."""
    panels = json.loads(DASHBOARD.read_text())["panels"]
    exprs = [t["expr"] for p in panels for t in p["targets"]]
    return [e.replace("$__rate_interval", "1m").replace("$job", ".+") for e in exprs]


def alert_metric_names() -> set[str]:
    groups = yaml.safe_load(ALERTS.read_text())["groups"]
    return {n for g in groups for r in g["rules"] for n in METRIC_NAME.findall(r["expr"])}


class Prometheus:
    """A Prometheus process scraping one target every second, with the project's alert rules."""

    def __init__(self, target: str, tmp_path: Path) -> None:
        config = {
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "rule_files": [str(ALERTS)],
            "scrape_configs": [{"job_name": SCRAPE_JOB, "static_configs": [{"targets": [target]}]}],
        }
        self.folder = tmp_path
        (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config))
        retry_on_bind(self._start)

    def _start(self) -> None:
        """Prometheus on a new free port, ready; raises with its log if it exits first."""
        self.url = f"http://127.0.0.1:{free_port()}"
        self.log = (self.folder / "prometheus.log").open("w")
        self.process = subprocess.Popen(
            [
                binary("prometheus"),
                f"--config.file={self.folder / 'prometheus.yml'}",
                f"--storage.tsdb.path={self.folder / 'tsdb'}",
                f"--web.listen-address={self.url.removeprefix('http://')}",
            ],
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )

        def ready() -> bool:
            if self.process.poll() is not None:
                self.log.close()
                log = (self.folder / "prometheus.log").read_text(errors="replace")
                raise RuntimeError(f"Prometheus exited:\n{log[-1500:]}")
            return self.get("/-/ready") is not None

        wait_for(ready, 30, "Prometheus did not get ready")

    def get(self, path: str) -> Any:
        try:
            with urllib.request.urlopen(self.url + path, timeout=5) as response:
                body = response.read()
        except OSError:
            return None
        return json.loads(body) if path.startswith("/api/") else body

    def query(self, expr: str) -> list[dict[str, Any]]:
        answer = self.get("/api/v1/query?" + urllib.parse.urlencode({"query": expr}))
        assert answer is not None and answer["status"] == "success", (expr, answer)
        result: list[dict[str, Any]] = answer["data"]["result"]
        return result

    def close(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)
        self.log.close()


def wait_for(check: Callable[[], bool], timeout: float, message: str | Callable[[], str]) -> None:
    """Poll ``check`` every 0.5 s; fail with ``message`` (or what it returns) after ``timeout``."""
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, message() if callable(message) else message
        time.sleep(0.5)


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    from trending.spark.session import build_session

    session = build_session("tests-metrics", "local[2]", shuffle_partitions=2)
    yield session
    session.stop()


def test_prometheus_scrapes_every_dashboard_query_and_alert_metric(
    kafka_bootstrap: str, spark: Any, tmp_path: Path
) -> None:
    job = Job(kafka_bootstrap, tmp_path)
    tweets = make_tweets(3_000, seed=5)
    produce(kafka_bootstrap, job.topics["tweets"], tweets, extra=(b"\x07not avro",))
    monitoring = Monitoring(
        spark,
        Metrics("hashtags", spark.version),
        ("127.0.0.1", 0),  # the system picks a free port
        kafka_bootstrap,
        lag_interval=1.0,
    )
    port = monitoring.server.port
    config = job.config(available_now=False, trigger_ms=500, max_offsets_per_trigger=400)
    query, processor = start_query(spark, config, on_processor=monitoring.attach)
    monitoring.watch(query)
    prometheus = Prometheus(f"127.0.0.1:{port}", tmp_path)
    try:
        wait_for(lambda: len(processor.history) >= 3, 60, "the job ran fewer than 3 batches")
        produce(kafka_bootstrap, job.topics["tweets"], make_tweets(500, seed=6, start_index=3_000))
        _check_scrape(prometheus, port)
        assert query.exception() is None
    finally:
        query.stop()
        processor.close()
        monitoring.close()
        prometheus.close()
    status = monitoring.metrics.registry.get_sample_value
    assert status("trending_query_status", {"state": "active"}) == 0
    assert status("trending_query_status", {"state": "failed"}) == 0


def _check_scrape(prometheus: Prometheus, port: int) -> None:
    scrape = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    missing = sorted(n for n in alert_metric_names() if n not in scrape)
    assert not missing, f"alert rules use metrics the job does not export: {missing}"
    for expr in READY_WHEN:
        wait_for(lambda e=expr: bool(prometheus.query(e)), 60, f"no series for {expr}")
    empty: list[str] = []

    def every_query_has_series() -> bool:  # rate() needs two scrapes of a series
        empty[:] = [expr for expr in dashboard_queries() if not prometheus.query(expr)]
        return not empty

    wait_for(every_query_has_series, 30, lambda: f"dashboard queries without series: {empty}")
    one_dead = 'trending_dead_letters_total{reason="malformed_avro"} == 1'
    wait_for(lambda: bool(prometheus.query(one_dead)), 60, "the dead letter was not counted")
    rules = prometheus.get("/api/v1/rules")["data"]["groups"][0]["rules"]
    names = [r["alert"] for g in yaml.safe_load(ALERTS.read_text())["groups"] for r in g["rules"]]
    assert sorted(r["name"] for r in rules) == sorted(names)
    assert all(r["health"] == "ok" for r in rules), rules
