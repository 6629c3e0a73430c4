"""Kafka client and schema registry settings: where they come from, what Spark gets, masking.

The librdkafka settings of every client (producers, consumers, admin, the transactional
writer) come from, lowest to highest precedence:

1. the ``[kafka]`` table of the configuration file (``trending --config FILE``);
2. a properties file: ``--kafka-config FILE``, else ``$TRENDING_KAFKA_CONFIG`` (``key=value``
   lines, ``#`` or ``!`` comments, blank lines; values are taken literally);
3. environment variables ``TRENDING_KAFKA_<NAME>``, NAME being the setting upper-cased with
   ``.`` as ``_`` (``TRENDING_KAFKA_SASL_PASSWORD`` is ``sasl.password``);
4. ``--kafka-option KEY=VALUE`` flags.

Spark's Kafka source (the Java client) gets the same security settings under their Java names
(:func:`spark_options`); its explicit ``--spark-kafka-option`` flags win. The schema registry
client gets ``TRENDING_SCHEMA_REGISTRY_<NAME>`` (:func:`registry_settings`); the jobs' Spark
executors get the part of them they use (:func:`registry_access`).

Anything that prints settings, or text that may contain them, goes through :func:`masked`,
:func:`mask_url` or :func:`scrub`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trending.errors import UserError

CONFIG_ENV = "TRENDING_KAFKA_CONFIG"
KAFKA_ENV_PREFIX = "TRENDING_KAFKA_"
REGISTRY_ENV_PREFIX = "TRENDING_SCHEMA_REGISTRY_"
MASK = "***"
# A setting is a secret by its key, with or without a prefix (``kafka.``, ``spark.hadoop.``):
# passwords, secrets, tokens, JAAS configs, credentials, a registry's user info, the S3A access,
# secret and encryption keys (per bucket too), Azure account keys and SAS tokens, GCS private
# keys and key files, Kafka's PEM keys (ssl.key.pem, ssl.keystore.key)...
SECRET_KEY = re.compile(
    r"passw(?:or)?d|secret|token|jaas|credential|user\.?info|key\.pem|keyfile|(?:^|\.)sas\."
    r"|(?:access|secret|private|encryption|account|api|keystore|client)[._-]?key\b",
    re.IGNORECASE,
)
# ...unless the key names where or how to find one: a provider, a path, a switch, an endpoint
NOT_SECRET_KEY = re.compile(
    r"[._-](?:provider|path|type|enabled|endpoint|url|location|mechanism|binding)$"
    r"|(?<!key)file$",
    re.IGNORECASE,
)
# Where a URL starts: its scheme, not inside a word or another URL's userinfo
_URL_SCHEME = re.compile(r"(?<![\w+.:@%-])[A-Za-z][A-Za-z0-9+.-]*://")
_REGISTRY_NUMBERS = {
    "cache.capacity",
    "cache.latest.ttl.sec",
    "max.retries",
    "retries.wait.ms",
    "retries.max.wait.ms",
    "timeout",
}
PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
LOGIN_MODULES = {
    "PLAIN": PLAIN_MODULE,
    "SCRAM-SHA-256": SCRAM_MODULE,
    "SCRAM-SHA-512": SCRAM_MODULE,
}
_CREDENTIALS = {"sasl.username", "sasl.password"}


def parse_options(items: Sequence[str] | None, flag: str) -> dict[str, str]:
    """``["KEY=VALUE", ...]`` as a dict; a :class:`UserError` naming ``flag`` for a bad item."""
    options: dict[str, str] = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UserError(f"{flag} wants KEY=VALUE, got {shown_key(key)}")
        options[key.strip()] = value
    return options


def read_properties(path: str | Path) -> dict[str, str]:
    """The ``key=value`` lines of a properties file; a :class:`UserError` naming the file and
    line for a line without ``=``."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise UserError(f"cannot read Kafka settings file {path}: {error.strerror}") from error
    settings: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith(("#", "!")):
            continue
        key, sep, value = stripped.partition("=")
        if not sep or not key.strip():
            raise UserError(f"{path}, line {number}: expected key=value")
        settings[key.strip()] = value.strip()
    return settings


