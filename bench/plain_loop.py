"""Peer: a plain confluent-kafka Python loop computing the same windows as the hashtags job.

Decode Avro (fastavro), extract keys (the project's Python hashtag rule), pre-aggregate panes per
poll batch, fold into :class:`SlidingTopK`, publish top-k changes and finals. Prints one line:
``tweets=N seconds=S`` (first record read to last record written).
"""

from __future__ import annotations

import io
import json
import sys
import time
import uuid
from collections import Counter

import fastavro
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from connectors.avro import AvroCodec, schema_json, strip_time_types
from trending.text.hashtags import hashtag_keys
from trending.windows.sliding import SlidingWindows
from trending.windows.sliding_topk import SlidingTopK


def main(bootstrap: str, topic: str, out_topic: str) -> None:
    schema = fastavro.parse_schema(strip_time_types(json.loads(schema_json("tweet"))))
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"plain-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "enable.partition.eof": True,
            "fetch.max.bytes": 64 * 1024 * 1024,
        }
    )
    partitions = consumer.list_topics(topic, timeout=30).topics[topic].partitions
    consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
    producer = Producer(
        {"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5}
    )
    codec = AvroCodec("trending_topk")
    spec = SlidingWindows(300_000, 60_000)
    engine = SlidingTopK(spec, 10, 30_000)
    remaining, tweets, first = set(partitions), 0, None
    reader = fastavro.schemaless_reader
    while remaining:
        batch = consumer.consume(10_000, timeout=1.0)
        if first is None and batch:
            first = time.monotonic()
        panes: Counter[tuple[int, str]] = Counter()
        newest = None
        for message in batch:
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    remaining.discard(message.partition())
                continue
            tweet = reader(io.BytesIO(message.value()), schema, None)
            tweets += 1
            t = tweet["created_at"]
            newest = t if newest is None or t > newest else newest
            if engine.is_late(t):
                continue
            pane = spec.pane_start(t)
            for key in hashtag_keys(tweet["text"]):
                panes[(pane, key)] += 1
        updates = engine.apply_batch(((p, k, n) for (p, k), n in panes.items()), newest)
        for update in updates:
            value = codec.encode(
                {
                    "window_start": update.window.start,
                    "window_end": update.window.end,
                    "top": [{"hashtag": h, "count": c} for h, c in update.top],
                    "revision": update.revision,
                    "is_final": update.is_final,
                    "emitted_at": int(time.time() * 1000),
                }
            )
            producer.produce(out_topic, value, key=str(update.window.start).encode())
        producer.poll(0)
    producer.flush(60)
    seconds = time.monotonic() - (first or time.monotonic())
    print(f"tweets={tweets} seconds={seconds:.3f}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3])
