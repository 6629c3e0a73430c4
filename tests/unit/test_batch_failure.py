"""A failed batch is told in one line: Kafka's error by its code name, anything else by its type
and first line."""

from __future__ import annotations

from confluent_kafka import KafkaError, KafkaException

from trending.jobs.common import brief


def test_a_kafka_error_is_told_by_its_code_name_and_text() -> None:
    error = KafkaException(KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED, "writes denied"))
    assert brief(error) == "Kafka error TOPIC_AUTHORIZATION_FAILED: writes denied"


def test_any_other_error_by_its_type_and_first_line() -> None:
    assert brief(ValueError("first line\n  plan: ...\n  more")) == "ValueError: first line"
    assert brief(RuntimeError()) == "RuntimeError: "
