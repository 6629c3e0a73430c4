"""A job's life cycle, whatever the job: Spark and metrics up, the query served until it ends,
a signal stops it or its checkpoint is taken over, then everything down, in one line each.

A job is a :class:`Job`: it starts its query (:meth:`Job.start`), says what it runs
(:meth:`Job.describe`), sums up a run (:meth:`Job.summarize`) and may follow a run that ended
on its own with another (:meth:`Job.follow`: the windows job's end-of-input run). Its processor
(the query's ``foreachBatch`` function, a :class:`Processor`) counts its own batches in the
metrics (``attach_metrics``, its observer). :func:`run` drives any of them; the command line
(:mod:`trending.commands.run`) only builds a job's settings and calls it::

    run(HASHTAGS, config, metrics_address)

On SIGINT/SIGTERM the micro-batch in progress ends first (``shutdown_timeout_s``); a second
signal stops at once. A run whose query fails raises :class:`UserError` with the failure in one
line; a lost lease raises :class:`trending.lease.LeaseLost`.
"""

from __future__ import annotations

import logging
import re
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from trending.errors import UserError
from trending.jobs.startup import StartupClock, phase
from trending.spark import class_archive
from trending.status import say

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming.query import StreamingQuery

    from trending.jobs.common import JobSettings
    from trending.jobs.idle import KafkaIdleAdvance
    from trending.lease import LeaseLost
    from trending.metrics import Metrics
    from trending.spark.listener import Monitoring

C = TypeVar("C", bound="JobSettings")
C_contra = TypeVar("C_contra", bound="JobSettings", contravariant=True)


class Processor(Protocol):
    """What the runtime reads of a job's ``foreachBatch`` function
    (:class:`trending.jobs.common.CommittedBatches`)."""

    @property
    def config(self) -> JobSettings: ...

    @property
    def history(self) -> Sequence[Any]: ...

    @property
    def lease_lost(self) -> LeaseLost | None: ...

    @property
    def running(self) -> int | None: ...

    @property
    def failure(self) -> str | None: ...

    @property
    def input_topics(self) -> tuple[str, ...]: ...

    @property
    def control_topic(self) -> str: ...

    def watermark_ms(self) -> int | None: ...

    def advance_value(self, watermark_ms: int) -> bytes: ...

    def attach_metrics(self, metrics: Metrics) -> None: ...

    def close(self) -> None: ...


Started = tuple["StreamingQuery", Processor]


class Job(Protocol[C_contra]):
    """One streaming job, as :func:`run` drives it."""

    name: str  # as in `trending run NAME`

    def start(
        self,
        spark: SparkSession,
        config: C_contra,
        on_processor: Callable[[Any], None] | None,
    ) -> Started:
        """Create the topics and start the query (not waiting for it); ``on_processor`` sees the
        processor before the first batch (metrics)."""
        ...

    def describe(self, config: C_contra) -> str:
        """What the job runs, in one line (its topics and window)."""
        ...

    def summarize(self, history: Sequence[Any]) -> str:
        """One line over the batches of a run."""
        ...

    def follow(
        self, spark: SparkSession, config: C_contra, ended: Processor, runs: int
    ) -> Started | None:
        """Another run after ``ended``'s query ended on its own (the ``runs``-th so far), or None:
        the job is done."""
        ...


class Lifecycle(Generic[C]):
    """:func:`run`'s steps, for one job and its settings."""

    def __init__(self, job: Job[C], config: C, metrics_address: tuple[str, int]) -> None:
        self.job, self.config, self.metrics_address = job, config, metrics_address

    def run(self) -> int:
        job, config = self.job, self.config
        with StartupClock() as startup:
            with phase("Spark session"):
                spark, monitoring = start_spark(job.name, config, self.metrics_address)
            started: Started | None = job.start(
                spark, config, monitoring.attach if monitoring else None
            )
            say(f"{job.name} job {startup.ready_line()}")
        banner, runs = job.describe(config), 0
        processor: Processor | None = None
        try:
            while started is not None:
                query, processor = started
                runs += 1
                first = startup if runs == 1 else None
                ended = serve(job, banner, query, processor, monitoring, first)
                if not ended:
                    break
                started = job.follow(spark, config, processor, runs)
                banner = "end of input"
        finally:
            stopping = time.monotonic()
            shut_down(spark, processor, monitoring)
            say(f"{job.name} job {startup.shut_down_line(time.monotonic() - stopping)}")
        return 0


