"""A JVM core's ``ReplayMain --cases`` (``trending.spl``, ``trending.temporal``), run by a test.

One JVM replays a whole stream of cases: each a header line (the spec in the core's normal
form) followed by its input lines; the output is each case's lines, then ``{"end": true}``.
"""

from __future__ import annotations

import os
import subprocess
import zipfile
from pathlib import Path

import pytest

from connectors.jvm import jars_root, java_executable


def replay_classpath(main: str) -> str:
    """The project's jar (which must hold ``main``) and Spark's Jackson jars, as a class path;
    fails the test, saying how to build it, when the jar lacks ``main``."""
    import pyspark

    jar = jars_root() / "udf" / "trending-udf.jar"
    if not jar.is_file():
        pytest.fail(f"no {jar}: run `bash jvm/udf/build.sh`", pytrace=False)
    with zipfile.ZipFile(jar) as archive:
        if main.replace(".", "/") + ".class" not in archive.namelist():
            pytest.fail(f"{jar} has no {main}: run `bash jvm/udf/build.sh`", pytrace=False)
    spark_jars = Path(pyspark.__file__).parent / "jars"
    jackson = sorted(spark_jars.glob("jackson-[acd]*.jar"))
    return os.pathsep.join([str(jar), *map(str, jackson)])


def replay_cases(classpath: str, main: str, stream: list[str], timeout: float = 300) -> list[str]:
    """The output lines of ``main --cases`` fed ``stream`` (headers and input lines)."""
    result = subprocess.run(
        [java_executable(), "-cp", classpath, main, "--cases"],
        input="\n".join(stream) + "\n",
        capture_output=True,
        text=True,
        check=False,
        timeout=timeout,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout.splitlines()
