"""Checkpoint files on ``file:`` paths through ``trending.fs.ForklessCheckpointFileManager``.

Without Hadoop's native library, Hadoop's local file system runs ``chmod`` for each file it
creates and ``readlink`` for each link status it reads, and Spark's checkpoint file manager asks
for both on every file. The project's manager must write the same files (the data file, its
``.crc`` checksum, the permission bits Hadoop gives them, no temporary files left, a cancelled
file never there) without any child process: run with a ``PATH`` that holds no program, Spark's
own manager fails and this one does not.
"""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest

from connectors.jvm import compile_java, jars_root, java_executable
from trending.spark.session import CHECKPOINT_FILES_CONF

pytestmark = pytest.mark.jvm

REPO = Path(__file__).resolve().parents[2]
PROBE = REPO / "tests" / "jvm" / "CheckpointFilesProbe.java"


@pytest.fixture(scope="module")
def classpath(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    import pyspark

    jars = [*sorted((Path(pyspark.__file__).parent / "jars").glob("*.jar"))]
    jars.append(jars_root() / "udf" / "trending-udf.jar")
    out = tmp_path_factory.mktemp("checkpoint-probe")
    compile_java(PROBE, jars, out)
    return [str(out), *map(str, jars)]


def probe(
    classpath: list[str], manager: str, folder: Path, path_env: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if path_env is not None:
        env["PATH"] = path_env
    return subprocess.run(
        [java_executable(), "-cp", os.pathsep.join(classpath), "CheckpointFilesProbe", manager,
         folder.as_uri()],
        capture_output=True, text=True, check=False, timeout=120, env=env,
    )  # fmt: skip


def files_of(folder: Path) -> dict[str, tuple[int, bytes]]:
    """Every file in ``folder``: permission bits and bytes."""
    return {
        p.name: (stat.S_IMODE(p.stat().st_mode), p.read_bytes())
        for p in sorted(folder.iterdir())
        if p.is_file()
    }


def test_the_manager_writes_what_spark_s_own_manager_writes(
    classpath: list[str], tmp_path: Path
) -> None:
    spark_folder, forkless_folder = tmp_path / "spark", tmp_path / "forkless"
    ours = probe(classpath, "forkless", forkless_folder)
    theirs = probe(classpath, "spark", spark_folder)
    assert theirs.returncode == 0, theirs.stderr[-3000:]
    assert ours.returncode == 0, ours.stderr[-3000:]
    assert ours.stdout == theirs.stdout == "v1\nsecond\n1 exists: false\n"
    written = files_of(forkless_folder)
    assert written == files_of(spark_folder)
    # the data file and its checksum, no temporary file, a cancelled file not there
    assert sorted(written) == [".0.crc", "0"]
    assert written["0"][0] == 0o666 & ~0o022  # Hadoop's own umask (fs.permissions.umask-mode)


def test_the_manager_runs_no_program_where_spark_s_own_runs_chmod(
    classpath: list[str], tmp_path: Path
) -> None:
    no_programs = tmp_path / "empty-path"
    no_programs.mkdir()
    theirs = probe(classpath, "spark", tmp_path / "spark", path_env=str(no_programs))
    assert theirs.returncode != 0
    assert "chmod" in theirs.stderr
    ours = probe(classpath, "forkless", tmp_path / "forkless", path_env=str(no_programs))
    assert ours.returncode == 0, ours.stderr[-3000:]
    assert ours.stdout == "v1\nsecond\n1 exists: false\n"


@pytest.mark.integration
def test_a_session_s_streaming_checkpoints_go_through_the_manager(tmp_path: Path) -> None:
    from trending.spark.session import build_session

    spark = build_session("tests-checkpoint-files", "local[1]", shuffle_partitions=1)
    try:
        jvm: Any = spark.sparkContext._jvm
        conf = spark._jsparkSession.sessionState().newHadoopConf()  # what streaming queries use
        path = jvm.org.apache.hadoop.fs.Path(tmp_path.as_uri())
        checkpointing = jvm.org.apache.spark.sql.execution.streaming.checkpointing
        files = checkpointing.CheckpointFileManager.create(path, conf)
        assert files.getClass().getName() == CHECKPOINT_FILES_CONF[1]
    finally:
        spark.stop()
