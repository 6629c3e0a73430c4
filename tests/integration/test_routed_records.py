"""Late tweets and dead letters of the hashtags job, record by record, against
docs/jobs/hashtags.md.

One job on a real broker and Spark, run twice on one checkpoint: the first run sets the watermark;
the second reads, in one micro-batch judged by that watermark, tweets whose windows are all final
(one of them ending exactly at the watermark), tweets whose windows are partly final, a tweet on a
window's end, malformed records and a tweet from a bad clock, spread over two partitions with their
own keys, headers and Kafka timestamps. Each test checks one promise of docs/jobs/hashtags.md,
"Semantics of trending run hashtags", and docs/metrics.md on what the second run published; the
expectations come from the rule (:func:`tests.support.hashtags.rule_outcome`) and from the records
as the producer's delivery reports and the input topic tell them.

Windows: 70 s every 30 s (the hop does not divide the size) aligned at 7 s, lateness 5 s. Times
below are relative to ``B``, a window start: windows ``[30j, 30j + 70)`` s.
"""

from __future__ import annotations

import time
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from prometheus_client.parser import text_string_to_metric_families

from connectors.avro import AvroCodec
from connectors.kafka import ensure_topics
from tests.support.hashtags import rule_outcome, windows_holding
from tests.support.kafka import Record, read_all
from trending.jobs.hashtags import HashtagJobConfig, start_query
from trending.metrics import Metrics
from trending.spark.listener import Monitoring

pytestmark = pytest.mark.integration

SIZE, HOP, ALIGN, LATENESS, TOP = 70_000, 30_000, 7_000, 5_000, 10
B = ALIGN + 58_666_667 * HOP  # 2025-10-09, a window start
Headers = list[tuple[str, bytes | None]]


def tweet(id_: int, at_s: float, text: str) -> dict[str, Any]:
    return {"id": id_, "user": f"u{id_}", "text": text, "lang": None,
            "created_at": B + round(at_s * 1000)}  # fmt: skip


# Run 1: on time, on and beside window boundaries; newest 135 s, so the watermark is 130 s,
# the end of window [60, 130).
FIRST = [
    tweet(1, 0, "#spark"), tweet(2, 10, "#kafka #spark"), tweet(3, 30, "#spark"),
    tweet(4, 30, "#flink"), tweet(5, 60, "#kafka"), tweet(6, 69.999, "#spark #flink"),
    tweet(7, 70, "#kafka"), tweet(8, 100, "#spark"), tweet(9, 129.999, "#flink"),
    tweet(10, 130, "#spark #kafka"), tweet(11, 135, "#kafka"),
]  # fmt: skip
WATERMARK_1 = B + 130_000
# Run 2, all under watermark 130 s. Late: every window final ([-30, 40), [0, 70); [0, 70),
# [30, 100), [60, 130): the last ends exactly at the watermark).
LATE = [tweet(21, 10, "#ancient"), tweet(22, 60, "#onstart"), tweet(23, 89.999, "#justbefore")]
# Partly late: [30, 100) and [60, 130) final, [90, 160) open; [60, 130) final, [90, 160) and
# [120, 190) open. On an end: [90, 160) and [120, 190), not [60, 130). Then a tweet at 200 s:
# watermark 195 s, which closes [90, 160) and [120, 190).
PARTIAL = [tweet(31, 90, "#partial90 #spark"), tweet(32, 129.999, "#partial130 #spark")]
ON_END = [tweet(33, 130, "#onend")]
ADVANCE = [tweet(34, 200, "#kafka")]
# year 9999, far ahead of the clock: a dead letter
FUTURE = tweet(41, 0, "#future") | {"created_at": 253_402_300_799_000}

HEADERS: Headers = [("trace", b"\x00\xff"), ("none", None), ("trace", b"again"), ("empty", b"")]


@dataclass(frozen=True)
class Sent:
    """A record as produced: what was sent and where the delivery report put it."""

    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: Headers
    timestamp: int  # Kafka's CreateTime, from the delivery report


