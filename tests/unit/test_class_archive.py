"""The driver's class-data-sharing archive: where it lives, when a driver takes it, how a
written archive is kept (trending/spark/class_archive.py, connectors.jvm.ClassArchive)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from connectors.jvm import ClassArchive
from trending.spark import class_archive
from trending.spark.session import DRIVER_OPTIONS_CONF, with_class_archive


@pytest.mark.parametrize("value", ["off", "OFF", "0", "false", "no"])
def test_the_archive_can_be_turned_off(value: str) -> None:
    assert class_archive.folder({class_archive.ENV: value}) is None
    assert class_archive.driver_archive({class_archive.ENV: value}) is None


def test_the_archive_lives_in_the_users_cache_unless_a_folder_is_given(tmp_path: Path) -> None:
    assert class_archive.folder({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "trending"
    assert class_archive.folder({class_archive.ENV: str(tmp_path / "a")}) == tmp_path / "a"
    assert class_archive.folder({}) == Path.home() / ".cache" / "trending"


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("SPARK_SUBMIT_OPTS", "-Xmx1g -XX:SharedArchiveFile=/x.jsa -Xshare:auto"),
        ("JAVA_TOOL_OPTIONS", "-XX:ArchiveClassesAtExit=/y.jsa"),
        ("JDK_JAVA_OPTIONS", "-Xshare:off"),
    ],
)
def test_an_archive_chosen_elsewhere_is_left_alone(
    variable: str, value: str, tmp_path: Path
) -> None:
    environ = {class_archive.ENV: str(tmp_path), variable: value}
    assert class_archive.driver_archive(environ) is None
    assert class_archive.launch_options(environ, dump=True) == ""


def test_other_java_options_in_the_environment_do_not_turn_it_off(tmp_path: Path) -> None:
    environ = {class_archive.ENV: str(tmp_path), "SPARK_SUBMIT_OPTS": "-Xmx1g -Dx=y"}
    archive = class_archive.driver_archive(environ)
    assert archive is not None and archive.path.parent == tmp_path


def _jars(folder: Path, *names: str) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        (folder / name).write_bytes(name.encode())
    return [folder / name for name in names]


def test_the_archive_is_named_after_the_java_and_the_jars(tmp_path: Path) -> None:
    jars = _jars(tmp_path / "jars", "a.jar", "b.jar")
    first = ClassArchive("driver", "/usr/bin/java", jars, tmp_path)
    assert first.path == ClassArchive("driver", "/usr/bin/java", jars, tmp_path).path
    assert first.path != ClassArchive("driver", "/opt/java", jars, tmp_path).path
    assert first.path != ClassArchive("driver", "/usr/bin/java", jars[:1], tmp_path).path
    jars[1].write_bytes(b"another build of b")
    assert first.path != ClassArchive("driver", "/usr/bin/java", jars, tmp_path).path


def test_without_an_archive_a_driver_writes_one_or_starts_plain(tmp_path: Path) -> None:
    archive = ClassArchive("driver", "java", _jars(tmp_path / "j", "a.jar"), tmp_path)
    assert archive.options(dump=False) == [] and not archive.dumping
    options = archive.options(dump=True)
    assert archive.dumping
    (dump,) = [o.split("=", 1)[1] for o in options if o.startswith("-XX:ArchiveClassesAtExit=")]
    assert Path(dump).parent == tmp_path and Path(dump) != archive.path
    assert not any(o.startswith("-XX:SharedArchiveFile") for o in options)


def test_a_written_archive_is_kept_under_its_name_and_then_used(tmp_path: Path) -> None:
    archive = ClassArchive("driver", "java", _jars(tmp_path / "j", "a.jar"), tmp_path)
    options = archive.options(dump=True)
    dump = Path(next(o for o in options if "ArchiveClassesAtExit" in o).split("=", 1)[1])
    dump.write_bytes(b"classes")  # what the JVM writes at exit
    archive.keep()
    assert archive.path.read_bytes() == b"classes" and not dump.exists()
    again = ClassArchive("driver", "java", [tmp_path / "j" / "a.jar"], tmp_path)
    used = again.options(dump=True)
    assert f"-XX:SharedArchiveFile={archive.path}" in used and "-Xshare:auto" in used
    assert not again.dumping


def test_an_empty_or_failed_dump_is_not_kept(tmp_path: Path) -> None:
    archive = ClassArchive("driver", "java", _jars(tmp_path / "j", "a.jar"), tmp_path)
    dump = Path(next(o for o in archive.options() if "AtExit" in o).split("=", 1)[1])
    dump.write_bytes(b"")
    archive.keep()
    assert not archive.path.exists() and not dump.exists()
    dump = Path(next(o for o in archive.options() if "AtExit" in o).split("=", 1)[1])
    dump.write_bytes(b"half")
    archive.discard()
    assert not archive.path.exists() and not dump.exists()


def test_sweep_drops_old_leftovers_and_all_but_the_newest_archives(tmp_path: Path) -> None:
    archive = ClassArchive("spark-driver", "java", _jars(tmp_path / "j", "a.jar"), tmp_path)
    day_ago = time.time() - 2 * 86_400
    old_tmp = tmp_path / "spark-driver-aaa.jsa.1234.tmp"
    new_tmp = tmp_path / "spark-driver-bbb.jsa.5678.tmp"  # a driver writing it right now
    for path in (old_tmp, new_tmp):
        path.write_bytes(b"x")
    os.utime(old_tmp, (day_ago, day_ago))
    archives = [tmp_path / f"spark-driver-{i:03d}.jsa" for i in range(5)]
    for i, path in enumerate(archives):
        path.write_bytes(b"x")
        os.utime(path, (day_ago + i, day_ago + i))
    other = tmp_path / "broker-abc.jsa"
    other.write_bytes(b"x")
    archive.sweep(keep=3)
    assert not old_tmp.exists() and new_tmp.exists() and other.exists()
    assert [p.exists() for p in archives] == [False, False, True, True, True]


def test_the_users_driver_options_get_no_archive(tmp_path: Path) -> None:
    settings = {DRIVER_OPTIONS_CONF: "-XX:+UseParallelGC"}
    chosen = {DRIVER_OPTIONS_CONF: "-Xmx2g"}
    assert with_class_archive(settings, chosen, dump=True) == settings
