"""Where the jobs' JVM classes come from, and the Spark settings a user already chose.

The jobs need four things beyond the pyspark wheel: Spark's Kafka connector, Spark's Avro
functions, twitter-text (the hashtag rule) and the project's own jar (``trending-udf.jar``: the
hashtag function, the sensor routes, the checkpoint file manager). The project's jar ships inside
the package (``trending/jvm``, built with the wheel); in a checkout it is ``build/jars/udf``.
The others come, in this order, from:

1. the user's own ``spark.jars`` / ``spark.jars.packages`` (``--jars``, ``--packages``,
   ``spark-defaults.conf``, ``--conf``): what those already provide is not added again;
2. a folder of jars: ``$TRENDING_JARS_DIR``, else a checkout's ``build/jars`` filled by
   ``make jars`` (offline: nothing is resolved at start-up);
3. Spark's own resolver (``spark.jars.packages``), with coordinates tied to the installed Spark
   version: Maven Central, or the repositories of ``spark.jars.ivySettings`` /
   ``spark.jars.repositories``, cached in ``spark.jars.ivy`` (Spark's default ``~/.ivy2.5.2``).

Settings the user chose come from ``$SPARK_CONF_DIR/spark-defaults.conf`` (else
``$SPARK_HOME/conf``), ``$PYSPARK_SUBMIT_ARGS``, and, when ``spark-submit`` already started the
JVM, from that JVM: the session never overrides them (:func:`chosen_settings`).
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from connectors.jvm import JARS_ENV, source_checkout
from trending.errors import UserError

SCALA_BINARY = "2.13"  # Spark 4's only Scala
TWITTER_TEXT = "com.twitter.twittertext:twitter-text:3.1.0"
PROJECT_JAR = "trending-udf.jar"
JARS_CONF = "spark.jars"
PACKAGES_CONF = "spark.jars.packages"
IVY_CONF = "spark.jars.ivy"
IVY_SETTINGS_CONF = "spark.jars.ivySettings"
DEFAULT_IVY = "~/.ivy2.5.2"  # Spark 4's default spark.jars.ivy
# What each dependency is recognised by, in a jar's file name or a package's coordinates.
KAFKA, AVRO, HASHTAG_RULE, PROJECT = "kafka", "avro", "twitter-text", "project"
_MARKS = {
    KAFKA: "spark-sql-kafka-0-10_",
    AVRO: "spark-avro_",
    HASHTAG_RULE: "twitter-text",
    PROJECT: "trending-udf",
}
# A class of each, checked in the driver once the session runs.
CLASSES = {
    KAFKA: "org.apache.spark.sql.kafka010.KafkaSourceProvider",
    AVRO: "org.apache.spark.sql.avro.AvroDataToCatalyst",
    HASHTAG_RULE: "com.twitter.twittertext.Extractor",
    PROJECT: "trending.udf.HashtagKeys",
}
_WHAT = {
    KAFKA: "Spark's Kafka connector",
    AVRO: "Spark's Avro functions",
    HASHTAG_RULE: "twitter-text",
    PROJECT: f"the project's {PROJECT_JAR}",
}
# A line of a Java properties file (spark-defaults.conf): KEY VALUE, KEY=VALUE or KEY:VALUE.
_PROPERTY = re.compile(r"([^\s=:]+)\s*[\s=:]\s*(.*)")
# spark-submit options that carry a setting, and the setting.
_SUBMIT_OPTIONS = {
    "--master": "spark.master",
    "--deploy-mode": "spark.submit.deployMode",
    "--name": "spark.app.name",
    "--jars": JARS_CONF,
    "--packages": PACKAGES_CONF,
    "--repositories": "spark.jars.repositories",
    "--driver-java-options": "spark.driver.extraJavaOptions",
    "--driver-memory": "spark.driver.memory",
    "--driver-class-path": "spark.driver.extraClassPath",
    "--executor-memory": "spark.executor.memory",
}


def packages(spark_version: str) -> dict[str, str]:
    """The Maven coordinates of the connectors for ``spark_version``, and of twitter-text."""
    return {
        KAFKA: f"org.apache.spark:spark-sql-kafka-0-10_{SCALA_BINARY}:{spark_version}",
        AVRO: f"org.apache.spark:spark-avro_{SCALA_BINARY}:{spark_version}",
        HASHTAG_RULE: TWITTER_TEXT,
    }


def installed_spark_version() -> str:
    import pyspark

    return str(pyspark.__version__)


def project_jar() -> Path:
    """The project's jar: inside the installed package, else a checkout's ``build/jars/udf``."""
    bundled = Path(__file__).resolve().parents[1] / "jvm" / PROJECT_JAR
    if bundled.is_file():
        return bundled
    checkout = source_checkout()
    built = checkout / "build" / "jars" / "udf" / PROJECT_JAR if checkout else None
    if built is not None and built.is_file():
        return built
    if checkout is not None:
        raise UserError(
            f"{PROJECT_JAR} is not built: run `make jars` in {checkout} (Java 17+ and Maven 3)"
        )
    raise UserError(
        f"this installation of trending has no {PROJECT_JAR} (trending/jvm): install the wheel "
        "built by `make wheel`, not a source tree without it"
    )


def jar_folder() -> Path | None:
    """The folder of jar groups to take the connectors from: ``$TRENDING_JARS_DIR``, else a
    checkout's ``build/jars`` once ``make jars`` filled it; ``None``: resolve them instead."""
    configured = os.environ.get(JARS_ENV)
    if configured:
        folder = Path(configured).expanduser().resolve()
        if not any((folder / "connectors").glob("*.jar")):
            raise UserError(
                f"{JARS_ENV}={configured} holds no jars in connectors/: point it at a folder "
                "filled by `make jars` (its build/jars), or unset it to let Spark fetch them"
            )
        return folder
    checkout = source_checkout()
    if checkout is not None and any((checkout / "build/jars/connectors").glob("*.jar")):
        return checkout / "build" / "jars"
    return None


