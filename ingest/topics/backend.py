"""Where a worker's topics live (`topic.backend`): Delta tables under the lake (the default) or a Kafka
cluster. The runner and the topic tools ask a backend (`TopicBackend`) for a topic by name and for the
topics it has; both kinds of topic answer the same calls (`Topic`: create, describe, append, read). What
differs between them is said by the backend's flags, never found out by asking which class it is."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from ingest.errors import ConfigError, Problem
from ingest.config.worker import TOPIC_BACKEND
from ingest.topics.kafka import (
    DELTA, KAFKA, BatchMarkers, GroupOffset, KafkaClients, KafkaTopic, commit_group, delete_group,
    forget_group_offsets, group_positions, list_kafka_topics,
)
from ingest.topics.many import append_topics
from ingest.topics.table import AppendResult, TopicDescription, TopicTable, list_topics

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


class Topic(Protocol):
    """One topic, wherever it lives."""

    name: str

    def exists(self) -> bool: ...

    def create(self, partitions: int, configs: Mapping[str, Any] | None = None, *, if_not_exists: bool = False,
               replication_factor: int = -1, replication_key: str = "") -> TopicDescription: ...

    def alter_configs(self, updates: Mapping[str, Any], deletes: Sequence[str] = ()) -> dict[str, str]: ...

    def describe(self) -> TopicDescription: ...

    def end_offsets(self) -> dict[int, int]: ...

    def append(self, df: DataFrame, *, app_id: str, version: int, **options: Any) -> AppendResult | None:
        """The records of `df`, idempotently as (app_id, version) where the backend can (see its flags)."""
        ...

    def first_record(self, ranges: Mapping[int, tuple[int, int]]) -> dict[str, bytes | None] | None:
        """The key and value of the first record of the ranges, without a Spark job; None when it would need one."""
        ...

    def read(self, ranges: Mapping[int, tuple[int, int]] | None = None, *,
             spark: SparkSession | None = None) -> DataFrame: ...


class TopicBackend(Protocol):
    kind: ClassVar[str]
    atomic_appends: ClassVar[bool]
    """A failed append leaves nothing behind (one table commit): a batch may be converted and appended again."""
    remote_reads: ClassVar[bool]
    """Reading fetches the records over the network: a batch read twice is fetched twice (the runner keeps it)."""

    def topic(self, name: str) -> Topic: ...

    def names(self) -> list[str]: ...

    def append_together(self, appends: Sequence[tuple[Topic, DataFrame]], *, app_id: str,
                        version: int) -> dict[int, AppendResult]:
        """Appends of many topics in as few Spark jobs as the backend can: the results of those it wrote, by
        their index in `appends` (the others are the caller's to append one by one)."""
        ...

    def group_positions(self, group: str, partitions: Sequence[tuple[str, int]]) -> dict[tuple[str, int], GroupOffset]:
        ...

    def commit_group(self, group: str, offsets: Mapping[tuple[str, int], int]) -> None: ...

    def delete_group(self, group: str) -> None: ...

    def forget_group_offsets(self, group: str, partitions: Sequence[tuple[str, int]]) -> None: ...

    def batch_mark(self) -> int | None:
        """Where the batch markers of a batch planned now start (None where appends need none)."""
        ...


@dataclass(frozen=True)
class DeltaTopics:
    lake_root: str
    storage_options: dict[str, str] | None = field(default=None, repr=False)
    kind: ClassVar[str] = DELTA
    atomic_appends: ClassVar[bool] = True
    remote_reads: ClassVar[bool] = False

    def topic(self, name: str) -> TopicTable:
        return TopicTable(self.lake_root, name, storage_options=self.storage_options or None)

    def names(self) -> list[str]:
        return list_topics(self.lake_root, self.storage_options)

    def append_together(self, appends: Sequence[tuple[TopicTable, DataFrame]], *, app_id: str,
                        version: int) -> dict[int, AppendResult]:
        done, _ = append_topics(list(appends), app_id=app_id, version=version)
        return done

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
    kind: ClassVar[str] = KAFKA
    atomic_appends: ClassVar[bool] = False  # a failed produce may have delivered some records
    remote_reads: ClassVar[bool] = True

    def topic(self, name: str) -> KafkaTopic:
        return KafkaTopic(self.clients, name)

    def names(self) -> list[str]:
        return list_kafka_topics(self.clients)

    def append_together(self, appends: Sequence[tuple[KafkaTopic, DataFrame]], *, app_id: str,
                        version: int) -> dict[int, AppendResult]:
        return {}  # each topic is produced on its own (a batch's transactions span its topics anyway)

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
                connector: Mapping[str, Any] | None = None, *, transactional: bool = True) -> TopicBackend:
    """The worker's topic backend; for Kafka, with the clients of `connector` (its raw config) when given,
    and without transactions when not `transactional` (a console producer, as Kafka's)."""
    kind = str(worker.get(TOPIC_BACKEND) or DELTA).lower()
    if kind == DELTA:
        return DeltaTopics(lake_root, dict(storage_options) if storage_options else None)
    if kind == KAFKA:
        clients = KafkaClients.from_configs(worker, connector)
        return KafkaTopics(clients if transactional else replace(clients, transactions=None))
    raise ConfigError([Problem(TOPIC_BACKEND, f"must be {DELTA} or {KAFKA}, not {kind!r}")])
