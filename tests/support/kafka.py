"""Reading a whole topic back, for assertions."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from connectors.kafka import consumer


@dataclass(frozen=True)
class Record:
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()


def read_all(bootstrap: str, topic: str, timeout: float = 30.0) -> list[Record]:
    """Every committed record of ``topic`` (``read_committed``), by partition then offset.

    Reads each partition up to the end it has when called (the last stable offset).
    """
    client = consumer(bootstrap, from_beginning=True)
    try:
        ends = _ends(client, topic, timeout)
        client.assign([TopicPartition(topic, p, 0) for p in ends])
        records = _read_until(client, topic, ends, time.monotonic() + timeout)
    finally:
        client.close()
    return sorted(records, key=lambda r: (r.partition, r.offset))


_ELECTING = {KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE}


def _ends(client: Consumer, topic: str, timeout: float) -> dict[int, int]:
    """Each partition's end offset, waiting out a partition whose leader is not elected yet.

    A topic the job under test has just created may answer "not leader" for a moment; a reader
    polling for the job's results must wait, not fail.
    """
    deadline = time.monotonic() + timeout
    while True:
        metadata = client.list_topics(topic, timeout=timeout).topics[topic]
        if metadata.error is not None:
            raise AssertionError(f"topic {topic}: {metadata.error}")
        try:
            return {
                p: client.get_watermark_offsets(TopicPartition(topic, p), timeout=timeout)[1]
                for p in metadata.partitions
            }
        except KafkaException as error:
            if error.args[0].code() not in _ELECTING or time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def _read_until(
    client: Consumer, topic: str, ends: dict[int, int], deadline: float
) -> list[Record]:
    records: list[Record] = []
    pending = {p for p, end in ends.items() if end > 0}
    while pending:
        if time.monotonic() > deadline:
            raise AssertionError(f"partitions {sorted(pending)} not read to the end in time")
        for message in client.consume(10_000, timeout=0.5):
            if message.error() is not None:
                raise AssertionError(f"consumer error: {message.error()}")
            partition, offset = message.partition(), message.offset()
            assert partition is not None and offset is not None
            headers = tuple(message.headers() or ())
            records.append(Record(partition, offset, message.key(), message.value(), headers))
        for position in client.position([TopicPartition(topic, p) for p in pending]):
            if position.offset >= ends[position.partition]:
                pending.discard(position.partition)
    return records


def write_denied(topic: str) -> Any:
    """The ACL that denies every unauthenticated client writes to ``topic``."""
    from confluent_kafka.admin import (
        AclBinding,
        AclOperation,
        AclPermissionType,
        ResourcePatternType,
        ResourceType,
    )

    return AclBinding(
        ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, "User:ANONYMOUS", "*",
        AclOperation.WRITE, AclPermissionType.DENY,
    )  # fmt: skip


def change_acls(bootstrap: str, create: Any = None, delete: Any = None) -> None:
    """Create the ACL binding ``create`` or delete those matching ``delete``; waits for it."""
    from connectors.kafka import admin

    client = admin(bootstrap)  # kept alive until its answer came
    if create is not None:
        futures = list(client.create_acls([create]).values())
    else:
        futures = list(client.delete_acls([_acl_filter(delete)]).values())
    for future in futures:
        future.result(timeout=30)
    # the broker applies ACLs from its metadata log: wait until it describes the change
    binding, present = (create, True) if create is not None else (delete, False)
    deadline = time.monotonic() + 30
    while _acl_listed(client, binding) != present:
        assert time.monotonic() < deadline, f"ACL change not applied after 30 s: {binding}"
        time.sleep(0.1)


def _acl_filter(binding: Any) -> Any:
    """The filter that matches exactly the ACL ``binding``."""
    from confluent_kafka.admin import AclBindingFilter

    return AclBindingFilter(
        binding.restype, binding.name, binding.resource_pattern_type, binding.principal,
        binding.host, binding.operation, binding.permission_type,
    )  # fmt: skip


def _acl_listed(client: Any, binding: Any) -> bool:
    """Whether the broker's ACLs include ``binding`` exactly."""
    return bool(client.describe_acls(_acl_filter(binding)).result(timeout=30))


def delete_topic(bootstrap: str, topic: str, timeout: float = 30.0) -> None:
    """Delete ``topic`` and wait until the broker no longer lists it."""
    from connectors.kafka import admin

    client = admin(bootstrap)
    for future in client.delete_topics([topic]).values():
        future.result(timeout=timeout)
    deadline = time.monotonic() + timeout
    while topic in client.list_topics(timeout=timeout).topics:
        assert time.monotonic() < deadline, f"topic {topic} still listed after deletion"
        time.sleep(0.2)