def run(job: Job[C], config: C, metrics_address: tuple[str, int] = ("127.0.0.1", 0)) -> int:
    """Start Spark and ``job``'s query, report progress, stop cleanly on Ctrl-C or SIGTERM;
    a query that fails only because Spark's Python worker missed its start-up window runs again
    (:func:`run_again_on_worker_timeout`)."""
    return run_again_on_worker_timeout(
        job.name, lambda: Lifecycle(job, config, metrics_address).run()
    )


# Spark gives a Python worker it starts outside the worker daemon a fixed 10 s to connect back
# (not configurable); the driver starts one whenever a query with a Python state processor
# starts. On an overloaded machine it can miss that, and the query fails with this message.
PYTHON_WORKER_TIMEOUT = "Python worker failed to connect back"
JOB_ATTEMPTS = 3


def run_again_on_worker_timeout(job: str, run: Callable[[], int]) -> int:
    """``run()``; when it fails on :data:`PYTHON_WORKER_TIMEOUT`, run it again (up to
    :data:`JOB_ATTEMPTS` runs): a run restarts from the checkpoint, so nothing is lost or
    published twice. Any other failure is raised at once."""
    for attempt in range(1, JOB_ATTEMPTS + 1):
        try:
            return run()
        except UserError as error:
            if PYTHON_WORKER_TIMEOUT not in str(error) or attempt == JOB_ATTEMPTS:
                raise
            say(
                f"{job} job: {error}: Spark gives that worker a fixed 10 s, which a "
                f"busy machine can miss; starting again from the checkpoint (run {attempt + 1} "
                f"of {JOB_ATTEMPTS})"
            )
    raise AssertionError("unreachable")


def start_spark(
    job: str, config: JobSettings, metrics_address: tuple[str, int]
) -> tuple[SparkSession, Monitoring | None]:
    """The job's Spark session, and its metrics endpoint unless the port is 0."""
    from trending.spark.listener import start_monitoring
    from trending.spark.session import build_session, job_collector

    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(message)s", stream=sys.stderr)
    logging.getLogger("trending").setLevel(logging.INFO)
    logging.getLogger("py4j").setLevel(logging.WARNING)
    spark = build_session(
        f"trending-{job}",
        config.master,
        config.spark_conf,
        config.shuffle_partitions,
        write_class_archive=True,
        collector=job_collector(live=not config.available_now),
    )
    return spark, start_monitoring(spark, config, metrics_address, kind=job)


def serve(
    job: Job[Any],
    banner: str,
    query: StreamingQuery,
    processor: Processor,
    monitoring: Monitoring | None,
    startup: StartupClock | None = None,
) -> bool:
    """Wait for ``query`` until it ends or a signal comes, and report (with ``startup``, when
    its first micro-batch has committed). True: it ended on its own; :class:`UserError` when it
    failed."""
    if monitoring is not None:
        monitoring.watch(query)
    say(f"{job.name} job running: {banner}")
    stop, hurry = threading.Event(), threading.Event()
    shutdown_timeout_s = processor.config.shutdown_timeout_s

    def on_signal(signum: int, _frame: object) -> None:
        # py4j is not reentrant: the loop below stops the query, not the handler
        if stop.is_set():
            hurry.set()
            say(f"signal {signum} again: stopping now")
            return
        stop.set()
        say(
            f"stopping on signal {signum}: the micro-batch in progress finishes "
            f"first (at most {shutdown_timeout_s:g} s) ..."
        )

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    idle = idle_advance(processor, query)
    while query.isActive and not stop.is_set() and processor.lease_lost is None:
        try:
            query.awaitTermination(1)
        except Exception:  # the query failed: reported below, from query.exception()
            break
        if idle is not None:
            idle.check()
        if startup is not None and processor.history:
            first = processor.history[0]
            done = first.started_at + first.seconds
            say(f"{job.name} job {startup.first_batch_line(done, first.seconds)}")
            startup = None
    if idle is not None:
        idle.close()
    if stop.is_set():
        stop_between_batches(query, processor, hurry, shutdown_timeout_s)
    elif processor.lease_lost is not None:
        query.stop()
    exception = query.exception()
    say(f"{job.name} job stopped: {job.summarize(processor.history)}")
    if processor.lease_lost is not None:
        raise processor.lease_lost
    if exception is not None and not stop.is_set():
        raise UserError(failure_line(processor, exception))
    return not stop.is_set() and exception is None


