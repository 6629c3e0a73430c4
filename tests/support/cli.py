"""Running ``trending`` in the test's process, as the console script does."""

from __future__ import annotations

import pytest

from trending.cli import main


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int | str | None, str]:
    """``trending ARGV``'s exit code (also when argparse exits) and its standard error."""
    try:
        code: int | str | None = main(argv)
    except SystemExit as stop:
        code = stop.code
    return code, capsys.readouterr().err
