"""A schema registry that fails, and writer schemas no value should be read with.

The rule (docs/configuration.md, "Values are Avro"): the registry's "not found" (HTTP 404, error
code 40403) is an answer about a value's id: the value is a dead letter, and the id is asked for
once per executor JVM and ``spark.trending.registry.missingIdTtl``. Anything else (no connection, a
timeout, a 5xx, a 401, a 404 that is not the registry's) is the registry failing: no value is a dead
letter for it; the task waits for the registry (``spark.trending.registry.maxWait``), then
fails, and Spark runs it again. A writer schema that is recursive, nests too deep, expands to too
many types or has arrays of items that take no bytes makes its values dead letters, and the
other values go on.

The registry is the test one of :mod:`tests.support.registry` (no registry server installs
here); values are built byte by byte as in :mod:`tests.integration.test_avro_check`.
"""

from __future__ import annotations

import json
import random
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
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
        before = failed_requests()
        assert reasons(spark, [header(own) + tweet()], access(running.url)) == [None]
    assert failed_requests() - before == running.state.failed >= 1
    text = generate_latest(Metrics("hashtags").registry).decode()
    line = f"trending_schema_registry_failed_requests_total {failed_requests()}"
    assert line in text.splitlines()


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


# --- the hashtags job, end to end (real broker, real Spark, the job's own process) ----------

PASSWORD = "reg-Pa55-word"


def run_hashtags(
    bootstrap: str, registry_url: str, values: list[bytes], checkpoint: Path, *extra: str
) -> tuple[str, str]:
    """Values on a fresh topic, the hashtags job over them (batches of 300): its output (the
    JVM logs to stdout), the topics' tag."""
    from connectors.kafka import ensure_topics, producer
    from tests.support.hashtags import hashtags_command
    from tests.support.spark_cluster import cluster_env

    tag = uuid.uuid4().hex[:8]
    ensure_topics(bootstrap, [f"tweets-{tag}"], partitions=1)
    sink = producer(bootstrap)
    sink.produce_many(f"tweets-{tag}", ((b"k", v) for v in values))  # type: ignore[misc]
    sink.flush(30)
    command = hashtags_command(
        bootstrap, tag, checkpoint, "--available-now", "--max-offsets-per-trigger", "300",
        "--schema-registry-url", registry_url, *extra,
    )  # fmt: skip
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=600, env=cluster_env(), check=False
    )
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    return done.stdout + done.stderr, tag


def published(bootstrap: str, tag: str, registry_url: str) -> tuple[dict[int, Any], dict[int, str]]:
    """The finals the job published (each window's once), and its dead letters' reasons."""
    from connectors.avro import AvroCodec
    from tests.support.hashtags import finals_of
    from tests.support.kafka import read_all

    topk = AvroCodec("trending_topk", registry_url)
    records = [topk.decode(r.value) for r in read_all(bootstrap, f"trending-{tag}")]
    finals = [r["window_start"] for r in records if r["is_final"]]
    assert len(finals) == len(set(finals))  # no window final twice
    letters = AvroCodec("dead_letter", registry_url)
    dead = [letters.decode(r.value) for r in read_all(bootstrap, f"dlq-{tag}")]
    return finals_of(records), {d["offset"]: d["reason"] for d in dead}


@pytest.mark.parametrize(
    ("status", "seconds", "extra"),
    [(503, 20.0, ()), (401, 8.0, ("--conf", f"{MAX_WAIT}=3s"))],
    ids=["503 for 20 s, waited for within the task", "401 for 8 s, the task run again"],
)
def test_the_job_waits_for_a_registry_that_fails_mid_run(
    kafka_bootstrap: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    status: int,
    seconds: float,
    extra: tuple[str, ...],
) -> None:
    """The second half of the input is written with an evolved schema; the registry fails from
    the moment the job first asks for it (a 401 with the job's right password: its credentials
    were rotated there and back). The job goes on: every window final exactly as from the
    tweets, once, and no dead letter."""
    from connectors.avro import AvroCodec
    from tests.integration.test_registry_jobs import EVOLVED, wire
    from tests.support.hashtags import independent_finals, random_tweets

    monkeypatch.setenv("TRENDING_SCHEMA_REGISTRY_BASIC_AUTH_USER_INFO", f"jobs:{PASSWORD}")
    with schema_registry(users={"jobs": PASSWORD}) as running:
        tweets = random_tweets(random.Random(31), 1_200, ["spark", "kafka", "avro"], 9, 800)
        own = AvroCodec("tweet", running.url, subject="tweets-value")  # registers over HTTP
        evolved = running.state.add("tweets-value", json.dumps(EVOLVED))
        values = [own.encode(t) for t in tweets[:600]]
        values += [wire(evolved, EVOLVED, {**t, "client": "app"}) for t in tweets[600:]]
        running.state.fail_when_asked(evolved, seconds, status)
        log, tag = run_hashtags(kafka_bootstrap, running.url, values, tmp_path / "cp", *extra)
        finals, dead = published(kafka_bootstrap, tag, running.url)
    assert running.state.failed >= 2
    assert f"schema registry failing for schema id {evolved}" in log
    if extra:  # tasks gave up after 3 s, and Spark ran them again
        assert f"did not answer for schema id {evolved} within 3" in log
    assert PASSWORD not in log
    assert dead == {}
    assert finals == independent_finals(tweets, 120_000, 30_000, 0)


def test_the_job_dead_letters_bad_writers_and_goes_on(kafka_bootstrap: str, tmp_path: Path) -> None:
    """Among good tweets: values naming an id the registry does not know (in every batch) and
    values of a recursive writer schema, one of them 20,000 replies deep. Those are dead letters
    with their reasons, the job counts every other tweet, and the unknown id was asked for once
    (one JVM, a TTL longer than the run)."""
    from connectors.avro import AvroCodec
    from tests.support.hashtags import independent_finals, random_tweets

    with schema_registry() as running:
        tweets = random_tweets(random.Random(37), 900, ["spark", "kafka", "avro"], 9, 800)
        own = AvroCodec("tweet", running.url, subject="tweets-value")
        recursive = running.state.add("tweets-value", json.dumps(RECURSIVE))
        bogus = recursive + 1_000
        values: list[bytes] = []
        dead: dict[int, str] = {}
        recursion = f"schema id {recursive} is recursive (trending.Tweet contains itself)"
        for i, t in enumerate(tweets):
            values.append(own.encode(t))
            if i % 50 == 3:
                dead[len(values)] = f"unknown schema id {bogus}"
                values.append(header(bogus) + values[-1][5:])
            if i % 300 == 7:
                dead[len(values)] = recursion
                replies = 20_000 if i == 7 else 0
                values.append(header(recursive) + (SHORT + b"\x02") * replies + SHORT + b"\x00")
        _, tag = run_hashtags(
            kafka_bootstrap, running.url, values, tmp_path / "cp", "--conf", f"{TTL}=10min"
        )
        finals, letters = published(kafka_bootstrap, tag, running.url)
    assert letters == dead
    assert finals == independent_finals(tweets, 120_000, 30_000, 0)
    assert running.state.lookups(bogus) == 1
