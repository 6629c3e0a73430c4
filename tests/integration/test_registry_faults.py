"""A schema registry that fails, and writer schemas no value should be read with.

The rule (README, "Values are Avro"): the registry's "not found" (HTTP 404, error code 40403) is
an answer about a value's id: the value is a dead letter, and the id is asked for once per
executor JVM and ``spark.trending.registry.missingIdTtl``. Anything else (no connection, a
timeout, a 5xx, a 401, a 404 that is not the registry's) is the registry failing: no value is a
dead letter for it; the task waits for the registry (``spark.trending.registry.maxWait``), then
fails, and Spark runs it again. A writer schema that is recursive, nests too deep, expands to too
many types or has arrays of items that take no bytes makes its values dead letters, and the
other values go on.

The registry is the test one of :mod:`tests.support.registry` (no registry server installs
here); values are built byte by byte as in :mod:`tests.integration.test_avro_check`.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from connectors.avro import schema_json
from tests.integration.test_avro_check import header, string, tweet, zigzag
from tests.support.registry import SLOW, RegistryState, schema_registry

pytestmark = pytest.mark.integration

TTL = "spark.trending.registry.missingIdTtl"
MAX_WAIT = "spark.trending.registry.maxWait"
READER = {"basic.auth.user.info": "reader:pw"}


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    from trending.spark.session import build_session

    # one attempt per task: a task that gives up fails the query at once
    session = build_session("tests-registry-faults", "local[2,1]", shuffle_partitions=2)
    yield session
    session.stop()


def access(url: str, **settings: Any) -> Any:
    from connectors.kafka_settings import SchemaRegistryAccess

    return SchemaRegistryAccess(url, {"timeout": "1", **settings})


def reasons(spark: Any, values: list[bytes], registry: Any, tasks: int = 1) -> list[str | None]:
    """The reason of each value decoded as a tweet (None: decoded), in ``tasks`` tasks."""
    from connectors.spark_kafka import decode_avro

    rows = spark.sparkContext.parallelize([(i, v) for i, v in enumerate(values)], tasks)
    df = rows.toDF("i BIGINT, value BINARY")
    out = decode_avro(df, schema_json("tweet"), registry).select("i", "reason").collect()
    return [row["reason"] for row in sorted(out, key=lambda row: row["i"])]


def failed_requests() -> float:
    from trending.metrics import executor_registry_failures

    return executor_registry_failures() or 0.0


@pytest.mark.parametrize("status", [503, 500, 401, SLOW])
def test_a_registry_that_fails_for_a_while_is_waited_for(spark: Any, status: int) -> None:
    """The registry fails from the first request on, for 3 s: every value decodes, none is a
    dead letter, and each failed request is counted in the metric."""
    with schema_registry(users={"reader": "pw"}) as running:
        own = running.state.add("tweets-value", schema_json("tweet"))
        running.state.fail_when_asked(own, 3.0, status)
        before = failed_requests()
        got = reasons(spark, [header(own) + tweet()] * 4, access(running.url, **READER), tasks=2)
        assert got == [None] * 4
        assert running.state.failed >= 2  # it did fail, more than once
        counted = failed_requests() - before
        if status == SLOW:  # a request the registry held may still be answered in time
            assert 2 <= counted <= running.state.failed
        else:
            assert counted == running.state.failed


def test_the_metric_shows_the_failed_requests(spark: Any) -> None:
    from prometheus_client import generate_latest

    from trending.metrics import Metrics

    with schema_registry() as running:
        own = running.state.add("tweets-value", schema_json("tweet"))
        running.state.fail_when_asked(own, 1.0)
        assert reasons(spark, [header(own) + tweet()], access(running.url)) == [None]
    text = generate_latest(Metrics("hashtags").registry).decode()
    line = f"trending_schema_registry_failed_requests_total {failed_requests()}"
    assert running.state.failed >= 1 and line in text.splitlines()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def test_a_registry_that_is_down_is_waited_for(spark: Any) -> None:
    """Nothing listens at the registry's address for 3 s (connections refused), then it
    starts: the value decodes."""
    state, port = RegistryState(), free_port()
    own = state.add("tweets-value", schema_json("tweet"))
    up, stop = threading.Event(), threading.Event()

    def serve_later() -> None:
        time.sleep(3)
        with schema_registry(port=port, state=state):
            up.set()
            stop.wait()

    thread = threading.Thread(target=serve_later, daemon=True)
    thread.start()
    before = failed_requests()
    try:
        got = reasons(spark, [header(own) + tweet()], access(f"http://127.0.0.1:{port}"))
    finally:
        stop.set()
        thread.join()
    assert got == [None] and up.is_set()
    assert failed_requests() - before >= 2


def test_a_task_gives_up_after_the_longest_wait(spark: Any) -> None:
    """A registry down for good: the task fails after ``maxWait`` (2 s), saying why; no value
    became a dead letter."""
    spark.conf.set(MAX_WAIT, "2s")
    try:
        with schema_registry() as running:
            own = running.state.add("tweets-value", schema_json("tweet"))
            running.state.down = True
            started = time.monotonic()
            with pytest.raises(Exception, match=f"did not answer for schema id {own} within 2"):
                reasons(spark, [header(own) + tweet()], access(running.url))
            assert 2 <= time.monotonic() - started < 30
            assert running.state.failed >= 2
    finally:
        spark.conf.unset(MAX_WAIT)


def test_a_404_that_is_not_the_registrys_is_no_dead_letter(spark: Any) -> None:
    """A URL whose path is not the registry's API: 404 without error code 40403 (here Jersey's
    ``{"error_code": 404}``) is the registry failing, not an unknown id."""
    with schema_registry() as running:
        own = running.state.add("tweets-value", schema_json("tweet"))
        wrong = access(running.url + "/not-the-api", **{"max.retries": "1"})
        with pytest.raises(Exception, match="HTTP 404 without error code 40403"):
            reasons(spark, [header(own) + tweet()], wrong)


def test_an_unknown_id_is_asked_for_once_per_jvm_within_its_ttl(spark: Any) -> None:
    """Forty values of an id the registry does not know, in four tasks of two queries: dead
    letters, one request. With a TTL of 2 s, the id registered meanwhile is read once the TTL
    is over, and not before."""
    with schema_registry() as running:
        state = running.state
        own = state.add("tweets-value", schema_json("tweet"))
        later = own + 1  # the id the registry gives the next schema
        values, unknown = [header(later) + tweet()] * 40, f"unknown schema id {later}"
        for _ in range(2):
            assert reasons(spark, values, access(running.url), tasks=4) == [unknown] * 40
        assert state.lookups(later) == 1
        spark.conf.set(TTL, "2s")
        try:
            one = values[:1]
            assert reasons(spark, one, access(running.url)) == [unknown]
            asked = time.monotonic()
            assert state.add("later-value", json.dumps(EVOLVED_LATER)) == later
            assert reasons(spark, one, access(running.url)) == [unknown]
            assert state.lookups(later) == 2
            time.sleep(max(0.0, asked + 2.2 - time.monotonic()))
            assert reasons(spark, one, access(running.url)) == [None]
            assert state.lookups(later) == 3
        finally:
            spark.conf.unset(TTL)


EVOLVED_LATER = {**json.loads(schema_json("tweet")), "doc": "registered later"}

# --- writer schemas no value should be read with ------------------------------------------

TWEET_FIELDS: list[Any] = json.loads(schema_json("tweet"))["fields"]


def writer(*extra: Any) -> dict[str, Any]:
    """The tweet schema with ``extra`` fields after its own (the reader skips them)."""
    return {
        "type": "record", "name": "Tweet", "namespace": "trending",
        "fields": [*TWEET_FIELDS, *extra],
    }  # fmt: skip


def optional(name: str, schema: Any) -> dict[str, Any]:
    return {"name": name, "type": ["null", schema], "default": None}


def chained(prefix: str, count: int, fields: Any) -> list[dict[str, Any]]:
    """Fields ``<prefix>0..`` of records ``<P>0..``, each record's fields ``fields(previous
    record's name)``: named types defined once and used at every level below."""
    kind = prefix.upper()
    out = [optional(f"{prefix}0", {"type": "record", "name": f"{kind}0", "fields": fields(None)})]
    for i in range(1, count):
        record = {"type": "record", "name": f"{kind}{i}", "fields": fields(f"{kind}{i - 1}")}
        out.append(optional(f"{prefix}{i}", record))
    return out


