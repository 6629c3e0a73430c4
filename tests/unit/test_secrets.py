"""Secrets never print and never reach a command line: which settings are secrets, URL userinfo
however it is written, ``config show`` and ``--help`` with secrets from a configuration file,
a warning for each flag that carries one, a file of secrets others can read, and the settings
Spark's JVM starts with. Expected values are written out from the rules, not computed."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import pytest

from connectors.kafka_settings import is_secret, mask_url, masked_items, parse_options
from trending.cli import build_parser, main
from trending.commands.config import show
from trending.config import exposed_secrets_warnings, load_config
from trending.errors import UserError
from trending.spark.session import launch_settings

# Hadoop and Spark settings whose values are secrets, as a job's `conf` gets them
HADOOP_SECRETS = [
    "fs.s3a.access.key",
    "fs.s3a.secret.key",
    "fs.s3a.session.token",
    "fs.s3a.encryption.key",
    "fs.s3a.bucket.logs.access.key",
    "fs.s3a.bucket.logs.secret.key",
    "fs.s3a.bucket.logs.session.token",
    "fs.azure.account.key.acct.dfs.core.windows.net",
    "fs.azure.account.key.acct.blob.core.windows.net",
    "fs.azure.sas.container.acct.blob.core.windows.net",
    "fs.azure.sas.fixed.token",
    "fs.azure.account.oauth2.client.secret",
    "fs.azure.account.oauth2.client.secret.acct.dfs.core.windows.net",
    "fs.gs.auth.service.account.private.key",
    "fs.gs.auth.service.account.private.key.id",
    "fs.gs.auth.client.secret",
    "google.cloud.auth.service.account.json.keyfile",
]
SPARK_SECRETS = [
    "spark.authenticate.secret",
    "spark.ssl.keyPassword",
    "spark.ssl.keyStorePassword",
    "spark.ssl.trustStorePassword",
]
# Kafka client and schema registry settings whose values are secrets
KAFKA_SECRETS = [
    "sasl.jaas.config",
    "sasl.password",
    "sasl.oauthbearer.client.secret",
    "ssl.key.password",
    "ssl.keystore.password",
    "ssl.truststore.password",
    "ssl.keystore.key",
    "ssl.key.pem",
    "basic.auth.user.info",
    "bearer.auth.token",
]
# Settings that name where or how a secret is found, or are no secret at all
NOT_SECRETS = [
    "fs.s3a.aws.credentials.provider",
    "hadoop.security.credential.provider.path",
    "spark.hadoop.hadoop.security.credential.provider.path",
    "fs.azure.account.keyprovider.acct.dfs.core.windows.net",
    "fs.azure.sas.token.provider.type",
    "fs.azure.account.oauth2.client.id",
    "fs.azure.account.oauth.provider.type",
    "sasl.oauthbearer.token.endpoint.url",
    "spark.authenticate.secret.file",
    "spark.kubernetes.authenticate.driver.oauthTokenFile",
    "sasl.username",
    "sasl.mechanism",
    "security.protocol",
    "ssl.keystore.location",
    "ssl.truststore.location",
    "ssl.key.location",
    "spark.sql.shuffle.partitions",
    "spark.driver.extraJavaOptions",
]


def secret_value(key: str) -> str:
    """A value no other text contains: it must not show anywhere."""
    return "Sx" + "".join(c for c in key.title() if c.isalnum()) + "9"


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith(("TRENDING_", "SCHEMA_REGISTRY", "KAFKA_BOOTSTRAP", "SPARK_MASTER")):
            monkeypatch.delenv(name)


# --- which settings are secrets ---------------------------------------------------------------


@pytest.mark.parametrize("key", HADOOP_SECRETS)
def test_hadoop_credentials_are_secrets_with_or_without_spark_s_prefix(key: str) -> None:
    assert is_secret(key)
    assert is_secret(f"spark.hadoop.{key}")


@pytest.mark.parametrize("key", KAFKA_SECRETS)
def test_kafka_credentials_are_secrets_with_or_without_the_kafka_prefix(key: str) -> None:
    assert is_secret(key)
    assert is_secret(f"kafka.{key}")
    assert is_secret(key.upper())


@pytest.mark.parametrize("key", SPARK_SECRETS)
def test_spark_s_own_passwords_and_secret_are_secrets(key: str) -> None:
    assert is_secret(key)


@pytest.mark.parametrize("key", NOT_SECRETS)
def test_where_to_find_a_secret_is_no_secret(key: str) -> None:
    assert not is_secret(key)


# --- URL userinfo -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("https://user:pw@registry:8081", "https://***@registry:8081"),
        ("https://user:p@ss/w@rd@registry:8081/x", "https://***@registry:8081/x"),
        ("https://user:pa/ss@registry", "https://***@registry"),
        ("https://user:a:b:c@registry", "https://***@registry"),
        ("https://user:p%40ss%2Fw@registry/", "https://***@registry/"),
        ("https://us@er:p@ss@[::1]:8081", "https://***@[::1]:8081"),
        ("s3a://AKIA:se/cr@t@bucket/ckpt", "s3a://***@bucket/ckpt"),
        ("https://token@host", "https://***@host"),
        ("https://a:1@h1,https://b:2@h2", "https://***@h1,https://***@h2"),
        ("k8s://https://u:p/w@api:6443", "k8s://https://***@api:6443"),
        ("see http://u:p@ss@h now; then ftp://x:y@z.", "see http://***@h now; then ftp://***@z."),
        ("https://registry:8081/subjects", "https://registry:8081/subjects"),
        ("no URL: user:pw@host", "no URL: user:pw@host"),
        ("https://@host", "https://@host"),
    ],
)
def test_a_url_s_whole_userinfo_is_masked_however_it_is_written(text: str, shown: str) -> None:
    assert mask_url(text) == shown


def test_key_value_items_print_with_their_secrets_masked() -> None:
    items = [
        "spark.hadoop.fs.s3a.secret.key=a=b",
        "spark.sql.shuffle.partitions=4",
        "spark.hadoop.fs.defaultFS=s3a://AK:S/K@bucket",
        "no-equals-sign",
    ]
    assert masked_items(items) == [
        "spark.hadoop.fs.s3a.secret.key=***",
        "spark.sql.shuffle.partitions=4",
        "spark.hadoop.fs.defaultFS=s3a://***@bucket",
        "no-equals-sign",
    ]


def test_a_malformed_item_naming_a_secret_is_not_echoed() -> None:
    with pytest.raises(UserError) as caught:
        parse_options(["spark.hadoop.fs.s3a.secret.key:Sx-colon-9"], "--conf")
    assert str(caught.value) == "--conf wants KEY=VALUE, got 'spark.hadoop.fs.s3a.secret'..."


# --- config show and --help with secrets from a configuration file --------------------------

PASSWORD = "p@ss/w:rd%40x"  # an @, a /, a : and an encoded @
CHECKPOINT = f"s3a://AKIAEXAMPLE:{PASSWORD}@bucket/ckpt"
REGISTRY = f"https://reg-user:{PASSWORD}@registry:8081"


def toml_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def secrets_toml() -> str:
    conf = [f"spark.hadoop.{key}" for key in HADOOP_SECRETS] + SPARK_SECRETS
    spark_kafka = [f"kafka.{key}" for key in KAFKA_SECRETS]
    jaas = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="u" '
    kafka = {key: secret_value(key) for key in KAFKA_SECRETS}
    kafka["sasl.jaas.config"] = jaas + f'password="{secret_value("sasl.jaas.config")}";'

    def table(keys: list[str]) -> str:
        pairs = [f"{toml_string(k)} = {toml_string(secret_value(k))}" for k in keys]
        return "{ " + ", ".join([*pairs, '"x.plain" = "visible"']) + " }"

    lines = [
        f"schema-registry-url = {toml_string(REGISTRY)}",
        "[kafka]",
        *(f"{toml_string(k)} = {toml_string(v)}" for k, v in kafka.items()),
        "[run.hashtags]",
        f"checkpoint = {toml_string(CHECKPOINT)}",
        f"conf = {table(conf)}",
        f"spark-kafka-option = {table(spark_kafka)}",
    ]
    return "\n".join(lines) + "\n"


@pytest.fixture
def secrets_file(tmp_path: Path) -> Path:
    path = tmp_path / "secrets.toml"
    path.write_text(secrets_toml(), encoding="utf-8")
    path.chmod(0o600)
    return path


def all_secret_values() -> list[str]:
    keys = HADOOP_SECRETS + SPARK_SECRETS + KAFKA_SECRETS
    prefixed = [f"spark.hadoop.{k}" for k in HADOOP_SECRETS] + [f"kafka.{k}" for k in KAFKA_SECRETS]
    return [secret_value(key) for key in keys + prefixed] + [PASSWORD, "AKIAEXAMPLE", "reg-user"]


def test_config_show_masks_each_secret_of_the_file(secrets_file: Path) -> None:
    listing = show(["run", "hashtags"], str(secrets_file), {})
    for value in all_secret_values():
        assert value not in listing
    for key in HADOOP_SECRETS:
        assert f"spark.hadoop.{key}=***" in listing
    for key in SPARK_SECRETS:
        assert f"{key}=***" in listing
    for key in KAFKA_SECRETS:
        assert f"kafka.{key}=***" in listing
        assert f"  {key}  " in listing  # the Kafka client settings' row...
    kafka_rows = [line.split() for line in listing.splitlines() if line.startswith("  ")]
    shown = {row[0]: row[1] for row in kafka_rows if row[0] in KAFKA_SECRETS}
    assert shown == dict.fromkeys(KAFKA_SECRETS, "***")  # ...shows *** for its value
    assert "x.plain=visible" in listing
    assert "s3a://***@bucket/ckpt" in listing
    assert "https://***@registry:8081" in listing


def test_help_masks_each_secret_default_from_the_file(
    secrets_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--config", str(secrets_file), "run", "hashtags", "--help"])
    assert exit_info.value.code == 0
    flat = "".join(capsys.readouterr().out.split())  # help wraps lines anywhere
    for value in all_secret_values():
        assert value not in flat
    for key in HADOOP_SECRETS:
        assert f"'spark.hadoop.{key}=***'" in flat
    for key in SPARK_SECRETS:
        assert f"'{key}=***'" in flat
    for key in KAFKA_SECRETS:
        assert f"'kafka.{key}=***'" in flat
    assert "'x.plain=visible'" in flat
    assert "(default:s3a://***@bucket/ckpt)" in flat


def test_every_parser_s_help_masks_a_default_it_prints() -> None:
    parser = build_parser()
    leaf = argparse.ArgumentParser(formatter_class=type(parser._get_formatter()))
    leaf.add_argument("--url", default=REGISTRY, help="where (default: %(default)s)")
    assert "https://***@registry:8081" in " ".join(leaf.format_help().split())
    assert PASSWORD not in leaf.format_help()


# --- a warning for each flag that carries a secret --------------------------------------------


def warnings(capsys: pytest.CaptureFixture[str]) -> list[str]:
    return [line for line in capsys.readouterr().err.splitlines() if line]


def test_each_flag_carrying_a_secret_warns_once_and_without_its_value(
    capsys: pytest.CaptureFixture[str],
) -> None:
    build_parser().parse_args(
        [
            "run",
            "hashtags",
            "--conf",
            "spark.hadoop.fs.s3a.secret.key=Sx-s3-9",
            "--conf",
            "spark.sql.shuffle.partitions=4",
            "--conf=spark.hadoop.fs.azure.account.key.acct.dfs.core.windows.net=Sx-az-9",
            "--kafka-opt",  # an abbreviation is the same flag
            "sasl.password=Sx-pw-9",
            "--kafka-option",
            "security.protocol=SASL_SSL",
            "--spark-kafka-option",
            "kafka.sasl.jaas.config=Sx-jaas-9",
            "--checkpoint",
            "s3a://AK:Sx-ck/9@bucket/c",
            "--schema-registry-url=https://u:Sx-reg@9@registry",
            "--master",
            "local[2]",
        ]
    )
    lines = warnings(capsys)
    flags = [line.split(": ")[2] for line in lines]
    assert flags == [
        "--conf spark.hadoop.fs.s3a.secret.key",
        "--conf spark.hadoop.fs.azure.account.key.acct.dfs.core.windows.net",
        "--kafka-option sasl.password",
        "--spark-kafka-option kafka.sasl.jaas.config",
        "--checkpoint",
        "--schema-registry-url",
    ]
    visible = "a secret on the command line shows in the process list (ps) to every user"
    assert all(line.startswith("trending: warning: --") and visible in line for line in lines)
    assert not any("Sx-" in line for line in lines)
    assert "set $TRENDING_KAFKA_SASL_PASSWORD" in lines[2]
    assert "conf table of the configuration file" in lines[0]
    assert "Hadoop credential provider" in lines[0]
    assert "$TRENDING_KAFKA_SASL_PASSWORD" in lines[3]
    assert "set $SCHEMA_REGISTRY_URL" in lines[5]


def test_flags_without_secrets_and_the_file_s_values_do_not_warn(
    secrets_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--config", str(secrets_file), "run", "hashtags", "--conf", "spark.x.y=1"]
    parser = build_parser()
    from trending.config import configure

    configure(parser, argv, {})
    parser.parse_args(argv)
    assert warnings(capsys) == []


# --- a file of secrets others can read --------------------------------------------------------


def test_a_configuration_file_with_secrets_others_can_read_warns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "c.toml"
    path.write_text('[kafka]\n"sasl.password" = "Sx-pw-9"\n"sasl.username" = "u"\n')
    path.chmod(0o644)
    assert main(["--config", str(path), "config", "show", "consume"]) == 0
    assert warnings(capsys) == [
        f"trending: warning: {path} holds secrets ([kafka] sasl.password) and other users of "
        f"this machine may read it: chmod 600 {path}"
    ]
    path.chmod(0o600)
    assert main(["--config", str(path), "config", "show", "consume"]) == 0
    assert warnings(capsys) == []


def test_a_readable_file_without_secrets_does_not_warn(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "c.toml"
    path.write_text('[kafka]\n"sasl.username" = "u"\n')
    path.chmod(0o644)
    assert main(["--config", str(path), "config", "show", "consume"]) == 0
    assert warnings(capsys) == []


def test_a_kafka_properties_file_with_secrets_others_can_read_warns(tmp_path: Path) -> None:
    properties = tmp_path / "client.properties"
    properties.write_text("sasl.username=u\nssl.key.password=Sx-k-9\nsasl.password=Sx-p-9\n")
    properties.chmod(0o640)
    args = argparse.Namespace(kafka_config=str(properties))
    assert exposed_secrets_warnings(None, args, {}) == [
        f"{properties} holds secrets (sasl.password, ssl.key.password) and other users of this "
        f"machine may read it: chmod 600 {properties}"
    ]
    from_env = argparse.Namespace(kafka_config=None)
    environ = {"TRENDING_KAFKA_CONFIG": str(properties)}
    assert len(exposed_secrets_warnings(None, from_env, environ)) == 1
    properties.chmod(0o600)
    assert exposed_secrets_warnings(None, args, {}) == []


def test_the_secrets_of_a_file_are_listed_by_where_they_are(secrets_file: Path) -> None:
    from trending.config import file_secrets

    config = load_config(build_parser(), str(secrets_file), "--config")
    found = file_secrets(config)
    assert "checkpoint" in found and "schema-registry-url" in found
    assert "conf spark.hadoop.fs.s3a.secret.key" in found
    assert "spark-kafka-option kafka.sasl.jaas.config" in found
    assert "[kafka] sasl.jaas.config" in found
    assert not any("x.plain" in item for item in found)


# --- what Spark's JVM starts with -------------------------------------------------------------


def test_the_jvm_starts_without_the_settings_that_carry_secrets() -> None:
    settings = {
        "spark.app.name": "job",
        "spark.master": "local[2,4]",
        "spark.driver.extraJavaOptions": "-XX:+UseParallelGC",
        "spark.hadoop.fs.s3a.secret.key": "Sx-1",
        "spark.hadoop.fs.azure.account.key.acct.dfs.core.windows.net": "Sx-2",
        "spark.ssl.keyStorePassword": "Sx-3",
        "spark.hadoop.fs.defaultFS": "s3a://AK:Sx-4@bucket",
        "spark.hadoop.fs.s3a.aws.credentials.provider": "a.B",
    }
    assert launch_settings(settings) == {
        "spark.app.name": "job",
        "spark.master": "local[2,4]",
        "spark.driver.extraJavaOptions": "-XX:+UseParallelGC",
        "spark.hadoop.fs.s3a.aws.credentials.provider": "a.B",
    }
