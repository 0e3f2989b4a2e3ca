"""Topics in a Kafka cluster (`topic.backend=kafka`), with the same surface as a Delta topic table.

Sources produce with confluent-kafka from the executors, each Spark task its own idempotent producer;
records go to the partition Kafka's Java producer would choose for them (an explicit partition, else
murmur2 of the key bytes), so a keyed record lands where Kafka Connect would have put it. A batch's
offsets are committed to the offset store only after every producer has flushed and every delivery is
confirmed. Sinks read offset ranges of each partition in parallel (`ingest.topics.kafka_read`) and commit
their positions to the consumer group `connect-<name>` once the sink's objects are durable.

Exactly once (KIP-618's `exactly.once.source.support=enabled`, the default here): every Spark task
produces its share of a batch in Kafka transactions of its own (`transaction.boundary=poll`: one per
task; `interval`: one every `transaction.boundary.interval.ms`; `connector`: the whole batch in one task
and one transaction), and each transaction also writes a marker record to the batch markers topic saying
how many of the task's records it has committed. A batch run again after a crash reads the markers
written since the batch was planned, and each task skips the records its committed transactions already
hold; what an interrupted transaction wrote was aborted (its transactional id, the same for the same
task of the same batch, is fenced and its transaction aborted by the new producer). Read-committed
consumers therefore see each record once. This needs the batch to split into the same Spark partitions,
in the same order, when it is read again, which the batch protocol's fixed plan gives.

Client settings come in three layers, as in Kafka Connect: the cluster's (`kafka.*` worker keys:
bootstrap servers and security), the worker's `producer.*` / `consumer.*` keys, and the connector's
`producer.override.*` / `consumer.override.*` keys under the worker's client override policy. Java
client keys are translated to librdkafka's names where they differ; the serializers are ignored (Connect
always sends the converters' bytes).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ingest.config.worker import (EXACTLY_ONCE_SOURCE_SUPPORT, MARKERS_TOPIC, OVERRIDE_POLICY, TOPIC_BACKEND,
                                  override_problems)
from ingest.errors import ConfigError, FatalError, Problem, RetriableError, StateError, from_executor
from ingest.runtime import faults
from ingest.topics.layout import HEADERS, KEY, PARTITION, SEQ, TIMESTAMP, VALUE, validate_topic_name
from ingest.topics.numbering import partition_choice
from ingest.topics.table import AppendResult, PartitionAppend, TopicDescription

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

DELTA, KAFKA = "delta", "kafka"
CLUSTER_PREFIX = "kafka."

# Java client key -> librdkafka key (None: no equivalent, ignored).
_PRODUCER_KEYS: dict[str, str | None] = {
    "buffer.memory": "queue.buffering.max.kbytes", "max.request.size": "message.max.bytes",
    "metadata.max.idle.ms": None, "key.serializer": None, "value.serializer": None, "partitioner.class": None,
    "delivery.timeout.ms": "message.timeout.ms", "max.block.ms": None, "interceptor.classes": None,
}
_CONSUMER_KEYS: dict[str, str | None] = {
    "fetch.max.wait.ms": "fetch.wait.max.ms", "max.poll.records": None, "max.poll.interval.ms": "max.poll.interval.ms",
    "key.deserializer": None, "value.deserializer": None, "request.timeout.ms": None, "interceptor.classes": None,
    "default.api.timeout.ms": None, "exclude.internal.topics": None,
}
_ASSIGNORS = {
    "org.apache.kafka.clients.consumer.RangeAssignor": "range",
    "org.apache.kafka.clients.consumer.RoundRobinAssignor": "roundrobin",
    "org.apache.kafka.clients.consumer.CooperativeStickyAssignor": "cooperative-sticky",
    "org.apache.kafka.clients.consumer.StickyAssignor": "cooperative-sticky",
}
_FLUSH_TIMEOUT_S = 120.0
API_TIMEOUT = "default.api.timeout.ms"
DEFAULT_API_TIMEOUT_MS = 30_000
"""How long a call to the cluster (metadata, topic creation, offsets) may take before the batch fails as
retriable: `kafka.default.api.timeout.ms`, the name of the Java clients' setting (whose default is 60 s)."""
_LAYOUT = "by-id"  # how a batch's records split into tasks: Kafka partition p in task p % tasks
TRANSACTION_BOUNDARY = "transaction.boundary"
TRANSACTION_INTERVAL = "transaction.boundary.interval.ms"
DEFAULT_TRANSACTION_INTERVAL_MS = 60_000  # Kafka's offset.flush.interval.ms, which KIP-618 falls back on
# What librdkafka reports when a newer producer with the same transactional id took over.
# (and a fenced producer's every later produce() says _FATAL; its error_cb has said _FENCED by then).
_FENCED_CODES = {-144, 90, 47}  # _FENCED, PRODUCER_FENCED, INVALID_PRODUCER_EPOCH


