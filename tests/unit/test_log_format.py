"""``trending --log-format json``: one JSON object a line with time, level, job, batch, message."""

from __future__ import annotations

import io
import json
import logging
import shlex
import socket
import sys
import time
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

import pytest

from trending.cli import build_parser, command_of, configure_logging
from trending.config import config_path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib  # type: ignore[import-not-found]

KEYS = {"time", "level", "job", "batch", "logger", "message"}


@pytest.fixture
def stream() -> Iterator[io.StringIO]:
    out = io.StringIO()
    levels = {name: logging.getLogger(name).level for name in ("", "trending")}
    configure_logging("json", "run hashtags", stream=out)
    yield out
    configure_logging("text", "")
    for name, level in levels.items():
        logging.getLogger(name).setLevel(level)


def entries(stream: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_a_record_is_one_json_object_with_the_keys(stream: io.StringIO) -> None:
    logging.getLogger("trending.jobs").info("batch 7: 120 rows", extra={"batch": 7})
    (entry,) = entries(stream)
    assert set(entry) == KEYS
    assert entry["level"] == "INFO" and entry["job"] == "run hashtags"
    assert entry["batch"] == 7 and entry["message"] == "batch 7: 120 rows"
    moment = datetime.fromisoformat(str(entry["time"]).replace("Z", "+00:00"))
    assert moment.utcoffset() == timezone.utc.utcoffset(None)
    assert str(entry["time"]).endswith("Z")


def test_a_record_without_a_batch_has_batch_null(stream: io.StringIO) -> None:
    logging.getLogger("trending.lease").warning("checkpoint: %s", "repaired")
    (entry,) = entries(stream)
    assert entry["batch"] is None and entry["message"] == "checkpoint: repaired"
    assert entry["level"] == "WARNING"


def test_an_exception_stays_on_one_line(stream: io.StringIO) -> None:
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        logging.getLogger("trending.jobs").exception("metrics: could not record batch %d", 3)
    lines = stream.getvalue().splitlines()
    assert len(lines) == 1
    (entry,) = entries(stream)
    assert "RuntimeError: boom" in str(entry["message"])


def test_text_is_the_default_and_adds_no_handler() -> None:
    parser = build_parser()
    args = parser.parse_args(["run", "hashtags"])
    assert args.log_format == "text"
    handlers = list(logging.getLogger().handlers)
    configure_logging(args.log_format, command_of(parser, args))
    assert logging.getLogger().handlers == handlers


def test_the_job_is_the_sub_command() -> None:
    parser = build_parser()
    for argv, job in (
        (["--log-format", "json", "run", "hashtags"], "run hashtags"),
        (["produce", "tweets"], "produce tweets"),
        (["windows", "replay", "spec.yaml"], "windows replay"),
        (["broker"], "broker"),
    ):
        assert command_of(parser, parser.parse_args(argv)) == job


def test_the_config_file_is_found_after_log_format(tmp_path: Path) -> None:
    config = str(tmp_path / "trending.toml")
    found = config_path(["--log-format", "json", "--config", config, "run", "hashtags"], {})
    assert found == (config, "--config")


def test_the_batch_of_a_micro_batch_log_line() -> None:
    """The line each micro-batch logs carries its batch id."""
    source = (Path(__file__).parents[2] / "trending/jobs/common.py").read_text(encoding="utf-8")
    assert 'log.info(self._describe(stats), extra={"batch": stats.batch_id})' in source


def test_the_config_file_sets_log_format_and_a_flag_wins(tmp_path: Path) -> None:
    from trending.config import configure

    path = tmp_path / "trending.toml"
    path.write_text('log-format = "json"\n')
    argv = ["--config", str(path), "run", "hashtags"]
    parser = build_parser()
    configure(parser, argv, {})
    assert parser.parse_args(argv).log_format == "json"
    argv = ["--config", str(path), "--log-format", "text", "run", "hashtags"]
    parser = build_parser()
    configure(parser, argv, {})
    assert parser.parse_args(argv).log_format == "text"


def test_a_bad_or_misspelt_log_format_in_the_file_is_one_line(tmp_path: Path) -> None:
    from trending.config import ConfigError, configure

    path = tmp_path / "trending.toml"
    for text, expected in (
        ('log-format = "xml"\n', "key log-format: wants one of text, json, got 'xml'"),
        ('log-formt = "json"\n', "key log-formt: unknown key (did you mean log-format?)"),
    ):
        path.write_text(text)
        with pytest.raises(ConfigError) as error:
            configure(build_parser(), ["--config", str(path), "run", "hashtags"], {})
        assert [p.split(", top level, ")[1] for p in error.value.problems] == [expected]


def test_status_lines_are_json_objects_too(stream: io.StringIO) -> None:
    from trending.status import say

    say("hashtags job running: tweets -> trending")
    say("error: no broker", logging.ERROR)
    first, second = entries(stream)
    assert set(first) == KEYS and set(second) == KEYS
    assert first["message"] == "hashtags job running: tweets -> trending"
    assert first["level"] == "INFO" and first["job"] == "run hashtags"
    assert second["level"] == "ERROR" and second["message"] == "error: no broker"


def test_status_lines_are_plain_text_by_default(capsys: pytest.CaptureFixture[str]) -> None:
    from trending.status import say

    configure_logging("text", "")
    say("sensors job stopped: no new micro-batches")
    assert capsys.readouterr().err == "trending: sensors job stopped: no new micro-batches\n"


# The lines of the programs beside Python: librdkafka's, and the Spark driver JVM's.


def test_librdkafka_lines_are_json_objects_too(stream: io.StringIO) -> None:
    from confluent_kafka import Producer

    from trending.status import kafka_log_settings

    with socket.socket() as probe:  # a port nothing listens on: the client is refused
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    producer = Producer({"bootstrap.servers": f"127.0.0.1:{port}", **kafka_log_settings()})
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and "rdkafka#producer" not in stream.getvalue():
        producer.poll(0.1)  # the client hands its log lines over in its calls
    producer.flush(0)
    refused = [e for e in entries(stream) if "[rdkafka#producer-" in str(e["message"])]
    assert refused, stream.getvalue()
    assert all(set(e) == KEYS and e["job"] == "run hashtags" for e in refused)
    assert refused[0]["level"] == "ERROR" and str(refused[0]["message"]).startswith("FAIL [")


def test_librdkafka_writes_its_own_lines_with_plain_text() -> None:
    from trending.status import kafka_log_settings

    configure_logging("text", "")
    assert kafka_log_settings() == {}


def test_a_json_line_of_the_jvm_is_relayed_as_it_is(stream: io.StringIO) -> None:
    from trending.status import relay

    line = '{"time":"2026-01-01T00:00:00.000Z","level":"WARNING","logger":"x","message":"m"}'
    relay(line)
    assert stream.getvalue() == line + "\n"


@pytest.mark.parametrize(
    ("line", "level", "message"),
    [
        ("WARNING: Using incubator modules: jdk.incubator.vector", "WARNING",
         "Using incubator modules: jdk.incubator.vector"),
        ("Error: Could not create the Java Virtual Machine.", "ERROR",
         "Could not create the Java Virtual Machine."),
        (":: resolving dependencies :: org.apache.spark#spark-submit-parent", "INFO",
         ":: resolving dependencies :: org.apache.spark#spark-submit-parent"),
        ("{not json", "INFO", "{not json"),
        ("[1, 2]", "INFO", "[1, 2]"),
    ],
)  # fmt: skip
def test_other_lines_of_the_jvm_become_json_objects(
    stream: io.StringIO, line: str, level: str, message: str
) -> None:
    from trending.status import relay

    relay(line)
    (entry,) = entries(stream)
    assert set(entry) == KEYS
    assert (entry["level"], entry["message"], entry["job"]) == (level, message, "run hashtags")


def test_lines_of_the_jvm_stay_as_they_are_with_plain_text(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from trending.status import relay

    configure_logging("text", "")
    relay("WARNING: Using incubator modules: jdk.incubator.vector")
    assert capsys.readouterr().err == "WARNING: Using incubator modules: jdk.incubator.vector\n"


@pytest.fixture
def no_jvm(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No JVM running in this process, no option variable set, an empty Spark conf folder."""
    from pyspark import SparkContext

    monkeypatch.setattr(SparkContext, "_gateway", None)
    folder = tmp_path / "conf"
    folder.mkdir()
    return folder


def test_the_driver_jvm_logs_json_with_the_project_s_configuration(no_jvm: Path) -> None:
    from trending.spark.session import DRIVER_OPTIONS_CONF, JSON_LOG_CONFIG, json_log_options

    environ = {"SPARK_CONF_DIR": str(no_jvm)}
    options = json_log_options({DRIVER_OPTIONS_CONF: "-Dx=1"}, environ, "run hashtags")
    assert options is not None
    assert shlex.split(options) == [
        f"-Dlog4j2.configurationFile={JSON_LOG_CONFIG}",
        "-Dtrending.log.job=run hashtags",
    ]
    assert JSON_LOG_CONFIG.is_file()
    text = JSON_LOG_CONFIG.read_text(encoding="utf-8")
    for part in ("JsonTemplateLayout", "SYSTEM_ERR", "${sys:trending.log.job"):
        assert part in text
    without_job = json_log_options({}, environ, "")  # a formatter that names no job
    assert without_job is not None
    assert shlex.split(without_job) == [f"-Dlog4j2.configurationFile={JSON_LOG_CONFIG}"]


def test_plain_text_leaves_the_driver_jvm_s_logging_alone(no_jvm: Path) -> None:
    from trending.spark.session import json_log_options

    assert json_log_options({}, {"SPARK_CONF_DIR": str(no_jvm)}, None) is None


@pytest.mark.parametrize(
    ("settings", "environ"),
    [
        ({"spark.driver.extraJavaOptions": "-Dlog4j2.configurationFile=/etc/mine.xml"}, {}),
        ({"spark.driver.extraJavaOptions": "-Dlog4j.configuration=file:/etc/l.properties"}, {}),
        ({"spark.driver.defaultJavaOptions": "-Dlog4j2.configurationFile=/etc/mine.xml"}, {}),
        ({}, {"SPARK_SUBMIT_OPTS": "-Xshare:auto -Dlog4j2.configurationFile=/etc/mine.xml"}),
        ({}, {"JAVA_TOOL_OPTIONS": "-Dlog4j.configurationFile=/etc/mine.json"}),
    ],
)
def test_a_log_configuration_the_user_chose_is_kept(
    no_jvm: Path, settings: dict[str, str], environ: dict[str, str]
) -> None:
    from trending.spark.session import json_log_options

    environ = {**environ, "SPARK_CONF_DIR": str(no_jvm)}
    assert json_log_options(settings, environ, "run hashtags") is None


@pytest.mark.parametrize("name", ["log4j2.properties", "log4j2.xml", "log4j2-test.yaml"])
def test_a_log_configuration_in_spark_s_conf_folder_is_kept(no_jvm: Path, name: str) -> None:
    from trending.spark.session import json_log_options

    environ = {"SPARK_CONF_DIR": str(no_jvm)}
    (no_jvm / "log4j2.properties.template").write_text("")  # Spark's sample: not a choice
    assert json_log_options({}, environ, "run hashtags") is not None
    (no_jvm / name).write_text("")
    assert json_log_options({}, environ, "run hashtags") is None


def test_a_running_jvm_keeps_its_logging(monkeypatch: pytest.MonkeyPatch) -> None:
    from pyspark import SparkContext

    from trending.spark.session import json_log_options

    monkeypatch.setattr(SparkContext, "_gateway", object())
    assert json_log_options({}, {}, "run hashtags") is None


@pytest.mark.parametrize(
    "option",
    ["-Dplain=1", "-Dtrending.log.job=run hashtags", '-Dq=say "hi"', "-Dpath=C:\\dir with space"],
)
def test_a_java_option_stays_one_word_for_spark_s_launcher(option: str) -> None:
    from trending.spark.session import java_option

    assert shlex.split(f"-Da=1 {java_option(option)} -Db=2") == ["-Da=1", option, "-Db=2"]


def test_the_log_configuration_ships_in_the_package() -> None:
    from trending.spark.session import JSON_LOG_CONFIG

    root = Path(__file__).parents[2]
    project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = project["tool"]["setuptools"]["package-data"]["trending"]
    shipped = {path for p in patterns for path in (root / "trending").glob(p)}
    assert JSON_LOG_CONFIG in shipped
