"""Late events and dead letters fitted to their topic's size limit: a record that fits goes out
whole; one too large becomes a dead letter of its origin, its value cut to fit the dead-letter
topic and its original size kept; a key too large for any letter is dropped with the value."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from connectors.avro import AvroCodec
from connectors.transactions import RECORD_OVERHEAD, OutRecord
from tests.support.oracles import avro_record
from trending.jobs.letters import Origin, SideOutput

LIMITS = {"late": 4_000, "dlq": 3_000}


@dataclass
class Stats:
    late: int = 0
    dead: int = 0
    dead_reasons: dict[str, int] = field(default_factory=dict)


def side(late_codec: AvroCodec | None = None) -> SideOutput:
    return SideOutput("late", "dlq", AvroCodec("dead_letter"), late_codec, LIMITS.__getitem__, 7)


def size(record: OutRecord) -> int:
    return len(record.key or b"") + len(record.value or b"") + RECORD_OVERHEAD


def origin(key: bytes | None, value: bytes) -> Origin:
    return Origin("tweets", 3, 1234, key, value)


def letter(record: OutRecord) -> dict[str, object]:
    """The dead letter a record's value holds, read by fastavro (not the job's codec)."""
    assert record.value is not None
    return dict(avro_record("dead_letter", record.value))


def test_a_late_event_that_fits_goes_out_as_it_came() -> None:
    stats = Stats()
    record = side().late(origin(b"k", b"v" * 3_000), "late", stats)
    assert (record.topic, record.key, record.value) == ("late", b"k", b"v" * 3_000)
    assert record.headers == (
        ("origin.topic", b"tweets"),
        ("origin.partition", b"3"),
        ("origin.offset", b"1234"),
    )
    assert (stats.late, stats.dead) == (1, 0)


def test_a_late_event_too_large_for_the_late_topic_is_a_dead_letter_cut_to_fit() -> None:
    stats = Stats()
    value = bytes(range(256)) * 20  # 5,120 bytes: more than either topic accepts
    record = side().late(origin(b"k", value), "late", stats)
    assert record.topic == "dlq" and record.key == b"k"
    assert LIMITS["dlq"] - 64 <= size(record) <= LIMITS["dlq"]
    fields = letter(record)
    assert (fields["topic"], fields["partition"], fields["offset"], fields["key"]) == (
        "tweets", 3, 1234, b"k",
    )  # fmt: skip
    cut = fields["value"]
    assert isinstance(cut, bytes) and value.startswith(cut) and len(cut) > 2_000
    assert fields["value_size"] == len(value)
    # its headers: each name and value, plus 10 bytes of lengths at most
    headers = sum(len(n) + len(v) + 10 for n, v in [("origin.topic", "tweets"),
                  ("origin.partition", "3"), ("origin.offset", "1234")])  # fmt: skip
    late_size = len(value) + 1 + headers + RECORD_OVERHEAD
    assert str(fields["reason"]).startswith(f"oversized: {late_size} bytes")
    assert "of late, which accepts 4000" in str(fields["reason"])
    assert (stats.late, stats.dead, sum(stats.dead_reasons.values())) == (0, 1, 1)


def test_a_late_envelope_too_large_is_a_dead_letter_too() -> None:
    stats = Stats()
    record = side(AvroCodec("dead_letter")).late(origin(None, b"x" * 3_950), "late: behind", stats)
    assert record.topic == "dlq" and size(record) <= LIMITS["dlq"]
    assert letter(record)["value_size"] == 3_950
    assert stats.dead == 1 and stats.late == 0


def test_a_dead_letter_that_fits_keeps_the_whole_value() -> None:
    stats = Stats()
    record = side().dead(origin(b"k", b"\xff" * 100), "trailing bytes", stats)
    fields = letter(record)
    assert (fields["value"], fields["value_size"], fields["reason"]) == (
        b"\xff" * 100, None, "trailing bytes",
    )  # fmt: skip
    assert stats.dead_reasons == {"trailing bytes": 1}


def test_a_dead_letter_too_large_for_its_topic_is_cut_to_fit() -> None:
    stats = Stats()
    value = b"\x01" * 10_000
    record = side().dead(origin(b"key", value), "invalid UTF-8", stats)
    assert record.topic == "dlq" and LIMITS["dlq"] - 64 <= size(record) <= LIMITS["dlq"]
    fields = letter(record)
    assert fields["value_size"] == 10_000 and value.startswith(fields["value"])  # type: ignore[arg-type]
    assert stats.dead == 1


def test_a_key_too_large_for_any_letter_is_dropped_with_the_value() -> None:
    stats = Stats()
    record = side().dead(origin(b"K" * 5_000, b"v" * 10), "bad", stats)
    assert record.topic == "dlq" and record.key is None and size(record) <= LIMITS["dlq"]
    fields = letter(record)
    assert (fields["key"], fields["value"], fields["value_size"]) == (None, b"", 10)
    assert (fields["topic"], fields["offset"]) == ("tweets", 1234)


HEADERS: list[dict[str, Any]] = [
    {"key": "trace-id", "value": b"\x01\x02"},
    {"key": "empty", "value": None},
]


def test_a_dead_letter_carries_the_records_timestamp_and_headers_in_order() -> None:
    stats = Stats()
    came = Origin.of("tweets", 3, 1234, b"k", b"\x00", 1_700_000_000_123, HEADERS)
    fields = letter(side().dead(came, "bad", stats))
    assert fields["timestamp"] == 1_700_000_000_123
    assert fields["headers"] == [
        {"key": "trace-id", "value": b"\x01\x02"},
        {"key": "empty", "value": None},
    ]
    assert (fields["topic"], fields["partition"], fields["offset"], fields["key"]) == (
        "tweets", 3, 1234, b"k",
    )  # fmt: skip


def test_a_late_event_as_it_came_keeps_its_own_headers_before_the_origin_ones() -> None:
    came = Origin.of("tweets", 0, 9, None, b"v", 5, HEADERS)
    record = side().late(came, "late", Stats())
    assert record.headers == (
        ("trace-id", b"\x01\x02"),
        ("empty", None),
        ("origin.topic", b"tweets"),
        ("origin.partition", b"0"),
        ("origin.offset", b"9"),
    )


def test_a_record_without_timestamp_or_headers_has_none_in_its_letter() -> None:
    fields = letter(side().dead(Origin.of("t", 0, 1, None, None, None, None), "empty", Stats()))
    assert (fields["timestamp"], fields["headers"]) == (None, [])


def test_headers_too_large_for_any_letter_are_dropped_but_the_timestamp_stays() -> None:
    huge: list[dict[str, Any]] = [{"key": "h", "value": b"x" * 5_000}]
    came = Origin.of("tweets", 3, 1234, b"k", b"v", 77, huge)
    record = side().dead(came, "bad", Stats())
    assert size(record) <= LIMITS["dlq"]
    fields = letter(record)
    assert (fields["headers"], fields["timestamp"], fields["value_size"]) == ([], 77, 1)


def test_a_result_that_fits_goes_out_unchanged() -> None:
    stats = Stats()
    result = OutRecord("late", b"k", b"r" * 3_000)
    assert side().result(result, 41, stats) is result
    assert (stats.late, stats.dead) == (0, 0)


def test_a_result_too_large_for_its_topic_is_a_dead_letter_of_its_batch() -> None:
    """Not skipped: the result's bytes go to the dead-letter topic, cut to fit, its origin the
    result's topic with partition -1 and the batch id as offset."""
    stats = Stats()
    value = bytes(range(256)) * 20
    record = side().result(OutRecord("late", b"1700000000000", value), 41, stats)
    assert record.topic == "dlq" and size(record) <= LIMITS["dlq"]
    fields = letter(record)
    assert (fields["topic"], fields["partition"], fields["offset"], fields["key"]) == (
        "late", -1, 41, b"1700000000000",
    )  # fmt: skip
    cut = fields["value"]
    assert isinstance(cut, bytes) and value.startswith(cut) and len(cut) > 2_000
    assert fields["value_size"] == len(value)
    whole = len(value) + len(b"1700000000000") + RECORD_OVERHEAD
    assert fields["reason"] == (
        f"oversized result: {whole} bytes as a record of late, which accepts 4000; value cut to fit"
    )
    assert (stats.late, stats.dead) == (0, 1)


