"""The package built as a wheel from a copy of the source tree and installed into a fresh venv.

The fresh venv borrows the heavy dependencies (pyspark, ...) of the interpreter running the
tests through a ``.pth`` line naming its site-packages. A path line does not run that folder's
own ``.pth`` files, so the project's editable install there stays out of sight and ``trending``
can only come from the wheel. Building the wheel builds the project's jar (setup.py) from the
copied sources: the copy has no ``build/`` folder.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# What the checkout's environment must not lend the installed package
_UNSET = ("PYTHONPATH", "TRENDING_JARS_DIR", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")


@dataclass(frozen=True)
class Installed:
    venv: Path
    wheel: Path
    env: dict[str, str]  # PATH starts with the venv's bin
    work: Path  # an empty folder outside the source tree

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    @property
    def trending(self) -> Path:
        return self.venv / "bin" / "trending"


def run(
    command: list[str], cwd: Path, env: dict[str, str], stdin: str = "", timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """``command`` in ``cwd``; its completed process (text)."""
    return subprocess.run(
        command, cwd=cwd, env=env, input=stdin, capture_output=True, text=True,
        timeout=timeout, check=False,
    )  # fmt: skip


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
        skip = shutil.ignore_patterns(".*", "build", "dist", "data", "checkpoints", "*.egg-info")
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


def install(tmp: Path) -> Installed:
    """Build the wheel from a copy of the source tree and install it into a fresh venv."""
    source, dist, venv = tmp / "source", tmp / "dist", tmp / "venv"
    copy_source(source)
    env = {k: v for k, v in os.environ.items() if k not in _UNSET}
    pip_wheel = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation"]
    build = run([*pip_wheel, "--no-index", "-w", str(dist), str(source)], tmp, env, timeout=600)
    assert build.returncode == 0, (
        f"building the wheel failed (`make env` installs the build requirements):\n"
        f"{build.stdout[-3000:]}\n{build.stderr[-3000:]}"
    )
    (wheel,) = dist.glob("trending-*.whl")
    done = run([sys.executable, "-m", "venv", "--without-pip", str(venv)], tmp, env)
    assert done.returncode == 0, done.stderr
    python = venv / "bin" / "python"
    pip_install = [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps"]
    done = run([*pip_install, "--no-index", "--quiet", str(wheel)], tmp, env)
    assert done.returncode == 0, done.stdout + done.stderr
    # Only now the heavy dependencies: before, pip would have seen the editable install there.
    where = "import sysconfig; print(sysconfig.get_path('purelib'))"
    site = run([str(python), "-c", where], tmp, env).stdout.strip()
    borrowed = dict.fromkeys((sysconfig.get_path("purelib"), sysconfig.get_path("platlib")))
    Path(site, "borrowed-dependencies.pth").write_text("\n".join(borrowed) + "\n")
    (tmp / "work").mkdir()
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return Installed(venv, wheel, env, tmp / "work")
