"""MkDocs hook: a benchmark table not generated yet renders as a note, not as a build error.

benchmarks.md includes the Markdown tables the bench scripts write under ``docs/benchmarks/``
with pymdownx.snippets, each after a comment naming the command that writes it::

    <!-- written by: make bench-trending -->
    --8<-- "docs/benchmarks/trending.md"

A table that exists is included as is. One that does not exist yet (a fresh checkout: the
figures belong to the machine that ran the bench) becomes a line saying which command writes
it, so ``mkdocs build --strict`` passes either way while a mistyped snippet path elsewhere still
fails it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

SNIPPET = re.compile(
    r'^<!-- written by: (?P<command>[^>]+?) -->\n--8<-- "(?P<path>[^"]+)"$', re.MULTILINE
)


def on_page_markdown(markdown: str, *, config: Any, **_: Any) -> str:
    root = Path(config["config_file_path"]).resolve().parent

    def include_or_note(match: re.Match[str]) -> str:
        path, command = match["path"], match["command"].strip()
        if (root / path).is_file():
            return match[0]
        return (
            f'!!! note "Not generated yet"\n    `{command}` writes `{path}`; '
            "until it has run on this checkout, there are no figures to show here."
        )

    return SNIPPET.sub(include_or_note, markdown)
