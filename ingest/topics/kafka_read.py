"""Reading offset ranges of a Kafka topic into Spark: a Python DataSource whose tasks consume in parallel.

A range is cut into chunks (so a long range is read by several tasks at once), and the chunks are
spread over a few tasks of about equal offsets. A task's one consumer is assigned every partition of
its chunks at their first offsets (never subscribes, never commits: where a run got to is the
connector's own state, not a consumer group's) and reads until each chunk's end, unassigning each
partition as its chunk is done. The rows have the columns and types of the Delta topic reader (`TopicTable.read`).

Offsets in a range need not all be records: transaction markers, and aborted records under
read_committed, leave gaps, so a chunk may end without a record at its last offset. A chunk is done at
the first record at or past its end, or once the consumer's position (or the partition's end, at EOF)
reaches it. What may never happen silently is skipping records that are gone: the consumer reports an
out-of-range fetch instead of jumping elsewhere (`auto.offset.reset=error`), and a chunk whose first
record comes after its start is checked against the partition's log start offset.

A record without a timestamp (message format v0, before Kafka 0.10) gets a null timestamp and the type
"NoTimestampType", as Kafka Connect hands it to a sink task (null and TimestampType.NO_TIMESTAMP_TYPE).

The client settings, credentials included, travel as one DataSource option whose name matches
spark.redaction.regex, which keeps them out of plans, the UI and logs.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from confluent_kafka import (
    TIMESTAMP_CREATE_TIME,
    TIMESTAMP_LOG_APPEND_TIME,
    Consumer,
    KafkaError,
    KafkaException,
    TopicPartition,
)
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from ingest.errors import (
    ConfigError,
    FatalError,
    LakeConnectError,
    RetriableError,
    StateError,
)
from ingest.topics.layout import CREATE_TIME, LOG_APPEND_TIME, TOPIC_COLUMNS, TOPIC_SCHEMA

if TYPE_CHECKING:
    from confluent_kafka import Message
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

FORMAT = "lakeconnect_kafka_ranges"
CLIENT_OPTION = "client.secret.config"  # "secret" matches spark.redaction.regex
DEFAULT_CHUNK = 500_000
DEFAULT_TIMEOUT = 60.0
NO_TIMESTAMP_TYPE = "NoTimestampType"
# Assigning partitions needs no consumer group, but the Python client refuses a consumer without a
# group.id. It never joins or commits.
READER_GROUP = "lakeconnect-reader"
BATCH_ROWS = 50_000
CONSUME_MAX = 10_000
# consume() waits its whole timeout unless it fills its batch: short waits keep a chunk that ends in a
# gap from idling once its last record is in.
POLL_SECONDS = 0.05
WATERMARK_TIMEOUT = 10.0
LEADER_WAIT_SECONDS = 0.2
# Conditions the cluster or librdkafka recovers from by itself (a connection lost, a partition's leader
# not elected or not known yet, as just after the topic was created): worth another try.
_TRANSIENT = frozenset({"_TRANSPORT", "_ALL_BROKERS_DOWN", "_RESOLVE", "_TIMED_OUT", "NOT_LEADER_FOR_PARTITION",
                        "LEADER_NOT_AVAILABLE"})
_TIMESTAMP_TYPES = {TIMESTAMP_CREATE_TIME: CREATE_TIME, TIMESTAMP_LOG_APPEND_TIME: LOG_APPEND_TIME}


def new_consumer(config: Mapping[str, Any]) -> Consumer:
    """The one place consumers are made (a test replaces it with a double)."""
    return Consumer(dict(config))


def consumer_config(client: Mapping[str, str]) -> dict[str, Any]:
    """`client` with what a reader of fixed ranges needs on top. The client's own group.id is kept: a
    cluster whose ACLs name the connector's group may refuse any other."""
    config: dict[str, Any] = {"isolation.level": "read_committed", "group.id": READER_GROUP, **client}
    config.update({
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "enable.partition.eof": True,
        "auto.offset.reset": "error",
        "allow.auto.create.topics": False,
    })
    return config


