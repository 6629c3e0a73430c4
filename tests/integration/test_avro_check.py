"""Strict Avro on the Spark path: what Spark's ``from_avro`` lets through is a dead letter.

Values are built byte by byte from the Avro specification (zig-zag varints, length-prefixed
UTF-8 strings, union index then branch), not with the project's encoders, and go through
:func:`connectors.spark_kafka.decode_avro` in a real Spark session.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from connectors.avro import schema_json

pytestmark = pytest.mark.integration

HEADER = b"\x00\x00\x00\x00\x07"


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


def reasons(spark: Any, values: list[bytes | None], confluent: bool = False) -> list[str | None]:
    from pyspark.sql.types import BinaryType, StructField, StructType

    from connectors.spark_kafka import decode_avro

    schema = StructType([StructField("value", BinaryType())])
    df = spark.createDataFrame([(v,) for v in values], schema).coalesce(1)
    rows = decode_avro(df, schema_json("tweet"), confluent).select("reason", "record").collect()
    for row in rows:  # a record exactly when there is no reason
        assert (row["record"] is None) == (row["reason"] is not None)
    return [row["reason"] for row in rows]


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


def test_the_wire_format_is_checked_after_its_header(spark: Any) -> None:
    values = [HEADER + tweet(), HEADER + tweet() + b"\x01", HEADER + tweet(b"\x80"), None]
    assert reasons(spark, values, confluent=True) == [
        None,
        "trailing bytes after the Avro record",
        "string field text is not valid UTF-8",
        "empty value",
    ]


def test_a_huge_length_prefix_costs_no_heap(spark: Any) -> None:
    """Twenty values claiming 1.9 GB each: ``from_avro`` would allocate what they claim."""
    bomb = zigzag(7) + string(b"u") + zigzag(1_900_000_000) + b"\x00" * 16
    got = reasons(spark, [bomb] * 20 + [tweet()])
    assert got == ["length of field text is beyond the value"] * 20 + [None]
