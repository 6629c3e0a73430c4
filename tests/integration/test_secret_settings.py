"""A session's secret settings reach Spark but no process's command line.

pyspark starts its JVM with ``spark-submit --conf KEY=VALUE`` for each setting made before the JVM
runs, and ``ps`` shows every process's command line to every user of the machine. One session
starts in a fresh Python process (so pyspark starts a JVM of its own), which records the command
it launches, reads the command line of every process on the machine while the session runs, and
reads the settings back from the SparkContext and the session's Hadoop configuration.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
SECRETS = {
    "spark.hadoop.fs.s3a.secret.key": "Sx-s3a-secret-7q",
    "spark.hadoop.fs.azure.account.key.acct.dfs.core.windows.net": "Sx-azure-key-7q",
}
PROBE = """
import json, os
import pyspark.java_gateway as gateway

launched = []
popen = gateway.Popen


def record(command, **kwargs):
    launched.append(list(command))
    return popen(command, **kwargs)


gateway.Popen = record
from trending.spark.session import build_session

secrets = json.loads(os.environ["SECRET_SETTINGS"])  # not on this process's command line
spark = build_session(
    "tests-secret-settings", "local[1]", {**secrets, "spark.x.plain": "visible"}, 1
)
try:
    command_lines = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as file:
                command_lines.append(file.read().decode(errors="replace"))
        except OSError:
            pass  # gone, or not ours to read
    context = spark.sparkContext
    hadoop = spark._jsparkSession.sessionState().newHadoopConf()
    found = {
        "launched": launched,
        "command_lines": command_lines,
        "conf": {key: context.getConf().get(key) for key in secrets},
        "hadoop": {key: hadoop.get(key.removeprefix("spark.hadoop.")) for key in secrets},
        "plain": context.getConf().get("spark.x.plain"),
    }
finally:
    spark.stop()
print("RESULT " + json.dumps(found))
"""


def test_secret_settings_reach_spark_but_no_command_line() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=ROOT,
        env={**os.environ, "SECRET_SETTINGS": json.dumps(SECRETS)},
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.split("RESULT ", 1)[1])
    assert len(result["launched"]) == 1  # the session started its own JVM
    launch = " ".join(result["launched"][0])
    assert "spark.x.plain=visible" in launch  # the other settings still start the JVM
    assert any("org.apache.spark.deploy.SparkSubmit" in line for line in result["command_lines"])
    for secret in SECRETS.values():
        assert secret not in launch
        assert not [line for line in result["command_lines"] if secret in line]
    assert result["conf"] == SECRETS
    assert result["hadoop"] == SECRETS
    assert result["plain"] == "visible"
