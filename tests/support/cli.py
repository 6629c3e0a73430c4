"""Run the real ``trending`` CLI with only the command modules that import right now.

Other command modules are written in parallel; until they exist, ``trending.cli`` cannot build
its parser. Usage: ``python -m tests.support.cli broker --port 9092``.
"""

from __future__ import annotations

import importlib
import sys

from trending import cli


def importable(module: str) -> bool:
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True


def main() -> int:
    cli.COMMAND_MODULES = tuple(m for m in cli.COMMAND_MODULES if importable(m))  # type: ignore[assignment]
    return cli.main()


if __name__ == "__main__":
    sys.exit(main())
