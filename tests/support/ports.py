"""Listening on free ports without races: pick a port, and pick again if it was taken meanwhile.

A port found free by a probe can be taken by another process (another test worker, another
program) before the server binds it. Instead of trusting the probe, the server is started and,
when it fails because the address is in use, started again on new ports.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from connectors.broker import LocalBroker, free_port

__all__ = ["free_port", "is_bind_failure", "local_broker", "retry_on_bind"]

T = TypeVar("T")
ATTEMPTS = 5
IN_USE_SIGNS = ("already in use", "Address already in use", "BindException", "EADDRINUSE")


def is_bind_failure(error: BaseException) -> bool:
    """Whether ``error`` says a port was taken (Python's errno 98 or a JVM's BindException)."""
    return getattr(error, "errno", None) == 98 or any(s in str(error) for s in IN_USE_SIGNS)


def retry_on_bind(start: Callable[[], T], attempts: int = ATTEMPTS) -> T:
    """``start()``, called again (it picks new ports each call) while it fails on a taken port."""
    for attempt in range(1, attempts + 1):
        try:
            return start()
        except Exception as error:
            if attempt == attempts or not is_bind_failure(error):
                raise
    raise AssertionError("unreachable")


@contextmanager
def local_broker(data_dir: Path, **options: Any) -> Iterator[LocalBroker]:
    """A started, ready :class:`LocalBroker` on new free ports, stopped on exit."""

    def start() -> LocalBroker:
        return LocalBroker(
            free_port(), data_dir, controller_port=free_port(), **options
        ).__enter__()

    broker = retry_on_bind(start)
    try:
        yield broker
    finally:
        broker.stop()
