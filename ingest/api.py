"""The contracts plugins implement. Small on purpose, as Kafka Connect's API is.

A connector plans: it declares its keys (`config_def`) and splits its work into task configs
(`task_configs(max_tasks)`). A task does the I/O of one batch:

- a source task `plan`s the exact source ranges of the batch, bounded at plan time, from the offsets
  the runtime has committed; then `read`s exactly those ranges as Connect records. The runtime persists
  the plan before the read, writes the records to topics, and only then commits the planned end offsets.
- a sink task `prepare`s sink-side state for the planned topic ranges (persisted with the plan), then
  `put`s the converted, transformed records; `put` must be idempotent for the same plan, because a
  crashed batch is put again with the same plan and the same records.

Offsets belong to the runtime, not to the task: a task never commits anything itself.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

from ingest.config.configdef import Config, ConfigDef

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from ingest.records import RecordBatch

JsonMap = dict[str, Any]
"""A source partition or source offset: a JSON object with string keys and primitive values."""


class Plugin:
    """Base of every plugin: its Kafka Connect class names and its declared configuration."""

    aliases: ClassVar[tuple[str, ...]] = ()
    version: ClassVar[str] = "0.1.0"
    settings_class: ClassVar[type | None] = None
    """The plugin's typed settings (an `ingest.config.settings.Settings`), read from a config of `config_def()`:
    every key they name must be one it declares (the plugin contract suite checks it)."""

    @classmethod
    def config_def(cls) -> ConfigDef:
        return ConfigDef()


class ExactlyOnceSupport(enum.Enum):
    """KIP-618: whether a source connector can deliver each record exactly once."""

    SUPPORTED = "SUPPORTED"
    UNSUPPORTED = "UNSUPPORTED"


@dataclass
class TaskContext:
    """What the runtime hands a task: who it is, where the lake is, and a Spark session on demand."""

    connector: str
    task_id: int
    worker: Config
    spark_factory: Callable[[], SparkSession]
    log: logging.LoggerAdapter
    lake_root: str
    storage_options: Mapping[str, str] = field(default_factory=dict)
    errant: list[Any] = field(default_factory=list)
    """What a sink task reported during `put` (see `report`); the runtime takes it after the put."""
    app_id: str = ""
    """The app transaction of the task's writes (ingest/runtime/batches.py `task_app_id`): a sink writing a
    transactional store commits each batch as (app_id, batch id), so a batch run again is skipped."""

    @property
    def spark(self) -> SparkSession:
        return self.spark_factory()

    def report(self, batch: Any) -> None:
        """Kafka's ErrantRecordReporter: records of `batch` (a RecordBatch) the sink could not write, each
        marked with its reason (`ingest.runtime.tolerance.mark`). Under `errors.tolerance=all` they go to the
        dead letter queue and the batch commits; else the first one fails the task."""
        self.errant.append(batch)


class Connector(Plugin):
    """Plans the work: validated config in, one raw config per task out."""

    kind: ClassVar[str] = ""
    worker_flag: ClassVar[str | None] = None
    """A boolean worker key that must be true before this connector may be loaded."""

    def __init__(self, config: Config):
        self.config = config

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        """Settings for each task, merged over the connector's own config. One task by default."""
        return [{}]

    def validate(self) -> list[str]:
        """Checks beyond single keys (combinations of keys). Messages start with the key they name."""
        return []

    def warnings(self) -> list[str]:
        """What a valid configuration should know before it runs (e.g. that it is not exactly-once)."""
        return []

    def paths(self) -> list[tuple[str, str]]:
        """(key, path or URI) of each file or directory the connector reads or writes besides topics and state
        tables: each must be inside the lake or below the worker's `lake.allowed.paths`."""
        return []