@dataclass(frozen=True)
class Dependencies:
    """What to add to ``spark.jars`` and ``spark.jars.packages`` beside the user's own."""

    jars: tuple[str, ...] = ()
    packages: tuple[str, ...] = ()

    def merged(self, chosen: Mapping[str, str]) -> dict[str, str]:
        """``spark.jars`` and ``spark.jars.packages``: the user's entries first, then these."""
        merged = {}
        for key, ours in ((JARS_CONF, self.jars), (PACKAGES_CONF, self.packages)):
            theirs = _entries(chosen.get(key, ""))
            if ours or theirs:
                merged[key] = ",".join([*theirs, *ours])
        return merged


def provided(chosen: Mapping[str, str]) -> set[str]:
    """Which dependencies the user's ``spark.jars`` / ``spark.jars.packages`` already hold."""
    names = [Path(entry).name for entry in _entries(chosen.get(JARS_CONF, ""))]
    names += _entries(chosen.get(PACKAGES_CONF, ""))
    return {kind for kind, mark in _MARKS.items() if any(mark in name for name in names)}


def plan(chosen: Mapping[str, str], spark_version: str | None = None) -> Dependencies:
    """What to add for the dependencies ``chosen`` settings do not provide."""
    have = provided(chosen)
    jars = [] if PROJECT in have else [str(project_jar())]
    folder = jar_folder()
    if folder is not None:
        if not {KAFKA, AVRO} <= have:
            jars += [str(jar) for jar in sorted((folder / "connectors").glob("*.jar"))]
        if HASHTAG_RULE not in have:
            rule = sorted((folder / "udf").glob(f"{_MARKS[HASHTAG_RULE]}*.jar"))
            jars += [str(jar) for jar in rule]
            if not rule:
                return Dependencies(tuple(jars), (TWITTER_TEXT,))
        return Dependencies(tuple(jars))
    coordinates = packages(spark_version or installed_spark_version())
    return Dependencies(tuple(jars), tuple(c for k, c in coordinates.items() if k not in have))


def ivy_cache(chosen: Mapping[str, str]) -> Path:
    """Where Spark's resolver keeps what it fetched."""
    return Path(chosen.get(IVY_CONF) or DEFAULT_IVY).expanduser()


def uncached(coordinates: Iterable[str], chosen: Mapping[str, str]) -> list[str]:
    """Those of ``coordinates`` not in the resolver's cache (``<ivy>/jars/group_name-v.jar``)."""
    jars = ivy_cache(chosen) / "jars"
    missing = []
    for coordinate in coordinates:
        group, name, version = coordinate.split(":")[:3]
        if not (jars / f"{group}_{name}-{version}.jar").is_file():
            missing.append(coordinate)
    return missing


