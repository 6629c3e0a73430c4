"""Asking Kafka for metadata while its broker restarts: transient failures are asked again."""

from __future__ import annotations

import time
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from connectors.kafka import cluster_metadata
from trending.errors import UserError


class Answers:
    """A client whose ``list_topics`` raises the given errors in turn, then answers."""

    def __init__(self, *errors: int) -> None:
        self.errors = list(errors)
        self.asked = 0
        self.topic: str | None = "never asked"

    def list_topics(self, topic: str | None, timeout: float) -> Any:
        self.asked += 1
        self.topic = topic
        assert timeout >= 1.0
        if self.errors:
            raise KafkaException(KafkaError(self.errors.pop(0)))
        return "metadata"


def test_a_broker_unreachable_for_a_while_is_asked_again() -> None:
    client = Answers(KafkaError._TRANSPORT, KafkaError._TIMED_OUT, KafkaError._ALL_BROKERS_DOWN)
    found = cluster_metadata(client, "k:9092", time.monotonic() + 30)  # type: ignore[arg-type]
    assert (found, client.asked, client.topic) == ("metadata", 4, None)


def test_the_metadata_of_one_topic_is_asked_of_that_topic_only() -> None:
    client = Answers(KafkaError._TRANSPORT)
    cluster_metadata(client, "k:9092", time.monotonic() + 30, "tweets")  # type: ignore[arg-type]
    assert (client.asked, client.topic) == (2, "tweets")


def test_a_failure_other_than_no_answer_is_not_asked_again() -> None:
    client = Answers(KafkaError.TOPIC_AUTHORIZATION_FAILED)
    with pytest.raises(UserError, match="Kafka at k:9092 refused metadata: "):
        cluster_metadata(client, "k:9092", time.monotonic() + 30)  # type: ignore[arg-type]
    assert client.asked == 1


def test_past_the_deadline_it_stops_with_the_broker_address() -> None:
    client = Answers(*[KafkaError._TRANSPORT] * 100)
    with pytest.raises(UserError, match=r"^no answer from Kafka at k:9092: .*"):
        cluster_metadata(client, "k:9092", time.monotonic() + 0.7)  # type: ignore[arg-type]
    assert 2 <= client.asked <= 3


def test_a_long_outage_logs_one_warning(caplog: pytest.LogCaptureFixture) -> None:
    client = Answers(*[KafkaError._TRANSPORT] * 3)
    cluster_metadata(client, "k:9092", time.monotonic() + 30)  # type: ignore[arg-type]
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert client.asked == 4
    assert len(warnings) == 1, warnings
    assert warnings[0].startswith("no answer from Kafka at k:9092 (")
