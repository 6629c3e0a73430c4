"""Running a file of ``examples/`` as a user would: its own process, the test's interpreter."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run_example(name: str, *args: str, timeout: float = 240) -> list[str]:
    """The stdout lines of ``examples/<name>`` run with ``args``; fails the test on a non-zero
    exit, with the end of its stderr."""
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "PYSPARK_PYTHON": sys.executable},
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.splitlines()
