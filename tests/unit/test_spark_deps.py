"""Where the jobs' jars come from, and which Spark settings the session keeps: the user's
(spark-submit, spark-defaults.conf, PYSPARK_SUBMIT_ARGS) always, the project's only where the
user set none."""

from __future__ import annotations

from pathlib import Path

import pytest

from trending.errors import UserError
from trending.spark import deps
from trending.spark.session import (
    DRIVER_OPTIONS_CONF,
    EXECUTOR_OPTIONS_CONF,
    THROUGHPUT_GC,
    session_settings,
)

KAFKA = "org.apache.spark:spark-sql-kafka-0-10_2.13:4.1.1"
AVRO = "org.apache.spark:spark-avro_2.13:4.1.1"


@pytest.fixture
def installed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """As an installed package: no checkout, no TRENDING_JARS_DIR, the project's jar bundled."""
    jar = tmp_path / "trending-udf.jar"
    jar.write_bytes(b"PK")
    monkeypatch.delenv("TRENDING_JARS_DIR", raising=False)
    monkeypatch.delenv("SPARK_MASTER", raising=False)
    monkeypatch.setattr(deps, "source_checkout", lambda: None)
    monkeypatch.setattr(deps, "project_jar", lambda: jar)
    return jar


def test_spark_defaults_reads_every_separator_and_skips_comments(tmp_path: Path) -> None:
    (tmp_path / "spark-defaults.conf").write_text(
        "# a comment\n! another\n\n"
        "spark.master   spark://h:7077\n"
        "spark.executor.memory=2g\n"
        "spark.driver.memory: 3g\n"
        "spark.driver.extraJavaOptions  -Da=b -XX:+UseG1GC\n"
    )
    found = deps.spark_defaults({"SPARK_CONF_DIR": str(tmp_path)})
    assert found == {
        "spark.master": "spark://h:7077",
        "spark.executor.memory": "2g",
        "spark.driver.memory": "3g",
        "spark.driver.extraJavaOptions": "-Da=b -XX:+UseG1GC",
    }


def test_spark_defaults_falls_back_to_spark_home(tmp_path: Path) -> None:
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "spark-defaults.conf").write_text("spark.master local[3]\n")
    assert deps.spark_defaults({"SPARK_HOME": str(tmp_path)}) == {"spark.master": "local[3]"}
    assert deps.spark_defaults({"SPARK_CONF_DIR": str(tmp_path / "none")}) == {}


def test_submit_args_give_their_settings() -> None:
    found = deps.submit_args_settings(
        "--master spark://m:7077 --conf spark.a=1 --packages x:y:1 --jars=/j.jar pyspark-shell"
    )
    assert found == {
        "spark.master": "spark://m:7077",
        "spark.a": "1",
        "spark.jars.packages": "x:y:1",
        "spark.jars": "/j.jar",
    }


def test_an_installed_package_resolves_the_connectors_for_its_spark(installed: Path) -> None:
    planned = deps.plan({}, "4.1.1")
    assert planned.jars == (str(installed),)
    assert planned.packages == (KAFKA, AVRO, "com.twitter.twittertext:twitter-text:3.1.0")
    assert deps.plan({}, "4.0.2").packages[0].endswith("_2.13:4.0.2")


def test_what_the_user_provides_is_not_added_and_theirs_come_first(installed: Path) -> None:
    chosen = {
        "spark.jars.packages": f"{KAFKA},com.acme:x:1",
        "spark.jars": "/opt/spark-avro_2.13.jar",
    }
    planned = deps.plan(chosen, "4.1.1")
    assert planned.packages == ("com.twitter.twittertext:twitter-text:3.1.0",)
    merged = planned.merged(chosen)
    assert merged["spark.jars.packages"].split(",") == [
        KAFKA, "com.acme:x:1", "com.twitter.twittertext:twitter-text:3.1.0",
    ]  # fmt: skip
    assert merged["spark.jars"].split(",") == ["/opt/spark-avro_2.13.jar", str(installed)]