def idle_advance(processor: Processor, query: StreamingQuery) -> KafkaIdleAdvance | None:
    """The job's ``--idle-advance`` (:mod:`trending.jobs.idle`), when set and the job runs
    until stopped."""
    config = processor.config
    if config.idle_advance_ms is None or config.available_now:
        return None
    from trending.jobs.idle import KafkaIdleAdvance
    from trending.spark.listener import parse_offsets

    def consumed() -> dict[str, dict[int, int]]:
        progress = query.lastProgress
        sources = progress.get("sources", []) if progress else []
        read: dict[str, dict[int, int]] = {}
        for source in sources:
            for topic, offsets in parse_offsets(source.get("endOffset")).items():
                read.setdefault(topic, {}).update(offsets)
        return read

    return KafkaIdleAdvance(
        config.idle_advance_ms, config.bootstrap, config.kafka_options, processor.input_topics,
        processor.control_topic, processor.advance_value, processor.watermark_ms, consumed,
    )  # fmt: skip


def stop_between_batches(
    query: Any, processor: Any, hurry: threading.Event, timeout_s: float
) -> None:
    """Stop ``query`` when no micro-batch is in progress, or once the one in progress has
    committed its transaction (``processor.history`` grows), so a backlog cannot keep it going.
    After the shutdown timeout (or when ``hurry`` is set) it is stopped anyway: a batch cut
    short publishes nothing and is done again on the next start."""
    done = len(processor.history)
    if processor.running is not None:
        say(f"waiting for micro-batch {processor.running} to commit ...")
    deadline = time.monotonic() + timeout_s
    while query.isActive and not hurry.is_set() and time.monotonic() < deadline:
        if len(processor.history) > done or not _trigger_active(query):
            break
        time.sleep(0.02)
    query.stop()


def _trigger_active(query: Any) -> bool:
    try:
        return bool(query.status["isTriggerActive"])
    except Exception:  # the query ended meanwhile
        return False


def failure_line(processor: Any, exception: Any) -> str:
    """Why the query failed, in one line: lost input (whether Spark found it planning the batch
    or reading it inside the batch), else the batch's own error when a batch failed (Spark's
    exception also carries the whole plan; its log has the details)."""
    text = str(exception)
    loss = _DATA_LOSS.search(text)
    if loss is not None:
        reason = _LOSS_REASON.search(text)
        what = reason[1].strip() if reason else loss[1]
        return (
            f"the input lost records the job had not read, or its offsets started over "
            f"({what[:300]}): {DATA_LOSS_HINT}"
        )
    if processor.failure is not None:
        return (
            f"{processor.failure}; nothing of it was published, and the job sends it again when "
            "restarted from its checkpoint"
        )
    lines = text.strip().splitlines()
    first = lines[0][:500] if lines else repr(exception)
    return f"the streaming query failed: {first}"


# Spark's Kafka source fails the query when offsets it was to read are gone (retention, or the
# topic deleted and created again: its offsets start over); the job stops rather than skip them.
# Offsets that went back fail the planning of a batch; records removed past the checkpoint's
# position (retention, DeleteRecords) fail the batch's read inside foreachBatch, so the batch's
# own error is a Py4JJavaError and the query's exception carries Spark's text.
_DATA_LOSS = re.compile(r"(Some data may have been lost because they are not available in Kafka)")
_LOSS_REASON = re.compile(r"Reason:\s*([^\n]+)")
DATA_LOSS_HINT = (
    "nothing of the batch was published; to skip what is gone and go on, restart with "
    "--spark-kafka-option failOnDataLoss=false; to start over on the new input, use a new "
    "--checkpoint"
)


def shut_down(spark: Any, processor: Processor | None, monitoring: Monitoring | None) -> None:
    """Release the processor's Kafka clients and lease, the metrics, and Spark (then keep the
    driver's class archive if this run wrote one)."""
    try:
        if processor is not None:
            processor.close()
        if monitoring is not None:
            monitoring.close()
    finally:
        spark.stop()
        class_archive.finish()
