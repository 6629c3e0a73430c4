"""One configuration file for every command (``trending --config FILE``): precedence, TOML and
YAML, tables, every rejected value, and ``trending config show``. Parsers come from
:mod:`trending.cli`; expected values are written out from the rules in
docs/configuration.md."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path

import pytest

from connectors.kafka import kafka_from_args
from trending.cli import build_parser, main
from trending.commands import run as run_command
from trending.commands.config import show
from trending.config import configure

HASHTAGS_TOML = """
partitions = 8
bootstrap-servers = "file-broker:9092"

[kafka]
security.protocol = "SASL_SSL"
sasl.username = "file-user"
sasl.password = "file-secret-pw"
"linger.ms" = 7

[run]
checkpoint = "checkpoints/from-run"

[run.hashtags]
size = "10m"
hop = "2m"
available-now = true
checkpoint = "s3a://ak:sk-secret@bucket/hashtags"
conf = { "spark.sql.shuffle.partitions" = 16 }

[produce.tweets]
count = 500
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def parse(argv: list[str], environ: Mapping[str, str] | None = None) -> argparse.Namespace:
    """``argv`` as ``trending`` parses it, the configuration file applied."""
    parser = build_parser()
    configure(parser, argv, environ or {})
    return parser.parse_args(argv)


