"""The driver's JVM options choose the throughput collector for a backlog and G1 for a live query,
unless the environment has already chosen one (a JVM given two collectors does not start), and
raise the JIT's C2 thresholds, unless the environment sets the JIT's tiers itself."""

from __future__ import annotations

import shlex
import subprocess

import pytest

from connectors.jvm import JAVA_OPTION_VARIABLES, java_executable
from trending.spark.session import driver_java_options, job_collector, session_settings

PARALLEL = "-XX:+UseParallelGC"
G1 = "-XX:+UseG1GC"


def starts(options: str) -> subprocess.CompletedProcess[str]:
    """``java <options> -version``, as the driver's command line puts them in a row."""
    command = [str(java_executable()), *shlex.split(options), "-version"]
    return subprocess.run(command, check=False, capture_output=True, text=True, timeout=60)


def test_with_no_collector_chosen_the_driver_uses_the_parallel_collector() -> None:
    options = driver_java_options({})
    assert PARALLEL in options.split()
    assert "-Dlog4j2.level=WARN" in options.split()


def test_a_live_job_s_jvms_run_g1_and_a_backlog_s_the_parallel_collector(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for variable in JAVA_OPTION_VARIABLES:  # as in an environment that chose nothing
        monkeypatch.delenv(variable, raising=False)
    for live, collector, other in ((True, G1, PARALLEL), (False, PARALLEL, G1)):
        settings = session_settings("t", "local[2]", {}, {}, False, job_collector(live))
        driver = settings["spark.driver.extraJavaOptions"]
        assert collector in driver.split() and other not in driver.split()
        assert settings["spark.executor.extraJavaOptions"] == collector
        started = starts(driver)
        assert started.returncode == 0, started.stderr
        assert final_flags(driver)[collector.removeprefix("-XX:+")] == "true"


def test_a_collector_chosen_in_the_environment_is_kept_for_a_live_job_too() -> None:
    options = driver_java_options({"JAVA_TOOL_OPTIONS": "-XX:+UseZGC"}, job_collector(live=True))
    assert G1 not in options.split() and PARALLEL not in options.split()


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