@dataclass
class RangeChunk(InputPartition):
    """Offsets [start, end) of one Kafka partition: what one task reads."""

    partition: int
    start: int
    end: int


def split(ranges: Mapping[int, tuple[int, int]], chunk: int) -> list[RangeChunk]:
    """Chunks of at most `chunk` offsets covering every non-empty range, in partition order."""
    if chunk < 1:
        raise ValueError(f"chunk must be a positive number of offsets, not {chunk}")
    chunks = []
    for partition, (start, end) in sorted(ranges.items()):
        if start < 0:
            raise ValueError(f"partition {partition}: a range cannot start at a negative offset ({start})")
        chunks += [RangeChunk(int(partition), s, min(s + chunk, end)) for s in range(start, end, chunk)]
    return chunks


@dataclass
class ChunkGroup(InputPartition):
    """The chunks one task reads with one consumer."""

    chunks: list[RangeChunk]


def group(chunks: Sequence[RangeChunk], tasks: int) -> list[ChunkGroup]:
    """`chunks` spread over at most `tasks` groups of about equal offsets (largest first, each to the
    lightest group), each group's in partition order. One consumer reading many partitions at once
    costs far less than one consumer (its connections, its metadata) per partition."""
    bins: list[tuple[int, int, list[RangeChunk]]] = [(0, i, []) for i in range(max(1, min(tasks, len(chunks))))]
    for c in sorted(chunks, key=lambda c: (c.start - c.end, c.partition, c.start)):
        load, i, members = min(bins)
        bins[bins.index((load, i, members))] = (load + c.end - c.start, i, members + [c])
    return [ChunkGroup(sorted(m, key=lambda c: (c.partition, c.start))) for _, _, m in sorted(bins, key=lambda b: b[1]) if m]


def read_kafka(
    spark: SparkSession,
    topic: str,
    ranges: Mapping[int, tuple[int, int]],
    client: Mapping[str, str],
    *,
    chunk: int = DEFAULT_CHUNK,
    timeout: float = DEFAULT_TIMEOUT,
    tasks: int | None = None,
) -> DataFrame:
    """Records of offsets [start, end) per partition, with a `topic` column first, as `TopicTable.read`
    gives them, in `tasks` Spark tasks at most (default: twice Spark's default parallelism). A task that
    gets nothing new for `timeout` seconds while short of its end fails."""
    from pyspark.sql import functions as F
    from pyspark.sql.pandas.types import from_arrow_schema

    chunks = split(ranges, chunk)  # fails here, on the driver, rather than in every task
    schema = from_arrow_schema(TOPIC_SCHEMA)
    if not chunks:  # a source without input partitions is read as one partition of no particular range
        df = spark.createDataFrame([], schema)
    else:
        spark.dataSource.register(KafkaRangesDataSource)
        df = (
            spark.read.format(FORMAT)
            .schema(schema)
            .option("topic", topic)
            .option("groups", json.dumps([[[c.partition, c.start, c.end] for c in g.chunks]
                                          for g in group(chunks, tasks or 2 * spark.sparkContext.defaultParallelism)]))
            .option("timeout", str(timeout))
            .option(CLIENT_OPTION, json.dumps(dict(client)))
            .load()
        )
    return df.select(F.lit(topic).alias("topic"), *TOPIC_COLUMNS)


class KafkaRangesDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return FORMAT

    def reader(self, schema: StructType) -> DataSourceReader:
        return KafkaRangesReader(self.options, schema)


class KafkaRangesReader(DataSourceReader):
    def __init__(self, options: Mapping[str, str], schema: StructType):
        self.topic = options["topic"]
        self.groups = [ChunkGroup([RangeChunk(*c) for c in g]) for g in json.loads(options["groups"])]
        self.timeout = float(options["timeout"])
        self.client = json.loads(options[CLIENT_OPTION])
        self.schema = schema

    def partitions(self) -> list[ChunkGroup]:
        return self.groups

    def read(self, partition: ChunkGroup) -> Iterator[pa.RecordBatch]:
        from pyspark.sql.pandas.types import to_arrow_schema

        target = to_arrow_schema(self.schema, timezone="UTC")
        yield from read_chunks(self.topic, partition.chunks, self.client, self.timeout, target)


