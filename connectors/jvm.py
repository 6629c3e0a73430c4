"""The JVM side of the project: finding Java and the jars ``make jars`` fetched.

Jar groups live in ``<root>/<group>``: ``broker`` (Apache Kafka), ``connectors`` (Spark's Kafka
and Avro connectors), ``udf`` (the project's Spark functions and their runtime dependencies).
The root is ``$TRENDING_JARS_DIR``, else ``build/jars`` of the source tree when running from a
checkout; an installed package has no default and needs the variable.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import re
import shutil
import struct
import subprocess
import time
import uuid
from collections.abc import Iterable, Sequence
from pathlib import Path

from trending.errors import UserError

REPO_ROOT = Path(__file__).resolve().parents[1]
MIN_JAVA = 17
JARS_ENV = "TRENDING_JARS_DIR"
# Where a JVM's options are chosen outside Spark's settings (spark-submit's and the JVM's own)
JAVA_OPTION_VARIABLES = ("SPARK_SUBMIT_OPTS", "JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS")
_FETCH = "(Java 17+ and Maven 3; it fetches them from Maven Central once)"
_FILLED = f"a build/jars folder filled by `make jars` in a checkout of the project {_FETCH}"


def source_checkout() -> Path | None:
    """The project's source tree when the code runs from a checkout, else ``None`` (installed)."""
    is_checkout = (REPO_ROOT / "pyproject.toml").is_file() and (REPO_ROOT / "jvm").is_dir()
    return REPO_ROOT if is_checkout else None


def jars_root() -> Path:
    """The folder of the jar groups: ``$TRENDING_JARS_DIR``, else the checkout's ``build/jars``;
    a :class:`UserError` when neither is there (an installed package without the variable)."""
    configured = os.environ.get(JARS_ENV)
    if configured:
        return Path(configured).expanduser()
    checkout = source_checkout()
    if checkout is None:
        raise UserError(f"the JVM jars are not found: set {JARS_ENV} to {_FILLED}")
    return checkout / "build" / "jars"


def require_jars(group: str) -> list[Path]:
    """The jars of ``group``, or a :class:`UserError` that says how to fetch them."""
    folder = jars_root() / group
    jars = sorted(folder.glob("*.jar"))
    if not jars:
        if os.environ.get(JARS_ENV):
            hint = f" (from {JARS_ENV}): point {JARS_ENV} at {_FILLED}"
        else:
            hint = f": run `make jars` {_FETCH}, or set {JARS_ENV} to a folder it filled"
        raise UserError(f"the JVM jars for '{group}' are missing in {folder}{hint}")
    return jars


def java_executable() -> str:
    """Path of ``java`` (``JAVA_HOME`` first), checked to be Java 17 or newer."""
    java_home = os.environ.get("JAVA_HOME")
    candidate = str(Path(java_home) / "bin" / "java") if java_home else shutil.which("java")
    if not candidate or not Path(candidate).exists():
        raise UserError(
            f"Java {MIN_JAVA}+ is needed but `java` was not found: install a JDK "
            "(e.g. `apt-get install openjdk-17-jdk-headless`) or set JAVA_HOME"
        )
    version = java_major_version(candidate)
    if version < MIN_JAVA:
        raise UserError(
            f"Java {MIN_JAVA}+ is needed but {candidate} is Java {version}: "
            "install a newer JDK or point JAVA_HOME at one"
        )
    return candidate


def java_major_version(java: str) -> int:
    """The major version ``java -version`` reports (8 for ``1.8.0_x``); asked once per binary
    (a JVM's start costs a job's start-up about 0.2 s)."""
    found = Path(java).resolve()
    stat = found.stat()
    return _major_version(str(found), stat.st_size, stat.st_mtime_ns)


@functools.lru_cache(maxsize=8)
def _major_version(java: str, _size: int, _mtime_ns: int) -> int:
    result = subprocess.run([java, "-version"], capture_output=True, text=True, check=False)
    match = re.search(r'version "(\d+)(?:\.(\d+))?', result.stderr + result.stdout)
    if match is None:
        raise UserError(f"could not read the version of {java}: {result.stderr.strip()[:200]}")
    major = int(match.group(1))
    return int(match.group(2) or 0) if major == 1 else major


