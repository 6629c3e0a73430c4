"""Faster Spark drivers for the tests: a class-data-sharing archive, the client compiler, a
serial collector.

Most of a test's time is Spark drivers starting: a job's JVM loads some 15,000 classes and
compiles hot code with both JIT tiers, which on two cores takes 10-15 s per start. The tests
start drivers well over a hundred times, each on little data, so these JVM options make every
driver (in-process sessions and the jobs the tests run) start about twice as fast:

* ``-XX:SharedArchiveFile``: the classes come mapped from an archive, dumped once by a warm-up
  driver that runs a stateful streaming query (``-XX:ArchiveClassesAtExit``). The archive is
  ``build/jars/spark-driver-<key>.jsa``; ``<key>`` hashes the Java binary and pyspark's jars, so
  a stale one is never used, and the JVM ignores one it cannot map (``-Xshare:auto``).
* ``-XX:TieredStopAtLevel=1``: only the quick client compiler, which suits short runs. With
  the client compiler alone the JVM reserves 48 MB for compiled code, which Spark's generated
  classes fill within a minute of a test module's session ("CodeCache is full. Compiler has been
  disabled."), and everything after runs interpreted: ``-XX:ReservedCodeCacheSize`` gives it
  the 240 MB that both tiers get by default (:data:`CODE_CACHE`).
* ``-XX:+UseSerialGC``: one collector thread instead of G1's concurrent ones. A test's heap is
  small, so pauses stay short, and a job then takes 5-8% less CPU.

They go in ``SPARK_SUBMIT_OPTS``, which spark-submit gives the driver JVM; the jobs themselves
run unchanged.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path

from connectors.jvm import ClassArchive, jars_root, java_executable

CODE_CACHE = "-XX:ReservedCodeCacheSize=240m"
CLIENT_COMPILER = f"-XX:TieredStopAtLevel=1 {CODE_CACHE} -XX:+UseSerialGC"

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


def driver_archive() -> ClassArchive:
    """The archive of this Java and this pyspark's jars (there or to be dumped)."""
    import pyspark

    jars = sorted((Path(pyspark.__file__).parent / "jars").glob("*.jar"))
    return ClassArchive("spark-driver", java_executable(), jars, jars_root())


def driver_options(archive: Path) -> str:
    """The JVM options that use ``archive`` (silently ignored when it cannot be mapped)."""
    quiet = "-Xlog:cds=off -Xlog:cds+dynamic=off"
    return f"-XX:SharedArchiveFile={archive} -Xshare:auto {quiet} {CLIENT_COMPILER}"


def ensure_archive(timeout: float = 240) -> Path | None:
    """The archive, dumped first by a warm-up driver if there is none (one process at a time;
    the others wait). None if the warm-up failed: the tests then run without it."""
    archive = driver_archive()
    archive.path.parent.mkdir(parents=True, exist_ok=True)
    with (archive.path.parent / "spark-driver.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not archive.path.exists():
            _dump(archive, timeout)
    return archive.path if archive.path.exists() else None


def _dump(archive: ClassArchive, timeout: float) -> None:
    options = " ".join([*archive.options(), CLIENT_COMPILER])
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
        archive.discard()
        return
    archive.keep()


def use_archive() -> None:
    """Give every Spark driver this process and its children start the archive's options."""
    archive = ensure_archive()
    if archive is not None:
        current = os.environ.get("SPARK_SUBMIT_OPTS", "")
        os.environ["SPARK_SUBMIT_OPTS"] = f"{current} {driver_options(archive)}".strip()
