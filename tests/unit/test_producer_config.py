"""The transactional producer's settings: the user's Kafka options win, except what exactly-once
publication needs."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException

from connectors.transactions import producer_config, transient
from trending.errors import UserError


def test_defaults_without_user_options() -> None:
    config = producer_config("b:9092", "trending-hashtags-1")
    assert config["transaction.timeout.ms"] == 120_000
    assert config["enable.idempotence"] is True and config["acks"] == "all"
    assert config["transactional.id"] == "trending-hashtags-1"
    assert config["bootstrap.servers"] == "b:9092"


def test_the_users_tunables_win() -> None:
    options = {"transaction.timeout.ms": "900000", "linger.ms": "50", "compression.type": "zstd",
               "security.protocol": "SASL_SSL", "acks": "all"}  # fmt: skip
    config = producer_config("b:9092", "t", options)
    assert {k: config[k] for k in options} == options


@pytest.mark.parametrize(
    ("key", "value"),
    [("acks", "1"), ("enable.idempotence", "false"), ("transactional.id", "other")],
)
def test_a_setting_exactly_once_needs_cannot_be_overridden(key: str, value: str) -> None:
    with pytest.raises(UserError, match=f"{key}={value} conflicts with exactly-once"):
        producer_config("b:9092", "t", {key: value})


@pytest.mark.parametrize(
    ("error", "again"),
    [
        (KafkaError(KafkaError._MSG_TIMED_OUT), True),  # no broker acknowledged in time
        (KafkaError(KafkaError._ALL_BROKERS_DOWN), True),
        (KafkaError(KafkaError.NOT_LEADER_FOR_PARTITION), True),
        (KafkaError(KafkaError._STATE, "abortable", txn_requires_abort=True), True),
        (KafkaError(KafkaError._TIMED_OUT, "commit timed out", retriable=True), True),
        (KafkaError(KafkaError._FENCED, "fenced", fatal=True), False),  # a newer instance runs
        (KafkaError(KafkaError.MSG_SIZE_TOO_LARGE, retriable=True), False),
        (KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED), False),
        (KafkaError(KafkaError.INVALID_CONFIG), False),
        ("3 records failed", False),  # not a Kafka error at all
    ],
)
def test_only_transient_errors_send_a_batch_again(error: object, again: bool) -> None:
    assert transient(KafkaException(error)) is again
