"""Running a job's CLI as a subprocess: to its end, or SIGKILLed at a logged point."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import threading

from tests.support.spark_cluster import cluster_env


def run_to_end(command: list[str]) -> str:
    result = subprocess.run(
        command, capture_output=True, text=True, timeout=600, env=cluster_env(), check=False
    )
    assert result.returncode == 0, result.stderr[-4000:]
    return result.stderr


def kill_after(command: list[str], logged: str) -> str:
    """Start the job, SIGKILL its whole process group (Python driver and JVM) once it has
    logged a line matching ``logged``; return what it logged."""
    process = subprocess.Popen(
        command, stderr=subprocess.PIPE, text=True, env=cluster_env(), start_new_session=True
    )
    assert process.stderr is not None
    lines: list[str] = []
    reached = threading.Event()

    def read() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            lines.append(line)
            if re.search(logged, line):
                reached.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert reached.wait(300), "the job did not reach the kill point:\n" + "".join(lines)[-4000:]
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(60)
        reader.join(10)
    return "".join(lines)
