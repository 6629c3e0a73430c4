"""The jobs' Kafka source reads ``read_committed`` unless the user says otherwise."""

from __future__ import annotations

import pytest

from connectors.spark_kafka import source_options


def test_the_source_reads_committed_records_by_default() -> None:
    assert source_options("k:9092", "t")["kafka.isolation.level"] == "read_committed"


@pytest.mark.parametrize("key", ["isolation.level", "kafka.isolation.level"])
def test_a_user_s_isolation_level_wins(key: str) -> None:
    options = source_options("k:9092", "t", extra={key: "read_uncommitted"})
    assert options["kafka.isolation.level"] == "read_uncommitted"
