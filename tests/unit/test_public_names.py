"""``import trending`` offers the library's names without importing pyspark: its ``__all__`` is
written out (importing :mod:`trending.library` to read it would load Spark), so it must name
exactly what :mod:`trending.library` exports, and each must load on first use."""

from __future__ import annotations

import subprocess
import sys

import trending
from trending import library


def test_the_package_names_what_the_library_exports() -> None:
    assert sorted(trending.__all__) == sorted(library.__all__)
    for name in trending.__all__:
        assert getattr(trending, name) is getattr(library, name)


def test_importing_the_package_loads_no_pyspark() -> None:
    code = "import sys, trending; sys.exit('pyspark' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0