def test_a_part_of_results_fits_only_when_its_largest_record_fits_every_topic() -> None:
    """``all_fit``: the largest key + value + overhead against the smaller of the topics'
    limits (here the dead-letter topic's 3,000 bytes); a null key counts no bytes."""
    import pyarrow as pa

    room = LIMITS["dlq"] - RECORD_OVERHEAD  # key and value bytes that still fit both topics

    def table(pairs: list[tuple[bytes | None, bytes]]) -> Any:
        keys, values = zip(*pairs, strict=True) if pairs else ((), ())
        return pa.table(
            {"key": pa.array(keys, pa.binary()), "value": pa.array(values, pa.binary())}
        )

    aside = side()
    assert aside.all_fit(table([]), ("late", "dlq"))
    assert aside.all_fit(table([(b"k", b"v"), (b"kk", b"v" * (room - 2))]), ("late", "dlq"))
    assert not aside.all_fit(table([(b"k", b"v"), (b"kk", b"v" * (room - 1))]), ("late", "dlq"))
    assert aside.all_fit(table([(b"kk", b"v" * (room - 1))]), ("late",))  # 4,000 bytes there
    assert aside.all_fit(table([(None, b"v" * room)]), ("late", "dlq"))
    assert not aside.all_fit(table([(None, b"v" * (room + 1))]), ("dlq",))
