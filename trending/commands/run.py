"""``trending run JOB``: start a streaming job."""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING, Any

from connectors.kafka import (
    add_kafka_arguments,
    kafka_from_args,
    parse_kafka_options,
)
from connectors.kafka_settings import spark_options
from connectors.transactions import TXN_STEP_TIMEOUT_S
from trending import arg_types
from trending.commands import (
    DefaultsHelpFormatter,
    OptionError,
    Renamed,
    checking_options,
    require_kafka,
)
from trending.jobs.batching import RECORDS_PER_TRIGGER_SECOND
from trending.jobs.common import DEFAULT_SHUTDOWN_TIMEOUT_S
from trending.jobs.hashtags import DEFAULT_WARM_UP_ROWS
from trending.lease import DEFAULT_TIMEOUT_S as DEFAULT_LEASE_TIMEOUT_S
from trending.metrics import add_metrics_arguments

if TYPE_CHECKING:
    from trending.jobs.runtime import Job
    from trending.text.bounds import TweetBounds


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    run = subparsers.add_parser(
        "run", help="run a streaming job", description="Run a streaming job."
    )
    jobs = run.add_subparsers(dest="job", metavar="JOB", required=True)
    _register_hashtags(jobs)
    _register_sensors(jobs)
    _register_windows(jobs)


# A duration (``500ms``, ``20s``, ``1m``) in milliseconds, for argparse
duration_arg = arg_types.duration_ms


def _add_clock_arguments(parser: argparse.ArgumentParser) -> None:
    clock = parser.add_argument_group(
        "event-time sanity",
        "an event time outside [clock - max past skew, clock + max future skew] (clock: the "
        "micro-batch's wall-clock time) is a dead letter and moves no watermark",
    )
    clock.add_argument(
        "--max-future-skew",
        type=arg_types.optional_duration_ms,
        default="1h",
        help="how far ahead of the clock an event time may be; none: no bound",
    )
    clock.add_argument(
        "--max-past-skew",
        type=arg_types.optional_duration_ms,
        default="none",
        help="how far behind the clock an event time may be; none: no bound",
    )