def produce(bootstrap: str, topic: str, records: list[dict[str, Any]]) -> list[Sent]:
    """Produce ``records`` (``partition``, ``key``, ``value``, ``headers``, ``timestamp``: 0 for
    the producer's clock) in order, each partition's in order; what was delivered."""
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    sent: list[Sent] = []
    for record in records:

        def delivered(error: Any, message: Any, record: dict[str, Any] = record) -> None:
            assert error is None, error
            _kind, timestamp = message.timestamp()
            sent.append(
                Sent(message.partition(), message.offset(), record["key"], record["value"],
                     record["headers"], timestamp)
            )  # fmt: skip

        producer.produce(
            topic, record["value"], record["key"], record["partition"],
            on_delivery=delivered, timestamp=record["timestamp"], headers=record["headers"],
        )  # fmt: skip
        producer.flush(30)  # one at a time: offsets in the order given
    assert len(sent) == len(records)
    return sent


def tweet_record(
    t: dict[str, Any], partition: int, key: bytes | None, headers: Headers
) -> dict[str, Any]:
    return {"partition": partition, "key": key, "value": AvroCodec("tweet").encode(t),
            "headers": headers, "timestamp": 0}  # fmt: skip


def malformed() -> list[dict[str, Any]]:
    """Values that are no tweet, and a tweet from a bad clock, each with its own key, headers
    and Kafka timestamp (an hour ago: within the topic's retention)."""
    valid = AvroCodec("tweet").encode(tweet(51, 100, "#XY"))
    now = int(time.time() * 1000) - 3_600_000
    values: list[tuple[bytes | None, bytes | None, Headers]] = [
        (b"\x00\x01bad\xff", b"\x01garbage", HEADERS),  # a negative length
        (b"tombstone", None, [("only", b"x")]),  # a null value
        (b"", b"", []),  # an empty key and value
        (None, valid + b"\x00", [("none", None)]),  # trailing bytes
        (b"utf8", valid.replace(b"XY", b"\xff\xfe"), HEADERS[:1]),  # text not UTF-8
        (b"41", AvroCodec("tweet").encode(FUTURE), HEADERS[1:]),  # a bad clock
    ]
    return [
        {"partition": i % 2, "key": key, "value": value, "headers": headers, "timestamp": now + i}
        for i, (key, value, headers) in enumerate(values)
    ]


@dataclass
class Outcome:
    """What the second run read and published."""

    topics: dict[str, str]
    second: list[Sent]  # every record the second run read, as produced
    malformed: list[Sent]
    late: dict[int, Sent]  # by tweet id
    input: dict[tuple[int, int], Record]  # the input topic as read back
    late_topic: list[Record]
    letters: list[dict[str, Any]]
    output: list[tuple[tuple[int, int], dict[str, Any]]]  # ((partition, offset), top-k record)
    first_output: set[tuple[int, int]]  # (partition, offset) of the first run's top-k records
    batches: int  # micro-batches of the second run
    metrics: str  # the second run's /metrics, when it ended


@pytest.fixture(scope="module")
def outcome(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Outcome]:
    from trending.spark.session import build_session

    spark = build_session("tests-routed", "local[2]", shuffle_partitions=2)
    try:
        yield run_twice(spark, kafka_bootstrap, tmp_path_factory.mktemp("routed"))
    finally:
        spark.stop()


