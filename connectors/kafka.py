"""Kafka clients (confluent-kafka / librdkafka): settings, topics, a checked producer, consumers.

Security settings (``security.protocol``, ``sasl.*``, ``ssl.*``, ...) reach every client from the
configuration file's ``[kafka]`` table, a properties file, ``TRENDING_KAFKA_*`` variables and
``--kafka-option`` flags, in that order of precedence (see :mod:`connectors.kafka_settings`);
errors never echo their secret values.
"""

from __future__ import annotations

import argparse
import logging
import os
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin._config import ConfigResource
from confluent_kafka.cimpl import NewTopic

from connectors.kafka_settings import CONFIG_ENV, kafka_settings, parse_options, scrub
from trending.errors import UserError
from trending.status import kafka_log_settings

BOOTSTRAP_ENV = "KAFKA_BOOTSTRAP_SERVERS"
# The namespace attribute holding the configuration file's [kafka] table (see trending.config)
FILE_SETTINGS_DEST = "kafka_file_settings"
DEFAULT_BOOTSTRAP = "127.0.0.1:9092"
Config = dict[str, Any]
KeyValue = tuple[bytes | None, bytes]
Routed = tuple[bytes | None, bytes, int]
T = TypeVar("T")
log = logging.getLogger(__name__)


class DeliveryError(RuntimeError):
    """Some produced records were not acknowledged by the broker."""


class CredentialsRefused(UserError):
    """The broker refused the client's SASL credentials."""


def resolve_bootstrap(value: str | None) -> str:
    """``value``, else ``$KAFKA_BOOTSTRAP_SERVERS``, else ``127.0.0.1:9092``."""
    return value or os.environ.get(BOOTSTRAP_ENV) or DEFAULT_BOOTSTRAP


def parse_kafka_options(
    items: Sequence[str] | None, flag: str = "--kafka-option"
) -> dict[str, str]:
    """``["KEY=VALUE", ...]`` as a dict; a :class:`UserError` naming ``flag`` for a bad item."""
    return parse_options(items, flag)


