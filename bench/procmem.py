"""Bench harness: peak resident memory of a process tree (sampled from /proc), the machine's busy
cores over an interval (from /proc/stat), and the broker."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        children = task / "children"
        if children.exists():
            found += [int(c) for c in children.read_text().split()]
    return found


def tree_rss_bytes(pid: int) -> int:
    total, stack = 0, [pid]
    while stack:
        current = stack.pop()
        try:
            for line in Path(f"/proc/{current}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
            stack += _children(current)
        except (FileNotFoundError, ProcessLookupError):
            continue
    return total


def run_measured(command: list[str], env: dict[str, str] | None = None) -> tuple[float, int, str]:
    """Run ``command``; return (wall seconds, peak RSS bytes of its tree, combined output)."""
    started = time.monotonic()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    peak = 0
    stop = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not stop.is_set():
            peak = max(peak, tree_rss_bytes(process.pid))
            time.sleep(0.1)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    output, _ = process.communicate()
    stop.set()
    sampler.join()
    seconds = time.monotonic() - started
    text = output.decode(errors="replace")
    if process.returncode != 0:
        raise RuntimeError(f"{command[:3]} exited {process.returncode}:\n{text[-3000:]}")
    return seconds, peak, text


def cpu_jiffies() -> tuple[int, int] | None:
    """(busy, total) jiffies of all cores since boot, from ``/proc/stat``; None elsewhere."""
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + fields[4]  # idle + iowait
    return sum(fields) - idle, sum(fields)


class CpuSampler:
    """Samples the machine's CPU jiffies every ``interval`` s in a thread, so the busy cores of
    any interval inside the run can be read afterwards: (busy jiffies / total jiffies) x cores,
    between the samples nearest its ends. Counts every process, the broker's too."""

    def __init__(self, interval: float = 0.25) -> None:
        self.samples: list[tuple[float, int, int]] = []
        self._interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="cpu-sampler", daemon=True)

    def __enter__(self) -> CpuSampler:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while True:
            now = cpu_jiffies()
            if now is not None:
                self.samples.append((time.time(), *now))
            if self._stop.wait(self._interval):
                return

    def busy_cores(self, start: float, end: float) -> float | None:
        """Average busy cores between wall-clock times ``start`` and ``end`` (None without
        samples there)."""
        inside = [s for s in self.samples if start <= s[0] <= end]
        if len(inside) < 2:
            return None
        (_, busy0, total0), (_, busy1, total1) = inside[0], inside[-1]
        if total1 == total0:
            return None
        return (busy1 - busy0) / (total1 - total0) * (os.cpu_count() or 1)


@contextmanager
def bench_broker(data_dir: Path) -> Iterator[str]:
    """``$KAFKA_BOOTSTRAP_SERVERS`` when set, else a local broker keeping its data in
    ``data_dir`` (reused across runs, so generated topics are made once)."""
    bootstrap = os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
    if bootstrap:
        yield bootstrap
        return
    from connectors.broker import LocalBroker, free_port

    broker = LocalBroker(free_port(), data_dir)
    broker.start()
    try:
        broker.wait_ready(90)
        yield broker.bootstrap
    finally:
        broker.stop()
