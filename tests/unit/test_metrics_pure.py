"""The pure parts of the metrics: families exported from the start, progress parsing, lag, the
hashtags observer, the trending view, and the names the dashboard and alerts use."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import yaml
from prometheus_client import generate_latest

from trending.cli import build_parser
from trending.jobs.hashtags import BatchStats, HashtagObserver
from trending.jobs.sensors import SensorBatchStats, SensorObserver
from trending.jobs.windows import WindowsBatchStats, WindowsObserver
from trending.metrics import Metrics, dead_reason_label
from trending.spark.listener import (
    MetricsListener,
    compute_lag,
    parse_offsets,
    parse_timestamp_ms,
    record_progress,
)
from trending.windows.topk_merge import Published

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
METRIC_NAME = re.compile(r"\btrending_[a-z0-9_]+")
SUFFIXES = ("_bucket", "_count", "_sum")
WATERMARK = "2023-11-14T22:13:20.000Z"


def value(metrics: Metrics, name: str, **labels: str) -> float | None:
    return metrics.registry.get_sample_value(name, labels)


def exported(metrics: Metrics) -> str:
    return generate_latest(metrics.registry).decode()


def progress(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "numInputRows": 120,
        "inputRowsPerSecond": 60.0,
        "processedRowsPerSecond": float("nan"),
        "durationMs": {"triggerExecution": 1500, "addBatch": 1200, "walCommit": 20},
        "eventTime": {"watermark": WATERMARK},
        "stateOperators": [{"operatorName": "agg", "numRowsTotal": 7, "memoryUsedBytes": 4096}],
        "sources": [
            {
                "numInputRows": 120,
                "startOffset": '{"tweets": {"0": 10, "1": 0}}',
                "endOffset": '{"tweets": {"0": 100, "1": 40}}',
            }
        ],
    }
    return {**base, **overrides}


def test_every_family_is_exported_at_zero_from_the_start() -> None:
    metrics = Metrics("hashtags")
    text = exported(metrics)
    for name in (
        "trending_batches_total 0.0",
        'trending_dead_letters_total{reason="invalid_avro"} 0.0',
        'trending_late_records_total{reason="windows_final"} 0.0',
        'trending_batch_phase_seconds_count{phase="publish",source="job"} 0.0',
        'trending_query_status{state="failed"} 0.0',
        "trending_matches_total 0.0",
        "trending_popular_readings_total 0.0",
        "trending_topk_changes_total 0.0",
        "trending_partitions_evicted_total 0.0",
        "trending_watermark_delay_seconds 0.0",
    ):
        assert name in text
    assert 'trending_build_info{job_kind="hashtags"' in text


def test_progress_sets_rates_durations_state_and_offsets() -> None:
    metrics = Metrics("hashtags")
    ends = record_progress(metrics, progress())
    assert ends == {"tweets": {0: 100, 1: 40}}
    assert value(metrics, "trending_input_rows_total") == 120
    assert value(metrics, "trending_input_rows_per_second") == 60
    assert value(metrics, "trending_processed_rows_per_second") == 0  # NaN: empty batch
    assert value(metrics, "trending_batch_duration_seconds_sum") == 1.5
    assert (
        value(metrics, "trending_batch_phase_seconds_sum", source="spark", phase="addBatch") == 1.2
    )
    assert value(metrics, "trending_state_rows", operator="agg") == 7
    assert value(metrics, "trending_state_memory_bytes", operator="agg") == 4096
    assert value(metrics, "trending_kafka_records_read_total", topic="tweets") == 120
    assert value(metrics, "trending_watermark_timestamp_seconds") == 1_700_000_000
    before = time.time()
    delay = value(metrics, "trending_watermark_delay_seconds")  # now - the watermark
    after = time.time()
    assert delay is not None and before - 1_700_000_000 <= delay <= after - 1_700_000_000


def test_an_unset_spark_watermark_is_ignored() -> None:
    # Spark reports an unset watermark as the epoch: it must not replace the one set before
    metrics = Metrics("hashtags")
    record_progress(metrics, progress())
    record_progress(metrics, progress(eventTime={"watermark": "1970-01-01T00:00:00.000Z"}))
    assert value(metrics, "trending_watermark_timestamp_seconds") == 1_700_000_000
    record_progress(metrics, progress(eventTime={}))
    assert value(metrics, "trending_watermark_timestamp_seconds") == 1_700_000_000


def test_records_read_of_a_multi_topic_source_come_from_offsets() -> None:
    metrics = Metrics("hashtags")
    end = '{"a": {"0": 8}, "b": {"0": 6}}'
    source = {"numInputRows": 9, "startOffset": '{"a": {"0": 5}}', "endOffset": end}
    record_progress(metrics, progress(sources=[source]))
    assert value(metrics, "trending_kafka_records_read_total", topic="a") == 3
    assert value(metrics, "trending_kafka_records_read_total", topic="b") == 0


def test_listener_lines_of_its_query_update_the_metrics_and_others_are_ignored() -> None:
    # the lines trending.state.ProgressQueue writes: Spark's progress JSON has its offsets as
    # objects, not text, and leaves NaN rates out
    metrics = Metrics("hashtags")
    listener = MetricsListener(metrics, query_id="q1")
    source = {"numInputRows": 30, "startOffset": {"t": {"0": 5}}, "endOffset": {"t": {"0": 35}}}
    mine = progress(id="q1", sources=[source])
    del mine["processedRowsPerSecond"]
    lines = [
        {"event": "started", "id": "q1"},
        {"event": "progress", "progress": mine},
        {"event": "progress", "progress": progress(id="q2", numInputRows=999)},
        {"event": "terminated", "id": "q2", "failed": True},
    ]
    for line in lines:
        listener.on_event(json.loads(json.dumps(line)))
    assert value(metrics, "trending_batches_total") == 1
    assert value(metrics, "trending_input_rows_total") == 120
    assert value(metrics, "trending_kafka_records_read_total", topic="t") == 30
    assert listener.processed_offsets() == {"t": {0: 35}}
    assert value(metrics, "trending_query_status", state="active") == 1
    assert value(metrics, "trending_query_status", state="failed") == 0
    listener.on_event({"event": "terminated", "id": "q1", "failed": True})
    assert value(metrics, "trending_query_status", state="failed") == 1


def test_offsets_timestamps_and_lag() -> None:
    assert parse_offsets('{"t": {"0": 3}}') == {"t": {0: 3}}
    assert parse_offsets("{'t': {'0': 3}}") == {"t": {0: 3}}
    assert parse_offsets(None) == parse_offsets("") == parse_offsets("not offsets") == {}
    assert parse_timestamp_ms(WATERMARK) == 1_700_000_000_000
    lag = compute_lag({"t": {0: 50, 1: 10, 2: 7}}, {"t": {0: 20, 1: 12}})
    assert lag == {("t", 0): 30, ("t", 1): 0}  # partition 2 not processed yet: unknown


def test_trending_view_keeps_only_the_current_top_k() -> None:
    metrics = Metrics("hashtags")
    metrics.set_top(60_000, [("spark", 5), ("kafka", 3)])
    metrics.set_top(120_000, [("kafka", 4), ("ai", 2)])
    text = exported(metrics)
    assert 'hashtag="spark"' not in text
    assert value(metrics, "trending_top_hashtag_count", hashtag="kafka") == 4
    assert value(metrics, "trending_top_window_start_timestamp_seconds") == 120


def fake_processor(windows: dict[int, Published], watermark_ms: int | None) -> Any:
    config = SimpleNamespace(
        input_topic="tweets", output_topic="out", late_topic="late", dead_letter_topic="dlq"
    )
    merger = SimpleNamespace(state=SimpleNamespace(windows=windows), watermark_ms=watermark_ms)
    return SimpleNamespace(config=config, merger=merger)


def test_hashtag_observer_counts_a_batch() -> None:
    metrics = Metrics("hashtags")
    windows = {0: Published((("a", 2),), 1)}
    processor = fake_processor(windows, None)
    observe = HashtagObserver(metrics, processor)
    assert value(metrics, "trending_kafka_records_written_total", topic="dlq") == 0
    windows.pop(0)  # finalized; two new windows opened
    windows[60_000] = Published((("b", 3), ("a", 1)), 1)
    windows[120_000] = Published((), 0)
    processor.merger.watermark_ms = 90_000
    reason = "value is not valid Avro for the schema"
    stats = BatchStats(1, tweets=9, late=2, dead=1, revisions=1, finals=1, dead_reasons={reason: 1})
    stats.phases = {"spark": 0.5, "publish": 0.1}
    observe(stats, processor)
    assert value(metrics, "trending_windows_opened_total") == 2
    assert value(metrics, "trending_windows_finalized_total") == 1
    assert value(metrics, "trending_windows_revised_total") == 1
    assert value(metrics, "trending_dead_letters_total", reason="invalid_avro") == 1
    assert value(metrics, "trending_late_records_total", reason="windows_final") == 2
    assert value(metrics, "trending_kafka_records_written_total", topic="out") == 2
    assert value(metrics, "trending_open_windows") == 2
    assert value(metrics, "trending_state_rows", operator="driver_topk") == 2
    assert value(metrics, "trending_watermark_timestamp_seconds") == 90
    assert value(metrics, "trending_batch_phase_seconds_sum", source="job", phase="spark") == 0.5
    assert 'trending_top_hashtag_count{hashtag="b"}' not in exported(metrics)  # newest: none yet


def test_sensor_observer_counts_a_batch() -> None:
    metrics = Metrics("sensors")
    topics = {n: n for n in ("matches", "popular", "late", "dlq", "readings", "queries")}
    config = SimpleNamespace(**{f"{n}_topic": n for n in topics}, dead_letter_topic="dlq")
    processor: Any = SimpleNamespace(config=config, state=SimpleNamespace(watermark_ms=None))
    observe = SensorObserver(metrics, processor)
    for topic in ("matches", "popular", "late", "dlq"):
        assert value(metrics, "trending_kafka_records_written_total", topic=topic) == 0
    reason = "value is not valid Avro for the schema"
    stats = SensorBatchStats(3, matches=7, popular=2, pending=40, late=1, dead=1)
    stats.dead_reasons, stats.watermark_ms = {reason: 1}, 5_000
    observe(stats, processor)
    observe(SensorBatchStats(3, matches=99, skipped=True), processor)  # a replayed batch
    assert value(metrics, "trending_matches_total") == 7
    assert value(metrics, "trending_popular_readings_total") == 2
    assert value(metrics, "trending_pending_events") == 40
    assert value(metrics, "trending_kafka_records_written_total", topic="matches") == 7
    assert value(metrics, "trending_kafka_records_written_total", topic="dlq") == 1
    assert value(metrics, "trending_late_records_total", reason="behind_watermark") == 1
    assert value(metrics, "trending_dead_letters_total", reason="invalid_avro") == 1
    assert value(metrics, "trending_watermark_timestamp_seconds") == 5


def test_windows_observer_counts_a_batch() -> None:
    metrics = Metrics("windows")
    names = ("input", "output", "late", "dead_letter")
    config = SimpleNamespace(**{f"{n}_topic": n for n in names})
    processor: Any = SimpleNamespace(config=config, state=SimpleNamespace(watermark_ms=0))
    observe = WindowsObserver(metrics, processor)
    assert value(metrics, "trending_kafka_records_written_total", topic="dead_letter") == 0
    reason = "value is not valid Avro for the schema"
    stats = WindowsBatchStats(4, events=10, rows=6, late=2, dead=1, watermark_ms=9_000)
    stats.dead_reasons, stats.phases = {reason: 1}, {"spark": 0.25, "publish": 0.5}
    observe(stats, processor)
    observe(WindowsBatchStats(4, rows=99, skipped=True), processor)  # a replayed batch
    assert value(metrics, "trending_kafka_records_written_total", topic="output") == 6
    assert value(metrics, "trending_kafka_records_written_total", topic="late") == 2
    assert value(metrics, "trending_kafka_records_written_total", topic="dead_letter") == 1
    assert value(metrics, "trending_late_records_total", reason="behind_watermark") == 2
    assert value(metrics, "trending_dead_letters_total", reason="invalid_avro") == 1
    assert value(metrics, "trending_batch_phase_seconds_sum", source="job", phase="publish") == 0.5
    assert value(metrics, "trending_watermark_timestamp_seconds") == 9


def test_query_status_and_reasons() -> None:
    metrics = Metrics("hashtags")
    metrics.set_status("active")
    assert value(metrics, "trending_query_status", state="active") == 1
    metrics.set_status("failed")
    assert value(metrics, "trending_query_status", state="active") == 0
    assert value(metrics, "trending_query_status", state="failed") == 1
    assert dead_reason_label("empty value") == "empty_value"
    assert dead_reason_label("something new") == "other"
    oversized = "oversized: 9000 bytes as a record of t, which accepts 10; value cut to fit"
    assert dead_reason_label(oversized) == "oversized"


def test_metrics_flags() -> None:
    parser = build_parser()
    args = parser.parse_args(["run", "hashtags"])
    assert (args.metrics_host, args.metrics_port) == ("127.0.0.1", 9108)
    args = parser.parse_args(
        ["run", "hashtags", "--metrics-port", "0", "--metrics-host", "0.0.0.0"]
    )
    assert (args.metrics_host, args.metrics_port) == ("0.0.0.0", 0)


def family_names(metrics: Metrics) -> set[str]:
    """Every series name a registry can export, labelled families included."""
    names: set[str] = set()
    for family in metrics.registry.collect():
        suffixes = {"counter": ("_total",), "histogram": SUFFIXES, "info": ("_info",)}
        names.update(family.name + s for s in suffixes.get(family.type, ("",)))
    return names


def test_dashboard_and_alerts_use_only_exported_names() -> None:
    names = family_names(Metrics("hashtags"))
    dashboard = json.loads((DEPLOY / "grafana" / "dashboards" / "trending.json").read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    rules = yaml.safe_load((DEPLOY / "prometheus" / "alerts.yml").read_text())["groups"][0]["rules"]
    exprs += [r["expr"] for r in rules]
    used = {n for e in exprs for n in METRIC_NAME.findall(e)}
    assert used - names == set()
    titles = " ".join(p["title"].lower() for p in dashboard["panels"])
    for topic in ("throughput", "lag", "p50", "watermark", "state", "dead", "trending"):
        assert topic in titles


def test_a_taken_metrics_port_is_a_clear_error_and_0_serves_nothing() -> None:
    import socket

    import pytest

    from trending.errors import UserError
    from trending.metrics import serve_metrics

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(UserError, match=f"127.0.0.1:{port}.*--metrics-port"):
            serve_metrics("produce", "127.0.0.1", port)
    _, server = serve_metrics("produce", "127.0.0.1", 0)
    assert server is None


def test_dead_letter_reasons_map_to_few_labels() -> None:
    from trending.metrics import dead_reason_label

    assert {
        reason: dead_reason_label(reason)
        for reason in (
            "empty value",
            "trailing bytes after the Avro record",
            "string field text is not valid UTF-8",
            "length of field user is beyond the value",
            "length of field user is negative",
            "value ends inside field created_at",
            "union index of field lang is out of range",
            "varint of field id is longer than 10 bytes",
            "item count of field tags is beyond the value",
            "future-timestamp",
            "past-timestamp",
            "distance must be a number >= 0",
            "over --max-text-chars: a text of 900007 characters (at most 25000)",
            "over --max-hashtags: 20000 hashtags (at most 100)",
            "over --max-hashtag-chars: a hashtag of 300000 characters (at most 280)",
            "over --max-url-scan-steps: finding the URLs of this text takes more than 256 steps",
            "over --no-such-flag: made up",
            "unknown schema id 4000000000",
            "schema id 7 is not compatible with the job's schema trending.Tweet",
            "schema id 8 is PROTOBUF, not Avro",
            "schema id 9 is not a valid Avro schema",
            "value of schema id 10 cannot be read with the job's schema",
            None,
        )
    } == {
        "unknown schema id 4000000000": "unknown_schema",
        "schema id 7 is not compatible with the job's schema trending.Tweet": "incompatible_schema",
        "schema id 8 is PROTOBUF, not Avro": "incompatible_schema",
        "schema id 9 is not a valid Avro schema": "incompatible_schema",
        "value of schema id 10 cannot be read with the job's schema": "incompatible_schema",
        "empty value": "empty_value",
        "trailing bytes after the Avro record": "trailing_bytes",
        "string field text is not valid UTF-8": "invalid_utf8",
        "length of field user is beyond the value": "malformed_avro",
        "length of field user is negative": "malformed_avro",
        "value ends inside field created_at": "malformed_avro",
        "union index of field lang is out of range": "malformed_avro",
        "varint of field id is longer than 10 bytes": "malformed_avro",
        "item count of field tags is beyond the value": "malformed_avro",
        "future-timestamp": "future_timestamp",
        "past-timestamp": "past_timestamp",
        "distance must be a number >= 0": "other",
        "over --max-text-chars: a text of 900007 characters (at most 25000)": "max_text_chars",
        "over --max-hashtags: 20000 hashtags (at most 100)": "max_hashtags",
        "over --max-hashtag-chars: a hashtag of 300000 characters (at most 280)": (
            "max_hashtag_chars"
        ),
        "over --max-url-scan-steps: finding the URLs of this text takes more than 256 steps": (
            "max_url_scan_steps"
        ),
        "over --no-such-flag: made up": "other",
        None: "other",
    }