def read_chunks(
    topic: str, chunks: Sequence[RangeChunk], client: Mapping[str, str], timeout: float,
    schema: pa.Schema = TOPIC_SCHEMA,
) -> Iterator[pa.RecordBatch]:
    """The records of `chunks` as Arrow batches of `schema` (the topic columns, without `topic`), read
    by one consumer: the chunks of distinct partitions at once, a partition's later chunks after."""
    consumer = _open(client)
    try:
        for chunks_of_round in _rounds(chunks):
            yield from _RoundRead(consumer, topic, chunks_of_round, timeout).batches(schema)
    finally:
        consumer.close()


def read_range(
    topic: str, chunk: RangeChunk, client: Mapping[str, str], timeout: float, schema: pa.Schema = TOPIC_SCHEMA
) -> Iterator[pa.RecordBatch]:
    """The records of one chunk as Arrow batches of `schema`."""
    return read_chunks(topic, [chunk], client, timeout, schema)


def watermarks(topic: str, client: Mapping[str, str], timeout: float = 10) -> dict[int, tuple[int, int]]:
    """{partition: (log start offset, end offset)} of every partition of `topic`. Under read_committed
    (the reader's default) the end is the last stable offset: records past it may still be aborted."""
    consumer = _open(client)
    try:
        meta = _kafka_call(lambda: consumer.list_topics(topic, timeout=timeout), f"reading the metadata of topic {topic}")
        described = meta.topics.get(topic)
        error = None if described is None else described.error
        if described is None or (error is not None and error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART):
            raise StateError(f"topic {topic!r} does not exist in the Kafka cluster at {client.get('bootstrap.servers')}; "
                             "create it, or check the topic name")
        if error is not None:
            raise _classified(error, f"topic {topic}: cannot read its metadata")
        return {p: _watermarks(consumer, topic, p, timeout) for p in sorted(described.partitions)}
    finally:
        consumer.close()


def _open(client: Mapping[str, str]) -> Consumer:
    try:
        return new_consumer(consumer_config(client))
    except (KafkaException, ValueError) as e:
        raise ConfigError(f"cannot create a Kafka consumer from the client settings: {e}") from e


def _watermarks(consumer: Consumer, topic: str, partition: int, timeout: float) -> tuple[int, int]:
    """A partition's offsets. A partition whose leader is not known yet (a topic just created, a leader
    moving) is asked again until `timeout` has passed: that is a moment of the cluster, not an error."""
    tp = TopicPartition(topic, partition)
    deadline = time.monotonic() + timeout
    while True:
        try:
            low, high = _kafka_call(lambda: consumer.get_watermark_offsets(tp, timeout=timeout),
                                    f"reading the offsets of {topic}-{partition}")
            return low, high
        except RetriableError:
            if time.monotonic() + LEADER_WAIT_SECONDS > deadline:
                raise
            time.sleep(LEADER_WAIT_SECONDS)


def _classified(error: KafkaError, what: str) -> LakeConnectError:
    """`what` failed with `error`: worth another try, or a person's to look at."""
    text = f"{what}: {error.name()}: {error.str()}"
    if not error.fatal() and (error.retriable() or error.name() in _TRANSIENT):
        return RetriableError(text)
    return FatalError(text)


def _kafka_call(call: Callable[[], Any], what: str) -> Any:
    try:
        return call()
    except KafkaException as e:
        raise _classified(e.args[0], what) from e