def env_settings(environ: Mapping[str, str], prefix: str) -> dict[str, str]:
    """Settings named by ``<prefix><NAME>`` variables: NAME lower-cased, ``_`` read as ``.``."""
    return {
        name[len(prefix) :].lower().replace("_", "."): value
        for name, value in sorted(environ.items())
        if name.startswith(prefix) and len(name) > len(prefix)
    }


def env_names(environ: Mapping[str, str], prefix: str) -> dict[str, str]:
    """The variable behind each setting :func:`env_settings` finds."""
    return {
        name[len(prefix) :].lower().replace("_", "."): name
        for name in sorted(environ)
        if name.startswith(prefix) and len(name) > len(prefix)
    }


def kafka_settings(
    config_file: str | None,
    options: Sequence[str] | None,
    environ: Mapping[str, str],
    defaults: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The librdkafka settings: ``defaults`` (the configuration file's ``[kafka]`` table), the
    properties file, then the environment, then the flags."""
    sources = kafka_sources(config_file, options, environ, defaults)
    return {key: value for key, (value, _) in sources.items()}


def kafka_sources(
    config_file: str | None,
    options: Sequence[str] | None,
    environ: Mapping[str, str],
    defaults: Mapping[str, str] | None = None,
    defaults_source: str = "config file [kafka]",
) -> dict[str, tuple[str, str]]:
    """Each librdkafka setting of :func:`kafka_settings` with where it comes from."""
    path = config_file or environ.get(CONFIG_ENV)
    variables = {k: v for k, v in environ.items() if k != CONFIG_ENV}
    names = env_names(variables, KAFKA_ENV_PREFIX)
    from_env = env_settings(variables, KAFKA_ENV_PREFIX)
    sources = {key: (value, defaults_source) for key, value in (defaults or {}).items()}
    if path:
        sources |= {key: (value, f"file {path}") for key, value in read_properties(path).items()}
    sources |= {key: (value, f"env {names[key]}") for key, value in from_env.items()}
    flags = parse_options(options, "--kafka-option")
    sources |= {key: (value, "flag --kafka-option") for key, value in flags.items()}
    return sources


def registry_settings(environ: Mapping[str, str]) -> dict[str, Any]:
    """The schema registry client's settings from ``TRENDING_SCHEMA_REGISTRY_<NAME>`` (the URL
    comes from ``--schema-registry-url`` or ``$SCHEMA_REGISTRY_URL``, never from here)."""
    settings: dict[str, Any] = env_settings(environ, REGISTRY_ENV_PREFIX)
    settings.pop("url", None)
    for key in _REGISTRY_NUMBERS & settings.keys():
        try:
            settings[key] = float(settings[key]) if "." in settings[key] else int(settings[key])
        except ValueError as error:
            raise UserError(f"schema registry setting {key} wants a number") from error
    return settings


# Settings of the Python registry client the executors' client understands (see SchemaRegistry.java)
EXECUTOR_REGISTRY_SETTINGS = (
    "basic.auth.user.info",
    "ssl.ca.location",
    "ssl.certificate.location",
    "ssl.key.location",
    "timeout",
    "max.retries",
)
UNSUPPORTED_REGISTRY_SETTINGS = ("bearer.auth.credentials.source", "ssl.key.password")


@dataclass(frozen=True)
class SchemaRegistryAccess:
    """Where the executors find writer schemas: the registry's URL (or URLs, comma-separated)
    and the client settings of ``TRENDING_SCHEMA_REGISTRY_<NAME>`` (they may hold secrets)."""

    url: str
    settings: Mapping[str, Any] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if not all(u.strip().startswith(("http://", "https://")) for u in self.url.split(",")):
            raise UserError(
                "the schema registry must be an http(s):// URL the Spark executors can reach "
                "(mock:// registries live inside one Python process)"
            )
        for name in UNSUPPORTED_REGISTRY_SETTINGS:
            if name in self.settings:
                raise UserError(f"schema registry setting {name} is not supported by the jobs")
        source = str(self.settings.get("basic.auth.credentials.source", "USER_INFO")).upper()
        if source not in ("USER_INFO", "URL"):
            raise UserError(f"basic.auth.credentials.source {source}: use USER_INFO or URL")

    def executor_settings_json(self) -> str:
        """The settings the executors' registry client takes, as JSON."""
        chosen = {k: str(v) for k, v in self.settings.items() if k in EXECUTOR_REGISTRY_SETTINGS}
        return json.dumps({"url": self.url, **chosen}, sort_keys=True)


def registry_access(url: str | None, environ: Mapping[str, str]) -> SchemaRegistryAccess | None:
    """The executors' access to the registry at ``url`` (None: values are bare Avro bodies)."""
    return SchemaRegistryAccess(url, registry_settings(environ)) if url else None


def spark_options(
    settings: Mapping[str, str], explicit: Mapping[str, str] | None = None
) -> dict[str, str]:
    """Options for Spark's Kafka source: the security ``settings`` (librdkafka names) in the
    Java client's names with the ``kafka.`` prefix, then the ``explicit`` Spark options, which
    win. Settings without a translation are not passed."""
    explicit = dict(explicit or {})
    given = {key if key.startswith("kafka.") else f"kafka.{key}" for key in explicit}
    translated = {**_protocol(settings), **_sasl(settings, given), **_ssl(settings, given)}
    return {**{k: v for k, v in translated.items() if k not in given}, **explicit}


def _protocol(settings: Mapping[str, str]) -> dict[str, str]:
    protocol = settings.get("security.protocol")
    return {"kafka.security.protocol": protocol.upper()} if protocol else {}


def _mechanism(settings: Mapping[str, str]) -> str | None:
    mechanism = settings.get("sasl.mechanism") or settings.get("sasl.mechanisms")
    return mechanism.strip().upper() if mechanism else None


def _sasl(settings: Mapping[str, str], given: set[str]) -> dict[str, str]:
    """``sasl.mechanism`` and, from ``sasl.username``/``sasl.password``, ``sasl.jaas.config``."""
    if not settings.get("security.protocol", "").upper().startswith("SASL"):
        return {}
    mechanism = _mechanism(settings)
    options = {"kafka.sasl.mechanism": mechanism} if mechanism else {}
    if "kafka.sasl.jaas.config" in given or not settings.keys() & _CREDENTIALS:
        return options
    module = LOGIN_MODULES.get(mechanism or "GSSAPI")
    if module is None:
        raise _untranslated("sasl.username/sasl.password", f"mechanism {mechanism or 'GSSAPI'}")
    username, password = settings.get("sasl.username", ""), settings.get("sasl.password", "")
    options["kafka.sasl.jaas.config"] = jaas_config(module, username, password)
    return options


def jaas_config(module: str, username: str, password: str) -> str:
    """A ``sasl.jaas.config`` value logging in with ``username`` and ``password``."""
    return f'{module} required username="{jaas_quote(username)}" password="{jaas_quote(password)}";'


def jaas_quote(value: str) -> str:
    """``value`` escaped for a double-quoted JAAS option (backslash, quote, line breaks)."""
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return escaped.replace("\n", "\\n").replace("\r", "\\r")


def _ssl(settings: Mapping[str, str], given: set[str]) -> dict[str, str]:
    """The CA (a PEM truststore), the client certificate and key (a PEM keystore, when both are
    in one file), the key's password and host name verification."""
    options: dict[str, str] = {}
    ca = settings.get("ssl.ca.location")
    if ca and ca != "probe" and "kafka.ssl.truststore.location" not in given:
        if Path(ca).is_dir():
            raise _untranslated("ssl.ca.location", "a directory of certificates")
        options |= {"kafka.ssl.truststore.location": ca, "kafka.ssl.truststore.type": "PEM"}
    options |= _keystore(settings, given)
    algorithm = settings.get("ssl.endpoint.identification.algorithm")
    if algorithm is not None:  # librdkafka's "none" is the Java client's empty value
        options["kafka.ssl.endpoint.identification.algorithm"] = algorithm.replace("none", "")
    return options


def _keystore(settings: Mapping[str, str], given: set[str]) -> dict[str, str]:
    certificate = settings.get("ssl.certificate.location")
    key = settings.get("ssl.key.location")
    if not (certificate or key) or "kafka.ssl.keystore.location" in given:
        return {}
    if certificate != key:
        raise _untranslated("ssl.certificate.location/ssl.key.location", "two files")
    options = {"kafka.ssl.keystore.location": key or "", "kafka.ssl.keystore.type": "PEM"}
    if "ssl.key.password" in settings:
        options["kafka.ssl.key.password"] = settings["ssl.key.password"]
    return options


def _untranslated(setting: str, why: str) -> UserError:
    return UserError(
        f"the Kafka setting {setting} ({why}) has no translation for Spark's Kafka source: "
        "pass the Java client's settings with --spark-kafka-option kafka.KEY=VALUE"
    )


def is_secret(key: str) -> bool:
    """Whether the value of setting ``key`` is a secret (a password, key, token, ...)."""
    return SECRET_KEY.search(key) is not None and NOT_SECRET_KEY.search(key) is None


def has_url_credentials(value: str) -> bool:
    """Whether ``value`` holds a URL with userinfo (``scheme://user:password@host``)."""
    return mask_url(value) != value


def carries_secret(key: str, value: str) -> bool:
    """Whether setting ``key`` = ``value`` carries a secret: by its key or in a URL's userinfo."""
    return is_secret(key) or has_url_credentials(value)


def mask_url(text: str) -> str:
    """``text`` with the userinfo of every URL in it (``scheme://user:pass@``) as ``***``.

    The userinfo runs from the ``//`` to the last ``@`` of the URL, the URL ending at white
    space or where the next URL starts: a password with ``@``, ``/``, ``:`` or ``%40`` in it is
    hidden whole. An ``@`` later in a URL (in its path or query) hides what precedes it too:
    better too much than the tail of a password.
    """
    matches = list(_URL_SCHEME.finditer(text))
    pieces, done = [], 0
    for number, match in enumerate(matches, start=1):
        start, end = match.end(), matches[number].start() if number < len(matches) else len(text)
        userinfo = re.split(r"\s", text[start:end], maxsplit=1)[0].rfind("@")
        if userinfo > 0:
            pieces += [text[done:start], MASK]
            done = start + userinfo
    return "".join([*pieces, text[done:]])


def masked(settings: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``settings`` fit to print: secrets and URL userinfo as ``***``."""
    return {
        key: MASK if is_secret(key) else mask_url(value) if isinstance(value, str) else value
        for key, value in settings.items()
    }


def masked_items(items: Sequence[str]) -> list[str]:
    """``KEY=VALUE`` items fit to print: a secret's value and URL userinfo as ``***``."""
    shown = []
    for item in items:
        key, sep, _ = item.partition("=")
        shown.append(f"{key}={MASK}" if sep and is_secret(key) else mask_url(item))
    return shown


def shown_key(key: str) -> str:
    """``key`` (an item that should have been ``KEY=VALUE``) fit to print in an error: cut
    after the word that makes it a secret's, and without URL userinfo."""
    found = SECRET_KEY.search(key)
    return repr(key[: found.end()]) + "..." if found else repr(mask_url(key))


def scrub(text: str, settings: Mapping[str, Any]) -> str:
    """``text`` (an error message, say) with every secret value of ``settings`` and every URL
    userinfo replaced by ``***``."""
    secrets = {str(v) for k, v in settings.items() if is_secret(k) and str(v)}
    for secret in sorted(secrets, key=len, reverse=True):
        text = text.replace(secret, MASK)
    return mask_url(text)
