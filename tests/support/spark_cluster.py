"""A real Spark standalone cluster on this machine: one master and N workers from the pyspark wheel.

Each is its own JVM (``spark-class org.apache.spark.deploy.master.Master`` / ``...worker.Worker``),
on 127.0.0.1, with its logs and work folders under ``folder``. Every port is 0 (the system picks
a free one as the JVM binds it, so two clusters never race for a port); the master's ports are
read from its log.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

HOST = "127.0.0.1"
MASTER_URL = re.compile(r"Starting Spark master at (spark://\S+)")
MASTER_UI_PORT = re.compile(r"service 'MasterUI' on port (\d+)")


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def cluster_env() -> dict[str, str]:
    """What the cluster's JVMs and a driver that joins it need in their environment."""
    return {
        **os.environ,
        "SPARK_HOME": str(spark_home()),
        "PYSPARK_PYTHON": sys.executable,
        "SPARK_LOCAL_IP": HOST,
        "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false",  # no fixed port 6066
    }


class StandaloneCluster:
    """``with StandaloneCluster(folder, workers=2) as cluster: ... cluster.master_url``."""

    def __init__(self, folder: Path, workers: int = 2, cores: int = 1, memory: str = "1g") -> None:
        self.folder = folder
        self.workers = workers
        self.cores = cores
        self.memory = memory
        self.master_url = ""
        self.web_port = 0
        self.processes: list[subprocess.Popen[bytes]] = []

    def __enter__(self) -> StandaloneCluster:
        self.folder.mkdir(parents=True, exist_ok=True)
        master = ["--host", HOST, "--port", "0", "--webui-port", "0"]
        self._start("master", "org.apache.spark.deploy.master.Master", master)
        self._read_master_ports(timeout=60)
        for n in range(self.workers):
            work = self.folder / f"worker-{n}"
            work.mkdir(exist_ok=True)
            options = ["--host", HOST, "--cores", str(self.cores), "--memory", self.memory]
            options += ["--webui-port", "0", "--work-dir", str(work), self.master_url]
            self._start(f"worker-{n}", "org.apache.spark.deploy.worker.Worker", options)
        self._wait_for_workers(timeout=90)
        return self

    def _read_master_ports(self, timeout: float) -> None:
        """The master's URL and web UI port, from its log once it has bound them."""
        log = self.folder / "master.log"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.processes[0].poll() is None:
            text = log.read_text(errors="replace")
            url, web = MASTER_URL.search(text), MASTER_UI_PORT.search(text)
            if url and web:
                self.master_url, self.web_port = url.group(1), int(web.group(1))
                return
            time.sleep(0.2)
        self.__exit__()
        raise RuntimeError(f"the master did not start:\n{log.read_text(errors='replace')[-1500:]}")

    def __exit__(self, *_: object) -> None:
        for process in reversed(self.processes):
            process.terminate()
        for process in self.processes:
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                process.kill()

    def _start(self, name: str, main_class: str, options: list[str]) -> None:
        log = (self.folder / f"{name}.log").open("wb")
        command = [str(spark_home() / "bin" / "spark-class"), main_class, *options]
        self.processes.append(
            subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=cluster_env())
        )

    def _wait_for_workers(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        alive = 0
        while time.monotonic() < deadline:
            if any(p.poll() is not None for p in self.processes):
                break
            try:
                with urllib.request.urlopen(f"http://{HOST}:{self.web_port}/json", timeout=2) as r:
                    alive = int(json.load(r).get("aliveworkers", 0))
            except OSError:
                alive = 0
            if alive >= self.workers:
                return
            time.sleep(0.5)
        logs = "\n".join(
            f"--- {p.name}:\n{p.read_text(errors='replace')[-1500:]}"
            for p in sorted(self.folder.glob("*.log"))
        )
        raise RuntimeError(f"the cluster did not come up ({alive} workers alive):\n{logs}")
