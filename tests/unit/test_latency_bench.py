"""The bookkeeping of ``bench/latency_bench.py``: Spark's offset log read back, each result
record charged to its micro-batch's newest tweet. Oracles worked out by hand."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from bench.latency_bench import Batch, latencies, newest_tweets, read_batches


def offsets_file(folder: Path, number: int, start_ms: int, ends: dict[str, int]) -> None:
    """``offsets/N`` as Spark 4.1 writes it: version, batch metadata, one line per source."""
    meta = {"batchWatermarkMs": 0, "batchTimestampMs": start_ms, "conf": {}}
    text = f"v1\n{json.dumps(meta)}\n{json.dumps({'tweets': ends})}"
    (folder / "offsets").mkdir(parents=True, exist_ok=True)
    (folder / "offsets" / str(number)).write_text(text)


def test_the_offset_log_gives_each_batch_start_end_offsets_and_commit(tmp_path: Path) -> None:
    offsets_file(tmp_path, 0, 1_000, {"0": 5, "1": 3})
    offsets_file(tmp_path, 1, 2_000, {"0": 9, "1": 3})
    (tmp_path / "offsets" / ".1.crc").write_text("")  # Spark's checksums are not batches
    (tmp_path / "commits").mkdir()
    (tmp_path / "commits" / "0").write_text("v1\n{}")
    os.utime(tmp_path / "commits" / "0", (1.5, 1.5))
    batches = read_batches(tmp_path, "tweets")
    assert batches == [
        Batch(0, 1_000, 1.5, {0: 5, 1: 3}),
        Batch(1, 2_000, None, {0: 9, 1: 3}),  # not committed
    ]


def test_the_newest_tweet_is_the_latest_append_among_partitions_that_grew(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import bench.latency_bench as bench

    appended = {(0, 4): 900, (1, 2): 950, (0, 8): 1_900}
    asked: list[set[tuple[int, int]]] = []

    def lookup(bootstrap: str, topic: str, wanted: set[tuple[int, int]]) -> dict[object, int]:
        asked.append(wanted)
        return {x: appended[x] for x in wanted}

    monkeypatch.setattr(bench, "append_times", lookup)
    newest = newest_tweets("b", "t", [
        Batch(0, 1_000, 1.5, {0: 5, 1: 3}),  # both grew: max(900, 950)
        Batch(1, 2_000, 2.5, {0: 9, 1: 3}),  # only partition 0 grew
        Batch(2, 3_000, 3.5, {0: 9, 1: 3}),  # nothing new: no newest tweet
    ])  # fmt: skip
    assert newest == {0: 950, 1: 1_900}
    assert asked == [{(0, 4), (1, 2), (0, 8)}]


def test_a_record_is_charged_to_the_last_batch_started_before_it_was_produced() -> None:
    batches = [Batch(0, 1_000, None, {}), Batch(1, 2_000, None, {}), Batch(2, 3_000, None, {})]
    newest = {0: 900, 1: 1_800}  # batch 2 read nothing new
    seen = [
        (1.4, 1_200),  # batch 0: 1.4 - 0.9
        (2.7, 2_000),  # produced as batch 1 started: 2.7 - 1.8
        (3.6, 3_100),  # batch 2, without a newest tweet: left out
        (0.9, 950),  # before any batch: left out
        (9.0, 2_500),  # visible after the measured span: left out
    ]
    got = latencies(seen, batches, newest, since=0.0, until=5.0)
    assert [round(x, 6) for x in got] == [0.5, 0.9]
