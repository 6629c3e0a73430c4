"""examples/spl_window_kafka.py end to end: Avro tweets in Kafka -> per-user SPL window -> Kafka.

The oracle is the pure core fed each user's tweets in offset order; a value that is not a tweet
must reach the dead-letter topic with its reason, not stop or vanish.
"""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from connectors.avro import AvroCodec, encode_tweet
from connectors.kafka import ensure_topics, producer
from tests.support.jobs import CrashCase, slow_first_python
from tests.support.kafka import read_all
from trending.windows.spl import parse_spec
from trending.windows.spl.keyed import build_window, pure_inputs

pytestmark = pytest.mark.integration

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "spl_window_kafka.py"
SPEC = {"kind": "sliding", "evict": {"count": 3}, "trigger": {"count": 2}}
USERS = ["u1", "u2", "u1", "u3", "u1", "u2", "u1", "u2", "u1", "u3", "u1"]
BASE_MS = 1_700_000_000_000


def tweets(users: list[str] = USERS) -> list[dict[str, Any]]:
    return [
        {"id": i, "user": user, "text": f"t{i}", "created_at": BASE_MS + i * 1000}
        for i, user in enumerate(users)
    ]


def expected_events(users: list[str] = USERS) -> dict[str, list[tuple[str, list[int]]]]:
    out: dict[str, list[tuple[str, list[int]]]] = {}
    for user in sorted(set(users)):
        mine = [(None, t) for t in tweets(users) if t["user"] == user]
        window = build_window(parse_spec(SPEC))
        events = window.run(pure_inputs(user, mine))
        out[user] = [(e.kind.value, [t["id"] for t in e.tuples]) for e in events]
    return out


LETTERS = AvroCodec("dead_letter")
HEADERS = [("trace-id", b"\x00\x01"), ("no-value", None), ("trace-id", b"again")]


