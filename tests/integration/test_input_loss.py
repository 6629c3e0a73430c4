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
from confluent_kafka import TopicPartition

from connectors.avro import AvroCodec
from connectors.kafka import admin, consumer
from tests.integration.test_faults import finals, job_command, make_tweets, produce
from tests.support.hashtags import independent_finals
from tests.support.kafka import delete_topic, read_all
from tests.support.spark_cluster import cluster_env
from trending.jobs.runtime import DATA_LOSS_HINT

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


def test_records_removed_before_the_job_read_them_stop_it_until_told_to_skip_them(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    from tests.integration.test_faults import HOP_MS, LATENESS_MS, SIZE_MS

    tag = uuid.uuid4().hex[:8]
    topic = f"tweets-{tag}"
    command = job_command(kafka_bootstrap, tmp_path, tag, per_batch=1_000)
    tweets = make_tweets(1_000, seed=83)  # the later half follows the first in event time
    first, later = tweets[:500], tweets[500:]
    produce(kafka_bootstrap, topic, first)
    assert run(command).returncode == 0
    published = finals(kafka_bootstrap, f"trending-{tag}")
    assert published == independent_finals(first, SIZE_MS, HOP_MS, LATENESS_MS)
    read = end_offsets(kafka_bootstrap, topic)  # the job read the whole topic: its position
    produce(kafka_bootstrap, topic, later)
    ends = end_offsets(kafka_bootstrap, topic)
    # retention removes the oldest records of each partition: here past the job's position, so
    # the 80 records after it in each partition go before the job read them
    cut = {p: read[p] + 80 for p in read}
    assert all(cut[p] < ends[p] for p in ends), (cut, ends)
    delete_records(kafka_bootstrap, topic, cut)

    stopped = run(command)
    assert stopped.returncode != 0
    last = stopped.stderr.strip().splitlines()[-1]
    assert DATA_LOSS_HINT in last, last
    assert finals(kafka_bootstrap, f"trending-{tag}") == published  # nothing of the batch

    # what is left to read: each partition from its cut on (all of ``later``)
    codec = AvroCodec("tweet")
    remaining = read_all(kafka_bootstrap, topic)
    assert all(r.offset >= cut[r.partition] for r in remaining)
    assert len(remaining) == sum(ends[p] - cut[p] for p in ends)
    survivors = [codec.decode(r.value) for r in remaining if r.value is not None]
    assert len(survivors) == len(later) - 160
    skipping = run([*command, "--spark-kafka-option", "failOnDataLoss=false"])
    assert skipping.returncode == 0, skipping.stderr[-2_000:]
    expected = independent_finals(first + survivors, SIZE_MS, HOP_MS, LATENESS_MS)
    assert expected != independent_finals(tweets, SIZE_MS, HOP_MS, LATENESS_MS)  # a real loss
    # what was published stands; what follows counts every record left once, none removed
    assert finals(kafka_bootstrap, f"trending-{tag}") == expected
    assert {start: expected[start] for start in published} == published


def end_offsets(bootstrap: str, topic: str) -> dict[int, int]:
    """Each partition's end offset (the producer is not transactional: its high watermark)."""
    client = consumer(bootstrap)
    try:
        partitions = client.list_topics(topic, timeout=30).topics[topic].partitions
        return {
            p: client.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1]
            for p in partitions
        }
    finally:
        client.close()


def delete_records(bootstrap: str, topic: str, before: dict[int, int]) -> None:
    """Remove each partition's records below ``before[partition]``, as retention does."""
    client = admin(bootstrap)
    futures = client.delete_records([TopicPartition(topic, p, o) for p, o in before.items()])
    for future in futures.values():
        future.result(timeout=30)