def test_a_folder_of_jars_means_nothing_to_resolve(
    installed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("connectors/spark-sql-kafka-0-10_2.13-4.1.1.jar", "udf/twitter-text-3.1.0.jar"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_bytes(b"PK")
    monkeypatch.setenv("TRENDING_JARS_DIR", str(tmp_path))
    planned = deps.plan({}, "4.1.1")
    assert planned.packages == ()
    assert planned.jars == (
        str(installed),
        str(tmp_path / "connectors/spark-sql-kafka-0-10_2.13-4.1.1.jar"),
        str(tmp_path / "udf/twitter-text-3.1.0.jar"),
    )


def test_an_empty_jar_folder_is_one_clear_error(
    installed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRENDING_JARS_DIR", str(tmp_path))
    with pytest.raises(UserError, match=r"TRENDING_JARS_DIR=.* holds no jars in connectors/"):
        deps.plan({}, "4.1.1")


def test_uncached_packages_are_the_ones_missing_from_the_ivy_cache(tmp_path: Path) -> None:
    (tmp_path / "jars").mkdir()
    (tmp_path / "jars" / "org.apache.spark_spark-avro_2.13-4.1.1.jar").write_bytes(b"PK")
    chosen = {"spark.jars.ivy": str(tmp_path)}
    assert deps.uncached([KAFKA, AVRO], chosen) == [KAFKA]


def test_the_resolver_error_is_one_line_with_both_remedies() -> None:
    error = str(deps.resolve_failed([KAFKA, AVRO], {"spark.jars.ivy": "/c"}))
    assert "\n" not in error
    assert f"{KAFKA},{AVRO}" in error
    assert "spark.jars.ivySettings" in error and "TRENDING_JARS_DIR" in error


def test_the_users_master_and_java_options_are_kept(installed: Path) -> None:
    outside = {
        "spark.master": "spark://m:7077",
        DRIVER_OPTIONS_CONF: "-Dmine=1",
        "spark.submit.deployMode": "client",
    }
    settings = session_settings("trending-x", None, outside, {}, submitted=False)
    assert settings["spark.master"] == "spark://m:7077"
    assert settings[DRIVER_OPTIONS_CONF] == "-Dmine=1"
    assert settings[EXECUTOR_OPTIONS_CONF] == THROUGHPUT_GC  # none set: the project's
    assert settings["spark.submit.deployMode"] == "client"


def test_local_is_the_master_only_when_nothing_chose_one(
    installed: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert session_settings("t", None, {}, {}, submitted=False)["spark.master"] == "local[*,4]"
    assert (
        session_settings("t", "local[2]", {"spark.master": "yarn"}, {}, False)["spark.master"]
        == "local[2,4]"
    )
    monkeypatch.setenv("SPARK_MASTER", "spark://e:7077")
    assert (
        session_settings("t", None, {"spark.master": "yarn"}, {}, False)["spark.master"]
        == "spark://e:7077"
    )


def test_a_submitted_jvm_keeps_its_master_and_takes_no_jars(installed: Path) -> None:
    outside = {"spark.master": "spark://m:7077", "spark.app.name": "app.py"}
    settings = session_settings("trending-hashtags", "local[2]", outside, {}, submitted=True)
    assert settings["spark.master"] == "spark://m:7077"
    assert settings["spark.app.name"] == "trending-hashtags"
    assert "spark.jars" not in settings and "spark.jars.packages" not in settings


def test_conf_wins_but_jars_are_merged(installed: Path) -> None:
    conf = {"spark.jars": "/mine.jar", "spark.sql.session.timeZone": "UTC", "spark.x": "1"}
    settings = session_settings("t", None, {"spark.x": "0"}, conf, submitted=False)
    assert settings["spark.x"] == "1"
    assert settings["spark.jars"].split(",")[0] == "/mine.jar"
    assert str(installed) in settings["spark.jars"].split(",")


def test_the_project_classes_refuse_a_spark_older_than_their_checkpoint_classes() -> None:
    from trending.spark import project_classes

    class Session:  # what use_project_classes reads before it touches the JVM
        version = "4.0.1"
        sparkContext = type("Context", (), {"_jvm": object()})()  # noqa: N815 (pyspark's name)

    with pytest.raises(UserError, match=r"Spark 4\.1 or newer \(the session runs 4\.0\.1\)"):
        project_classes.use_project_classes(Session())  # type: ignore[arg-type]
    assert project_classes._major_minor("4.1.1") == (4, 1)
    assert project_classes._major_minor("4.3.0-preview1") == (4, 3)
