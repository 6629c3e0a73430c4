"""The package built as a wheel and installed into a fresh venv runs outside the source tree
(see tests/support/wheel.py)."""

from __future__ import annotations

import importlib.metadata
import json
import os
import uuid
import zipfile
from pathlib import Path

import pytest

from connectors.broker import free_port
from tests.integration.test_faults import HOP_MS, LATENESS_MS, SIZE_MS, finals, make_tweets, produce
from tests.support.hashtags import independent_finals
from tests.support.wheel import ROOT, install, run

pytestmark = pytest.mark.integration

SPEC = {"kind": "sliding", "evict": {"count": 4}, "trigger": {"count": 2}, "partition_by": "p"}
EVENTS = [{"tuple": {"p": "a", "v": 1}}, {"tuple": {"p": "a", "v": 2}}, {"time": 5}]
COMMANDS = [
    ["broker"],
    ["produce", "tweets"],
    ["produce", "readings"],
    ["produce", "queries"],
    ["produce", "events"],
    ["consume"],
    ["run", "hashtags"],
    ["run", "sensors"],
    ["run", "windows"],
    ["windows", "replay"],
    ["demo"],
    ["spark-args"],
]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A fresh venv with the wheel installed, and an environment for its commands."""
    done = install(tmp_path_factory.mktemp("wheel"))
    return done.venv, done.env


def test_the_wheel_holds_every_schema(installed: tuple[Path, dict[str, str]]) -> None:
    venv, _ = installed
    (wheel,) = (venv.parent / "dist").glob("trending-*.whl")
    schemas = sorted(p.name for p in (ROOT / "schemas").glob("*.avsc"))
    assert len(schemas) >= 9
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        for name in schemas:
            assert f"trending/schemas/{name}" in names
            assert (
                archive.read(f"trending/schemas/{name}") == (ROOT / "schemas" / name).read_bytes()
            )


def test_the_package_and_its_schemas_come_from_the_venv(
    installed: tuple[Path, dict[str, str]],
) -> None:
    venv, env = installed
    probe = (
        "import json, connectors.avro as avro, pyspark, trending\n"
        "codec = avro.AvroCodec('tweet')\n"
        "tweet = {'id': 7, 'user': 'u', 'text': '#a', 'created_at': 1000, 'lang': None}\n"
        "print(json.dumps({'trending': trending.__file__, 'schema': str(avro.schema_path('tweet')),"
        " 'known': sorted(p.stem for p in avro.SCHEMAS_DIR.glob('*.avsc')),"
        " 'pyspark': pyspark.__version__, 'same': codec.decode(codec.encode(tweet)) == tweet}))\n"
    )
    done = run([str(venv / "bin" / "python"), "-c", probe], venv.parent / "work", env)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    site = str(venv.resolve())
    package, schema = os.path.realpath(found["trending"]), os.path.realpath(found["schema"])
    assert package.startswith(site), package
    assert not package.startswith(str(ROOT)), package
    assert schema.startswith(site), schema
    assert schema.endswith("trending/schemas/tweet.avsc"), schema
    assert found["known"] == sorted(p.stem for p in (ROOT / "schemas").glob("*.avsc"))
    assert found["pyspark"] == importlib.metadata.version("pyspark")
    assert found["same"] is True


def test_windows_replay_runs_outside_the_source_tree(
    installed: tuple[Path, dict[str, str]],
) -> None:
    venv, env = installed
    work = venv.parent / "work"
    (work / "spec.json").write_text(json.dumps(SPEC))
    lines = "".join(json.dumps(event) + "\n" for event in EVENTS)
    done = run([str(venv / "bin" / "trending"), "windows", "replay", "spec.json"], work, env, lines)
    assert done.returncode == 0, done.stderr
    one, two = {"p": "a", "v": 1}, {"p": "a", "v": 2}
    assert [json.loads(line) for line in done.stdout.splitlines()] == [
        {"event": "before_insert", "partition": "a", "tuples": [one]},
        {"event": "after_insert", "partition": "a", "tuples": [one]},
        {"event": "before_insert", "partition": "a", "tuples": [two]},
        {"event": "after_insert", "partition": "a", "tuples": [two]},
        {"event": "trigger", "partition": "a", "tuples": [one, two]},
    ]


def test_every_command_answers_help(installed: tuple[Path, dict[str, str]]) -> None:
    venv, env = installed
    for command in COMMANDS:
        done = run([str(venv / "bin" / "trending"), *command, "--help"], venv.parent / "work", env)
        assert done.returncode == 0, (command, done.stderr)
        assert done.stdout.startswith(f"usage: trending {' '.join(command)}"), done.stdout[:200]
    consume = run([str(venv / "bin" / "trending"), "consume", "--help"], venv.parent / "work", env)
    assert "--from-beginning" in consume.stdout
    assert "--schema NAME" in consume.stdout


def test_missing_jars_are_one_line_naming_the_variable(
    installed: tuple[Path, dict[str, str]],
) -> None:
    venv, env = installed
    work = venv.parent / "work"
    broker = [str(venv / "bin" / "trending"), "broker", "--data-dir", "kafka"]
    broker += ["--port", str(free_port()), "--controller-port", str(free_port())]
    unset = run(broker, work, env)
    assert unset.returncode == 2, unset.stderr
    assert unset.stderr.count("\n") == 1, unset.stderr
    assert "TRENDING_JARS_DIR" in unset.stderr
    assert "make jars" in unset.stderr
    jars = work / "jars"
    (jars / "broker").mkdir(parents=True)
    empty = run(broker, work, {**env, "TRENDING_JARS_DIR": str(jars)})
    assert empty.returncode == 2
    assert f"missing in {jars / 'broker'} (from TRENDING_JARS_DIR):" in empty.stderr
    assert "TRENDING_JARS_DIR" in empty.stderr and "make jars" in empty.stderr
    (jars / "broker" / "kafka.jar").write_bytes(b"")
    probe = "from connectors.jvm import require_jars; print(*require_jars('broker'))"
    found = run(
        [str(venv / "bin" / "python"), "-c", probe], work, {**env, "TRENDING_JARS_DIR": str(jars)}
    )
    assert found.returncode == 0, found.stderr
    assert found.stdout.strip() == str(jars / "broker" / "kafka.jar")


def test_the_wheel_is_pure_python_and_holds_the_project_jar(
    installed: tuple[Path, dict[str, str]],
) -> None:
    venv, _ = installed
    (wheel,) = (venv.parent / "dist").glob("trending-*.whl")
    assert wheel.name.endswith("-py3-none-any.whl"), wheel.name
    with zipfile.ZipFile(wheel) as archive:
        jar = archive.read("trending/jvm/trending-udf.jar")
    (venv.parent / "udf.jar").write_bytes(jar)
    with zipfile.ZipFile(venv.parent / "udf.jar") as classes:
        names = set(classes.namelist())
    for needed in ("trending/udf/HashtagKeys.class", "trending/udf/hashtag-tables.bin"):
        assert needed in names, sorted(names)[:20]


def hashtags_flags(bootstrap: str, work: Path, tag: str) -> list[str]:
    return [
        "run", "hashtags", "--available-now", "--warm-up-rows", "0",
        "--bootstrap-servers", bootstrap, "--partitions", "2",
        "--size", f"{SIZE_MS}ms", "--hop", f"{HOP_MS}ms", "--lateness", f"{LATENESS_MS}ms",
        "--max-offsets-per-trigger", "500", "--input-topic", f"tweets-{tag}",
        "--output-topic", f"trending-{tag}", "--late-topic", f"late-{tag}",
        "--dead-letter-topic", f"dlq-{tag}", "--checkpoint", str(work / f"checkpoint-{tag}"),
        "--metrics-port", "0",
    ]  # fmt: skip


@pytest.mark.timeout(900)
def test_the_installed_wheel_runs_the_hashtags_job_with_spark_fetching_its_connectors(
    installed: tuple[Path, dict[str, str]], kafka_bootstrap: str
) -> None:
    """No checkout, no TRENDING_JARS_DIR: the project's jar comes from the wheel and Spark's
    resolver fetches the connectors (or finds them in its cache); the finals are exact."""
    venv, env = installed
    tag = uuid.uuid4().hex[:8]
    tweets = make_tweets(1_500, seed=97)
    produce(kafka_bootstrap, f"tweets-{tag}", tweets)
    command = [str(venv / "bin" / "trending"), *hashtags_flags(kafka_bootstrap, venv.parent, tag)]
    done = run([*command, "--master", "local[2]"], venv.parent / "work", env, timeout=840)
    assert done.returncode == 0, done.stderr[-4000:]
    assert "build/jars" not in done.stderr
    expected = independent_finals(tweets, SIZE_MS, HOP_MS, LATENESS_MS)
    assert finals(kafka_bootstrap, f"trending-{tag}") == expected


NOWHERE_IVY = """<ivysettings>
  <settings defaultResolver="nowhere"/>
  <resolvers>
    <ibiblio name="nowhere" m2compatible="true" root="file:///nonexistent/maven2/"/>
  </resolvers>
