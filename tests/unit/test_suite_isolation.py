"""The suite's own promises: it never reaches a user's Kafka, and CI runs are reproducible.

An inner pytest run loads ``tests/conftest.py`` in a shell set up for a real cluster and checks,
from inside, what its tests see.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

INNER_TEST = """
import os

from hypothesis import settings


def test_sees_only_the_test_broker(kafka_bootstrap):
    assert kafka_bootstrap == "test-broker:9"
    for name in ("KAFKA_BOOTSTRAP_SERVERS", "TRENDING_CONFIG", "TRENDING_KAFKA_CONFIG",
                 "TRENDING_KAFKA_SASL_PASSWORD", "TRENDING_SCHEMA_REGISTRY_URL"):
        assert name not in os.environ, name
    assert os.environ["TRENDING_JARS_DIR"] == "/kept"


def test_hypothesis_is_derandomized_without_deadline():
    assert settings().derandomize is True
    assert settings().deadline is None
"""

USER_SHELL = {
    "KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:1",
    "TRENDING_CONFIG": "/nowhere/trending.toml",
    "TRENDING_KAFKA_CONFIG": "/nowhere/client.properties",
    "TRENDING_KAFKA_SASL_PASSWORD": "secret",
    "TRENDING_SCHEMA_REGISTRY_URL": "http://127.0.0.1:1",
    "TRENDING_JARS_DIR": "/kept",  # not a connection setting: left alone
}


def run_inner(
    tmp_path: Path, test: str, env: dict[str, str], timeout: float
) -> subprocess.CompletedProcess[str]:
    """``test`` (a module's text) run by pytest with the suite's conftest and ``env`` added."""
    (tmp_path / "test_inner.py").write_text(test, encoding="utf-8")
    plugins = ["-p", "tests.conftest", "-p", "no:cacheprovider"]
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", *plugins, str(tmp_path / "test_inner.py")],
        cwd=tmp_path,
        env={**os.environ, **env, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_a_shell_set_up_for_a_real_cluster_changes_nothing_in_the_suite(tmp_path: Path) -> None:
    env = {**USER_SHELL, "TRENDING_TEST_KAFKA": "test-broker:9", "CI": "true"}
    result = run_inner(tmp_path, INNER_TEST, env, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 passed" in result.stdout


BLOCKED_CLEAN_UP = """
import time

import pytest


@pytest.mark.timeout(1)
def test_blocks_in_its_clean_up_too():
    try:
        time.sleep(30)
    finally:
        time.sleep(300)  # a clean-up that blocks as well: the timeout alone cannot end it
"""


def test_a_test_that_outlives_its_timeout_ends_the_run_instead_of_hanging(tmp_path: Path) -> None:
    env = {"TRENDING_TEST_WATCHDOG_GRACE": "2"}
    result = run_inner(tmp_path, BLOCKED_CLEAN_UP, env, timeout=60)
    assert result.returncode == 3, result.stdout + result.stderr
    assert "test_blocks_in_its_clean_up_too still running past its timeout" in result.stderr
