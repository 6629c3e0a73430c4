"""Input isolation on a real broker and Spark: the jobs read their input ``read_committed``.

An upstream producer writes tweets in transactions and aborts some of them. The records of an
aborted transaction stay in the log (with offsets of their own), so a reader at Kafka's default
``read_uncommitted`` would count them. The oracle counts the committed tweets' hashtags by brute
force (:func:`tests.support.hashtags.independent_finals`), apart from the job's code.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from random import Random
from typing import Any

import pytest
from confluent_kafka import Producer

from connectors.avro import AvroCodec
from connectors.kafka import ensure_topics
from connectors.spark_kafka import source_options
from tests.support.hashtags import finals_of, independent_finals, random_tweets
from tests.support.kafka import read_all
from tests.support.queries import await_end

pytestmark = pytest.mark.integration

TAGS = ["spark", "kafka", "flink", "beam", "storm", "samza"]
SIZE_MS, HOP_MS = 120_000, 30_000


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    from trending.spark.session import build_session

    session = build_session("tests-read-committed", "local[2]", shuffle_partitions=2)
    yield session
    session.stop()


def produce_in_transactions(
    bootstrap: str, topic: str, chunks: list[tuple[list[bytes], bool]]
) -> None:
    """Each chunk in a transaction of its own, spread over the topic's partitions, committed
    when its flag is True, else aborted after its records reached the broker."""
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": uuid.uuid4().hex})
    producer.init_transactions(60)
    for values, commit in chunks:
        producer.begin_transaction()
        for i, value in enumerate(values):
            producer.produce(topic, value, partition=i % 2)
            producer.poll(0)
        assert producer.flush(30) == 0  # in the log, as an aborted transaction's records are
        if commit:
            producer.commit_transaction(30)
        else:
            producer.abort_transaction(30)


def test_the_hashtags_job_counts_only_committed_tweets(
    kafka_bootstrap: str, spark: Any, tmp_path: Path
) -> None:
    from trending.jobs.hashtags import HashtagJobConfig, start_query

    tag = uuid.uuid4().hex[:8]
    topics = {name: f"{name}-{tag}" for name in ("tweets", "trending", "late", "dlq")}
    ensure_topics(kafka_bootstrap, [topics["tweets"]], partitions=2)
    tweets = random_tweets(Random(34), 600, TAGS, users=40, spacing_ms=500)
    chunks = [tweets[i : i + 100] for i in range(0, len(tweets), 100)]
    commits = [True, False, True, False, True, True]  # the 2nd and 4th 50 s of tweets aborted
    codec = AvroCodec("tweet")
    sent = list(zip(chunks, commits, strict=True))
    produce_in_transactions(
        kafka_bootstrap, topics["tweets"], [([codec.encode(t) for t in c], ok) for c, ok in sent]
    )
    committed = [t for chunk, commit in sent if commit for t in chunk]
    expected = independent_finals(committed, SIZE_MS, HOP_MS, 0)
    assert expected != independent_finals(tweets, SIZE_MS, HOP_MS, 0)  # the aborted ones count

    config = HashtagJobConfig(
        bootstrap=kafka_bootstrap, checkpoint=str(tmp_path / "checkpoint"),
        input_topic=topics["tweets"], output_topic=topics["trending"],
        late_topic=topics["late"], dead_letter_topic=topics["dlq"],
        size_ms=SIZE_MS, hop_ms=HOP_MS, lateness_ms=0, k=10, available_now=True,
        warm_up_rows=0, topic_partitions=2,
    )  # fmt: skip
    query, processor = start_query(spark, config)
    try:
        await_end(query)
    finally:
        processor.close()
    assert query.exception() is None
    published = [AvroCodec("trending_topk").decode(r.value) for r in read_all(
        kafka_bootstrap, topics["trending"])]  # fmt: skip
    assert finals_of(published) == expected
    assert read_all(kafka_bootstrap, topics["dlq"]) == []
    assert read_all(kafka_bootstrap, topics["late"]) == []


def test_the_source_skips_aborted_records_unless_the_user_asks_for_them(
    kafka_bootstrap: str, spark: Any
) -> None:
    """A batch read with the jobs' options (as the hashtags job's warm-up does) sees the
    committed records; a user's own ``isolation.level`` wins and sees the aborted ones too."""
    topic = f"isolation-{uuid.uuid4().hex[:8]}"
    ensure_topics(kafka_bootstrap, [topic], partitions=2)
    committed = [f"c{i}".encode() for i in range(30)]
    aborted = [f"a{i}".encode() for i in range(20)]
    produce_in_transactions(
        kafka_bootstrap, topic, [(committed[:10], True), (aborted, False), (committed[10:], True)]
    )

    def values(extra: dict[str, str] | None = None) -> list[bytes]:
        options = source_options(kafka_bootstrap, topic, extra=extra)
        rows = spark.read.format("kafka").options(**options).load().select("value").collect()
        return sorted(bytes(row.value) for row in rows)

    assert values() == sorted(committed)
    assert values({"isolation.level": "read_uncommitted"}) == sorted(committed + aborted)