class _Rows:
    """Records collected column by column, handed out as Arrow batches."""

    def __init__(self, schema: pa.Schema):
        self.schema = schema
        self._clear()

    def _clear(self) -> None:
        self.partitions: list[int] = []
        self.offsets: list[int] = []
        self.timestamps: list[int | None] = []
        self.types: list[str] = []
        self.keys: list[bytes | None] = []
        self.values: list[bytes | None] = []
        self.headers: list[list[dict[str, Any]]] = []

    def __len__(self) -> int:
        return len(self.offsets)

    def add(self, msg: Message, partition: int, offset: int) -> None:
        kind, millis = msg.timestamp()
        known = _TIMESTAMP_TYPES.get(kind)
        self.partitions.append(partition)
        self.offsets.append(offset)
        self.timestamps.append(None if known is None else millis * 1000)
        self.types.append(known or NO_TIMESTAMP_TYPE)
        self.keys.append(msg.key())
        self.values.append(msg.value())
        headers = msg.headers()
        self.headers.append([{"key": k, "value": v} for k, v in headers] if headers else [])

    def take(self) -> pa.RecordBatch:
        n = len(self)
        columns = {
            "partition": self.partitions, "offset": self.offsets, "timestamp": self.timestamps,
            "timestamp_type": self.types, "key": self.keys, "value": self.values, "headers": self.headers,
        }
        arrays = [pa.array(columns[f.name], f.type) if f.name in columns else pa.nulls(n, f.type) for f in self.schema]
        self._clear()
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)


def _rounds(chunks: Sequence[RangeChunk]) -> list[list[RangeChunk]]:
    """`chunks` in rounds of at most one chunk per Kafka partition (a consumer reads a partition from
    one position at a time), each partition's chunks in offset order."""
    by_partition: dict[int, list[RangeChunk]] = {}
    for c in sorted(chunks, key=lambda c: (c.partition, c.start)):
        by_partition.setdefault(c.partition, []).append(c)
    depth = max((len(v) for v in by_partition.values()), default=0)
    return [[v[i] for v in by_partition.values() if i < len(v)] for i in range(depth)]


