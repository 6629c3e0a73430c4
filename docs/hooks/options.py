"""MkDocs hook: the options reference (options.md), generated from the ``trending`` parser.

Each command's options, their defaults and their help come from :func:`trending.cli.build_parser`
at build time, so the page lists every option the installed code has, no more and no fewer.
The parser is built with the connection settings of the environment set aside, so that no
default shown comes from the shell that built the site.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

MARKER = "<!-- options: every command -->"
ENVIRONMENT = ("KAFKA_", "TRENDING_", "SCHEMA_REGISTRY", "SPARK_MASTER")
CHECKOUT = str(Path(__file__).resolve().parents[2])


def _commands(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    """The parsers that run something, in the order their commands were registered."""
    children = [
        action for action in parser._actions if isinstance(action, argparse._SubParsersAction)
    ]
    if not children:
        yield parser
        return
    for action in children:
        seen: set[int] = set()
        for child in action.choices.values():
            if id(child) not in seen:
                seen.add(id(child))
                yield from _commands(child)


def _cell(text: str, prose: bool = True) -> str:
    """One table cell: one line, pipes escaped, the checkout's own path as ``<checkout>``; in
    prose (not a code span) ``<`` and ``>`` as entities, so ``TRENDING_KAFKA_<NAME>`` shows."""
    cell = " ".join(text.replace(CHECKOUT, "<checkout>").split()).replace("|", "\\|")
    if not prose:
        return cell
    return cell.replace("<", "&lt;").replace(">", "&gt;").replace("*", "\\*")


def _default(action: argparse.Action) -> str:
    if action.default in (None, argparse.SUPPRESS, False, []) or isinstance(
        action, (argparse._StoreTrueAction, argparse._HelpAction)
    ):
        return ""
    return f"`{action.default}`"


def _table(parser: argparse.ArgumentParser) -> str:
    formatter = parser._get_formatter()
    rows = ["| option | default | what |", "|---|---|---|"]
    for action in parser._actions:
        if action.help == argparse.SUPPRESS or isinstance(action, argparse._HelpAction):
            continue
        if action.option_strings:
            name = ", ".join(f"`{o}`" for o in action.option_strings)
            if action.nargs != 0 and action.metavar:
                name += f" `{action.metavar}`"
        else:
            name = f"`{action.metavar or action.dest}` (argument)"
        help_text = formatter._expand_help(action) if action.help else ""
        if action.choices and not isinstance(action.choices, dict):
            help_text += " (one of " + ", ".join(f"`{c}`" for c in action.choices) + ")"
        rows.append(f"| {name} | {_cell(_default(action), prose=False)} | {_cell(help_text)} |")
    return "\n".join(rows)


def options_markdown() -> str:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(ENVIRONMENT)}
    with mock.patch.dict(os.environ, clean, clear=True):
        from trending.cli import build_parser

        parser = build_parser()
    sections = []
    for command in _commands(parser):
        description = _cell((command.description or "").split("\n\n")[0])
        sections.append(f"## `{command.prog}`\n\n{description}\n\n{_table(command)}\n")
    return "\n".join(sections)


def on_page_markdown(markdown: str, **_: Any) -> str:
    if MARKER not in markdown:
        return markdown
    return markdown.replace(MARKER, options_markdown())
