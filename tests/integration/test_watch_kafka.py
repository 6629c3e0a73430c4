"""``trending watch`` on a real broker: the committed results of a topic show, an aborted
transaction's do not, a record that does not decode is counted, an unreachable metrics endpoint
is said so, and ``--duration`` ends the view."""

from __future__ import annotations

import re
import socket
import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import Producer

from connectors.avro import AvroCodec
from connectors.kafka import ensure_topics
from trending.cli import main

pytestmark = pytest.mark.integration

START = 1_764_000_000_000  # 2025-11-24 16:00:00 UTC
MINUTE = 60_000


def window(start_min: int, revision: int, top: list[tuple[str, int]]) -> dict[str, Any]:
    start = START + start_min * MINUTE
    return {
        "window_start": start,
        "window_end": start + 5 * MINUTE,
        "top": [{"hashtag": tag, "count": count} for tag, count in top],
        "revision": revision,
        "is_final": False,
        "emitted_at": start + MINUTE,
    }


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_watch_shows_the_committed_results_of_a_topic(
    kafka_bootstrap: str,
    unique_topic: Callable[[str], str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A topic whose name says nothing of its kind: the first record decides (hashtags)."""
    topic = unique_topic("watch-results")
    ensure_topics(kafka_bootstrap, [topic], partitions=2)
    codec = AvroCodec("trending_topk", subject=f"{topic}-value")  # as the job, no registry
    producer = Producer(
        {"bootstrap.servers": kafka_bootstrap, "transactional.id": uuid.uuid4().hex}
    )
    producer.init_transactions(60)
    producer.begin_transaction()
    for i, record in enumerate(
        [
            window(0, 1, [("kafka", 3), ("spark", 2)]),
            window(0, 2, [("kafka", 7), ("spark", 5), ("flink", 1)]),
            window(1, 1, [("beam", 4)]),
        ]
    ):
        producer.produce(topic, codec.encode(record), key=b"w", partition=i % 2)
    producer.produce(topic, b"\x07 not avro at all", partition=0)
    producer.commit_transaction(30)
    producer.begin_transaction()
    producer.produce(topic, codec.encode(window(2, 1, [("abortedtag", 99)])), partition=1)
    assert producer.flush(30) == 0
    producer.abort_transaction(30)

    monkeypatch.setenv("COLUMNS", "200")
    url = f"http://127.0.0.1:{closed_port()}/metrics"
    began = time.monotonic()
    code = main(
        [
            "watch",
            topic,
            "--bootstrap-servers",
            kafka_bootstrap,
            "--duration",
            "3s",
            "--metrics-url",
            url,
        ]
    )
    took = time.monotonic() - began
    out = capsys.readouterr().out
    assert code == 0
    assert 3 <= took < 30, took
    assert f"{topic} (hashtags): 3 records" in out, out
    assert "1 undecodable" in out
    assert "last record" in out and "s ago" in out
    assert "#abortedtag" not in out  # read_committed
    assert "rev 2" in out and "window 16:00:00-16:05:00 UTC" in out
    assert out.index("#kafka") < out.index("#spark") < out.index("#flink")
    assert re.search(r"#kafka\s*│\s*7\s", out), out  # revision 2's count, not revision 1's
    assert "#beam" in out and "window 16:01:00-16:06:00 UTC" in out
    assert out.index("16:01:00-16:06:00") < out.index("16:00:00-16:05:00")  # newest first
    assert f"cannot read {url}" in out

    missing = unique_topic("watch-missing")
    code = main(["watch", missing, "--bootstrap-servers", kafka_bootstrap, "--duration", "2s"])
    out = capsys.readouterr().out
    assert code == 0
    assert f"waiting for records on {missing} (no such topic yet)" in out, out
