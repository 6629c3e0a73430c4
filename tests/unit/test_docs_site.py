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
import re
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from types import ModuleType
from typing import Any
from xml.etree import ElementTree

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


def _render_tool() -> ModuleType:
    """tools/render_view_svg.py, which draws docs/img/live-view.svg with the view's own code."""
    path = REPO / "tools" / "render_view_svg.py"
    spec = importlib.util.spec_from_file_location("render_view_svg", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _screen(svg: str) -> list[list[str]]:
    """The terminal lines of a rich SVG screenshot as words, box-drawing characters left out:
    the text runs of a line share its ``y``, in the order of their ``x``."""
    runs: dict[float, list[tuple[float, str]]] = {}
    for text in ElementTree.fromstring(svg).iter("{http://www.w3.org/2000/svg}text"):
        x, y = text.get("x"), text.get("y")
        if text.text and x is not None and y is not None:
            runs.setdefault(float(y), []).append((float(x), text.text))
    lines = [" ".join(run for _, run in sorted(parts)) for _, parts in sorted(runs.items())]
    return [
        [word for word in line.split() if not all("\u2500" <= c <= "\u257f" for c in word)]
        for line in lines
    ]


def _clock(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%H:%M:%S")


def _expected_screen(records: list[dict[str, Any]], shown: int) -> list[list[str]]:
    """What the view must show for ``records``, worked out from the records alone: the number
    of revisions and finals, then the newest ``shown`` windows (by start), each as its latest
    revision: a title line and one row per hashtag, rank first."""
    latest: dict[int, dict[str, Any]] = {}
    for record in records:
        known = latest.get(record["window_start"])
        if known is None or record["revision"] > known["revision"]:
            latest[record["window_start"]] = record
    finals = sum(1 for record in records if record["is_final"])
    screen = [[str(len(records) - finals), "revisions,", str(finals), "finals"]]
    for start in sorted(latest, reverse=True)[:shown]:
        record = latest[start]
        state = "final" if record["is_final"] else "open"
        span = f"{_clock(record['window_start'])}-{_clock(record['window_end'])}"
        screen.append(["window", span, "UTC", state, "rev", str(record["revision"])])
        screen.extend(
            [str(rank), "#" + entry["hashtag"], str(entry["count"])]
            for rank, entry in enumerate(record["top"], start=1)
        )
    return screen


def _shown(screen: list[list[str]], expected: list[list[str]]) -> list[list[str]]:
    """The lines of ``expected`` that ``screen`` holds, in the order it holds them."""
    return [line for line in screen if line in expected]


def test_the_live_view_picture_shows_the_windows_and_rows_it_was_given() -> None:
    minute = 60_000
    start = 1_795_000_000_000 - 1_795_000_000_000 % minute  # a whole minute, 2026-11-18
    records = [
        {"window_start": start, "window_end": start + minute, "revision": 1, "is_final": False,
         "top": [{"hashtag": "kafka", "count": 3}, {"hashtag": "spark", "count": 2}]},
        {"window_start": start, "window_end": start + minute, "revision": 2, "is_final": True,
         "top": [{"hashtag": "spark", "count": 9}, {"hashtag": "東京", "count": 4},
                 {"hashtag": "café", "count": 1}]},
        {"window_start": start + 10_000, "window_end": start + 70_000, "revision": 1,
         "is_final": False, "top": [{"hashtag": "[bold]x", "count": 12}]},
        {"window_start": start - 10_000, "window_end": start + 50_000, "revision": 4,
         "is_final": True, "top": [{"hashtag": "old", "count": 7}]},
        {"window_start": start - 20_000, "window_end": start + 40_000, "revision": 1,
         "is_final": True, "top": [{"hashtag": "oldest", "count": 1}]},
    ]  # fmt: skip
    screen = _screen(_render_tool().render_svg(records, title="sample"))
    expected = _expected_screen(records, shown=3)
    assert _shown(screen, expected) == expected
    assert ["sample"] in screen
    # a superseded revision and a window older than the three newest are not shown
    assert ["1", "#kafka", "3"] not in screen
    assert ["1", "#oldest", "1"] not in screen


def test_the_committed_live_view_picture_is_the_sample_run() -> None:
    """docs/img/live-view.svg shows the tool's sample run: the summary and the two newest
    windows, which fill its 32-row terminal (the third is cut to "...", as a live view taller
    than its terminal is)."""
    tool = _render_tool()
    expected = _expected_screen(tool.sample_records(), shown=2)
    for svg in (tool.render_svg(tool.sample_records()), tool.OUT.read_text(encoding="utf-8")):
        screen = _screen(svg)
        assert _shown(screen, expected) == expected
        assert screen[-1] == ["..."]


# Classes of the drawings' scaffolding (axes, ticks, grid lines, arrows): no meaning to name.
SCAFFOLDING = {"axis", "tick", "grid", "arrow"}
LEGEND = "<!-- legend: every colour the picture uses -->"
MARK = re.compile(r'<(?:circle|rect|path|line|polygon|polyline|ellipse)\b[^>]*\bclass="([^"]+)"')


def test_every_colour_of_a_picture_is_named_in_its_legend() -> None:
    """A mark's colour comes from its class; every class a picture draws with appears among the
    marks of its legend, each beside its name (the terminal screenshot has no legend)."""
    unnamed: dict[str, list[str]] = {}
    for path in sorted((REPO / "docs" / "img").glob("*.svg")):
        text = path.read_text(encoding="utf-8")
        if 'class="rich-terminal"' in text:
            continue
        drawing, _, legend = text.partition(LEGEND)
        used = set(MARK.findall(drawing)) - SCAFFOLDING
        missing = used - set(MARK.findall(legend))
        if missing:
            unnamed[path.name] = sorted(missing)
    assert unnamed == {}, f"colours drawn but not in the picture's legend: {unnamed}"


def _hook(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, REPO / "docs" / "hooks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_bench_table_has_its_place_on_the_benchmarks_page() -> None:
    """Each make target that writes a table under docs/benchmarks/ has a line on the page that
    names the target and the file; the site puts the table (or a note) there."""
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    written = re.findall(
        r"^([\w-]+):[^\n]*\n\t[^\n]*--markdown (docs/benchmarks/\S+\.md)$", makefile, re.MULTILINE
    )
    assert written, "the Makefile's bench targets write their tables with --markdown"
    page = (REPO / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    places = [(m["command"], m["path"]) for m in _hook("bench_snippets").MARKER.finditer(page)]
    assert sorted(places) == sorted((f"make {target}", path) for target, path in written)


def test_a_bench_table_is_included_once_written_and_until_then_names_its_make_target(
    tmp_path: Path,
) -> None:
    hook = _hook("bench_snippets")
    page = (
        "## Latency\n\n*Table: `make bench-x` writes it to `docs/benchmarks/x.md`; the built site "
        "shows it here.*\n"
    )
    config = {"config_file_path": str(tmp_path / "mkdocs.yml")}
    note = hook.on_page_markdown(page, config=config)
    assert note.startswith('## Latency\n\n!!! note "Not generated yet: run `make bench-x`"\n')
    assert "`docs/benchmarks/x.md`" in note
    assert "--8<--" not in note
    (tmp_path / "docs" / "benchmarks").mkdir(parents=True)
    (tmp_path / "docs" / "benchmarks" / "x.md").write_text("| a |\n|---|\n", encoding="utf-8")
    assert hook.on_page_markdown(page, config=config) == (
        '## Latency\n\n--8<-- "docs/benchmarks/x.md"\n'
    )
