"""Debezium's kafka signal channel (`signal.enabled.channels` with kafka), read when a batch is planned.

As Debezium's KafkaSignalChannel: partition 0 of `signal.kafka.topic` (<topic.prefix>-signal by default),
records whose key is the connector's `topic.prefix` (others are skipped), values
`{"id": ..., "type": ..., "data": {...}}`. Where Debezium's consumer commits to `signal.kafka.groupId`, a
plan reads from the position kept in the connector's offsets (KAFKA_POSITION) up to the partition's end and
puts the new position in the batch's end offset. The plan is stored before the batch runs and the offset is
committed with the batch's records, so a crash between the two runs the same plan again: each signal is
applied once. A connector without a position starts at the group's committed offset, else the topic's start
(Debezium's auto.offset.reset=earliest).
"""

from __future__ import annotations

import json
import uuid

from connectors.mysql import config as C
from ingest.errors import ConfigError, Problem, RetriableError

KAFKA_POSITION = "lakeconnect.signals.kafka"
"""In an offset: the next offset of the signal topic's partition 0 to read."""
_TIMEOUT_S = 30.0
MAX_SIGNALS = 10_000
"""Signal records a plan reads at most (a batch's memory stays bounded whatever the topic holds); the rest are
read by the next batches, from the position after the last one read."""


def consumer_settings(config) -> dict[str, str]:
    """librdkafka settings: signal.consumer.* (Kafka's client keys, passed on as they are), the bootstrap
    servers and group of the channel's own keys."""
    settings = {k[len(C.SIGNAL_CONSUMER_PREFIX):]: str(v) for k, v in config.originals.items()
                if k.startswith(C.SIGNAL_CONSUMER_PREFIX)}
    for java in ("key.deserializer", "value.deserializer"):
        settings.pop(java, None)
    return {**settings, "bootstrap.servers": str(config[C.SIGNAL_KAFKA_BOOTSTRAP]).strip(),
            "group.id": str(config[C.SIGNAL_KAFKA_GROUP]), "enable.auto.commit": "false",
            "client.id": f"lakeconnect-signal-{uuid.uuid4().hex[:8]}"}


def read_signals(config, position: int | None, log) -> tuple[list[tuple[str, str, str | None]], int | None]:
    """The signals sent since `position` as (id, type, data) rows, and the position after them (None when the
    topic does not exist yet)."""
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    topic, prefix = C.signal_topic(config), str(config[C.TOPIC_PREFIX])
    where = f"signal topic '{topic}' at {config[C.SIGNAL_KAFKA_BOOTSTRAP]} ({C.SIGNAL_KAFKA_BOOTSTRAP})"
    try:
        consumer = Consumer(consumer_settings(config))
    except KafkaException as e:
        from ingest.topics.kafka import describe_client_error

        raise ConfigError([Problem(C.SIGNAL_CONSUMER_PREFIX + "*", f"the kafka signal channel's consumer cannot be "
                                   f"made ({describe_client_error(e)}); use librdkafka's names for its settings")])
    try:
        found = consumer.list_topics(topic, timeout=_TIMEOUT_S).topics.get(topic)
        if found is None or found.error is not None or 0 not in found.partitions:
            log.warning(f"{where} does not exist: no kafka signals read; create it with one partition")
            return [], position
        tp = TopicPartition(topic, 0)
        low, high = consumer.get_watermark_offsets(tp, timeout=_TIMEOUT_S)
        if position is None:
            committed = consumer.committed([tp], timeout=_TIMEOUT_S)[0].offset
            position = committed if committed >= 0 else low
        start = max(position, low)
        rows: list[tuple[str, str, str | None]] = []
        if start >= high:
            return rows, high
        consumer.assign([TopicPartition(topic, 0, start)])
        next_offset = start
        while next_offset < high and next_offset - start < MAX_SIGNALS:
            msg = consumer.poll(_TIMEOUT_S)
            if msg is None:
                raise RetriableError(f"{where}: offsets {next_offset} to {high - 1} could not be fetched within "
                                     f"{_TIMEOUT_S:g}s; nothing was emitted or committed, the next run reads them")
            if msg.error():
                raise KafkaException(msg.error())
            next_offset = msg.offset() + 1
            row = _signal_row(msg.key(), msg.value(), prefix, msg.offset(), log)
            if row is not None:
                rows.append(row)
        return rows, next_offset
    except KafkaException as e:
        from ingest.topics.kafka import describe_client_error

        raise RetriableError(f"cannot read the {where}: {describe_client_error(e)}; check that the brokers are up "
                             "and that the key names them; nothing was emitted or committed") from e
    finally:
        consumer.close()


def _signal_row(key: bytes | None, value: bytes | None, prefix: str, offset: int,
                log) -> tuple[str, str, str | None] | None:
    """A record as a signal row (id, type, data); None, with a log line, for one Debezium skips."""
    if (key or b"").decode("utf-8", "replace") != prefix:
        log.info(f"kafka signal at offset {offset}: its key is not the connector's topic.prefix '{prefix}' "
                 "(skipped, as Debezium)")
        return None
    if not value:
        return None
    try:
        doc = json.loads(value)
    except ValueError as e:
        log.warning(f"kafka signal at offset {offset}: the value is not JSON ({e}); expected "
                    '{"id": ..., "type": "execute-snapshot", "data": {...}} (the record was ignored)')
        return None
    if not isinstance(doc, dict):
        log.warning(f"kafka signal at offset {offset}: the value must be a JSON object with id, type and data "
                    "(the record was ignored)")
        return None
    data = doc.get("data")
    return (str(doc.get("id") if doc.get("id") is not None else f"kafka-{offset}"), str(doc.get("type") or ""),
            json.dumps(data) if data is not None else None)
