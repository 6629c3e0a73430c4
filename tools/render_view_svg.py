"""Draw the demo's live top-k view as an SVG terminal screenshot: ``docs/img/live-view.svg``.

The picture is what :class:`trending.view.TopKBoard` shows in a terminal of 52 columns and 32
rows, rendered by the view's own code (rich) into a recording console and exported with
``Console.export_svg``. Its input is a sample
of the hashtags job's result records, made here by a small deterministic simulation of the demo
(windows of 1 minute every 10 seconds, lateness 5 seconds, the top 10 per window): tweets a
second per hashtag, micro-batches of two seconds of event time, a revision for each window
whose top-k changed, a final once the watermark passes a window's end. Nothing here needs Spark
or a broker; run it again after changing the view::

    .venv/bin/python tools/render_view_svg.py          # writes docs/img/live-view.svg
"""

from __future__ import annotations

import argparse
import html
import io
import random
import re
import sys
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from rich.cells import cell_len  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.live_render import LiveRender  # noqa: E402

from trending.view import TopKBoard  # noqa: E402

OUT = REPO / "docs" / "img" / "live-view.svg"
TITLE = "trending demo"
# The terminal: 52 columns (the view's tables are 48 wide) and 32 rows, which hold the summary
# line and the two newest windows; like any live view taller than its terminal, the third
# window is cut to "..." (rich's Live, as ``trending demo`` and ``trending watch`` run it).
WIDTH, HEIGHT = 52, 32

SIZE_S, HOP_S, LATENESS_S, TOP = 60, 10, 5, 10
# The hashtags, most popular first, and their share of the tweets (Zipf-like): the generator's
# tweets mix scripts, so the sample does too.
HASHTAGS = (
    "café", "vohoros", "水京空海", "python", "orcal", "anzunas", "москва", "zufemikin",
    "orel81", "東京", "spark", "kafka", "données", "música", "berlin", "日本",
)  # fmt: skip
FIRST_EVENT = datetime(2026, 11, 28, 14, 0, 0, tzinfo=timezone.utc)
BURST_S = 40  # event time the first micro-batch reads (the burst produced before the job)
BATCHES = 12  # micro-batches after the first
BATCH_S = 2  # seconds of event time each of them reads
TWEETS_PER_S = 300.0


def _ms(seconds: int) -> int:
    return int(FIRST_EVENT.timestamp() * 1000) + seconds * 1000


def _tweets(seed: int = 7) -> list[dict[str, int]]:
    """Hashtag counts of each second of event time (index = seconds after FIRST_EVENT)."""
    rng = random.Random(seed)
    weights = [1 / (rank + 1) ** 1.1 for rank in range(len(HASHTAGS))]
    total = sum(weights)
    seconds = []
    for _ in range(BURST_S + BATCHES * BATCH_S):
        seconds.append(
            {
                tag: max(0, round(TWEETS_PER_S * w / total * rng.uniform(0.7, 1.3)))
                for tag, w in zip(HASHTAGS, weights, strict=True)
            }
        )
    return seconds


def _top(counts: Mapping[str, int]) -> list[dict[str, Any]]:
    ranked = sorted(((-n, tag) for tag, n in counts.items() if n > 0))[:TOP]
    return [{"hashtag": tag, "count": -n} for n, tag in ranked]


def sample_records() -> list[dict[str, Any]]:
    """The result records of the simulated run, in the order the job would publish them."""
    seconds = _tweets()
    published: dict[int, tuple[int, list[dict[str, Any]]]] = {}  # window start -> (rev, top)
    closed: set[int] = set()
    records: list[dict[str, Any]] = []
    for batch in range(BATCHES + 1):
        newest = BURST_S + batch * BATCH_S  # seconds of event time read so far
        watermark = newest - LATENESS_S
        first = -(SIZE_S - HOP_S)  # the earliest window holding second 0
        for start in range(first, newest, HOP_S):
            if start in closed:
                continue
            counts: dict[str, int] = {}
            for second in range(max(0, start), min(newest, start + SIZE_S)):
                for tag, n in seconds[second].items():
                    counts[tag] = counts.get(tag, 0) + n
            top = _top(counts)
            revision, last = published.get(start, (0, None))
            final = watermark >= start + SIZE_S
            if not final and top == last:
                continue
            record = {
                "window_start": _ms(start),
                "window_end": _ms(start + SIZE_S),
                "top": top,
                "revision": revision + 1,
                "is_final": final,
                "emitted_at": _ms(newest) + 1500,
            }
            records.append(record)
            published[start] = (revision + 1, top)
            if final:
                closed.add(start)
    return records


def _fix_wide_text(svg: str) -> str:
    """rich sizes each text run by its characters, not its terminal cells: a run with wide
    characters (東京) would be squeezed into half its columns. Size it by cells instead."""

    def cells(match: re.Match[str]) -> str:
        text = html.unescape(match["text"])
        return match[0].replace(
            f'textLength="{match["length"]}"',
            f'textLength="{float(match["length"]) / len(text) * cell_len(text):g}"',
        )

    return re.sub(
        r'<text [^>]*textLength="(?P<length>[0-9.]+)"[^>]*>(?P<text>[^<]*)</text>', cells, svg
    )


def render_svg(records: Iterable[Mapping[str, Any]], title: str = TITLE) -> str:
    """The demo's view of ``records`` (top-k result records) as an SVG terminal screenshot."""
    board = TopKBoard()
    for record in records:
        board.add(record)
    console = Console(
        record=True,
        width=WIDTH,
        height=HEIGHT,
        file=io.StringIO(),
        force_terminal=True,
        color_system="truecolor",
    )
    console.print(LiveRender(board.render(), vertical_overflow="ellipsis"))
    svg = _fix_wide_text(console.export_svg(title=title))
    # Its size as an intrinsic size too, so that a page scales it as a picture, not to the width
    # of its column
    return re.sub(
        r'<svg class="rich-terminal" viewBox="0 0 (?P<w>[0-9.]+) (?P<h>[0-9.]+)"',
        lambda m: f'{m[0]} width="{float(m["w"]):g}" height="{float(m["h"]):g}"',
        svg,
        count=1,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=OUT, help=f"default: {OUT.relative_to(REPO)}")
    args = parser.parse_args(argv)
    args.out.write_text(render_svg(sample_records()), encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