SHORT = tweet(b"", created=0)  # 6 bytes
RECURSIVE = writer(optional("reply_to", "Tweet"))
LOOP = writer(
    {"name": "loop", "type": {"type": "record", "name": "Loop",
                              "fields": [{"name": "again", "type": "Loop"}]}}
)  # fmt: skip
DEEP = writer(*chained("d", 300, lambda below: [{"name": "x", "type": below or "int"}]))
WIDE = writer(
    *chained(
        "w", 40,
        lambda below: [{"name": "x", "type": "null"}] if below is None
        else [{"name": "l", "type": below}, {"name": "r", "type": below}],
    )
)  # fmt: skip
NULL_GRID = writer(
    {"name": "grid", "type": {"type": "array", "items": {"type": "array", "items": "null"}}},
    {"name": "pad", "type": "bytes"},
)
GRID_ROWS, GRID_COLUMNS = 10_000, 50_000  # a 40 kB value that holds 500 million nulls
CASES = [
    ("recursive, 20,000 replies deep", RECURSIVE, (SHORT + b"\x02") * 20_000 + SHORT + b"\x00",
     "is recursive (trending.Tweet contains itself)"),
    ("recursive, no reply", RECURSIVE, tweet() + b"\x00",
     "is recursive (trending.Tweet contains itself)"),
    ("recursive without bytes", LOOP, tweet(), "is recursive (trending.Loop contains itself)"),
    ("300 levels, named types chained", DEEP,
     tweet() + b"\x00" * 299 + b"\x02" + zigzag(5), "nests deeper than 64 levels"),
    ("2^39 types under one field", WIDE, tweet() + b"\x00" * 39 + b"\x02",
     "has more than 100000 types once its named types are expanded"),
    ("arrays of nulls", NULL_GRID,
     tweet() + (zigzag(GRID_ROWS) + (zigzag(GRID_COLUMNS) + b"\x00") * GRID_ROWS + b"\x00")
     + string(b"\x00" * 60_000), "has an array whose items take no bytes"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("schema", "value", "reason"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_a_pathological_writer_schema_makes_dead_letters(
    spark: Any, schema: dict[str, Any], value: bytes, reason: str
) -> None:
    """The value of the pathological writer is a dead letter naming the schema's shape; a value
    of the job's own schema beside it decodes."""
    with schema_registry() as running:
        own = running.state.add("tweets-value", schema_json("tweet"))
        bad = running.state.add("odd-value", json.dumps(schema))
        values = [header(bad) + value, header(own) + tweet()]
        assert reasons(spark, values, access(running.url)) == [f"schema id {bad} {reason}", None]
