"""The bench scripts' ``--markdown PATH`` files: a table, the machine and the command behind it.

docs/benchmarks.md includes each file as it is, so every figure on the page comes from a run:
:func:`table` writes a Markdown table from the cells a script prints, :func:`measured` the line
saying when, by which command line and on what machine (cores, Python, Spark) it was measured,
and :func:`write` puts the lines in the file.
"""

from __future__ import annotations

import datetime as dt
import os
import platform
import shlex
import sys
from collections.abc import Iterable, Sequence
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYTHON = ".venv/bin/python"


def cell(value: object) -> str:
    """``value`` as one Markdown table cell: ``|`` escaped, line breaks as spaces."""
    text = str(value).replace("\\", "\\\\").replace("|", "\\|")
    return " ".join(text.splitlines())


def table(headers: Sequence[str], rows: Iterable[Sequence[object]], left: int = 1) -> list[str]:
    """Lines of a Markdown table: its first ``left`` columns aligned left, the rest (figures)
    right."""
    lines = [
        "| " + " | ".join(cell(h) for h in headers) + " |",
        "|" + "|".join("---" if i < left else "---:" for i in range(len(headers))) + "|",
    ]
    for row in rows:
        if len(row) != len(headers):
            raise ValueError(f"{len(row)} cells for {len(headers)} columns: {row!r}")
        lines.append("| " + " | ".join(cell(c) for c in row) + " |")
    return lines


def command(script: str | Path, argv: Sequence[str] | None = None) -> str:
    """The command line that ran ``script`` with ``argv`` (default: this process's arguments),
    from the repository's root, as a shell would take it."""
    path = Path(script).resolve()
    shown = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)
    return shlex.join([PYTHON, shown, *(sys.argv[1:] if argv is None else argv)])


def pyspark_version() -> str:
    """The installed PySpark's version (without starting Spark)."""
    try:
        return metadata.version("pyspark")
    except metadata.PackageNotFoundError:
        return "not installed"


def machine(spark_version: str | None = None, master: str | None = None) -> str:
    """``Spark 3.5.1, `local[2]`, 8 cores, Python 3.12.3``: a Spark session's version and
    master when the bench ran one, else the installed PySpark's version."""
    parts = []
    if master is None:
        parts.append(f"PySpark {spark_version or pyspark_version()}")
    else:
        parts += [f"Spark {spark_version or pyspark_version()}", f"`{master}`"]
    parts += [f"{os.cpu_count()} cores", f"Python {platform.python_version()}"]
    return ", ".join(parts)


def measured(
    script: str | Path,
    seconds: float,
    *,
    spark_version: str | None = None,
    master: str | None = None,
    argv: Sequence[str] | None = None,
    now: dt.datetime | None = None,
) -> str:
    """The line under a file's title: when, by which command, in how long, on what machine."""
    when = now or dt.datetime.now(dt.timezone.utc)
    return (
        f"Measured {when:%Y-%m-%d %H:%M} UTC by `{command(script, argv)}` ({seconds:.0f} s): "
        f"{machine(spark_version, master)}."
    )


def parameters(values: dict[str, object]) -> str:
    """``Parameters: `name=value`, ...``: a run's settings, as its flags set them."""
    return "Parameters: " + ", ".join(f"`{k}={v}`" for k, v in values.items()) + "."


def write(path: Path, lines: Iterable[str]) -> None:
    """The lines as the file ``path`` (its folder made), and a note that it was written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    print(f"wrote {path}", flush=True)
