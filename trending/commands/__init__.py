"""Sub-commands of the ``trending`` command line; each module has ``register(subparsers)``.

Every parser is a :class:`Parser`: it warns of a flag whose value carries a secret, and its help
never prints one. Every parser shows defaults one way, ``(default: X)``, added by
:class:`DefaultsHelpFormatter`: help texts do not write them by hand.
"""

from __future__ import annotations

import argparse
import copy
import difflib
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

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


_NUMBERS = {int: "a whole number", float: "a number"}


class RawDescriptionFormatter(DefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """:class:`DefaultsHelpFormatter` that keeps the description's own line breaks."""


class Parser(argparse.ArgumentParser):
    """The parser of ``trending`` and of each sub-command (sub-parsers are of their parent's
    class): one warning on standard error for every flag whose value carries a secret, which
    the process list shows to every user of the machine. A mistake on the command line is one
    line on standard error, named by the sub-command it belongs to, and exit code 2."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", DefaultsHelpFormatter)
        super().__init__(*args, **kwargs)

    def _get_values(self, action: argparse.Action, arg_strings: list[str]) -> Any:
        names = [name[2:] for name in action.option_strings if name.startswith("--")]
        for text in arg_strings if names else ():
            warning = secret_flag_warning(names[0], text, action.metavar == "KEY=VALUE")
            if warning:
                print(f"trending: warning: {warning}", file=sys.stderr)
        return super()._get_values(action, arg_strings)

    def _get_value(self, action: argparse.Action, arg_string: str) -> Any:
        if action.type in _NUMBERS:
            try:
                return action.type(arg_string)
            except ValueError:
                wanted = _NUMBERS[action.type]
                raise argparse.ArgumentError(action, f"want {wanted}, got {arg_string!r}") from None
        return super()._get_value(action, arg_string)

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        """As argparse's, but what is left over is an error of this (sub-)command, which knows
        its own options: a sub-command's leftovers would otherwise reach ``trending`` itself."""
        parsed, extras = super().parse_known_args(args, namespace)
        if extras:
            self.error(self.unrecognized(extras))
        return parsed, extras

    def unrecognized(self, extras: Sequence[str]) -> str:
        """``unrecognized option --sise; did you mean --size?`` for the first of ``extras``."""
        flags = [word for word in extras if word.startswith("-") and word != "-"]
        if not flags:
            return f"unrecognized argument {extras[0]!r}"
        name = flags[0].partition("=")[0]
        known = [s for action in self._actions for s in action.option_strings]
        close = difflib.get_close_matches(name, known, n=1)
        return f"unrecognized option {name}" + (f"; did you mean {close[0]}?" if close else "")

    def error(self, message: str) -> NoReturn:
        """One line, ``trending run hashtags: error: MESSAGE``, and exit code 2 (argparse prints
        the usage too; ``--help`` shows it)."""
        self.exit(2, f"{self.prog}: error: {' '.join(message.split())}\n")


def require_kafka(bootstrap: str, kafka_options: dict[str, str], timeout_s: float = 20) -> None:
    """Wait (up to ``timeout_s``) for a broker at ``bootstrap`` to answer, else one line saying
    how to get one, before any Kafka client of the command is made (so no client logs its
    failed connection attempts meanwhile)."""
    from connectors.kafka import CredentialsRefused, wait_for_kafka
    from trending.errors import UserError

    try:
        wait_for_kafka(bootstrap, timeout=timeout_s, extra=kafka_options)
    except CredentialsRefused:
        raise
    except UserError as error:
        raise UserError(
            f"{error}: start one with `trending broker` or point --bootstrap-servers "
            "(or KAFKA_BOOTSTRAP_SERVERS) at your cluster"
        ) from error