def spark_api_jars() -> list[Path]:
    """pyspark's own ``spark-sql-api`` jar (the Spark function interfaces), for ``javac``."""
    import pyspark

    return sorted((Path(pyspark.__file__).parent / "jars").glob("spark-sql-api_*.jar"))


def compile_java(source: Path, classpath: Sequence[Path], out_dir: Path) -> None:
    """``javac --release 17`` one source file into ``out_dir`` (:class:`UserError` on failure)."""
    javac = _javac()
    path = os.pathsep.join(str(jar) for jar in classpath)
    command = [javac, "--release", str(MIN_JAVA), "-encoding", "UTF-8", "-cp", path, "-d"]
    result = subprocess.run(
        [*command, str(out_dir), str(source)],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise UserError(f"javac failed on {source.name}:\n{result.stderr[-3000:]}")


def length_prefixed(texts: Iterable[str]) -> bytes:
    """UTF-8 ``texts``, each after its byte length as a big-endian int (the Java harnesses'
    input format)."""
    return b"".join(struct.pack(">I", len(data)) + data for data in (t.encode() for t in texts))


def _javac() -> str:
    """``javac`` beside the ``java`` in use, else on the PATH."""
    beside = Path(java_executable()).resolve().with_name("javac")
    found = str(beside) if beside.exists() else shutil.which("javac")
    if found is None:
        raise UserError("`javac` was not found: install a JDK (a JRE has only `java`)")
    return found


class ClassArchive:
    """A class-data-sharing archive of a JVM's classes (the broker's: it starts about 2 s faster).

    Without an archive the JVM dumps its loaded classes at exit to a private file, which
    :meth:`keep` renames to ``<folder>/<name>-<key>.jsa``; ``<key>`` hashes the Java binary and
    the jars, so a stale archive is never used. The JVM ignores an archive it cannot map.
    """

    def __init__(self, name: str, java: str, jars: list[Path], folder: Path) -> None:
        stamps = [java, *(f"{j.name}:{j.stat().st_size}:{j.stat().st_mtime_ns}" for j in jars)]
        key = hashlib.sha256("\n".join(stamps).encode()).hexdigest()[:12]
        self.name, self.path = name, folder / f"{name}-{key}.jsa"
        self._dump: Path | None = None

    def options(self, dump: bool = True) -> list[str]:
        """JVM options: use the archive; when there is none yet, dump one at exit (``dump``)."""
        quiet = ["-Xlog:cds=off", "-Xlog:cds+dynamic=off"]
        if self.path.exists():
            return [f"-XX:SharedArchiveFile={self.path}", "-Xshare:auto", *quiet]
        if not dump:
            return []
        self._dump = self.path.with_name(f"{self.path.name}.{uuid.uuid4().hex[:8]}.tmp")
        return [f"-XX:ArchiveClassesAtExit={self._dump}", *quiet]

    @property
    def dumping(self) -> bool:
        """Whether the JVM these options started writes an archive at exit."""
        return self._dump is not None

    def sweep(self, keep: int = 3, stale_after_s: float = 86_400.0) -> None:
        """Drop this name's dumps a run left behind (killed before it exited) once a day old,
        and all but the ``keep`` newest archives (other Javas, other jars)."""
        folder, name = self.path.parent, self.name
        now = time.time()
        for leftover in folder.glob(f"{name}-*.jsa.*.tmp"):
            with contextlib.suppress(OSError):
                if now - leftover.stat().st_mtime > stale_after_s:
                    leftover.unlink()
        archives = sorted(
            folder.glob(f"{name}-*.jsa"), key=lambda p: p.stat().st_mtime, reverse=True
        )
        for old in archives[keep:]:
            with contextlib.suppress(OSError):
                old.unlink()

    def keep(self) -> None:
        """After a clean exit: publish the dumped archive (an atomic rename)."""
        dump, self._dump = self._dump, None
        if dump is not None and dump.exists():
            if dump.stat().st_size > 0:
                os.replace(dump, self.path)
            else:
                dump.unlink()

    def discard(self) -> None:
        """After a failed run: drop whatever it dumped."""
        dump, self._dump = self._dump, None
        if dump is not None:
            dump.unlink(missing_ok=True)
