"""A ``spark.sql.*`` setting Spark does not take is refused in one line naming it.

Started with one, the session failed on every call that reads its settings, and pyspark's report
of that failure read them again, without end: ``--conf spark.sql.shuffle.partitions=abc`` hung
the job at its start.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

DRIVER = """
import sys
from trending.errors import UserError
from trending.spark.session import build_session
try:
    build_session("bad-settings-test", "local[1]", conf={sys.argv[1]: sys.argv[2]})
except UserError as error:
    print(error)
    sys.exit(2)
print("started")
"""


@pytest.mark.parametrize(
    ("key", "value", "said"),
    [
        ("spark.sql.shuffle.partitions", "abc", "'int'"),
        ("spark.sql.shuffle.partitions", "-3", "must be positive"),
        ("spark.sql.session.timeZone", "Nowhere/City", "timezone"),
    ],
)
def test_a_setting_spark_does_not_take_is_refused(key: str, value: str, said: str) -> None:
    environ = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, key, value],
        env=environ, capture_output=True, text=True, timeout=150, check=False,
    )  # fmt: skip
    assert done.returncode == 2, (done.stdout, done.stderr[-2000:])
    line = done.stdout.strip().splitlines()[-1]  # after any of the JVM's own lines
    assert f"{key}={value}" in line and said in line, line