@dataclass(frozen=True)
class Transactions:
    """How a connector's batches are produced exactly once (see the module's docstring)."""

    markers_topic: str
    boundary: str = "poll"  # poll | interval | connector
    interval_ms: int = DEFAULT_TRANSACTION_INTERVAL_MS


def _translate(key: str, value: str, table: Mapping[str, str | None]) -> tuple[str, str] | None:
    if key in table:
        target = table[key]
        if target is None:
            return None
        if key == "buffer.memory":
            value = str(max(int(value) // 1024, 1))
        return target, value
    if key == "partition.assignment.strategy":
        names = [_ASSIGNORS.get(v.strip(), v.strip()) for v in value.split(",") if v.strip()]
        return key, ",".join(dict.fromkeys(names))
    return key, value


@dataclass(frozen=True)
class KafkaClients:
    """librdkafka settings of the worker's cluster for one connector: its producer's and its consumer's."""

    producer: dict[str, str] = field(repr=False)
    consumer: dict[str, str] = field(repr=False)
    transactions: Transactions | None = None  # None: at-least-once, as Kafka Connect without KIP-618
    api_timeout_s: float = DEFAULT_API_TIMEOUT_MS / 1000

    @property
    def bootstrap(self) -> str:
        return self.producer["bootstrap.servers"]

    def __repr__(self) -> str:  # settings may hold passwords: show the cluster only
        return f"KafkaClients(bootstrap.servers={self.bootstrap!r})"

    def admin(self) -> dict[str, str]:
        """The admin client's: the cluster's settings. Asking about a topic never creates it (a
        producer-side client would have a broker with auto.create.topics.enable create it)."""
        return {**{k: v for k, v in self.producer.items() if k in self.consumer and self.consumer[k] == v},
                "allow.auto.create.topics": "false"}

    @classmethod
    def from_configs(cls, worker: Mapping[str, Any], connector: Mapping[str, Any] | None = None) -> KafkaClients:
        """The worker's `kafka.*`, `producer.*` and `consumer.*` keys, then the connector's overrides, which
        the worker's `lake.client.config.override.policy` must allow (Kafka's All, None or Principal)."""
        common = {k[len(CLUSTER_PREFIX):]: str(v) for k, v in worker.items() if k.startswith(CLUSTER_PREFIX)}
        api_timeout_s = _api_timeout_s(common.pop(API_TIMEOUT, None))
        if not common.get("bootstrap.servers"):
            raise ConfigError([Problem("kafka.bootstrap.servers", f"is required with {TOPIC_BACKEND}=kafka: the "
                                       "cluster's brokers, host:port[,host:port...]")])
        producer = {"enable.idempotence": "true", "acks": "all", **common}
        consumer = {"isolation.level": "read_committed", **common}
        for prefix, target, table in (("producer.", producer, _PRODUCER_KEYS), ("consumer.", consumer, _CONSUMER_KEYS)):
            for k, v in worker.items():
                if k.startswith(prefix):
                    pair = _translate(k[len(prefix):], str(v), table)
                    if pair:
                        target[pair[0]] = pair[1]
        problems = override_problems(str(worker.get(OVERRIDE_POLICY) or "All"), connector or {})
        if problems:
            raise ConfigError(problems)
        for k, v in (connector or {}).items():
            for prefix, target, table in (("producer.override.", producer, _PRODUCER_KEYS),
                                          ("consumer.override.", consumer, _CONSUMER_KEYS)):
                if k.startswith(prefix):
                    pair = _translate(k[len(prefix):], str(v), table)
                    if pair:
                        target[pair[0]] = pair[1]
        transactions = None
        if str(worker.get(EXACTLY_ONCE_SOURCE_SUPPORT) or "enabled").lower() == "enabled":
            c = connector or {}
            transactions = Transactions(str(worker.get(MARKERS_TOPIC) or "connect-batch-markers"),
                                        str(c.get(TRANSACTION_BOUNDARY) or "poll").lower(),
                                        int(c.get(TRANSACTION_INTERVAL) or DEFAULT_TRANSACTION_INTERVAL_MS))
        return cls(producer, consumer, transactions, api_timeout_s)


def _api_timeout_s(value: str | None) -> float:
    if value is None:
        return DEFAULT_API_TIMEOUT_MS / 1000
    text = value.strip()
    if not text.isdigit() or int(text) == 0:
        raise ConfigError([Problem(CLUSTER_PREFIX + API_TIMEOUT, f"expected a positive number of milliseconds, "
                                   f"got '{value}'")])
    return int(text) / 1000


def describe_client_error(e: BaseException) -> str:
    """A librdkafka error as one line: its name and text."""
    err = e.args[0] if getattr(e, "args", None) else None
    if err is not None and hasattr(err, "name") and hasattr(err, "str"):
        return f"{err.name()}: {err.str()}"
    return str(e).splitlines()[0] if str(e) else type(e).__name__


class KafkaTopic:
    """One topic of the cluster. Cheap to construct: nothing is asked of the brokers until needed."""

    def __init__(self, clients: KafkaClients, name: str, *, timeout_s: float | None = None):
        validate_topic_name(name)
        self.clients = clients
        self.name = name
        self.timeout_s = clients.api_timeout_s if timeout_s is None else timeout_s

    def __repr__(self) -> str:
        return f"KafkaTopic({self.name!r} on {self.clients.bootstrap!r})"

    # --- metadata --------------------------------------------------------------------------------

    def _partitions(self) -> int | None:
        """The topic's partition count, None when the cluster does not have it."""
        from confluent_kafka import KafkaError, KafkaException
        from confluent_kafka.admin import AdminClient

        try:
            md = AdminClient(self.clients.admin()).list_topics(self.name, timeout=self.timeout_s)
        except KafkaException as e:
            raise RetriableError(f"cannot reach the Kafka cluster at {self.clients.bootstrap} to look up topic "
                                 f"'{self.name}': {describe_client_error(e)}; check that the brokers are up and "
                                 "that the worker's kafka.bootstrap.servers names them") from e
        t = md.topics.get(self.name)
        if t is None or (t.error is not None and t.error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART):
            return None
        if t.error is not None:
            raise RetriableError(f"topic '{self.name}' on {self.clients.bootstrap}: {t.error.str()}")
        return len(t.partitions)

    def exists(self) -> bool:
        return self._partitions() is not None

    def describe(self) -> TopicDescription:
        from ingest.topics.kafka_read import watermarks

        marks = watermarks(self.name, self.clients.consumer, timeout=self.timeout_s)
        return TopicDescription(name=self.name, partitions=len(marks), configs={},
                                start_offsets={p: lo for p, (lo, _) in marks.items()},
                                end_offsets={p: hi for p, (_, hi) in marks.items()})

    def end_offsets(self) -> dict[int, int]:
        return self.describe().end_offsets

    def alter_configs(self, updates: Mapping[str, Any], deletes: Sequence[str] = ()) -> dict[str, str]:
        raise ConfigError([Problem("topic.backend", "topics on a Kafka cluster keep their configs in the "
                                                    "cluster: change them with Kafka's kafka-configs --alter")])

    def first_record(self, ranges: Mapping[int, tuple[int, int]]) -> dict[str, bytes | None] | None:
        return None  # a fetch of its own would cost what the batch's read costs: converters plan from the batch

    def create(self, partitions: int, configs: Mapping[str, Any] | None = None, *,
               if_not_exists: bool = False, replication_factor: int = -1,
               replication_key: str = "--replication-factor") -> TopicDescription:
        """Create the topic through the admin API with `replication_factor` replicas of each partition
        (-1: the broker's default.replication.factor), as KIP-158 topic creation does. `replication_key`
        names the setting to change when the cluster cannot hold that many replicas."""
        from confluent_kafka import KafkaError, KafkaException
        from confluent_kafka.admin import AdminClient, NewTopic

        if not isinstance(partitions, int) or partitions < 1:
            raise ConfigError(f"topic '{self.name}': partitions must be a positive integer, not {partitions!r}")
        existing = self._partitions()
        if existing is not None:
            if not if_not_exists:
                raise StateError(f"topic '{self.name}' already exists on {self.clients.bootstrap} with {existing} "
                                 f"partitions (asked for {partitions}): pick another name, or use --if-not-exists")
            return self.describe()
        topic = NewTopic(self.name, partitions, int(replication_factor),
                         config={str(k): str(v) for k, v in (configs or {}).items()})
        admin = AdminClient(self.clients.admin())  # held until the answer comes
        future = admin.create_topics([topic], request_timeout=self.timeout_s)[self.name]
        try:
            future.result(self.timeout_s)
        except KafkaException as e:
            code = e.args[0].code()
            if code == KafkaError.INVALID_REPLICATION_FACTOR:
                raise ConfigError([Problem(replication_key, (
                    f"topic '{self.name}' cannot be created with replication factor {replication_factor} on "
                    f"{self.clients.bootstrap} ({describe_client_error(e)}): set {replication_key} to at most the "
                    "cluster's number of brokers, or -1 for the broker's default"))]) from e
            if code == KafkaError.INVALID_CONFIG:
                raise ConfigError(f"topic '{self.name}': the cluster refused its configs ({describe_client_error(e)})"
                                  ) from e
            if code != KafkaError.TOPIC_ALREADY_EXISTS:
                raise StateError(
                    f"topic '{self.name}' does not exist on {self.clients.bootstrap} and creating it failed "
                    f"({describe_client_error(e)}); create it with the cluster's tools, with the partitions "
                    "you want") from e
        self.await_listed()
        return self.describe()

    def await_listed(self) -> None:
        """Wait until the brokers' metadata has the topic just created: the controller answers CreateTopics
        before every broker has it, and an append asking at once would find no such topic."""
        deadline = time.monotonic() + self.timeout_s
        while self._partitions() is None:
            if time.monotonic() > deadline:
                raise RetriableError(f"topic '{self.name}' was created on {self.clients.bootstrap} but its brokers "
                                     f"did not list it within {self.timeout_s:.0f} s; run the batch again")
            time.sleep(0.05)

    # --- writing ---------------------------------------------------------------------------------

    def append(self, df: DataFrame, *, app_id: str, version: int, partitions: int | None = None,
               counts: Callable[[], Sequence[int | None]] | None = None, markers_from: int | None = None,
               **_: Any) -> AppendResult:
        """Produce the records from the executors and wait for every delivery; the per-partition counts.

        `df` has the columns a Delta topic's `append` takes. With transactions (see the module's
        docstring), records that transactions of this (app_id, version) already committed, as the
        markers written since offset `markers_from` of the markers topic say, are not produced again.
        Without, a batch produced again after a crash is produced twice, as Kafka Connect's at-least-once
        delivery is.
        """
        from pyspark.sql import functions as F
        from pyspark.sql.types import LongType, StructField, StructType

        n = self._partitions()
        if n is None:
            raise StateError(f"topic '{self.name}' does not exist on {self.clients.bootstrap}; create it first "
                             f"(`lakeconnect topics create {self.name} --partitions N`) or let the source create it")
        if partitions is not None and partitions != n:
            raise StateError(f"topic '{self.name}' has {n} partitions; this writer expects {partitions}")
        types = {f.name: f.dataType for f in df.schema.fields}

        def opt(col: str, ddl: str):
            return F.col(col).cast(ddl) if col in types else F.lit(None).cast(ddl)

        if SEQ not in types:
            raise ValueError(f"records for topic '{self.name}' need a `seq` column (their order); columns: {df.columns}")
        tx = self.clients.transactions
        # Each Kafka partition is produced by one task, in the records' order, as one source task's
        # producer sends them; the same records always make the same tasks (a resumed batch relies on it).
        # transaction.boundary=connector: the whole batch in one task, hence one transaction.
        tasks = 1 if tx is not None and tx.boundary == "connector" else min(n, df.sparkSession.sparkContext.defaultParallelism)
        batch = None
        if tx is not None:
            markers = BatchMarkers(self.clients, tx.markers_topic)
            batch = {"app_id": app_id, "version": version, "markers_topic": tx.markers_topic,
                     "interval_ms": tx.interval_ms if tx.boundary == "interval" else None,
                     "done": markers.committed(app_id, version, self.name, markers_from)}
        selected = df.select(
            partition_choice(types, n, version, self.name).alias(PARTITION), F.col(SEQ).cast("long").alias(SEQ),
            opt(KEY, "binary").alias(KEY), opt(VALUE, "binary").alias(VALUE),
            F.unix_millis(opt(TIMESTAMP, "timestamp")).alias(TIMESTAMP),
            (F.coalesce(F.col(HEADERS), F.array()) if HEADERS in types else F.array()).alias(HEADERS),
        )
        # Kafka partition p goes to task p % tasks: as many partitions in each task as can be (hashing the
        # partition number left 9 of 16 in one task of two). Markers written before this layout (no
        # "layout" in them) were counted in tasks of the hashed split, which their batch's retry keeps.
        if batch and any(d.get("layout") != _LAYOUT for d in batch["done"].values()):
            selected = selected.repartition(max(tasks, 1), PARTITION)
        else:
            selected = selected.repartitionById(max(tasks, 1), PARTITION)
        records = selected.sortWithinPartitions(PARTITION, SEQ)
        summary = StructType([StructField("partition", LongType()), StructField("count", LongType()),
                              StructField("bytes", LongType())])
        produce = _Producing(self.name, self.clients.producer, batch)
        try:
            # Each task reports a row per Kafka partition it produced: few enough to add up here, which
            # spares a shuffle and a stage (tests/bench/bench_kafka.py's stage profile).
            rows = records.mapInArrow(produce, summary).collect()
        except Exception as e:  # a producer's error, raised on an executor
            raise from_executor(e, f"producing to topic '{self.name}'") from None
        totals: dict[int, int] = {}
        for r in rows:
            totals[int(r[0])] = totals.get(int(r[0]), 0) + int(r[1])
        parts = {p: PartitionAppend(-1, -1, c) for p, c in sorted(totals.items())}
        return AppendResult(self.name, -1, parts, sum(int(r[2]) for r in rows))

    # --- reading ---------------------------------------------------------------------------------

    def read(self, ranges: Mapping[int, tuple[int, int]] | None = None, *, spark=None) -> DataFrame:
        from ingest.spark import get_spark
        from ingest.topics.kafka_read import read_kafka

        if ranges is None:
            d = self.describe()
            ranges = {p: (d.start_offsets[p], d.end_offsets[p]) for p in range(d.partitions)}
        return read_kafka(spark or get_spark(), self.name, ranges, self.clients.consumer)


def list_kafka_topics(clients: KafkaClients, timeout_s: float | None = None) -> list[str]:
    """The cluster's topics, without its internal ones (`__consumer_offsets`, `__transaction_state`)."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    try:
        md = AdminClient(clients.admin()).list_topics(timeout=timeout_s or clients.api_timeout_s)
    except KafkaException as e:
        raise RetriableError(f"cannot list the topics of the Kafka cluster at {clients.bootstrap}: "
                             f"{describe_client_error(e)}") from e
    return sorted(t for t in md.topics if not t.startswith("__"))


def _group_consumer(clients: KafkaClients, group: str):
    from confluent_kafka import Consumer, KafkaException

    try:
        return Consumer({**clients.consumer, "group.id": group, "enable.auto.commit": "false"})
    except KafkaException as e:
        raise ConfigError(f"cannot create a Kafka consumer for group '{group}': {describe_client_error(e)}") from e


GROUP_MARK = "lakeconnect"
"""The metadata of the consumer-group offsets a run commits: an offset without it was set by someone else
(`kafka-consumer-groups --reset-offsets`, another consumer), which the next batch follows, as Kafka Connect's
sink tasks do."""


@dataclass(frozen=True)
class GroupOffset:
    offset: int
    ours: bool
    """Committed by a lakeconnect run or offsets change (with GROUP_MARK), not by another client."""


def group_positions(clients: KafkaClients, group: str, partitions: Sequence[tuple[str, int]],
                    timeout_s: float | None = None) -> dict[tuple[str, int], GroupOffset]:
    """The consumer group's committed offset of each (topic, partition) that has one, and who committed it."""
    from confluent_kafka import KafkaException, TopicPartition

    if not partitions:
        return {}
    consumer = _group_consumer(clients, group)
    try:
        tps = consumer.committed([TopicPartition(t, p) for t, p in partitions],
                                 timeout=timeout_s or clients.api_timeout_s)
    except KafkaException as e:
        raise RetriableError(f"cannot read the committed offsets of consumer group '{group}' from "
                             f"{clients.bootstrap}: {describe_client_error(e)}") from e
    finally:
        consumer.close()
    return {(tp.topic, tp.partition): GroupOffset(tp.offset, tp.metadata == GROUP_MARK)
            for tp in tps if tp.offset >= 0 and tp.error is None}


def group_offsets(clients: KafkaClients, group: str, partitions: Sequence[tuple[str, int]],
                  timeout_s: float | None = None) -> dict[tuple[str, int], int]:
    """The consumer group's committed offset of each (topic, partition) that has one."""
    return {tp: g.offset for tp, g in group_positions(clients, group, partitions, timeout_s).items()}


def commit_group(clients: KafkaClients, group: str, offsets: Mapping[tuple[str, int], int],
                 timeout_s: float | None = None) -> None:
    """Commit `offsets` (the next offset to read of each partition) for the consumer group, as a sink
    task's consumer does once the records before them are durable; marked as this program's (GROUP_MARK)."""
    from confluent_kafka import TopicPartition

    if offsets:
        _commit(clients, group, [TopicPartition(t, p, o, GROUP_MARK) for (t, p), o in sorted(offsets.items())])


def forget_group_offsets(clients: KafkaClients, group: str, partitions: Sequence[tuple[str, int]],
                         timeout_s: float | None = None) -> None:
    """The group without committed offsets for `partitions` (KIP-875's null offset of a sink partition). The
    client has no call to delete one partition's offset: the group is deleted and its other offsets committed
    again as they were."""
    from confluent_kafka import ConsumerGroupTopicPartitions, KafkaException
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(clients.admin())
    timeout = timeout_s or clients.api_timeout_s
    try:
        listed = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)],
                                                   request_timeout=timeout)[group].result(timeout=timeout + 5)
    except (KafkaException, TimeoutError) as e:
        if _no_such_group(e):
            return
        raise RetriableError(f"cannot read the offsets of consumer group '{group}' at {clients.bootstrap}: "
                             f"{describe_client_error(e)}") from e
    committed = [tp for tp in listed.topic_partitions or [] if tp.offset >= 0]
    gone = set(partitions)
    if not any((tp.topic, tp.partition) in gone for tp in committed):
        return
    delete_group(clients, group, timeout_s)
    kept = [tp for tp in committed if (tp.topic, tp.partition) not in gone]
    if kept:
        _commit(clients, group, kept)


