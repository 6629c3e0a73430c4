"""README.md stays a five-minute read, and every relative link in it leads to a file.

The reference lives in the documentation site (``docs/``); the README introduces the project
and points there, so it must stay short and its links must not rot when pages move.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
MAX_CHARS = 12_500

MARKDOWN_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_LINK = re.compile(r"^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$", re.MULTILINE)
HTML_LINK = re.compile(r"""<(?:a|img|source)\b[^>]*?\b(?:href|src)\s*=\s*["']([^"']+)["']""")
FENCE = re.compile(r"^(```|~~~).*?^\1\s*$", re.MULTILINE | re.DOTALL)


def relative_links(text: str) -> list[str]:
    """The link targets of ``text`` outside code blocks that name no scheme or host."""
    prose = FENCE.sub("", text)
    found = [
        *MARKDOWN_LINK.findall(prose),
        *REFERENCE_LINK.findall(prose),
        *HTML_LINK.findall(prose),
    ]
    return [
        link
        for link in found
        if not re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", link) and not link.startswith(("//", "#"))
    ]


def test_the_readme_is_short() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text) < MAX_CHARS, (
        f"README.md has {len(text)} characters, at most {MAX_CHARS} allowed: move reference "
        "material into docs/"
    )


def test_every_relative_link_resolves_to_a_file() -> None:
    links = relative_links(README.read_text(encoding="utf-8"))
    assert links, "the README links into the documentation"
    missing = [
        link
        for link in links
        if not (REPO / unquote(link.split("#", 1)[0].split("?", 1)[0])).is_file()
    ]
    assert missing == [], f"README.md links to files that do not exist: {missing}"


def test_the_link_finder_finds_each_kind_of_link() -> None:
    text = """
[a](docs/a.md) ![b](docs/img/b.svg "title") [c](https://example.com) [d](#anchor)
<img src="docs/img/e.svg">
[f]: docs/f.md

```sh
[g](not/a/link.md)
```
"""
    assert sorted(relative_links(text)) == [
        "docs/a.md",
        "docs/f.md",
        "docs/img/b.svg",
        "docs/img/e.svg",
    ]
