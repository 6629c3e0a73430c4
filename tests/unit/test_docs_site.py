"""The documentation site builds with ``mkdocs build --strict`` and says nothing to warn about.

Strict mode fails the build on a link to a missing page or anchor, a page left out of the nav, a
snippet that cannot be found and a reference mkdocstrings cannot resolve; the test also fails on
any other line MkDocs logs as a warning or an error. mkdocs, mkdocs-material, mkdocstrings and
mkdocstrings-python come with the package's ``docs`` extra: without them the test fails, it does
not skip.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOCS_PACKAGES = ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers.python")


def test_the_docs_packages_are_installed() -> None:
    missing = [name for name in DOCS_PACKAGES if importlib.util.find_spec(name) is None]
    assert not missing, (
        f"missing {missing}: install the docs extra (pip install -e '.[docs]') to build the site"
    )


def test_the_site_builds_strict_without_a_warning(tmp_path: Path) -> None:
    assert importlib.util.find_spec("mkdocs") is not None, "mkdocs is not installed"
    build = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=REPO,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1", "NO_COLOR": "1"},
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    output = build.stdout + build.stderr
    assert build.returncode == 0, output
    complaints = [line for line in output.splitlines() if line.startswith(("WARNING", "ERROR"))]
    assert complaints == [], "\n".join(complaints)
    assert (tmp_path / "site" / "index.html").is_file()
    assert (tmp_path / "site" / "api" / "index.html").is_file()


def test_every_page_under_docs_is_in_the_nav_or_a_fragment() -> None:
    """What strict mode reports as a warning, said plainly: a page no one can reach from the
    nav is an error here, not a note (fragments: the bench tables benchmarks.md includes)."""
    import yaml

    nav = yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))["nav"]

    def pages(items: object) -> list[str]:
        if isinstance(items, str):
            return [items]
        if isinstance(items, list):
            return [page for item in items for page in pages(item)]
        if isinstance(items, dict):
            return [page for value in items.values() for page in pages(value)]
        return []

    listed = set(pages(nav))
    docs = REPO / "docs"
    on_disk = {
        path.relative_to(docs).as_posix()
        for path in docs.rglob("*.md")
        if path.relative_to(docs).parts[0] not in ("benchmarks", "hooks")
    }
    assert on_disk - listed == set(), "pages missing from the nav in mkdocs.yml"
    assert listed - on_disk == set(), "nav entries without a page"
