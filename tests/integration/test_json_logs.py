"""``--log-format json`` reaches the programs beside Python: a driver process whose session the
project's builder started writes only JSON objects, one a line, on standard error: its own
records, the driver JVM's log lines (log4j, a warning of Spark's and one with a stack trace),
what the JVM writes outside its logging (``WARNING: Using incubator modules: ...``, a line on
its standard output) and librdkafka's lines (a producer refused by a closed port)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.ports import free_port

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
DRIVER = """
import sys, time
from confluent_kafka import Producer
from trending.cli import configure_logging
from trending.status import kafka_log_settings

configure_logging("json", "json logs")
from trending.spark.session import build_session

spark = build_session("trending-json-logs", "local[1]", shuffle_partitions=1)
spark.conf.set("spark.sql.execution.arrow.enabled", "true")  # Spark: a deprecated setting
jvm = spark.sparkContext._jvm
jvm.org.apache.logging.log4j.LogManager.getLogger("trending.test.probe").error(
    'probe "quoted"\\nsecond line', jvm.java.lang.IllegalStateException("boom")
)
jvm.java.lang.System.out.println("a line on the JVM's standard output")
assert spark.range(5).count() == 5
producer = Producer({"bootstrap.servers": f"127.0.0.1:{sys.argv[1]}", **kafka_log_settings()})
deadline = time.monotonic() + 2  # refused at once: librdkafka logs each attempt
while time.monotonic() < deadline:
    producer.poll(0.1)  # hands its log lines over
producer.flush(0)
spark.stop()
"""


def test_the_driver_writes_one_json_object_a_line() -> None:
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "TRENDING_SPARK_LOG_LEVEL": "WARN"}
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, str(free_port())],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == ""  # the JVM's standard output came out as log lines
    entries = []
    for line in done.stderr.splitlines():
        if line.strip():
            entry = json.loads(line)  # every line: a JSON object
            assert isinstance(entry, dict), line
            assert {"time", "level", "message"} <= set(entry), line
            assert entry["job"] == "json logs", line
            entries.append(entry)

    def found(logger: str | None, text: str) -> dict[str, object]:
        hits = [e for e in entries if text in str(e["message"]) and e.get("logger") == logger]
        assert hits, f"no line of {logger} with {text!r} in {entries}"
        return hits[0]

    deprecated = found("org.apache.spark.sql.internal.SQLConf", "has been deprecated")
    assert deprecated["level"] == "WARNING"
    probe = found("trending.test.probe", 'probe "quoted"\nsecond line')
    assert probe["level"] == "ERROR"
    assert "java.lang.IllegalStateException: boom\n\tat " in str(probe["message"])
    assert found("spark", "a line on the JVM's standard output")["level"] == "INFO"
    kafka = [e for e in entries if "[rdkafka#producer-" in str(e["message"])]
    assert kafka and all(e["level"] in ("ERROR", "WARNING", "INFO") for e in kafka), entries
    assert all(e["logger"] == "trending.kafka" for e in kafka), kafka
    incubator = [e for e in entries if "Using incubator modules" in str(e["message"])]
    assert all(e["level"] == "WARNING" for e in incubator)  # JDKs that have the module print it
