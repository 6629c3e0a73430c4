"""A Spark session with the project's jars on the classpath and settings that suit streaming.

The session keeps every setting made outside the project (``spark-submit``, ``spark-defaults.conf``,
the Spark operator) and adds the jars the jobs need where the user's do not provide them
(:mod:`trending.spark.deps`).

pyspark starts its JVM with ``spark-submit --conf KEY=VALUE`` for every setting made before it
starts, and the process list (``ps``) shows those command lines to every user of the machine.
So the JVM starts with the settings that carry no secret (:func:`launch_settings`), and the
SparkContext gets all of them, secrets too, through pyspark's gateway to the running JVM.

Under ``trending --log-format json`` a driver JVM this process starts logs one JSON object a line
too (:func:`json_log_options`), and what it writes outside its logging (the JVM's own warnings,
the resolver's report) reaches :func:`trending.status.relay` (:func:`launch_relayed`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from connectors.jvm import JARS_ENV, JAVA_OPTION_VARIABLES, java_executable
from connectors.kafka_settings import carries_secret
from trending.errors import UserError
from trending.spark import class_archive, deps, warm_start
from trending.status import json_job, relay, say

if TYPE_CHECKING:
    from pyspark import SparkConf
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

PROVIDER_CONF = "spark.sql.streaming.stateStore.providerClass"
ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
NO_DATA_CONF = "spark.sql.streaming.noDataMicroBatches.enabled"
HASHTAG_UDF = ("hashtag_keys", "trending.udf.HashtagKeys")
DRIVER_OPTIONS_CONF = "spark.driver.extraJavaOptions"
EXECUTOR_OPTIONS_CONF = "spark.executor.extraJavaOptions"
# The throughput collector: the jobs allocate many short-lived objects per record and keep their
# state off the heap (RocksDB), so G1's concurrent work costs more than its short pauses save
# (bench-trending: the job ~20% faster, Spark's built-in window count ~8%).
THROUGHPUT_GC = "-XX:+UseParallelGC"
# The pause-time collector, for a live query (a processing-time trigger), where a result waits for
# every pause of its micro-batch: under the parallel collector the hashtags job at 10,000 tweets/s
# stopped for full collections of 276 and 364 ms (metaspace and old generation) within two minutes,
# and its p99 latency was 1.22 s; under G1 no pause passed 49 ms, the p99 was 0.75 s and it used
# less CPU (bench-latency). It costs throughput near the job's highest rate: in bench-scale's
# steady runs at 50,000 and 60,000 tweets/s batches took ~15% longer on G1 (a larger young
# generation or heap did not change that). A backlog (--available-now) keeps THROUGHPUT_GC.
LATENCY_GC = "-XX:+UseG1GC"
# A collector already chosen in JAVA_OPTION_VARIABLES: two choices stop the JVM from starting.
_COLLECTOR_FLAG = re.compile(r"-XX:\+Use\w*GC\b")
# C2 compiles a method after ~5,000 calls. The driver's planning code (Catalyst's rules, code
# generation, closure cleaning) runs hundreds of times a micro-batch, so C2 goes on compiling it
# for minutes after start-up: about half a core on 2 cores, taken from the tasks in local mode.
# Ten times the calls still brings the per-record code to C2 within a batch (bench-scale, paired
# runs: the JIT compilers' time 40% less, local[2] 7% faster cold and 6% warm, local[1] 4% cold).
JIT_THRESHOLDS = (
    "-XX:Tier4InvocationThreshold=50000 -XX:Tier4MinInvocationThreshold=6000 "
    "-XX:Tier4CompileThreshold=150000 -XX:Tier4BackEdgeThreshold=400000"
)
_JIT_FLAG = re.compile(r"-XX:[+-]?(Tier\w*|\w*CompileThreshold\w*)\b")
# Without Hadoop's native library (the pyspark wheel has none) Hadoop's local file system runs a
# child process (chmod, readlink) per checkpoint file it creates or renames, ~35 ms a file and
# several files a micro-batch. This manager (jvm/udf, trending.fs) does the same through java.nio
# on file: paths and leaves other schemes to Spark's own.
CHECKPOINT_FILES_CONF = ("spark.sql.streaming.checkpointFileManagerClass",
                         "trending.fs.ForklessCheckpointFileManager")  # fmt: skip
DEFAULT_MASTER = "local[*]"
# Spark runs each task once in local mode (`local`, `local[N]`, `local[*]`), where a cluster gives
# it spark.task.maxFailures attempts (default 4): one transient failure (a Python worker that
# missed Spark's fixed 10 s to connect back, a fetch that timed out) failed the whole query.
# Spark's `local[N,M]` gives local mode M attempts per task, so a local master without its own M
# gets the cluster's. Spark's patterns (SparkMasterRegex): local\[([0-9]+|\*)\] and
# local\[([0-9]+|\*)\s*,\s*([0-9]+)\].
TASK_ATTEMPTS_CONF = "spark.task.maxFailures"
DEFAULT_TASK_ATTEMPTS = "4"
_LOCAL_WITHOUT_ATTEMPTS = re.compile(r"local(?:\[([0-9]+|\*)\])?")
# ``--log-format json``: the driver JVM's log4j2 configuration (one JSON object a line on
# standard error: time, level, job, logger, message), and the system property naming the job.
JSON_LOG_CONFIG = Path(__file__).resolve().parents[1] / "resources" / "log4j2-json.properties"
JOB_PROPERTY = "trending.log.job"
DEFAULT_OPTIONS_CONF = "spark.driver.defaultJavaOptions"
# A log4j configuration the user chose: a system property that names one (log4j 2's, or 1.x's
# through log4j's bridge) ...
_LOG_CONFIG_FLAG = re.compile(r"-Dlog4j2?\.configuration(?:File)?=")
# ... or a file that log4j finds on the class path in Spark's configuration folder.
_LOG_CONFIG_FILES = re.compile(r"log4j2.*\.(?:properties|xml|json|jsn|ya?ml)")
_PLAIN_OPTION = re.compile(r"[\w@%+=:,./-]+")


def build_session(
    app_name: str,
    master: str | None = None,
    conf: Mapping[str, str] | None = None,
    shuffle_partitions: int | None = None,
    write_class_archive: bool = False,
    collector: str = THROUGHPUT_GC,
) -> SparkSession:
    """Start (or reuse) a Spark session for a streaming job.

    Settings made outside the project (``spark-submit``, ``spark-defaults.conf``,
    ``$PYSPARK_SUBMIT_ARGS``, the Spark operator) are kept: the master, the deploy mode, the
    jars and the JVMs' options get the project's defaults only where none is set (see
    :mod:`trending.spark.deps`). ``master`` (``--master``) or ``$SPARK_MASTER``, when given,
    choose the master of a JVM this process starts; else :data:`DEFAULT_MASTER` when nothing
    chose one. A local master retries failed tasks (:func:`with_task_attempts`).
    ``conf`` (``--conf`` and the configuration file) wins over everything. A driver JVM this
    process starts maps the classes of :mod:`trending.spark.class_archive`, or writes that
    archive at exit when ``write_class_archive`` (then call ``class_archive.finish()`` after
    ``spark.stop()``). ``collector``: the JVMs' garbage collector unless one is chosen
    (:data:`THROUGHPUT_GC`, or :data:`LATENCY_GC` for a live query)."""
    java_executable()  # a clear message instead of a JVM stack trace
    # spark-submit started this Python and its JVM (a JVM this process started itself, for an
    # earlier session, takes a new session's master)
    submitted = "PYSPARK_GATEWAY_PORT" in os.environ
    outside = deps.chosen_settings(os.environ, _running_settings() if submitted else None)
    settings = session_settings(app_name, master, outside, conf or {}, submitted, collector)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark import SparkContext
    from pyspark.sql import SparkSession
    from pyspark.sql.types import ArrayType, StringType

    if not submitted:
        chosen = {**outside, **(conf or {})}
        settings = with_class_archive(settings, chosen, write_class_archive)
        json_options = json_log_options(settings, os.environ, json_job())
        if json_options is not None:
            settings[DRIVER_OPTIONS_CONF] = f"{settings[DRIVER_OPTIONS_CONF]} {json_options}"
        warm_start.import_ahead()
        start_jvm_resolving(launch_settings(settings), chosen, relayed=json_options is not None)
    if SparkContext._jvm is not None:
        check_sql_settings(SparkContext._jvm, settings)
    if SparkContext._active_spark_context is None and SparkContext._jvm is not None:
        warm_start.extensions_ahead(SparkContext._jvm)
    builder = SparkSession.builder
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(os.environ.get("TRENDING_SPARK_LOG_LEVEL", "WARN"))
    missing = missing_classes(spark)
    if missing:
        raise deps.missing_classes_error(missing, submitted)
    partitions = shuffle_partitions or cluster_cores(spark)
    spark.conf.set("spark.sql.shuffle.partitions", str(partitions))
    name, java_class = HASHTAG_UDF
    spark.udf.registerJavaFunction(name, java_class, ArrayType(StringType()))
    log.info("Spark %s, master %s", spark.version, spark.sparkContext.master)
    return spark


def session_settings(
    app_name: str,
    master: str | None,
    outside: Mapping[str, str],
    conf: Mapping[str, str],
    submitted: bool,
    collector: str = THROUGHPUT_GC,
) -> dict[str, str]:
    """The settings a session starts with, each from the first of: the jars and packages the
    user's do not provide, added to theirs; ``master`` or ``$SPARK_MASTER`` when given; ``conf``
    (``--conf``, the configuration file); the jobs' fixed settings (UTC, no batches without
    data); the settings made ``outside`` the project (``spark-submit``, ``spark-defaults.conf``,
    ``$PYSPARK_SUBMIT_ARGS``); the project's defaults. A JVM that ``spark-submit`` started
    (``submitted``) keeps its master and takes no jars: only ``spark-submit`` can put them on
    the driver's class path."""
    chosen = {**outside, **conf}
    explicit = master or os.environ.get("SPARK_MASTER")
    settings = {
        "spark.app.name": app_name,
        "spark.ui.enabled": os.environ.get("TRENDING_SPARK_UI", "false"),
        DRIVER_OPTIONS_CONF: driver_java_options(os.environ, collector),
        EXECUTOR_OPTIONS_CONF: collector,
        CHECKPOINT_FILES_CONF[0]: CHECKPOINT_FILES_CONF[1],
        **outside,
        "spark.sql.session.timeZone": "UTC",
        NO_DATA_CONF: "false",
        "spark.ui.showConsoleProgress": "false",
        **conf,
    }
    if submitted:
        if explicit and explicit != chosen.get("spark.master"):
            log.warning(
                "--master %s ignored: spark-submit started Spark with master %s",
                explicit, chosen.get("spark.master"),
            )  # fmt: skip
        if chosen.get("spark.app.name", "").endswith(".py"):  # spark-submit's default name
            settings["spark.app.name"] = app_name
        return settings
    if explicit or "spark.master" not in chosen:
        settings["spark.master"] = with_task_attempts(explicit or DEFAULT_MASTER, chosen)
    return settings | deps.plan(chosen).merged(chosen)


