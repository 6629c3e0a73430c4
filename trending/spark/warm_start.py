"""Start-up work done side by side with the steps that wait for it.

A session's start is mostly waiting in turn: the Python process waits about 2 s for the driver JVM
to answer, then the JVM builds the SparkContext (about 1.5 s on one core) and then the session,
whose extensions Spark loads from every jar (``SparkSessionExtensionsProvider``). pyspark's
MLlib jar has one, which initializes Scala's runtime reflection and MLlib's SQL functions: about
2 s, in every session, whether it uses MLlib or not. These helpers move such work off the
critical path, onto a core that would otherwise idle:

* :func:`import_ahead`: while the JVM starts, a thread imports what the first query plan
  imports (pyspark converts its first list argument through a check that imports pandas,
  about 0.8 s);
* :func:`extensions_ahead`: while the JVM builds the SparkContext, a thread of the JVM loads and
  applies the session extensions to a throwaway ``SparkSessionExtensions``, so the session's own
  loading finds their classes initialized.

Both are hints: whatever they do not finish, the session does as it always would.
"""

from __future__ import annotations

import importlib
import logging
import threading
from typing import Any

log = logging.getLogger(__name__)

# What the first plan would import on the critical path (module names; missing ones are skipped).
AHEAD = ("pyspark.testing.utils", "pyspark.sql.functions", "pyspark.sql.streaming")
EXTENSIONS = "org.apache.spark.sql.SparkSessionExtensionsProvider"


def import_ahead(modules: tuple[str, ...] = AHEAD) -> threading.Thread:
    """Import ``modules`` in a daemon thread (started; join it to wait)."""

    def run() -> None:
        for name in modules:
            try:
                importlib.import_module(name)
            except Exception as error:  # a hint only: the plan imports it anyway
                log.debug("not imported ahead: %s: %s", name, error)

    thread = threading.Thread(target=run, name="trending-import-ahead", daemon=True)
    thread.start()
    return thread


def extensions_ahead(jvm: Any) -> threading.Thread:
    """Load and apply the session extensions in the JVM ``jvm`` from a daemon thread."""

    def run() -> None:
        try:
            loader = jvm.org.apache.spark.util.Utils.getContextOrSparkClassLoader()
            kind = jvm.java.lang.Class.forName(EXTENSIONS, True, loader)
            providers = jvm.java.util.ServiceLoader.load(kind, loader).iterator()
            while providers.hasNext():
                providers.next().apply(jvm.org.apache.spark.sql.SparkSessionExtensions())
        except Exception as error:  # the session loads them itself, and reports
            log.debug("session extensions not loaded ahead: %s", error)

    thread = threading.Thread(target=run, name="trending-extensions-ahead", daemon=True)
    thread.start()
    return thread