def errors(argv: list[str], capsys: pytest.CaptureFixture[str]) -> list[str]:
    """The error lines ``trending argv`` prints; it must exit with 2."""
    assert main(argv) == 2
    return capsys.readouterr().err.splitlines()


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("TRENDING_CONFIG", "KAFKA_BOOTSTRAP_SERVERS", "TRENDING_KAFKA_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    for name in ("SCHEMA_REGISTRY_URL", "SPARK_MASTER", "TRENDING_KAFKA_SASL_PASSWORD"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def toml_file(tmp_path: Path) -> Path:
    return write(tmp_path, "jobs.toml", HASHTAGS_TOML)


# --- precedence -------------------------------------------------------------------------------


def test_the_file_sets_what_no_flag_gives_and_defaults_stay(toml_file: Path) -> None:
    args = parse(["--config", str(toml_file), "run", "hashtags"])
    assert (args.size, args.hop, args.top) == (600_000, 120_000, 10)
    assert args.available_now is True
    assert args.partitions == 8
    assert args.checkpoint == "s3a://ak:sk-secret@bucket/hashtags"
    assert args.conf == ["spark.sql.shuffle.partitions=16"]


def test_a_flag_beats_the_file(toml_file: Path) -> None:
    args = parse(["--config", str(toml_file), "run", "hashtags", "--size", "20m", "--top", "3"])
    assert (args.size, args.hop, args.top) == (1_200_000, 120_000, 3)


def test_flags_of_a_list_option_come_after_the_files_items(toml_file: Path) -> None:
    args = parse(["--config", str(toml_file), "run", "hashtags", "--conf", "a=b"])
    assert args.conf == ["spark.sql.shuffle.partitions=16", "a=b"]


def test_bootstrap_servers_flag_beats_env_beats_file_beats_kafka_table(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "c.toml",
        '[kafka]\n"bootstrap.servers" = "table:1"\n[consume]\nbootstrap-servers = "file:2"\n',
    )
    env = {"KAFKA_BOOTSTRAP_SERVERS": "env:3"}
    base = ["--config", str(path), "consume", "tweets"]
    assert kafka_from_args(parse(base), {})[0] == "file:2"
    assert kafka_from_args(parse(base, env), env)[0] == "env:3"
    flagged = [*base, "--bootstrap-servers", "flag:4"]
    assert kafka_from_args(parse(flagged, env), env)[0] == "flag:4"
    only_table = write(tmp_path, "t.toml", '[kafka]\n"bootstrap.servers" = "table:1"\n')
    assert kafka_from_args(parse(["--config", str(only_table), "consume", "t"]), {})[0] == "table:1"


def test_a_kafka_setting_flag_beats_env_beats_properties_file_beats_kafka_table(
    tmp_path: Path,
) -> None:
    properties = write(tmp_path, "client.properties", "client.id=props\nlinger.ms=9\n")
    path = write(
        tmp_path,
        "c.yaml",
        f"kafka-config: {properties}\nkafka:\n  client.id: table\n  linger.ms: 1\n"
        "  acks: all\n  sasl.username: table-user\n",
    )
    env = {"TRENDING_KAFKA_CLIENT_ID": "env", "TRENDING_KAFKA_SASL_USERNAME": "env-user"}
    argv = ["--config", str(path), "produce", "tweets", "--kafka-option", "client.id=flag"]
    _, settings = kafka_from_args(parse(argv, env), env)
    assert settings == {
        "client.id": "flag",
        "linger.ms": "9",
        "acks": "all",
        "sasl.username": "env-user",
    }


def test_an_environment_variable_beats_the_files_value_of_its_option(tmp_path: Path) -> None:
    path = write(tmp_path, "c.toml", '[run.hashtags]\nmaster = "spark://file:7077"\n')
    env = {"SPARK_MASTER": "spark://env:7077"}
    assert parse(["--config", str(path), "run", "hashtags"]).master == "spark://file:7077"
    assert (
        parse(["--config", str(path), "run", "hashtags"], env).master is None
    )  # then $SPARK_MASTER


# --- formats and tables -----------------------------------------------------------------------


def test_yaml_and_toml_give_the_same_values(tmp_path: Path) -> None:
    toml = write(
        tmp_path,
        "a.toml",
        'top = 5\n[run.sensors]\nwindow-readings = 50\npartition-by = "sensor"\n',
    )
    yaml = write(
        tmp_path,
        "a.yml",
        "top: 5\nrun:\n  sensors:\n    window-readings: 50\n    partition-by: sensor\n",
    )
    for path in (toml, yaml):
        sensors = parse(["--config", str(path), "run", "sensors"])
        assert (sensors.window_readings, sensors.partition_by) == (50, "sensor")
        assert parse(["--config", str(path), "run", "hashtags"]).top == 5


def test_a_command_table_beats_its_parent_table_and_the_top_level(tmp_path: Path) -> None:
    text = 'lateness = "1s"\n[run]\nlateness = "2s"\n[run.hashtags]\nlateness = "3s"\n'
    path = write(tmp_path, "c.toml", text)
    assert parse(["--config", str(path), "run", "hashtags"]).lateness == 3_000
    assert parse(["--config", str(path), "run", "sensors"]).lateness == 2_000
    # YAML may list the top-level key last: the more specific table still wins
    yaml = write(tmp_path, "c.yaml", "run:\n  hashtags:\n    lateness: 3s\nlateness: 1s\n")
    assert parse(["--config", str(yaml), "run", "hashtags"]).lateness == 3_000
    assert parse(["--config", str(yaml), "run", "sensors"]).lateness == 1_000


def test_top_level_keys_reach_only_commands_with_that_option(toml_file: Path) -> None:
    produce = parse(["--config", str(toml_file), "produce", "tweets"])
    assert (produce.count, produce.partitions) == (500, 8)
    broker = parse(["--config", str(toml_file), "broker"])
    assert not hasattr(broker, "partitions")


def test_trending_config_names_the_file_when_no_flag_does(
    toml_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = {"TRENDING_CONFIG": str(toml_file)}
    assert parse(["run", "hashtags"], env).size == 600_000
    other = write(tmp_path, "other.toml", '[run.hashtags]\nsize = "7m"\n')
    assert parse(["--config", str(other), "run", "hashtags"], env).size == 420_000
    monkeypatch.setenv("TRENDING_CONFIG", str(toml_file))
    assert main(["config", "show", "run", "hashtags"]) == 0


def test_an_abbreviated_config_flag_is_still_read(toml_file: Path) -> None:
    assert parse([f"--conf={toml_file}", "run", "hashtags"]).size == 600_000
    assert parse(["run", "hashtags", "--conf", "a=b"]).conf == ["a=b"]


# --- rejected files ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('sise = "5m"', "top level, key sise: unknown key (did you mean size?)"),
        (
            '[run.hashtags]\nhopp = "1m"',
            "table [run.hashtags], key hopp: unknown key (did you mean hop?)",
        ),
        ("[run.hashtag]\ntop = 3", "unknown table [run.hashtag] (did you mean [run.hashtags]?)"),
        ('[run.hashtags]\nhop = "0s"', "key hop: want a duration longer than 0, got '0s'"),
        ('[run.hashtags]\nsize = "-1m"', "key size: not a duration: '-1m'"),
        ('[run.hashtags]\nlateness = "soon"', "key lateness: not a duration: 'soon'"),
        ('[run.hashtags]\ntop = "many"', "key top: want a whole number >= 1, got 'many'"),
        ("[run.hashtags]\ntop = 2.5", "key top: want a whole number >= 1, got '2.5'"),
        (
            '[run.hashtags]\navailable-now = "yes"',
            "key available-now: wants true or false, got a string",
        ),
        ("[run.hashtags]\ncheckpoint = 3", "key checkpoint: wants a string, got a number"),
        (
            '[run.hashtags]\ninput-topic = "my tweets"',
            "key input-topic: not a Kafka topic name: 'my tweets'",
        ),
        ('[run.hashtags]\nconf = ["novalue"]', "key conf: wants KEY=VALUE items, got 'novalue'"),
        ('[run.hashtags]\nconf = "a=b"', "key conf: wants a list or a table, got a string"),
        (
            '[run.sensors]\npartition-by = "zone"',
            "key partition-by: wants one of none, sensor, got 'zone'",
        ),
        ('[run.sensors]\ncell-size = "big"', "key cell-size: want a number > 0, got 'big'"),
        ("[run.hashtags]\nmax-offsets-per-trigger = -1", "want a whole number >= 0, got '-1'"),
        (
            'size = "5m"',
            "top level, key size: is now window-readings (a number of readings) (for run sensors)",
        ),
        (
            "window-readings = 0",
            "top level, key window-readings: want a whole number >= 1, got '0'",
        ),
        (
            '[run.hashtags]\nstarting-offsets = "middle"',
            "key starting-offsets: want earliest, latest, or a JSON object of offsets",
        ),
        ('kafka-option = ["acks=all"]', "put librdkafka settings in the [kafka] table"),
        ("[kafka]\nacks = [1]", "table [kafka], key acks: wants strings, numbers or booleans"),
        ("run = 3", "top level, key run: wants a table of options of `trending run`"),
    ],
)
def test_each_invalid_value_is_one_line_naming_file_table_and_key(
    text: str, expected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "bad.toml", text + "\n")
    lines = errors(["--config", str(path), "broker"], capsys)
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"trending: error: config file {path}")
    assert expected in lines[0]


