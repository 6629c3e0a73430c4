"""Running a job's CLI as a subprocess: to its end, in the background, or SIGKILLed at a
logged point."""

from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tests.support.spark_cluster import cluster_env


def slow_first_python(folder: Path) -> tuple[Path, Path]:
    """An interpreter wrapper for ``PYSPARK_PYTHON`` whose first start sleeps 12 s, past Spark's
    fixed 10 s for a Python worker to connect back; and the marker its first start leaves."""
    once, wrapper = folder / "slept", folder / "slow-python"
    wrapper.write_text(
        f'#!/bin/sh\nif mkdir "{once}" 2>/dev/null; then sleep 12; fi\n'
        f'exec "{sys.executable}" "$@"\n'
    )
    wrapper.chmod(0o755)
    return wrapper, once


def run_to_end(command: list[str]) -> str:
    result = subprocess.run(
        command, capture_output=True, text=True, timeout=600, env=cluster_env(), check=False
    )
    assert result.returncode == 0, failure_text(result.stderr)
    return result.stderr


def failure_text(stderr: str, tail: int = 3000) -> str:
    """What a failed job's stderr says: its exception and cause lines (a JVM stack trace is
    long, and its cause comes first), then its last ``tail`` characters."""
    causes = [
        line.strip()[:400]
        for line in stderr.splitlines()
        if re.match(r"\s*(Caused by: |[\w.$]+(Exception|Error)\b)", line)
    ]
    return "\n".join(causes[:12]) + "\n...\n" + stderr[-tail:]


def start_job(command: list[str]) -> tuple[subprocess.Popen[str], list[str]]:
    """Start a job in its own process group (driver and JVM: signal them with ``os.killpg``);
    its stderr lines are collected in the returned list as they come."""
    process = subprocess.Popen(
        command, stderr=subprocess.PIPE, text=True, env=cluster_env(), start_new_session=True
    )
    lines: list[str] = []

    def read() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            lines.append(line)

    threading.Thread(target=read, daemon=True).start()
    return process, lines


def wait_logged(
    lines: list[str],
    pattern: str,
    timeout: float = 300,
    process: subprocess.Popen[str] | None = None,
    after: int = 0,
) -> bool:
    """Wait until a line matching ``pattern`` was logged (as line ``after`` or later): True;
    False when ``process`` ended first with exit code 0. Fails with the log when it ended
    otherwise or time ran out."""
    deadline = time.monotonic() + timeout
    while not any(re.search(pattern, line) for line in lines[after:]):
        if process is not None and process.poll() is not None:
            assert process.returncode == 0, "".join(lines)[-4000:]
            return False
        assert time.monotonic() < deadline, f"{pattern!r} not logged:\n" + "".join(lines)[-4000:]
        time.sleep(0.1)
    return True


def kill_group(process: subprocess.Popen[str]) -> None:
    """SIGKILL a job started by :func:`start_job` (driver and JVM) and reap it."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(60)


def kill_after(command: list[str], logged: str) -> str:
    """Start the job, SIGKILL its whole process group (Python driver and JVM) once it has
    logged a line matching ``logged``; return what it logged."""
    process, lines = start_job(command)
    try:
        wait_logged(lines, logged)
    finally:
        kill_group(process)
    return "".join(lines)


BATCH_LOGGED = r"batch \d+: "  # a job's progress line for a batch (any outcome)


def wait_batches(lines: list[str], count: int, process: subprocess.Popen[str]) -> bool:
    """Wait until the job logged ``count`` batch lines: True; False when it ended first."""
    after = 0
    for _ in range(count):
        if not wait_logged(lines, BATCH_LOGGED, process=process, after=after):
            return False
        after = next(i for i in range(after, len(lines)) if re.search(BATCH_LOGGED, lines[i]))
        after += 1
    return True


def crash_and_restart(command: list[str], seed: int, kills: int = 3) -> tuple[int, str]:
    """Run an ``--available-now`` job to its end through ``kills`` SIGKILLs at seeded random
    points, each followed by a restart from the checkpoint. Each run is killed (Python driver
    and JVM at once) a random 0-0.3 s after it logged its first or second batch, so inside a
    later batch's reading, state update or commit. The point is counted in batches, not in
    seconds from the start, so a killed run gets through only a few batches on a machine of any
    speed and a job of 15 batches or more meets every kill. Returns how many runs were killed
    before the job ended and the log of its last run."""
    rng = random.Random(seed)
    killed = 0
    for _ in range(kills):
        process, lines = start_job(command)
        try:
            if not wait_batches(lines, rng.randint(1, 2), process):
                return killed, "".join(lines)  # ended before its kill point
            time.sleep(rng.uniform(0, 0.3))
            if process.poll() is None:
                killed += 1
        finally:
            kill_group(process)
    return killed, run_to_end(command)


@dataclass(frozen=True)
class CrashCase:
    """A job to crash three times (:func:`crash_and_restart` with ``seed``): its ``--available-now``
    command, an optional ``reference`` command run to its end beside it, and ``check``, which
    asserts on everything published once the last run (whose log it is given) ended."""

    name: str
    command: list[str]
    seed: int
    check: Callable[[str], None]
    reference: list[str] | None = None