</ivysettings>
"""


def test_offline_without_a_cache_stops_with_one_line_naming_the_coordinates_and_remedies(
    installed: tuple[Path, dict[str, str]], tmp_path: Path, kafka_bootstrap: str
) -> None:
    venv, env = installed
    settings = tmp_path / "ivysettings.xml"
    settings.write_text(NOWHERE_IVY)
    flags = hashtags_flags(kafka_bootstrap, tmp_path, uuid.uuid4().hex[:8])
    command = [str(venv / "bin" / "trending"), *flags]
    command += ["--conf", f"spark.jars.ivy={tmp_path / 'ivy'}"]
    command += ["--conf", f"spark.jars.ivySettings={settings}"]
    done = run(command, venv.parent / "work", env, timeout=240)
    assert done.returncode == 2, done.stderr[-3000:]
    ours = [line for line in done.stderr.splitlines() if line.startswith("trending: ")]
    assert ours[0].startswith("trending: fetching org.apache.spark:spark-sql-kafka-0-10_2.13:"), (
        ours
    )
    (error,) = [line for line in ours if line.startswith("trending: error: ")]
    version = importlib.metadata.version("pyspark")
    for coordinate in (
        f"org.apache.spark:spark-sql-kafka-0-10_2.13:{version}",
        f"org.apache.spark:spark-avro_2.13:{version}",
        "com.twitter.twittertext:twitter-text:3.1.0",
    ):
        assert coordinate in error
    assert "spark.jars.ivySettings" in error and "TRENDING_JARS_DIR" in error


LIBRARY_SCRIPT = r"""
import json, os, sys, tempfile, pathlib
from pyspark.sql import SparkSession
from trending import SensorMatching, SlidingTopK, spl_window, temporal_window