def test_kafka_example_publishes_the_core_events_and_dead_letters(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    suffix = uuid.uuid4().hex[:8]
    source, sink, dead = (f"{name}-{suffix}" for name in ("tweets", "windows", "dead"))
    ensure_topics(kafka_bootstrap, [source], partitions=1)
    out = producer(kafka_bootstrap)
    records = [encode_tweet(t) for t in tweets()]
    records.insert(4, b"\x02not avro")
    for value in records:
        if value == b"\x02not avro":  # its letter carries its timestamp and headers
            out.produce(source, value, b"bad", headers=HEADERS, timestamp_ms=1_600_000_000_123)
        else:
            out.produce(source, value, b"k")
    out.flush()

    command = [sys.executable, str(EXAMPLE), "--bootstrap", kafka_bootstrap, "--topic", source]
    command += ["--spec", json.dumps(SPEC), "--output-topic", sink, "--dead-letter-topic", dead]
    command += ["--checkpoint", str(tmp_path / "ckpt"), "--available-now"]
    run = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    assert run.returncode == 0, run.stderr[-3000:]

    got: dict[str, list[tuple[int, str, list[int]]]] = defaultdict(list)
    for record in read_all(kafka_bootstrap, sink):
        assert record.value is not None and record.key is not None
        event = json.loads(record.value)
        assert record.key.decode() == event["user"]
        ids = [t["id"] for t in json.loads(event["tuples"])]
        got[event["user"]].append((event["seq"], event["event"], ids))
    by_user = {
        user: [(kind, ids) for _, kind, ids in sorted(events)] for user, events in got.items()
    }
    assert by_user == expected_events()
    assert any(kind == "trigger" for events in by_user.values() for kind, _ in events)

    letters = [LETTERS.decode(r.value or b"") for r in read_all(kafka_bootstrap, dead)]
    assert [(letter["offset"], letter["reason"]) for letter in letters] == [
        (4, "length of field user is beyond the value")  # b"\x02not avro": id 1, user 55 bytes
    ]
    assert (letters[0]["topic"], letters[0]["partition"]) == (source, 0)
    assert (letters[0]["key"], letters[0]["value"]) == (b"bad", b"\x02not avro")
    assert letters[0]["timestamp"] == 1_600_000_000_123
    assert letters[0]["headers"] == [{"key": k, "value": v} for k, v in HEADERS]


def test_kafka_example_in_event_time_dead_letters_a_tweet_from_a_bad_clock(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    """A tweet from year 9999 in the first run: had it moved Spark's watermark, the second
    run's tweets would all be behind it and dropped."""
    suffix = uuid.uuid4().hex[:8]
    source, sink, dead = (f"{name}-{suffix}" for name in ("tweets", "windows", "dead"))
    ensure_topics(kafka_bootstrap, [source], partitions=1)
    far = {"id": 99, "user": "u1", "text": "from 9999", "created_at": 253_402_300_799_000}
    command = [sys.executable, str(EXAMPLE), "--bootstrap", kafka_bootstrap, "--topic", source]
    command += ["--spec", json.dumps(SPEC), "--output-topic", sink, "--dead-letter-topic", dead]
    command += ["--checkpoint", str(tmp_path / "ckpt"), "--available-now"]
    command += ["--time-mode", "event", "--watermark", "1 second"]
    out = producer(kafka_bootstrap)
    for part in ([*tweets()[:3], far], tweets()[3:]):
        for tweet in part:
            out.produce(source, encode_tweet(tweet), b"k")
        out.flush()
        run = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
        assert run.returncode == 0, run.stderr[-3000:]

    letters = [LETTERS.decode(r.value or b"") for r in read_all(kafka_bootstrap, dead)]
    assert [(letter["offset"], letter["reason"]) for letter in letters] == [(3, "future-timestamp")]
    got: dict[str, list[tuple[int, str, list[int]]]] = defaultdict(list)
    for record in read_all(kafka_bootstrap, sink):
        event = json.loads(record.value or b"{}")
        ids = [t["id"] for t in json.loads(event["tuples"])]
        got[event["user"]].append((event["seq"], event["event"], ids))
    by_user = {
        user: [(kind, ids) for _, kind, ids in sorted(events)] for user, events in got.items()
    }
    assert by_user == expected_events()


def published_events(bootstrap: str, topic: str) -> dict[str, list[tuple[str, list[int]]]]:
    """Per user, the window events read read_committed in their ``seq`` order, after checking
    that no ``(user, seq)`` was published twice."""
    got: dict[str, list[tuple[int, str, list[int]]]] = defaultdict(list)
    for record in read_all(bootstrap, topic):
        event = json.loads(record.value or b"{}")
        ids = [t["id"] for t in json.loads(event["tuples"])]
        got[event["user"]].append((event["seq"], event["event"], ids))
    for user, events in got.items():
        seqs = [seq for seq, _, _ in events]
        assert len(seqs) == len(set(seqs)), f"{user}: an event published twice"
    return {user: [(kind, ids) for _, kind, ids in sorted(events)] for user, events in got.items()}


def crash_case(bootstrap: str, tmp_path: Path) -> CrashCase:
    """Three SIGKILLs at seeded random points, each followed by a restart from the checkpoint:
    every window event is published once (the example publishes exactly once)."""
    rng = random.Random(29)
    users = [f"u{rng.randrange(6)}" for _ in range(360)]  # 18 batches
    suffix = uuid.uuid4().hex[:8]
    source, sink, dead = (f"{name}-{suffix}" for name in ("tweets", "windows", "dead"))
    ensure_topics(bootstrap, [source], partitions=1)
    out = producer(bootstrap)
    out.produce_many(source, ((b"k", encode_tweet(t)) for t in tweets(users)))
    out.flush()
    command = [sys.executable, str(EXAMPLE), "--bootstrap", bootstrap, "--topic", source]
    command += ["--spec", json.dumps(SPEC), "--output-topic", sink, "--dead-letter-topic", dead]
    command += ["--checkpoint", str(tmp_path / "ckpt"), "--available-now"]
    command += ["--max-offsets-per-trigger", "20"]

    def check(_log: str) -> None:
        assert published_events(bootstrap, sink) == expected_events(users)
        assert read_all(bootstrap, dead) == []

    return CrashCase("spl-example", command, 29, check)


@pytest.mark.chaos
def test_kafka_example_whose_python_worker_misses_spark_s_10_s_starts_again(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    """The first Python process Spark starts takes 12 s (an interpreter wrapper that sleeps
    once): the query fails on Spark's fixed 10 s for a Python worker to connect back, the
    example starts again from its checkpoint, and publishes the core's events once."""
    suffix = uuid.uuid4().hex[:8]
    source, sink, dead = (f"{name}-{suffix}" for name in ("tweets", "windows", "dead"))
    ensure_topics(kafka_bootstrap, [source], partitions=1)
    out = producer(kafka_bootstrap)
    out.produce_many(source, ((b"k", encode_tweet(t)) for t in tweets()))
    out.flush()
    wrapper, once = slow_first_python(tmp_path)
    command = [sys.executable, str(EXAMPLE), "--bootstrap", kafka_bootstrap, "--topic", source]
    command += ["--spec", json.dumps(SPEC), "--output-topic", sink, "--dead-letter-topic", dead]
    command += ["--checkpoint", str(tmp_path / "ckpt"), "--available-now"]
    run = subprocess.run(
        command, capture_output=True, text=True, timeout=300, check=False,
        env={**os.environ, "PYSPARK_PYTHON": str(wrapper)},
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    assert once.exists()
    assert "Python worker failed to connect back" in run.stderr
    assert re.search(r"starting again from the checkpoint \(run 2 of \d+\)", run.stderr)
    assert published_events(kafka_bootstrap, sink) == expected_events()
    assert read_all(kafka_bootstrap, dead) == []