@dataclass(frozen=True)
class PlannedRange:
    """Records of one source partition from `start` (exclusive; None = the beginning) to `end` (inclusive)."""

    partition: JsonMap
    start: JsonMap | None
    end: JsonMap

    def to_json(self) -> JsonMap:
        return {"partition": self.partition, "start": self.start, "end": self.end}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> PlannedRange:
        return cls(d["partition"], d.get("start"), d["end"])


@dataclass(frozen=True)
class SourcePlan:
    """A source batch's intent, persisted before the read: the ranges, plus task-specific details."""

    ranges: tuple[PlannedRange, ...]
    details: JsonMap = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not self.ranges

    def to_json(self) -> JsonMap:
        return {"ranges": [r.to_json() for r in self.ranges], "details": self.details}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> SourcePlan:
        return cls(tuple(PlannedRange.from_json(r) for r in d.get("ranges", [])), dict(d.get("details", {})))


class SourceConnector(Connector):
    kind = "source"
    task_class: ClassVar[type[SourceTask]]

    def exactly_once_support(self) -> ExactlyOnceSupport:
        return ExactlyOnceSupport.SUPPORTED


class SourceTask:
    """One task of a source connector; `plan` and `read` are all it must do."""

    def __init__(self, config: Config, context: TaskContext):
        self.config = config
        self.context = context

    def plan(self, committed: Mapping[str, JsonMap]) -> SourcePlan:
        """The next batch's ranges from `committed` (source partition JSON text -> offset), bounded now."""
        raise NotImplementedError

    def read(self, plan: SourcePlan) -> list[RecordBatch]:
        """Exactly the records of `plan`'s ranges, in source order (the `seq` column), as Connect records."""
        raise NotImplementedError

    def explain(self, error: Exception, plan: SourcePlan) -> Exception | None:
        """A clear error (a LakeConnectError) for `error`, which Spark raised while it evaluated the batch
        `read` returned (reads are lazy: they run when the records are converted and written), or None to
        let it through as it is."""
        return None

    def close(self) -> None:
        """Release what the task holds (connections, files)."""


@dataclass(frozen=True)
class TopicRange:
    """Offsets [start, end) of one topic partition, planned for a sink batch."""

    topic: str
    partition: int
    start: int
    end: int
    metadata: JsonMap | None = None
    """What the sink committed with the start offset (see `OffsetAndMetadata`)."""

    def to_json(self) -> JsonMap:
        out = {"topic": self.topic, "partition": self.partition, "start": self.start, "end": self.end}
        if self.metadata:
            out["metadata"] = self.metadata
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> TopicRange:
        return cls(d["topic"], int(d["partition"]), int(d["start"]), int(d["end"]), d.get("metadata") or None)


@dataclass(frozen=True)
class OffsetAndMetadata:
    """A sink's next offset of a topic partition, with small facts of its own kept beside it (Kafka's
    OffsetAndMetadata), handed back in the next batch's `TopicRange.metadata`."""

    offset: int
    metadata: JsonMap | None = None


class SinkConnector(Connector):
    kind = "sink"
    task_class: ClassVar[type[SinkTask]]


class SinkTask:
    """One task of a sink connector: `prepare` records sink-side state in the plan, `put` writes."""

    def __init__(self, config: Config, context: TaskContext):
        self.config = config
        self.context = context

    def prepare(self, ranges: list[TopicRange]) -> JsonMap:
        """Sink-side facts taken at plan time and persisted with it (a file's size, an upload id)."""
        return {}

    def put(self, batches: list[RecordBatch], ranges: list[TopicRange], prepared: JsonMap, batch_id: int) -> None:
        """Write the records durably. Called again with the same arguments after a crash: idempotent.
        Records it cannot write it reports through `self.context.report` (Kafka's ErrantRecordReporter)."""
        raise NotImplementedError

    def pre_commit(self, ranges: list[TopicRange]) -> dict[tuple[str, int], OffsetAndMetadata]:
        """After `put`: the next offset to consume of each (topic, partition), Kafka's `preCommit`. By
        default every range's end; a sink that holds records back (not yet in a committed object) returns
        less, and those records are read again by the next batch."""
        return {(r.topic, r.partition): OffsetAndMetadata(r.end) for r in ranges}

    def close(self) -> None:
        """Release what the task holds."""


