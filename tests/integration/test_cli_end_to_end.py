"""The user's path, all through the ``trending`` command: replay a JSONL file, run the job with
``--available-now``, read the results back with ``trending consume --json``, compare every final
window with an independent count.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from tests.support.hashtags import independent_finals

pytestmark = pytest.mark.integration

TAGS = ["Spark", "spark", "SPARK", "kafka", "Café", "CAFÉ", "cafe\u0301", "東京", "मुंबई", "x_y"]
BASE_MS = 1_750_000_000_000


def trending(*args: str, timeout: float = 300) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "trending.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def write_jsonl(path: Path, count: int) -> list[dict[str, Any]]:
    """Tweets 3 s apart in event time, shuffled within +-20 s, ISO and epoch-ms timestamps."""
    rng = random.Random(7)
    tweets = []
    for i in range(count):
        created = BASE_MS + i * 3_000 + rng.randrange(-20_000, 20_000)
        text = " ".join(["#" + t for t in rng.sample(TAGS, rng.randint(0, 3))] + ["hi"])
        tweets.append({"id": i, "user": f"user{i % 13}", "text": text, "created_at": created})
    with path.open("w") as out:
        for i, tweet in enumerate(tweets):
            line = dict(tweet)
            if i % 2:
                moment = datetime.fromtimestamp(tweet["created_at"] / 1000, tz=timezone.utc)
                line["created_at"] = moment.isoformat(timespec="milliseconds").replace(
                    "+00:00", "Z"
                )
            out.write(json.dumps(line) + "\n")
    return tweets


def test_replay_run_consume_matches_an_independent_count(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    tag = uuid.uuid4().hex[:8]
    tweets_topic, out_topic = f"tweets-{tag}", f"trending-hashtags-{tag}"
    tweets = write_jsonl(tmp_path / "tweets.jsonl", 3_000)
    common = ("--bootstrap-servers", kafka_bootstrap)
    trending(
        "produce",
        "tweets",
        "--from-jsonl",
        str(tmp_path / "tweets.jsonl"),
        "--topic",
        tweets_topic,
        *common,
    )
    trending(
        "run", "hashtags", "--available-now", "--master", "local[2]",
        "--size", "2m", "--hop", "30s", "--lateness", "30s",
        "--input-topic", tweets_topic, "--output-topic", out_topic,
        "--late-topic", f"late-{tag}", "--dead-letter-topic", f"dlq-{tag}",
        "--checkpoint", str(tmp_path / "checkpoint"), "--metrics-port", "0", *common,
    )  # fmt: skip
    lines = trending(
        "consume", out_topic, "--from-beginning", "--json", "--idle-timeout", "5", *common
    )
    records = [json.loads(line) for line in lines.splitlines()]
    finals = {
        r["window_start"]: [(e["hashtag"], e["count"]) for e in r["top"]]
        for r in records
        if r["is_final"]
    }
    assert len(finals) == sum(r["is_final"] for r in records), "a window was finalized twice"
    expected = independent_finals(tweets, 120_000, 30_000, 30_000)
    assert len(expected) > 200
    assert finals == expected
    assert {r["window_end"] - r["window_start"] for r in records} == {120_000}
