"""Avro values on the project's topics: schemas, plain Avro and the Confluent wire format.

Schemas live in ``schemas/<name>.avsc`` of the source tree; the package carries them as
``trending/schemas`` (see :func:`schemas_dir`). Without a schema registry a value is the schemaless
Avro body (what Spark's ``to_avro``/``from_avro`` write and read). With a registry URL a value
is the Confluent wire format: magic byte ``0``, the 4-byte big-endian schema id, then the body;
the subject is ``<topic>-value`` (Confluent's default topic-name strategy). ``mock://NAME`` URLs
use confluent-kafka's in-process mock registry, shared by every codec of this process that names
the same URL (never across processes).

Timestamps: every ``timestamp-millis`` field is an ``int`` of epoch milliseconds in our dicts,
both ways. The codec strips time logical types before handing schemas to fastavro, so decoding
never yields ``datetime`` objects; the registered and Spark-facing schemas keep them.
"""

from __future__ import annotations

import io
import json
import os
import struct
from collections.abc import Callable, Mapping
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import fastavro

import trending
from connectors.jvm import REPO_ROOT
from connectors.kafka_settings import registry_settings, scrub
from trending.errors import UserError

if TYPE_CHECKING:
    import numpy as np


def schemas_dir() -> Path:
    """The folder of the ``.avsc`` files: ``trending/schemas``, which a checkout links to its
    top-level ``schemas/`` and a built package holds as package data; else ``schemas/`` of the
    source tree (a checkout without the link)."""
    packaged = Path(trending.__file__).resolve().parent / "schemas"
    return packaged if packaged.is_dir() else REPO_ROOT / "schemas"


SCHEMAS_DIR = schemas_dir()
REGISTRY_ENV = "SCHEMA_REGISTRY_URL"
MAGIC_BYTE = 0
_HEADER = struct.Struct(">bI")
_TIME_TYPES = frozenset(
    {
        "timestamp-millis",
        "timestamp-micros",
        "local-timestamp-millis",
        "local-timestamp-micros",
        "date",
        "time-millis",
        "time-micros",
    }
)

# The project's topics and the schema of their values; see schema_for_topic.
TOPIC_SCHEMAS: dict[str, str] = {
    "tweets": "tweet",
    "tweets-late": "tweet",
    "trending-hashtags": "trending_topk",
    "sensor-readings": "sensor_reading",
    "sensor-queries": "sensor_query",
    "sensor-matches": "sensor_match",
    "popular-readings": "popular_reading",
    "sensor-late": "dead_letter",  # late readings and queries, in the dead-letter envelope
    "interval-events-late": "dead_letter",  # late events of the temporal window job
    "interval-events": "interval_event",
    "window-rows": "window_row",
}
DEAD_LETTER_SCHEMA = "dead_letter"

Record = dict[str, Any]


