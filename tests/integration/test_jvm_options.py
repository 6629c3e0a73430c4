"""The driver's JVM options choose the throughput collector, unless the environment has already
chosen one (a JVM given two collectors does not start), and raise the JIT's C2 thresholds, unless
the environment sets the JIT's tiers itself."""

from __future__ import annotations

import shlex
import subprocess

import pytest

from connectors.jvm import java_executable
from trending.spark.session import driver_java_options

PARALLEL = "-XX:+UseParallelGC"


def starts(options: str) -> subprocess.CompletedProcess[str]:
    """``java <options> -version``, as the driver's command line puts them in a row."""
    command = [str(java_executable()), *shlex.split(options), "-version"]
    return subprocess.run(command, check=False, capture_output=True, text=True, timeout=60)


def test_with_no_collector_chosen_the_driver_uses_the_parallel_collector() -> None:
    options = driver_java_options({})
    assert PARALLEL in options.split()
    assert "-Dlog4j2.level=WARN" in options.split()


@pytest.mark.parametrize("variable", ["SPARK_SUBMIT_OPTS", "JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS"])
@pytest.mark.parametrize("collector", ["-XX:+UseSerialGC", "-XX:+UseG1GC", "-XX:+UseZGC"])
def test_a_collector_chosen_in_the_environment_is_left_alone(variable: str, collector: str) -> None:
    options = driver_java_options({variable: f"-Xshare:auto {collector} -Dx=1"})
    assert PARALLEL not in options.split()


def test_a_collector_switched_off_is_not_a_choice() -> None:
    assert PARALLEL in driver_java_options({"SPARK_SUBMIT_OPTS": "-XX:-UseG1GC"}).split()


def test_the_options_start_a_jvm_beside_a_collector_the_submit_options_chose() -> None:
    submit = "-XX:+UseSerialGC"
    assert starts(f"{submit} {PARALLEL}").returncode != 0  # why the choice must be left alone
    combined = starts(f"{submit} {driver_java_options({'SPARK_SUBMIT_OPTS': submit})}")
    assert combined.returncode == 0, combined.stderr
    alone = starts(driver_java_options({}))
    assert alone.returncode == 0, alone.stderr


def final_flags(options: str) -> dict[str, str]:
    """The JVM's final value of each flag under ``options`` (``-XX:+PrintFlagsFinal``)."""
    command = [str(java_executable()), *shlex.split(options), "-XX:+PrintFlagsFinal", "-version"]
    out = subprocess.run(command, check=True, capture_output=True, text=True, timeout=60).stdout
    return {f[1]: f[3] for f in (line.split() for line in out.splitlines()) if len(f) >= 4}


def test_the_driver_compiles_with_c2_after_ten_times_the_jvm_s_default_calls() -> None:
    default, ours = final_flags(""), final_flags(driver_java_options({}))
    for flag in ("Tier4InvocationThreshold", "Tier4MinInvocationThreshold",
                 "Tier4CompileThreshold", "Tier4BackEdgeThreshold"):  # fmt: skip
        assert int(ours[flag]) == 10 * int(default[flag])


TIER_CHOICES = ["-XX:-TieredCompilation", "-XX:TieredStopAtLevel=1", "-XX:Tier4CompileThreshold=9"]


@pytest.mark.parametrize("chosen", TIER_CHOICES)
def test_jit_tiers_set_in_the_environment_are_left_alone(chosen: str) -> None:
    options = driver_java_options({"JAVA_TOOL_OPTIONS": chosen})
    assert "Tier4" not in options
    assert PARALLEL in options.split()
