"""``trending config show COMMAND...``: a command's effective options and where each comes from."""

from __future__ import annotations

import argparse
import difflib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from connectors.kafka import DEFAULT_BOOTSTRAP
from connectors.kafka_settings import (
    REGISTRY_ENV_PREFIX,
    env_names,
    env_settings,
    kafka_sources,
    masked,
    masked_items,
)
from trending.commands import OptionError, hidden
from trending.config import (
    CONFIG_ENV,
    KAFKA_TABLE,
    Command,
    ConfigFile,
    FileValue,
    config_path,
    convert,
    env_override,
    leaves,
    load_config,
    options,
    subcommands,
)

# What an unset option means, where its help says so
_FALLBACKS = {
    "master": "local[*]",
    "bootstrap-servers": DEFAULT_BOOTSTRAP,
    "schema-registry-url": "none",
}
_UNSET = object()


@dataclass(frozen=True)
class Row:
    """One line of the listing: a name, its value fit to print, where the value comes from."""

    name: str
    value: str
    source: str


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``config`` and its ``show`` sub-command."""
    config = subparsers.add_parser(
        "config",
        help="the configuration file: show a command's effective options",
        description="Tools for the configuration file (trending --config FILE).",
    )
    commands = config.add_subparsers(dest="config_command", metavar="SUBCOMMAND", required=True)
    show = commands.add_parser(
        "show",
        help="print a command's options, their values and where each comes from",
        description="Print every option of a command with its value and where it comes from: "
        "flag, env NAME, file FILE [table] or default; then its Kafka client and schema "
        "registry settings. Secrets print as ***. Flags after the command count as given, e.g. "
        "trending --config jobs.toml config show run hashtags --size 10m",
    )
    show.add_argument(
        "path", nargs=argparse.REMAINDER, metavar="COMMAND", help="a command, e.g. run hashtags"
    )
    show.set_defaults(handler=run_show)


def run_show(args: argparse.Namespace) -> int:
    """Print the effective configuration of the command ``args.path`` names."""
    print(show(args.path, args.config, os.environ), end="")
    return 0


def show(tokens: Sequence[str], config_flag: str | None, environ: Mapping[str, str]) -> str:
    """The listing for ``tokens`` (a command path, then its flags) with the configuration file
    ``config_flag`` (else ``$TRENDING_CONFIG``) and the environment ``environ``."""
    from trending.cli import build_parser

    parser = build_parser()
    path, flags = _command(parser, tokens)
    found = (config_flag, "--config") if config_flag else config_path([], environ)
    config = load_config(parser, *found) if found else None
    leaf = leaves(parser)[path]
    from_file = config.options.get(path, {}) if config else {}
    given = _given(leaf, flags)
    origins = {
        name: _origin(name, action, given, from_file, environ)
        for name, action in _shown_options(leaf).items()
    }
    sections = [_header(path, config)]
    kafka: dict[str, tuple[str, str]] = {}
    if "kafka-option" in origins:
        kafka = _kafka(origins, config, environ)
        sections.append(_table("Kafka client settings", _setting_rows(kafka)))
    _fall_back(origins, kafka)
    rows = [
        Row(name, _display(name, value), _where(source, config, from_file.get(name)))
        for name, (value, source) in origins.items()
    ]
    sections.insert(1, _table("options", rows))
    if "schema-registry-url" in origins:
        sections.append(_table("schema registry client settings", _registry_rows(environ)))
    return "\n".join(sections)


def _header(path: Command, config: ConfigFile | None) -> str:
    where = (
        f"config file {config.path} ({config.given_by})"
        if config
        else f"no config file (--config FILE or ${CONFIG_ENV})"
    )
    return f"trending {' '.join(path)}: {where}"


def _command(parser: Any, tokens: Sequence[str]) -> tuple[Command, list[str]]:
    """The command path at the start of ``tokens``, and the tokens after it."""
    path: list[str] = []
    rest = list(tokens)
    while children := subcommands(parser):
        if not rest or rest[0] not in children:
            where = " ".join(["trending", *path])
            message = f"want a command: {where} takes {', '.join(children)}"
            if rest:
                close = difflib.get_close_matches(rest[0], list(children), n=1)
                message += f", got {rest[0]!r}" + (f" (did you mean {close[0]}?)" if close else "")
            raise OptionError(message)
        path.append(rest.pop(0))
        parser = children[path[-1]]
    return tuple(path), rest


def _shown_options(leaf: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    """The options of ``leaf`` its ``--help`` shows (not a renamed one), by name."""
    return {name: action for name, action in options(leaf).items() if not hidden(action)}


def _given(leaf: argparse.ArgumentParser, tokens: Sequence[str]) -> dict[str, Any]:
    """The options ``tokens`` give, by long name, as written; each value checked as the
    command checks it. Positional arguments may be left out."""
    known = _shown_options(leaf)
    types = {name: action.type for name, action in known.items()}
    for action in leaf._actions:
        if not action.option_strings:
            action.required, action.nargs = False, "?"
    for action in known.values():
        action.type = None  # keep what was written
    seeds = {
        a.dest: [] if isinstance(a, argparse._AppendAction) else _UNSET for a in known.values()
    }
    namespace = leaf.parse_args(tokens, argparse.Namespace(**seeds))
    given: dict[str, Any] = {}
    for name, action in known.items():
        action.type = types[name]
        value = getattr(namespace, action.dest)
        if value is _UNSET or value == []:
            continue
        try:
            convert(action, value)
        except ValueError as error:
            leaf.error(f"argument --{name}: {error}")
        given[name] = value
    return given


def _origin(
    name: str,
    action: argparse.Action,
    given: Mapping[str, Any],
    from_file: Mapping[str, FileValue],
    environ: Mapping[str, str],
) -> tuple[Any, str]:
    """An option's effective value and its source: flag, env NAME, file or default."""
    if isinstance(action, argparse._AppendAction):
        items = list(from_file[name].default) if name in from_file else []
        sources = (["file"] if items else []) + ([f"flag --{name}"] if name in given else [])
        return items + list(given.get(name, [])), " + ".join(sources) or "default"
    variable = env_override(name, environ)
    if name in given:
        return given[name], f"flag --{name}"
    if variable is not None:
        return environ[variable], f"env {variable}"
    if name in from_file:
        return from_file[name].raw, "file"
    return action.default, "default"