def _register_hashtags(jobs: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = jobs.add_parser(
        "hashtags",
        help="trending hashtags: top-k per sliding event-time window",
        description=(
            "Count hashtags over sliding event-time windows [a + n*hop, a + n*hop + size) and "
            "publish each window's top-k whenever it changes (at most once per micro-batch) and "
            "a final record when the watermark (max event time - lateness) passes the window's "
            "end. Late tweets go to the late topic, undecodable records to the dead-letter topic."
        ),
        formatter_class=DefaultsHelpFormatter,
    )
    window = parser.add_argument_group("windows")
    window.add_argument(
        "--size", type=arg_types.positive_duration_ms, default="5m", help="window size"
    )
    window.add_argument(
        "--hop", type=arg_types.positive_duration_ms, default="1m", help="window hop (slide)"
    )
    window.add_argument(
        "--align", type=arg_types.duration_ms, default="0s", help="window alignment a"
    )
    window.add_argument(
        "--top", type=arg_types.positive_int, default=10, help="k: hashtags per top-k record"
    )
    window.add_argument(
        "--lateness",
        type=arg_types.duration_ms,
        default="30s",
        help="allowed lateness behind max event time",
    )
    _add_trigger_arguments(parser, "close what the watermark allows")
    parser.add_argument(
        "--warm-up-rows",
        type=arg_types.count,
        default=DEFAULT_WARM_UP_ROWS,
        help="synthetic tweets run through the decoder, the hashtag function, the state store "
        "and the top-k candidates before the query starts (nothing is kept), so the first "
        "batch does not pay for JIT compilation; with --available-now at most the tweets the "
        "run has to read; 0: none",
    )
    _add_tweet_bounds(parser)
    topics = parser.add_argument_group("topics")
    topics.add_argument(
        "--input-topic", type=arg_types.topic, default="tweets", help="the tweets to read"
    )
    topics.add_argument(
        "--output-topic",
        type=arg_types.topic,
        default="trending-hashtags",
        help="each window's top-k records",
    )
    topics.add_argument(
        "--late-topic",
        type=arg_types.topic,
        default="tweets-late",
        help="tweets behind the watermark",
    )
    topics.add_argument(
        "--dead-letter-topic",
        type=arg_types.topic,
        default="tweets-dlq",
        help="undecodable or out-of-bounds records",
    )
    _add_spark_arguments(parser, topics, "checkpoints/hashtags")
    parser.set_defaults(handler=run_hashtags)


def _add_tweet_bounds(parser: argparse.ArgumentParser) -> None:
    from trending.text.bounds import TweetBounds

    bounds = parser.add_argument_group(
        "bounds", "a tweet beyond one is a dead letter whose reason names the flag"
    )
    default = TweetBounds()
    for flag, text in (
        ("--max-text-chars", "characters of a tweet's text"),
        ("--max-hashtags", "hashtags in one tweet"),
        ("--max-hashtag-chars", "characters of one hashtag, without its #"),
        (
            "--max-url-scan-steps",
            "regex steps per character that finding a text's URLs may take (the hashtag rule "
            "drops hashtags inside URLs; crafted text can make that scan super-linear)",
        ),
    ):
        name = flag[2:].replace("-", "_")
        bounds.add_argument(flag, type=arg_types.count, default=getattr(default, name), help=text)


def _register_sensors(jobs: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = jobs.add_parser(
        "sensors",
        help="sensor query matching: the last N readings, queries, popular readings",
        description=(
            "Keep a sliding window of the last N sensor readings (count eviction, one window or "
            "one per sensor), match every query against it (Euclidean distance <= the query's "
            "distance) and publish each match, and each reading that leaves the window matched "
            "at least --threshold times. Events are applied in event-time order (ts, readings "
            "before queries, partition, offset) once the watermark (max ts - lateness) passes "
            "them; events already behind it go to the late topic, undecodable ones to the "
            "dead-letter topic."
        ),
        formatter_class=DefaultsHelpFormatter,
    )
    window = parser.add_argument_group("window")
    window.add_argument(
        "--window-readings",
        type=arg_types.positive_int,
        default=100,
        help="the window holds the last N readings (with --partition-by sensor, each sensor's "
        "window its last N)",
    )
    window.add_argument(
        "--size", action=Renamed, now="--window-readings", what="a number of readings"
    )
    window.add_argument(
        "--threshold",
        type=arg_types.positive_int,
        default=3,
        help="matches that make an evicted reading popular",
    )
    window.add_argument(
        "--lateness",
        type=arg_types.duration_ms,
        default="5s",
        help="allowed lateness behind max event time",
    )
    window.add_argument(
        "--partition-by",
        choices=("none", "sensor"),
        default="none",
        help="sensor: one window per sensor, of its last --window-readings readings",
    )
    window.add_argument(
        "--cell-size",
        type=arg_types.positive_float,
        default=0.05,
        metavar="D",
        help="side of the grid cells that index the window; about the queries' typical distance",
    )
    window.add_argument(
        "--max-query-cells",
        type=arg_types.count,
        default=4_096,
        help="a query whose square covers more grid cells than this probes every cell that "
        "holds readings instead (the same matches; bounded work for any distance)",
    )
    _add_trigger_arguments(parser, "apply what the final watermark allows")
    topics = parser.add_argument_group("topics")
    topics.add_argument(
        "--readings-topic",
        type=arg_types.topic,
        default="sensor-readings",
        help="the sensor readings to read",
    )
    topics.add_argument(
        "--queries-topic",
        type=arg_types.topic,
        default="sensor-queries",
        help="the queries to read",
    )
    topics.add_argument(
        "--matches-topic",
        type=arg_types.topic,
        default="sensor-matches",
        help="one record per match of a query",
    )
    topics.add_argument(
        "--popular-topic",
        type=arg_types.topic,
        default="popular-readings",
        help="evicted readings matched at least --threshold times",
    )
    topics.add_argument(
        "--late-topic",
        type=arg_types.topic,
        default="sensor-late",
        help="readings and queries behind the watermark",
    )
    topics.add_argument(
        "--dead-letter-topic",
        type=arg_types.topic,
        default="sensor-dlq",
        help="undecodable records",
    )
    _add_spark_arguments(parser, topics, "checkpoints/sensors")
    parser.set_defaults(handler=run_sensors)


def _register_windows(jobs: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = jobs.add_parser(
        "windows",
        help="a temporal window spec (hopping, snapshot, count, alter) per key",
        description=(
            "Run a temporal window spec (the same JSON or YAML as trending windows replay: "
            "hopping, tumbling with a duration, snapshot, count, alter) per key over interval "
            "events, edges and CTIs, and publish each row once it is final. Every key's CTI is "
            "the watermark: max sync time (start; an end edge's end) - lateness, raised by CTI "
            "records. Events behind it go to the late topic, bad ones to the dead-letter topic."
        ),
        formatter_class=DefaultsHelpFormatter,
    )
    parser.add_argument(
        "spec",
        metavar="SPEC",
        help="the temporal window spec file, JSON (.json) or YAML, as trending windows replay "
        "takes it",
    )
    window = parser.add_argument_group("windows")
    window.add_argument(
        "--lateness",
        type=arg_types.duration_ms,
        default="5s",
        help="allowed lateness behind max sync time",
    )
    window.add_argument(
        "--keep-open",
        action="store_true",
        help="with --available-now: do not close the input with a CTI at the end of time",
    )
    _add_trigger_arguments(parser, "close the input (a CTI at the end of time)")
    topics = parser.add_argument_group("topics")
    topics.add_argument(
        "--input-topic",
        type=arg_types.topic,
        default="interval-events",
        help="the interval events, edges and CTIs to read",
    )
    topics.add_argument(
        "--output-topic",
        type=arg_types.topic,
        default="window-rows",
        help="the window rows, each once it is final",
    )
    topics.add_argument(
        "--late-topic",
        type=arg_types.topic,
        default="interval-events-late",
        help="events behind the watermark",
    )
    topics.add_argument(
        "--dead-letter-topic",
        type=arg_types.topic,
        default="interval-events-dlq",
        help="undecodable or invalid events",
    )
    _add_spark_arguments(parser, topics, "checkpoints/windows")
    parser.set_defaults(handler=run_windows)


def _add_trigger_arguments(parser: argparse.ArgumentParser, at_end: str) -> None:
    trig = parser.add_argument_group("triggers")
    trig.add_argument(
        "--trigger", type=arg_types.duration_ms, default="1s", help="processing-time trigger"
    )
    trig.add_argument(
        "--available-now",
        action="store_true",
        help=f"process what is in the topics, {at_end}, then exit",
    )
    trig.add_argument(
        "--idle-advance",
        type=arg_types.positive_duration_ms,
        default=None,
        help="when no input has arrived for this long (wall clock), advance the job's event time "
        "by the time that passed, so the last windows close and their finals are published; "
        "events that come later behind it are late (default: off; not with --available-now)",
    )
    trig.add_argument(
        "--max-offsets-per-trigger",
        type=arg_types.count,
        default=None,
        help="records per micro-batch at most, also when catching up on a backlog (default: "
        f"{RECORDS_PER_TRIGGER_SECOND} per second of --trigger, at least "
        f"{RECORDS_PER_TRIGGER_SECOND}; 0: no bound)",
    )
    trig.add_argument(
        "--starting-offsets",
        type=arg_types.starting_offsets,
        default="earliest",
        help=f"where a new checkpoint starts in each partition: {arg_types.STARTING_OFFSETS}",
    )


def _add_spark_arguments(
    parser: argparse.ArgumentParser, topics: argparse._ArgumentGroup, checkpoint: str
) -> None:
    """The output-topic, Kafka, Spark, event-time and metrics arguments every job takes."""
    _add_clock_arguments(parser)
    topics.add_argument(
        "--partitions", type=arg_types.positive_int, default=4, help="partitions of created topics"
    )
    topics.add_argument(
        "--schema-registry-url",
        default=None,
        help="use the Confluent wire format (default: $SCHEMA_REGISTRY_URL; none: plain Avro); "
        "the registry client's settings come from $TRENDING_SCHEMA_REGISTRY_<NAME> variables, "
        "e.g. $TRENDING_SCHEMA_REGISTRY_BASIC_AUTH_USER_INFO",
    )
    add_kafka_arguments(parser)
    spark = parser.add_argument_group("spark")
    spark.add_argument(
        "--master",
        type=arg_types.master,
        default=None,
        help="Spark master (default: $SPARK_MASTER, else the one spark-submit or "
        "spark-defaults.conf set, else local[*]); under spark-submit, spark-submit's own",
    )
    spark.add_argument(
        "--checkpoint",
        default=checkpoint,
        metavar="DIR",
        help="checkpoint location, any path Spark accepts (a folder, file://, hdfs://, s3a://): "
        "on a cluster, storage the driver and every executor reach; a new location starts a "
        "new job",
    )
    spark.add_argument(
        "--lease-timeout",
        type=arg_types.duration_ms,
        default=f"{DEFAULT_LEASE_TIMEOUT_S:g}s",
        help="one process per checkpoint: a job that finds the checkpoint's owner alive refuses "
        "to start; an owner gone from this host is taken over at once, one elsewhere after this "
        "long without its heartbeat",
    )
    spark.add_argument(
        "--shutdown-timeout",
        type=arg_types.duration_ms,
        default=f"{DEFAULT_SHUTDOWN_TIMEOUT_S:g}s",
        help="on SIGTERM or Ctrl-C the micro-batch in progress finishes and commits first, for "
        "this long at most (then it is cut short, and done again on the next start); a second "
        "signal stops at once",
    )
    spark.add_argument(
        "--kafka-step-timeout",
        type=arg_types.duration_ms,
        default=f"{TXN_STEP_TIMEOUT_S:g}s",
        help="how long one step of a batch's Kafka transaction (flush, offsets, commit) may "
        "take; then the producer is replaced and the batch sent again",
    )
    spark.add_argument(
        "--shuffle-partitions",
        type=arg_types.positive_int,
        default=None,
        help="spark.sql.shuffle.partitions: the state's partitions, fixed for the checkpoint's "
        "lifetime (default: the cluster's total executor cores)",
    )
    spark.add_argument(
        "--spark-kafka-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Kafka source option for Spark (repeatable); it wins over the security settings "
        "translated from the Kafka client settings, e.g. kafka.sasl.jaas.config=...",
    )
    spark.add_argument(
        "--conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Spark setting (repeatable); keep secrets (spark.hadoop.fs.s3a.secret.key, ...) "
        "off the command line: the conf table of the config file, a Hadoop credential provider",
    )
    add_metrics_arguments(parser)


def run_hashtags(args: argparse.Namespace) -> int:
    """Run the hashtags job until it ends (available-now), is stopped, or fails."""
    from trending.jobs.hashtags import HashtagJobConfig

    with checking_options():
        bootstrap, kafka_options = kafka_from_args(args)
        config = HashtagJobConfig(
            input_topic=args.input_topic,
            output_topic=args.output_topic,
            late_topic=args.late_topic,
            dead_letter_topic=args.dead_letter_topic,
            size_ms=args.size,
            hop_ms=args.hop,
            align_ms=args.align,
            k=args.top,
            lateness_ms=args.lateness,
            warm_up_rows=args.warm_up_rows,
            bounds=_tweet_bounds(args),
            **_job_settings(args, bootstrap, kafka_options),
        )
        _ = config.windows  # a hop longer than the size, ...
    _wait_for_kafka(bootstrap, kafka_options)
    from trending.jobs.hashtags import HASHTAGS

    return run_job(HASHTAGS, config, args)


def run_sensors(args: argparse.Namespace) -> int:
    """Run the sensor job until it ends (available-now), is stopped, or fails."""
    from trending.jobs.sensors import SensorJobConfig

    with checking_options():
        bootstrap, kafka_options = kafka_from_args(args)
        config = SensorJobConfig(
            readings_topic=args.readings_topic,
            queries_topic=args.queries_topic,
            matches_topic=args.matches_topic,
            popular_topic=args.popular_topic,
            late_topic=args.late_topic,
            dead_letter_topic=args.dead_letter_topic,
            size=args.window_readings,
            threshold=args.threshold,
            lateness_ms=args.lateness,
            partition_by_sensor=args.partition_by == "sensor",
            cell_size=args.cell_size,
            max_query_cells=args.max_query_cells,
            **_job_settings(args, bootstrap, kafka_options),
        )
        config.validate()
    _wait_for_kafka(bootstrap, kafka_options)
    from trending.jobs.sensors import SENSORS

    return run_job(SENSORS, config, args)


def run_windows(args: argparse.Namespace) -> int:
    """Run the temporal window job until it ends (available-now), is stopped, or fails."""
    from trending.commands.windows import load_spec
    from trending.jobs.windows import WindowsJobConfig
    from trending.windows.replay import ReplayError

    try:
        spec = load_spec(args.spec)
    except ReplayError as error:
        raise OptionError(str(error)) from error
    if not isinstance(spec, dict):
        raise OptionError(f"spec {args.spec} is not a mapping")
    with checking_options():
        bootstrap, kafka_options = kafka_from_args(args)
        config = WindowsJobConfig(
            spec=spec,
            input_topic=args.input_topic,
            output_topic=args.output_topic,
            late_topic=args.late_topic,
            dead_letter_topic=args.dead_letter_topic,
            lateness_ms=args.lateness,
            keep_open=args.keep_open,
            **_job_settings(args, bootstrap, kafka_options),
        )
        config.validate()
    _wait_for_kafka(bootstrap, kafka_options)
    from trending.jobs.windows import WINDOWS

    return run_job(WINDOWS, config, args)


def _job_settings(
    args: argparse.Namespace, bootstrap: str, kafka_options: dict[str, str]
) -> dict[str, Any]:
    """The :class:`trending.jobs.common.JobSettings` fields, from the shared arguments."""
    registry = args.schema_registry_url or os.environ.get("SCHEMA_REGISTRY_URL")
    if args.idle_advance is not None and args.available_now:
        raise OptionError(
            "--idle-advance moves event time on while a running job waits for input; "
            "--available-now ends when the input does: give one of them"
        )
    return {
        "bootstrap": bootstrap,
        "checkpoint": args.checkpoint,
        "trigger_ms": args.trigger,
        "available_now": args.available_now,
        "master": args.master,
        "starting_offsets": args.starting_offsets,
        "max_offsets_per_trigger": args.max_offsets_per_trigger,
        "shuffle_partitions": args.shuffle_partitions,
        "schema_registry_url": registry,
        "topic_partitions": args.partitions,
        "spark_kafka_options": spark_options(
            kafka_options, parse_kafka_options(args.spark_kafka_option, "--spark-kafka-option")
        ),
        "kafka_options": kafka_options,
        "spark_conf": parse_kafka_options(args.conf, "--conf"),
        "max_future_skew_ms": args.max_future_skew,
        "max_past_skew_ms": args.max_past_skew,
        "lease_timeout_s": args.lease_timeout / 1000,
        "shutdown_timeout_s": args.shutdown_timeout / 1000,
        "kafka_step_timeout_s": args.kafka_step_timeout / 1000,
        "idle_advance_ms": args.idle_advance,
    }


def _wait_for_kafka(bootstrap: str, kafka_options: dict[str, str]) -> None:
    require_kafka(bootstrap, kafka_options)


def _tweet_bounds(args: argparse.Namespace) -> TweetBounds:
    from trending.text.bounds import TweetBounds

    with checking_options():
        return TweetBounds(
            args.max_text_chars, args.max_hashtags, args.max_hashtag_chars,
            args.max_url_scan_steps,
        )  # fmt: skip


def run_job(job: Job[Any], config: Any, args: argparse.Namespace) -> int:
    """Run ``job`` with ``config`` under the shared life cycle (:func:`trending.jobs.runtime.run`),
    its metrics on ``--metrics-host``/``--metrics-port``."""
    from trending.jobs.runtime import run

    return run(job, config, (args.metrics_host, args.metrics_port))
