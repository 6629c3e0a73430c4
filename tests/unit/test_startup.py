"""The start-up line of a job (:mod:`trending.jobs.startup`)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from trending.jobs.startup import StartupClock, phase, process_started


def test_phases_add_up_in_order_and_the_rest_is_python_and_other() -> None:
    clock = StartupClock(began=100.0, clock_started=101.0)
    with clock:
        clock.add("Spark session", 5.0)
        clock.add("topics", 0.25)
        clock.add("topics", 0.25)  # a second query's topics add up
    assert clock.ready_line(now=108.0) == (
        "ready 8.0 s after the process started: python 1.0 s, Spark session 5.0 s, "
        "topics 0.5 s, other 1.5 s"
    )
    assert clock.first_batch_line(110.5, 2.0) == (
        "first micro-batch committed 10.5 s after the process started (2.0 s in the batch)"
    )
    assert clock.shut_down_line(0.75, now=113.0) == (
        "shut down in 0.8 s, 13.0 s after the process started"
    )


def test_a_phase_counts_only_inside_a_clock() -> None:
    with phase("outside"):
        pass
    with StartupClock() as clock, phase("inside"):
        time.sleep(0.05)
    assert [name for name, _ in clock.phases] == ["inside"]
    assert 0.04 <= clock.phases[0][1] < 1.0


def test_the_process_start_is_when_the_process_began() -> None:
    code = "import time; from trending.jobs.startup import process_started as p; " \
        "print(time.time() - p())"  # fmt: skip
    began = time.time()
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, env={**os.environ, "PYTHONPATH": os.getcwd()})  # fmt: skip
    ended = time.time()
    age = float(done.stdout)
    assert 0 <= age <= ended - began + 0.02  # clock ticks are 10 ms
    assert abs(process_started() - time.time()) < 3600 * 24 * 365
