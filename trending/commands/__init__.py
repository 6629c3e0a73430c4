"""Sub-commands of the ``trending`` command line; each module has ``register(subparsers)``.

Every parser is a :class:`Parser`: it warns of a flag whose value carries a secret, and its help
never prints one. The parsers that show defaults use :class:`DefaultsHelpFormatter`.
"""

from __future__ import annotations

import argparse
import copy
import sys
from typing import Any

from connectors.kafka_settings import mask_url, masked_items
from trending.config import secret_flag_warning
from trending.durations import parse_duration_ms


def duration_ms(text: str) -> int:
    """A duration option's value (:mod:`trending.durations`) in milliseconds, for argparse."""
    try:
        return parse_duration_ms(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from error


def duration_s(text: str) -> float:
    """A duration option's value (:mod:`trending.durations`) in seconds, for argparse."""
    return duration_ms(text) / 1000


def masked_default(default: Any) -> Any:
    """An option's default fit to print: ``KEY=VALUE`` items with their secrets as ``***``,
    URLs without their userinfo (defaults may come from a configuration file)."""
    if isinstance(default, list) and all(isinstance(item, str) for item in default):
        return masked_items(default)
    return mask_url(default) if isinstance(default, str) else default


class MaskedHelpFormatter(argparse.HelpFormatter):
    """Help that prints a default (``%(default)s``) with its secrets as ``***``."""

    def _expand_help(self, action: argparse.Action) -> str:
        shown = copy.copy(action)
        shown.default = masked_default(action.default)
        return mask_url(super()._expand_help(shown))


class DefaultsHelpFormatter(MaskedHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
    """Adds ``(default: X)`` to an option's help unless the help already states its default,
    or the default says nothing (``None``, ``False`` of a flag, an empty list). A default from
    a configuration file may hold secrets: they show as ``***``."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help
        default = action.default
        if text is None or "(default" in text or "%(default)" in text:
            return text
        if default is None or default is False or (isinstance(default, list) and not default):
            return text
        return super()._get_help_string(action)


class Parser(argparse.ArgumentParser):
    """The parser of ``trending`` and of each sub-command (sub-parsers are of their parent's
    class): one warning on standard error for every flag whose value carries a secret, which
    the process list shows to every user of the machine."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", MaskedHelpFormatter)
        super().__init__(*args, **kwargs)

    def _get_values(self, action: argparse.Action, arg_strings: list[str]) -> Any:
        names = [name[2:] for name in action.option_strings if name.startswith("--")]
        for text in arg_strings if names else ():
            warning = secret_flag_warning(names[0], text, action.metavar == "KEY=VALUE")
            if warning:
                print(f"trending: warning: {warning}", file=sys.stderr)
        return super()._get_values(action, arg_strings)
