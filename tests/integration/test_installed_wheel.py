"""The package built as a wheel and installed into a fresh venv runs outside the source tree.

The fresh venv borrows the heavy dependencies (pyspark, ...) of the interpreter running the
tests through a ``.pth`` line naming its site-packages. A path line does not run that folder's
own ``.pth`` files, so the project's editable install there stays out of sight and ``trending``
can only come from the wheel.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from connectors.broker import free_port

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
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
]


def run(
    command: list[str], cwd: Path, env: dict[str, str], stdin: str = "", timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """``command`` in ``cwd``; its completed process (text)."""
    return subprocess.run(
        command,
        cwd=cwd,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def copy_source(target: Path) -> None:
    """The source tree's files, so the build writes no ``build/`` or ``*.egg-info`` into the
    checkout and sees no stale build output: what git knows of (tracked or new, not ignored),
    else everything but hidden folders, data and build output."""
    listed = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True,
        check=False,
    )
    if listed.returncode != 0:  # not a git checkout
        skip = shutil.ignore_patterns(".*", "build", "data", "checkpoints", "*.egg-info")
        shutil.copytree(ROOT, target, symlinks=True, ignore=skip)
        return
    for name in filter(None, listed.stdout.decode().split("\0")):
        source = ROOT / name
        if not source.is_symlink() and not source.exists():
            continue  # deleted in the work tree
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            (target / name).symlink_to(os.readlink(source))
        else:
            shutil.copy2(source, target / name)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A fresh venv with the wheel installed, and an environment for its commands."""
    tmp = tmp_path_factory.mktemp("wheel")
    source, dist, venv = tmp / "source", tmp / "dist", tmp / "venv"
    copy_source(source)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "TRENDING_JARS_DIR")}
    pip_wheel = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation"]
    build = run([*pip_wheel, "--no-index", "-w", str(dist), str(source)], tmp, env)
    assert build.returncode == 0, (
        f"building the wheel failed (`make env` installs the build requirements):\n"
        f"{build.stdout[-2000:]}\n{build.stderr[-2000:]}"
    )
    (wheel,) = dist.glob("trending-*.whl")
    done = run([sys.executable, "-m", "venv", "--without-pip", str(venv)], tmp, env)
    assert done.returncode == 0, done.stderr
    python = venv / "bin" / "python"
    install = [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps"]
    done = run([*install, "--no-index", "--quiet", str(wheel)], tmp, env)
    assert done.returncode == 0, done.stdout + done.stderr
    # Only now the heavy dependencies: before, pip would have seen the editable install there.
    where = "import sysconfig; print(sysconfig.get_path('purelib'))"
    site = run([str(python), "-c", where], tmp, env).stdout.strip()
    borrowed = dict.fromkeys((sysconfig.get_path("purelib"), sysconfig.get_path("platlib")))
    Path(site, "borrowed-dependencies.pth").write_text("\n".join(borrowed) + "\n")
    (tmp / "work").mkdir()
    return venv, env


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
