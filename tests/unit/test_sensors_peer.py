"""The sensors bench's peer loop, without Kafka: its windows, ordering and alignment against a
brute force of the job's rules written here.

The brute force: a round's events with ``ts`` below the watermark the round starts under are
late; the watermark after a round is ``max(W, newest on-time ts - lateness)``; at the end the
on-time events with ``ts`` below the final watermark are sorted by ``(ts, kind, partition,
offset)`` and applied to plain lists of the last N readings, every query compared with every
reading in every list, a reading popular when evicted after ``max(1, threshold)`` matches.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from typing import Any

import pytest

from bench.sensors_peer import (
    QUERY,
    READING,
    Alignment,
    SensorPeer,
    SensorWindows,
    encode_match,
    encode_popular,
    match_key,
)
from connectors.avro import AvroCodec

LATENESS = 50


def make_events(count: int, seed: int, sensors: int = 5, partitions: int = 3) -> list[tuple]:
    """Readings and queries, jittered in time, on a lattice (some exactly at a distance), some
    far out; partitions and offsets numbered per (kind, partition) in production order."""
    rng = random.Random(seed)
    offsets: Counter[tuple[int, int]] = Counter()
    events = []
    for i in range(count):
        kind = READING if rng.random() < 0.6 else QUERY
        ts = 1_000 + i * 2 - rng.randrange(30)
        x, y = rng.randrange(-10, 11) / 10, rng.randrange(-10, 11) / 10
        if rng.random() < 0.02:
            x, y = x * 1e6, -y * 1e6
        partition = rng.randrange(partitions)
        offset = offsets[(kind, partition)]
        offsets[(kind, partition)] += 1
        if kind == READING:
            ident, v = rng.randrange(sensors), round(rng.random() * 100, 3)
        else:
            ident, v = i, rng.choice([0.0, 0.1, 0.2, 0.3, 0.5, 1e7])
        events.append((ts, kind, partition, offset, ident, x, y, v))
    return events


def brute_force(
    rounds: list[list[tuple]], size: int, threshold: int, per_sensor: bool
) -> tuple[Counter[tuple[Any, ...]], Counter[tuple[Any, ...]], int]:
    watermark = None
    on_time, late = [], 0
    for batch in rounds:
        accepted = [e for e in batch if watermark is None or e[0] >= watermark]
        late += len(batch) - len(accepted)
        on_time += accepted
        if accepted:
            newest = max(e[0] for e in accepted) - LATENESS
            watermark = newest if watermark is None else max(watermark, newest)
    applied = sorted(
        (e for e in on_time if watermark is not None and e[0] < watermark),
        key=lambda e: (e[0], e[1], e[2], e[3]),
    )
    windows: dict[int, list[list[Any]]] = {}
    matches: Counter[tuple[Any, ...]] = Counter()
    popular: Counter[tuple[Any, ...]] = Counter()
    for ts, kind, _, _, ident, x, y, v in applied:
        if kind == READING:
            window = windows.setdefault(ident if per_sensor else 0, [])
            if len(window) == size:
                (sensor, rx, ry, value, rts), count = window.pop(0)
                if count >= max(1, threshold):
                    popular[(sensor, rx, ry, value, rts, count)] += 1
            window.append([(ident, x, y, v, ts), 0])
            continue
        for window in windows.values():
            for entry in window:
                sensor, rx, ry, value, rts = entry[0]
                if math.sqrt((rx - x) ** 2 + (ry - y) ** 2) <= v:
                    entry[1] += 1
                    matches[(ident, sensor, value, rts, ts)] += 1
    return matches, popular, late


def run_peer(
    rounds: list[list[tuple]], size: int, threshold: int, per_sensor: bool, cell: float
) -> tuple[Counter[tuple[Any, ...]], Counter[tuple[Any, ...]], SensorPeer]:
    peer = SensorPeer(size, threshold, LATENESS, cell, per_sensor)
    matches: Counter[tuple[Any, ...]] = Counter()
    popular: Counter[tuple[Any, ...]] = Counter()
    for batch in rounds:
        peer.arrive(batch)
        found, evicted = peer.apply()
        matches.update(found)
        popular.update(evicted)
    return matches, popular, peer


def split(events: list[tuple], rng: random.Random) -> list[list[tuple]]:
    rounds, i = [], 0
    while i < len(events):
        n = rng.randrange(1, 80)
        rounds.append(events[i : i + n])
        i += n
    return rounds


@pytest.mark.parametrize(
    ("per_sensor", "size", "threshold", "cell"),
    [(False, 12, 2, 0.1), (False, 40, 0, 0.07), (True, 3, 1, 0.25), (True, 5, 3, 1e-3)],
)
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_peer_equals_brute_force(
    per_sensor: bool, size: int, threshold: int, cell: float, seed: int
) -> None:
    events = make_events(1_200, seed)
    rng = random.Random(seed)
    # in production order (time jittered less than the lateness), then more out of order
    arrival = sorted(events, key=lambda e: e[0] + rng.randrange(2 * LATENESS))
    figures = []
    for order in (events, arrival):
        rounds = split(order, rng)
        matches, popular, peer = run_peer(rounds, size, threshold, per_sensor, cell)
        expected_matches, expected_popular, late = brute_force(rounds, size, threshold, per_sensor)
        assert matches == expected_matches
        assert popular == expected_popular
        assert peer.late == late
        figures.append((sum(matches.values()), sum(popular.values()), late))
    (matched, evicted, late), (matched_late, _, late_late) = figures
    assert matched > 500 and evicted > 100 and late == 0
    assert matched_late > 300 and late_late > 50


def test_events_within_lateness_of_the_newest_stay_unapplied() -> None:
    peer = SensorPeer(size=2, threshold=1, lateness_ms=10, cell_size=1.0)
    peer.arrive([(100, READING, 0, 0, 7, 0.0, 0.0, 1.5), (105, QUERY, 0, 0, 1, 0.0, 0.0, 0.0)])
    assert peer.apply() == ([], [])  # W = 95
    peer.arrive([(116, READING, 0, 1, 8, 0.0, 0.0, 2.5)])  # W = 106: both applied, query last
    assert peer.apply() == ([(1, 7, 1.5, 100, 105)], [])
    assert (peer.readings, peer.queries, len(peer.pending)) == (1, 1, 1)
    peer.arrive([(90, QUERY, 1, 0, 2, 0.0, 0.0, 1.0)])  # behind W = 106: late
    assert peer.late == 1


def test_a_query_with_a_square_of_many_cells_probes_the_occupied_ones() -> None:
    windows = SensorWindows(size=3, threshold=1, cell_size=1e-9)
    popular: list[Any] = []
    for i, (x, y) in enumerate([(1e12, 1e12), (-1e12, -1e12), (0.5, 0.5)]):
        windows.reading(i, x, y, float(i), i, popular)
    matches: list[Any] = []
    windows.query(9, 0.0, 0.0, 1e300, 10, matches)
    assert sorted(m[1] for m in matches) == [0, 1, 2]
    windows.reading(3, 0.0, 0.0, 3.0, 11, popular)  # evicts the first reading, matched once
    assert popular == [(0, 1e12, 1e12, 0.0, 0, 1)] and len(windows.cells) == 3


def test_alignment_holds_a_partition_running_ahead() -> None:
    align = Alignment(["r0", "r1", "q0"], lateness_ms=10)
    align.put("r0", (100, READING, 0, 0, 0, 0.0, 0.0, 0.0))
    align.put("q0", (500, QUERY, 0, 0, 0, 0.0, 0.0, 0.0))
    assert align.release() == []  # r1 has given nothing yet
    align.put("r1", (105, READING, 1, 0, 0, 0.0, 0.0, 0.0))
    assert [e[0] for e in align.release()] == [100, 105]
    assert align.holding("q0") == 1
    align.close("r0")
    align.close("r1")
    assert [e[0] for e in align.release()] == [500]


def test_aligned_partitions_make_nothing_late() -> None:
    """Partitions read in chunks of any size and interleaving, through the alignment: with
    times increasing in each partition, no event is late, and the results are the brute
    force's over all events in one round."""
    rng = random.Random(5)
    events = sorted(make_events(1_500, 7), key=lambda e: e[0])
    queues: dict[tuple[int, int], list[tuple]] = {}
    for e in events:
        queue = queues.setdefault((e[1], e[2]), [])
        queue.append((e[0], e[1], e[2], len(queue), *e[4:]))
    align = Alignment(queues, LATENESS)
    peer = SensorPeer(10, 2, LATENESS, 0.1)
    matches: Counter[tuple[Any, ...]] = Counter()
    popular: Counter[tuple[Any, ...]] = Counter()
    positions = dict.fromkeys(queues, 0)
    while align.open:
        source = rng.choice(sorted(align.open))
        start, end = positions[source], positions[source] + rng.randrange(1, 200)
        for e in queues[source][start:end]:
            align.put(source, e)
        positions[source] = end
        if end >= len(queues[source]):
            align.close(source)
        peer.arrive(align.release())
        found, evicted = peer.apply()
        matches.update(found)
        popular.update(evicted)
    peer.arrive(align.release())
    found, evicted = peer.apply()
    matches.update(found)
    popular.update(evicted)
    everything = [e for q in queues.values() for e in q]
    expected_matches, expected_popular, _ = brute_force([everything], 10, 2, False)
    assert peer.late == 0
    assert matches == expected_matches and popular == expected_popular


def test_outputs_decode_with_the_project_schemas() -> None:
    match = (2**40 + 3, 17, -2.5, 1_700_000_000_123, 1_700_000_001_456)
    decoded = AvroCodec("sensor_match").decode(encode_match(match))
    names = ("query_id", "sensor_id", "value", "reading_ts", "query_ts")
    assert decoded == dict(zip(names, match, strict=True))
    assert match_key(match[0]) == str(2**40 + 3).encode()
    popular = (-4, 0.25, -1e12, 7.0, 1_700_000_000_000, 3)
    decoded = AvroCodec("popular_reading").decode(encode_popular(popular))
    names = ("sensor_id", "x", "y", "value", "ts", "matches")
    assert decoded == dict(zip(names, popular, strict=True))
