"""Shared fixtures: a Kafka broker for the session and unique topic names per test.

The broker is, in order: ``$TRENDING_TEST_KAFKA`` (a test-only variable: the suite never uses
``$KAFKA_BOOTSTRAP_SERVERS``, the variable users export for their real cluster); a container
of the official ``apache/kafka`` image when a Docker engine answers; else the broker from the
Maven jars (``make jars``) on free ports with a temporary data directory.

The session also drops every setting a user may have exported for the real service
(``KAFKA_BOOTSTRAP_SERVERS``, ``TRENDING_CONFIG``, ``TRENDING_KAFKA_*``,
``TRENDING_SCHEMA_REGISTRY_*``), so no job a test starts can reach a user's cluster, and loads
the Hypothesis profile ``ci`` (derandomized, no deadline) when ``$CI`` is set.
"""

from __future__ import annotations

import faulthandler
import os
import re
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from connectors.kafka import wait_for_kafka
from tests.support.ports import free_port, local_broker

KAFKA_IMAGE = "apache/kafka:4.1.1"
TEST_KAFKA_ENV = "TRENDING_TEST_KAFKA"
USER_SETTINGS = ("KAFKA_BOOTSTRAP_SERVERS", "TRENDING_CONFIG", "TRENDING_KAFKA_CONFIG")
USER_PREFIXES = ("TRENDING_KAFKA_", "TRENDING_SCHEMA_REGISTRY_")

settings.register_profile(
    "ci",
    derandomize=True,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")


def _is_user_setting(name: str) -> bool:
    return name in USER_SETTINGS or name.startswith(USER_PREFIXES)


for _name in [name for name in os.environ if _is_user_setting(name)]:
    del os.environ[_name]  # tests and the jobs they start see none of the user's settings


def docker_answers(timeout: float = 2.0) -> bool:
    """Whether a Docker engine answers a ping within ``timeout`` seconds."""
    try:
        import docker  # type: ignore[import-untyped]

        return bool(docker.from_env(timeout=timeout).ping())
    except Exception:  # no SDK, no socket, no engine: all mean "no Docker"
        return False


def _container_kafka() -> Iterator[str]:
    """A KRaft broker in ``apache/kafka``, advertised on a fixed free host port.

    testcontainers' ``KafkaContainer`` drives Confluent's cp-kafka start scripts, which the
    apache/kafka image does not have, so the image is configured through its KAFKA_* env.
    """
    from testcontainers.core.container import DockerContainer

    port = free_port()
    env = {
        "KAFKA_NODE_ID": "1",
        "KAFKA_PROCESS_ROLES": "broker,controller",
        "KAFKA_LISTENERS": "PLAINTEXT://0.0.0.0:9092,CONTROLLER://localhost:9093",
        "KAFKA_ADVERTISED_LISTENERS": f"PLAINTEXT://127.0.0.1:{port}",
        "KAFKA_CONTROLLER_LISTENER_NAMES": "CONTROLLER",
        "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "KAFKA_CONTROLLER_QUORUM_VOTERS": "1@localhost:9093",
        "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR": "1",
        "KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR": "1",
        "KAFKA_TRANSACTION_STATE_LOG_MIN_ISR": "1",
        "KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS": "0",
        "KAFKA_AUTO_CREATE_TOPICS_ENABLE": "false",
    }
    container = DockerContainer(KAFKA_IMAGE).with_bind_ports(9092, port)
    for key, value in env.items():
        container = container.with_env(key, value)
    with container:
        bootstrap = f"127.0.0.1:{port}"
        wait_for_kafka(bootstrap, timeout=120)
        yield bootstrap


def _jar_kafka(data_dir: Path) -> Iterator[str]:
    with local_broker(data_dir) as broker:
        yield broker.bootstrap


@pytest.fixture(scope="session")
def kafka_bootstrap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The bootstrap address of a Kafka broker for this test session."""
    if os.environ.get(TEST_KAFKA_ENV):
        yield os.environ[TEST_KAFKA_ENV]
    elif docker_answers():
        yield from _container_kafka()
    else:
        yield from _jar_kafka(tmp_path_factory.mktemp("kafka"))


@pytest.fixture
def unique_topic(request: pytest.FixtureRequest) -> Callable[[str], str]:
    """``unique_topic(prefix)``: a topic name no other test (or run) uses.

    The name is ``<prefix>-<test name>-<random>``, so ``unique_topic("tweets")`` still maps
    to the tweet schema by prefix.
    """
    test = re.sub(r"[^A-Za-z0-9]+", "-", request.node.name).strip("-")[:40]

    def make(prefix: str) -> str:
        return f"{prefix}-{test}-{uuid.uuid4().hex[:8]}"

    return make


@pytest.fixture
def topic_factory(unique_topic: Callable[[str], str]) -> Callable[[str], str]:
    """Another name for :func:`unique_topic`."""
    return unique_topic


# pytest-timeout (signal method) fails a test that runs too long, but a test whose clean-up then
# blocks too (a Spark query that does not stop) would still hang the suite: past its timeout
# plus this grace, the watchdog prints every thread's stack and ends the run.
WATCHDOG_GRACE_S = float(os.environ.get("TRENDING_TEST_WATCHDOG_GRACE", "120"))
_running: dict[str, Any] = {}


def _timeout_of(item: pytest.Item) -> float:
    marker = item.get_closest_marker("timeout")
    if marker is not None and marker.args:
        return float(marker.args[0])
    return float(item.config.getini("timeout") or 0)


def _watch() -> None:
    while True:
        time.sleep(5)
        deadline, nodeid = _running.get("deadline"), _running.get("nodeid")
        if deadline is not None and time.monotonic() > deadline:
            capture = _running["config"].pluginmanager.getplugin("capturemanager")
            if capture is not None:
                capture.suspend_global_capture()  # to the real stderr, not the test's capture
            faulthandler.dump_traceback(all_threads=True)
            sys.stderr.write(f"\n{nodeid} still running past its timeout: ending the run\n")
            sys.stderr.flush()
            os._exit(3)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    limit = _timeout_of(item)
    if limit > 0:
        deadline = time.monotonic() + limit + WATCHDOG_GRACE_S
        _running.update(nodeid=item.nodeid, deadline=deadline, config=item.config)
    yield
    _running.clear()


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """Workers for ``-n auto`` (``make test``): one per core, at most four,
    since each starts a broker and Spark drivers of its own."""
    return max(1, min(4, os.cpu_count() or 1))


threading.Thread(target=_watch, name="test-watchdog", daemon=True).start()
