"""``--idle-advance D`` (trending/jobs/idle.py): while no input end offset moves, every ``D``
the watermark is asked to be ``W0 + (now - t0)``, with ``t0`` the instant the input last moved
and ``W0`` the job's watermark when the silence first reached ``D``."""

from __future__ import annotations

import pytest

from trending.jobs.idle import Ends, IdleAdvance


class Input:
    """Fake input ends, watermark and clock; records the advances asked for."""

    def __init__(self) -> None:
        self.now = 100.0
        self.offset = 0
        self.mark: int | None = 5_000
        self.asked: list[tuple[float, int]] = []
        self.read = 10**9  # the offset the job has read up to

    def ends(self) -> Ends:
        return (("in", 0, self.offset),)

    def rule(self, idle_ms: int) -> IdleAdvance:
        return IdleAdvance(
            idle_ms, self.ends, lambda: self.mark, lambda w: self.asked.append((self.now, w)),
            caught_up=lambda ends: all(self.read >= end for _, _, end in ends),
            clock=lambda: self.now,
        )  # fmt: skip


def run(source: Input, rule: IdleAdvance, until: float, step: float = 0.5) -> None:
    while source.now < until:
        rule.check()
        source.now += step


def test_a_silent_input_advances_by_the_wall_clock_time_since_it_last_moved() -> None:
    source = Input()
    rule = source.rule(2_000)
    run(source, rule, 103.0)  # 100.0 .. 102.5: the input has not moved since the start
    source.offset = 7  # input at 103.0
    run(source, rule, 110.0)
    # silent from 103.0: due at 105.0, then every 2 s, each W0 + (now - 103.0)
    assert source.asked[-3:] == [(105.0, 7_000), (107.0, 9_000), (109.0, 11_000)]
    assert source.asked[0] == (102.0, 7_000)  # the first silence: from the start at 100.0


def test_input_that_moves_again_restarts_the_silence_and_takes_a_new_base() -> None:
    source = Input()
    rule = source.rule(1_000)
    source.offset = 1
    run(source, rule, 101.5)  # moved at 100.0 (first look), due at 101.0
    assert source.asked == [(101.0, 6_000)]
    source.offset, source.mark = 2, 20_000  # input at 101.5; the job's watermark moved on
    run(source, rule, 103.0)
    assert source.asked == [(101.0, 6_000), (102.5, 21_000)]


def test_nothing_is_asked_before_the_job_has_an_event_time_or_while_input_flows() -> None:
    source = Input()
    source.mark = None
    rule = source.rule(1_000)
    run(source, rule, 104.0)
    assert source.asked == []  # no watermark: nothing to advance
    source.mark = 0
    while source.now < 110.0:  # input every 0.5 s: never silent for 1 s
        source.offset += 1
        rule.check()
        source.now += 0.5
    assert source.asked == []


def test_a_duration_of_zero_is_refused() -> None:
    with pytest.raises(ValueError, match="idle-advance must be > 0"):
        Input().rule(0)


def test_the_base_is_taken_once_the_job_has_read_its_input() -> None:
    source = Input()
    rule = source.rule(1_000)
    source.offset, source.read, source.mark = 9, 4, 1_000  # the job is behind its input
    run(source, rule, 103.0)
    assert source.asked == []
    source.read, source.mark = 9, 8_000  # it has read everything: its watermark shows it
    run(source, rule, 104.0)
    assert source.asked == [(103.0, 11_000)]  # W0 = 8 000, silent for 3 s
