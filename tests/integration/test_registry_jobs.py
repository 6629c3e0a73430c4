"""Jobs reading the Confluent wire format with a schema registry over HTTP (basic auth).

The registry is the test one of :mod:`tests.support.registry` (no registry server installs
here). Producers wrote the input with two writer schemas: the job's own and an evolution of it
(fields reordered, one dropped, one added, an int the reader widens to long); other records name
an id the registry does not know, or a schema no tweet can be read from. The rule: every record
of a compatible writer counts exactly as if written with the job's schema, the others are dead
letters with their reason, and the registry's password appears nowhere in the job's log. The
sensors job reads its two topics in the wire format the same way.
"""

from __future__ import annotations

import io
import json
import random
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fastavro
import pytest

from connectors.avro import AvroCodec
from connectors.kafka import ensure_topics, producer
from tests.support.hashtags import finals_of, hashtags_command, independent_finals, random_tweets
from tests.support.jobs import run_to_end
from tests.support.kafka import read_all
from tests.support.registry import RunningRegistry, schema_registry

pytestmark = pytest.mark.integration

PASSWORD = "reg-Pa55-word"
EVOLVED = {
    "type": "record", "name": "Tweet", "namespace": "trending",
    "fields": [
        {"name": "created_at", "type": "long"},
        {"name": "text", "type": "string"},
        {"name": "id", "type": "int"},
        {"name": "user", "type": "string"},
        {"name": "client", "type": "string", "default": ""},
    ],
}  # fmt: skip
INCOMPATIBLE = {
    "type": "record", "name": "Tweet", "namespace": "trending",
    "fields": [{"name": "text", "type": "long"}],
}  # fmt: skip


@pytest.fixture()
def registry(monkeypatch: pytest.MonkeyPatch) -> Iterator[RunningRegistry]:
    """A registry that wants basic auth; the credentials reach clients via the environment."""
    monkeypatch.setenv("TRENDING_SCHEMA_REGISTRY_BASIC_AUTH_USER_INFO", f"jobs:{PASSWORD}")
    with schema_registry(users={"jobs": PASSWORD}) as running:
        yield running


def wire(schema_id: int, schema: dict[str, Any], record: dict[str, Any]) -> bytes:
    """Magic byte 0, the id in 4 big-endian bytes, the body (fastavro, the writer's schema)."""
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(schema), record)
    return b"\x00" + schema_id.to_bytes(4, "big") + out.getvalue()


def test_the_hashtags_job_reads_every_compatible_writer_schema(
    kafka_bootstrap: str, registry: RunningRegistry, tmp_path: Path
) -> None:
    rng = random.Random(29)
    tweets = random_tweets(rng, 1_500, ["spark", "kafka", "flink", "avro"], 9, 800)
    own = AvroCodec("tweet", registry.url, subject="tweets-value")  # registers over HTTP
    evolved_id = registry.state.add("tweets-value", json.dumps(EVOLVED))
    incompatible_id = registry.state.add("other-value", json.dumps(INCOMPATIBLE))
    unknown_id = max(evolved_id, incompatible_id, own.schema_id or 0) + 1_000
    values: list[bytes] = []
    dead: dict[int, str] = {}
    for i, tweet in enumerate(tweets):
        if i % 2:
            evolved = {**tweet, "client": "app"}
            values.append(wire(evolved_id, EVOLVED, evolved))
        else:
            values.append(own.encode(tweet))
        if i % 97 == 5:
            dead[len(values)] = f"unknown schema id {unknown_id}"
            values.append(b"\x00" + unknown_id.to_bytes(4, "big") + values[-1][5:])
        if i % 89 == 7:
            dead[len(values)] = (
                f"schema id {incompatible_id} is not compatible with the job's schema "
                "trending.Tweet"
            )
            values.append(wire(incompatible_id, INCOMPATIBLE, {"text": i}))
    tag = uuid.uuid4().hex[:8]
    ensure_topics(kafka_bootstrap, [f"tweets-{tag}"], partitions=1)
    sink = producer(kafka_bootstrap)
    sink.produce_many(f"tweets-{tag}", ((b"k", v) for v in values))  # type: ignore[misc]
    sink.flush(30)
    command = hashtags_command(
        kafka_bootstrap, tag, tmp_path / "checkpoint", "--available-now",
        "--max-offsets-per-trigger", "600", "--schema-registry-url", registry.url,
        "--warm-up-rows", "2000",  # the warm-up also reads a slice of the topic, by the registry
    )  # fmt: skip
    log = run_to_end(command)
    assert PASSWORD not in log
    letters = [
        AvroCodec("dead_letter", registry.url).decode(r.value)
        for r in read_all(kafka_bootstrap, f"dlq-{tag}")
    ]
    assert {letter["offset"]: letter["reason"] for letter in letters} == dead
    assert all(letter["value"] == values[letter["offset"]] for letter in letters)
    topk = AvroCodec("trending_topk", registry.url)
    finals = finals_of([topk.decode(x.value) for x in read_all(kafka_bootstrap, f"trending-{tag}")])
    assert finals == independent_finals(tweets, 120_000, 30_000, 0)
    # one lookup per writer schema the job met, not one per record
    assert registry.state.lookups(evolved_id) <= 2


def test_the_sensors_job_reads_the_wire_format_and_dead_letters_unknown_ids(
    kafka_bootstrap: str, registry: RunningRegistry, tmp_path: Path
) -> None:
    """Readings and queries in the wire format (registered over HTTP with basic auth), one value
    naming an id the registry does not know: the matches and popular readings equal the seed
    model's, and the unknown id is a dead letter."""
    from tests.integration.test_sensors_job import Job, make_events, oracle
    from trending.spark.session import build_session

    job = Job(kafka_bootstrap, tmp_path, registry_url=registry.url)
    events = make_events(500, 200, seed=23)
    unknown = b"\x00" + (99_999).to_bytes(4, "big") + b"\x00"
    job.produce(events, extra=(unknown,))
    spark = build_session("tests-registry-sensors", "local[2]", shuffle_partitions=2)
    try:
        job.run(spark, size=25, threshold=3, schema_registry_url=registry.url)
    finally:
        spark.stop()
    assert job.results() == oracle(events, 25, 3, False)
    letters = [
        AvroCodec("dead_letter", registry.url).decode(r.value)
        for r in read_all(kafka_bootstrap, job.topics["dlq"])
    ]
    assert [(d["reason"], d["value"]) for d in letters] == [("unknown schema id 99999", unknown)]
