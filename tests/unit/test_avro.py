"""Avro codecs: schemas, round trips, the Confluent wire format, malformed input.

Tests marked "mock registry" use confluent-kafka's in-process mock schema registry
(``mock://`` URLs): no registry server runs.
"""

from __future__ import annotations

import io
import json
import struct
import uuid
from typing import Any

import fastavro
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from connectors.avro import (
    AvroCodec,
    MalformedRecord,
    encode_long,
    encode_longs,
    encode_tweet,
    schema_for_topic,
    schema_json,
    schema_path,
)
from tests.support.oracles import avro_body, avro_record
from trending.errors import UserError

LONGS = st.integers(min_value=-(2**63), max_value=2**63 - 1)
TWEET = {
    "id": 1_234_567_890_123,
    "user": "ada",
    "text": "Grüße aus 東京 #Café #CAFÉ https://t.co/x",
    "created_at": 1_700_000_000_123,
    "lang": "de",
}
TOPK = {
    "window_start": 1_700_000_000_000,
    "window_end": 1_700_000_300_000,
    "top": [{"hashtag": "café", "count": 42}, {"hashtag": "東京", "count": 7}],
    "revision": 3,
    "is_final": True,
    "emitted_at": 1_700_000_301_000,
}
DEAD = {
    "topic": "tweets",
    "partition": 2,
    "offset": 99,
    "key": b"ada",
    "value": b"\x00\xff",
    "reason": "not a valid Avro value",
    "failed_at": 1_700_000_000_000,
    "value_size": 3_000_000,
    "timestamp": 1_699_999_999_000,
    "headers": [{"key": "trace", "value": b"\x01"}, {"key": "none", "value": None}],
}


def mock_url() -> str:
    return f"mock://test-{uuid.uuid4().hex[:8]}"


def fields(name: str) -> dict[str, Any]:
    return {f["name"]: f["type"] for f in json.loads(schema_json(name))["fields"]}


def test_tweet_schema_is_exactly_as_specified() -> None:
    schema = json.loads(schema_json("tweet"))
    assert (schema["name"], schema["namespace"]) == ("Tweet", "trending")
    assert fields("tweet") == {
        "id": "long",
        "user": "string",
        "text": "string",
        "created_at": {"type": "long", "logicalType": "timestamp-millis"},
        "lang": ["null", "string"],
    }
    assert schema["fields"][-1]["default"] is None


def test_trending_topk_schema_is_exactly_as_specified() -> None:
    millis = {"type": "long", "logicalType": "timestamp-millis"}
    top = fields("trending_topk")["top"]
    assert top["type"] == "array"
    assert top["items"]["name"] == "HashtagCount"
    assert [(f["name"], f["type"]) for f in top["items"]["fields"]] == [
        ("hashtag", "string"),
        ("count", "long"),
    ]
    assert {k: v for k, v in fields("trending_topk").items() if k != "top"} == {
        "window_start": millis,
        "window_end": millis,
        "revision": "int",
        "is_final": "boolean",
        "emitted_at": millis,
    }


@pytest.mark.parametrize(
    ("name", "record"), [("tweet", TWEET), ("trending_topk", TOPK), ("dead_letter", DEAD)]
)
def test_plain_avro_is_what_fastavro_writes_and_reads(name: str, record: dict[str, Any]) -> None:
    codec = AvroCodec(name)
    assert codec.schema_id is None
    assert codec.encode(record) == avro_body(name, record)
    assert codec.decode(avro_body(name, record)) == record
    assert avro_record(name, codec.encode(record)) == record


def test_timestamps_decode_as_epoch_ms_ints() -> None:
    decoded = AvroCodec("trending_topk").decode(AvroCodec("trending_topk").encode(TOPK))
    for field in ("window_start", "window_end", "emitted_at"):
        assert type(decoded[field]) is int


def test_missing_optional_lang_encodes_as_null() -> None:
    tweet = {k: v for k, v in TWEET.items() if k != "lang"}
    assert AvroCodec("tweet").decode(AvroCodec("tweet").encode(tweet)) == {**tweet, "lang": None}


@given(
    id_=LONGS,
    created=LONGS,
    user=st.text(),
    text=st.text(max_size=3000),
    lang=st.none() | st.text(max_size=5),
)
def test_fast_tweet_writer_matches_fastavro(
    id_: int, created: int, user: str, text: str, lang: str | None
) -> None:
    tweet = {"id": id_, "user": user, "text": text, "created_at": created, "lang": lang}
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(json.loads(schema_json("tweet"))), tweet)
    assert encode_tweet(tweet) == out.getvalue()