def _commit(clients: KafkaClients, group: str, tps: list) -> None:
    """Commit `tps` (TopicPartitions with their offsets and metadata) for the group, synchronously."""
    from confluent_kafka import KafkaException

    consumer = _group_consumer(clients, group)
    try:
        result = consumer.commit(offsets=tps, asynchronous=False)
    except KafkaException as e:
        raise RetriableError(f"cannot commit the offsets of consumer group '{group}' to {clients.bootstrap}: "
                             f"{describe_client_error(e)}") from e
    finally:
        consumer.close()
    failed = [f"{tp.topic}-{tp.partition}: {tp.error.str()}" for tp in result or [] if tp.error is not None]
    if failed:
        raise RetriableError(f"committing consumer group '{group}' failed for " + ", ".join(failed))


def _no_such_group(e: BaseException) -> bool:
    from confluent_kafka import KafkaError

    error = e.args[0] if e.args else None
    return getattr(error, "code", lambda: None)() == KafkaError.GROUP_ID_NOT_FOUND


def delete_group(clients: KafkaClients, group: str, timeout_s: float | None = None) -> None:
    """Delete the consumer group and its offsets, as Kafka Connect resets a sink connector's offsets
    (KIP-875); a group that does not exist is already reset."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    timeout = timeout_s or clients.api_timeout_s
    admin = AdminClient(clients.admin())  # held until the answer: a collected client never answers
    try:
        admin.delete_consumer_groups([group], request_timeout=timeout)[group].result(timeout=timeout + 5)
    except (KafkaException, TimeoutError) as e:
        if _no_such_group(e):
            return
        raise RetriableError(f"cannot delete consumer group '{group}' at {clients.bootstrap}: "
                             f"{describe_client_error(e)}") from e


class BatchMarkers:
    """The batch markers topic: one record per committed transaction of a source batch's task, keyed by
    (app_id, batch, topic, Spark partition), whose value counts the task's records committed so far."""

    def __init__(self, clients: KafkaClients, topic: str, timeout_s: float | None = None):
        self.clients, self.topic = clients, topic
        self.timeout_s = clients.api_timeout_s if timeout_s is None else timeout_s

    def ensure(self) -> None:
        """Create the topic (one partition, compacted) when the cluster does not have it."""
        KafkaTopic(self.clients, self.topic, timeout_s=self.timeout_s).create(
            1, {"cleanup.policy": "compact"}, if_not_exists=True)

    def end(self) -> int:
        """The topic's end offset: where the markers of a batch planned now will start."""
        from ingest.topics.kafka_read import watermarks

        self.ensure()
        return watermarks(self.topic, self.clients.consumer, timeout=self.timeout_s)[0][1]

    def committed(self, app_id: str, version: int, topic: str, since: int | None) -> dict[str, dict[str, Any]]:
        """{Spark partition: {"records": n, "partitions": {p: [count, bytes]}}} that committed transactions
        of this batch's appends to `topic` produced, from the markers at offsets >= `since`."""
        from ingest.topics.kafka_read import RangeChunk, read_range, watermarks

        if since is None:  # an append planned without a mark (a sink's dead letters): nothing to skip
            return {}
        low, high = watermarks(self.topic, self.clients.consumer, timeout=self.timeout_s)[0]
        start = max(low, since)
        prefix = json.dumps([app_id, version, topic])[:-1] + ","
        done: dict[str, dict[str, Any]] = {}
        if high <= start:
            return done
        for batch in read_range(self.topic, RangeChunk(0, start, high), self.clients.consumer, self.timeout_s):
            for key, value in zip(batch.column("key").to_pylist(), batch.column("value").to_pylist()):
                text = (key or b"").decode()
                if text.startswith(prefix):
                    done[str(json.loads(text)[3])] = json.loads(value)  # later markers count more
        return done


