"""Who may close the input of `trending run windows`, on a real broker and Spark.

A CTI at the end of time closes the input for good (every later event is late). The job writes
one to its own control topic when ``--available-now`` ends; one on the input topic is a dead
letter and closes nothing: the events after it are windowed, on this run and the next.

Oracle (a snapshot sum of disjoint intervals): each interval is one row, its own value.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from connectors.avro import AvroCodec
from connectors.kafka import ensure_topics
from tests.support.kafka import read_all
from tests.support.queries import await_end

pytestmark = pytest.mark.integration
T0 = 1_700_000_000_000
EOT = 253_402_300_799_999  # 9999-12-31T23:59:59.999Z, the end of time


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    from trending.spark.session import build_session

    session = build_session("tests-windows-end-of-input", "local[2]", shuffle_partitions=2)
    yield session
    session.stop()


def interval(start_s: int, value: float) -> dict[str, Any]:
    """An interval of key ``a``, one second long from ``T0 + start_s`` seconds."""
    start = T0 + start_s * 1_000
    return {"kind": "INTERVAL", "key": "a", "start": start, "end": start + 1_000, "value": value}


def produce(bootstrap: str, topic: str, records: list[dict[str, Any]]) -> None:
    codec = AvroCodec("interval_event")
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for record in records:
        producer.produce(topic, codec.encode(record), key=b"a", partition=0)
    assert producer.flush(30) == 0


def _ms(value: Any) -> int | None:
    return value if value is None or isinstance(value, int) else int(value.timestamp() * 1000)


def test_an_end_of_time_cti_on_the_input_topic_does_not_close_the_input(
    kafka_bootstrap: str, spark: Any, tmp_path: Path
) -> None:
    from trending.jobs.windows import WindowsJobConfig, close_input, start_query
    from trending.spark.temporal_steps import FOREIGN_END_OF_INPUT

    tag = uuid.uuid4().hex[:8]
    names = {n: f"{n}-{tag}" for n in ("interval-events", "window-rows", "late", "dlq")}
    ensure_topics(kafka_bootstrap, [names["interval-events"]], partitions=1)
    config = WindowsJobConfig(
        bootstrap=kafka_bootstrap, checkpoint=str(tmp_path / "checkpoint"),
        spec={"kind": "snapshot", "aggregate": "sum"}, input_topic=names["interval-events"],
        output_topic=names["window-rows"], late_topic=names["late"],
        dead_letter_topic=names["dlq"], lateness_ms=500, available_now=True,
    )  # fmt: skip
    cti = {"kind": "CTI", "start": EOT}
    produce(kafka_bootstrap, config.input_topic, [interval(1, 1.0), cti, interval(3, 2.0)])
    query, processor = start_query(spark, config)
    await_end(query)
    assert not processor.state.closed  # the watermark stays at the events': 3 s - 0.5 s
    produce(kafka_bootstrap, config.input_topic, [interval(5, 4.0)])  # after it, next run
    query, processor = start_query(spark, config, processor=processor)
    await_end(query)
    assert close_input(config, processor)  # the job's own end of input closes it
    query, processor = start_query(spark, config, processor=processor)
    await_end(query)
    processor.close()
    assert processor.state.closed

    letters = [AvroCodec("dead_letter").decode(r.value) for r in read_all(
        kafka_bootstrap, config.dead_letter_topic)]  # fmt: skip
    assert [(d["topic"], d["offset"], d["reason"]) for d in letters] == [
        (config.input_topic, 1, FOREIGN_END_OF_INPUT)
    ]
    assert read_all(kafka_bootstrap, config.late_topic) == []
    codec = AvroCodec("window_row")
    rows = [codec.decode(r.value) for r in read_all(kafka_bootstrap, config.output_topic)]
    got = Counter((r["key"], _ms(r["start"]), _ms(r["end"]), r["value"]) for r in rows)
    expected = [interval(1, 1.0), interval(3, 2.0), interval(5, 4.0)]
    assert got == Counter(("a", e["start"], e["end"], e["value"]) for e in expected)
