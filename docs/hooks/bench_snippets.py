"""MkDocs hook: the benchmark tables in benchmarks.md, or a note saying which command writes one.

The bench scripts write their Markdown tables under ``docs/benchmarks/`` (``--markdown PATH``).
benchmarks.md marks the place of each with a line that reads as plain text where Markdown is
shown as it is (on GitHub, in a checkout)::

    *Table: `make soak` writes it to `docs/benchmarks/soak.md`; the built site shows it here.*

When the site is built, a table that exists replaces its line, included as it is with
pymdownx.snippets. One that does not exist yet (a fresh checkout: the figures belong to the
machine that ran the bench) becomes a note naming the make target that writes it, so
``mkdocs build --strict`` passes either way while a mistyped snippet path elsewhere still fails
it. No figure is ever written here.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

MARKER = re.compile(
    r"^\*Table: `(?P<command>[^`]+)` writes it to `(?P<path>[^`]+)`; "
    r"the built site shows it here\.\*$",
    re.MULTILINE,
)


def table_or_note(command: str, path: str, root: Path) -> str:
    """The Markdown that stands for one table: its snippet, or the note saying how to make it."""
    if (root / path).is_file():
        return f'--8<-- "{path}"'
    return (
        f'!!! note "Not generated yet: run `{command}`"\n'
        f"    `{command}` runs this bench and writes its table to `{path}`, on the machine "
        "that runs it; the next `make docs` shows it here. No bench has written it on this "
        "checkout yet, so there are no figures to show."
    )


def on_page_markdown(markdown: str, *, config: Any, **_: Any) -> str:
    root = Path(config["config_file_path"]).resolve().parent
    return MARKER.sub(lambda m: table_or_note(m["command"].strip(), m["path"], root), markdown)
