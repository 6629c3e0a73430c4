"""Kafka client settings: where they come from, what Spark's Kafka source gets, and that no
secret is ever printed. Expected values are written out from the rules in
:mod:`connectors.kafka_settings`, not computed by it."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path

import pytest

from connectors.avro import registry_client
from connectors.broker import server_properties
from connectors.kafka import add_kafka_arguments, admin, kafka_from_args
from connectors.kafka_settings import (
    kafka_settings,
    masked,
    read_properties,
    registry_settings,
    scrub,
    spark_options,
)
from trending.errors import UserError
from trending.jobs.common import JobSettings
from trending.jobs.hashtags import HashtagJobConfig

PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"


def from_args(argv: list[str], environ: Mapping[str, str]) -> tuple[str, dict[str, str]]:
    parser = argparse.ArgumentParser()
    add_kafka_arguments(parser)
    return kafka_from_args(parser.parse_args(argv), environ)


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


# --- where settings come from -------------------------------------------------------------


def test_the_file_is_overridden_by_the_environment_and_the_environment_by_flags(
    tmp_path: Path,
) -> None:
    config = write(
        tmp_path / "client.properties",
        "security.protocol=SASL_SSL\nsasl.username=file-user\nsasl.password=file-pw\n"
        "client.id=from-file\n",
    )
    environ = {
        "TRENDING_KAFKA_SASL_USERNAME": "env-user",
        "TRENDING_KAFKA_SASL_PASSWORD": "env-pw",
    }
    argv = ["--kafka-config", str(config), "--kafka-option", "sasl.password=flag-pw"]
    assert from_args(argv, environ)[1] == {
        "security.protocol": "SASL_SSL",
        "sasl.username": "env-user",
        "sasl.password": "flag-pw",
        "client.id": "from-file",
    }


def test_the_file_comes_from_the_environment_unless_a_flag_names_one(tmp_path: Path) -> None:
    by_env = write(tmp_path / "env.properties", "client.id=env-file\n")
    by_flag = write(tmp_path / "flag.properties", "client.id=flag-file\n")
    environ = {"TRENDING_KAFKA_CONFIG": str(by_env)}
    assert from_args([], environ)[1] == {"client.id": "env-file"}
    assert from_args(["--kafka-config", str(by_flag)], environ)[1] == {"client.id": "flag-file"}


def test_environment_names_map_to_dotted_lower_case_settings() -> None:
    environ = {
        "TRENDING_KAFKA_SECURITY_PROTOCOL": "SASL_PLAINTEXT",
        "TRENDING_KAFKA_SASL_PASSWORD": "pw",
        "TRENDING_KAFKA_SSL_CA_LOCATION": "/etc/ca.pem",
        "TRENDING_KAFKA_CONFIG": "",  # names the file, is no setting
        "TRENDING_KAFKA_": "nameless",
        "KAFKA_SASL_PASSWORD": "not ours",
        "TRENDING_SCHEMA_REGISTRY_URL": "http://registry",
    }
    assert kafka_settings(None, [], environ) == {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.password": "pw",
        "ssl.ca.location": "/etc/ca.pem",
    }


def test_bootstrap_servers_flag_then_environment_then_settings(tmp_path: Path) -> None:
    config = write(tmp_path / "c.properties", "bootstrap.servers=file:9092\n")
    argv = ["--kafka-config", str(config)]
    assert from_args(argv, {}) == ("file:9092", {})
    assert from_args(argv, {"KAFKA_BOOTSTRAP_SERVERS": "env:9092"}) == ("env:9092", {})
    flag = ["--bootstrap-servers", "flag:9092", *argv]
    assert from_args(flag, {"KAFKA_BOOTSTRAP_SERVERS": "env:9092"}) == ("flag:9092", {})
    assert from_args([], {}) == ("127.0.0.1:9092", {})


def test_a_properties_file_has_comments_blank_lines_and_equals_signs_in_values(
    tmp_path: Path,
) -> None:
    path = write(
        tmp_path / "c.properties",
        "# a comment\n! another\n\n  sasl.username = alice\r\n"
        'sasl.jaas.config=Module required password="a=b#c";\n'
        "empty=\n",
    )
    assert read_properties(path) == {
        "sasl.username": "alice",
        "sasl.jaas.config": 'Module required password="a=b#c";',
        "empty": "",
    }


def test_a_bad_properties_line_names_the_file_and_the_line(tmp_path: Path) -> None:
    path = write(tmp_path / "c.properties", "# ok\nsasl.username=alice\nsasl.password secret\n")
    with pytest.raises(UserError, match=r"c\.properties, line 3: expected key=value") as caught:
        read_properties(path)
    assert "secret" not in str(caught.value)


def test_a_missing_properties_file_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"cannot read Kafka settings file .*missing"):
        kafka_settings(str(tmp_path / "missing"), [], {})


# --- what Spark's Kafka source gets ---------------------------------------------------------


def test_plain_credentials_become_a_quoted_jaas_config() -> None:
    settings = {
        "security.protocol": "sasl_ssl",
        "sasl.mechanisms": "PLAIN",
        "sasl.username": "alice",
        "sasl.password": 'p"w\\x',
        "client.id": "librdkafka only",
        "enable.ssl.certificate.verification": "true",
    }
    assert spark_options(settings) == {
        "kafka.security.protocol": "SASL_SSL",
        "kafka.sasl.mechanism": "PLAIN",
        "kafka.sasl.jaas.config": PLAIN + r' required username="alice" password="p\"w\\x";',
    }


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "scram-sha-512"])
def test_scram_credentials_use_the_scram_login_module(mechanism: str) -> None:
    settings = {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": mechanism,
        "sasl.username": "bob",
        "sasl.password": "line\nbreak",
    }
    assert spark_options(settings) == {
        "kafka.security.protocol": "SASL_PLAINTEXT",
        "kafka.sasl.mechanism": mechanism.upper(),
        "kafka.sasl.jaas.config": SCRAM + r' required username="bob" password="line\nbreak";',
    }


def test_credentials_without_a_translatable_mechanism_are_a_user_error() -> None:
    settings = {"security.protocol": "SASL_SSL", "sasl.username": "u", "sasl.password": "pw"}
    with pytest.raises(UserError, match=r"mechanism GSSAPI.*--spark-kafka-option") as caught:
        spark_options(settings)
    assert "pw" not in str(caught.value)
    explicit = {"kafka.sasl.jaas.config": "given"}
    assert spark_options(settings, explicit) == {
        "kafka.security.protocol": "SASL_SSL",
        "kafka.sasl.jaas.config": "given",
    }


def test_credentials_are_not_passed_without_a_sasl_protocol() -> None:
    assert spark_options({"sasl.username": "u", "sasl.password": "pw"}) == {}


def test_a_ca_file_becomes_a_pem_truststore_and_one_key_file_a_pem_keystore() -> None:
    settings = {
        "security.protocol": "SSL",
        "ssl.ca.location": "/etc/kafka/ca.pem",
        "ssl.certificate.location": "/etc/kafka/client.pem",
        "ssl.key.location": "/etc/kafka/client.pem",
        "ssl.key.password": "kpw",
        "ssl.endpoint.identification.algorithm": "none",
    }
    assert spark_options(settings) == {
        "kafka.security.protocol": "SSL",
        "kafka.ssl.truststore.location": "/etc/kafka/ca.pem",
        "kafka.ssl.truststore.type": "PEM",
        "kafka.ssl.keystore.location": "/etc/kafka/client.pem",
        "kafka.ssl.keystore.type": "PEM",
        "kafka.ssl.key.password": "kpw",
        "kafka.ssl.endpoint.identification.algorithm": "",
    }


def test_a_key_and_certificate_in_two_files_need_explicit_spark_options() -> None:
    settings = {"ssl.certificate.location": "/c.pem", "ssl.key.location": "/k.pem"}
    with pytest.raises(UserError, match=r"ssl\.certificate\.location.*--spark-kafka-option"):
        spark_options(settings)
    explicit = {"kafka.ssl.keystore.location": "/ks.p12", "kafka.ssl.keystore.type": "PKCS12"}
    assert spark_options(settings, explicit) == explicit


def test_explicit_spark_options_win_with_or_without_their_prefix() -> None:
    settings = {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": "u",
        "sasl.password": "pw",
    }
    explicit = {"sasl.mechanism": "SCRAM-SHA-256", "kafka.sasl.jaas.config": "mine"}
    assert spark_options(settings, explicit) == {
        "kafka.security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "SCRAM-SHA-256",
        "kafka.sasl.jaas.config": "mine",
    }


# --- masking ----------------------------------------------------------------------------------


def test_masked_hides_secret_values_and_url_userinfo() -> None:
    settings = {
        "sasl.username": "alice",
        "sasl.password": "pw1",
        "SSL.KEY.PASSWORD": "pw2",
        "sasl.oauthbearer.client.secret": "pw3",
        "kafka.sasl.jaas.config": "X required password='pw4';",
        "basic.auth.user.info": "u:pw5",
        "bearer.auth.token": "pw6",
        "basic.auth.credentials.source": "USER_INFO",
        "url": "https://u:pw7@registry:8081,http://other:8081",
        "retries": 3,
    }
    assert masked(settings) == {
        "sasl.username": "alice",
        "sasl.password": "***",
        "SSL.KEY.PASSWORD": "***",
        "sasl.oauthbearer.client.secret": "***",
        "kafka.sasl.jaas.config": "***",
        "basic.auth.user.info": "***",
        "bearer.auth.token": "***",
        "basic.auth.credentials.source": "***",
        "url": "https://***@registry:8081,http://other:8081",
        "retries": 3,
    }


def test_scrub_removes_secret_values_from_free_text() -> None:
    text = 'bad value "hunter2" for sasl.password; registry http://me:pw@host refused'
    assert scrub(text, {"sasl.password": "hunter2", "sasl.username": "bad"}) == (
        'bad value "***" for sasl.password; registry http://***@host refused'
    )


def test_job_configs_print_no_secret() -> None:
    secrets = {
        "security.protocol": "SASL_SSL",
        "sasl.password": "hunter2",
    }
    common = {
        "bootstrap": "b:9092",
        "checkpoint": "/tmp/cp",
        "schema_registry_url": "https://reg-user:reg-pw@registry",
        "kafka_options": secrets,
        "spark_kafka_options": {"kafka.sasl.jaas.config": 'M required password="hunter2";'},
        "spark_conf": {"spark.hadoop.fs.s3a.secret.key": "s3-secret"},
    }
    for config in (JobSettings(**common), HashtagJobConfig(**common, input_topic="in")):
        text = repr(config)
        assert "b:9092" in text
        for secret in ("hunter2", "reg-pw", "s3-secret"):
            assert secret not in text
    assert "input_topic='in'" in repr(HashtagJobConfig(**common, input_topic="in"))


def test_a_kafka_client_error_does_not_echo_a_secret_value() -> None:
    settings = {"security.protocol": "hunter2", "sasl.password": "hunter2"}
    with pytest.raises(UserError, match="invalid Kafka client settings") as caught:
        admin("127.0.0.1:9", settings)
    assert "hunter2" not in str(caught.value)
    assert caught.value.__cause__ is None and caught.value.__suppress_context__


# --- the schema registry client -------------------------------------------------------------


def test_registry_settings_come_from_the_environment() -> None:
    environ = {
        "TRENDING_SCHEMA_REGISTRY_BASIC_AUTH_USER_INFO": "user:pw",
        "TRENDING_SCHEMA_REGISTRY_SSL_CA_LOCATION": "/etc/ca.pem",
        "TRENDING_SCHEMA_REGISTRY_MAX_RETRIES": "5",
        "TRENDING_SCHEMA_REGISTRY_URL": "http://ignored",
        "SCHEMA_REGISTRY_URL": "http://not-a-setting",
    }
    assert registry_settings(environ) == {
        "basic.auth.user.info": "user:pw",
        "ssl.ca.location": "/etc/ca.pem",
        "max.retries": 5,
    }


def test_the_registry_client_gets_the_settings_and_hides_the_url_userinfo(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # mock:// is confluent-kafka's in-process registry: no server installs here.
    monkeypatch.setenv("TRENDING_SCHEMA_REGISTRY_BASIC_AUTH_USER_INFO", "reg-user:reg pw")
    client = registry_client("mock://kafka-settings-test")
    assert client._rest_client.auth == ("reg-user", "reg pw")
    monkeypatch.delenv("TRENDING_SCHEMA_REGISTRY_BASIC_AUTH_USER_INFO")
    with pytest.raises(UserError) as caught:
        registry_client("ftp://reg-user:reg-secret@registry")
    assert str(caught.value) == "invalid schema registry settings: Invalid url ftp://***@registry"


def test_the_executors_get_the_registry_settings_they_use_and_no_repr_shows_them() -> None:
    import json

    from connectors.kafka_settings import registry_access

    environ = {
        "TRENDING_SCHEMA_REGISTRY_BASIC_AUTH_USER_INFO": "u:hidden-pw",
        "TRENDING_SCHEMA_REGISTRY_SSL_CA_LOCATION": "/etc/ca.pem",
        "TRENDING_SCHEMA_REGISTRY_CACHE_CAPACITY": "10",
        "TRENDING_SCHEMA_REGISTRY_TIMEOUT": "2.5",
    }
    access = registry_access("https://r1:8081,https://r2:8081", environ)
    assert access is not None
    assert json.loads(access.executor_settings_json()) == {
        "url": "https://r1:8081,https://r2:8081",
        "basic.auth.user.info": "u:hidden-pw",
        "ssl.ca.location": "/etc/ca.pem",
        "timeout": "2.5",
    }
    assert "hidden-pw" not in repr(access)
    assert registry_access(None, environ) is None


@pytest.mark.parametrize(
    ("url", "environ", "message"),
    [
        ("mock://x", {}, "http\\(s\\):// URL the Spark executors can reach"),
        ("http://r", {"TRENDING_SCHEMA_REGISTRY_SSL_KEY_PASSWORD": "k"}, "ssl.key.password"),
        (
            "http://r",
            {"TRENDING_SCHEMA_REGISTRY_BEARER_AUTH_CREDENTIALS_SOURCE": "STATIC_TOKEN"},
            "bearer.auth.credentials.source",
        ),
        (
            "http://r",
            {"TRENDING_SCHEMA_REGISTRY_BASIC_AUTH_CREDENTIALS_SOURCE": "SASL_INHERIT"},
            "SASL_INHERIT: use USER_INFO or URL",
        ),
    ],
)
def test_registry_settings_the_executors_cannot_honour_stop_the_job_at_start(
    url: str, environ: dict[str, str], message: str
) -> None:
    from connectors.kafka_settings import registry_access

    with pytest.raises(UserError, match=message):
        registry_access(url, environ)


# --- the local broker with SASL/PLAIN -------------------------------------------------------


def test_the_local_broker_config_escapes_passwords_for_jaas_and_properties() -> None:
    text = server_properties(9092, 9093, Path("/data/kraft"), {"broker": "b", "al": 'a"\\é'})
    lines = text.splitlines()
    assert "listeners=SASL_PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093" in lines
    assert "listener.security.protocol.map=SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT" in (
        lines
    )
    assert "sasl.enabled.mechanisms=PLAIN" in lines
    jaas = (
        "listener.name.sasl_plaintext.plain.sasl.jaas.config="
        + PLAIN
        + r' required username="broker" password="b" user_broker="b" user_al="a\\"\\\\\u00e9";'
    )
    assert jaas in lines
