"""`trending produce` and `trending consume` through a real broker (the session's)."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from connectors.avro import AvroCodec
from connectors.jvm import REPO_ROOT
from connectors.kafka import DeliveryError, ensure_topics, partition_count, producer
from tests.support.kafka import read_all
from trending.generate import generate_tweets, produce_tweets

pytestmark = pytest.mark.integration
START = 1_700_000_000_000
Topic = Callable[[str], str]


def trending(bootstrap: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run ``trending ARGS --bootstrap-servers B`` (only the command modules that import yet)."""
    command = [sys.executable, "-m", "trending.cli", *args, "--bootstrap-servers", bootstrap]
    return subprocess.run(
        command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=timeout, check=False
    )


def consume_json(bootstrap: str, topic: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return trending(
        bootstrap, "consume", topic, "--from-beginning", "--json", "--idle-timeout", "3", *extra
    )


def test_tweets_round_trip_through_the_cli_unchanged(
    kafka_bootstrap: str, unique_topic: Topic, tmp_path: Path
) -> None:
    """Tweets written by the test (any script, emoji, quotes, newlines, empty text, lang set or
    not) go through ``produce --from-jsonl`` into 3 partitions and come back from ``consume
    --json`` field for field."""
    rng = random.Random(9)
    alphabet = ["a", "Z", " ", "#", "é", "中文", "🙂", "\u200d", "\n", '"', "\\", "#tag"]
    tweets = [
        {"id": i, "user": f"user{rng.randint(0, 50)}",
         "text": "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30))),
         "created_at": START + rng.randint(-5_000, 5_000_000),
         "lang": rng.choice([None, "en", "ja"])}
        for i in range(1, 2_001)
    ]  # fmt: skip
    source = tmp_path / "tweets.jsonl"
    source.write_text("".join(json.dumps(t) + "\n" for t in tweets), encoding="utf-8")
    topic = unique_topic("tweets")
    produced = trending(
        kafka_bootstrap, "produce", "tweets", "--topic", topic, "--from-jsonl", str(source),
        "--partitions", "3",
    )  # fmt: skip
    assert produced.returncode == 0, produced.stderr
    assert f"produced 2000 tweets to {topic}" in produced.stdout
    assert partition_count(kafka_bootstrap, topic) == 3
    consumed = consume_json(kafka_bootstrap, topic)
    assert consumed.returncode == 0, consumed.stderr
    records = [json.loads(line) for line in consumed.stdout.splitlines()]
    assert sorted(records, key=lambda r: r["id"]) == tweets


def test_generated_tweets_follow_their_flags_and_seed(
    kafka_bootstrap: str, unique_topic: Topic
) -> None:
    """``produce tweets --count N --seed S --start-ms T --jitter J``: N tweets with ids 1..N, the
    i-th (from 0) at T + floor(i * 1000 / 1000 events/s) minus at most J, each with text and
    user; the same flags give the same tweets again, another seed others."""
    runs = {}
    for name, seed in (("first", "9"), ("again", "9"), ("other", "10")):
        topic = unique_topic("tweets")
        produced = trending(
            kafka_bootstrap, "produce", "tweets", "--topic", topic, "--count", "3000",
            "--seed", seed, "--start-ms", str(START), "--jitter", "5s", "--partitions", "3",
        )  # fmt: skip
        assert produced.returncode == 0, produced.stderr
        consumed = consume_json(kafka_bootstrap, topic)
        runs[name] = sorted(
            (json.loads(line) for line in consumed.stdout.splitlines()), key=lambda r: r["id"]
        )
    first = runs["first"]
    assert [r["id"] for r in first] == list(range(1, 3_001))
    for i, record in enumerate(first):
        base = START + i  # 1,000 events/s: one per ms
        assert base - 5_000 <= record["created_at"] <= base, record
        assert record["text"] and record["user"]
    assert runs["again"] == first
    assert runs["other"] != first


def test_jsonl_replay_skips_and_reports_bad_lines(
    kafka_bootstrap: str, unique_topic: Topic, tmp_path: Path
) -> None:
    topic = unique_topic("tweets")
    source = tmp_path / "tweets.jsonl"
    good = [
        {"id": 1, "user": "a", "text": "#Café", "created_at": "2018-10-10T20:19:24Z"},
        {"id": 2, "user": "b", "text": "x", "created_at": "Wed Oct 10 20:19:24 +0000 2018"},
        {"id": 3, "user": "c", "text": "y", "created_at": 1_539_202_764_000, "lang": "en"},
    ]
    lines = [json.dumps(good[0]), "{oops", json.dumps(good[1]), '{"id": 4}', json.dumps(good[2])]
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    produced = trending(
        kafka_bootstrap, "produce", "tweets", "--topic", topic, "--from-jsonl", str(source)
    )
    assert produced.returncode == 0, produced.stderr
    assert "line 2: skipped: not JSON" in produced.stderr
    assert "line 4: skipped: missing user, text, created_at" in produced.stderr
    assert "produced 3 tweets" in produced.stdout and "skipped 2 bad lines" in produced.stdout
    records = [
        json.loads(line) for line in consume_json(kafka_bootstrap, topic).stdout.splitlines()
    ]
    assert {r["id"]: r["created_at"] for r in records} == {n: 1_539_202_764_000 for n in (1, 2, 3)}


def test_consume_reports_undecodable_records_and_goes_on(
    kafka_bootstrap: str, unique_topic: Topic
) -> None:
    topic = unique_topic("tweets")
    ensure_topics(kafka_bootstrap, [topic], partitions=1)
    tweet = next(generate_tweets(1, 1, start_ms=START))
    sink = producer(kafka_bootstrap)
    for value in (b"\x01garbage", AvroCodec("tweet").encode(tweet)):
        sink.produce(topic, value, partition=0)
    sink.flush()
    consumed = consume_json(kafka_bootstrap, topic)
    assert consumed.returncode == 0
    assert [json.loads(line) for line in consumed.stdout.splitlines()] == [tweet]
    assert "undecodable record at partition 0 offset 0:" in consumed.stderr


def test_consume_decodes_dead_letters_and_readable_lines(
    kafka_bootstrap: str, unique_topic: Topic
) -> None:
    topic = unique_topic("tweets") + "-dlq"
    ensure_topics(kafka_bootstrap, [topic], partitions=1)
    letter = {
        "topic": "tweets", "partition": 1, "offset": 7, "key": None, "value": b"\xff",
        "reason": "bad avro", "failed_at": START, "value_size": None,
        "timestamp": START - 5_000, "headers": [{"key": "trace", "value": b"\x01"}],
    }  # fmt: skip
    sink = producer(kafka_bootstrap)
    sink.produce(topic, AvroCodec("dead_letter").encode(letter))
    sink.flush()
    as_json = consume_json(kafka_bootstrap, topic, "--max-records", "1")
    assert json.loads(as_json.stdout) == {
        **letter, "value": "/w==", "headers": [{"key": "trace", "value": "AQ=="}]
    }  # fmt: skip
    readable = trending(kafka_bootstrap, "consume", topic, "--from-beginning", "--max-records", "1")
    assert readable.stdout.strip() == "[0:0] 2023-11-14T22:13:20.000Z tweets[1]@7: bad avro"


def test_wire_format_round_trip_with_mock_registry(
    kafka_bootstrap: str, unique_topic: Topic
) -> None:
    """Mock registry: confluent-kafka's in-process ``mock://`` registry, shared in this process."""
    topic, url = unique_topic("tweets"), "mock://produce-consume"
    expected = list(generate_tweets(2, 300, start_ms=START))
    count = produce_tweets(
        kafka_bootstrap, topic, generate_tweets(2, 300, start_ms=START), registry_url=url
    )
    assert count == 300
    codec = AvroCodec("tweet", url, subject=f"{topic}-value")
    values = [r.value for r in read_all(kafka_bootstrap, topic) if r.value is not None]
    assert all(v[0] == 0 and int.from_bytes(v[1:5], "big") == codec.schema_id for v in values)
    assert sorted((codec.decode(v) for v in values), key=lambda t: t["id"]) == expected


def test_plain_dicts_and_generated_streams_write_the_same_bytes(
    kafka_bootstrap: str, unique_topic: Topic
) -> None:
    fast, slow = unique_topic("tweets"), unique_topic("tweets")
    produce_tweets(kafka_bootstrap, fast, generate_tweets(4, 2000, start_ms=START), partitions=1)
    produce_tweets(
        kafka_bootstrap, slow, list(generate_tweets(4, 2000, start_ms=START)), partitions=1
    )
    assert [(r.key, r.value) for r in read_all(kafka_bootstrap, fast)] == [
        (r.key, r.value) for r in read_all(kafka_bootstrap, slow)
    ]


def test_failed_deliveries_raise(kafka_bootstrap: str, unique_topic: Topic) -> None:
    sink = producer(kafka_bootstrap, settings={"message.timeout.ms": 2000})
    sink.produce_many(unique_topic("missing"), [(None, b"x")] * 10)  # auto-create is off
    with pytest.raises(DeliveryError, match="10 records failed delivery"):
        sink.flush(timeout=30)


def test_ensure_topics_is_idempotent(kafka_bootstrap: str, unique_topic: Topic) -> None:
    names = [unique_topic("a"), unique_topic("b")]
    assert sorted(ensure_topics(kafka_bootstrap, names, partitions=2)) == sorted(names)
    assert ensure_topics(kafka_bootstrap, names, partitions=2) == []
    assert [partition_count(kafka_bootstrap, n) for n in names] == [2, 2]


def test_rate_limit_paces_the_producer(kafka_bootstrap: str, unique_topic: Topic) -> None:
    started = time.monotonic()
    produce_tweets(kafka_bootstrap, unique_topic("tweets"), generate_tweets(1, 600), rate=400)
    assert time.monotonic() - started >= 1.3
