"""The driver JVM's class-data-sharing archive: a job's driver starts seconds sooner.

A job's driver loads and verifies some 15,000 classes before its first micro-batch. Java's
dynamic archive (JEP 350) keeps them ready: a JVM started with ``-XX:ArchiveClassesAtExit=F``
writes the classes it loaded to ``F`` when it exits, and one started with
``-XX:SharedArchiveFile=F -Xshare:auto`` maps them instead of loading them again, or starts
without them when ``F`` does not fit (another Java, other jars on its class path).

The first job run by this installation writes the archive when it stops (a few seconds, once);
every later job's driver starts from it. It is ``spark-driver-<key>.jsa`` in
``$TRENDING_CLASS_ARCHIVE`` (a folder), else ``$XDG_CACHE_HOME/trending`` or
``~/.cache/trending``; ``<key>`` hashes the Java binary and pyspark's jars, so an archive of
another Java or Spark is never used. ``TRENDING_CLASS_ARCHIVE=off`` turns it off. Only a JVM
this process starts takes it, and only when nothing else chose the driver's Java options or
names an archive (``spark.driver.extraJavaOptions``, ``$SPARK_SUBMIT_OPTS``,
``$JAVA_TOOL_OPTIONS``, ``$JDK_JAVA_OPTIONS``).
"""

from __future__ import annotations

import logging
import os
import re
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from connectors.jvm import JAVA_OPTION_VARIABLES, ClassArchive, java_executable
from trending.status import say

log = logging.getLogger(__name__)

ENV = "TRENDING_CLASS_ARCHIVE"
NAME = "spark-driver"
_SHARING_FLAG = re.compile(r"-XX:(SharedArchiveFile|ArchiveClassesAtExit)=|-Xshare:")
# How long a stopping driver may take to write the archive before it is given up.
DUMP_TIMEOUT_S = 180.0

_dumping: ClassArchive | None = None  # the archive the running driver writes at exit


def folder(environ: Mapping[str, str]) -> Path | None:
    """Where the archive lives, or ``None`` when it is turned off."""
    chosen = environ.get(ENV, "").strip()
    if chosen.lower() in ("off", "0", "false", "no"):
        return None
    if chosen:
        return Path(chosen).expanduser()
    cache = environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache).expanduser() / "trending"


def chosen_elsewhere(environ: Mapping[str, str]) -> bool:
    """Whether the environment already names an archive or sharing mode for the JVM."""
    return any(_SHARING_FLAG.search(environ.get(name, "")) for name in JAVA_OPTION_VARIABLES)


def driver_archive(environ: Mapping[str, str]) -> ClassArchive | None:
    """This installation's driver archive (there or to be written), or ``None`` when it is
    turned off, chosen elsewhere, or its folder cannot be made."""
    where = folder(environ)
    if where is None or chosen_elsewhere(environ):
        return None
    try:
        import pyspark

        jars = sorted((Path(pyspark.__file__).parent / "jars").glob("*.jar"))
        where.mkdir(parents=True, exist_ok=True)
        if not os.access(where, os.W_OK):
            return None
        return ClassArchive(NAME, os.path.realpath(java_executable()), jars, where)
    except OSError as error:
        log.debug("no class archive: %s", error)
        return None


def launch_options(environ: Mapping[str, str], dump: bool) -> str:
    """The driver's options for the archive: use it, or write it at exit when ``dump`` (the
    caller then calls :func:`finish` after stopping Spark); ``""`` when there is none to use."""
    global _dumping
    archive = driver_archive(environ)
    if archive is None:
        return ""
    options = archive.options(dump=dump)
    _dumping = archive if archive.dumping else None
    return " ".join(options)


def finish() -> None:
    """After ``spark.stop()``: when this process's driver writes the archive, end its JVM, wait
    for the archive, and keep it. A no-op otherwise."""
    global _dumping
    archive, _dumping = _dumping, None
    if archive is None:
        return
    from pyspark import SparkContext

    gateway: Any = SparkContext._gateway
    process: subprocess.Popen[bytes] | None = getattr(gateway, "proc", None)
    if process is None or process.stdin is None:
        archive.discard()
        return
    say(f"writing the driver's class archive (once, for faster starts): {archive.path}")
    try:
        gateway.shutdown()
        process.stdin.close()  # pyspark's JVM exits when its standard input closes
        code = process.wait(timeout=DUMP_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as error:
        log.warning("the driver's class archive was not written: %s", error)
        process.kill()
        archive.discard()
        return
    finally:
        SparkContext._gateway = None
        SparkContext._jvm = None
    if code == 0:
        archive.keep()
        archive.sweep()
    else:
        archive.discard()
