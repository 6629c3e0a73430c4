"""A job's first driver writes the class archive when it stops; the next maps it.

Each driver runs in its own process, started as a job's runtime starts one
(``build_session(..., write_class_archive=True)``, then ``spark.stop()`` and
``class_archive.finish()``), with the tests' own archive options taken out of the environment.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from trending.spark import class_archive

DRIVER = """
import json, sys
from pyspark import SparkContext
from trending.spark import class_archive
from trending.spark.session import build_session

spark = build_session("class-archive-test", "local[1]", write_class_archive=True)
pid = SparkContext._gateway.proc.pid
with open(f"/proc/{pid}/maps") as maps:
    mapped = sorted({line.split()[-1] for line in maps if line.rstrip().endswith(".jsa")})
with open(f"/proc/{pid}/cmdline", "rb") as command:
    arguments = command.read().decode().split("\\0")
total = spark.range(1000).selectExpr("sum(id) AS s").first()["s"]
spark.stop()
class_archive.finish()
print(json.dumps({"mapped": mapped, "arguments": arguments, "total": total}))
"""


def run_driver(setting: str) -> dict[str, Any]:
    """A driver's archives mapped, its JVM's arguments, and a sum it computed."""
    environ = {key: value for key, value in os.environ.items() if key != "SPARK_SUBMIT_OPTS"}
    environ[class_archive.ENV] = setting
    environ["PYSPARK_PYTHON"] = sys.executable
    done = subprocess.run(
        [sys.executable, "-c", DRIVER],
        env=environ,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["total"] == sum(range(1000))
    return result


def test_the_first_driver_writes_the_archive_and_the_next_maps_it(tmp_path: Path) -> None:
    first = run_driver(str(tmp_path))
    written = sorted(tmp_path.glob("spark-driver-*.jsa"))
    assert len(written) == 1, sorted(tmp_path.iterdir())
    assert not list(tmp_path.glob("*.tmp")), "the dump was left under its private name"
    assert written[0].stat().st_size > 10_000_000  # thousands of classes, not an empty file
    assert str(written[0]) not in first["mapped"]
    assert any(a.startswith("-XX:ArchiveClassesAtExit=") for a in first["arguments"])

    second = run_driver(str(tmp_path))
    assert str(written[0]) in second["mapped"], second["mapped"]
    assert f"-XX:SharedArchiveFile={written[0]}" in second["arguments"]
    assert sorted(tmp_path.glob("spark-driver-*.jsa")) == written


def test_turned_off_the_driver_neither_writes_nor_maps_one() -> None:
    result = run_driver("off")
    assert not [m for m in result["mapped"] if "spark-driver" in m]
    assert not [a for a in result["arguments"] if "ArchiveClasses" in a or "SharedArchive" in a]
