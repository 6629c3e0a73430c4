"""``trending spark-args``: the ``spark-submit`` options and application file that run a job."""

from __future__ import annotations

import argparse
import shlex

from trending.spark import deps


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "spark-args",
        help="print the spark-submit options (--packages, --jars) and file that run trending",
        description=(
            "Print what spark-submit needs to run any trending command: Spark's Kafka and Avro "
            "connectors and twitter-text as --packages (for the installed Spark version; a "
            "folder of jars instead when $TRENDING_JARS_DIR is set), the project's jar as --jars, "
            "then the application file. Use it in place of an application: "
            "spark-submit --master spark://HOST:7077 $(trending spark-args) run hashtags ..."
        ),
    )
    parser.set_defaults(handler=_print)


def _print(_args: argparse.Namespace) -> int:
    print(shlex.join(deps.spark_args()))
    return 0