def run_twice(spark: Any, bootstrap: str, folder: Path) -> Outcome:
    tag = uuid.uuid4().hex[:8]
    topics = {n: f"{n}-{tag}" for n in ("tweets", "trending", "late", "dlq")}
    ensure_topics(bootstrap, [topics["tweets"]], partitions=2)
    config = HashtagJobConfig(
        bootstrap=bootstrap, checkpoint=str(folder / "checkpoint"),
        input_topic=topics["tweets"], output_topic=topics["trending"],
        late_topic=topics["late"], dead_letter_topic=topics["dlq"], size_ms=SIZE, hop_ms=HOP,
        align_ms=ALIGN, lateness_ms=LATENESS, k=TOP, available_now=True, warm_up_rows=2_000,
    )  # fmt: skip
    first = [tweet_record(t, i % 2, str(t["id"]).encode(), []) for i, t in enumerate(FIRST)]
    produce(bootstrap, topics["tweets"], first)
    query, processor = start_query(spark, config)
    try:
        query.awaitTermination(300)
    finally:
        processor.close()
    assert not query.isActive and query.exception() is None
    first_output = {(r.partition, r.offset) for r in read_all(bootstrap, topics["trending"])}

    late_keys: list[bytes | None] = [None, b"\x00late\xff", b""]
    late_headers: list[Headers] = [[], HEADERS, [("empty", b"")]]
    on_time = [*PARTIAL, *ON_END, *ADVANCE]
    records = [
        *(tweet_record(t, i % 2, k, h) for i, (t, k, h) in enumerate(
            zip(LATE, late_keys, late_headers, strict=True))),
        *(tweet_record(t, i % 2, str(t["id"]).encode(), HEADERS) for i, t in enumerate(on_time)),
        *malformed(),
    ]  # fmt: skip
    second = produce(bootstrap, topics["tweets"], records)
    monitoring = Monitoring(spark, Metrics("hashtags", spark.version), ("127.0.0.1", 0), bootstrap)
    try:
        query, processor = start_query(spark, config, on_processor=monitoring.attach)
        monitoring.watch(query)
        try:
            query.awaitTermination(300)
        finally:
            processor.close()
        assert not query.isActive and query.exception() is None
        url = f"http://127.0.0.1:{monitoring.server.port}/metrics"
        with urllib.request.urlopen(url, timeout=10) as response:
            metrics = response.read().decode()
    finally:
        monitoring.close()
    trending = AvroCodec("trending_topk")
    return Outcome(
        topics=topics,
        second=second,
        malformed=second[len(LATE) + len(on_time) :],
        late=dict(zip([t["id"] for t in LATE], second[: len(LATE)], strict=True)),
        input={(r.partition, r.offset): r for r in read_all(bootstrap, topics["tweets"])},
        late_topic=read_all(bootstrap, topics["late"]),
        letters=[
            AvroCodec("dead_letter").decode(r.value) for r in read_all(bootstrap, topics["dlq"])
        ],
        output=[
            ((r.partition, r.offset), trending.decode(r.value))
            for r in read_all(bootstrap, topics["trending"])
        ],
        first_output=first_output,
        batches=sum(not s.skipped for s in processor.history),
        metrics=metrics,
    )


def test_the_records_read_back_are_those_produced(outcome: Outcome) -> None:
    """The premise of the tests below: the input topic holds what the producer sent (an empty
    key or value stays empty, a null one null), and the second run read it in one batch, so
    one watermark judged all of it."""
    for sent in outcome.second:
        stored = outcome.input[(sent.partition, sent.offset)]
        assert (stored.key, stored.value, list(stored.headers)) == (
            sent.key, sent.value, sent.headers,
        )  # fmt: skip
    assert {s.partition for s in outcome.malformed} == {0, 1}
    assert outcome.batches == 1


def test_dead_letters_carry_the_produced_records_topic_partition_offset_key_value_timestamp_headers(
    outcome: Outcome,
) -> None:
    """docs/jobs/hashtags.md: a record that does not decode (or comes from a bad clock) goes to the
    dead-letter topic as a DeadLetter with its source topic, partition, offset, Kafka timestamp,
    headers, key and value bytes, and a reason."""
    got = [
        (d["topic"], d["partition"], d["offset"], d["key"], d["value"], d["timestamp"],
         [(h["key"], h["value"]) for h in d["headers"]])
        for d in outcome.letters
    ]  # fmt: skip
    expected = [
        (outcome.topics["tweets"], s.partition, s.offset, s.key, s.value, s.timestamp, s.headers)
        for s in outcome.malformed
    ]
    assert len(got) == len(expected)
    assert sorted(got, key=lambda x: x[1:3]) == sorted(expected, key=lambda x: x[1:3])
    assert all(d["reason"] and d["value_size"] is None for d in outcome.letters)
    future = [d for d in outcome.letters if d["key"] == b"41"]
    assert [d["reason"] for d in future] == ["future-timestamp"]


