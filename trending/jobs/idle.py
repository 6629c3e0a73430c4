"""``--idle-advance D``: event time that moves on with the wall clock while the input is silent.

Spark moves a query's watermark only when input arrives, so on a stream that goes quiet the
last windows of a job never become final. With ``--idle-advance D`` a running job watches the
end offsets of its input topics; once none has moved for ``D`` of wall-clock time, it advances
its watermark by the wall-clock time that passed since the input last moved, and again every
``D`` while the silence lasts::

    W' = W0 + (now - t0)     t0: when an input end offset last moved (or the run started)
                             W0: the job's watermark once the silence reached D and the job
                                 had read its input up to those end offsets

The advance is a record on the job's own control topic (``{"watermark_ms": W'}``, or for the
windows job the CTI at ``W'`` its control topic already carries), which the job reads with its
input: the watermark becomes at least ``W'`` in the micro-batch that reads it, so windows close
and their finals are published in that batch's transaction, exactly once, and a replayed batch
reads the same records. An event that arrives later behind ``W'`` is late, as for any watermark
(the price of closing windows on a quiet stream; choose ``D`` longer than the pauses of a
healthy input).
A restarted job counts the silence from its start.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from confluent_kafka import TopicPartition

from connectors.kafka import consumer, producer

log = logging.getLogger(__name__)

Ends = tuple[tuple[str, int, int], ...]


class IdleAdvance:
    """The rule above, on injected reads and writes (:meth:`check` once a second or so).

    ``input_ends()``: the input topics' end offsets; ``watermark()``: the job's watermark (None
    before any event); ``advance(w)``: write the advance to ``w``; ``caught_up(ends)``: whether
    the job's completed micro-batches have read its input up to ``ends``; ``clock``: seconds.
    """

    def __init__(
        self,
        idle_ms: int,
        input_ends: Callable[[], Ends],
        watermark: Callable[[], int | None],
        advance: Callable[[int], None],
        caught_up: Callable[[Ends], bool] = lambda ends: True,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if idle_ms <= 0:
            raise ValueError(f"idle-advance must be > 0, got {idle_ms} ms")
        self.idle_ms, self.clock = idle_ms, clock
        self.input_ends, self.watermark, self.advance = input_ends, watermark, advance
        self.caught_up = caught_up
        self.ends: Ends | None = None
        self.since = clock()  # t0
        self.base: int | None = None  # W0
        self.last: float | None = None  # when the last advance was written

    def check(self) -> int | None:
        """Write an advance when one is due; the watermark it asks for, else None."""
        ends, now = self.input_ends(), self.clock()
        if ends != self.ends:
            if self.ends is not None:  # input arrived: the silence starts again
                self.since, self.base, self.last = now, None, None
            self.ends = ends
            return None
        silent_ms = int((now - self.since) * 1000)
        if silent_ms < self.idle_ms:
            return None
        if self.last is not None and (now - self.last) * 1000 < self.idle_ms:
            return None
        if self.base is None:
            if not self.caught_up(ends):  # its watermark does not show all the input yet
                return None
            self.base = self.watermark()
            if self.base is None:  # no event time yet: nothing to advance
                return None
        target = self.base + silent_ms
        self.advance(target)
        self.last = now
        return target


class KafkaIdleAdvance:
    """:class:`IdleAdvance` on Kafka: the end offsets of ``input_topics``, advances written to
    ``control_topic`` (idempotent producer, flushed before :meth:`check` returns)."""

    def __init__(
        self,
        idle_ms: int,
        bootstrap: str,
        kafka_options: Mapping[str, str],
        input_topics: Sequence[str],
        control_topic: str,
        encode: Callable[[int], bytes],
        watermark: Callable[[], int | None],
        consumed: Callable[[], Mapping[str, Mapping[int, int]]],
    ) -> None:
        """``encode(w)``: the control record asking for watermark ``w``; ``consumed()``: the
        end offsets of the job's last completed micro-batch, by topic and partition (Spark's
        progress)."""
        self.topics, self.control_topic = list(input_topics), control_topic
        self.reader = consumer(bootstrap, kafka_options)
        self.writer = producer(bootstrap, kafka_options, linger_ms=0)
        self.encode = encode
        self.consumed = consumed
        self.rule = IdleAdvance(idle_ms, self._ends, watermark, self._write, self._caught_up)

    def check(self) -> int | None:
        """:meth:`IdleAdvance.check`; a Kafka error is logged and tried again next time."""
        try:
            return self.rule.check()
        except Exception as error:  # the job goes on; the next check tries again
            log.warning("idle advance: %s", error)
            return None

    def close(self) -> None:
        self.reader.close()

    def _ends(self) -> Ends:
        ends: list[tuple[str, int, int]] = []
        listed = self.reader.list_topics(timeout=5).topics
        for topic in self.topics:
            found: Any = listed.get(topic)
            for p in sorted(found.partitions if found is not None else ()):
                _low, high = self.reader.get_watermark_offsets(TopicPartition(topic, p), timeout=5)
                ends.append((topic, p, int(high)))
        return tuple(ends)

    def _caught_up(self, ends: Ends) -> bool:
        read = self.consumed()
        return all(read.get(topic, {}).get(p, 0) >= end for topic, p, end in ends)

    def _write(self, watermark_ms: int) -> None:
        self.writer.produce(self.control_topic, self.encode(watermark_ms))
        self.writer.flush(30)
        log.info(
            "input silent: watermark advanced to %d through %s", watermark_ms, self.control_topic
        )