# In the failure of a query planned by `Converter.from_connect_optimistic` or `to_connect_optimistic`: a record
# needs the general plan, `from_connect` or `to_connect`.
DECLINED = "lakeconnect: a record needs the converter's general plan"
# `Converter.to_connect_optimistic` called without the batch's first record: the converter reads one itself.
NOT_READ: Any = type("NotRead", (), {"__repr__": lambda self: "NOT_READ"})()


class Converter(Plugin):
    """Serialises record keys or values at the edge of a job, as column expressions over a batch.

    Built with the converter's own settings (the `key.converter.` / `value.converter.` prefixed keys,
    prefix stripped) and whether it converts keys. Mirror methods, as Kafka's Converter has.
    """

    def __init__(self, configs: Mapping[str, Any], is_key: bool):
        self.configs = dict(configs)
        self.is_key = is_key

    def from_connect(self, df: Any, column: str, schema: Any) -> Any:
        """`df` with `column` (Connect data of `schema`) replaced by its serialised bytes (binary)."""
        raise NotImplementedError

    def from_connect_for(self, df: Any, column: str, schema: Any, topics: Any) -> Any:
        """`from_connect`, knowing the topics the records go to (a sequence; None when unknown). A converter whose
        bytes depend on the topic (a Schema Registry subject named after it) overrides this; others need not."""
        return self.from_connect(df, column, schema)

    def to_connect(self, df: Any, column: str) -> list[tuple[Any, Any]]:
        """Deserialise binary `column`: a list of (ConnectSchema or None, DataFrame), one per distinct schema."""
        raise NotImplementedError

    def record_errors(self, df: Any, column: str) -> Any:
        """Why each record of `column` (bytes) cannot be read, as a string column (null when it can);
        None when every input can be read. The runtime uses it to route bad records as `errors.*` say."""
        return None

    def to_connect_optimistic(self, df: Any, column: str, first: Any = NOT_READ) -> Any:
        """`to_connect` for the usual batch, every record of one schema: one (schema, DataFrame) pair found
        without reading every record first, or None when the converter has no such plan for this batch. A
        record the pair does not hold fails the query with `DECLINED` in its message; the runtime then reads
        the batch again with `to_connect`, having committed nothing.

        `first`: the bytes of `column` in one record of the batch (None for a null or an empty batch), read
        by the runtime from the topic's file or in one small query for both converters; not a checked record
        (a bad one fails in the batch's query). NOT_READ: the converter reads one if it needs one."""
        return None

    def from_connect_optimistic(self, df: Any, column: str, schema: Any) -> Any:
        """`from_connect` planned for the usual records only (a smaller query, cheaper for Spark to plan), or
        None when the converter has no such plan for this column. A record it cannot write exactly as
        `from_connect` would fails the query with `DECLINED` in its message; the runtime then converts the
        batch again with `from_connect`, having committed nothing."""
        return None


class HeaderConverter(Plugin):
    """Serialises header values (`header.converter`); header keys are always strings."""

    def __init__(self, configs: Mapping[str, Any]):
        self.configs = dict(configs)

    def from_connect_header(self, headers: Any) -> Any:
        """Column array<struct<key string, value string>> -> array<struct<key string, value binary>>."""
        raise NotImplementedError

    def to_connect_header(self, headers: Any) -> Any:
        """Column array<struct<key string, value binary>> -> array<struct<key string, value string>>."""
        raise NotImplementedError

    def header_errors(self, headers: Any) -> Any:
        """Why a record's header values (bytes) cannot be read, as a string column (null when they can);
        None when every input can be read."""
        return None


