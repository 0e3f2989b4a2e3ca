"""Where a worker's topics live (`topic.backend`): Delta tables under the lake (the default) or a Kafka
cluster. The runner and the topic tools ask a backend for a topic by name and for the topics it has;
both kinds of topic answer the same calls (create, describe, append, read)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ingest.errors import ConfigError, Problem
from ingest.config.worker import TOPIC_BACKEND
from ingest.topics.kafka import (
    DELTA, KAFKA, BatchMarkers, GroupOffset, KafkaClients, KafkaTopic, commit_group, delete_group,
    forget_group_offsets, group_positions, list_kafka_topics,
)
from ingest.topics.table import TopicTable, list_topics


@dataclass(frozen=True)
class DeltaTopics:
    lake_root: str
    storage_options: dict[str, str] | None = field(default=None, repr=False)
    kind = DELTA

    def topic(self, name: str) -> TopicTable:
        return TopicTable(self.lake_root, name, storage_options=self.storage_options or None)

    def names(self) -> list[str]:
        return list_topics(self.lake_root, self.storage_options)

    def group_positions(self, group: str, partitions: Sequence[tuple[str, int]]) -> dict[tuple[str, int], GroupOffset]:
        return {}  # a sink's positions live in the lake's offsets table only

    def commit_group(self, group: str, offsets: Mapping[tuple[str, int], int]) -> None:
        pass

    def delete_group(self, group: str) -> None:
        pass

    def forget_group_offsets(self, group: str, partitions: Sequence[tuple[str, int]]) -> None:
        pass

    def batch_mark(self) -> int | None:
        return None  # Delta appends are idempotent by (app_id, batch) on their own


@dataclass(frozen=True)
class KafkaTopics:
    clients: KafkaClients
    kind = KAFKA

    def topic(self, name: str) -> KafkaTopic:
        return KafkaTopic(self.clients, name)

    def names(self) -> list[str]:
        return list_kafka_topics(self.clients)

    def group_positions(self, group: str, partitions: Sequence[tuple[str, int]]) -> dict[tuple[str, int], GroupOffset]:
        """The sink's consumer group (`connect-<name>`): where Kafka's tools and a connector re-created on
        another lake look; the lake's offsets table is where runs look first."""
        return group_positions(self.clients, group, partitions)

    def commit_group(self, group: str, offsets: Mapping[tuple[str, int], int]) -> None:
        commit_group(self.clients, group, offsets)

    def delete_group(self, group: str) -> None:
        delete_group(self.clients, group)

    def forget_group_offsets(self, group: str, partitions: Sequence[tuple[str, int]]) -> None:
        forget_group_offsets(self.clients, group, partitions)

    def batch_mark(self) -> int | None:
        """Where the batch markers of a batch planned now start (None without transactions): stored with the
        plan, so a resumed batch reads only the markers written since."""
        tx = self.clients.transactions
        return BatchMarkers(self.clients, tx.markers_topic).end() if tx is not None else None


def open_topics(worker: Mapping[str, Any], lake_root: str, storage_options: Mapping[str, str] | None = None,
                connector: Mapping[str, Any] | None = None, *, transactional: bool = True) -> DeltaTopics | KafkaTopics:
    """The worker's topic backend; for Kafka, with the clients of `connector` (its raw config) when given,
    and without transactions when not `transactional` (a console producer, as Kafka's)."""
    kind = str(worker.get(TOPIC_BACKEND) or DELTA).lower()
    if kind == DELTA:
        return DeltaTopics(lake_root, dict(storage_options) if storage_options else None)
    if kind == KAFKA:
        clients = KafkaClients.from_configs(worker, connector)
        return KafkaTopics(clients if transactional else replace(clients, transactions=None))
    raise ConfigError([Problem(TOPIC_BACKEND, f"must be {DELTA} or {KAFKA}, not {kind!r}")])
