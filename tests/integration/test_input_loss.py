"""Input the job can no longer read: the input topic deleted and created again (its offsets
start over below those the job read), or records removed by retention before the job read them.
The job stops with one line naming what happened and both ways on; nothing is published for
the batch. Skipping instead (``--spark-kafka-option failOnDataLoss=false``) is the user's
choice."""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path

import pytest

from tests.integration.test_faults import finals, job_command, make_tweets, produce
from tests.support.hashtags import independent_finals
from tests.support.kafka import delete_topic
from tests.support.spark_cluster import cluster_env
from trending.commands.run import DATA_LOSS_HINT

pytestmark = pytest.mark.integration


def run(command: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command, capture_output=True, text=True, timeout=600, env=cluster_env(), check=False
    )


def test_an_input_topic_created_again_stops_the_job_with_a_clear_message(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    from tests.integration.test_faults import HOP_MS, LATENESS_MS, SIZE_MS

    tag = uuid.uuid4().hex[:8]
    command = job_command(kafka_bootstrap, tmp_path, tag, per_batch=1_000)
    first = make_tweets(600, seed=81)
    produce(kafka_bootstrap, f"tweets-{tag}", first)
    assert run(command).returncode == 0
    published = finals(kafka_bootstrap, f"trending-{tag}")
    delete_topic(kafka_bootstrap, f"tweets-{tag}")
    produce(kafka_bootstrap, f"tweets-{tag}", make_tweets(100, seed=82))  # offsets 0..~50
    stopped = run(command)
    assert stopped.returncode != 0
    last = stopped.stderr.strip().splitlines()[-1]
    assert "data may have been lost" in last.lower() or "offset" in last.lower(), last
    assert DATA_LOSS_HINT in last
    # nothing more was published, and what was stands
    assert finals(kafka_bootstrap, f"trending-{tag}") == published
    assert published == independent_finals(first, SIZE_MS, HOP_MS, LATENESS_MS)
