"""The library's tests against other pyspark versions, each in a venv of its own.

Usage: ``python tests/compat/run.py [--build-only] VERSION...`` (``make test-compat``,
``PYSPARK_VERSIONS="4.0.1 4.3.0"``).

For each version a venv ``build/compat/pyspark-VERSION`` gets that pyspark, the project's other
runtime requirements and the test requirements the library tests need (all as pyproject.toml
declares them, its exact pyspark pin left out), and the checkout itself, editable and without
dependencies. The venv is built once: its stamp file holds the requirements it was built with,
and a changed list rebuilds it. Then the library tests (``spl_window``, ``temporal_window``,
``SlidingTopK``) run in it, and a table says what passed per version. The exit status is 1 when
any version failed.

The project's jar (``build/jars/udf/trending-udf.jar``) is the one every version loads: it is
compiled against the pinned Spark. ``TRENDING_COMPAT_JAR`` set to a jar built for the version
under test puts that jar on the session's class path instead (``spark-submit --jars``).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
COMPAT = ROOT / "build" / "compat"
TESTS = [
    "tests/integration/test_library_spl.py",
    "tests/integration/test_library_temporal.py",
    "tests/integration/test_library_topk.py",
]
# from the dev extra: tests/conftest.py uses hypothesis and a hook of pytest-xdist
TEST_REQUIREMENTS = ("pytest", "pytest-timeout", "pytest-xdist", "hypothesis")
JAR_ENV = "TRENDING_COMPAT_JAR"


def _name(requirement: str) -> str:
    match = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement)
    return match.group(0).lower().replace("_", "-") if match else ""


def requirements(version: str) -> list[str]:
    """pyspark==``version``, the other runtime requirements, the tests' ones."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    runtime = [r for r in project["dependencies"] if _name(r) != "pyspark"]
    dev = project["optional-dependencies"]["dev"]
    tests = [r for r in dev if _name(r) in TEST_REQUIREMENTS]
    return [f"pyspark=={version}", *runtime, *tests]


def venv_of(version: str) -> Path:
    return COMPAT / f"pyspark-{version}"


def build(version: str, python: str) -> Path:
    """The venv of ``version``, installed unless its stamp lists the same requirements (a
    changed list is installed into the venv there; ``rm -rf build/compat`` starts afresh)."""
    venv = venv_of(version)
    stamp = venv / ".installed"
    wanted = "\n".join(requirements(version)) + "\n"
    if stamp.is_file() and stamp.read_text() == wanted:
        return venv
    print(f"== installing {venv.relative_to(ROOT)}", flush=True)
    stamp.unlink(missing_ok=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "--quiet", "--disable-pip-version-check"]
    if not (venv / "bin" / "python").is_file():
        shutil.rmtree(venv, ignore_errors=True)
        subprocess.run([python, "-m", "venv", str(venv)], check=True)
        subprocess.run([*pip, "install", "--upgrade", "pip"], check=True)
    quiet = {**os.environ, "PYTHONWARNINGS": "ignore"}
    subprocess.run([*pip, "install", *requirements(version)], check=True, env=quiet)
    subprocess.run([*pip, "install", "--no-deps", "-e", str(ROOT)], check=True, env=quiet)
    stamp.write_text(wanted)
    return venv


def run_tests(version: str, pytest_args: list[str]) -> tuple[int, dict[str, int]]:
    """Run the library tests in the venv of ``version``: exit status and outcome counts."""
    venv = venv_of(version)
    python = str(venv / "bin" / "python")
    report = venv / "junit.xml"
    report.unlink(missing_ok=True)
    env = {**os.environ, "PYSPARK_PYTHON": python}
    env.pop("VIRTUAL_ENV", None)
    jar = os.environ.get(JAR_ENV)
    if jar:
        env["PYSPARK_SUBMIT_ARGS"] = f"--jars {Path(jar).resolve()} pyspark-shell"
    print(f"== pyspark {version}: {' '.join(TESTS)}", flush=True)
    command = [python, "-m", "pytest", *TESTS, "-q", "-p", "no:cacheprovider"]
    command += [f"--junitxml={report}", *pytest_args]
    status = subprocess.run(command, cwd=ROOT, env=env, check=False).returncode
    return status, _outcomes(report)


def _outcomes(report: Path) -> dict[str, int]:
    if not report.is_file():
        return {}
    suite = ET.parse(report).getroot()
    suite = suite.find("testsuite") if suite.tag == "testsuites" else suite
    if suite is None:
        return {}
    counts = {k: int(suite.get(k, "0")) for k in ("tests", "failures", "errors", "skipped")}
    counts["passed"] = counts["tests"] - counts["failures"] - counts["errors"] - counts["skipped"]
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("versions", nargs="+", metavar="VERSION", help="pyspark versions")
    parser.add_argument("--python", default=sys.executable, help="the Python of the venvs")
    parser.add_argument("--build-only", action="store_true", help="build the venvs, run nothing")
    args, pytest_args = parser.parse_known_args(argv)
    results: dict[str, tuple[int, dict[str, int]]] = {}
    for version in args.versions:
        build(version, args.python)
    if args.build_only:
        return 0
    for version in args.versions:
        results[version] = run_tests(version, pytest_args)
    print("\npyspark   status  passed  failed  errors  skipped")
    for version, (status, counts) in results.items():
        failed = counts.get("failures", "?")
        print(
            f"{version:<9} {'ok' if status == 0 else 'FAIL':<7} {counts.get('passed', '?'):>6}"
            f"  {failed:>6}  {counts.get('errors', '?'):>6}  {counts.get('skipped', '?'):>7}"
        )
    return 0 if all(status == 0 for status, _ in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
