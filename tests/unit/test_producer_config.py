"""The transactional producer's settings: the user's Kafka options win, except what exactly-once
publication needs."""

from __future__ import annotations

import pytest

from connectors.transactions import producer_config
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
