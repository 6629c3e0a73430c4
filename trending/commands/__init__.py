"""Sub-commands of the ``trending`` command line; each module has ``register(subparsers)``.

Every parser is a :class:`Parser`: it warns of a flag whose value carries a secret, and its help
never prints one. Every parser shows defaults one way, ``(default: X)``, added by
:class:`DefaultsHelpFormatter`: help texts do not write them by hand. A number shows as it is
typed (``100000``, ``0.05``), an environment variable as ``$NAME``, and an option's placeholder
names the kind of its value, the same for every option of that kind (``DURATION``, ``N``,
``TOPIC``, ...: :data:`trending.arg_types.PLACEHOLDERS`).

A value a command refuses after parsing (a hop longer than the size, a spec file that does not
parse) is an :class:`OptionError`: one line named by the sub-command, as argparse's own.
"""

from __future__ import annotations

import argparse
import copy
import difflib
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn

from connectors.kafka_settings import mask_url, masked_items
from trending import arg_types
from trending.config import secret_flag_warning
from trending.errors import UserError


class OptionError(UserError):
    """A value given on the command line (or by the configuration file) that the command
    refuses once parsing is done: ``trending run hashtags: error: MESSAGE``, exit code 2."""


@contextmanager
def checking_options() -> Iterator[None]:
    """The checks of option values inside: a :class:`UserError` or ``ValueError`` they raise is
    an :class:`OptionError`."""
    try:
        yield
    except OptionError:
        raise
    except (UserError, ValueError) as error:
        raise OptionError(str(error)) from error


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
        if isinstance(shown.default, float) and shown.default.is_integer():
            shown.default = int(shown.default)  # 1000, as it is typed, not 1000.0
        return mask_url(super()._expand_help(shown))

    def _get_default_metavar_for_optional(self, action: argparse.Action) -> str:
        return placeholder(action)


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


def placeholder(action: argparse.Action) -> str:
    """The placeholder of an option's value when the option names none: by the type of the
    value (:data:`trending.arg_types.PLACEHOLDERS`), else by its name (``--input-topic TOPIC``,
    ``--metrics-host HOST``), else the name itself."""
    known = arg_types.PLACEHOLDERS.get(action.type) if callable(action.type) else None
    if known:
        return known
    for ending, shown in (("topic", "TOPIC"), ("host", "HOST"), ("url", "URL")):
        if action.dest == ending or action.dest.endswith(f"_{ending}"):
            return shown
    return action.dest.upper()


class Renamed(argparse.Action):
    """An option that has a new name (``run sensors --size``, now ``--window-readings``): left
    out of ``--help``; given on the command line it is one error line that names the new
    option, and so is its key in a configuration file."""

    def __init__(
        self, option_strings: Sequence[str], dest: str, *, now: str, what: str, **_: Any
    ) -> None:
        super().__init__(
            option_strings,
            dest,
            nargs="?",
            default=argparse.SUPPRESS,
            type=arg_types.retired(now.lstrip("-"), what),
            help=argparse.SUPPRESS,
        )
        self.message = f"{option_strings[-1]} is now {now} ({what})"

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        parser.error(self.message)


def hidden(action: argparse.Action) -> bool:
    """Whether ``--help`` leaves ``action`` out (a :class:`Renamed` option)."""
    return action.help == argparse.SUPPRESS


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
        if isinstance(action, Renamed):
            self.error(action.message)
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
        known = [s for action in self._actions if not hidden(action) for s in action.option_strings]
        close = difflib.get_close_matches(name, known, n=1)
        return f"unrecognized option {name}" + (f"; did you mean {close[0]}?" if close else "")

    def error(self, message: str) -> NoReturn:
        """One line, ``trending run hashtags: error: MESSAGE``, and exit code 2 (argparse prints
        the usage too; ``--help`` shows it)."""
        self.exit(2, error_line(self.prog, message))


def error_line(prog: str, message: str) -> str:
    """``PROG: error: MESSAGE`` on one line."""
    return f"{prog}: error: {' '.join(message.split())}\n"


def writable_dir(path: Path, flag: str) -> Path:
    """``path``, created if missing, when this process can write there; else an
    :class:`OptionError` naming ``flag`` (``--data-dir``)."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise OptionError(f"{flag} {path}: cannot create it: {error.strerror or error}") from None
    except ValueError as error:  # a NUL in the name
        raise OptionError(f"{flag} {str(path)!r}: {error}") from None
    if not path.is_dir() or not os.access(path, os.W_OK | os.X_OK):
        raise OptionError(f"{flag} {path}: not a folder this user can write to")
    return path


def require_kafka(bootstrap: str, kafka_options: dict[str, str], timeout_s: float = 20) -> None:
    """Wait (up to ``timeout_s``) for a broker at ``bootstrap`` to answer, else one line saying
    how to get one, before any Kafka client of the command is made (so no client logs its
    failed connection attempts meanwhile)."""
    from connectors.kafka import CredentialsRefused, wait_for_kafka

    try:
        wait_for_kafka(bootstrap, timeout=timeout_s, extra=kafka_options)
    except CredentialsRefused:
        raise
    except UserError as error:
        raise UserError(
            f"{error}: start one with `trending broker` or point --bootstrap-servers "
            "(or $KAFKA_BOOTSTRAP_SERVERS) at your cluster"
        ) from error