def check_sql_settings(jvm: Any, settings: Mapping[str, str]) -> None:
    """Refuse a ``spark.sql.*`` setting whose value Spark's SQL configuration does not take, in
    one line naming it. A session started with one fails on every call that reads its settings,
    and pyspark's own report of that failure reads them again, without end (the job hung)."""
    sql = [(key, value) for key, value in settings.items() if key.startswith("spark.sql.")]
    if not sql:
        return
    scratch = jvm.org.apache.spark.sql.internal.SQLConf()  # not the session's: only a check
    for key, value in sql:
        try:
            scratch.setConfString(key, value)
        except Exception as error:  # Spark's IllegalArgumentException, through py4j
            java = getattr(error, "java_exception", None)
            reason = str(java.getMessage() if java is not None else error).strip()
            raise UserError(f"the Spark setting {key}={value} is not valid: {reason}") from None


def with_class_archive(
    settings: dict[str, str], chosen: Mapping[str, str], dump: bool
) -> dict[str, str]:
    """``settings`` with the driver archive's options added to the project's default driver
    options, when this process is about to start the JVM and ``chosen`` does not set them."""
    from pyspark import SparkContext

    if SparkContext._gateway is not None or DRIVER_OPTIONS_CONF in chosen:
        return settings
    extra = class_archive.launch_options(os.environ, dump)
    if not extra:
        return settings
    return {**settings, DRIVER_OPTIONS_CONF: f"{settings[DRIVER_OPTIONS_CONF]} {extra}"}