spark = (
    SparkSession.builder.master("local[2]")
    .config("spark.sql.streaming.stateStore.providerClass",
            "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider")
    .config("spark.sql.shuffle.partitions", "2")
    .getOrCreate()
)
out = {}
rows = spark.createDataFrame([("a", v) for v in (3, 1, 4, 2)], "p STRING, v INT")
flushes = rows.transform(spl_window, {"kind": "tumbling", "evict": {"count": 2}}, key="p",
                         order_by="v", kinds=["before_flush"])
out["spl"] = sorted([t.v for t in r.tuples] for r in flushes.collect())
points = spark.createDataFrame([("a", 0), ("a", 2000), ("a", 12000)], "key STRING, at LONG")
counts = points.transform(temporal_window, {"kind": "tumbling", "duration": "10s",
                                            "aggregate": "count"}, start="at")
out["temporal"] = sorted([r.start.timestamp() * 1000, r.value] for r in counts.collect())
clicks = spark.createDataFrame([("a", 1000), ("a", 2000), ("b", 3000)], "k STRING, t LONG")
top = clicks.transform(SlidingTopK(size="2s", hop="1s", k=2), key="k", time="t")
out["topk_batch"] = [[r.window_start.timestamp() * 1000, [[e["key"], e["count"]] for e in r.top]]
                     for r in top.collect()]
folder = pathlib.Path(tempfile.mkdtemp())
(folder / "0.json").write_text("".join(json.dumps({"k": k, "t": t}) + "\n"
                                      for k, t in [("a", 1000), ("a", 2000), ("b", 3000)]))
got = []
def handle(batch, batch_id):
    got.extend([batch_id, r.window_start.timestamp() * 1000, r.revision, r.is_final,
                [[e["key"], e["count"]] for e in r.top]] for r in batch.collect())