@given(st.lists(LONGS, max_size=50))
def test_column_longs_match_single_longs(values: list[int]) -> None:
    assert encode_longs(np.array(values, dtype=np.int64)) == [encode_long(v) for v in values]


def test_encode_rejects_a_record_that_does_not_fit() -> None:
    with pytest.raises(ValueError, match="does not fit schema tweet"):
        AvroCodec("tweet").encode({"id": "x", "user": "u", "text": "t", "created_at": 1})
    with pytest.raises(ValueError, match="does not fit schema trending_topk"):
        AvroCodec("trending_topk").encode({"window_start": 1})


def test_wire_format_with_mock_registry() -> None:
    """Mock registry: confluent-kafka's in-process ``mock://`` schema registry."""
    url = mock_url()
    writer = AvroCodec("tweet", url, subject="tweets-value")
    data = writer.encode(TWEET)
    assert isinstance(writer.schema_id, int)
    assert data[0] == 0
    assert struct.unpack(">I", data[1:5])[0] == writer.schema_id
    assert data[5:] == avro_body("tweet", TWEET)
    assert AvroCodec("tweet", url, subject="tweets-value").decode(data) == TWEET


def test_wire_format_reads_an_older_writer_schema_with_mock_registry() -> None:
    """Mock registry: the reader resolves the registered writer schema against its own."""
    url = mock_url()
    old = {"type": "record", "name": "Tweet", "namespace": "trending", "fields": [
        {"name": "id", "type": "long"}, {"name": "user", "type": "string"},
        {"name": "text", "type": "string"},
        {"name": "created_at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    ]}  # fmt: skip
    from confluent_kafka.schema_registry import Schema

    from connectors.avro import registry_client

    schema_id = registry_client(url).register_schema(
        "tweets-value", Schema(json.dumps(old), "AVRO")
    )
    body = io.BytesIO()
    fastavro.schemaless_writer(
        body,
        fastavro.parse_schema(old),
        {k: TWEET[k] for k in ("id", "user", "text", "created_at")},
    )
    data = struct.pack(">bI", 0, schema_id) + body.getvalue()
    assert AvroCodec("tweet", url).decode(data) == {**TWEET, "lang": None}


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"\x01\x00\x00\x00\x01abc", "wrong magic byte 0x01"),
        (b"\x00\x00", "too short"),
        (b"\x00\x00\x00\x7f\xff\x02", "schema id 32767"),
    ],
)
def test_wire_format_errors_are_malformed_records(data: bytes, reason: str) -> None:
    """Mock registry: bad headers and unknown ids."""
    with pytest.raises(MalformedRecord, match=reason):
        AvroCodec("tweet", mock_url()).decode(data)


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"", "not a valid Avro value"),
        (AvroCodec("tweet").encode(TWEET)[:-3], "not a valid Avro value"),
        (AvroCodec("tweet").encode(TWEET) + b"\x00", "1 trailing bytes"),
        (b"\x02\x04\xff\xfe", "not a valid Avro value"),  # invalid UTF-8 in user
        (b"\x02\x02a\x02b\x02\x08", "not a valid Avro value"),  # union branch 4 of 2
    ],
)
def test_bad_bytes_are_malformed_records(data: bytes, reason: str) -> None:
    with pytest.raises(MalformedRecord, match=reason) as caught:
        AvroCodec("tweet").decode(data)
    assert caught.value.reason


def test_schema_json_is_the_file_and_keeps_logical_types() -> None:
    assert schema_json("tweet") == schema_path("tweet").read_text(encoding="utf-8")
    assert "timestamp-millis" in schema_json("tweet")


def test_unknown_schema_name_is_a_user_error() -> None:
    with pytest.raises(UserError, match="no Avro schema 'nope'"):
        schema_path("nope")


@pytest.mark.parametrize(
    ("topic", "schema"),
    [
        ("tweets", "tweet"),
        ("tweets-late", "tweet"),
        ("trending-hashtags", "trending_topk"),
        ("tweets-test-1a2b", "tweet"),
        ("tweets-late-1a2b", "tweet"),
        ("trending-hashtags-1a2b", "trending_topk"),
        ("tweets-dlq", "dead_letter"),
        ("trending.dlq", "dead_letter"),
        ("hashtags-dead-letter", "dead_letter"),
    ],
)
def test_schema_for_topic(topic: str, schema: str) -> None:
    assert schema_for_topic(topic) == schema


def test_unknown_topic_asks_for_a_schema() -> None:
    with pytest.raises(UserError, match="pass --schema"):
        schema_for_topic("sensors")
