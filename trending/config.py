"""One configuration file for every command: ``trending --config FILE`` or ``$TRENDING_CONFIG``.

The file is TOML (``.toml``) or YAML (``.yaml``, ``.yml``). Its top-level keys apply to every
command that has the option; a table per command path (``[run]``, ``[run.hashtags]``,
``[consume]``) applies to the commands under it, the most specific table winning. Keys are the
long option names without dashes; a top-level ``[kafka]`` table holds librdkafka settings, below
the ``--kafka-config`` properties file. Highest precedence first: command-line flags, environment
variables, the file, built-in defaults. The whole file is checked by every command.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from connectors.avro import REGISTRY_ENV
from connectors.kafka import BOOTSTRAP_ENV, FILE_SETTINGS_DEST
from connectors.kafka_settings import CONFIG_ENV as KAFKA_CONFIG_ENV
from connectors.kafka_settings import (
    KAFKA_ENV_PREFIX,
    carries_secret,
    has_url_credentials,
    mask_url,
    read_properties,
    shown_key,
)
from trending.errors import UserError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib  # type: ignore[import-not-found]

CONFIG_ENV = "TRENDING_CONFIG"
KAFKA_TABLE = "kafka"
# Options an environment variable gives when the flag is absent: it wins over the file
OPTION_ENV = {
    "bootstrap-servers": BOOTSTRAP_ENV,
    "schema-registry-url": REGISTRY_ENV,
    "kafka-config": KAFKA_CONFIG_ENV,
    "master": "SPARK_MASTER",
}
REFUSED = {"kafka-option": "not in the file: put librdkafka settings in the [kafka] table"}
Command = tuple[str, ...]
_FLAGS = (argparse._StoreTrueAction, argparse._StoreFalseAction)
_NUMBERS: dict[Any, str] = {int: "a whole number", float: "a number"}


class ConfigError(UserError):
    """The problems of a configuration file, one line each."""

    def __init__(self, problems: Sequence[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = list(problems)


@dataclass(frozen=True)
class FileValue:
    """An option's value in the file: as written, as the parser's default, and its table."""

    raw: Any
    default: Any
    table: Command


@dataclass
class ConfigFile:
    """A checked configuration file: each command's options, and the ``[kafka]`` settings."""

    path: str
    given_by: str
    options: dict[Command, dict[str, FileValue]] = field(default_factory=dict)
    kafka: dict[str, str] = field(default_factory=dict)

    def where(self, table: Command) -> str:
        """``file PATH [run.hashtags]``: where a value of ``table`` comes from."""
        return f"file {self.path} {_table_name(table)}"


def _table_name(table: Command) -> str:
    return f"[{'.'.join(table)}]" if table else "(top level)"


def config_path(argv: Sequence[str], environ: Mapping[str, str]) -> tuple[str, str] | None:
    """The file ``--config`` names before the command (argparse's abbreviations too), else
    ``$TRENDING_CONFIG``; with how it was given."""
    tokens = iter(argv)
    for token in tokens:
        if not token.startswith("-"):
            break
        name, eq, value = token.partition("=")
        if len(name) > 2 and "--config".startswith(name):
            path = value if eq else next(tokens, "")
            return (path, "--config") if path else None
        if not eq and name not in ("-h", "--help", "--version"):
            next(tokens, None)  # the value of another option of trending itself (--log-format)
    found = environ.get(CONFIG_ENV)
    return (found, f"${CONFIG_ENV}") if found else None


def read_document(path: str) -> dict[str, Any]:
    """The mapping in a TOML or YAML file; a :class:`UserError` in one line when unreadable."""
    suffix = Path(path).suffix.lower()
    if suffix not in (".toml", ".yaml", ".yml"):
        raise UserError(f"config file {path}: name it .toml, .yaml or .yml")
    try:
        text = Path(path).read_text(encoding="utf-8")
        document = tomllib.loads(text) if suffix == ".toml" else yaml.safe_load(text)
    except OSError as error:
        raise UserError(f"cannot read config file {path}: {error.strerror}") from error
    except (tomllib.TOMLDecodeError, yaml.YAMLError) as error:
        reason = " ".join(str(error).split())
        raise UserError(f"config file {path} is not valid {suffix[1:].upper()}: {reason}") from None
    if document is None:
        return {}
    if not isinstance(document, dict):
        raise UserError(f"config file {path}: want a table of settings at the top")
    return document


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The sub-commands of ``parser`` by name (none for a leaf command)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def leaves(
    parser: argparse.ArgumentParser, prefix: Command = ()
) -> dict[Command, argparse.ArgumentParser]:
    """Every command under ``parser`` that runs something, by its path."""
    children = subcommands(parser)
    if not children:
        return {prefix: parser}
    found: dict[Command, argparse.ArgumentParser] = {}
    for name, child in children.items():
        found |= leaves(child, (*prefix, name))
    return found