class MalformedRecord(ValueError):
    """Bytes that are not a valid value of the expected schema; ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def schema_path(name: str) -> Path:
    """The ``.avsc`` file of schema ``name`` (a path ending in ``.avsc`` is taken as is)."""
    path = Path(name) if name.endswith(".avsc") else SCHEMAS_DIR / f"{name}.avsc"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in SCHEMAS_DIR.glob("*.avsc")))
        raise UserError(f"no Avro schema {name!r} (known: {known}; or pass a path to a .avsc)")
    return path


def schema_json(name: str) -> str:
    """The schema's JSON text, as Spark's ``from_avro``/``to_avro`` want it."""
    return schema_path(name).read_text(encoding="utf-8")


def schema_for_topic(topic: str) -> str:
    """The schema name of ``topic``'s values.

    Dead-letter topics (``*-dlq``, ``*.dlq``, ``*dead-letter*``) use ``dead_letter``; then an
    exact entry of :data:`TOPIC_SCHEMAS`; then the longest entry that prefixes the topic
    followed by ``-`` or ``.`` (so a test topic ``tweets-3f2a`` is read as tweets).
    """
    if topic.endswith(("-dlq", ".dlq")) or "dead-letter" in topic:
        return DEAD_LETTER_SCHEMA
    if topic in TOPIC_SCHEMAS:
        return TOPIC_SCHEMAS[topic]
    prefixes = [p for p in TOPIC_SCHEMAS if topic.startswith((f"{p}-", f"{p}."))]
    if not prefixes:
        known = ", ".join(sorted(TOPIC_SCHEMAS))
        raise UserError(f"no schema is known for topic {topic!r} (known: {known}): pass --schema")
    return TOPIC_SCHEMAS[max(prefixes, key=len)]


def resolve_registry_url(value: str | None) -> str | None:
    """An explicit registry URL, else ``$SCHEMA_REGISTRY_URL``, else ``None`` (plain Avro)."""
    return value or os.environ.get(REGISTRY_ENV) or None


def strip_time_types(schema: Any) -> Any:
    """A copy of a schema (JSON value) without time logical types, so fastavro keeps ints."""
    if isinstance(schema, list):
        return [strip_time_types(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    return {
        key: strip_time_types(value)
        for key, value in schema.items()
        if not (key == "logicalType" and value in _TIME_TYPES)
    }


def _parse(text: str) -> Any:
    return fastavro.parse_schema(strip_time_types(json.loads(text)))


_CLIENTS: dict[str, Any] = {}


def _registry_module() -> Any:
    try:
        import confluent_kafka.schema_registry as module
    except ImportError as error:
        raise UserError(
            f"a schema registry needs confluent-kafka's registry extras ({error.name} is "
            "missing): pip install attrs cachetools authlib httpx2"
        ) from error
    return module


def registry_client(url: str) -> Any:
    """One ``SchemaRegistryClient`` per URL in this process (so ``mock://`` ones are shared),
    with the settings of the ``TRENDING_SCHEMA_REGISTRY_*`` variables (basic auth, TLS, ...)."""
    if url not in _CLIENTS:
        config = {**registry_settings(os.environ), "url": url}
        try:
            _CLIENTS[url] = _registry_module().SchemaRegistryClient.new_client(config)
        except (ValueError, TypeError) as error:
            message = scrub(str(error), config)  # it may quote the URL
            raise UserError(f"invalid schema registry settings: {message}") from None
    return _CLIENTS[url]


class AvroCodec:
    """Encode and decode the values of one schema, with or without a schema registry."""

    def __init__(self, name: str, registry_url: str | None = None, *, subject: str | None = None):
        self.name = name
        self.text = schema_json(name)
        self._schema = _parse(self.text)
        self._registry_url = registry_url
        self._subject = subject or f"{name}-value"
        self._schema_id: int | None = None
        self._header = b""
        self._writers: dict[int, Any] = {}
        self._write_body: Callable[[Mapping[str, Any]], bytes] = FAST_WRITERS.get(
            name, self._fastavro_body
        )

    @property
    def schema_id(self) -> int | None:
        """The registry's id of this schema (registered on first use), or ``None`` without one."""
        if self._registry_url is None:
            return None
        if self._schema_id is None:
            self._schema_id = self._register()
            self._header = _HEADER.pack(MAGIC_BYTE, self._schema_id)
            self._writers[self._schema_id] = self._schema
        return self._schema_id

    @property
    def header(self) -> bytes:
        """What precedes the Avro body: magic byte and schema id, or nothing without a registry."""
        if self._registry_url is not None and self._schema_id is None:
            _ = self.schema_id
        return self._header

    def encode(self, record: Mapping[str, Any]) -> bytes:
        """The value bytes of ``record`` (wire format when a registry is configured)."""
        if self._registry_url is not None and self._schema_id is None:
            _ = self.schema_id
        try:
            return self._header + self._write_body(record)
        except (TypeError, ValueError, KeyError, AttributeError) as error:
            raise ValueError(f"record does not fit schema {self.name}: {error!r}") from error

    def decode(self, data: bytes) -> Record:
        """The record in ``data``; :class:`MalformedRecord` when the bytes do not decode."""
        if self._registry_url is None:
            return _read(data, 0, self._schema, self._schema)
        if len(data) < _HEADER.size:
            raise MalformedRecord(f"{len(data)} bytes is too short for the Confluent wire format")
        magic, schema_id = _HEADER.unpack_from(data)
        if magic != MAGIC_BYTE:
            raise MalformedRecord(f"wrong magic byte {data[0]:#04x} (expected 0x00)")
        return _read(data, _HEADER.size, self._writer_schema(schema_id), self._schema)

    def _fastavro_body(self, record: Mapping[str, Any]) -> bytes:
        out = io.BytesIO()
        fastavro.schemaless_writer(out, self._schema, record)
        return out.getvalue()

    def _register(self) -> int:
        assert self._registry_url is not None
        client, module = registry_client(self._registry_url), _registry_module()
        try:
            return int(client.register_schema(self._subject, module.Schema(self.text, "AVRO")))
        except module.SchemaRegistryError as error:
            raise UserError(f"schema registry refused {self.name}: {error}") from error

    def _writer_schema(self, schema_id: int) -> Any:
        if schema_id not in self._writers:
            assert self._registry_url is not None
            client, module = registry_client(self._registry_url), _registry_module()
            try:
                found = client.get_schema(schema_id)
            except module.SchemaRegistryError as error:
                raise MalformedRecord(f"schema id {schema_id}: {error}") from error
            if (found.schema_type or "AVRO") != "AVRO":
                raise MalformedRecord(f"schema id {schema_id} is {found.schema_type}, not Avro")
            self._writers[schema_id] = _parse(found.schema_str or "")
        return self._writers[schema_id]


def _read(data: bytes, start: int, writer: Any, reader: Any) -> Record:
    buffer = io.BytesIO(data)
    buffer.seek(start)
    try:
        record = fastavro.schemaless_reader(buffer, writer, reader)
    except (EOFError, ValueError, IndexError, UnicodeDecodeError, TypeError) as error:
        raise MalformedRecord(f"not a valid Avro value: {type(error).__name__}: {error}") from error
    rest = len(data) - buffer.tell()
    if rest:
        raise MalformedRecord(f"{rest} trailing bytes after the Avro value")
    if not isinstance(record, dict):
        raise MalformedRecord(f"decoded a {type(record).__name__}, not a record")
    return record


# A hand-written writer for the hot path (schema tweet), about 3x faster than fastavro's
# schemaless_writer per record; tests check it byte for byte against fastavro.
_SMALL = [bytes([n]) if n < 0x80 else bytes([n & 0x7F | 0x80, n >> 7]) for n in range(1 << 14)]
_LOW14 = [bytes([n & 0x7F | 0x80, n >> 7 | 0x80]) for n in range(1 << 14)]


@lru_cache(maxsize=4096)
def _varint_slow(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _varint(value: int) -> bytes:
    """Avro's variable-length encoding of an unsigned ``value``."""
    if value < 0x4000:
        return _SMALL[value]
    return _LOW14[value & 0x3FFF] + _varint_slow(value >> 14)


def encode_long(value: int) -> bytes:
    """Avro ``long``: zig-zag, then variable length."""
    zigzag = (value << 1) ^ (value >> 63)
    if zigzag < 0x4000:
        return _SMALL[zigzag]
    return _LOW14[zigzag & 0x3FFF] + _varint_slow(zigzag >> 14)


def encode_longs(values: np.ndarray[Any, Any]) -> list[bytes]:
    """:func:`encode_long` of every value of an int64 array, computed column-wise."""
    import numpy as np  # here, not at the top: a job's start does not wait for it

    shifts = np.arange(0, 70, 7, dtype=np.uint64)
    signed = values.astype(np.int64)
    zigzag = ((signed << 1) ^ (signed >> 63)).view(np.uint64)
    groups = ((zigzag[:, None] >> shifts) & np.uint64(0x7F)).astype(np.uint8)
    lengths = 1 + (zigzag[:, None] >= (np.uint64(1) << shifts[1:])).sum(axis=1)
    groups[np.arange(10) < (lengths - 1)[:, None]] |= 0x80
    flat, width = groups.tobytes(), groups.shape[1]
    return [flat[i * width : i * width + n] for i, n in enumerate(lengths.tolist())]


def encode_length(length: int) -> bytes:
    """The Avro length prefix of a string or bytes value (a non-negative ``long``)."""
    return _varint(length << 1)


def encode_string(text: str) -> bytes:
    """Avro ``string``: UTF-8 length, then the bytes."""
    raw = text.encode()
    return _varint(len(raw) << 1) + raw


@lru_cache(maxsize=256)
def encode_optional_string(text: str | None) -> bytes:
    """Avro ``["null", "string"]``: branch index, then the string."""
    return b"\x00" if text is None else b"\x02" + encode_string(text)


def encode_tweet(tweet: Mapping[str, Any]) -> bytes:
    """The schemaless Avro body of a ``tweet`` record (``lang`` may be missing)."""
    if not -(1 << 63) <= tweet["id"] < 1 << 63 or not -(1 << 63) <= tweet["created_at"] < 1 << 63:
        raise ValueError("id and created_at must fit in a signed 64-bit long")
    return b"".join(
        (
            encode_long(tweet["id"]),
            encode_string(tweet["user"]),
            encode_string(tweet["text"]),
            encode_long(tweet["created_at"]),
            encode_optional_string(tweet.get("lang")),
        )
    )


# Hand-written writers for the sensor schemas: fixed field lists of int, long and double.
_INT_RANGE = range(-(1 << 31), 1 << 31)
_LONG_RANGE = range(-(1 << 63), 1 << 63)
_ONE_DOUBLE = struct.Struct("<d")
_THREE_DOUBLES = struct.Struct("<ddd")


def encode_int(value: int) -> bytes:
    """Avro ``int`` (zig-zag, variable length); ``ValueError`` outside 32 bits."""
    if not isinstance(value, int) or value not in _INT_RANGE:
        raise ValueError(f"{value!r} does not fit in a signed 32-bit int")
    return encode_long(value)


def encode_checked_long(value: int) -> bytes:
    """Avro ``long``; ``ValueError`` outside 64 bits."""
    if not isinstance(value, int) or value not in _LONG_RANGE:
        raise ValueError(f"{value!r} does not fit in a signed 64-bit long")
    return encode_long(value)


def encode_doubles(packer: struct.Struct, *values: float) -> bytes:
    """Avro ``double`` values: 8 bytes each, little-endian IEEE 754."""
    try:
        return packer.pack(*values)
    except struct.error as error:
        raise TypeError(f"not numbers: {values!r} ({error})") from None


def encode_sensor_reading(r: Mapping[str, Any]) -> bytes:
    """The schemaless Avro body of a ``sensor_reading`` record."""
    xyv = encode_doubles(_THREE_DOUBLES, r["x"], r["y"], r["value"])
    return encode_int(r["sensor_id"]) + xyv + encode_checked_long(r["ts"])


def encode_sensor_query(q: Mapping[str, Any]) -> bytes:
    """The schemaless Avro body of a ``sensor_query`` record."""
    xyd = encode_doubles(_THREE_DOUBLES, q["x"], q["y"], q["distance"])
    return encode_checked_long(q["query_id"]) + xyd + encode_checked_long(q["ts"])


def encode_sensor_match(m: Mapping[str, Any]) -> bytes:
    """The schemaless Avro body of a ``sensor_match`` record."""
    return b"".join(
        (
            encode_checked_long(m["query_id"]),
            encode_int(m["sensor_id"]),
            encode_doubles(_ONE_DOUBLE, m["value"]),
            encode_checked_long(m["reading_ts"]),
            encode_checked_long(m["query_ts"]),
        )
    )


def encode_popular_reading(p: Mapping[str, Any]) -> bytes:
    """The schemaless Avro body of a ``popular_reading`` record."""
    return encode_sensor_reading(p) + encode_int(p["matches"])


FAST_WRITERS: dict[str, Callable[[Mapping[str, Any]], bytes]] = {
    "tweet": encode_tweet,
    "sensor_reading": encode_sensor_reading,
    "sensor_query": encode_sensor_query,
    "sensor_match": encode_sensor_match,
    "popular_reading": encode_popular_reading,
}
"""Schemas with a hand-written body writer (checked byte for byte against fastavro)."""