def start_jvm_resolving(
    settings: Mapping[str, str], chosen: Mapping[str, str], relayed: bool = False
) -> None:
    """:func:`start_jvm`, saying first what Spark's resolver will fetch (once, into its cache),
    and turning a resolver that cannot fetch into one line with both remedies."""
    wanted = [p for p in settings.get(deps.PACKAGES_CONF, "").split(",") if p]
    fetching = deps.uncached(wanted, chosen)
    if fetching:
        say(
            f"fetching {', '.join(fetching)} with Spark's resolver into "
            f"{deps.ivy_cache(chosen)} (once; spark.jars.ivySettings for a mirror, "
            f"{JARS_ENV} for a folder of jars)"
        )
    try:
        start_jvm(settings, relayed)
    except Exception as error:  # pyspark's: the JVM exited before it answered
        if fetching and "JAVA_GATEWAY_EXITED" in f"{error!r}{error}":
            raise deps.resolve_failed(fetching, chosen) from error
        raise


def missing_classes(spark: SparkSession) -> list[str]:
    """The dependencies (:data:`deps.CLASSES`) the driver cannot load."""
    utils: Any = spark.sparkContext._jvm.org.apache.spark.util.Utils  # type: ignore[union-attr]
    return [kind for kind, name in deps.CLASSES.items() if not utils.classIsLoadable(name)]