def add_kafka_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--bootstrap-servers``, ``--kafka-config FILE`` and the repeatable
    ``--kafka-option KEY=VALUE``."""
    parser.add_argument(
        "--bootstrap-servers",
        metavar="HOST:PORT[,...]",
        help=f"Kafka brokers (default: ${BOOTSTRAP_ENV}, else bootstrap.servers of the Kafka "
        f"settings, else {DEFAULT_BOOTSTRAP})",
    )
    parser.add_argument(
        "--kafka-config",
        metavar="FILE",
        help=f"a properties file of librdkafka settings for every client (default: ${CONFIG_ENV}); "
        "$TRENDING_KAFKA_<NAME> variables (sasl.password: $TRENDING_KAFKA_SASL_PASSWORD) "
        "and --kafka-option override it",
    )
    parser.add_argument(
        "--kafka-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a librdkafka setting for every client, e.g. security.protocol=SASL_SSL (repeatable; "
        "secrets are better kept out of the command line: use the file or the environment)",
    )


def kafka_from_args(
    args: argparse.Namespace, environ: Mapping[str, str] | None = None
) -> tuple[str, dict[str, str]]:
    """The bootstrap address and the client settings given by :func:`add_kafka_arguments`,
    the settings file and the ``TRENDING_KAFKA_*`` variables of ``environ`` (the process's)."""
    environ = os.environ if environ is None else environ
    defaults = getattr(args, FILE_SETTINGS_DEST, None)
    settings = kafka_settings(args.kafka_config, args.kafka_option, environ, defaults)
    configured = settings.pop("bootstrap.servers", None)
    bootstrap = args.bootstrap_servers or environ.get(BOOTSTRAP_ENV) or configured
    return bootstrap or DEFAULT_BOOTSTRAP, settings


def client_config(bootstrap: str, extra: Mapping[str, str] | None = None) -> Config:
    """Settings shared by every client: the brokers plus the user's extra options (and, under
    ``--log-format json``, the logger that makes librdkafka's lines JSON too)."""
    config: Config = {"bootstrap.servers": bootstrap, "client.id": "trending", **(extra or {})}
    return config | kafka_log_settings()


def _build(kind: Callable[[Config], T], config: Config) -> T:
    try:
        return kind(config)
    except (KafkaException, ValueError, TypeError) as error:
        message = scrub(str(error), config)  # librdkafka may quote the value it refused
        raise UserError(f"invalid Kafka client settings: {message}") from None


def admin(bootstrap: str, extra: Mapping[str, str] | None = None) -> AdminClient:
    """An admin client."""
    return _build(AdminClient, client_config(bootstrap, extra))


def ensure_topics(
    bootstrap: str,
    topics: Iterable[str],
    partitions: int = 4,
    extra: Mapping[str, str] | None = None,
    *,
    config: Mapping[str, str] | None = None,
    timeout: float = 30.0,
) -> list[str]:
    """Create the missing ``topics``; return the names created.

    The replication factor is ``min(3, brokers)``. A topic another client created meanwhile
    counts as existing. Waits until every topic has a leader for each partition. A broker that
    is briefly unreachable (restarting, say) is asked again until ``timeout`` has passed.
    """
    client = admin(bootstrap, extra)
    deadline = time.monotonic() + timeout
    wanted = list(dict.fromkeys(topics))
    metadata = cluster_metadata(client, bootstrap, deadline)
    missing = [t for t in wanted if t not in metadata.topics]
    replicas = min(3, max(1, len(metadata.brokers)))
    new = [NewTopic(t, partitions, replicas, config=dict(config or {})) for t in missing]
    created = []
    for topic, future in client.create_topics(new, request_timeout=timeout).items() if new else ():
        try:
            future.result()
            created.append(topic)
        except KafkaException as error:
            if error.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise UserError(f"could not create topic {topic}: {error.args[0].str()}") from error
    _wait_for_leaders(client, bootstrap, wanted, deadline)
    return created


# librdkafka's codes for a broker that did not answer (down, restarting, unreachable)
UNREACHABLE = frozenset(
    {KafkaError._TRANSPORT, KafkaError._TIMED_OUT, KafkaError._ALL_BROKERS_DOWN}
)


def cluster_metadata(
    client: AdminClient, bootstrap: str, deadline: float, topic: str | None = None
) -> Any:
    """The cluster's metadata (of all topics, or only ``topic``), asked again while no broker
    answers, until ``deadline`` (``time.monotonic()``); then a :class:`UserError` naming
    ``bootstrap``. Logs one warning on the first failure, not one per try."""
    warned = False
    while True:
        try:
            return client.list_topics(topic, timeout=max(1.0, deadline - time.monotonic()))
        except KafkaException as error:
            code, reason = error.args[0].code(), error.args[0].str()
            if code not in UNREACHABLE:
                raise UserError(f"Kafka at {bootstrap} refused metadata: {reason}") from error
            if time.monotonic() >= deadline:
                raise UserError(f"no answer from Kafka at {bootstrap}: {reason}") from error
            if not warned:
                log.warning("no answer from Kafka at %s (%s); asking again", bootstrap, reason)
                warned = True
            time.sleep(0.5)


def _wait_for_leaders(
    client: AdminClient, bootstrap: str, topics: list[str], deadline: float
) -> None:
    while True:
        metadata = cluster_metadata(client, bootstrap, deadline)
        pending = [
            t
            for t in topics
            if t not in metadata.topics
            or metadata.topics[t].error is not None
            or any(p.leader < 0 for p in metadata.topics[t].partitions.values())
        ]
        if not pending:
            return
        if time.monotonic() > deadline:
            raise UserError(f"topics still have no leader: {', '.join(pending)}")
        time.sleep(0.1)


def topic_max_message_bytes(
    bootstrap: str, topics: list[str], extra: Mapping[str, str] | None = None
) -> dict[str, int]:
    """Each topic's ``max.message.bytes``; a topic whose configuration cannot be read (missing,
    or no DescribeConfigs permission) is left out."""
    client = admin(bootstrap, extra)
    resources = [ConfigResource(ConfigResource.Type.TOPIC, topic) for topic in topics]
    limits: dict[str, int] = {}
    for resource, future in client.describe_configs(resources, request_timeout=30).items():
        try:
            entry = future.result(30).get("max.message.bytes")
        except KafkaException as error:
            log.warning("cannot read the configuration of topic %s: %s", resource.name, error)
            continue
        if entry is not None and entry.value is not None:
            limits[resource.name] = int(entry.value)
    return limits


def partition_count(bootstrap: str, topic: str, extra: Mapping[str, str] | None = None) -> int:
    """The number of partitions of ``topic`` (0 when it does not exist)."""
    client, deadline = admin(bootstrap, extra), time.monotonic() + 10
    topics = cluster_metadata(client, bootstrap, deadline, topic).topics
    found = topics.get(topic)
    return 0 if found is None or found.error is not None else len(found.partitions)


def end_offsets(
    bootstrap: str, topic: str, extra: Mapping[str, str] | None = None, timeout: float = 10.0
) -> dict[int, tuple[int, int]]:
    """Each partition of ``topic``'s low and high watermarks (its first offset and the next
    one to be written); empty when the topic does not exist."""
    client = consumer(bootstrap, extra)
    try:
        found = client.list_topics(topic, timeout=timeout).topics.get(topic)
        if found is None or found.error is not None:
            return {}
        ends: dict[int, tuple[int, int]] = {}
        for p in found.partitions:
            low, high = client.get_watermark_offsets(TopicPartition(topic, p), timeout=timeout)
            ends[p] = (int(low), int(high))
        return ends
    finally:
        client.close()


class CheckedProducer:
    """A producer that never loses a failure: :meth:`flush` raises on any delivery error.

    librdkafka reports only failed deliveries (``delivery.report.only.error``), so a clean
    :meth:`flush` means every record was acknowledged.
    """

    def __init__(self, config: Config) -> None:
        self.failed = 0
        self.errors: list[str] = []
        self.client: Producer = _build(
            Producer, {**config, "on_delivery": self._on_delivery, "error_cb": self._on_error}
        )

    def _on_delivery(self, error: KafkaError | None, message: Any) -> None:
        if error is not None:
            self.failed += 1
            if len(self.errors) < 5:
                self.errors.append(f"{message.topic()}[{message.partition()}]: {error.str()}")

    def _on_error(self, error: KafkaError) -> None:
        if error.fatal():
            self.failed += 1
            self.errors.append(f"fatal producer error: {error.str()}")

    def produce(
        self,
        topic: str,
        value: bytes,
        key: bytes | None = None,
        partition: int = -1,
        *,
        headers: Sequence[tuple[str, bytes | None]] = (),
        timestamp_ms: int = 0,
    ) -> None:
        """Queue one record, waiting for room in the queue when it is full (``timestamp_ms``
        0: the producer's clock)."""
        extra: dict[str, Any] = {"timestamp": timestamp_ms}
        if headers:
            extra["headers"] = list(headers)
        while True:
            try:
                self.client.produce(topic, value, key, partition, **extra)
                return
            except BufferError:
                self.client.poll(0.05)

    def produce_many(
        self,
        topic: str,
        records: Iterable[KeyValue],
        *,
        partitions: int = 0,
        rate: float | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> int:
        """Queue all ``records``; return how many. Does not flush.

        ``partitions > 0`` spreads records round-robin over that many partitions (else the
        key decides); ``rate`` caps records per second of wall time; ``progress(n)`` is
        called every few thousand records with the count so far.
        """
        produce, poll, start, count = self.client.produce, self.client.poll, time.monotonic(), 0
        for key, value in records:
            part = count % partitions if partitions else -1
            try:
                produce(topic, value, key, part)
            except BufferError:
                poll(0.05)
                self.produce(topic, value, key, part)
            count += 1
            if count & 0x3FF == 0:
                poll(0)
                if progress is not None and count & 0x3FFF == 0:
                    progress(count)
            if rate is not None and count % max(1, int(rate) // 50) == 0:
                _pace(start, count, rate)
        if progress is not None:
            progress(count)
        return count

    def produce_routed(
        self,
        topic: str,
        records: Iterable[Routed],
        *,
        rate: float | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> int:
        """Queue all ``records``, each ``(key, value, partition)``; return how many.

        A partition of ``-1`` leaves the choice to the default partitioner (by key). Does not
        flush; ``rate`` and ``progress`` as in :meth:`produce_many`.
        """
        produce, poll, start, count = self.client.produce, self.client.poll, time.monotonic(), 0
        for key, value, part in records:
            try:
                produce(topic, value, key, part)
            except BufferError:
                poll(0.05)
                self.produce(topic, value, key, part)
            count += 1
            if count & 0x3FF == 0:
                poll(0)
                if progress is not None and count & 0x3FFF == 0:
                    progress(count)
            if rate is not None and count % max(1, int(rate) // 50) == 0:
                _pace(start, count, rate)
        if progress is not None:
            progress(count)
        return count

    def flush(self, timeout: float = 120.0) -> None:
        """Wait for every queued record; raise :class:`DeliveryError` if any failed."""
        remaining = self.client.flush(timeout)
        if remaining:
            raise DeliveryError(f"{remaining} records still unacknowledged after {timeout:.0f} s")
        if self.failed:
            detail = "; ".join(self.errors)
            raise DeliveryError(f"{self.failed} records failed delivery: {detail}")


def _pace(start: float, count: int, rate: float) -> None:
    ahead = count / rate - (time.monotonic() - start)
    if ahead > 0:
        time.sleep(ahead)


def producer(
    bootstrap: str,
    extra: Mapping[str, str] | None = None,
    *,
    compression: str = "lz4",
    linger_ms: int = 5,
    transactional_id: str | None = None,
    settings: Mapping[str, Any] | None = None,
) -> CheckedProducer:
    """An idempotent, compressing producer (``settings`` override any default)."""
    config: Config = {
        **client_config(bootstrap, extra),
        "enable.idempotence": True,
        "compression.type": compression,
        "linger.ms": linger_ms,
        "batch.size": 1_000_000,
        "queue.buffering.max.messages": 500_000,
        "delivery.report.only.error": True,
    }
    if transactional_id is not None:
        config["transactional.id"] = transactional_id
    return CheckedProducer({**config, **(settings or {})})


def consumer(
    bootstrap: str,
    extra: Mapping[str, str] | None = None,
    *,
    group_id: str | None = None,
    from_beginning: bool = True,
    settings: Mapping[str, Any] | None = None,
) -> Consumer:
    """A ``read_committed`` consumer; without ``group_id`` a fresh group that never commits."""
    config: Config = {
        **client_config(bootstrap, extra),
        "group.id": group_id or f"trending-{uuid.uuid4().hex[:12]}",
        "enable.auto.commit": group_id is not None,
        "auto.offset.reset": "earliest" if from_beginning else "latest",
        "isolation.level": "read_committed",
        "enable.partition.eof": False,
    }
    return _build(Consumer, {**config, **(settings or {})})


def wait_for_kafka(
    bootstrap: str, timeout: float = 60.0, extra: Mapping[str, str] | None = None
) -> None:
    """Block until a metadata request to ``bootstrap`` lists a broker, else a :class:`UserError`
    (at once when the broker refuses the credentials)."""
    refused: list[KafkaError] = []

    def on_error(error: KafkaError) -> None:
        if error.code() == KafkaError._AUTHENTICATION:
            refused.append(error)

    settings = {"log_level": "0", **(extra or {})}
    client = _build(AdminClient, {**client_config(bootstrap, settings), "error_cb": on_error})
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not refused:
        try:
            if client.list_topics(timeout=1.0).brokers:
                return
        except KafkaException:
            pass
        client.poll(0.1)  # serves error_cb
    if refused:
        reason = scrub(refused[0].str(), settings).replace("\n", " ")
        raise CredentialsRefused(f"Kafka at {bootstrap} refused the credentials: {reason}")
    raise UserError(f"no Kafka broker answers at {bootstrap} after {timeout:.0f} s")
