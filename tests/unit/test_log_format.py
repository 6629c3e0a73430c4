"""``trending --log-format json``: one JSON object a line with time, level, job, batch, message."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

import pytest

from trending.cli import build_parser, command_of, configure_logging
from trending.config import config_path

KEYS = {"time", "level", "job", "batch", "message"}


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
