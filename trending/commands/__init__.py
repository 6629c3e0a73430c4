"""Sub-commands of the ``trending`` command line; each module has ``register(subparsers)``.

The parsers that show defaults use :class:`DefaultsHelpFormatter`.
"""

from __future__ import annotations

import argparse

from connectors.kafka_settings import mask_url


class DefaultsHelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Adds ``(default: X)`` to an option's help unless the help already states its default,
    or the default says nothing (``None``, ``False`` of a flag, an empty list). A default from
    a configuration file may be a URL with credentials: its userinfo shows as ``***``."""

    def _expand_help(self, action: argparse.Action) -> str:
        return mask_url(super()._expand_help(action))

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help
        default = action.default
        if text is None or "(default" in text or "%(default)" in text:
            return text
        if default is None or default is False or (isinstance(default, list) and not default):
            return text
        return super()._get_help_string(action)
