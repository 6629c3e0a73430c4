"""``trending broker``: run a single-node Kafka broker from the jars until Ctrl-C or SIGTERM."""

from __future__ import annotations

import argparse
import signal
import sys
import time
from pathlib import Path
from types import FrameType

from connectors.broker import DEFAULT_DATA_DIR, DEFAULT_PORT, BrokerError, LocalBroker
from trending import arg_types
from trending.commands import writable_dir


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "broker",
        help="run a local single-node Kafka broker (Apache Kafka 4.1.1, KRaft)",
        description=(
            "Run Apache Kafka 4.1.1 (KRaft, broker and controller in one JVM) from the jars that "
            "make jars fetches. Prints the bootstrap address on stdout once a client gets "
            "metadata; logs go to DIR/logs/server.log. Ctrl-C or SIGTERM stops it cleanly."
        ),
    )
    parser.add_argument("--port", type=arg_types.port, default=DEFAULT_PORT, help="client port")
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=DEFAULT_DATA_DIR,
        metavar="DIR",
        help="topics, cluster id, config and logs; kept across restarts",
    )
    parser.add_argument(
        "--controller-port",
        type=arg_types.port,
        help="KRaft controller port (default: --port + 1, or a free port if that one is taken)",
    )
    parser.add_argument(
        "--timeout", type=arg_types.duration_s, default="90s", help="how long to wait for start-up"
    )
    parser.set_defaults(handler=run)


class _Stop(Exception):
    """Raised in the main thread by SIGTERM/SIGINT."""


def _raise_stop(signum: int, frame: FrameType | None) -> None:
    raise _Stop(signum)


def run(args: argparse.Namespace) -> int:
    writable_dir(args.data_dir, "--data-dir")
    broker = LocalBroker(args.port, args.data_dir, args.controller_port)
    previous = {sig: signal.signal(sig, _raise_stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    started = time.monotonic()
    try:
        broker.start()
        broker.wait_ready(args.timeout)
        print(broker.bootstrap, flush=True)
        print(
            f"kafka broker ready in {time.monotonic() - started:.1f} s "
            f"(data {broker.data_dir}, log {broker.log_file}); Ctrl-C stops it",
            file=sys.stderr,
            flush=True,
        )
        code = broker.wait()
        raise BrokerError(f"the Kafka broker exited (code {code})\n{broker.log_tail()}")
    except _Stop:
        _ignore_signals()
        print("stopping kafka broker ...", file=sys.stderr, flush=True)
        broker.stop()
        return 0
    finally:
        _ignore_signals()
        broker.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _ignore_signals() -> None:
    """A second Ctrl-C must not interrupt the clean shutdown."""
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, signal.SIG_IGN)