def options(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    """The options a file may set, by long name without dashes."""
    found: dict[str, argparse.Action] = {}
    for action in parser._actions:
        names = [s[2:] for s in action.option_strings if s.startswith("--")]
        if names and not isinstance(action, (argparse._HelpAction, argparse._VersionAction)):
            found[names[0]] = action
    return found


ROOT_ONLY = {"config"}  # a root option the file cannot set


def root_options(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    """The options of ``trending`` itself a file may set at its top level (``log-format``)."""
    return {name: a for name, a in options(parser).items() if name not in ROOT_ONLY}


def env_override(name: str, environ: Mapping[str, str]) -> str | None:
    """The environment variable that gives option ``name`` over the file, when it is set."""
    variable = OPTION_ENV.get(name)
    return variable if variable and environ.get(variable) else None


def convert(action: argparse.Action, value: Any) -> Any:
    """``value`` from the file as the default of ``action``, checked as argparse checks a
    command-line value; a ``ValueError`` says what is wrong."""
    if isinstance(action, _FLAGS):
        if not isinstance(value, bool):
            raise ValueError(f"wants true or false, got {_shown(value)}")
        return action.const if value else action.default
    if isinstance(action, argparse._AppendAction):
        return [_item(action, item) for item in _items(value)]
    parsed = _scalar(action, value)
    return str(value) if action.type not in (None, int, float) else parsed


def _takes_table(action: argparse.Action) -> bool:
    return isinstance(action, argparse._AppendAction)


def _items(value: Any) -> list[Any]:
    if isinstance(value, Mapping):
        return [f"{key}={_text(setting)}" for key, setting in flatten(value).items()]
    if isinstance(value, list):
        return value
    raise ValueError(f"wants a list or a table, got {_shown(value)}")


def _item(action: argparse.Action, item: Any) -> Any:
    if not isinstance(item, str):
        raise ValueError(f"wants strings in its list, got {_shown(item)}")
    key, sep, _ = item.partition("=")
    if action.metavar == "KEY=VALUE" and not (sep and key.strip()):
        raise ValueError(f"wants KEY=VALUE items, got {shown_key(key)}")
    return _scalar(action, item)


def _scalar(action: argparse.Action, value: Any) -> Any:
    wanted = _NUMBERS.get(action.type, "a string")
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ValueError(f"wants {wanted}, got {_shown(value)}")
    if (action.type is None and not isinstance(value, str)) or (
        action.type is int and isinstance(value, float)
    ):
        raise ValueError(f"wants {wanted}, got {_shown(value)}")
    text = value if isinstance(value, str) else str(value)
    try:
        parsed = action.type(text) if callable(action.type) else text
    except (argparse.ArgumentTypeError, ValueError, TypeError) as error:
        reason = f"wants {wanted}, got {text!r}" if action.type in _NUMBERS else str(error)
        raise ValueError(mask_url(reason)) from None
    if action.choices is not None and parsed not in action.choices:
        choices = ", ".join(map(str, action.choices))
        raise ValueError(f"wants one of {choices}, got {text!r}")
    return parsed


def _shown(value: Any) -> str:
    kinds = {bool: "a boolean", str: "a string", int: "a number", float: "a number"}
    if isinstance(value, Mapping):
        return "a table"
    if isinstance(value, list):
        return "a list"
    return kinds.get(type(value), type(value).__name__)


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)
    raise ValueError(f"wants strings, numbers or booleans as values, got {_shown(value)}")


def flatten(table: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested tables as dotted keys (TOML reads ``sasl.username = "x"`` as a nested table)."""
    flat: dict[str, Any] = {}
    for key, value in table.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat |= flatten(value, f"{name}.")
        else:
            flat[name] = value
    return flat


class _Checker:
    """Walks a file's tables against the parser, collecting values and problems."""

    def __init__(self, config: ConfigFile) -> None:
        self.config = config
        self.problems: list[str] = []

    def problem(self, table: Command, key: str, message: str) -> None:
        where = f"table {_table_name(table)}" if table else "top level"
        self.problems.append(f"config file {self.config.path}, {where}, key {key}: {message}")

    def table(
        self, document: Mapping[Any, Any], parser: argparse.ArgumentParser, prefix: Command
    ) -> None:
        children = subcommands(parser)
        for key, value in document.items():
            if not isinstance(key, str):
                self.problem(prefix, repr(key), "keys are option names")
            elif key in children and isinstance(value, Mapping):
                self.table(value, children[key], (*prefix, key))
            elif key in children:
                command = " ".join((*prefix, key))
                self.problem(prefix, key, f"wants a table of options of `trending {command}`")
            elif key == KAFKA_TABLE and not prefix:
                self.kafka(value)
            elif key in REFUSED:
                self.problem(prefix, key, REFUSED[key])
            else:
                self.option(parser, prefix, key, value)

    def kafka(self, value: Any) -> None:
        if not isinstance(value, Mapping):
            self.problem(
                (), KAFKA_TABLE, f"wants a table of librdkafka settings, got {_shown(value)}"
            )
            return
        for name, setting in flatten(value).items():
            try:
                self.config.kafka[name] = _text(setting)
            except ValueError as error:
                self.problem((KAFKA_TABLE,), name, str(error))

    def option(
        self, parser: argparse.ArgumentParser, prefix: Command, key: str, value: Any
    ) -> None:
        if not prefix and key in (own := root_options(parser)):  # e.g. log-format
            try:
                self.keep((), key, FileValue(value, convert(own[key], value), ()))
            except ValueError as error:
                self.problem((), key, str(error))
            return
        holders = {
            path: found[key]
            for path, leaf in leaves(parser, prefix).items()
            if key in (found := options(leaf))
        }
        if not holders:
            self.unknown(parser, prefix, key, value)
            return
        failures: dict[str, list[str]] = {}
        for path, action in holders.items():
            try:
                self.keep(path, key, FileValue(value, convert(action, value), prefix))
            except ValueError as error:
                failures.setdefault(str(error), []).append(" ".join(path))
        for message, paths in failures.items():
            for_whom = f" (for {', '.join(paths)})" if len(paths) < len(holders) else ""
            self.problem(prefix, key, message + for_whom)

    def keep(self, path: Command, key: str, value: FileValue) -> None:
        known = self.config.options.setdefault(path, {})
        if key not in known or len(known[key].table) <= len(value.table):
            known[key] = value

    def unknown(
        self, parser: argparse.ArgumentParser, prefix: Command, key: str, value: Any
    ) -> None:
        known = [options(leaf) for leaf in leaves(parser, prefix).values()]
        tables = set(subcommands(parser)) | (set() if prefix else {KAFKA_TABLE})
        if isinstance(value, Mapping):  # a table, or the table form of a repeatable option
            names = {n for found in known for n, a in found.items() if _takes_table(a)}
        else:
            names = {name for found in known for name in found} | tables
            names |= set() if prefix else set(root_options(parser))
        close = difflib.get_close_matches(key, sorted(names | tables), n=1)
        if isinstance(value, Mapping):
            hint = f" (did you mean [{'.'.join((*prefix, close[0]))}]?)" if close else ""
            table = ".".join((*prefix, key))
            self.problems.append(f"config file {self.config.path}: unknown table [{table}]{hint}")
        else:
            self.problem(
                prefix, key, "unknown key" + (f" (did you mean {close[0]}?)" if close else "")
            )


def load_config(parser: argparse.ArgumentParser, path: str, given_by: str) -> ConfigFile:
    """The file at ``path`` checked against every command of ``parser``; a
    :class:`ConfigError` lists every problem."""
    config = ConfigFile(path, given_by)
    checker = _Checker(config)
    checker.table(read_document(path), parser, ())
    if checker.problems:
        raise ConfigError(checker.problems)
    return config


def apply_config(
    parser: argparse.ArgumentParser, config: ConfigFile, environ: Mapping[str, str]
) -> None:
    """Make the file's values the defaults of each command (flags still win); a value whose
    environment variable is set is left out, so the variable wins."""
    own = root_options(parser)
    root = {own[name].dest: value.default for name, value in config.options.get((), {}).items()}
    if root:
        parser.set_defaults(**root)
    for path, leaf in leaves(parser).items():
        known = options(leaf)
        defaults = {
            known[name].dest: value.default
            for name, value in config.options.get(path, {}).items()
            if env_override(name, environ) is None
        }
        if config.kafka and "kafka-option" in known:
            defaults[FILE_SETTINGS_DEST] = dict(config.kafka)
        if defaults:
            leaf.set_defaults(**defaults)


def configure(
    parser: argparse.ArgumentParser, argv: Sequence[str], environ: Mapping[str, str]
) -> ConfigFile | None:
    """Load the configuration file ``argv`` or ``environ`` names, if any, into ``parser``."""
    found = config_path(argv, environ)
    if found is None:
        return None
    config = load_config(parser, *found)
    apply_config(parser, config, environ)
    return config


# --- secrets ----------------------------------------------------------------------------------
# The process list (ps, /proc/PID/cmdline) shows every process's command line to every user of
# the machine, so a secret belongs in a file only its owner can read, or in the environment.
PRIVATE_FILE = "the configuration file (trending --config FILE, chmod 600)"


def secret_flag_warning(name: str, value: str, key_value: bool) -> str | None:
    """The warning for the flag ``--name value`` (``key_value``: a ``KEY=VALUE`` item) when the
    value carries a secret (:func:`connectors.kafka_settings.carries_secret`), else None."""
    key, _, setting = value.partition("=") if key_value else ("", "", value)
    if not carries_secret(key.strip(), setting):
        return None
    flag = f"--{name} {key.strip()}" if key_value else f"--{name}"
    return (
        f"{flag}: a secret on the command line shows in the process list (ps) to every user "
        f"of this machine; {secret_route(name, key.strip())}"
    )


def secret_route(name: str, key: str) -> str:
    """How to give the secret of option ``name`` (setting ``key``) off the command line."""
    if name == "kafka-option":
        variable = KAFKA_ENV_PREFIX + key.upper().replace(".", "_")
        return (
            f"set ${variable}, or put it in the [kafka] table of {PRIVATE_FILE} or in a "
            "--kafka-config file only you can read"
        )
    if name == "spark-kafka-option":
        return (
            "give the Kafka client settings instead ($TRENDING_KAFKA_SASL_USERNAME and "
            "$TRENDING_KAFKA_SASL_PASSWORD become Spark's kafka.sasl.jaas.config), or put it in "
            f"the spark-kafka-option table of {PRIVATE_FILE}"
        )
    if name == "conf":
        return (
            f"put it in the conf table of {PRIVATE_FILE}, whose secrets the jobs hand to "
            "Spark's JVM off its command line, or in a Hadoop credential provider "
            "(spark.hadoop.hadoop.security.credential.provider.path); S3A also reads "
            "$AWS_ACCESS_KEY_ID, $AWS_SECRET_ACCESS_KEY and $AWS_SESSION_TOKEN"
        )
    option_variable = OPTION_ENV.get(name)
    instead = f"set ${option_variable} or " if option_variable else ""
    return f"{instead}put it in {PRIVATE_FILE}"


def file_secrets(config: ConfigFile) -> list[str]:
    """What in the configuration file holds a secret: ``[kafka] KEY``, ``OPTION`` (a URL with
    credentials) or ``OPTION KEY`` (an item of a ``KEY=VALUE`` option)."""
    found = {f"[kafka] {k}" for k, v in config.kafka.items() if carries_secret(k, v)}
    for values in config.options.values():
        for name, value in values.items():
            if isinstance(value.default, list):
                items = [str(item).partition("=") for item in value.default]
                found |= {f"{name} {k}" for k, _, v in items if carries_secret(k, v)}
            elif isinstance(value.raw, str) and has_url_credentials(value.raw):
                found.add(name)
    return sorted(found)


def exposed_file_warning(path: str, secrets: Sequence[str]) -> str | None:
    """The warning for a file of ``secrets`` that users other than its owner may read."""
    try:
        exposed = bool(secrets) and Path(path).stat().st_mode & 0o044 != 0
    except OSError:
        return None
    if not exposed:
        return None
    return (
        f"{path} holds secrets ({', '.join(secrets)}) and other users of this machine may "
        f"read it: chmod 600 {path}"
    )


def exposed_secrets_warnings(
    config: ConfigFile | None, args: argparse.Namespace, environ: Mapping[str, str]
) -> list[str]:
    """A warning for the configuration file and for the Kafka properties file (``--kafka-config``
    or ``$TRENDING_KAFKA_CONFIG``) when one holds secrets others may read."""
    warnings = [exposed_file_warning(config.path, file_secrets(config)) if config else None]
    has_option = "kafka_config" in vars(args)
    properties = (args.kafka_config or environ.get(KAFKA_CONFIG_ENV)) if has_option else None
    if properties:
        try:
            settings = read_properties(properties)
        except UserError:
            settings = {}  # the command says what is wrong with it
        secrets = sorted(k for k, v in settings.items() if carries_secret(k, v))
        warnings.append(exposed_file_warning(properties, secrets))
    return [warning for warning in warnings if warning]
