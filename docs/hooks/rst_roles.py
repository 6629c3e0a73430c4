"""MkDocs hook: the Sphinx roles of the docstrings read as plain code in the API reference.

The package's docstrings cross-reference in Sphinx's style (``:func:`configure_spark```,
``:class:`~pkg.mod.Name```), which Markdown renders as the role's name followed by a code span.
This drops the role (and, as Sphinx does for ``~``, the module path), and the ``::`` line
that introduces a literal block in reStructuredText.
"""

from __future__ import annotations

import re
from typing import Any

ROLE = re.compile(r":(?:func|meth|class|mod|data|attr|exc|obj):<code>(~?)([^<]+)</code>")


def _code(match: re.Match[str]) -> str:
    name = match[2].rsplit(".", 1)[-1] if match[1] else match[2]
    return f"<code>{name}</code>"


def on_page_content(html: str, **_: Any) -> str:
    return ROLE.sub(_code, html).replace("<p>::</p>", "")
