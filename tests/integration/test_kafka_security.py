"""A broker that wants SASL/PLAIN logins. The hashtags job gets its credentials from a
properties file and ``TRENDING_KAFKA_SASL_PASSWORD`` only: its Python clients and Spark's Kafka
source log in, the results are right, and the password shows in no output and in no command
line of the job's processes. A wrong password ends the job at once with one clear line."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from connectors.avro import AvroCodec
from connectors.broker import LocalBroker
from connectors.kafka import ensure_topics, producer
from tests.support.hashtags import independent_finals, random_tweets
from tests.support.ports import local_broker

pytestmark = pytest.mark.integration
USER = "alice"
PASSWORD = 'Al1ce "quoted" back\\slash =#! é'  # JAAS and properties escaping both matter
TAGS = ["spark", "kafka", "flink", "beam", "storm"]
SIZE_MS, HOP_MS, LATENESS_MS = 120_000, 30_000, 30_000


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalBroker]:
    data = tmp_path_factory.mktemp("sasl-kafka")
    with local_broker(data, users={USER: PASSWORD}) as local:
        yield local


@pytest.fixture
def login(tmp_path: Path) -> dict[str, str]:
    """The environment of a process that logs in as alice: the password in a variable, the
    rest in a properties file."""
    config = tmp_path / "client.properties"
    config.write_text(
        f"# alice on the local broker\nsecurity.protocol=SASL_PLAINTEXT\n"
        f"sasl.mechanism=PLAIN\nsasl.username={USER}\n",
        encoding="utf-8",
    )
    return {"TRENDING_KAFKA_CONFIG": str(config), "TRENDING_KAFKA_SASL_PASSWORD": PASSWORD}


def client_settings(password: str = PASSWORD) -> dict[str, str]:
    return {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": USER,
        "sasl.password": password,
    }


def make_tweets(count: int) -> list[dict[str, Any]]:
    """Tweets 2 s apart in event time, shuffled within +-10 s."""
    return random_tweets(random.Random(5), count, TAGS, 7, 2_000, 10_000)


def produce(bootstrap: str, topic: str, tweets: list[dict[str, Any]]) -> None:
    ensure_topics(bootstrap, [topic], partitions=2, extra=client_settings())
    codec = AvroCodec("tweet")
    sink = producer(bootstrap, client_settings())
    sink.produce_many(topic, ((str(t["id"]).encode(), codec.encode(t)) for t in tweets))
    sink.flush(30)


def trending_command(bootstrap: str, *args: str) -> list[str]:
    return [sys.executable, "-m", "trending.cli", *args, "--bootstrap-servers", bootstrap]


def job_command(bootstrap: str, tmp_path: Path, tag: str) -> list[str]:
    return trending_command(
        bootstrap, "run", "hashtags", "--available-now", "--master", "local[2]",
        "--warm-up-rows", "0",
        "--size", f"{SIZE_MS}ms", "--hop", f"{HOP_MS}ms", "--lateness", f"{LATENESS_MS}ms",
        "--partitions", "2", "--shuffle-partitions", "2", "--metrics-port", "0",
        "--input-topic", f"tweets-{tag}", "--output-topic", f"trending-hashtags-{tag}",
        "--late-topic", f"late-{tag}", "--dead-letter-topic", f"dlq-{tag}",
        "--checkpoint", str(tmp_path / "checkpoint"),
    )  # fmt: skip


def environment(extra: dict[str, str]) -> dict[str, str]:
    inherited = {k: v for k, v in os.environ.items() if not k.startswith("TRENDING_KAFKA_")}
    return {**inherited, "PYSPARK_PYTHON": sys.executable, **extra}


def session_command_lines(session: int) -> set[str]:
    """The command lines of every live process in ``session`` (what ``ps`` shows anyone)."""
    lines = set()
    for proc in Path("/proc").iterdir():
        try:
            stat = (proc / "stat").read_text()
            if proc.name.isdigit() and int(stat.rpartition(")")[2].split()[3]) == session:
                lines.add((proc / "cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8"))
        except (OSError, ValueError, IndexError):
            continue  # gone meanwhile, or not a process
    return lines


def run_watching_command_lines(
    command: list[str], env: dict[str, str], timeout: float
) -> tuple[int, str, str, set[str]]:
    """Run ``command`` in a session of its own; its exit code, stdout, stderr and the command
    lines its processes showed while it ran (sampled every 0.2 s)."""
    with subprocess.Popen(
        command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env=env, start_new_session=True,
    ) as process:  # fmt: skip
        seen: set[str] = set()
        deadline = time.monotonic() + timeout
        out, err = b"", b""
        while True:
            seen |= session_command_lines(process.pid)
            try:
                out, err = process.communicate(timeout=0.2)
                break
            except subprocess.TimeoutExpired:
                if time.monotonic() > deadline:
                    process.kill()
                    raise
        return process.returncode, out.decode(), err.decode(), seen


def test_a_job_logs_in_with_the_password_from_the_environment_only(
    broker: LocalBroker, login: dict[str, str], tmp_path: Path
) -> None:
    tag = uuid.uuid4().hex[:8]
    tweets = make_tweets(1_500)
    produce(broker.bootstrap, f"tweets-{tag}", tweets)
    code, out, err, command_lines = run_watching_command_lines(
        job_command(broker.bootstrap, tmp_path, tag), environment(login), timeout=400
    )
    assert code == 0, err[-4000:]
    assert any("java" in line for line in command_lines), "the Spark JVM was not seen"
    for line in command_lines:
        assert PASSWORD not in line and "sasl.password" not in line, line
    assert PASSWORD not in out + err
    consumed = subprocess.run(
        trending_command(
            broker.bootstrap, "consume", f"trending-hashtags-{tag}", "--from-beginning", "--json",
            "--idle-timeout", "5",
        ),
        capture_output=True, text=True, timeout=120, env=environment(login), check=False,
    )  # fmt: skip
    assert consumed.returncode == 0, consumed.stderr[-3000:]
    assert PASSWORD not in consumed.stdout + consumed.stderr
    records = [json.loads(line) for line in consumed.stdout.splitlines()]
    finals = {
        r["window_start"]: [(e["hashtag"], e["count"]) for e in r["top"]]
        for r in records
        if r["is_final"]
    }
    expected = independent_finals(tweets, SIZE_MS, HOP_MS, LATENESS_MS)
    assert len(expected) > 50
    assert finals == expected


def test_a_wrong_password_is_refused_at_once_with_one_clear_line(
    broker: LocalBroker, login: dict[str, str], tmp_path: Path
) -> None:
    wrong = "not-" + PASSWORD
    started = time.monotonic()
    result = subprocess.run(
        job_command(broker.bootstrap, tmp_path, uuid.uuid4().hex[:8]),
        capture_output=True,
        text=True,
        timeout=60,
        env=environment({**login, "TRENDING_KAFKA_SASL_PASSWORD": wrong}),
        check=False,
    )
    assert time.monotonic() - started < 60
    assert result.returncode == 2, result.stderr[-3000:]
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("trending: error: Kafka at"), lines[0]
    assert "authentication failed" in lines[0].lower(), lines[0]
    assert PASSWORD not in result.stdout + result.stderr
    assert not (tmp_path / "checkpoint").exists(), "nothing starts before the login"