class _Producing:
    """The function a Spark task runs: produce its records, flush, report counts per partition.

    Any delivery that fails fails the task with the first error, naming topic and partition; the batch
    is then not committed. With `batch` (transactions), the task produces in transactions of its own and
    skips the records its earlier committed transactions hold."""

    def __init__(self, topic: str, settings: Mapping[str, str], batch: Mapping[str, Any] | None):
        self.topic = topic
        self.settings = json.dumps(dict(settings))
        self.batch = json.dumps(dict(batch)) if batch is not None else None

    def __call__(self, batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa
        from confluent_kafka import KafkaError, KafkaException, Producer
        from pyspark import TaskContext

        settings = json.loads(self.settings)
        batch = json.loads(self.batch) if self.batch else None
        part = TaskContext.get().partitionId()
        errors: list[str] = []
        too_large: list[int] = []
        counts: dict[int, list[int]] = {}
        skip = 0
        if batch is not None:
            done = batch["done"].get(str(part))
            if done:
                skip = int(done["records"])
                counts = {int(p): list(c) for p, c in done["partitions"].items()}
            settings["transactional.id"] = f"lakeconnect-{batch['app_id']}-{self.topic}-{part}"

        def delivered(err, msg) -> None:  # called for failed deliveries only (delivery.report.only.error)
            if err is not None and len(errors) < 5:
                errors.append(f"partition {msg.partition()}: {err.name()}: {err.str()}")
                if err.code() == KafkaError.MSG_SIZE_TOO_LARGE:  # the broker's limit: no retry will help
                    too_large.append(msg.partition())

        config = {**settings, "delivery.report.only.error": True, "on_delivery": delivered,
                  "error_cb": _FatalErrors(settings.get("transactional.id"))}
        try:
            producer = Producer(config)
        except KafkaException as e:
            raise ConfigError(f"cannot create a Kafka producer for topic '{self.topic}': "
                              f"{describe_client_error(e)}") from e
        tx = _Transaction(producer, self.topic, part, batch, settings.get("transactional.id")) if batch else None
        produce, poll, topic = producer.produce, producer.poll, self.topic
        seen = 0  # records of the task's input so far, the skipped ones included
        try:
            for records in batches:
                n = records.num_rows
                first = min(max(0, skip - seen), n)  # the batch's records an earlier committed transaction holds
                counted = first  # the batch's first record not yet in `counts`
                plain = _all_null(records.column(TIMESTAMP)) and _all_empty(records.column(HEADERS))
                cols = records.select([PARTITION, KEY, VALUE] if plain else [PARTITION, KEY, VALUE, TIMESTAMP,
                                                                             HEADERS]).to_pydict()
                parts, keys, values = cols[PARTITION], cols[KEY], cols[VALUE]
                for i in range(first, n):
                    if tx is not None and not tx.open:
                        tx.begin()
                    p = parts[i]
                    while True:
                        try:
                            if plain:
                                produce(topic, values[i], keys[i], partition=p)
                            else:
                                hs = cols[HEADERS][i]
                                produce(topic, values[i], keys[i], partition=p, timestamp=cols[TIMESTAMP][i] or 0,
                                        headers=[(h["key"], h["value"]) for h in hs] if hs else None)
                            break
                        except BufferError:  # the local queue is full: let deliveries drain it
                            poll(0.1)
                        except KafkaException as e:
                            raise _produce_failed(topic, p, e, settings.get("transactional.id")) from e
                    if tx is not None and tx.due():
                        self._settle(producer, errors, settings, too_large)
                        _count(counts, records, counted, i + 1)
                        counted = i + 1
                        tx.commit(seen + i + 1, counts)
                poll(0)
                _count(counts, records, counted, n)
                seen += n
                if errors:
                    break
            self._settle(producer, errors, settings, too_large)
            if tx is not None:
                tx.commit(seen, counts)
        except BaseException as e:
            if tx is not None:
                tx.abort()
            if isinstance(e, KafkaException):  # from flush() or poll(): a fenced producer says so there
                raise _produce_failed(self.topic, None, e, settings.get("transactional.id")) from e
            raise
        parts = sorted(counts)
        yield pa.RecordBatch.from_pydict({"partition": parts, "count": [counts[p][0] for p in parts],
                                          "bytes": [counts[p][1] for p in parts]})

    def _settle(self, producer, errors: list[str], settings: Mapping[str, str], too_large: list[int]) -> None:
        """Wait for every delivery; raise the first failures."""
        left = producer.flush(_FLUSH_TIMEOUT_S)
        if too_large:
            raise ConfigError(f"a record for topic '{self.topic}' partition {too_large[0]} is larger than the "
                              "topic's max.message.bytes (the broker refused it); raise the topic's "
                              f"max.message.bytes (kafka-configs --alter) or make the record smaller ({errors[0]})")
        if errors:
            raise RetriableError(f"producing to topic '{self.topic}' failed: " + "; ".join(errors))
        if left:
            raise RetriableError(f"producing to topic '{self.topic}': {left} records not delivered within "
                                 f"{_FLUSH_TIMEOUT_S:.0f} s; is the cluster at {settings['bootstrap.servers']} up?")


def _all_null(column) -> bool:
    return column.null_count == len(column)


def _all_empty(column) -> bool:
    """Whether a list column holds no element (each row null or empty)."""
    import pyarrow.compute as pc

    return column.null_count == len(column) or pc.sum(pc.list_value_length(column)).as_py() in (None, 0)


def _count(counts: dict[int, list[int]], records, lo: int, hi: int) -> None:
    """Adds records [lo, hi) of the Arrow batch to `counts`: {partition: [records, key + value bytes]}."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if hi <= lo:
        return
    part = records.slice(lo, hi - lo)
    size = pc.add(pc.fill_null(pc.binary_length(part.column(KEY)), 0),
                  pc.fill_null(pc.binary_length(part.column(VALUE)), 0))
    table = pa.table({"p": part.column(PARTITION), "size": pc.cast(size, pa.int64())})
    for row in table.group_by("p").aggregate([("size", "count"), ("size", "sum")]).to_pylist():
        c = counts.setdefault(int(row["p"]), [0, 0])
        c[0] += row["size_count"]
        c[1] += row["size_sum"]


class _Transaction:
    """One task's transactions: begun on its first record, committed with a marker of what they hold."""

    def __init__(self, producer, topic: str, part: int, batch: Mapping[str, Any], transactional_id: str):
        self.producer, self.topic, self.part, self.batch, self.id = producer, topic, part, batch, transactional_id
        self.interval_s = batch["interval_ms"] / 1000 if batch.get("interval_ms") is not None else None
        self.open = False
        self.ready = False
        self.started = 0.0

    def _call(self, what: str, operation: Callable[[], Any]) -> Any:
        from confluent_kafka import KafkaException

        try:
            return operation()
        except KafkaException as e:
            raise _transaction_failed(self.id, what, e) from e

    def begin(self) -> None:
        if self.open:
            return
        if not self.ready:  # fences an older producer with this id and aborts what it left open
            self._call("initialising transactions", lambda: self.producer.init_transactions(_FLUSH_TIMEOUT_S))
            self.ready = True
        self._call("beginning a transaction", self.producer.begin_transaction)
        self.open, self.started = True, time.monotonic()

    def due(self) -> bool:
        return self.interval_s is not None and time.monotonic() - self.started >= self.interval_s

    def commit(self, records: int, counts: Mapping[int, list[int]]) -> None:
        """Commit the open transaction with a marker: the task's records committed so far, per partition."""
        if not self.open:
            return
        key = json.dumps([self.batch["app_id"], self.batch["version"], self.topic, self.part])
        value = json.dumps({"records": records, "partitions": {str(p): c for p, c in counts.items()},
                            "layout": _LAYOUT})
        self._call("writing the batch marker", lambda: self.producer.produce(
            self.batch["markers_topic"], value.encode(), key.encode(), partition=0))
        self._call("committing the transaction", lambda: self.producer.commit_transaction(_FLUSH_TIMEOUT_S))
        self.open = False
        faults.executor_point("produce")

    def abort(self) -> None:
        """Best effort: a transaction left open is aborted by the next producer with this id anyway."""
        if self.open:
            try:
                self.producer.abort_transaction(10)
            except Exception:  # noqa: BLE001 -- fenced or unreachable: the broker or the next run aborts it
                pass
            self.open = False


def _fenced(transactional_id: str, what: str) -> FatalError:
    return FatalError(
        f"transactional id '{transactional_id}' was fenced by a newer producer while {what}: another run of this "
        "connector is producing the same batch. This run stops and commits nothing; the other run's "
        "transactions are the ones that count")


def _transaction_failed(transactional_id: str, what: str, e: BaseException) -> Exception:
    err = e.args[0] if e.args else None
    code = err.code() if hasattr(err, "code") else None
    if code in _FENCED_CODES:
        return _fenced(transactional_id, what)
    return RetriableError(f"Kafka transaction of '{transactional_id}': {what} failed: {describe_client_error(e)}")


class _FatalErrors:
    """The producer's error_cb. librdkafka reports most errors as transient and retries them itself; a
    fatal one ends the task: fencing (a newer producer took the transactional id) as a FatalError, others
    (the idempotent producer's state lost, say) as worth another run."""

    def __init__(self, transactional_id: str | None):
        self.transactional_id = transactional_id

    def __call__(self, err) -> None:
        if not err.fatal():
            return
        if self.transactional_id and err.code() in _FENCED_CODES:
            raise _fenced(self.transactional_id, "producing")
        raise RetriableError(f"the Kafka producer failed: {err.name()}: {err.str()}")


def _produce_failed(topic: str, partition: int | None, e: BaseException, transactional_id: str | None) -> Exception:
    from confluent_kafka import KafkaError

    code = e.args[0].code() if e.args and hasattr(e.args[0], "code") else None
    where = f"topic '{topic}'" + ("" if partition is None else f" partition {partition}")
    if transactional_id and code in _FENCED_CODES:
        return _transaction_failed(transactional_id, "producing", e)
    if code == KafkaError.MSG_SIZE_TOO_LARGE:
        return ConfigError(f"a record for {where} is larger than the producer's "
                           "message.max.bytes; raise producer.override.max.request.size (and the topic's "
                           f"max.message.bytes) or make the record smaller ({describe_client_error(e)})")
    return RetriableError(f"producing to {where} failed: {describe_client_error(e)}")