def test_every_problem_of_a_file_is_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "bad.yaml", "sise: 5m\nrun:\n  hashtags:\n    hop: 0s\n    top: x\n")
    lines = errors(["--config", str(path), "run", "hashtags"], capsys)
    assert [line.split(", key ")[-1] for line in lines] == [
        "sise: unknown key (did you mean size?)",
        "hop: want a duration longer than 0, got '0s'",
        "top: want a whole number >= 1, got 'x'",
    ]


def test_a_secret_is_never_echoed_by_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "bad.toml", '[kafka]\nsasl.password = ["pw-secret"]\n')
    lines = errors(["--config", str(path), "broker"], capsys)
    assert lines == [
        f"trending: error: config file {path}, table [kafka], key sasl.password: wants strings, "
        "numbers or booleans as values, got a list"
    ]


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("c.json", "{}", "name it .toml, .yaml or .yml"),
        ("c.toml", "size = ", "is not valid TOML"),
        ("c.yaml", "a: [1", "is not valid YAML"),
        ("c.yaml", "- 1\n- 2\n", "want a table of settings at the top"),
    ],
)
def test_an_unreadable_file_is_one_line(
    name: str, text: str, expected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, name, text)
    lines = errors(["--config", str(path), "broker"], capsys)
    assert len(lines) == 1 and expected in lines[0], lines


def test_a_missing_file_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = errors(["--config", str(tmp_path / "none.toml"), "broker"], capsys)
    missing = tmp_path / "none.toml"
    assert lines == [
        f"trending: error: cannot read config file {missing}: No such file or directory"
    ]


