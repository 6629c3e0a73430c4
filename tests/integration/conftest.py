"""Integration tests start many Spark drivers: each starts from a class archive (see
:mod:`tests.support.spark_archive`), dumped on the first run of the suite on a machine."""

from __future__ import annotations

import pytest

from tests.support.spark_archive import use_archive


@pytest.fixture(scope="session", autouse=True)
def fast_spark_drivers() -> None:
    use_archive()
