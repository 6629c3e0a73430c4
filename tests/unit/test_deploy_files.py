"""The deployment files parse: the compose file with docker-compose's own validator."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def test_compose_file_is_valid_for_docker_compose() -> None:
    compose = shutil.which("docker-compose")
    assert compose, (
        "docker-compose is needed to validate docker-compose.yml: apt-get install docker-compose"
    )
    result = subprocess.run(
        [compose, "-f", str(ROOT / "docker-compose.yml"), "config", "--quiet"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr


def test_compose_runs_the_same_broker_version_and_the_job() -> None:
    services = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    assert services["kafka"]["image"] == "apache/kafka:4.1.1"
    assert services["hashtags"]["command"][:2] == ["run", "hashtags"]
    assert (ROOT / services["hashtags"]["build"]["dockerfile"]).is_file()


def test_every_job_restarts_when_it_fails() -> None:
    services = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    jobs = [s for s in services.values() if s.get("command", [])[:1] == ["run"]]
    assert jobs
    assert all(job.get("restart") in ("on-failure", "unless-stopped", "always") for job in jobs)
