"""Strict Avro on the Spark path: what Spark's ``from_avro`` lets through is a dead letter.

Values are built byte by byte from the Avro specification (zig-zag varints, length-prefixed
UTF-8 strings, union index then branch), not with the project's encoders, and go through
:func:`connectors.spark_kafka.decode_avro` in a real Spark session.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timezone
from typing import Any

import pytest

from connectors.avro import schema_json

pytestmark = pytest.mark.integration


def zigzag(n: int) -> bytes:
    raw = (n << 1) ^ (n >> 63)
    out = bytearray()
    while raw >= 0x80:
        out.append((raw & 0x7F) | 0x80)
        raw >>= 7
    out.append(raw)
    return bytes(out)


def string(data: bytes) -> bytes:
    return zigzag(len(data)) + data


def tweet(
    text: bytes = b"#spark rocks", lang: bytes | None = None, created: int = 1_700_000_000_000
) -> bytes:
    """id 7, user "u", ``text`` (raw bytes), created_at, lang (union [null, string])."""
    tail = b"\x00" if lang is None else b"\x02" + string(lang)
    return zigzag(7) + string(b"u") + string(text) + zigzag(created) + tail


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    from trending.spark.session import build_session

    session = build_session("tests-avro-check", "local[1]", shuffle_partitions=1)
    yield session
    session.stop()


def decoded(spark: Any, values: list[bytes | None], registry: Any = None) -> list[Any]:
    """(reason, record) rows of ``values`` decoded as tweets."""
    from pyspark.sql.types import BinaryType, StructField, StructType

    from connectors.spark_kafka import decode_avro

    schema = StructType([StructField("value", BinaryType())])
    df = spark.createDataFrame([(v,) for v in values], schema).coalesce(1)
    rows = decode_avro(df, schema_json("tweet"), registry).select("reason", "record").collect()
    for row in rows:  # a record exactly when there is no reason
        assert (row["record"] is None) == (row["reason"] is not None)
    return rows


def reasons(spark: Any, values: list[bytes | None], registry: Any = None) -> list[str | None]:
    return [row["reason"] for row in decoded(spark, values, registry)]


CASES = [
    ("valid", tweet(), None),
    ("valid, lang and a 4-byte character", tweet("#日本 🎉".encode(), lang=b"ja"), None),
    ("one trailing byte", tweet() + b"\x00", "trailing bytes after the Avro record"),
    ("a second record after it", tweet() + tweet(), "trailing bytes after the Avro record"),
    ("invalid byte in text", tweet(b"#ok \xff"), "string field text is not valid UTF-8"),
    ("overlong slash in text", tweet(b"\xc0\xaf"), "string field text is not valid UTF-8"),
    ("UTF-16 surrogate in text", tweet(b"\xed\xa0\x80"), "string field text is not valid UTF-8"),
    ("cut multi-byte character", tweet("é".encode()[:1]), "string field text is not valid UTF-8"),
    ("invalid UTF-8 in lang", tweet(lang=b"\xfe"), "string field lang is not valid UTF-8"),
    ("length prefix of 1.5 GB", zigzag(7) + string(b"u") + zigzag(1_500_000_000) + b"#x",
     "length of field text is beyond the value"),
    ("negative length", zigzag(7) + zigzag(-3) + b"abc", "length of field user is negative"),
    ("cut inside created_at", tweet()[:-3], "value ends inside field created_at"),
    ("union index 5", tweet()[:-1] + zigzag(5), "union index of field lang is out of range"),
    ("11-byte varint", b"\xff" * 10 + b"\x01", "varint of field id is longer than 10 bytes"),
    ("nothing", b"", "value ends inside field id"),
]  # fmt: skip


def test_each_malformed_value_has_its_reason_and_valid_ones_decode(spark: Any) -> None:
    got = reasons(spark, [value for _, value, _ in CASES])
    assert dict(zip([name for name, _, _ in CASES], got, strict=True)) == {
        name: reason for name, _, reason in CASES
    }


@pytest.mark.parametrize("fields", [None, ("text", "created_at")])
def test_a_value_is_decoded_once(spark: Any, fields: tuple[str, ...] | None) -> None:
    """The reason and the record come from one ``from_avro``: each one in the executed plan
    decodes every valid value again."""
    from pyspark.sql.types import BinaryType, StructField, StructType

    from connectors.spark_kafka import decode_avro

    schema = StructType([StructField("value", BinaryType())])
    df = spark.createDataFrame([(tweet(),), (tweet() + b"\x00",)], schema)
    out = decode_avro(df, schema_json("tweet"), None, fields).select("reason", "record")
    plan = out._jdf.queryExecution().executedPlan().toString()
    assert plan.count("from_avro(") == 1, plan
    assert [row["reason"] is None for row in out.collect()] == [True, False]


def header(schema_id: int) -> bytes:
    """Confluent wire format: magic byte 0, then the schema id as 4 big-endian bytes."""
    return b"\x00" + schema_id.to_bytes(4, "big")


# The job's tweet schema evolved: fields reordered, ``id`` an int (Avro widens it to the
# reader's long), ``lang`` dropped (the reader's default, null, fills it), ``source`` added
# (skipped by the reader).
EVOLVED_TWEET = {
    "type": "record", "name": "Tweet", "namespace": "trending",
    "fields": [
        {"name": "created_at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "text", "type": "string"},
        {"name": "user", "type": "string"},
        {"name": "id", "type": "int"},
        {"name": "source", "type": "string", "default": "web"},
    ],
}  # fmt: skip
# ``text`` as an int: no tweet can be read from it.
INCOMPATIBLE_TWEET = {
    "type": "record", "name": "Tweet", "namespace": "trending",
    "fields": [{"name": "id", "type": "long"}, {"name": "text", "type": "int"}],
}  # fmt: skip


def evolved(text: bytes, source: bytes = b"app", created: int = 1_700_000_000_000) -> bytes:
    """A body of :data:`EVOLVED_TWEET`: id 9, user "v"."""
    return zigzag(created) + string(text) + string(b"v") + zigzag(9) + string(source)


@pytest.fixture()
def registry() -> Iterator[Any]:
    """Schemas: the job's own, its evolution, an incompatible one and a Protobuf one."""
    import json

    from tests.support.registry import schema_registry

    with schema_registry() as running:
        state = running.state
        ids = {
            "own": state.add("tweets-value", schema_json("tweet")),
            "evolved": state.add("tweets-value", json.dumps(EVOLVED_TWEET)),
            "incompatible": state.add("other-value", json.dumps(INCOMPATIBLE_TWEET)),
            "protobuf": state.add("proto-value", 'syntax = "proto3";', "PROTOBUF"),
        }
        yield running, ids