class _RoundRead:
    """Chunks of distinct partitions read together by one assigned consumer, their records interleaved
    by partition (each partition's in offset order). A chunk whose end is reached is unassigned, so the
    consumer stops fetching past it."""

    def __init__(self, consumer: Consumer, topic: str, chunks: Sequence[RangeChunk], timeout: float):
        self.consumer, self.topic, self.timeout = consumer, topic, timeout
        self.reads = {c.partition: _ChunkRead(consumer, topic, c, timeout) for c in chunks}

    def batches(self, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
        rows = _Rows(schema)
        open_ = {p: r for p, r in self.reads.items() if r.next < r.end}
        _kafka_call(lambda: self.consumer.assign([TopicPartition(self.topic, r.partition, r.start)
                                                  for r in open_.values()]), f"assigning {self._names(open_)}")
        deadline = time.monotonic() + self.timeout
        while open_:
            wait = deadline - time.monotonic()
            if wait <= 0:
                raise next(iter(open_.values()))._stalled()
            progressed = False
            want = min(sum(r.end - r.next for r in open_.values()), CONSUME_MAX)
            for msg in self._consume(want, min(POLL_SECONDS, wait)):
                partition = msg.partition()
                r = open_.get(partition)
                if r is None:  # a partition already done (a fetch in flight), or an error of the whole client
                    error = msg.error()
                    if error is not None and partition not in self.reads:
                        raise _classified(error, f"reading {self._names(open_)}")
                    continue
                offset, before = msg.offset(), r.next
                if (r.started and before <= offset < r.end and msg.error() is None) or r.take(msg, offset):
                    r.next = offset + 1
                    rows.add(msg, partition, offset)
                    if len(rows) >= BATCH_ROWS:
                        yield rows.take()
                progressed |= r.next > before
                if r.next >= r.end:
                    self._done(open_, r)
            progressed |= self._update_positions(open_)
            if progressed:
                deadline = time.monotonic() + self.timeout
        if rows:
            yield rows.take()

    def _consume(self, n: int, wait: float) -> list[Message]:
        return _kafka_call(lambda: self.consumer.consume(num_messages=n, timeout=wait), f"reading {self.topic}")

    def _update_positions(self, open_: dict[int, _ChunkRead]) -> bool:
        """Moves each open chunk to where the consumer got to in its partition (past a gap at a chunk's
        end, transaction markers or aborted records, no record comes to say so); whether any moved."""
        if not open_:
            return False
        moved = False
        tps = [TopicPartition(self.topic, p) for p in open_]
        found = _kafka_call(lambda: self.consumer.position(tps), f"reading the positions in {self._names(open_)}")
        for tp in found:
            r = open_.get(tp.partition)
            if r is not None and tp.offset > r.next:  # negative (OFFSET_INVALID) until something was consumed
                r.next, moved = min(tp.offset, r.end), True
                if r.next >= r.end:
                    self._done(open_, r)
        return moved

    def _done(self, open_: dict[int, _ChunkRead], r: _ChunkRead) -> None:
        if open_.pop(r.partition, None) is not None and open_:
            _kafka_call(lambda: self.consumer.incremental_unassign([TopicPartition(self.topic, r.partition)]),
                        f"unassigning {r.name}")

    def _names(self, reads: Mapping[int, _ChunkRead]) -> str:
        return ", ".join(r.name for r in reads.values()) or self.topic


class _ChunkRead:
    """Where the read of one chunk is. `next` is the first offset not yet accounted for: every offset
    below it was either delivered or is a gap the consumer moved past."""

    def __init__(self, consumer: Consumer, topic: str, chunk: RangeChunk, timeout: float):
        self.consumer = consumer
        self.topic, self.partition, self.start, self.end = topic, chunk.partition, chunk.start, chunk.end
        self.timeout = timeout
        self.name = f"{topic}-{chunk.partition}"
        self.next = chunk.start
        self.log_end: int | None = None  # the partition's end offset, once an EOF said it
        self.started = False

    def take(self, msg: Message, offset: int) -> bool:
        """Account for one delivery; whether it is a record of the chunk."""
        error = msg.error()
        if error is not None and error.code() == KafkaError._AUTO_OFFSET_RESET:
            raise self._out_of_range(error)
        if error is not None and error.code() != KafkaError._PARTITION_EOF:
            raise _classified(error, f"reading {self.name} at offset {offset}")
        if not self.started and offset > self.start:
            self._check_log_start()
        self.started = True
        if error is not None:  # EOF: every offset below the partition's end was delivered or is a gap
            self.log_end = offset
            self.next = max(self.next, offset)
            return False
        if offset >= self.end:
            self.next = self.end
            return False
        if offset < self.next:
            return False
        self.next = offset + 1
        return True

    def _check_log_start(self) -> None:
        """A first delivery past the start is a gap (transaction markers) unless the records are gone."""
        low, _ = _watermarks(self.consumer, self.topic, self.partition, WATERMARK_TIMEOUT)
        if low > self.next:
            raise self._gone(low)

    def _gone(self, low: int) -> StateError:
        return StateError(
            f"offsets {self.next}..{low - 1} of {self.name} are gone (log start offset is {low}): retention or a "
            f"deletion removed them before they were read. To skip them, move the connector's offset for "
            f"{self.name} to {low}."
        )

    def _out_of_range(self, error: KafkaError) -> LakeConnectError:
        low, high = _watermarks(self.consumer, self.topic, self.partition, WATERMARK_TIMEOUT)
        if low > self.next:
            return self._gone(low)
        if self.next > high:
            return RetriableError(f"offsets {self.next}..{self.end - 1} of {self.name} are past its end offset "
                                  f"{high}: the broker has not got them (yet)")
        return _classified(error, f"reading {self.name} at offset {self.next}")

    def _stalled(self) -> RetriableError:
        ends = f"; the partition ends at offset {self.log_end}" if self.log_end is not None else ""
        return RetriableError(
            f"{self.name}: the broker did not deliver offsets {self.next}..{self.end - 1} within {self.timeout:g} s "
            f"(reached offset {self.next} of {self.start}..{self.end - 1}{ends})"
        )
