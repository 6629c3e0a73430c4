"""The project's JVM classes on a running session that was started without them.

A session built by :func:`trending.spark.session.build_session`, or by ``spark-submit`` with
``trending spark-args``, has ``trending-udf.jar`` on its class path. A user's own
``SparkSession.builder.getOrCreate()`` has not: :func:`use_project_classes` adds the jar of the
installed package to the running session (Spark's ``ADD JAR``: the driver's session class loader
and, through ``SparkContext.addJar``, every executor's), and makes that class loader the context
class loader of the JVM thread serving the calling Python thread, which is where py4j and
Spark's ``registerJavaFunction`` look classes up. Each Python thread that touches the classes
(e.g. a ``foreachBatch`` function, which runs on a thread of its own) calls it first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from trending.errors import UserError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

PROBE = "trending.state.HashtagState"  # a class of trending-udf.jar
ENGINES = ("auto", "python")
"""The values of a step's engine setting (e.g. ``spark.trending.spl.engine``): ``auto`` takes
the JVM core where it can, ``python`` always the Python core."""


def use_project_classes(spark: SparkSession) -> None:
    """Make the classes of ``trending-udf.jar`` reachable from this thread and the executors."""
    jvm: Any = getattr(spark.sparkContext, "_jvm", None)
    if jvm is None:
        raise UserError("the trending functions need a classic Spark session, not Spark Connect")
    version = str(spark.version)
    if _major_minor(version) < (4, 1):
        raise UserError(
            f"this needs Spark 4.1 or newer (the session runs {version}): the project's JVM "
            "classes use Spark 4.1's checkpoint classes; spl_window and temporal_window run on "
            "Spark 4.0 too"
        )
    if jvm.org.apache.spark.util.Utils.classIsLoadable(PROBE):
        return  # on the class path (spark.jars, --jars) or already this thread's
    loader = spark._jsparkSession.sharedState().jarClassLoader()
    if not _loads(jvm, loader):
        from trending.spark.deps import project_jar

        spark._jsparkSession.sessionState().resourceLoader().addJar(str(project_jar()))
    jvm.java.lang.Thread.currentThread().setContextClassLoader(loader)


def project_classes_usable(spark: SparkSession) -> bool:
    """Whether :func:`use_project_classes` can serve ``spark`` (a classic session, Spark 4.1+)."""
    try:
        jvm = getattr(spark.sparkContext, "_jvm", None)
    except Exception:  # Spark Connect has no SparkContext
        return False
    return jvm is not None and _major_minor(str(spark.version)) >= (4, 1)


def jvm_engine(spark: SparkSession, setting: str) -> bool:
    """Whether a step whose engine is chosen by the session setting ``setting`` may run on the
    JVM core: the session can load the project's classes (:func:`project_classes_usable`) and
    the setting is not ``python``. Any value but those of :data:`ENGINES` is refused."""
    engine = str(spark.conf.get(setting, "auto") or "auto").lower()
    if engine not in ENGINES:
        raise ValueError(f"{setting} must be one of {', '.join(ENGINES)}, got {engine!r}")
    return engine == "auto" and project_classes_usable(spark)


def java_class(spark: SparkSession, name: str) -> Any:
    """The py4j handle of the JVM class ``name`` (a dotted name) on ``spark``'s gateway."""
    jvm: Any = spark.sparkContext._jvm
    for part in name.split("."):
        jvm = getattr(jvm, part)
    return jvm


def _major_minor(version: str) -> tuple[int, int]:
    """``(4, 1)`` of ``"4.1.1"`` (a pre-release suffix ignored)."""
    parts = [int("".join(c for c in p if c.isdigit()) or 0) for p in version.split(".")[:2]]
    return parts[0], parts[1] if len(parts) > 1 else 0


def _loads(jvm: Any, loader: Any) -> bool:
    try:
        jvm.java.lang.Class.forName(PROBE, False, loader)
    except Exception:  # py4j's Py4JJavaError around ClassNotFoundException
        return False
    return True