def access(url: str, **settings: Any) -> Any:
    from connectors.kafka_settings import SchemaRegistryAccess

    return SchemaRegistryAccess(url, {"timeout": "5", "max.retries": "0", **settings})


def test_values_are_read_with_the_writer_schema_their_id_names(spark: Any, registry: Any) -> None:
    running, ids = registry
    unknown = max(ids.values()) + 50
    values = [
        header(ids["own"]) + tweet(),
        header(ids["evolved"]) + evolved("#evolved ✓".encode()),
        header(ids["evolved"]) + evolved(b"#again", source=b""),
        header(unknown) + tweet(),
        header(ids["incompatible"]) + zigzag(7) + zigzag(5),
        header(ids["protobuf"]) + b"\x08\x01",
        header(ids["own"]) + tweet() + b"\x01",
        header(ids["evolved"]) + evolved(b"#x") + b"\x00",
        header(ids["evolved"]) + evolved(b"bad \xff"),
        header(ids["evolved"]) + zigzag(1) + zigzag(1_000_000_000),
        b"\x01" + header(ids["own"])[1:] + tweet(),
        b"\x00\x00",
        None,
    ]
    rows = decoded(spark, values, access(running.url))
    assert [row["reason"] for row in rows] == [
        None,
        None,
        None,
        f"unknown schema id {unknown}",
        f"schema id {ids['incompatible']} is not compatible with the job's schema trending.Tweet",
        f"schema id {ids['protobuf']} is PROTOBUF, not Avro",
        "trailing bytes after the Avro record",
        "trailing bytes after the Avro record",
        "string field text is not valid UTF-8",
        "length of field text is beyond the value",
        "not in Confluent wire format (magic byte 0 + schema id)",
        "not in Confluent wire format (magic byte 0 + schema id)",
        "empty value",
    ]
    records = [row["record"].asDict() for row in rows[:3]]
    created = datetime.fromtimestamp(1_700_000_000, tz=timezone.utc).replace(tzinfo=None)
    assert records[0] == {
        "id": 7, "user": "u", "text": "#spark rocks", "created_at": created, "lang": None
    }  # fmt: skip
    assert records[1] == {
        "id": 9, "user": "v", "text": "#evolved ✓", "created_at": created, "lang": None
    }  # fmt: skip
    assert records[2]["text"] == "#again"
    # each writer schema is fetched once, however many values name it
    assert running.state.lookups(ids["evolved"]) == 1