def _running_settings() -> dict[str, str]:
    """The settings of the JVM ``spark-submit`` started (its system properties)."""
    from pyspark import SparkConf

    return dict(SparkConf().getAll())


def launch_settings(settings: Mapping[str, str]) -> dict[str, str]:
    """The part of ``settings`` the JVM may start with, on its command line: all but those that
    carry a secret (by key, or as a URL's userinfo in the value). A setting only start-up reads
    (the driver's memory, class path, Java options) must carry none: held back, it would not
    apply."""
    return {key: value for key, value in settings.items() if not carries_secret(key, value)}


def start_jvm(settings: Mapping[str, str], relayed: bool = False) -> None:
    """Start pyspark's JVM with ``settings`` (pyspark gives them to ``spark-submit`` as
    ``--conf`` arguments), unless this process already runs one: the step ``SparkContext(conf)``
    takes first, with all of its settings. ``relayed``: the JVM's output goes through
    :func:`launch_relayed`."""
    from pyspark import SparkConf, SparkContext

    if SparkContext._gateway is None:
        launch = SparkConf(loadDefaults=False).setAll(list(settings.items()))
        gateway = launch_relayed(launch) if relayed else None
        SparkContext._ensure_initialized(gateway=gateway, conf=launch)


def launch_relayed(conf: SparkConf) -> Any:
    """pyspark's gateway to a JVM started with ``conf``, its standard output and error read by
    threads that hand each line to :func:`trending.status.relay`, which writes it on this
    process's standard error: the JVM's log lines (JSON objects already) as they are, and what
    it writes outside its logging as JSON lines too. That is the resolver's report, the output
    of the Python workers it starts, and the JVM's own ``WARNING: Using incubator modules:
    jdk.incubator.vector``: Spark's launcher gives every driver ``--add-modules
    jdk.incubator.vector`` (no setting leaves it out), and the JVM then prints that line
    before any of its code runs (no option silences it). The threads read until the JVM and
    its children close the pipes; a JVM that exits before it answers has its last lines out
    before the error."""
    from pyspark.java_gateway import launch_gateway

    pipes = [os.pipe(), os.pipe()]  # the JVM's standard output and error
    readers = [
        threading.Thread(target=_relay_lines, args=(read,), name=f"trending-jvm-{kind}",
                         daemon=True)
        for (read, _), kind in zip(pipes, ("stdout", "stderr"), strict=True)
    ]  # fmt: skip
    for reader in readers:
        reader.start()
    streams = {"stdout": pipes[0][1], "stderr": pipes[1][1]}
    failed = True
    try:
        gateway = launch_gateway(conf, popen_kwargs=streams)  # type: ignore[no-untyped-call]
        failed = False
        return gateway
    finally:
        for _, write in pipes:
            os.close(write)  # the JVM holds its own copies
        if failed:
            for reader in readers:
                reader.join(timeout=5)


def _relay_lines(fd: int) -> None:
    with open(fd, "rb") as pipe:
        for raw in pipe:
            line = raw.decode("utf-8", "replace").rstrip("\r\n")
            # no stream left to write on (exiting): the pipe is still drained, or the JVM
            # would block on its next line
            with contextlib.suppress(OSError, ValueError):
                if line.strip():
                    relay(line)