def test_late_tweets_are_republished_byte_for_byte_with_origin_headers(outcome: Outcome) -> None:
    """docs/jobs/hashtags.md: a late tweet goes out byte for byte as it came, its own Kafka headers
    kept, then headers origin.topic, origin.partition and origin.offset (decimal text)."""
    expected = {
        s.value: (s.key, [
            *s.headers,
            ("origin.topic", outcome.topics["tweets"].encode()),
            ("origin.partition", str(s.partition).encode()),
            ("origin.offset", str(s.offset).encode()),
        ])
        for s in outcome.late.values()
    }  # fmt: skip
    assert len(outcome.late_topic) == len(expected)
    assert {r.value: (r.key, list(r.headers)) for r in outcome.late_topic} == expected


def test_a_tweet_counts_in_its_open_windows_and_is_late_only_when_all_are_final(
    outcome: Outcome,
) -> None:
    """docs/jobs/hashtags.md: a window is final once the watermark reaches its end; a tweet counts
    toward each of its windows still open, and is late when all are final; a final window is never
    revised. So a tweet whose last window ends exactly at the watermark is late, one whose windows
    are partly final counts in the open ones only, one on a window's end is not in that window."""
    batches = [FIRST, [*LATE, *PARTIAL, *ON_END, *ADVANCE]]
    finals, late = rule_outcome(batches, SIZE, HOP, ALIGN, TOP, LATENESS)
    # the premises, from the rule: which windows each special tweet falls in
    last_ends = [
        max(e for _, e in windows_holding(t["created_at"], SIZE, HOP, ALIGN)) for t in LATE
    ]
    assert last_ends == [B + 70_000, WATERMARK_1, WATERMARK_1]
    assert late == LATE
    published = {
        (r["window_start"], r["window_end"]): r for _, r in outcome.output if r["is_final"]
    }
    assert len(published) == sum(r["is_final"] for _, r in outcome.output)
    assert {
        w: [(e["hashtag"], e["count"]) for e in r["top"]] for w, r in published.items()
    } == finals
    codec = AvroCodec("tweet")
    assert sorted(codec.decode(r.value)["id"] for r in outcome.late_topic) == [21, 22, 23]

    def windows_with(tag: str) -> dict[int, int]:
        return {
            (w[0] - B) // 1000: dict((e["hashtag"], e["count"]) for e in r["top"])[tag]
            for w, r in published.items()
            if tag in [e["hashtag"] for e in r["top"]]
        }

    assert windows_with("partial90") == {90: 1}  # not [30, 100) nor [60, 130)
    assert windows_with("partial130") == {90: 1, 120: 1}  # not [60, 130)
    assert windows_with("onend") == {90: 1, 120: 1}
    tags = {e["hashtag"] for _, r in outcome.output for e in r["top"]}
    assert tags.isdisjoint({"ancient", "onstart", "justbefore"})
    # nothing of the second run touched a window the first run's watermark had closed
    touched = {r["window_end"] for at, r in outcome.output if at not in outcome.first_output}
    assert touched and min(touched) > WATERMARK_1


def test_dead_letter_and_late_counters_equal_the_records_on_their_topics(outcome: Outcome) -> None:
    """docs/metrics.md: trending_dead_letters_total and trending_late_records_total count the
    routed records, trending_kafka_records_written_total the records per topic; read after the
    run, from the job's /metrics, they equal what the topics hold (read_committed)."""
    samples = [
        s for family in text_string_to_metric_families(outcome.metrics) for s in family.samples
    ]

    def total(name: str, **labels: str) -> float:
        return sum(
            s.value for s in samples
            if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())
        )  # fmt: skip

    dead, late = len(outcome.letters), len(outcome.late_topic)
    assert (dead, late) == (len(outcome.malformed), len(LATE))
    assert total("trending_dead_letters_total") == dead
    assert total("trending_late_records_total") == late
    written = "trending_kafka_records_written_total"
    assert total(written, topic=outcome.topics["dlq"]) == dead
    assert total(written, topic=outcome.topics["late"]) == late
    # per reason, by the labels the README names (Alerts, TrendingDeadLetters)
    labels = {"empty value": "empty_value", "future-timestamp": "future_timestamp",
              "trailing bytes": "trailing_bytes", "not valid UTF-8": "invalid_utf8"}  # fmt: skip
    for words, label in labels.items():
        letters = sum(words in d["reason"] for d in outcome.letters)
        assert letters >= 1 and total("trending_dead_letters_total", reason=label) == letters
