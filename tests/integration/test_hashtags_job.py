"""The trending-hashtags job on a real Kafka broker and a real Spark session.

Every test uses its own topics and checkpoint. The oracle counts hashtags by brute force in Python
(:func:`trending.text.hashtags.hashtag_keys` + the window formula) over the tweets the test made.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import random
import shutil
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from connectors.avro import AvroCodec
from connectors.kafka import ensure_topics
from connectors.transactions import COMMITS_TOPIC, OutRecord, TransactionalBatchWriter
from tests.support.hashtags import rule_top, windows_holding
from tests.support.kafka import read_all
from trending.errors import UserError
from trending.jobs.hashtags import HashtagJobConfig, start_query
from trending.spark.checkpoint import QUERY, JobCheckpoint
from trending.text.hashtags import hashtag_keys
from trending.windows.sliding import Window

pytestmark = pytest.mark.integration

BASE_MS = 1_700_000_000_000
TAGS = ["spark", "Kafka", "KAFKA", "café", "Café", "cafe\u0301", "日本", "हिन्दी", "ไทย", "straße",
        "STRASSE", "x_1", "news", "ai", "rust", "python"]  # fmt: skip
SIZE_MS, HOP_MS, LATENESS_MS, TOP = 60_000, 20_000, 10_000, 5


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    from trending.spark.session import build_session

    session = build_session("tests-hashtags", "local[2]", shuffle_partitions=2)
    yield session
    session.stop()


def make_tweets(count: int, seed: int, start_index: int = 0) -> list[dict[str, Any]]:
    """Tweets 20/s of event time with out-of-order jitter < lateness, tags from a small set."""
    rng = random.Random(seed)
    tweets = []
    for i in range(start_index, start_index + count):
        tags = rng.sample(TAGS, rng.choice([0, 1, 1, 2, 3]))
        words = ["#" + t for t in tags] + ["hello", "http://example.com/#frag"][: rng.randint(0, 2)]
        rng.shuffle(words)
        created = BASE_MS + i * 50 - rng.randrange(5_000)
        tweets.append(
            {
                "id": i,
                "user": f"u{i % 97}",
                "text": " ".join(words),
                "created_at": created,
                "lang": None,
            }
        )
    return tweets


# Kafka headers and a record timestamp that routed records must keep (a repeated name, a null)
HEADERS = [("trace-id", b"\x00\x01"), ("no-value", None), ("trace-id", b"again")]
RECORD_TS = 1_700_000_000_321


def produce(
    bootstrap: str,
    topic: str,
    tweets: list[dict[str, Any]],
    extra: tuple[bytes | None, ...] = (),
    *,
    headers: list[tuple[str, bytes | None]] | None = None,
    timestamp_ms: int = 0,
    partition: int = -1,  # -1: the producer's partitioner
) -> None:
    codec = AvroCodec("tweet")
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for tweet in tweets:
        producer.produce(
            topic, codec.encode(tweet), key=str(tweet["id"]).encode(), headers=headers,
            timestamp=timestamp_ms, partition=partition,
        )  # fmt: skip
        producer.poll(0)
    for raw in extra:
        producer.produce(topic, raw, key=b"bad")
    assert producer.flush(30) == 0


def oracle_finals(
    tweets: list[dict[str, Any]],
    closed_below: int,
    size: int = SIZE_MS,
    hop: int = HOP_MS,
    align: int = 0,
    k: int = TOP,
) -> dict[Window, tuple[tuple[str, int], ...]]:
    """Brute force from the rule of docs/jobs/hashtags.md, none of the job's window or top-k code:
    a tweet at ``t`` counts once per distinct hashtag key in every window
    ``[align + n*hop, ... + size)`` holding ``t``; every window with end <= ``closed_below`` (the
    watermark) is final, its top ``k`` by count desc, then hashtag asc."""
    counts: dict[tuple[int, int], Counter[str]] = {}
    for tweet in tweets:
        keys = set(hashtag_keys(tweet["text"]))
        for window in windows_holding(tweet["created_at"], size, hop, align):
            counts.setdefault(window, Counter()).update(keys)
    return {
        Window(*w): tuple(rule_top(c, k)) for w, c in counts.items() if c and w[1] <= closed_below
    }


class Job:
    """One job's topics and checkpoint."""

    def __init__(self, bootstrap: str, tmp_path: Path) -> None:
        tag = uuid.uuid4().hex[:8]
        self.bootstrap = bootstrap
        self.topics = {n: f"{n}-{tag}" for n in ("tweets", "trending", "late", "dlq")}
        self.checkpoint = tmp_path / f"checkpoint-{tag}"
        ensure_topics(bootstrap, [self.topics["tweets"]], partitions=4)

    def config(self, **overrides: Any) -> HashtagJobConfig:
        settings: dict[str, Any] = {
            "bootstrap": self.bootstrap,
            "checkpoint": str(self.checkpoint),
            "input_topic": self.topics["tweets"],
            "output_topic": self.topics["trending"],
            "late_topic": self.topics["late"],
            "dead_letter_topic": self.topics["dlq"],
            "size_ms": SIZE_MS,
            "hop_ms": HOP_MS,
            "lateness_ms": LATENESS_MS,
            "k": TOP,
            "available_now": True,
            # The warm-up (JIT before batch 0; it writes nothing) on 2,000 synthetic rows, not
            # 200,000: this module's session is warm after its first run, and each run pays it.
            "warm_up_rows": 2_000,
        }
        settings.update(overrides)
        return HashtagJobConfig(**settings)

    def run(self, spark: Any, **overrides: Any) -> Any:
        query, processor = start_query(spark, self.config(**overrides))
        try:
            query.awaitTermination()
        finally:
            processor.close()
        assert query.exception() is None
        return processor

    def records(self, name: str = "trending") -> list[dict[str, Any]]:
        codec = AvroCodec("trending_topk") if name == "trending" else AvroCodec("tweet")
        return [codec.decode(r.value) for r in read_all(self.bootstrap, self.topics[name])]


