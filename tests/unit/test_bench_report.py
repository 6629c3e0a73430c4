"""bench/report.py: the Markdown tables and headers the bench scripts write for the docs."""

from __future__ import annotations

import datetime as dt
import os
import platform
from pathlib import Path

import pytest

from bench import report

ROOT = Path(__file__).resolve().parents[2]
WHEN = dt.datetime(2026, 1, 2, 3, 4, tzinfo=dt.timezone.utc)


def test_table_aligns_the_first_columns_left_and_the_figures_right() -> None:
    lines = report.table(("run", "master", "tweets/s"), [("job", "local[2]", "1,234")], left=2)
    assert lines == [
        "| run | master | tweets/s |",
        "|---|---|---:|",
        "| job | local[2] | 1,234 |",
    ]


def test_table_left_one_column_by_default_and_cells_as_text() -> None:
    assert report.table(("a", "b", "c"), [(1, 2.5, None)]) == [
        "| a | b | c |",
        "|---|---:|---:|",
        "| 1 | 2.5 | None |",
    ]


def test_table_without_rows_is_its_header() -> None:
    assert report.table(("x", "y"), []) == ["| x | y |", "|---|---:|"]


def test_table_escapes_pipes_in_headers_and_cells() -> None:
    lines = report.table(("a|b", "n"), [("x | y", "1")])
    assert lines[0] == r"| a\|b | n |"
    assert lines[2] == r"| x \| y | 1 |"


def test_cell_keeps_a_backslash_literal_and_a_line_break_in_its_cell() -> None:
    assert report.cell("C:\\tmp|x") == r"C:\\tmp\|x"
    assert report.cell("two\nlines") == "two lines"


def test_table_refuses_a_row_of_the_wrong_width() -> None:
    with pytest.raises(ValueError, match="2 cells for 3 columns"):
        report.table(("a", "b", "c"), [("1", "2")])


def test_command_is_the_script_from_the_root_with_its_arguments_quoted() -> None:
    script = ROOT / "bench" / "soak_bench.py"
    assert (
        report.command(script, ["--minutes", "1", "--conf", "a=b c"])
        == ".venv/bin/python bench/soak_bench.py --minutes 1 --conf 'a=b c'"
    )


def test_machine_names_spark_master_cores_and_python() -> None:
    cores, python = os.cpu_count(), platform.python_version()
    assert (
        report.machine("3.5.1", "local[2]")
        == f"Spark 3.5.1, `local[2]`, {cores} cores, Python {python}"
    )
    assert report.machine("3.5.1") == f"PySpark 3.5.1, {cores} cores, Python {python}"


def test_measured_says_when_by_what_command_how_long_and_on_what() -> None:
    line = report.measured(
        ROOT / "bench" / "windows_bench.py",
        83.4,
        spark_version="4.0.0",
        master="local[2]",
        argv=["--tuples", "10"],
        now=WHEN,
    )
    assert line == (
        "Measured 2026-01-02 03:04 UTC by "
        "`.venv/bin/python bench/windows_bench.py --tuples 10` (83 s): "
        f"Spark 4.0.0, `local[2]`, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}."
    )


def test_measured_defaults_to_this_process_arguments(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.argv", ["bench/x.py", "--count", "5"])
    line = report.measured(ROOT / "bench" / "x.py", 1, spark_version="1", now=WHEN)
    assert "`.venv/bin/python bench/x.py --count 5`" in line


def test_parameters_lists_the_settings_as_code() -> None:
    assert report.parameters({"count": 1000, "skip": "none"}) == (
        "Parameters: `count=1000`, `skip=none`."
    )


def test_write_makes_the_folder_and_ends_with_a_newline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "docs" / "benchmarks" / "x.md"
    report.write(path, ["# Title", "", "| a |"])
    assert path.read_text() == "# Title\n\n| a |\n"
    assert capsys.readouterr().out == f"wrote {path}\n"
