"""Waiting on Spark streaming queries in tests without the risk of waiting forever."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

QUERY_TIMEOUT = 180.0


def await_end(query: Any, timeout: float = QUERY_TIMEOUT) -> None:
    """Wait for a query that ends by itself (``availableNow``); a failed query raises its error.

    A query still running after ``timeout`` seconds is stopped and the test fails, naming it.
    """
    if not query.awaitTermination(timeout):
        query.stop()
        raise AssertionError(f"query {query.name or query.id} still running after {timeout:.0f} s")


# pytest-timeout's limit (seconds) for the few tests that start a job six times or a cluster;
# every other test has the suite's default (``timeout`` in pyproject.toml).
SLOW_TEST_TIMEOUT = 900


def poll_until(done: Callable[[], bool], timeout: float, failure: Callable[[], str]) -> None:
    """Poll ``done`` every 0.1 s until it holds; fail with ``failure()`` after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, failure()
        time.sleep(0.1)


def finish_or_refused(query: Any, refusal: Sequence[str] = ()) -> None:
    """Process what the started ``query`` has to read, then stop it. With ``refusal``, the query
    must fail instead: a ``StreamingQueryException`` whose message holds each of its parts (a
    restart on a checkpoint the query cannot continue)."""
    import pytest
    from pyspark.errors import StreamingQueryException

    try:
        if not refusal:
            query.processAllAvailable()
            return
        with pytest.raises(StreamingQueryException) as failure:
            query.processAllAvailable()
        message = str(failure.value)
        missing = [part for part in refusal if part not in message]
        assert not missing, (missing, message[-3000:])
    finally:
        query.stop()
