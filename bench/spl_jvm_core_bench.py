"""Bench of the JVM core of the SPL windows (``trending.spl``): tuples/s, no Spark.

Compiles ``bench/SplJvmCoreBench.java`` against ``build/jars/udf/trending-udf.jar`` (built by
``bash jvm/udf/build.sh``) and runs it: sliding count(1000) with one window per key over 10,000
keys (trigger count(1), then count(100); tuples to random keys one by one, then in runs of 100
per key), a partitioned window under partitionCount(10000) LRU
eviction over 100,000 keys, and the state encoding of the 10,000 windows. Each run goes twice,
the first to warm the JVM up.

Usage: ``.venv/bin/python bench/spl_jvm_core_bench.py [TUPLES]`` (default 5,000,000 per run).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from connectors.jvm import compile_java, jars_root, java_executable

SOURCE = Path(__file__).with_name("SplJvmCoreBench.java")


def main() -> None:
    jar = jars_root() / "udf" / "trending-udf.jar"
    if not jar.is_file():
        raise SystemExit(f"no {jar}: run `bash jvm/udf/build.sh`")
    tuples = sys.argv[1] if len(sys.argv) > 1 else "5000000"
    with tempfile.TemporaryDirectory() as tmp:
        compile_java(SOURCE, [jar], Path(tmp))
        classpath = os.pathsep.join([tmp, str(jar)])
        command = [java_executable(), "-Xmx4g", "-cp", classpath, "SplJvmCoreBench", tuples]
        subprocess.run(command, check=True)


if __name__ == "__main__":
    main()
