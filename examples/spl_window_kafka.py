"""An SPL window per user over the ``tweets`` Kafka topic, events published to another topic.

    .venv/bin/python examples/spl_window_kafka.py --bootstrap 127.0.0.1:9092 \\
        --spec '{"kind": "sliding", "evict": {"count": 4}, "trigger": {"count": 2}}' \\
        --output-topic tweet-windows [--available-now]

Reads Avro tweets (``schemas/tweet.avsc``) with Spark's Kafka source, runs the window spec per
``user`` with :func:`trending.spark.spl_runner.apply_window` and writes one JSON record per
window event (key = user) to ``--output-topic``, trigger rows with the window content
(``--no-include-window`` leaves it out: see the runner's output). Tweets that do not decode go to
``--dead-letter-topic`` in the envelope of ``schemas/dead_letter.avsc`` (the record's topic,
partition, offset, timestamp, headers, key and value, and the reason), as in the trending job.
Both are published exactly once (:func:`trending.jobs.sink.publish_exactly_once`): a crash and
a restart from ``--checkpoint`` publish nothing twice and lose nothing, for readers with
``isolation.level=read_committed``. Time policies: pass ``--time-mode event`` (clock =
``created_at``, ``--watermark``) or ``--time-mode processing``. ``--available-now`` processes what
the topic holds and exits; otherwise it runs until SIGTERM or Ctrl-C stops it once the batch in
progress has committed (exit code 0). ``--kafka-step-timeout`` (as in ``trending run``) bounds one
step of a batch's Kafka transaction: a step stuck on a stalled or restarted broker is given up
and the batch sent again, without a restart. When the query fails (e.g. an ACL denies writes to
the output topic) the example prints one line, ``spl-window-kafka: error: <why>``, and exits
with code 2; nothing of the failed batch was published, and a restart from the same
``--checkpoint`` sends it again.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import tempfile
import threading
from typing import Any

DEFAULT_SPEC = '{"kind": "sliding", "evict": {"count": 4}, "trigger": {"count": 2}}'


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    from connectors.transactions import TXN_STEP_TIMEOUT_S
    from trending.commands.run import duration_arg

    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "--bootstrap", default=None, help="Kafka bootstrap (default $KAFKA_BOOTSTRAP_SERVERS)"
    )
    parser.add_argument("--topic", default="tweets", help="input topic of Avro tweets")
    parser.add_argument("--spec", default=DEFAULT_SPEC, help="window spec: JSON text or a file")
    parser.add_argument("--output-topic", default="tweet-windows", help="topic for the events")
    parser.add_argument("--dead-letter-topic", default="tweets-dead-letter")
    parser.add_argument("--time-mode", choices=["none", "event", "processing"], default="none")
    parser.add_argument("--watermark", default="10 seconds", help="event-time lateness bound")
    parser.add_argument(
        "--max-future-skew",
        default="1h",
        help="event time: a tweet further ahead of the clock is a dead letter ('none': no bound)",
    )
    parser.add_argument("--kinds", default=None, help="publish only these events, e.g. trigger")
    parser.add_argument(
        "--include-window",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="put the window content in trigger and initial_full records",
    )
    parser.add_argument("--checkpoint", default=None, help="checkpoint folder (default: temp)")
    parser.add_argument("--available-now", action="store_true", help="process the topic, exit")
    parser.add_argument(
        "--max-offsets-per-trigger", dest="max_offsets", type=int, default=None,
        help="cap records per micro-batch",
    )  # fmt: skip
    parser.add_argument(
        "--kafka-step-timeout",
        type=duration_arg,
        default=f"{TXN_STEP_TIMEOUT_S:g}s",
        metavar="DURATION",
        help="how long one step of a batch's Kafka transaction (flush, offsets, commit) may "
        "take; then the producer is replaced and the batch sent again (default: %(default)s)",
    )
    return parser.parse_args(argv)


def load_spec(text: str) -> dict[str, Any]:
    """The spec from JSON text, or from the JSON file it names."""
    if os.path.isfile(text):
        with open(text, encoding="utf-8") as handle:
            text = handle.read()
    spec: dict[str, Any] = json.loads(text)
    return spec


def dead_letter() -> Any:
    """The dead-letter envelope of a Kafka row with a ``reason`` (``schemas/dead_letter.avsc``)."""
    from pyspark.sql import functions as F

    headers = F.coalesce("headers", F.array().cast("array<struct<key:string,value:binary>>"))
    return F.struct(
        "topic", "partition", "offset", "key", "value", "reason",
        F.current_timestamp().alias("failed_at"),
        F.lit(None).cast("long").alias("value_size"),
        "timestamp",
        headers.alias("headers"),
    )  # fmt: skip


def serve(query: Any, processor: Any, settings: Any) -> str | None:
    """Wait for ``query`` until it ends, fails or SIGTERM/SIGINT stops it (as the jobs do: the
    batch in progress commits first, for ``settings.shutdown_timeout_s`` at most; a second
    signal stops at once). Returns why it failed, in one line (the failed batch's own error
    when there is one), else None."""
    from trending.jobs.runtime import failure_line, stop_between_batches

    stop, hurry = threading.Event(), threading.Event()

    def on_signal(_signum: int, _frame: object) -> None:
        # py4j is not reentrant: the code below stops the query, not the handler
        (hurry if stop.is_set() else stop).set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    while query.isActive and not stop.is_set():
        try:
            query.awaitTermination(1)
        except Exception:  # the query failed: reported below, from query.exception()
            break
    if stop.is_set():
        stop_between_batches(query, processor, hurry, settings.shutdown_timeout_s)
        return None
    exception = query.exception()
    return None if exception is None else failure_line(processor, exception)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(message)s", stream=sys.stderr)
    logging.getLogger("trending").setLevel(logging.INFO)
    from connectors.kafka import ensure_topics, resolve_bootstrap
    from trending.errors import UserError
    from trending.jobs.runtime import run_again_on_worker_timeout

    bootstrap = resolve_bootstrap(args.bootstrap)
    ensure_topics(bootstrap, [args.output_topic, args.dead_letter_topic])
    checkpoint = args.checkpoint or tempfile.mkdtemp(prefix="spl-window-kafka-")
    try:
        # a run that fails on Spark's fixed 10 s for a Python worker starts again from the
        # checkpoint, as the jobs do
        return run_again_on_worker_timeout("spl-window", lambda: run(args, bootstrap, checkpoint))
    except UserError as failure:
        print(f"spl-window-kafka: error: {failure}", file=sys.stderr)
        return 2


def run(args: argparse.Namespace, bootstrap: str, checkpoint: str) -> int:
    """One run of the query until it ends or a signal stops it; raises ``UserError`` with the
    failure's line when the query fails."""
    from pyspark.sql import functions as F
    from pyspark.sql.avro.functions import to_avro

    from connectors.avro import schema_json
    from connectors.spark_kafka import decode_avro, read_kafka_stream, source_options
    from trending.durations import parse_optional_duration_ms
    from trending.errors import UserError
    from trending.jobs.common import JobSettings
    from trending.jobs.sink import publish_exactly_once
    from trending.spark.clock import ClockSkew, batch_clock_ms, skew_reason
    from trending.spark.session import build_session
    from trending.spark.spl_runner import apply_window, configure_spark

    spark = build_session("spl-window-kafka", "local[2]", shuffle_partitions=2)
    configure_spark(spark)  # RocksDB state store + no-data batches (timers on idle streams)
    options = source_options(bootstrap, args.topic, max_offsets_per_trigger=args.max_offsets)
    decoded = decode_avro(read_kafka_stream(spark, options), schema_json("tweet"), registry=None)
    if args.time_mode == "event":  # a tweet from a bad clock must not move the watermark
        skew = ClockSkew(parse_optional_duration_ms(args.max_future_skew))
        skewed = skew_reason(F.unix_millis("record.created_at"), batch_clock_ms(), skew)
        decoded = decoded.withColumn("reason", F.coalesce("reason", skewed))
    tweets = decoded.where("reason IS NULL").select(
        "record.id", "record.user", "record.text", "record.created_at", "partition", "offset"
    )
    events = apply_window(
        tweets,
        load_spec(args.spec),
        key="user",
        time_column="created_at" if args.time_mode == "event" else None,
        time_mode=args.time_mode,
        watermark=args.watermark if args.time_mode == "event" else None,
        order_by=["partition", "offset"],
        kinds=args.kinds.split(",") if args.kinds else None,
        include_window=args.include_window,
    )
    published = events.select(
        F.lit(args.output_topic).alias("topic"),
        F.col("user").cast("binary").alias("key"),
        F.to_json(F.struct("*")).cast("binary").alias("value"),
    )
    dead = decoded.where("reason IS NOT NULL").select(
        F.lit(args.dead_letter_topic).alias("topic"),
        F.col("key"),
        to_avro(dead_letter(), schema_json("dead_letter")).alias("value"),
    )
    settings = JobSettings(
        bootstrap,
        checkpoint,
        available_now=args.available_now,
        kafka_step_timeout_s=args.kafka_step_timeout / 1000,
    )
    query, processor = publish_exactly_once(published.unionByName(dead), settings, "spl-window")
    print(f"windows of {args.topic} -> {args.output_topic} (checkpoint {checkpoint})", flush=True)
    try:
        failure = serve(query, processor, settings)
    finally:
        query.stop()
        processor.close()
        spark.stop()
    if failure is not None:
        raise UserError(failure)
    return 0


if __name__ == "__main__":
    sys.exit(main())