def finals_of(records: list[dict[str, Any]]) -> dict[Window, tuple[tuple[str, int], ...]]:
    finals = [r for r in records if r["is_final"]]
    windows = [Window(r["window_start"], r["window_end"]) for r in finals]
    assert len(windows) == len(set(windows)), "a window was finalized twice"
    return {
        Window(r["window_start"], r["window_end"]): tuple(
            (t["hashtag"], t["count"]) for t in r["top"]
        )
        for r in finals
    }


def watermark_after(tweets: list[dict[str, Any]]) -> int:
    return max(t["created_at"] for t in tweets) - LATENESS_MS


def test_finals_equal_brute_force_and_revisions_are_consistent(
    kafka_bootstrap: str, spark: Any, tmp_path: Path
) -> None:
    job = Job(kafka_bootstrap, tmp_path)
    tweets = make_tweets(6_000, seed=1)
    produce(kafka_bootstrap, job.topics["tweets"], tweets, extra=(b"\x01garbage", None))
    processor = job.run(spark)
    records = job.records()
    expected = oracle_finals(tweets, watermark_after(tweets))
    assert len(expected) >= 10
    assert finals_of(records) == expected
    # revisions: numbered 1.. per window, the final last, never two equal tops in a row
    by_window: dict[int, list[dict[str, Any]]] = {}
    for record in records:
        by_window.setdefault(record["window_start"], []).append(record)
    for history in by_window.values():
        assert sorted(r["revision"] for r in history) == list(range(1, len(history) + 1))
        history.sort(key=lambda r: r["revision"])
        assert all(not r["is_final"] for r in history[:-1])
        tops = [r["top"] for r in history if not r["is_final"]]
        assert all(a != b for a, b in itertools.pairwise(tops))
    # nothing lost, read from the topics: every tweet is in the finals above (the oracle counts
    # them all), none is late, and the two bad records are dead letters of their own
    assert read_all(kafka_bootstrap, job.topics["late"]) == []
    codec = AvroCodec("dead_letter")
    letters = [codec.decode(r.value) for r in read_all(kafka_bootstrap, job.topics["dlq"])]
    # b"\x01garbage": id -1, then the user's length 0x67 = zig-zag -52
    assert sorted(((d["key"], d["value"], d["reason"]) for d in letters), key=str) == [
        (b"bad", None, "empty value"),
        (b"bad", b"\x01garbage", "length of field user is negative"),
    ]
    assert {d["topic"] for d in letters} == {job.topics["tweets"]}
    processed = sum(s.tweets for s in processor.history)
    assert processed == len(tweets) + 2


