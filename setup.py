"""The wheel holds the project's own jar (trending/jvm/trending-udf.jar), built with it.

Everything else is declared in pyproject.toml. Building the jar compiles jvm/udf with javac
against pyspark's jars and twitter-text (fetched by Maven): build the wheel with `make wheel`, or
`pip wheel --no-build-isolation .` in an environment that has pyspark, a JDK 17+ and Maven.
An editable install (`pip install -e`) takes no jar: a checkout finds build/jars/udf.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
UDF = ROOT / "jvm" / "udf"
BUILT = ROOT / "build" / "jars" / "udf"
JAR = "trending-udf.jar"


def _sources() -> list[Path]:
    return [p for p in UDF.rglob("*") if p.is_file()]


def _fresh(jar: Path) -> bool:
    return jar.is_file() and all(p.stat().st_mtime <= jar.stat().st_mtime for p in _sources())


def _build_jar() -> Path:
    """build/jars/udf/trending-udf.jar, built unless newer than every source of jvm/udf."""
    jar = BUILT / JAR
    if _fresh(jar):
        return jar
    if not UDF.is_dir():
        raise SystemExit(f"cannot build {JAR}: no jvm/udf beside setup.py")
    if not any(BUILT.glob("twitter-text-*.jar")):
        mvn = shutil.which("mvn")
        if mvn is None:
            raise SystemExit(f"building {JAR} needs Maven 3 (`mvn`) to fetch twitter-text")
        subprocess.run(
            [mvn, "-q", "-B", "-f", str(UDF / "pom.xml"), "dependency:copy-dependencies",
             f"-DoutputDirectory={BUILT}"],
            check=True,
        )  # fmt: skip
    try:
        import pyspark  # noqa: F401
    except ImportError:
        raise SystemExit(
            f"building {JAR} compiles against pyspark's jars: build the wheel with `make wheel` "
            "or `pip wheel --no-build-isolation .` where pyspark is installed"
        ) from None
    subprocess.run(["bash", str(UDF / "build.sh"), sys.executable], check=True)
    return jar


class BuildWithJar(build_py):  # type: ignore[misc]
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        target = Path(self.build_lib) / "trending" / "jvm" / JAR
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(_build_jar(), target)


setup(cmdclass={"build_py": BuildWithJar})
