"""The local Kafka broker from the Maven jars: start, restart with data, errors, SIGTERM."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from connectors.broker import BrokerError, LocalBroker, free_port
from connectors.jvm import REPO_ROOT
from connectors.kafka import ensure_topics, producer
from tests.support.kafka import read_all
from tests.support.ports import local_broker
from trending.errors import UserError

pytestmark = [pytest.mark.integration, pytest.mark.jvm]


def trending(*args: str) -> list[str]:
    """The ``trending`` command line (with only the command modules that import yet)."""
    return [sys.executable, "-m", "trending.cli", *args]


def broker_args(port: int, controller: int, data: Path) -> list[str]:
    return trending(
        "broker", "--port", str(port), "--controller-port", str(controller), "--data-dir", str(data)
    )


def test_cli_prints_bootstrap_then_stops_cleanly_on_sigterm(tmp_path: Path) -> None:
    port, controller = free_port(), free_port()
    process = subprocess.Popen(
        broker_args(port, controller, tmp_path / "data"),
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline().strip() == f"127.0.0.1:{port}"
        ensure_topics(f"127.0.0.1:{port}", ["ready"], partitions=1)  # a real client works
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0
    finally:
        process.kill()
    _, err = process.communicate()
    assert "ready in" in err
    assert "INFO" not in err  # the broker logs to its file, not the console
    assert "Kafka Server started" in (tmp_path / "data" / "logs" / "server.log").read_text()
    assert not _listening(port) and not _listening(controller)


def test_topics_and_records_survive_a_restart(tmp_path: Path) -> None:
    with local_broker(tmp_path) as broker:
        port, cluster = broker.port, broker.cluster_id()
        ensure_topics(broker.bootstrap, ["kept"], partitions=2)
        sink = producer(broker.bootstrap)
        sink.produce_many("kept", ((None, f"v{i}".encode()) for i in range(500)), partitions=2)
        sink.flush()
    assert not broker.running()
    with LocalBroker(port, tmp_path, free_port()) as broker:  # another controller port is fine
        assert broker.cluster_id() == cluster
        values = sorted(int(r.value[1:]) for r in read_all(broker.bootstrap, "kept") if r.value)
    assert values == list(range(500))


@pytest.mark.parametrize("which", ["--port", "--controller-port"])
def test_a_taken_port_fails_fast_with_one_line(tmp_path: Path, which: str) -> None:
    port, controller = free_port(), free_port()
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", port if which == "--port" else controller))
        holder.listen()
        result = subprocess.run(
            broker_args(port, controller, tmp_path),
            check=False,
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    taken = port if which == "--port" else controller
    assert lines == [lines[0]] and f"127.0.0.1:{taken} is already in use" in lines[0]
    assert not (tmp_path / "kraft").exists()


def test_jvm_death_during_start_reports_the_log_tail(tmp_path: Path) -> None:
    (tmp_path / "kraft").mkdir()
    meta = "version=1\ncluster.id=Ab3dEfGhIjKlMnOpQrStUv\nnode.id=7\ndirectory.id=x\n"
    (tmp_path / "kraft" / "meta.properties").write_text(meta)  # another node's storage
    broker = LocalBroker(free_port(), tmp_path, free_port())
    broker.start()
    try:
        with pytest.raises(BrokerError, match="exited during start-up") as caught:
            broker.wait_ready(timeout=60)
    finally:
        broker.stop()
    assert "server.log" in str(caught.value) or "jvm.out" in str(caught.value)
    assert isinstance(caught.value, UserError)


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0
