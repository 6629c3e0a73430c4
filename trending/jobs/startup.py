"""Where a job's start-up time goes, from the process's start to its first committed batch.

:func:`run` (:mod:`trending.jobs.runtime`) opens a :class:`StartupClock`; the steps of a job's
start mark themselves with :func:`phase` (a no-op outside a clock)::

    with phase("topics"):
        ensure_topics(...)

The runtime prints one line when the query has started, with the time since the process started
and each phase (what is not in a phase, imports and the interpreter's start before the clock
began, is ``python``), one when the first micro-batch has committed, and one when the job has
shut down (its Kafka clients, metrics and Spark released).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

_current: list[StartupClock] = []


def process_started() -> float:
    """Wall-clock time (epoch s) this process started: now minus its age, the machine's uptime
    (``/proc/uptime``) less the start time after boot (``/proc/self/stat``); now where
    ``/proc`` is not there."""
    try:
        with open("/proc/uptime") as uptime:
            up = float(uptime.read().split()[0])
        with open("/proc/self/stat") as own:
            fields = own.read().rpartition(")")[2].split()
        ticks = float(fields[19])  # field 22 of proc(5), counted after the command's ")"
        return time.time() - (up - ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, IndexError, ValueError):
        return time.time()


@dataclass
class StartupClock:
    """Seconds per phase of a start, in order; ``began``: when the process started."""

    began: float = field(default_factory=process_started)
    phases: list[tuple[str, float]] = field(default_factory=list)
    clock_started: float = field(default_factory=time.time)

    def __enter__(self) -> StartupClock:
        _current.append(self)
        return self

    def __exit__(self, *_: object) -> None:
        _current.remove(self)

    def add(self, name: str, seconds: float) -> None:
        for i, (known, before) in enumerate(self.phases):
            if known == name:  # a phase met again (a second query's start) adds up
                self.phases[i] = (name, before + seconds)
                return
        self.phases.append((name, seconds))

    def ready_line(self, now: float | None = None) -> str:
        """``ready 12.3 s after the process started: python 1.0 s, Spark session 5.2 s, ...``."""
        now = time.time() if now is None else now
        python = max(0.0, self.clock_started - self.began)
        parts = [("python", python), *self.phases]
        other = (now - self.began) - sum(s for _, s in parts)
        if other >= 0.05:
            parts.append(("other", other))
        listed = ", ".join(f"{name} {seconds:.1f} s" for name, seconds in parts)
        return f"ready {now - self.began:.1f} s after the process started: {listed}"

    def shut_down_line(self, seconds: float, now: float | None = None) -> str:
        """``shut down in 0.6 s, 9.1 s after the process started``: the last of a run's time."""
        now = time.time() if now is None else now
        return f"shut down in {seconds:.1f} s, {now - self.began:.1f} s after the process started"

    def first_batch_line(self, committed_at: float, batch_seconds: float) -> str:
        return (
            f"first micro-batch committed {committed_at - self.began:.1f} s after the process "
            f"started ({batch_seconds:.1f} s in the batch)"
        )


@contextmanager
def phase(name: str) -> Iterator[None]:
    """Count the block's time as ``name`` in the running :class:`StartupClock`, if any."""
    started = time.monotonic()
    try:
        yield
    finally:
        if _current:
            _current[-1].add(name, time.monotonic() - started)
