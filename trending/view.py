"""A live terminal view of a top-k topic: the newest windows' top-k as they change."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from confluent_kafka import Consumer
from rich.console import Group
from rich.live import Live
from rich.table import Table

from connectors.avro import AvroCodec
from connectors.kafka import client_config


@dataclass
class TopKBoard:
    """The latest record per window, and counts of what arrived."""

    windows: dict[int, dict[str, Any]] = field(default_factory=dict)
    revisions: int = 0
    finals: int = 0

    def add(self, record: Mapping[str, Any]) -> None:
        start = record["window_start"]
        known = self.windows.get(start)
        if known is None or record["revision"] > known["revision"]:
            self.windows[start] = dict(record)
        if record["is_final"]:
            self.finals += 1
        else:
            self.revisions += 1

    def render(self, shown: int = 3) -> Group:
        tables = [_window_table(self.windows[s]) for s in sorted(self.windows)[-shown:][::-1]]
        summary = Table.grid()
        if not self.windows:
            summary.add_row(
                "waiting for the first results (Spark takes a few seconds to start) ..."
            )
        summary.add_row(f"[bold]{self.revisions}[/] revisions, [bold]{self.finals}[/] finals")
        return Group(summary, *tables)


@dataclass
class ViewDeadline:
    """When a timed live view ends: ``seconds`` after the first result arrived, or
    ``first_result_timeout`` after ``started`` if none did; never if ``seconds`` is None."""

    seconds: float | None
    started: float
    first_result_timeout: float = 300.0
    ends: float | None = None

    def over(self, now: float, has_results: bool) -> bool:
        if self.seconds is None:
            return False
        if self.ends is None and has_results:
            self.ends = now + self.seconds
        if self.ends is None:
            return now >= self.started + self.first_result_timeout
        return now >= self.ends


def _clock(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%H:%M:%S")


def _window_table(record: Mapping[str, Any]) -> Table:
    state = "[green]final[/]" if record["is_final"] else "[yellow]open[/]"
    title = (
        f"window {_clock(record['window_start'])}-{_clock(record['window_end'])} UTC  "
        f"{state}  rev {record['revision']}"
    )
    table = Table(title=title, title_justify="left", min_width=48)
    table.add_column("#", justify="right")
    table.add_column("hashtag")
    table.add_column("count", justify="right")
    for rank, entry in enumerate(record["top"], start=1):
        table.add_row(str(rank), "#" + entry["hashtag"], str(entry["count"]))
    return table


def watch_topk(
    bootstrap: str,
    topic: str,
    seconds: float | None = None,
    extra: Mapping[str, str] | None = None,
    registry_url: str | None = None,
    alive: Callable[[], bool] = lambda: True,
    first_result_timeout: float = 300.0,
) -> TopKBoard:
    """Show the newest windows of ``topic`` live (read_committed) until Ctrl-C, or for
    ``seconds`` counted from the first record (giving up after ``first_result_timeout``
    seconds without one), or until ``alive()`` turns false.
    """
    codec = AvroCodec("trending_topk", registry_url, subject=f"{topic}-value")
    consumer = Consumer(
        client_config(bootstrap, extra)
        | {
            "group.id": f"trending-view-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
        }
    )
    consumer.subscribe([topic])
    board = TopKBoard()
    deadline = ViewDeadline(seconds, time.monotonic(), first_result_timeout)
    try:
        with Live(board.render(), refresh_per_second=4) as live:
            while alive() and not deadline.over(time.monotonic(), bool(board.windows)):
                for message in consumer.consume(500, timeout=0.25):
                    if message.error() is None and message.value():
                        board.add(codec.decode(message.value() or b""))
                live.update(board.render())
    except KeyboardInterrupt:
        pass
    finally:
        consumer.close()
    return board