def resolve_failed(coordinates: Iterable[str], chosen: Mapping[str, str]) -> UserError:
    """The one line for a resolver that could not fetch ``coordinates`` (offline, no cache)."""
    listed = ",".join(coordinates)
    return UserError(
        f"Spark could not fetch {listed} (spark.jars.packages, cache {ivy_cache(chosen)}): "
        f"give it a repository it can reach with --conf {IVY_SETTINGS_CONF}=FILE or "
        f"spark.jars.repositories, or set {JARS_ENV} to a folder filled by `make jars` "
        "(offline)"
    )


def missing_classes_error(missing: Iterable[str], submitted: bool) -> UserError:
    """The one line for dependencies the driver cannot load once the session runs."""
    what = ", ".join(_WHAT[kind] for kind in missing)
    if submitted:
        remedy = (
            "spark-submit must be given them: add the output of `trending spark-args` to its "
            "options (--packages and --jars)"
        )
    else:
        remedy = "they were given in spark.jars / spark.jars.packages but could not be loaded"
    return UserError(f"the Spark driver cannot load {what}: {remedy}")


def spark_args(spark_version: str | None = None) -> list[str]:
    """The ``spark-submit`` options and application file that run ``trending`` (client or
    cluster mode): the dependencies as ``--jars``/``--packages``, then ``trending/app.py``."""
    needed = plan({}, spark_version)
    args = []
    if needed.packages:
        args += ["--packages", ",".join(needed.packages)]
    args += ["--jars", ",".join(needed.jars)]
    return [*args, str(Path(__file__).resolve().parents[1] / "app.py")]


def conf_dir(environ: Mapping[str, str]) -> Path:
    """Spark's configuration folder: ``$SPARK_CONF_DIR``, else ``$SPARK_HOME/conf`` (pyspark's
    own folder when ``SPARK_HOME`` is unset). ``spark-submit`` reads its ``spark-defaults.conf``
    and puts the folder on the driver's class path (where log4j finds a ``log4j2.properties``)."""
    folder = environ.get("SPARK_CONF_DIR")
    if not folder:
        home = environ.get("SPARK_HOME") or _pyspark_home()
        folder = str(Path(home) / "conf")
    return Path(folder)


def spark_defaults(environ: Mapping[str, str]) -> dict[str, str]:
    """The settings of ``spark-defaults.conf`` in :func:`conf_dir`: what ``spark-submit``
    reads."""
    path = conf_dir(environ) / "spark-defaults.conf"
    if not path.is_file():
        return {}
    settings = {}
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if line and line[0] not in "#!":
            match = _PROPERTY.match(line)
            if match is not None:
                settings[match[1]] = match[2].strip()
    return settings


def submit_args_settings(submit_args: str) -> dict[str, str]:
    """The settings of ``$PYSPARK_SUBMIT_ARGS`` (``--master``, ``--conf K=V``, ...)."""
    settings: dict[str, str] = {}
    words = shlex.split(submit_args)
    for index, word in enumerate(words[:-1]):
        following = words[index + 1]
        if word == "--conf" and "=" in following:
            key, _, value = following.partition("=")
            settings[key] = value
        elif word in _SUBMIT_OPTIONS:
            settings[_SUBMIT_OPTIONS[word]] = following
    for word in words:
        option, sep, value = word.partition("=")
        if sep and option in _SUBMIT_OPTIONS:
            settings[_SUBMIT_OPTIONS[option]] = value
    return settings


def chosen_settings(
    environ: Mapping[str, str], running: Mapping[str, str] | None
) -> dict[str, str]:
    """The Spark settings made outside the project: those of the JVM ``spark-submit`` started
    (``running``, which include its ``spark-defaults.conf``), else ``spark-defaults.conf`` and
    ``$PYSPARK_SUBMIT_ARGS`` (which the JVM pyspark starts will read)."""
    if running is not None:
        return dict(running)
    return spark_defaults(environ) | submit_args_settings(environ.get("PYSPARK_SUBMIT_ARGS", ""))


def _entries(value: str) -> list[str]:
    return [entry.strip() for entry in value.split(",") if entry.strip()]


def _pyspark_home() -> str:
    import pyspark

    return str(Path(pyspark.__file__).parent)
