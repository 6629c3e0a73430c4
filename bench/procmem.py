"""Bench harness: peak resident memory of a process tree (sampled from /proc), and the broker."""

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