def json_log_options(
    settings: Mapping[str, str], environ: Mapping[str, str], job: str | None
) -> str | None:
    """The driver JVM's options under ``--log-format json`` (``job``: the job the lines name,
    :func:`trending.status.json_job`; None with plain text): log4j 2 configured by
    :data:`JSON_LOG_CONFIG`, the job in :data:`JOB_PROPERTY`. None with plain text, for a JVM
    already running, and when the user chose a log4j configuration (:func:`chosen_log_config`):
    theirs is kept, and the JVM's output left as it is."""
    from pyspark import SparkContext

    if job is None or SparkContext._gateway is not None or chosen_log_config(settings, environ):
        return None
    options = [f"-Dlog4j2.configurationFile={JSON_LOG_CONFIG}"]
    if job:
        options.append(f"-D{JOB_PROPERTY}={job}")
    return " ".join(java_option(option) for option in options)


def chosen_log_config(settings: Mapping[str, str], environ: Mapping[str, str]) -> bool:
    """Whether the user chose the driver's log4j configuration: in the driver's Java options
    (``spark.driver.extraJavaOptions``, ``spark.driver.defaultJavaOptions``, the variables
    ``spark-submit`` and the JVM read), or with a ``log4j2.properties`` (``.xml``, ...) in
    Spark's configuration folder (:func:`trending.spark.deps.conf_dir`)."""
    options = [settings.get(DRIVER_OPTIONS_CONF, ""), settings.get(DEFAULT_OPTIONS_CONF, "")]
    options += [environ.get(name, "") for name in JAVA_OPTION_VARIABLES]
    if any(_LOG_CONFIG_FLAG.search(option) for option in options):
        return True
    try:
        entries = list(deps.conf_dir(environ).iterdir())
    except OSError:  # no such folder
        return False
    return any(_LOG_CONFIG_FILES.fullmatch(entry.name) for entry in entries)


def java_option(option: str) -> str:
    """``option`` as one word of a Java options setting (Spark's launcher splits them at white
    space outside quotes and takes a backslash as an escape)."""
    if _PLAIN_OPTION.fullmatch(option):
        return option
    return '"' + option.replace("\\", "\\\\").replace('"', '\\"') + '"'


def with_task_attempts(master: str, conf: Mapping[str, str] | None = None) -> str:
    """``local``, ``local[N]`` and ``local[*]`` as ``local[N,M]``: M attempts per task, M from
    ``spark.task.maxFailures`` in ``conf`` (default 4, as on a cluster). Any other master (a
    ``local[N,M]`` of the user's, a cluster's URL) is kept as it is."""
    local = _LOCAL_WITHOUT_ATTEMPTS.fullmatch(master)
    attempts = (conf or {}).get(TASK_ATTEMPTS_CONF, DEFAULT_TASK_ATTEMPTS)
    if local is None or not attempts.isdigit():  # Spark itself says what is wrong with it
        return master
    return f"local[{local[1] or 1},{attempts}]"


def driver_java_options(environ: Mapping[str, str], collector: str = THROUGHPUT_GC) -> str:
    """The driver JVM's options: quiet logging, ``collector`` unless ``environ`` already chooses
    a collector, and :data:`JIT_THRESHOLDS` unless it already sets the JIT's tiers. A ``--conf``
    of the same key replaces them whole."""
    chosen = " ".join(environ.get(name, "") for name in JAVA_OPTION_VARIABLES)
    options = ["-Dlog4j2.level=WARN"]
    if not _COLLECTOR_FLAG.search(chosen):
        options.append(collector)
    if not _JIT_FLAG.search(chosen):
        options.append(JIT_THRESHOLDS)
    return " ".join(options)


def job_collector(live: bool) -> str:
    """The collector of a job's JVMs: :data:`LATENCY_GC` for a live query, whose results wait
    for its pauses, :data:`THROUGHPUT_GC` for a run that reads a backlog and stops."""
    return LATENCY_GC if live else THROUGHPUT_GC


def cluster_cores(spark: SparkSession, wait_s: float = 30.0) -> int:
    """The executors' total cores (Spark's default parallelism), at least 2.

    One shuffle partition per core (Spark's default of 200 is slow on small clusters). On a
    cluster, executors register after the session starts: this waits up to ``wait_s`` for the
    first, then gives the stragglers a moment.
    """
    context = spark.sparkContext
    if not (context.master or "local").startswith("local"):
        status: Any = context._jsc.sc().getExecutorMemoryStatus()  # driver + executors
        deadline = time.monotonic() + wait_s
        while status.size() < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
            status = context._jsc.sc().getExecutorMemoryStatus()
        time.sleep(1.0)
    return max(2, context.defaultParallelism)