def test_finals_follow_the_rule_with_an_offset_alignment_and_a_hop_not_dividing_the_size(
    kafka_bootstrap: str, spark: Any, tmp_path: Path
) -> None:
    """Windows of 50 s every 20 s aligned at 13.001 s (panes of 10 s), top 3: tweets exactly on
    window starts and ends and 1 ms either side, tags that tie at the top-3 cut (case-folded
    keys, a tag beyond the BMP), in order over four micro-batches."""
    size, hop, align, k = 50_000, 20_000, 13_001, 3
    first = align + ((BASE_MS - align) // hop + 1) * hop  # a window start
    tags = ["a", "B", "b", "\U00020000", "\ufa0e", "ß", "SS", "z_1"]  # b/B, ß/SS: one key each
    rng = random.Random(29)
    tweets: list[dict[str, Any]] = [
        {"id": i, "user": "u", "lang": None, "created_at": first + i // 3 * 10_000 + i % 3 - 1,
         "text": " ".join("#" + t for t in rng.sample(tags, rng.randint(1, 2))) + " x"}
        for i in range(180)
    ]  # fmt: skip
    job = Job(kafka_bootstrap, tmp_path)
    produce(kafka_bootstrap, job.topics["tweets"], tweets, partition=0)  # batches in order
    settings = {"size_ms": size, "hop_ms": hop, "align_ms": align, "k": k}
    processor = job.run(spark, max_offsets_per_trigger=50, **settings)
    assert len(processor.history) >= 4
    records = job.records()
    expected = oracle_finals(tweets, watermark_after(tweets), size, hop, align, k)
    assert finals_of(records) == expected
    assert job.records("late") == []
    # the premises: boundaries hit, ties at the cut, the two orders of strings told apart
    starts = {w.start for w in expected}
    assert sum(t["created_at"] in starts for t in tweets) >= 10
    assert sum(t["created_at"] - size in starts for t in tweets) >= 10
    ranked = oracle_finals(tweets, watermark_after(tweets), size, hop, align, len(tags))
    assert sum(len(r) > k and r[k - 1][1] == r[k][1] for r in ranked.values()) >= 3
    lower, higher = "\ufa0e", "\U00020000"  # in code points; in UTF-16 units (D840 DC00) not
    assert any(
        dict(r).get(lower) == dict(r).get(higher)
        and lower in dict(r[:k])
        and higher not in dict(r[:k])
        for r in ranked.values()
    )
    # every record, revisions too, is of a window the rule makes
    holding = {w for t in tweets for w in windows_holding(t["created_at"], size, hop, align)}
    assert {(r["window_start"], r["window_end"]) for r in records} <= holding


def test_batching_does_not_change_finals(kafka_bootstrap: str, spark: Any, tmp_path: Path) -> None:
    tweets = make_tweets(5_000, seed=2)
    results = []
    for cap in (700, 4_000):
        job = Job(kafka_bootstrap, tmp_path)
        produce(kafka_bootstrap, job.topics["tweets"], tweets)
        processor = job.run(spark, max_offsets_per_trigger=cap)
        assert len(processor.history) >= -(-5_000 // cap)  # ceil: every batch holds <= cap
        results.append(finals_of(job.records()))
    assert results[0] == results[1] == oracle_finals(tweets, watermark_after(tweets))


def test_restart_from_checkpoint_loses_nothing_and_duplicates_no_final(
    kafka_bootstrap: str, spark: Any, tmp_path: Path
) -> None:
    job = Job(kafka_bootstrap, tmp_path)
    first, second = make_tweets(3_000, seed=3), make_tweets(3_000, seed=4, start_index=3_000)
    produce(kafka_bootstrap, job.topics["tweets"], first)
    # another job stalls with an open transaction on the commits topic before this one commits
    foreign = Producer({"bootstrap.servers": kafka_bootstrap, "transactional.id": uuid.uuid4().hex})
    foreign.init_transactions(60)
    foreign.begin_transaction()
    foreign.produce(COMMITS_TOPIC, key=b"stalled-job", value=b"open")
    assert foreign.flush(30) == 0
    job.run(spark, max_offsets_per_trigger=1_000)
    # A stop after the last batch's output committed but before Spark marked it done:
    commits = job.checkpoint / "spark" / "commits"
    last = max(int(p.name) for p in commits.iterdir() if p.name.isdigit())
    (commits / str(last)).unlink()
    (commits / f".{last}.crc").unlink(missing_ok=True)
    produce(kafka_bootstrap, job.topics["tweets"], second)
    processor = job.run(spark, max_offsets_per_trigger=1_000)
    assert processor.repair is not None and "marked done" in processor.repair
    assert processor.history[0].batch_id == last + 1
    foreign.abort_transaction(30)
    tweets = first + second
    assert finals_of(job.records()) == oracle_finals(tweets, watermark_after(tweets))


def test_failed_batch_publishes_nothing_and_is_redone(
    kafka_bootstrap: str, spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = Job(kafka_bootstrap, tmp_path)
    tweets = make_tweets(4_000, seed=6)
    produce(kafka_bootstrap, job.topics["tweets"], tweets)
    original = TransactionalBatchWriter.write_batch

    def failing(records: list[OutRecord]) -> Iterator[OutRecord]:
        yield from records  # sent inside the transaction, then the transaction must abort
        raise RuntimeError("injected delivery failure")

    def fail_on_batch_2(
        self: TransactionalBatchWriter, batch_id: int, records: Any, state: Any = None
    ) -> int:
        if batch_id == 2:
            records = failing(list(records() if callable(records) else records))
        return original(self, batch_id, records, state)

    monkeypatch.setattr(TransactionalBatchWriter, "write_batch", fail_on_batch_2)
    query, failed = start_query(spark, job.config(max_offsets_per_trigger=1_000))
    with pytest.raises(Exception, match="injected delivery failure"):
        query.awaitTermination()
    failed.close()
    monkeypatch.setattr(TransactionalBatchWriter, "write_batch", original)
    processor = job.run(spark, max_offsets_per_trigger=1_000)
    assert processor.repair is not None and "planned again" in processor.repair
    assert processor.history[0].batch_id == 2
    assert finals_of(job.records()) == oracle_finals(tweets, watermark_after(tweets))


def test_late_tweets_are_routed_not_counted(
    kafka_bootstrap: str, spark: Any, tmp_path: Path
) -> None:
    job = Job(kafka_bootstrap, tmp_path)
    on_time = make_tweets(2_000, seed=5)
    produce(kafka_bootstrap, job.topics["tweets"], on_time)
    job.run(spark)
    watermark = watermark_after(on_time)
    late = {"id": 99_999, "user": "late", "text": "#latecomer", "created_at": BASE_MS, "lang": None}
    produce(kafka_bootstrap, job.topics["tweets"], [late], headers=HEADERS)
    job.run(spark)
    assert [r["id"] for r in job.records("late")] == [99_999]
    assert all("latecomer" not in str(r["top"]) for r in job.records())
    # republished byte for byte, its own headers kept, then headers naming where it was read
    (republished,) = read_all(kafka_bootstrap, job.topics["late"])
    (source,) = [
        r for r in read_all(kafka_bootstrap, job.topics["tweets"]) if r.value == republished.value
    ]
    assert republished.value == AvroCodec("tweet").encode(late)
    assert list(republished.headers) == [
        *HEADERS,
        ("origin.topic", job.topics["tweets"].encode()),
        ("origin.partition", str(source.partition).encode()),
        ("origin.offset", str(source.offset).encode()),
    ]
    assert republished.key == source.key == str(late["id"]).encode()
    assert max(end for _, end in windows_holding(BASE_MS, SIZE_MS, HOP_MS)) <= watermark
    shutil.rmtree(job.checkpoint)


def test_a_tweet_from_a_bad_clock_is_dead_lettered_and_moves_no_watermark(
    kafka_bootstrap: str, spark: Any, tmp_path: Path
) -> None:
    """Year 9999 and a time in microseconds: both far ahead of the wall clock. Without the
    rule either would close every window and make all later tweets late."""
    job = Job(kafka_bootstrap, tmp_path)
    first, second = make_tweets(3_000, seed=8), make_tweets(3_000, seed=9, start_index=3_000)
    year_9999 = {"id": 90_001, "user": "clock", "text": "#future", "lang": None,
                 "created_at": 253_402_300_799_000}  # fmt: skip
    in_micros = {"id": 90_002, "user": "clock", "text": "#micros", "lang": None,
                 "created_at": (BASE_MS + 60_000) * 1_000}  # fmt: skip
    produce(kafka_bootstrap, job.topics["tweets"], first)
    produce(
        kafka_bootstrap, job.topics["tweets"], [year_9999, in_micros], headers=HEADERS,
        timestamp_ms=RECORD_TS,
    )  # fmt: skip
    job.run(spark)
    produce(kafka_bootstrap, job.topics["tweets"], second)
    job.run(spark)
    tweets = first + second
    assert finals_of(job.records()) == oracle_finals(tweets, watermark_after(tweets))
    assert job.records("late") == []
    letters = [AvroCodec("dead_letter").decode(r.value) for r in read_all(
        kafka_bootstrap, job.topics["dlq"])]  # fmt: skip
    assert sorted((d["reason"], d["key"]) for d in letters) == [
        ("future-timestamp", b"90001"), ("future-timestamp", b"90002")]  # fmt: skip
    codec = AvroCodec("tweet")
    assert sorted(codec.decode(d["value"])["id"] for d in letters) == [90_001, 90_002]
    # each letter carries the record's own Kafka timestamp and headers
    assert [(d["timestamp"], d["headers"]) for d in letters] == [
        (RECORD_TS, [{"key": k, "value": v} for k, v in HEADERS])
    ] * 2


def test_records_too_large_for_their_topic_become_dead_letters_cut_to_fit(
    kafka_bootstrap: str, spark: Any, tmp_path: Path
) -> None:
    """The late and dead-letter topics accept 20 kB; a late tweet and a malformed record of
    100 kB would fail every retry of their batch. Both become dead letters whose value is the
    start of the record, with its size, topic, partition and offset; all else is exact."""
    job = Job(kafka_bootstrap, tmp_path)
    small = {"max.message.bytes": "20000"}
    ensure_topics(kafka_bootstrap, [job.topics["late"], job.topics["dlq"]], 1, config=small)
    first, second = make_tweets(2_000, seed=21), make_tweets(2_000, seed=22, start_index=2_000)
    produce(kafka_bootstrap, job.topics["tweets"], first)
    job.run(spark)
    big_late = {"id": 99_001, "user": "late", "text": "#big " + "x" * 100_000,
                "created_at": BASE_MS, "lang": None}  # fmt: skip
    trailing = AvroCodec("tweet").encode({**big_late, "id": 99_002}) + b"\0" * 10
    produce(kafka_bootstrap, job.topics["tweets"], [*second, big_late], extra=(trailing,))
    processor = job.run(spark)
    assert sum(s.dead for s in processor.history) == 2
    assert sum(s.late for s in processor.history) == 0
    tweets = first + second
    assert finals_of(job.records()) == oracle_finals(tweets, watermark_after(tweets))
    assert job.records("late") == []
    produced = {r.key: r for r in read_all(kafka_bootstrap, job.topics["tweets"])}
    letters = [AvroCodec("dead_letter").decode(r.value) for r in read_all(
        kafka_bootstrap, job.topics["dlq"])]  # fmt: skip
    assert sorted(d["key"] for d in letters) == [b"99001", b"bad"]
    for letter in letters:
        source = produced[letter["key"]]
        assert source.value is not None and len(source.value) > 100_000
        assert (letter["topic"], letter["partition"], letter["offset"]) == (
            job.topics["tweets"], source.partition, source.offset,
        )  # fmt: skip
        assert letter["value_size"] == len(source.value)
        assert source.value.startswith(letter["value"]) and 15_000 < len(letter["value"]) < 20_000
        assert letter["reason"].startswith("oversized: ")


def test_a_past_skew_bound_dead_letters_older_tweets(
    kafka_bootstrap: str, spark: Any, tmp_path: Path
) -> None:
    job = Job(kafka_bootstrap, tmp_path)
    tweets = make_tweets(1_000, seed=10)
    ancient = {"id": 90_003, "user": "clock", "text": "#ancient", "lang": None,
               "created_at": 1_000}  # fmt: skip
    produce(kafka_bootstrap, job.topics["tweets"], [ancient, *tweets])
    age_ms = int(time.time() * 1000) - BASE_MS
    job.run(spark, max_past_skew_ms=age_ms + 86_400_000, max_future_skew_ms=None)
    letters = [AvroCodec("dead_letter").decode(r.value) for r in read_all(
        kafka_bootstrap, job.topics["dlq"])]  # fmt: skip
    assert [(d["reason"], d["key"]) for d in letters] == [("past-timestamp", b"90003")]
    assert finals_of(job.records()) == oracle_finals(tweets, watermark_after(tweets))
    # the clock a batch is judged by is the batch timestamp Spark wrote in its offset log
    offsets = job.checkpoint / QUERY / "offsets"
    entries = sorted(int(entry.name) for entry in offsets.iterdir() if entry.name.isdigit())
    assert entries
    checkpoint = JobCheckpoint(spark, str(job.checkpoint))
    for batch_id in entries:
        metadata = json.loads((offsets / str(batch_id)).read_text().splitlines()[1])
        assert checkpoint.batch_clock_ms(batch_id) == metadata["batchTimestampMs"]


def java_bucket(key: str) -> int:
    """``floorMod(key.hashCode(), 4096)`` as Java computes it (UTF-16 units, 32-bit wrap)."""
    h = 0
    data = key.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + int.from_bytes(data[i : i + 2], "big")) & 0xFFFFFFFF
    return h & 0xFFF


def test_counts_live_in_spark_state_and_the_driver_keeps_only_top_k(
    kafka_bootstrap: str, spark: Any, tmp_path: Path
) -> None:
    job = Job(kafka_bootstrap, tmp_path)
    tweets = make_tweets(3_000, seed=7)
    produce(kafka_bootstrap, job.topics["tweets"], tweets)
    query, processor = start_query(spark, job.config(max_offsets_per_trigger=1_000))
    try:
        query.awaitTermination()
    finally:
        processor.close()
    operators = [op for p in query.recentProgress for op in p.stateOperators]
    assert operators and all(op.operatorName == "transformWithStateExec" for op in operators)
    # per bucket of hashtag keys a state row (their open panes) and a purge timer
    buckets = {java_bucket(k) for t in tweets for k in hashtag_keys(t["text"])}
    assert sum(op.numRowsUpdated for op in operators) >= len(buckets)
    timers = sum(int(op.customMetrics["numRegisteredTimers"]) for op in operators)
    assert len(buckets) <= timers <= sum(op.numRowsUpdated for op in operators)
    windows = processor.merger.state.windows
    assert all(len(w.top) <= TOP for w in windows.values())
    assert finals_of(job.records()) == oracle_finals(tweets, watermark_after(tweets))


def test_a_checkpoint_uri_works_and_other_settings_are_refused(
    kafka_bootstrap: str, spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # a URI taken for a local path would make ./file: here
    job = Job(kafka_bootstrap, tmp_path)
    uri = f"file://{job.checkpoint}"
    first, second = make_tweets(2_000, seed=8), make_tweets(2_000, seed=9, start_index=2_000)
    produce(kafka_bootstrap, job.topics["tweets"], first)
    job.run(spark, checkpoint=uri)
    assert not (tmp_path / "file:").exists()
    assert (job.checkpoint / "trending-job.json").is_file()
    assert (job.checkpoint / "spark" / "commits").is_dir()

    def files() -> list[str]:  # but the lease, which each start takes and releases
        return sorted(str(p) for p in job.checkpoint.rglob("*") if "lease" not in p.parts)

    before = files()
    for change in ({"size_ms": 2 * SIZE_MS}, {"k": TOP + 1}, {"lateness_ms": 1}):
        with pytest.raises(UserError, match="other settings"):
            start_query(spark, job.config(checkpoint=uri, **change))
    assert files() == before  # nothing deleted
    produce(kafka_bootstrap, job.topics["tweets"], second)
    job.run(spark, checkpoint=uri)
    tweets = first + second
    assert finals_of(job.records()) == oracle_finals(tweets, watermark_after(tweets))


def test_spark_still_fails_to_rerun_a_planned_kafka_batch(
    kafka_bootstrap: str, spark: Any, tmp_path: Path
) -> None:
    """Why JobCheckpoint.settle forgets a planned batch that published nothing: Spark 4.1.1's
    Kafka source fails (a NullPointerException in its progress metrics, SPARK-57438) when a
    restarted query re-runs a batch it had planned. When this test fails, Spark is fixed and
    the workaround can go."""
    job = Job(kafka_bootstrap, tmp_path)
    produce(kafka_bootstrap, job.topics["tweets"], make_tweets(300, seed=12))
    options = {
        "kafka.bootstrap.servers": kafka_bootstrap,
        "subscribe": job.topics["tweets"],
        "startingOffsets": "earliest",
        "maxOffsetsPerTrigger": "100",
    }

    def run(on_batch: Any) -> Any:
        query = (
            spark.readStream.format("kafka")
            .options(**options)
            .load()
            .writeStream.foreachBatch(on_batch)
            .option("checkpointLocation", str(job.checkpoint))
            .trigger(availableNow=True)
            .start()
        )
        with contextlib.suppress(Exception):  # the failure is read from query.exception()
            query.awaitTermination(120)
        assert not query.isActive
        return query.exception()

    def stop_in_batch_1(batch: Any, batch_id: int) -> None:
        if batch_id == 1:
            raise RuntimeError("the driver dies while batch 1 runs")

    assert "batch 1 runs" in str(run(stop_in_batch_1))
    assert (job.checkpoint / "offsets" / "1").is_file()
    assert not (job.checkpoint / "commits" / "1").exists()
    error = run(lambda batch, batch_id: None)  # Spark itself re-runs planned batch 1
    # Java's message of that NullPointerException: "Cannot invoke ... because the return value
    # of "scala.Option.get()" is null"
    assert error is not None and "scala.Option.get()" in str(error), (
        "Spark re-ran a planned Kafka batch without failing: SPARK-57438 looks fixed, and "
        "JobCheckpoint.settle need no longer forget planned batches"
    )


def test_hashtags_sharing_a_state_bucket_are_counted_apart(
    kafka_bootstrap: str, spark: Any, tmp_path: Path
) -> None:
    # 4,000 random tags in 4,096 buckets: most buckets hold two or more tags
    rng = random.Random(13)
    vocabulary = sorted({"".join(rng.choices("abcdefghijklmnop", k=6)) for _ in range(4_000)})
    by_bucket = Counter(java_bucket(tag) for tag in vocabulary)
    assert sum(1 for n in by_bucket.values() if n > 1) >= 20
    tweets = []
    for i in range(6_000):
        tags = rng.sample(vocabulary[:300], 2) + rng.sample(vocabulary, 2)  # a head and a tail
        created = BASE_MS + i * 50 - rng.randrange(5_000)
        text = " ".join("#" + t for t in tags)
        tweets.append({"id": i, "user": "u", "text": text, "created_at": created, "lang": None})
    job = Job(kafka_bootstrap, tmp_path)
    produce(kafka_bootstrap, job.topics["tweets"], tweets[:3_000])
    job.run(spark, max_offsets_per_trigger=700)
    produce(kafka_bootstrap, job.topics["tweets"], tweets[3_000:])
    job.run(spark, max_offsets_per_trigger=700)  # a restart with the state in the store
    assert finals_of(job.records()) == oracle_finals(tweets, watermark_after(tweets))


def test_the_candidates_of_a_batch_are_each_window_s_top_k_and_every_side_row(spark: Any) -> None:
    """``top_candidates`` on window-count rows spread over several tasks, with many ties (the
    tie order is by code point: U+FA0E before U+20000, which UTF-16 order would swap): per
    window exactly the k rows a full sort gives, and every late or dead row, in one partition."""
    from pyspark.sql.types import StructType

    from trending.spark.hashtag_state import top_candidates

    rng = random.Random(5)
    tags = ["a", "b", "ab", "\ufa0e", "\U00020000", "\U00020000a", "z", "é", "e\u0301"]
    tags += [f"t{i}" for i in range(60)]
    schema = StructType.fromJson(
        json.loads(spark.sparkContext._jvm.trending.state.HashtagState.OUTPUT.json())
    )
    counted = [
        (0, start, tag, rng.randrange(1, 6), None, None, None, None, None, None, None)
        for start in (0, 60_000, 120_000)
        for tag in rng.sample(tags, 50)
    ]
    # a window whose cut falls inside a tie: code point order drops U+20000, UTF-16 U+FA0E
    counted += [
        (0, 180_000, tag, 9, None, None, None, None, None, None, None)
        for tag in ("\U00020000", "\ufa0e", "t1", "t2", "z")
    ]
    side = [(kind, None, None, None, 3, offset, b"k", b"v", "why", 7, None)
            for kind, offset in ((1, 10), (1, 11), (2, 12))]  # fmt: skip
    rows = counted + side
    rng.shuffle(rows)
    k = 4
    frame = spark.createDataFrame(rows, schema)
    # rows spread over tasks at random, and each window's rows all in one task
    for batch in (frame.repartition(4), frame.repartition(2, "window_start")):
        candidates = top_candidates(batch, k)
        assert candidates.rdd.getNumPartitions() == 1  # the driver collects one task's rows
        check_candidates(candidates.collect(), counted, side, k)


def test_a_batch_s_best_counts_reach_the_driver_and_its_side_rows_stay(spark: Any) -> None:
    """What the driver's merge reads of a micro-batch (``HashtagState.collect``): each task's k
    best window-count rows per window (count desc, tag by code point), with tags outside the BMP,
    combining marks and long tags intact; every late or dead row, read after the counts without
    running the batch's plan again (a micro-batch's plan updates the state store)."""
    from pyspark.sql.types import StructType

    from trending.spark.hashtag_state import SIDE_COLUMNS, HashtagState
    from trending.windows.sliding import SlidingWindows

    rng = random.Random(11)
    tags = ["a", "\U00020000", "\ufa0e", "e\u0301", "\u00e9", "x" * 70_000, "#", "\u05d0\u05d1"]
    schema = StructType.fromJson(
        json.loads(spark.sparkContext._jvm.trending.state.HashtagState.OUTPUT.json())
    )
    starts = (-60_000, 0, 2**40)
    counted = [
        (0, start, tag, rng.choice((5, 9, 9, 2**40)), *[None] * 7)
        for start in starts
        for tag in tags + [f"t{i}" for i in range(6)]
    ]  # each (window, tag) once, as the state emits it; many ties at the cut
    # a window cut by tag alone, where code point order (U+FA0E first) and UTF-16's differ
    counted += [(0, 120_000, tag, 9, *[None] * 7) for tag in ("\U00020000", "\ufa0e", "z", "zz")]
    side = [(kind, None, None, None, 1, offset, None, b"v" * offset, "late", 7, None)
            for kind, offset in ((1, 10), (2, 12), (1, 3_000))]  # fmt: skip
    rows = counted + side
    rng.shuffle(rows)
    k = 3

    def best(rows: Any) -> dict[int, list[tuple[str, int]]]:
        by_window: dict[int, list[tuple[str, int]]] = {}
        for _, start, tag, count, *_ in rows:
            by_window.setdefault(start, []).append((tag, count))
        # Python orders str by code point, as Spark orders UTF-8 bytes
        return {w: sorted(v, key=lambda tc: (-tc[1], tc[0]))[:k] for w, v in by_window.items()}

    def per_task(slices: int) -> list[list[Any]]:
        return spark.sparkContext.parallelize(rows, slices).glom().collect()  # type: ignore[no-any-return]

    state = HashtagState(spark, SlidingWindows(60_000, 60_000), "collect-test")
    at = [schema.fieldNames().index(name) for name in SIDE_COLUMNS]
    for slices in (1, 3):
        runs = spark.sparkContext.accumulator(0)

        def once(row: Any, runs: Any = runs) -> Any:
            runs.add(1)
            return row

        batch = spark.createDataFrame(
            spark.sparkContext.parallelize(rows, slices).map(once), schema
        )
        with state.collect(batch, k) as collected:
            got = collected.counted()
            read = [tuple(r) for r in collected.side().collect()]
            assert collected.side().count() == len(side)
        expected = [
            (start, tag, count)
            for task in per_task(slices)
            for start, pairs in best(r for r in task if r[0] == 0).items()
            for tag, count in pairs
        ]
        assert sorted(got) == sorted(expected)
        assert sorted(read) == sorted(tuple(row[i] for i in at) for row in side)
        assert runs.value == len(rows)  # the batch ran once
    # the union of the tasks' candidates holds each window's k best
    got_best = best((0, s, t, c) for s, t, c in got)
    assert got_best == best(r for r in counted)

    with state.collect(spark.createDataFrame(side, schema), k) as collected:
        assert collected.counted() == []


def check_candidates(got: list[Any], counted: list[Any], side: list[Any], k: int) -> None:
    """Per window the k best of ``counted`` (count desc, tag asc), and every ``side`` row."""
    from trending.spark.hashtag_state import SIDE_COLUMNS

    by_window: dict[int, list[tuple[str, int]]] = {}
    for r in got:
        if r["kind"] == 0:
            by_window.setdefault(r["window_start"], []).append((r["tag"], r["count"]))

    def ranked(pairs: Any) -> list[tuple[str, int]]:
        return sorted(pairs, key=lambda tc: (-tc[1], tc[0]))  # Python orders str by code point

    expected = {
        start: ranked((t, c) for _, s, t, c, *_ in counted if s == start)[:k]
        for start in (0, 60_000, 120_000, 180_000)
    }
    assert {start: ranked(pairs) for start, pairs in by_window.items()} == expected
    columns = [c for c in SIDE_COLUMNS if c != "headers"]
    assert sorted(tuple(r[c] for c in columns) for r in got if r["kind"] != 0) == sorted(
        (kind, partition, offset, key, value, reason, ts)
        for kind, _, _, _, partition, offset, key, value, reason, ts, _ in side
    )


def test_a_lease_file_replaced_while_it_is_read_reads_whole_or_missing(
    spark: Any, tmp_path: Path
) -> None:
    """A heartbeat file replaced over and over (as its owner does) while another reader reads
    it: each read is a whole text that was written, or missing (a replacement is a delete and
    a rename), never an error. A reader once failed on the moment between its check and its
    open."""
    import threading

    storage = JobCheckpoint(spark, f"file://{tmp_path}/checkpoint").lease().storage
    assert storage.create("0000000001.beat", "beat 0")
    written = {f"beat {i}" for i in range(400)}
    done = threading.Event()

    def replace() -> None:
        try:
            for i in range(1, 400):
                storage.write("0000000001.beat", f"beat {i}")
        finally:
            done.set()

    writer = threading.Thread(target=replace)
    writer.start()
    reads = []
    while not done.is_set():
        reads.append(storage.read("0000000001.beat"))
    writer.join()
    assert len(reads) > 100
    assert {text for text in reads if text is not None} <= written
    assert storage.read("0000000001.beat") == "beat 399"


def crafted_tweets(start_id: int, created_at: int) -> dict[str, tuple[dict[str, Any], str | None]]:
    """Tweets valid by the schema but extreme, each with the flag of the bound it breaks under
    the default bounds (None: within them, and counted)."""
    texts = {
        "300k-char hashtag": ("#" + "a" * 300_000, "max-text-chars"),
        "900 kB URL-like text": ("-a" * 450_000 + ".x/#tag", "max-text-chars"),
        "20,000 hashtags": (" ".join(f"#t{i}" for i in range(20_000)), "max-text-chars"),
        "101 hashtags": (" ".join(f"#many{i}" for i in range(101)), "max-hashtags"),
        "281-char hashtag": ("#" + "b" * 281 + " #fine", "max-hashtag-chars"),
        "super-linear URL scan": ("-a" * 5_000 + ".x/#tag", "max-url-scan-steps"),
        # within the bounds: the regex recurses once per "(b)", past a default thread stack
        "deep URL path": ("example.com/" + "a(b)" * 2_500 + " #deep", None),
        "100 hashtags": (" ".join(f"#hundred{i}" for i in range(100)), None),
        "280-char hashtag": ("#" + "c" * 280, None),
        "280 astral letters": ("#" + "\U00020000" * 280, None),  # 560 UTF-16 units
    }
    return {
        name: ({"id": start_id + i, "user": "crafted", "text": text, "created_at": created_at,
                "lang": None}, flag)
        for i, (name, (text, flag)) in enumerate(texts.items())
    }  # fmt: skip


def test_crafted_tweets_are_dead_letters_naming_their_bound_and_the_rest_is_exact(
    kafka_bootstrap: str, spark: Any, tmp_path: Path
) -> None:
    """Among ordinary tweets, tweets that would cost a task minutes (a 900 kB text whose URL
    scan backtracks) or its stack (a URL path of nested groups): each one beyond a bound is a
    dead letter whose reason names the flag, and is counted under that label; the others count
    as the hashtag rule says; the run ends."""
    job = Job(kafka_bootstrap, tmp_path)
    ensure_topics(kafka_bootstrap, [job.topics["dlq"]], 1, config={"max.message.bytes": "2000000"})
    first, second = make_tweets(2_000, seed=31), make_tweets(2_000, seed=32, start_index=2_000)
    crafted = crafted_tweets(80_000, BASE_MS + 60_000)
    produce(kafka_bootstrap, job.topics["tweets"], first)
    job.run(spark)
    produce(kafka_bootstrap, job.topics["tweets"], [*(t for t, _ in crafted.values()), *second])
    # the driver fetches the dead letters (1.4 MB) in parts of about 200 kB
    query, processor = start_query(spark, job.config(collect_part_bytes=200_000))
    try:
        assert query.awaitTermination(300), "the run with crafted tweets did not end in 300 s"
    finally:
        processor.close()
    assert query.exception() is None
    counted = [t for t, flag in crafted.values() if flag is None]
    tweets = first + second + counted
    assert finals_of(job.records()) == oracle_finals(tweets, watermark_after(tweets))
    letters = {d["key"]: d for d in (AvroCodec("dead_letter").decode(r.value) for r in read_all(
        kafka_bootstrap, job.topics["dlq"]))}  # fmt: skip
    expected = {str(t["id"]).encode(): flag for t, flag in crafted.values() if flag is not None}
    assert {key: d["reason"].split(":")[0] for key, d in letters.items()} == {
        key: f"over --{flag}" for key, flag in expected.items()
    }
    assert all(AvroCodec("tweet").decode(d["value"])["id"] == int(k) for k, d in letters.items())
    reasons = Counter[str]()
    for stats in processor.history:
        reasons.update(stats.dead_reasons)
    from trending.metrics import dead_reason_label

    assert Counter(dead_reason_label(r) for r in reasons.elements()) == Counter(
        flag.replace("-", "_") for flag in expected.values()
    )


def test_results_too_large_for_their_topic_are_dead_letters_and_nothing_is_lost(
    kafka_bootstrap: str, spark: Any, tmp_path: Path
) -> None:
    """An output topic that accepts 200 bytes: the larger top-k records go to the dead-letter
    topic whole (reason "oversized result"), the others to the output; together they are the
    finals the rule gives, and every batch commits."""
    job = Job(kafka_bootstrap, tmp_path)
    ensure_topics(kafka_bootstrap, [job.topics["trending"]], 1, config={"max.message.bytes": "200"})
    tweets = make_tweets(1_500, seed=41)
    produce(kafka_bootstrap, job.topics["tweets"], tweets)
    processor = job.run(spark)
    published = job.records()
    letters = [AvroCodec("dead_letter").decode(r.value) for r in read_all(
        kafka_bootstrap, job.topics["dlq"])]  # fmt: skip
    assert published and letters
    assert {d["reason"].split(":")[0] for d in letters} == {"oversized result"}
    assert {(d["topic"], d["partition"]) for d in letters} == {(job.topics["trending"], -1)}
    assert all(len(d["value"]) == d["value_size"] for d in letters)
    recovered = [AvroCodec("trending_topk").decode(d["value"]) for d in letters]
    assert finals_of(published + recovered) == oracle_finals(tweets, watermark_after(tweets))
    assert sum(s.dead for s in processor.history) == len(letters)


def test_settings_whose_state_could_outgrow_the_commits_topic_are_refused_at_start(
    kafka_bootstrap: str, spark: Any, tmp_path: Path
) -> None:
    """--top 400 with hashtags of up to 280 characters in 5 open windows: the state could take
    18.5 MB, more than the commits topic's 16 MB; the job says so before it reads anything."""
    job = Job(kafka_bootstrap, tmp_path)
    with pytest.raises(UserError, match=r"--top 400, --max-hashtag-chars 280 .* bytes, more than"):
        start_query(spark, job.config(k=400))
    from trending.text.bounds import TweetBounds

    query, processor = start_query(
        spark, job.config(k=400, bounds=TweetBounds(max_hashtag_chars=100))
    )
    try:
        query.awaitTermination()
    finally:
        processor.close()
    assert query.exception() is None


def test_a_lost_commit_marker_publishes_nothing_twice(
    kafka_bootstrap: str, spark: Any, tmp_path: Path
) -> None:
    """Between two runs the marker's group is deleted (its offsets expired after
    offsets.retention.minutes of quiet): the second run recovers the last batch and state from
    the commits topic and goes on; every window is final once, as the rule says."""
    from tests.integration.test_commit_markers import delete_marker

    job = Job(kafka_bootstrap, tmp_path)
    first, second = make_tweets(2_000, seed=51), make_tweets(2_000, seed=52, start_index=2_000)
    produce(kafka_bootstrap, job.topics["tweets"], first)
    processor = job.run(spark)
    delete_marker(kafka_bootstrap, processor.writer.transactional_id)
    produce(kafka_bootstrap, job.topics["tweets"], second)
    again = job.run(spark)
    assert again.history[0].batch_id == processor.history[-1].batch_id + 1
    tweets = first + second
    assert finals_of(job.records()) == oracle_finals(tweets, watermark_after(tweets))


def test_an_available_now_run_warms_up_on_at_most_what_it_has_to_read(
    kafka_bootstrap: str, spark: Any, tmp_path: Path
) -> None:
    """``--warm-up-rows`` is capped by the run's backlog: the end offsets of the input minus
    what the checkpoint's last done batch read; a run with nothing new warms up not at all."""
    from trending.jobs.hashtags import warm_up_rows
    from trending.spark.checkpoint import JobCheckpoint

    job = Job(kafka_bootstrap, tmp_path)
    produce(kafka_bootstrap, job.topics["tweets"], make_tweets(300, seed=8))
    checkpoint = JobCheckpoint(spark, str(job.checkpoint))
    assert warm_up_rows(job.config(), checkpoint) == 300  # a new checkpoint: all of the topic
    assert warm_up_rows(job.config(warm_up_rows=120), checkpoint) == 120
    assert warm_up_rows(job.config(available_now=False), checkpoint) == 2_000  # live: as set
    job.run(spark)
    assert warm_up_rows(job.config(), checkpoint) == 0  # nothing new
    produce(kafka_bootstrap, job.topics["tweets"], make_tweets(40, seed=9, start_index=300))
    assert warm_up_rows(job.config(), checkpoint) == 40
