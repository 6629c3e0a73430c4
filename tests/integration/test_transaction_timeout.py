"""A batch whose transaction outlives ``transaction.timeout.ms``: the broker aborts it (nothing
of it becomes visible) and fences the producer. A process that still owns the job (its lease)
sends the batch again with a new producer: read ``read_committed``, every record is there once
and the marker names the batch. One that no longer does (a zombie) stops, writing nothing."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator

import pytest
from confluent_kafka import KafkaException

from connectors.kafka import ensure_topics
from connectors.transactions import OutRecord, TransactionalBatchWriter
from tests.support.kafka import read_all

pytestmark = pytest.mark.integration

TIMEOUT_MS = 3_000  # the broker checks for timed-out transactions every 10 s (its default)


def test_a_transaction_that_outlives_its_timeout_is_aborted_and_the_batch_sent_again(
    kafka_bootstrap: str, unique_topic: Callable[[str], str]
) -> None:
    commits, out = unique_topic("commits"), unique_topic("out")
    ensure_topics(kafka_bootstrap, [out], partitions=1)
    job = f"job-{uuid.uuid4().hex[:8]}"
    writer = TransactionalBatchWriter(
        kafka_bootstrap, job, {"transaction.timeout.ms": str(TIMEOUT_MS)}, commits_topic=commits
    )
    writer.still_owner = lambda: True
    attempts = []

    def records() -> Iterator[OutRecord]:
        attempts.append(time.monotonic())
        for i in range(50):
            yield OutRecord(out, str(i).encode(), b"v%d" % i)
            if len(attempts) == 1 and i == 25:
                time.sleep(TIMEOUT_MS / 1000 + 12)  # stalled inside the open transaction

    try:
        writer.write_batch(0, records, {"batch": 0})
        assert writer.committed.batch_id == 0
    finally:
        writer.close()
    assert len(attempts) >= 2  # the first transaction was aborted by the broker
    values = sorted(r.value for r in read_all(kafka_bootstrap, out) if r.value is not None)
    assert values == sorted(b"v%d" % i for i in range(50))
    restarted = TransactionalBatchWriter(kafka_bootstrap, job, commits_topic=commits)
    try:
        assert (restarted.committed.batch_id, restarted.committed.state) == (0, {"batch": 0})
    finally:
        restarted.close()


def test_a_fenced_writer_that_no_longer_owns_the_job_stops_and_publishes_nothing(
    kafka_bootstrap: str, unique_topic: Callable[[str], str]
) -> None:
    """The zombie of Kafka Streams' exactly-once tests: it stalled inside its transaction, a
    new owner took the job and fenced it; it wakes up, is fenced, and does not take it back."""
    commits, out = unique_topic("commits"), unique_topic("out")
    ensure_topics(kafka_bootstrap, [out], partitions=1)
    job = f"job-{uuid.uuid4().hex[:8]}"
    zombie = TransactionalBatchWriter(kafka_bootstrap, job, commits_topic=commits)
    zombie.still_owner = lambda: False  # its lease was taken over
    owner: list[TransactionalBatchWriter] = []

    def records() -> Iterator[OutRecord]:
        yield OutRecord(out, b"zombie", b"first half")
        if not owner:  # the new owner starts while the zombie is inside its transaction
            owner.append(TransactionalBatchWriter(kafka_bootstrap, job, commits_topic=commits))
        yield OutRecord(out, b"zombie", b"second half")

    try:
        with pytest.raises(KafkaException, match="fenced"):
            zombie.write_batch(0, records, {"batch": 0})
        owner[0].write_batch(0, [OutRecord(out, b"owner", b"batch 0")], {"batch": 0})
    finally:
        zombie.close()
        for writer in owner:
            writer.close()
    assert [(r.key, r.value) for r in read_all(kafka_bootstrap, out)] == [(b"owner", b"batch 0")]
