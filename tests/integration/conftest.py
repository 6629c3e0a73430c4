"""Integration tests start many Spark drivers: each starts from a class archive (see
:mod:`tests.support.spark_archive`), dumped on the first run of the suite on a machine, and keeps
its scratch files (``SPARK_LOCAL_DIRS``: state store working copies, the jars it serves) in the
session's temporary folder, which pytest prunes, rather than in ``/tmp``, where a killed driver
would leave them behind."""

from __future__ import annotations

import os

import pytest

from tests.support.spark_archive import use_archive


@pytest.fixture(scope="session", autouse=True)
def fast_spark_drivers(tmp_path_factory: pytest.TempPathFactory) -> None:
    os.environ["SPARK_LOCAL_DIRS"] = str(tmp_path_factory.mktemp("spark-local"))
    use_archive()