def _kafka(
    origins: Mapping[str, tuple[Any, str]], config: ConfigFile | None, environ: Mapping[str, str]
) -> dict[str, tuple[str, str]]:
    """The command's librdkafka settings with their sources, as its clients get them."""
    properties, options_given = origins["kafka-config"][0], origins["kafka-option"][0]
    return kafka_sources(
        properties,
        options_given,
        environ,
        config.kafka if config else None,
        config.where((KAFKA_TABLE,)) if config else "",
    )


def _fall_back(origins: dict[str, tuple[Any, str]], kafka: Mapping[str, tuple[str, str]]) -> None:
    """Unset options the command fills in: the brokers from the Kafka settings, the master."""
    for name, fallback in _FALLBACKS.items():
        if name in origins and origins[name] == (None, "default"):
            origins[name] = (fallback, "default")
    servers = kafka.get("bootstrap.servers")
    if servers and origins.get("bootstrap-servers") == (DEFAULT_BOOTSTRAP, "default"):
        origins["bootstrap-servers"] = (servers[0], f"{servers[1]} (bootstrap.servers)")


def _where(source: str, config: ConfigFile | None, value: FileValue | None) -> str:
    if config is None or value is None or not source.startswith("file"):
        return source
    return config.where(value.table) + source[len("file") :]


def _display(name: str, value: Any) -> str:
    """``value`` fit to print: secrets and the userinfo of URLs as ``***``."""
    if isinstance(value, list):
        return ", ".join(masked_items([str(item) for item in value])) or "(none)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "(unset)"
    return str(masked({name: str(value)})[name])


def _setting_rows(sources: Mapping[str, tuple[str, str]]) -> list[Row]:
    shown = masked({key: value for key, (value, _) in sources.items()})
    return [Row(key, shown[key], source) for key, (_, source) in sources.items()]


def _registry_rows(environ: Mapping[str, str]) -> list[Row]:
    settings = env_settings(environ, REGISTRY_ENV_PREFIX)
    names = env_names(environ, REGISTRY_ENV_PREFIX)
    return [Row(key, value, f"env {names[key]}") for key, value in masked(settings).items()]


def _table(title: str, rows: Sequence[Row]) -> str:
    if not rows:
        return f"{title}: none\n"
    name_width = max(len(row.name) for row in rows)
    value_width = min(40, max(len(row.value) for row in rows))
    lines = [f"  {r.name:<{name_width}}  {r.value:<{value_width}}  {r.source}" for r in rows]
    return f"{title}:\n" + "\n".join(lines) + "\n"