stream = spark.readStream.schema("k STRING, t LONG").json(str(folder))
query = SlidingTopK(size="2s", hop="1s", k=2).start(
    stream, handle, key="k", time="t", checkpoint=tempfile.mkdtemp(),
    trigger={"availableNow": True})
query.awaitTermination()
out["topk_stream"] = sorted(got)
base = pathlib.Path(tempfile.mkdtemp())
readings_in = [(1, 0.0, 0.0, 5.0, 1000), (2, 1.0, 1.0, 6.0, 2000), (3, 0.0, 0.0, 7.0, 10000)]
for name, lines in (("r", readings_in), ("q", [(7, 0.1, 0.0, 0.2, 3000)])):
    (base / name).mkdir()
    (base / name / "0.json").write_text("".join(json.dumps(dict(zip("ixyvt", row))) + "\n"
                                               for row in lines))
matched = []
def on_match(batch, batch_id):
    matched.extend([r.query_id, r.sensor_id, r.value] for r in batch.collect())
columns = "i LONG, x DOUBLE, y DOUBLE, v DOUBLE, t LONG"
readings = spark.readStream.schema(columns).json(str(base / "r"))
queries = spark.readStream.schema(columns).json(str(base / "q"))
query = SensorMatching(size=10).start(
    readings, queries, on_match, checkpoint=tempfile.mkdtemp(), trigger={"availableNow": True},
    sensor="i", query="i", value="v", distance="v", time="t")
query.awaitTermination()
out["sensors"] = matched
results = SensorMatching(size=10).run(
    spark.createDataFrame(readings_in, columns),
    spark.createDataFrame([(7, 0.1, 0.0, 0.2, 3000), (8, 0.0, 0.0, 0.5, 20000)], columns),
    sensor="i", query="i", value="v", distance="v", time="t")
out["sensors_batch"] = sorted([r.query_id, r.sensor_id, r.value] for r in results.matches.collect())
out["jars"] = [r[0] for r in spark.sql("LIST JARS").collect()]
from trending.spark.deps import project_jar
out["jar"] = str(project_jar())
print(json.dumps(out))
"""


@pytest.mark.timeout(600)
def test_a_plain_session_uses_every_library_function_from_the_wheel(
    installed: tuple[Path, dict[str, str]],
) -> None:
    """``SparkSession.builder.getOrCreate()`` and nothing else: the functions bring the
    project's jar from the installed package into the running session themselves."""
    venv, env = installed
    work = venv.parent / "work"
    work.mkdir(exist_ok=True)
    script = work / "library.py"
    script.write_text(LIBRARY_SCRIPT)
    done = run([str(venv / "bin" / "python"), str(script)], work, env, timeout=540)
    assert done.returncode == 0, done.stderr[-4000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert [j for j in out["jars"] if j.endswith("trending-udf.jar")] != []
    assert out["jar"].startswith(str(venv)), out["jar"]  # the wheel's, added by the functions
    assert out["spl"] == [[1, 2], [3, 4]]
    assert out["temporal"] == [[0, 2], [10_000, 1]]
    # windows [s, s + 2s) every 1s holding 1000, 2000, 3000; top 2, count desc, key asc
    assert out["topk_batch"] == [
        [0, [["a", 1]]], [1000, [["a", 2]]], [2000, [["a", 1], ["b", 1]]], [3000, [["b", 1]]],
    ]  # fmt: skip
    # W = 10000 - 0 applies the readings at 1000 and 2000, then the query at 3000: only the
    # reading at (0, 0) is within 0.2 of (0.1, 0)
    assert out["sensors"] == [[7, 1, 5.0]]
    # all at once: query 8 at 20 s sees readings 1, 2 (at distance 1.41 > 0.5: no) and 3
    assert out["sensors_batch"] == [[7, 1, 5.0], [8, 1, 5.0], [8, 3, 7.0]]
    # one micro-batch: W = 3000 - 0 closes [0, 2000) and [1000, 3000); the others are revised
    assert out["topk_stream"] == [
        [0, 0, 1, True, [["a", 1]]], [0, 1000, 1, True, [["a", 2]]],
        [0, 2000, 1, False, [["a", 1], ["b", 1]]], [0, 3000, 1, False, [["b", 1]]],
    ]  # fmt: skip
