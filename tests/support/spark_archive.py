"""Faster Spark drivers for the tests: a class-data-sharing archive and the client compiler.

Most of a test's time is Spark drivers starting: a job's JVM loads some 15,000 classes and
compiles hot code with both JIT tiers, which on two cores takes 10-15 s per start. The tests
start drivers well over a hundred times, each on little data, so two JVM options make every
driver (in-process sessions and the jobs the tests run) start about twice as fast:

* ``-XX:SharedArchiveFile``: the classes come mapped from an archive, dumped once by a warm-up
  driver that runs a stateful streaming query (``-XX:ArchiveClassesAtExit``). The archive is
  ``build/jars/spark-driver-<key>.jsa``; ``<key>`` hashes the Java binary and pyspark's jars, so
  a stale one is never used, and the JVM ignores one it cannot map (``-Xshare:auto``).
* ``-XX:TieredStopAtLevel=1``: only the quick client compiler, which suits short runs.

Both go in ``SPARK_SUBMIT_OPTS``, which spark-submit gives the driver JVM; the jobs themselves
run unchanged.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import subprocess
import sys
import uuid
from pathlib import Path

from connectors.jvm import jars_root, java_executable

WARM_UP = """
import tempfile
from trending.spark.session import build_session
from trending.jobs.common import STATE_STORE_CONF
spark = build_session(
    "tests-class-archive", "local[2]", conf=STATE_STORE_CONF, shuffle_partitions=2
)
from pyspark.sql import functions as F
counts = (
    spark.readStream.format("rate").option("rowsPerSecond", 200).load()
    .withWatermark("timestamp", "1 second")
    .groupBy(F.window("timestamp", "2 seconds"), (F.col("value") % 7).alias("key"))
    .count()
    .select(F.to_json(F.struct("*")).alias("value"))
)
with tempfile.TemporaryDirectory() as folder:
    query = (
        counts.writeStream.format("memory").queryName("warm").outputMode("append")
        .option("checkpointLocation", folder).start()
    )
    query.awaitTermination(8)
    query.stop()
spark.stop()
"""


def archive_path() -> Path:
    """Where the archive of this Java and this pyspark is (or goes)."""
    import pyspark

    java = java_executable()
    jars = sorted((Path(pyspark.__file__).parent / "jars").glob("*.jar"))
    stamps = [java, *(f"{j.name}:{j.stat().st_size}" for j in jars)]
    key = hashlib.sha256("\n".join(stamps).encode()).hexdigest()[:12]
    return jars_root() / f"spark-driver-{key}.jsa"


def driver_options(archive: Path) -> str:
    """The JVM options that use ``archive`` (silently ignored when it cannot be mapped)."""
    quiet = "-Xlog:cds=off -Xlog:cds+dynamic=off"
    return f"-XX:SharedArchiveFile={archive} -Xshare:auto {quiet} -XX:TieredStopAtLevel=1"


def ensure_archive(timeout: float = 240) -> Path | None:
    """The archive, dumped first by a warm-up driver if there is none (one process at a time;
    the others wait). None if the warm-up failed: the tests then run without it."""
    path = archive_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    with (path.parent / "spark-driver.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not path.exists():
            _dump(path, timeout)
    return path if path.exists() else None


def _dump(path: Path, timeout: float) -> None:
    dump = path.with_name(f"{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    options = f"-XX:ArchiveClassesAtExit={dump} -Xlog:cds=off -XX:TieredStopAtLevel=1"
    env = {**os.environ, "SPARK_SUBMIT_OPTS": options, "PYSPARK_PYTHON": sys.executable}
    try:
        subprocess.run(
            [sys.executable, "-c", WARM_UP],
            env=env,
            capture_output=True,
            timeout=timeout,
            check=True,
        )
    except (subprocess.SubprocessError, OSError):
        dump.unlink(missing_ok=True)
        return
    if dump.exists() and dump.stat().st_size > 0:
        os.replace(dump, path)
    else:
        dump.unlink(missing_ok=True)


def use_archive() -> None:
    """Give every Spark driver this process and its children start the archive's options."""
    archive = ensure_archive()
    if archive is not None:
        current = os.environ.get("SPARK_SUBMIT_OPTS", "")
        os.environ["SPARK_SUBMIT_OPTS"] = f"{current} {driver_options(archive)}".strip()