class Transform(Plugin):
    """A single message transform over a whole batch: column expressions, records in, records out.

    Built with its own settings (`transforms.<label>.` prefix stripped), validated by `config_def`.
    Dropping records (Filter) means returning a batch without them.
    """

    scoped: ClassVar[bool] = False
    """True when `apply` honours a boolean column `ingest.runtime.pipeline.SCOPE` (the predicate's answer),
    changing only the records in scope: the runtime then applies it in one pass instead of splitting the
    batch by the predicate and applying it to the part in scope."""

    def __init__(self, config: Config):
        self.config = config

    def apply(self, batch: RecordBatch) -> RecordBatch:
        raise NotImplementedError


class Predicate(Plugin):
    """A yes/no question about each record of a batch, as a boolean Spark column."""

    def __init__(self, config: Config):
        self.config = config

    def test(self, batch: RecordBatch) -> Any:
        raise NotImplementedError


class Partitioner(Plugin):
    """Object-store sinks: the encoded partition (a path such as `partition=0`) of each record.

    `encode` gives what Spark computes (a string column; None when the partition is all time); a
    time-based partitioner also gives each record's timestamp (`timestamp`) and how to print the time
    bucket it falls in (`time_partitioning`), which the executors apply.
    """

    def __init__(self, config: Config):
        self.config = config

    def encode(self, batch: RecordBatch) -> Any:
        """A string column with each record's encoded partition (or its part before the time), or None."""
        raise NotImplementedError

    def errors(self, batch: RecordBatch) -> Any:
        """Why a record has no partition (a string column, null when it has one), or None."""
        return None

    def timestamp(self, batch: RecordBatch) -> Any:
        """Time-based partitioners: each record's timestamp in epoch ms (a long column; None = wall clock)."""
        return None

    @property
    def time_partitioning(self) -> Any:
        """Time-based partitioners: how a timestamp becomes its path (connectors.storage.timebased)."""
        return None


class Format(Plugin):
    """Object-store sinks: how records become the bytes of one object (`format.class`)."""

    extension: ClassVar[str] = ""
    compressible: ClassVar[bool] = True
    """Whether the store's compression (`s3.compression.type`) applies to its objects (JSON and ByteArray, as
    in Confluent's connector; Avro and Parquet compress inside the file)."""

    def __init__(self, config: Config):
        self.config = config

    def file_extension(self) -> str:
        """The objects' extension (before any compression suffix): `extension` unless a setting changes it."""
        return self.extension

    def payload(self, df: Any, column: str, schema: Any, is_key: bool = False) -> Any:
        """Driver side: `df` with `column` (Connect data of `schema`) replaced by what each record gives its
        object (bytes, or the record as it is); DataError when the format cannot carry the schema."""
        raise NotImplementedError

    def view(self, schema: Any, is_key: bool, headers: bool) -> Any:
        """The schema the executor's writer gets for values (`schema`), keys or headers."""
        return schema

    def writer(self, out: Any, schema: Any, seed: str) -> Any:
        """Executor side: a writer of one object to the binary stream `out`, with `write(pyarrow array of
        payloads)` and `close()` (which finishes the object's bytes but leaves `out` open). `seed` (the
        object's key) makes anything random in the format reproducible."""
        raise NotImplementedError


# --- optional abilities: a plugin has one when it has the method ---------------------------------------


@runtime_checkable
class Compactable(Protocol):
    """A sink connector whose output can be compacted (`lakeconnect compact NAME`): an S3 sink's small objects."""

    @staticmethod
    def compact(worker: Any, name: str, **options: Any) -> dict[str, Any]:
        """Merge what the connector `name` wrote; a summary (what would be merged, with `dry_run=True`)."""
        ...


@runtime_checkable
class Signallable(Protocol):
    """A source connector that takes Debezium's ad-hoc signals (`lakeconnect signal NAME`)."""

    def send_signal(self, kind: str, collections: list[str]) -> str:
        """Record a signal (e.g. `execute-snapshot` of `collections`) its next batches apply; the signal's id."""
        ...
