"""``trending watch``: what each board shows of the records it is fed, the feed's rate and age
on an injected clock, the job's metrics read from a literal exposition, the choice of ``--kind
auto``, and the command line's help and mistakes."""

from __future__ import annotations

import argparse
import dataclasses
import io
import socket
import types
import urllib.error
from collections.abc import Mapping
from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, TIMESTAMP_CREATE_TIME, KafkaError, TopicPartition
from rich.console import Console, RenderableType

from connectors.avro import AvroCodec
from tests.support.cli import run
from tests.unit.test_cli_help import PARSERS, option_helps
from trending.cli import build_parser
from trending.commands.watch import (
    DEFAULT_TOPICS,
    KINDS,
    Feed,
    MetricsPoller,
    Partitions,
    fetch_metrics,
    guess_kind,
    kind_for_topic,
    new_board,
)
from trending.errors import UserError
from trending.view import (
    FeedStats,
    JobMetricsBoard,
    JobSample,
    MatchBoard,
    PopularBoard,
    TopKBoard,
    WatchScreen,
    WindowRowBoard,
    parse_job_metrics,
)

T0 = 1_764_000_000_000  # 2025-11-24 16:00:00 UTC
MINUTE = 60_000


def text_of(renderable: RenderableType) -> str:
    console = Console(width=160, file=io.StringIO(), record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


def topk(
    start_min: int, revision: int, top: list[tuple[str, int]], final: bool = False
) -> dict[str, Any]:
    start = T0 + start_min * MINUTE
    return {
        "window_start": start,
        "window_end": start + 5 * MINUTE,
        "top": [{"hashtag": tag, "count": count} for tag, count in top],
        "revision": revision,
        "is_final": final,
        "emitted_at": start + 5 * MINUTE,
    }


def match(query: int, sensor: int, value: float, at_ms: int = 0) -> dict[str, Any]:
    return {
        "query_id": query,
        "sensor_id": sensor,
        "value": value,
        "reading_ts": T0 + at_ms,
        "query_ts": T0 + 1_000,
    }


def popular(sensor: int, value: float, at_ms: int = 0, matches: int = 3) -> dict[str, Any]:
    return {
        "sensor_id": sensor,
        "x": 0.25,
        "y": 0.5,
        "value": value,
        "ts": T0 + at_ms,
        "matches": matches,
    }


def row(
    key: str | None, start_min: int, value: float | None, values: list[float] | None = None
) -> dict[str, Any]:
    start = T0 + start_min * MINUTE
    return {
        "key": key,
        "start": start,
        "end": start + MINUTE,
        "value": value,
        "values": values or [],
    }


# --- hashtags -------------------------------------------------------------------------------


def test_the_top_k_board_shows_the_three_newest_windows_newest_first() -> None:
    board = TopKBoard(waiting=None)
    for start in (3, 0, 4, 1, 2):  # windows arrive in any order
        board.add(topk(start, 1, [(f"tag{start}", 10 + start)]))
    assert [r["window_start"] for r in board.newest(3)] == [
        T0 + 4 * MINUTE,
        T0 + 3 * MINUTE,
        T0 + 2 * MINUTE,
    ]
    shown = text_of(board.render())
    assert "#tag4" in shown and "#tag3" in shown and "#tag2" in shown
    assert "#tag1" not in shown and "#tag0" not in shown
    assert (
        shown.index("16:04:00-16:09:00")
        < shown.index("16:03:00-16:08:00")
        < shown.index("16:02:00")
    )


def test_a_window_shows_its_latest_revision_ranked_as_published() -> None:
    board = TopKBoard(waiting=None)
    board.add(topk(0, 2, [("kafka", 9), ("spark", 7), ("flink", 1)]))
    board.add(topk(0, 1, [("old", 99)]))  # an earlier revision arriving late changes nothing
    board.add(topk(1, 1, [("x", 1)], final=True))
    shown = text_of(board.render())
    assert "#old" not in shown
    assert shown.index("#kafka") < shown.index("#spark") < shown.index("#flink")
    assert "rev 2" in shown and "open" in shown and "final" in shown
    assert "2 revisions, 1 finals" in shown


def test_the_demo_board_still_says_it_waits_for_spark_and_the_watch_board_does_not() -> None:
    assert "Spark takes a few seconds" in text_of(TopKBoard().render())
    assert "Spark" not in text_of(TopKBoard(waiting=None).render())


def test_a_hashtag_with_brackets_is_shown_as_written() -> None:
    board = TopKBoard(waiting=None)
    board.add(topk(0, 1, [("[bold]x[/bold]", 1)]))
    assert "#[bold]x[/bold]" in text_of(board.render())


# --- sensors --------------------------------------------------------------------------------


def test_matches_show_per_query_its_count_and_newest_matches_recent_queries_first() -> None:
    board = MatchBoard(per_query=2, shown=2)
    board.add(match(7, 1, 1.5))
    board.add(match(8, 2, 2.5))
    board.add(match(7, 3, 3.5))
    board.add(match(9, 4, 4.5))
    board.add(match(7, 5, 5.5))
    assert [q.query_id for q in board.newest()] == [7, 9]  # 8 matched longest ago: not shown
    seven = board.queries[7]
    assert seven.count == 3
    assert [m["sensor_id"] for m in seven.recent] == [5, 3]
    shown = text_of(board.render())
    assert "5 matches of 3 queries" in shown
    assert "5 = 5.5" in shown and "3 = 3.5" in shown
    assert "1 = 1.5" not in shown  # beyond the newest two of query 7
    lines = shown.splitlines()
    at = {
        q: next(i for i, line in enumerate(lines) if line.startswith(f"│ {q:>5} ")) for q in (7, 9)
    }
    assert at[7] < at[9]
    assert not any(line.startswith("│     8 ") for line in lines)


def test_popular_readings_show_the_newest_first_and_count_per_sensor() -> None:
    board = PopularBoard(shown=3)
    for i, sensor in enumerate([4, 5, 4, 6, 7]):
        board.add(popular(sensor, 10.0 + i, at_ms=i * 1_000))
    assert [r["value"] for r in board.recent] == [14.0, 13.0, 12.0]
    assert board.sensors == {4: 2, 5: 1, 6: 1, 7: 1}
    shown = text_of(board.render())
    assert "5 popular readings of 4 sensors" in shown
    assert shown.index("16:00:04.000") < shown.index("16:00:03.000") < shown.index("16:00:02.000")
    assert "16:00:01.000" not in shown


# --- temporal windows -----------------------------------------------------------------------


def test_window_rows_show_each_keys_newest_row_newest_first() -> None:
    board = WindowRowBoard()
    board.add(row("a", 1, 1.0))
    board.add(row("b", 2, 2.0))
    board.add(row("a", 3, 3.0))
    board.add(row("a", 0, 99.0))  # older than a's newest: counted, not shown
    board.add(row(None, 2, None, [5.0, 4.0]))
    newest = board.newest()
    assert [(key, rows.row["value"], rows.count) for key, rows in newest] == [
        ("a", 3.0, 3),
        (None, None, 1),
        ("b", 2.0, 1),
    ]
    shown = text_of(board.render())
    assert "5 rows of 3 keys" in shown
    assert "99" not in shown
    assert "5, 4" in shown and "(no key)" in shown
    assert shown.index("16:03:00.000") < shown.index("(no key)") < shown.index(" b ")


def test_a_row_without_end_is_open_to_the_end_of_time() -> None:
    board = WindowRowBoard()
    board.add({"key": "k", "start": T0, "end": None, "value": 1.0, "values": []})
    assert "end of time" in text_of(board.render())


# --- the feed: rate, age, undecodable records ------------------------------------------------


class Clock:
    def __init__(self, now_s: float) -> None:
        self.now_s = now_s

    def __call__(self) -> float:
        return self.now_s


def test_the_rate_counts_records_written_in_the_last_ten_seconds() -> None:
    clock = Clock(T0 / 1000 + 100)
    feed = FeedStats(wall=clock)
    now_ms = T0 + 100_000
    for i in range(30):  # 30 records written 9.5 s to 0.5 s ago
        feed.add(now_ms - 9_500 + i * 300)
    for _ in range(50):  # a backlog written a minute ago: not news
        feed.add(now_ms - 60_000)
    assert feed.rate() == pytest.approx(3.0)
    assert feed.records == 80
    clock.now_s += 5  # the first half of them leave the window
    assert feed.rate() == pytest.approx(
        sum(1 for i in range(30) if -9_500 + i * 300 >= -5_000) / 10
    )
    clock.now_s += 20
    assert feed.rate() == 0.0


def test_the_age_is_that_of_the_newest_record_and_undecodable_ones_are_counted() -> None:
    clock = Clock(T0 / 1000)
    feed = FeedStats(wall=clock)
    assert feed.age_s() is None
    feed.add(T0 - 7_000)
    feed.add(T0 - 42_000)  # an older one, later: the newest stays
    feed.add(T0 - 3_000, decoded=False)
    clock.now_s += 2
    assert feed.age_s() == pytest.approx(5.0)
    assert (feed.records, feed.undecodable) == (2, 1)
    assert "last record 5 s ago" in feed.describe()
    assert "1 undecodable" in feed.describe()


def test_a_record_without_timestamp_counts_as_written_when_it_arrived() -> None:
    clock = Clock(T0 / 1000)
    feed = FeedStats(wall=clock)
    feed.add(None)
    clock.now_s += 4
    assert feed.age_s() == pytest.approx(4.0)


def test_the_screen_waits_for_records_and_names_the_topic() -> None:
    screen = WatchScreen("no-such", FeedStats(wall=Clock(0)), missing=True)
    assert "waiting for records on no-such (no such topic yet)" in text_of(screen.render())
    screen.missing = False
    assert "waiting for records on no-such ..." in text_of(screen.render())


# --- the job's metrics ----------------------------------------------------------------------

EXPOSITION = """\
# HELP trending_kafka_lag_records Latest offset minus the offset the query has processed.
# TYPE trending_kafka_lag_records gauge
trending_kafka_lag_records{partition="0",topic="tweets"} 120.0
trending_kafka_lag_records{partition="1",topic="tweets"} 30.0
trending_kafka_lag_records{partition="2",topic="tweets"} NaN
# HELP trending_input_rows_per_second Rows arriving per second (last batch).
# TYPE trending_input_rows_per_second gauge
trending_input_rows_per_second 2500.5
# HELP trending_processed_rows_per_second Rows processed per second (last batch).
# TYPE trending_processed_rows_per_second gauge
trending_processed_rows_per_second 3100.0
# HELP trending_batches_total Micro-batches completed.
# TYPE trending_batches_total counter
trending_batches_total 42.0
"""


def test_the_lag_is_summed_over_partitions_and_the_rates_are_read() -> None:
    assert parse_job_metrics(EXPOSITION) == JobSample(150.0, 2500.5, 3100.0)


def test_a_family_the_endpoint_lacks_is_unknown() -> None:
    text = "# TYPE trending_input_rows_per_second gauge\ntrending_input_rows_per_second 7\n"
    assert parse_job_metrics(text) == JobSample(None, 7.0, None)


def test_the_lag_trend_is_its_change_a_second_between_readings() -> None:
    board = JobMetricsBoard("http://localhost:9108/metrics")
    assert "reading http://localhost:9108/metrics" in board.line()
    board.update(EXPOSITION, now=10.0)
    assert board.lag_rate is None
    board.update(EXPOSITION.replace("120.0", "70.0"), now=12.0)  # lag 150 -> 100 in 2 s
    assert board.lag_rate == pytest.approx(-25.0)
    line = text_of(board.line())
    assert "job input lag 100 records (-25/s)" in line
    assert "input 2,500.5 rows/s" in line and "processed 3,100 rows/s" in line


def test_an_endpoint_that_fails_is_said_so_and_the_next_good_reading_clears_it() -> None:
    board = JobMetricsBoard("http://localhost:1/metrics")
    board.update("<html>not metrics</html>", now=1.0)
    assert "cannot read http://localhost:1/metrics: not Prometheus metrics" in text_of(board.line())
    board.update(EXPOSITION, now=2.0)
    assert "cannot read" not in board.line()
    board.update("# TYPE other gauge\nother 1\n", now=3.0)
    assert "shows no trending job metrics" in text_of(board.line())


def test_the_poller_reports_an_unreachable_endpoint_instead_of_raising() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    url = f"http://127.0.0.1:{port}/metrics"
    board = JobMetricsBoard(url)
    MetricsPoller(url, board, fetch=fetch_metrics).read_once()
    assert board.error is not None and "refused" in board.error.lower()
    assert f"cannot read {url}" in text_of(board.line())

    def refuse(_: str) -> str:
        raise urllib.error.HTTPError(url, 503, "Service Unavailable", {}, None)  # type: ignore[arg-type]

    MetricsPoller(url, board, fetch=refuse).read_once()
    assert board.error == "HTTP 503 Service Unavailable"
    MetricsPoller(url, board, fetch=lambda _: EXPOSITION, clock=lambda: 5.0).read_once()
    assert board.error is None and board.sample == JobSample(150.0, 2500.5, 3100.0)


# --- which kind a topic holds ---------------------------------------------------------------


def test_auto_goes_by_the_jobs_default_output_topics() -> None:
    assert kind_for_topic("trending-hashtags") == "hashtags"
    assert kind_for_topic("sensor-matches") == "matches"
    assert kind_for_topic("popular-readings") == "popular"
    assert kind_for_topic("window-rows") == "windows"
    assert kind_for_topic("window-rows-test-3f2a") == "windows"
    assert kind_for_topic("trending-hashtags.eu") == "hashtags"
    assert kind_for_topic("results") is None  # decided by the first record
    assert kind_for_topic("trending-hashtagsx") is None


def test_the_default_topics_are_the_jobs_defaults() -> None:
    from trending.jobs.hashtags import HashtagJobConfig
    from trending.jobs.sensors import SensorJobConfig
    from trending.jobs.windows import WindowsJobConfig

    def default(cls: type, name: str) -> Any:
        return next(f.default for f in dataclasses.fields(cls) if f.name == name)

    expected = {
        default(HashtagJobConfig, "output_topic"): "hashtags",
        default(SensorJobConfig, "matches_topic"): "matches",
        default(SensorJobConfig, "popular_topic"): "popular",
        default(WindowsJobConfig, "output_topic"): "windows",
    }
    assert expected == DEFAULT_TOPICS


def test_a_topic_named_for_a_jobs_input_is_refused() -> None:
    with pytest.raises(UserError, match="holds tweet records, not a job's results"):
        kind_for_topic("tweets")


SAMPLES: dict[str, dict[str, Any]] = {
    "hashtags": topk(0, 1, [("kafka", 3)]),
    "matches": match(11, 2, 20.5),
    "popular": popular(3, 21.5),
    "windows": row("a", 0, 1.5),
}


def codecs() -> dict[str, AvroCodec]:
    return {kind: AvroCodec(schema) for kind, schema in KINDS.items()}


@pytest.mark.parametrize("kind", sorted(SAMPLES))
def test_auto_recognises_each_kind_by_its_first_record(kind: str) -> None:
    value = AvroCodec(KINDS[kind]).encode(SAMPLES[kind])
    assert guess_kind(value, codecs()) == (kind, SAMPLES[kind])


def test_bytes_no_schema_decodes_are_no_kind() -> None:
    assert guess_kind(b"\xff\xff\xff", codecs()) is None
    assert guess_kind(b"", codecs()) is None
    assert guess_kind(None, codecs()) is None


def test_a_record_with_an_impossible_timestamp_is_not_taken_for_a_result() -> None:
    bad = dict(SAMPLES["popular"], ts=-5)
    assert guess_kind(AvroCodec("popular_reading").encode(bad), codecs()) is None


class FakeMessage:
    def __init__(
        self, value: bytes | None, timestamp_ms: int = T0, error: KafkaError | None = None
    ):
        self._value, self._timestamp, self._error = value, timestamp_ms, error

    def error(self) -> KafkaError | None:
        return self._error

    def value(self) -> bytes | None:
        return self._value

    def timestamp(self) -> tuple[int, int]:
        return TIMESTAMP_CREATE_TIME, self._timestamp


def test_auto_takes_the_kind_of_the_first_record_that_decodes_and_counts_the_rest() -> None:
    screen = WatchScreen("results", FeedStats(wall=Clock(T0 / 1000)))
    feed = Feed(screen, codecs())
    encode = AvroCodec("window_row").encode
    for message in [
        FakeMessage(b"\x07garbage"),
        FakeMessage(encode(row("a", 0, 1.0))),
        FakeMessage(encode(row("b", 1, 2.0))),
        FakeMessage(AvroCodec("trending_topk").encode(SAMPLES["hashtags"])),  # not a window row
        FakeMessage(None),
    ]:
        feed.take(message)  # type: ignore[arg-type]
    assert screen.kind == "windows"
    assert isinstance(screen.board, WindowRowBoard) and screen.board.rows == 2
    assert (screen.feed.records, screen.feed.undecodable) == (2, 3)
    shown = text_of(screen.render())
    assert "results (windows): 2 records" in shown and "3 undecodable" in shown


def test_a_client_error_is_a_note_not_a_crash() -> None:
    screen = WatchScreen("t", FeedStats(wall=Clock(0)), "matches", new_board("matches"))
    feed = Feed(screen, {"matches": AvroCodec("sensor_match")})
    feed.take(FakeMessage(None, error=KafkaError(KafkaError._TRANSPORT, "broker down")))  # type: ignore[arg-type]
    assert feed.note is not None and "broker down" in feed.note
    with pytest.raises(UserError, match="Kafka consumer failed"):
        feed.take(FakeMessage(None, error=KafkaError(KafkaError._FATAL, "fenced", fatal=True)))  # type: ignore[arg-type]


# --- the command line -----------------------------------------------------------------------


def parse(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["watch", *argv])


def test_the_defaults_are_auto_from_earliest_until_stopped() -> None:
    args = parse("trending-hashtags")
    assert (args.kind, args.start, args.duration, args.metrics_url) == (
        "auto",
        "earliest",
        None,
        None,
    )
    args = parse("t", "--duration", "1m", "--from", "latest", "--kind", "popular")
    assert (args.duration, args.start, args.kind) == (60.0, "latest", "popular")
    assert parse("t", "--duration", "500ms").duration == 0.5


def test_help_shows_each_default_once() -> None:
    helps = option_helps(PARSERS["watch"])
    assert helps["--kind"].endswith("(default: auto)")
    assert helps["--from"].endswith("(default: earliest)")
    assert helps["--duration"] == "stop after this long, e.g. 30s (default: until Ctrl-C)"
    assert "trending-hashtags, sensor-matches, popular-readings and window-rows" in helps["--kind"]


WATCH = "trending watch: error: "
MISTAKES = [
    (["watch"], WATCH + "the following arguments are required: TOPIC"),
    (["watch", "t", "--kind", "tweets"], WATCH + "argument --kind: invalid choice"),
    (["watch", "t", "--from", "now"], WATCH + "argument --from: invalid choice"),
    (["watch", "t", "--duration", "soon"], WATCH + "argument --duration: not a duration: 'soon'"),
    (["watch", "t", "--metrics-url", "host:9108"], WATCH + "argument --metrics-url: not an http"),
    (["watch", "tweets"], "trending: error: topic tweets holds tweet records, not a job's"),
]


@pytest.mark.parametrize(("argv", "start"), MISTAKES)
def test_a_mistake_is_one_line_and_exit_code_2(
    argv: list[str], start: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TRENDING_CONFIG", raising=False)
    code, err = run(argv, capsys)
    assert code == 2
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert err.startswith(start), err


def test_boards_take_what_the_schemas_decode() -> None:
    """Each kind's board accepts the record its schema decodes, field names and all."""
    for kind, record in SAMPLES.items():
        decoded: Mapping[str, Any] = AvroCodec(KINDS[kind]).decode(
            AvroCodec(KINDS[kind]).encode(record)
        )
        board = new_board(kind)
        board.add(decoded)
        assert text_of(board.render())


# --- partitions, without a consumer group ---------------------------------------------------


class FakeTopic:
    def __init__(self, partitions: int, error: KafkaError | None = None) -> None:
        self.partitions = {p: object() for p in range(partitions)}
        self.error = error


class FakeClient:
    """``list_topics`` answers from ``topics``; ``incremental_assign`` calls are recorded."""

    def __init__(self) -> None:
        self.topics: dict[str, FakeTopic] = {}
        self.assigned: list[list[tuple[str, int, int]]] = []

    def list_topics(self, topic: str, timeout: float) -> Any:
        missing = FakeTopic(0, KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART))
        return types.SimpleNamespace(topics={topic: self.topics.get(topic, missing)})

    def incremental_assign(self, partitions: list[TopicPartition]) -> None:
        self.assigned.append([(tp.topic, tp.partition, tp.offset) for tp in partitions])


def test_partitions_are_assigned_once_the_topic_exists_and_new_ones_later() -> None:
    client = FakeClient()
    partitions = Partitions(client, "r", OFFSET_BEGINNING, "b:9092", every_s=5.0)  # type: ignore[arg-type]
    partitions.check(0.0)
    assert partitions.missing and client.assigned == []
    partitions.check(0.5)  # asked again only after a second
    client.topics["r"] = FakeTopic(2)
    partitions.check(0.9)
    assert partitions.missing
    partitions.check(1.0)
    assert not partitions.missing
    assert client.assigned == [[("r", 0, OFFSET_BEGINNING), ("r", 1, OFFSET_BEGINNING)]]
    client.topics["r"] = FakeTopic(3)
    partitions.check(5.9)  # every 5 s once assigned
    assert len(client.assigned) == 1
    partitions.check(6.0)
    assert client.assigned[1] == [("r", 2, OFFSET_BEGINNING)]