def test_the_registry_credentials_are_sent_and_a_refusal_fails_loudly(spark: Any) -> None:
    from tests.support.registry import schema_registry

    with schema_registry(users={"reader": "s3cret-pw"}) as running:
        own = running.state.add("tweets-value", schema_json("tweet"))
        good = access(running.url, **{"basic.auth.user.info": "reader:s3cret-pw"})
        assert reasons(spark, [header(own) + tweet()], good) == [None]
        wrong = access(running.url, **{"basic.auth.user.info": "reader:wrong-pw"})
        with pytest.raises(Exception, match="refused the credentials") as failure:
            reasons(spark, [header(own) + tweet()], wrong)
        assert "wrong-pw" not in str(failure.value)


def test_a_registry_outage_fails_the_batch_instead_of_dead_lettering(spark: Any) -> None:
    """Values are not dead letters because the registry is away: the batch fails (to be
    retried), and once the registry answers the same values decode."""
    from tests.support.registry import schema_registry

    with schema_registry() as running:
        own = running.state.add("tweets-value", schema_json("tweet"))
        running.state.down = True
        with pytest.raises(Exception, match="did not answer for schema id"):
            reasons(spark, [header(own) + tweet()], access(running.url))
        running.state.down = False
        assert reasons(spark, [header(own) + tweet()], access(running.url)) == [None]


def test_a_registry_only_python_can_reach_is_refused_at_start() -> None:
    from trending.errors import UserError

    with pytest.raises(UserError, match="http"):
        access("mock://in-process")


def test_a_huge_length_prefix_costs_no_heap(spark: Any) -> None:
    """Twenty values claiming 1.9 GB each: ``from_avro`` would allocate what they claim."""
    bomb = zigzag(7) + string(b"u") + zigzag(1_900_000_000) + b"\x00" * 16
    got = reasons(spark, [bomb] * 20 + [tweet()])
    assert got == ["length of field text is beyond the value"] * 20 + [None]


def test_a_registry_over_tls_with_a_client_certificate(spark: Any, tmp_path: Any) -> None:
    """HTTPS with the registry's CA (``ssl.ca.location``) and a client certificate and PKCS#8
    key (``ssl.certificate.location``, ``ssl.key.location``): values decode. Without the client
    certificate the registry refuses the connection, and the batch fails."""
    from tests.support.registry import schema_registry, self_signed

    server, client = self_signed(tmp_path, "registry"), self_signed(tmp_path, "job")
    with schema_registry(tls=server, client_ca=client.cert) as running:
        assert running.url.startswith("https://")
        own = running.state.add("tweets-value", schema_json("tweet"))
        trusted = {"ssl.ca.location": str(server.cert)}
        mutual = access(
            running.url,
            **trusted,
            **{"ssl.certificate.location": str(client.cert), "ssl.key.location": str(client.key)},
        )
        assert reasons(spark, [header(own) + tweet()], mutual) == [None]
        with pytest.raises(Exception, match="did not answer for schema id"):
            reasons(spark, [header(own) + tweet()], access(running.url, **trusted))
