"""The text form of a batch's parameters, as the JVM side (``trending.state.BatchParams``)
parses it: ``w=<watermark ms or empty>;c=<clock ms or empty>;t=<start>:<count>,...``."""

from __future__ import annotations

from trending.spark.batch_values import BatchParams


def test_every_field_is_written_in_its_place() -> None:
    params = BatchParams(120_000, {240_000: 7, 60_000: 3}, clock_ms=1_700_000_000_123)
    assert params.text() == "w=120000;c=1700000000123;t=60000:3,240000:7"


def test_missing_values_are_empty() -> None:
    assert BatchParams(None, {}).text() == "w=;c=;t="
    assert BatchParams(-5, {}, clock_ms=0).text() == "w=-5;c=0;t="