def test_window_checks_stop_the_job_before_kafka_or_spark(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def never(*_: object) -> None:
        raise AssertionError("the job went past its checks")

    monkeypatch.setattr(run_command, "_wait_for_kafka", never)
    monkeypatch.setattr(run_command, "run_job", never)
    too_wide = write(tmp_path, "wide.toml", '[run.hashtags]\nsize = "1m"\nhop = "2m"\n')
    lines = errors(["--config", str(too_wide), "run", "hashtags"], capsys)
    assert lines == [
        "trending run hashtags: error: hop (120000ms) must not exceed size (60000ms): "
        "every instant must belong to a window"
    ]
    no_top = write(tmp_path, "top.yaml", "run:\n  hashtags:\n    top: 0\n")
    assert errors(["--config", str(no_top), "run", "hashtags"], capsys) == [
        f"trending: error: config file {no_top}, table [run.hashtags], key top: want a whole "
        "number >= 1, got '0'"
    ]


def test_a_zero_hop_flag_is_refused_while_parsing(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["run", "hashtags", "--hop", "0"])
    assert exit_info.value.code == 2
    assert "argument --hop: want a duration longer than 0, got '0'" in capsys.readouterr().err


# --- config show ------------------------------------------------------------------------------


def rows(listing: str) -> dict[str, tuple[str, str]]:
    """Each ``  name  value  source`` line of a listing, by name."""
    found = {}
    for line in listing.splitlines():
        if line.startswith("  "):
            name, value, source = line.split(maxsplit=2)
            found[name] = (value, source)
    return found


def test_config_show_lists_values_and_sources(toml_file: Path) -> None:
    env = {
        "KAFKA_BOOTSTRAP_SERVERS": "env-broker:9092",
        "TRENDING_KAFKA_SASL_PASSWORD": "env-secret-pw",
    }
    listing = show(["run", "hashtags", "--top", "3"], str(toml_file), env)
    assert listing.startswith(f"trending run hashtags: config file {toml_file} (--config)")
    shown = rows(listing)
    assert shown["size"] == ("10m", f"file {toml_file} [run.hashtags]")
    assert shown["top"] == ("3", "flag --top")
    assert shown["align"] == ("0s", "default")
    assert shown["partitions"] == ("8", f"file {toml_file} (top level)")
    assert shown["bootstrap-servers"] == ("env-broker:9092", "env KAFKA_BOOTSTRAP_SERVERS")
    assert shown["available-now"] == ("true", f"file {toml_file} [run.hashtags]")
    assert shown["master"] == ("local[*]", "default")
    assert shown["conf"] == ("spark.sql.shuffle.partitions=16", f"file {toml_file} [run.hashtags]")
    assert shown["security.protocol"] == ("SASL_SSL", f"file {toml_file} [kafka]")
    assert shown["linger.ms"] == ("7", f"file {toml_file} [kafka]")
    assert shown["sasl.password"] == ("***", "env TRENDING_KAFKA_SASL_PASSWORD")


def test_config_show_masks_every_secret(toml_file: Path) -> None:
    env = {
        "TRENDING_SCHEMA_REGISTRY_BASIC_AUTH_USER_INFO": "reg-user:reg-secret",
        "SCHEMA_REGISTRY_URL": "https://reg-user:url-secret@registry:8081",
    }
    flags = [
        "--spark-kafka-option",
        "kafka.sasl.jaas.config=jaas-secret",
        "--conf",
        "spark.x.token=tok-secret",
    ]
    listing = show(["run", "hashtags", *flags], str(toml_file), env)
    for secret in (
        "file-secret-pw",
        "sk-secret",
        "reg-secret",
        "url-secret",
        "jaas-secret",
        "tok-secret",
    ):
        assert secret not in listing
    shown = rows(listing)
    assert shown["sasl.password"] == ("***", f"file {toml_file} [kafka]")
    assert shown["checkpoint"][0] == "s3a://***@bucket/hashtags"
    assert shown["basic.auth.user.info"] == (
        "***",
        "env TRENDING_SCHEMA_REGISTRY_BASIC_AUTH_USER_INFO",
    )
    assert shown["schema-registry-url"] == ("https://***@registry:8081", "env SCHEMA_REGISTRY_URL")
    assert "kafka.sasl.jaas.config=***" in listing


def test_config_show_without_a_file_gives_defaults_and_the_kafka_table_fallback(
    tmp_path: Path,
) -> None:
    listing = show(["consume"], None, {})
    assert listing.startswith("trending consume: no config file")
    assert rows(listing)["bootstrap-servers"] == ("127.0.0.1:9092", "default")
    path = write(tmp_path, "k.toml", '[kafka]\n"bootstrap.servers" = "table:1"\n')
    shown = rows(show(["consume"], str(path), {}))
    assert shown["bootstrap-servers"] == ("table:1", f"file {path} [kafka] (bootstrap.servers)")


def test_config_show_runs_from_the_command_line(
    toml_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--config", str(toml_file), "config", "show", "produce", "tweets"]) == 0
    shown = rows(capsys.readouterr().out)
    assert shown["count"] == ("500", f"file {toml_file} [produce.tweets]")
    assert shown["sasl.username"] == ("file-user", f"file {toml_file} [kafka]")
    assert errors(["config", "show", "run"], capsys) == [
        "trending config show: error: want a command: trending run takes hashtags, sensors, windows"
    ]


def test_config_show_lists_the_window_readings_and_not_the_renamed_size(tmp_path: Path) -> None:
    path = write(tmp_path, "s.toml", "[run.sensors]\nwindow-readings = 40\n")
    shown = rows(show(["run", "sensors"], str(path), {}))
    assert shown["window-readings"] == ("40", f"file {path} [run.sensors]")
    assert "size" not in shown
    assert rows(show(["run", "sensors", "--window-readings", "7"], None, {}))[
        "window-readings"
    ] == ("7", "flag --window-readings")
