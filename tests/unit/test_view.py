"""When the live top-k view stops: a duration counted from the first result, bounded wait."""

from __future__ import annotations

from trending.view import ViewDeadline


def test_the_duration_counts_from_the_first_result() -> None:
    deadline = ViewDeadline(seconds=20, started=100.0, first_result_timeout=300)
    assert not deadline.over(150.0, has_results=False)  # Spark still starting
    assert not deadline.over(160.0, has_results=True)  # first result: ends at 180
    assert not deadline.over(179.9, has_results=True)
    assert deadline.over(180.0, has_results=True)


def test_it_gives_up_when_no_result_comes() -> None:
    deadline = ViewDeadline(seconds=20, started=100.0, first_result_timeout=300)
    assert not deadline.over(399.0, has_results=False)
    assert deadline.over(400.0, has_results=False)


def test_without_a_duration_it_runs_until_stopped() -> None:
    deadline = ViewDeadline(seconds=None, started=0.0)
    assert not deadline.over(10**9, has_results=False)
    assert not deadline.over(10**9, has_results=True)
