"""A topic is a Delta table `<lake_root>/topics/<name>`, partitioned by `partition`, with Kafka's
record fields and dense, gap-free offsets from 0 in every partition as appended (compaction leaves gaps;
an offset never changes, see ingest/topics/cleanup.py).

The topic's own metadata (partition count, configs) lives in the table's Delta metadata, written by
the same commit that creates the table, so a topic never exists without it. delta-rs 1.6 refuses
custom keys in a new table's `configuration` ("Error parsing property"), so the metadata is the
table description, as JSON: `{"lakeconnect.topic": {"partitions": 3, "configs": {...}}}`.

Appends assign partitions as Kafka's producer does (explicit partition, else murmur2 of the key
bytes, else round-robin) and offsets from each partition's end offset, which comes from the add
actions' statistics (max `offset` per file), not from the data. The end offsets read and the commit
are one critical section: a `flock` on a local lake, and always a commit pinned to the very next
table version, so two writers can never hand out the same offsets. Remote lakes get the pin only (a
losing writer gets RetriableError); keeping writers apart there is the runner's lease's job.
"""

from __future__ import annotations

import datetime as dt_
import json
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

import pyarrow as pa
from deltalake import DeltaTable
from deltalake.exceptions import DeltaError
from py4j.protocol import Py4JError
from pyspark.errors import PySparkException

from ingest.config.topic_configs import (
    CLEANUP_POLICY,
    COMPACT,
    compacted,
    topic_configs,
)
from ingest.delta import CommitOptions, FileOptions, read_table, write_dataframe
from ingest.delta._table import (
    first_line,
    is_local,
    normalize_uri,
    refresh_table,
    storage_opts,
    transaction_version,
)
from ingest.errors import ConfigError, DataError, Problem, RetriableError, StateError
from ingest.jvm import batch_constant
from ingest.spark import SessionCache
from ingest.topics._lock import lake_lock
from ingest.topics.layout import (
    HEADERS, HEADERS_DDL, KEY, KEY_SCHEMA_ID, LOG_APPEND_TIME, LOG_CLEANED_TXN, LOG_END_TXN, LOG_START_TXN, META_KEY,
    OFFSET, PARTITION, SEQ, TIMESTAMP, TIMESTAMP_TYPE, TIMESTAMP_TYPE_CONFIG, TOPIC_COLUMNS, TOPIC_SCHEMA, TOPICS_DIR,
    VALUE, VALUE_SCHEMA_ID, validate_topic_name,
)
from ingest.topics.numbering import (
    MOVED, POSITION_COLUMN, POSITION_FUNCTION, UNSORTED, Counted, Moved, Unsorted, one_spark_partition,
    partition_choice, position_function, with_offset,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


log = logging.getLogger(__name__)

_KEYLESS = "Compacted topic cannot accept message without key"  # Kafka's broker's words
_STAGE_COLUMNS = SessionCache()


@dataclass(frozen=True)
class TopicDescription:
    name: str
    partitions: int
    configs: dict[str, str]
    end_offsets: dict[int, int]
    start_offsets: dict[int, int]
    created: dt_.datetime | None = None
    table_version: int = 0


@dataclass(frozen=True)
class PartitionAppend:
    """Offsets [first, last] (inclusive) of the `count` records appended to one partition."""

    first: int
    last: int
    count: int


@dataclass(frozen=True)
class AppendResult:
    topic: str
    table_version: int
    partitions: dict[int, PartitionAppend] = field(default_factory=dict)
    bytes: int = 0  # of the Parquet files written (the runs table's bytes_written)

    @property
    def count(self) -> int:
        return sum(p.count for p in self.partitions.values())

    @property
    def end_offsets(self) -> dict[int, int]:
        """The next offset of each partition written to."""
        return {p: r.last + 1 for p, r in self.partitions.items()}


def list_topics(lake_root: str, storage_options: Mapping[str, str] | None = None) -> list[str]:
    """Names of the topics in the lake (directories under `topics/` holding a Delta log). A remote lake is
    listed through the object store delta-rs uses, with the same storage options."""
    root = normalize_uri(lake_root)
    if not is_local(root):
        return _list_remote_topics(f"{root}/{TOPICS_DIR}", storage_options)
    base = os.path.join(root, TOPICS_DIR)
    if not os.path.isdir(base):
        return []
    return sorted(n for n in os.listdir(base) if os.path.isdir(os.path.join(base, n, "_delta_log")))


def _list_remote_topics(base: str, storage_options: Mapping[str, str] | None) -> list[str]:
    from deltalake.fs import DeltaStorageHandler
    from pyarrow.fs import FileSelector, FileType, PyFileSystem

    try:
        fs = PyFileSystem(DeltaStorageHandler(base, storage_opts(storage_options)))
        found = [i.path.rstrip("/") for i in fs.get_file_info(FileSelector("", recursive=False, allow_not_found=True))
                 if i.type == FileType.Directory]
        logs = fs.get_file_info([f"{name}/_delta_log" for name in found]) if found else []
    except (OSError, DeltaError, ValueError) as e:
        raise StateError(f"cannot list the topics under {base}: {first_line(e)}; check the lake's storage "
                         "options (lake.storage.*) and credentials") from e
    return sorted(name for name, log_dir in zip(found, logs) if log_dir.type == FileType.Directory)


class TopicTable:
    """One topic of the lake. Cheap to construct: nothing is read until asked."""

    def __init__(
        self,
        lake_root: str,
        name: str,
        storage_options: Mapping[str, str] | None = None,
        spark: SparkSession | None = None,
    ):
        validate_topic_name(name)
        self.lake_root = normalize_uri(lake_root)
        self.name = name
        self.uri = f"{self.lake_root}/{TOPICS_DIR}/{name}"
        self.storage_options = dict(storage_options) if storage_options else None
        self._spark = spark
        self._table: DeltaTable | None = None

    def __repr__(self) -> str:
        return f"TopicTable({self.uri!r})"

    # --- metadata --------------------------------------------------------------------------------

    def _lock(self):
        return lake_lock(self.lake_root, f"topic-{self.name}")

    def _open(self) -> DeltaTable | None:
        """The topic's table, up to date: the one this object loaded before, brought up to date (a batch opens
        its topic three times), else loaded afresh (see `refresh_table`)."""
        self._table = refresh_table(self._table, self.uri, self.storage_options)
        return self._table

    def _require(self) -> DeltaTable:
        dt = self._open()
        if dt is None:
            raise StateError(
                f"topic '{self.name}' does not exist (no table at {self.uri}); create it first "
                "(`TopicTable.create`) or enable topic auto-creation."
            )
        return dt

    def _meta(self, dt: DeltaTable) -> dict[str, Any]:
        try:
            meta = json.loads(dt.metadata().description or "")[META_KEY]
            partitions = int(meta["partitions"])
        except (ValueError, KeyError, TypeError) as e:
            raise StateError(
                f"Delta table at {self.uri} is not a lakeconnect topic: its description holds no "
                f"{META_KEY!r} metadata ({e}). Move it away or pick another topic name."
            ) from e
        return {"partitions": partitions, "configs": dict(meta.get("configs") or {})}

    def exists(self) -> bool:
        dt = self._open()
        if dt is None:
            return False
        self._meta(dt)
        return True

    def create(
        self, partitions: int, configs: Mapping[str, Any] | None = None, *, if_not_exists: bool = False,
        replication_factor: int = -1, replication_key: str = "",
    ) -> TopicDescription:
        """Create the topic with `partitions` partitions. An existing topic is a StateError, or, with
        `if_not_exists`, left as it is (whatever its partition count, as Kafka's --if-not-exists). A Delta
        table has no replicas of its own (its store keeps it durable): the replication factor is not used."""
        if not isinstance(partitions, int) or partitions < 1:
            raise ConfigError(f"topic '{self.name}': partitions must be a positive integer, not {partitions!r}")
        configs = {str(k): str(v) for k, v in (configs or {}).items()}
        topic_configs(self.name, configs)
        with self._lock():
            if self._open() is None:
                description = json.dumps({META_KEY: {"partitions": partitions, "configs": configs}}, sort_keys=True)
                try:
                    DeltaTable.create(
                        self.uri,
                        TOPIC_SCHEMA,
                        mode="error",
                        partition_by=[PARTITION],
                        name=self.name,
                        description=description,
                        storage_options=self.storage_options,
                    )
                    return self.describe()
                except DeltaError as e:
                    if "already exists" not in str(e):
                        raise StateError(f"cannot create topic '{self.name}' at {self.uri}: {first_line(e)}") from e
            if not if_not_exists:
                existing = self.describe().partitions
                raise StateError(f"topic '{self.name}' already exists with {existing} partitions (asked for "
                                 f"{partitions}); its partition count cannot change: pick another name, or use "
                                 "--if-not-exists to keep the existing topic")
            return self.describe()

    def alter_configs(self, updates: Mapping[str, Any], deletes: Sequence[str] = ()) -> dict[str, str]:
        """Set `updates` and drop `deletes` (back to Kafka's defaults) in the topic's configs, as
        `kafka-configs --alter --add-config/--delete-config` does; the topic's configs after. Compaction
        asked for a topic holding records without a key is refused: Kafka's compacted topics cannot
        hold them."""
        updates = {str(k): str(v) for k, v in updates.items()}
        with self._lock():
            dt = self._require()
            meta = self._meta(dt)
            configs = {k: v for k, v in {**meta["configs"], **updates}.items() if k not in set(deletes)}
            if configs == meta["configs"]:
                return configs
            values = topic_configs(self.name, configs)
            # The stored policy read as text: configs stored before they were checked must not stop their fix.
            was_compacted = COMPACT in [p.strip() for p in str(meta["configs"].get(CLEANUP_POLICY, "")).split(",")]
            if compacted(values) and not was_compacted:
                keyless = self._keyless(dt)
                if keyless:
                    raise ConfigError([Problem(CLEANUP_POLICY, f"topic '{self.name}' holds {keyless} record(s) "
                                               "without a key, and a compacted topic keeps the latest record of "
                                               "each key: give its records keys (a new topic), or keep "
                                               "cleanup.policy=delete")])
            description = json.dumps({META_KEY: {**self._raw_meta(dt), "configs": configs}}, sort_keys=True)
            try:
                dt.alter.set_table_description(description)
            except DeltaError as e:
                raise RetriableError(f"topic '{self.name}': cannot store its configs: {first_line(e)}") from e
            return configs

    def _raw_meta(self, dt: DeltaTable) -> dict[str, Any]:
        return dict(json.loads(dt.metadata().description or "{}").get(META_KEY) or {})

    def _keyless(self, dt: DeltaTable) -> int:
        """How many records have no key (one pass over the key column of the live files)."""
        import pyarrow.dataset as ds

        return dt.to_pyarrow_dataset().count_rows(filter=ds.field(KEY).is_null())

    def describe(self) -> TopicDescription:
        dt = self._require()
        meta = self._meta(dt)
        start, end = self._offsets(dt, meta["partitions"])
        created = dt.metadata().created_time
        return TopicDescription(
            name=self.name,
            partitions=meta["partitions"],
            configs=meta["configs"],
            end_offsets=end,
            start_offsets=start,
            created=dt_.datetime.fromtimestamp(created / 1000, dt_.timezone.utc) if created else None,
            table_version=dt.version(),
        )

    def end_offsets(self) -> dict[int, int]:
        dt = self._require()
        return self._offsets(dt, self._meta(dt)["partitions"])[1]

    def _offsets(self, dt: DeltaTable, partitions: int) -> tuple[dict[int, int], dict[int, int]]:
        """(start, end) offsets per partition from the add actions' statistics; files without
        statistics (written by other tools) have their offset column read instead. Once the topic was
        cleaned, the log start and end offsets its cleans recorded (app transactions) win: records
        removed by retention or compaction take neither their offsets nor the log start with them."""
        lo: dict[int, int] = {}
        hi: dict[int, int] = {}
        try:
            acts = pa.table(dt.get_add_actions(flatten=True))
        except (DeltaError, OSError) as e:
            raise StateError(f"cannot list the files of topic '{self.name}': {first_line(e)}") from e
        if acts.num_rows:
            cols = acts.column_names
            parts = acts.column(f"partition.{PARTITION}").to_pylist()
            mins = acts.column(f"min.{OFFSET}").to_pylist() if f"min.{OFFSET}" in cols else [None] * acts.num_rows
            maxs = acts.column(f"max.{OFFSET}").to_pylist() if f"max.{OFFSET}" in cols else [None] * acts.num_rows
            counts = acts.column("num_records").to_pylist()
            paths = acts.column("path").to_pylist()
            for p, a, b, n, path in zip(parts, mins, maxs, counts, paths):
                if n == 0:
                    continue
                if a is None or b is None:
                    a, b = self._file_offsets(path)
                    if a is None:
                        continue
                lo[p] = min(lo.get(p, a), a)
                hi[p] = max(hi.get(p, b), b)
        end = {p: hi.get(p, -1) + 1 for p in range(partitions)}
        start = {p: lo.get(p, end[p]) for p in range(partitions)}
        if transaction_version(dt, LOG_CLEANED_TXN) is None:  # never cleaned: one look-up, not two per partition
            return start, end
        for p in range(partitions):
            recorded_end = transaction_version(dt, f"{LOG_END_TXN}{p}")
            if recorded_end is not None and recorded_end > end[p]:
                end[p] = recorded_end
            recorded_start = transaction_version(dt, f"{LOG_START_TXN}{p}")
            start[p] = recorded_start if recorded_start is not None else lo.get(p, end[p])
        return start, end

    def _file_offsets(self, path: str) -> tuple[int | None, int | None]:
        from urllib.parse import unquote

        import pyarrow.compute as pc
        import pyarrow.parquet as pq

        if not is_local(self.uri):
            raise StateError(f"topic '{self.name}' has a data file without statistics ({path}); cannot read its offsets remotely")
        col = pq.read_table(f"{self.uri}/{unquote(path)}", columns=[OFFSET]).column(OFFSET)
        if len(col) == col.null_count:
            return None, None
        mm = pc.min_max(col)
        return mm["min"].as_py(), mm["max"].as_py()

    # --- writing ---------------------------------------------------------------------------------

    def append(
        self,
        df: DataFrame,
        *,
        app_id: str,
        version: int,
        partitions: int | None = None,
        auto_create: bool = False,
        configs: Mapping[str, Any] | None = None,
        counts: Callable[[], Sequence[int | None]] | None = None,
    ) -> AppendResult | None:
        """Append records in ONE commit carrying `(app_id, version)`; None if already committed.

        `df` has `key`, `value` (binary, or string as UTF-8), `seq` (long: the order offsets follow
        within a partition; unique per record) and optionally `partition` (int; null = let the topic
        choose), `headers`, `timestamp` (null = now), `key_schema_id`, `value_schema_id`. A partition
        chosen by the topic is murmur2(key) for keyed records, else spread evenly by a hash of
        (seq, version) (deterministic, so a retried batch lands where the first try did).
        `partitions`, when given, must match the topic's; with `auto_create` a missing topic is
        created with that many (default 1) and `configs`. `counts`, when the source can count them, gives
        the records of each Spark partition of `df` (see `RecordBatch.counts`): a one-partition topic then
        numbers them in parallel without counting them first.
        """
        if auto_create:
            self.create(partitions or 1, configs, if_not_exists=True)
        with self._lock():
            dt = self._require()
            meta = self._meta(dt)
            n = meta["partitions"]
            if partitions is not None and partitions != n:
                raise StateError(
                    f"topic '{self.name}' has {n} partitions; this writer expects {partitions}. Partition "
                    "counts of existing topics do not change: use the topic's count or another topic."
                )
            committed = transaction_version(dt, app_id)
            if committed is not None and committed >= version:
                return None
            _, base = self._offsets(dt, n)
            values = topic_configs(self.name, meta["configs"])
            staged = self._stage(df, n, version, values[TIMESTAMP_TYPE_CONFIG], keyed=compacted(values))
            result = self._write_numbered(staged, n, base, app_id=app_id, version=version, pinned=dt.version(),
                                          counts=counts, table=dt)
        if result is None:
            return None
        return self._result(result, base)

    def _write_numbered(self, staged: DataFrame, n: int, base: dict[int, int], *, app_id: str, version: int,
                        pinned: int, counts: Callable[[], Sequence[int | None]] | None = None,
                        table: DeltaTable | None = None):
        """Number the offsets in parallel when the batch allows it (the source's `counts`, or see `_count`),
        else in order, one task per topic partition; write and commit."""
        try:
            planned = counts() if counts is not None and n == 1 and position_function() else None
            if planned is not None and len(planned) > 1:
                for sort in (False, True):
                    try:
                        return self._write(*Counted.planned(planned, base[0]).numbered(staged, sort), app_id,
                                           version, pinned, table)
                    except Unsorted:
                        continue
                    except Moved as e:
                        log.info("topic '%s': %s; counting the batch itself", self.name, e)
                        break
            elif position_function() and one_spark_partition(staged):  # one task: no count needed
                for sort in (False, True):
                    try:
                        return self._write(*self._number_one_task(staged, n, base, sort), app_id, version, pinned,
                                           table)
                    except Unsorted:
                        continue
                    except Moved:
                        break
                return self._write(self._number_in_order(staged, n, base), None, None, app_id, version, pinned, table)
            counted = self._count(staged, n, base)
            if counted is not None:
                # As the records arrive when they arrive sorted (a range read of a key usually does),
                # else sorted within each Spark partition first.
                for sort in ((False, True) if position_function() else (True,)):
                    try:
                        return self._write(*counted.numbered(staged, sort), app_id, version, pinned, table)
                    except Unsorted:
                        continue
                    except Moved as e:
                        log.info("topic '%s': %s; numbering it in one task per partition", self.name, e)
                        break
            return self._write(self._number_in_order(staged, n, base), None, None, app_id, version, pinned, table)
        except (PySparkException, Py4JError) as e:  # Spark wraps the out-of-range error of a task
            if _KEYLESS in str(e):
                msg = next(line for line in str(e).splitlines() if _KEYLESS in line)
                raise DataError(msg[msg.index(_KEYLESS):].split(" SQLSTATE")[0]) from e
            if f"topic '{self.name}' has {n} partitions" in str(e):
                msg = next(line for line in str(e).splitlines() if f"topic '{self.name}' has" in line)
                raise DataError(msg[msg.index("topic '"):].split(" SQLSTATE")[0]) from e
            raise

    def _write(self, records: DataFrame, check, single_partition: int | None, app_id: str, version: int,
               pinned: int, table: DeltaTable | None = None):
        try:
            return write_dataframe(
                records,
                self.uri,
                app_id=app_id,
                version=version,
                schema_mode=None,
                storage_options=self.storage_options,
                table=table,
                files=FileOptions(opaque=(VALUE,), unfiltered=(TIMESTAMP_TYPE,),
                                  single_partition=None if single_partition is None else {PARTITION: str(single_partition)}),
                commit=CommitOptions(expected_version=pinned, metadata={"lakeconnect.topic": self.name},
                                     check_files=check),
            )
        except (PySparkException, Py4JError) as e:
            if UNSORTED in str(e):
                raise Unsorted() from e
            if MOVED in str(e):
                raise Moved("its records changed between counting and writing") from e
            raise

    def _count(self, staged: DataFrame, n: int, base: dict[int, int]) -> Counted | None:
        """The batch's records counted per (Spark partition, topic partition), with their `seq` range; None
        when the offsets need one global order (no records, null seqs, or seq ranges of two Spark
        partitions interleaving in a topic partition)."""
        from pyspark.sql import functions as F

        stats = staged.groupBy(F.spark_partition_id().alias("pid"), F.col(PARTITION)).agg(
            F.count(F.lit(1)).alias("n"), F.count(SEQ).alias("seqs"), F.min(SEQ).alias("lo"), F.max(SEQ).alias("hi")
        ).collect()
        if not stats or any(r["n"] != r["seqs"] for r in stats):
            return None
        counted = Counted(n, max(r["pid"] for r in stats) + 1, base)
        for spark_part in {r["pid"] for r in stats}:  # sorted within a Spark partition: by (partition, seq)
            at = 0
            for r in sorted((r for r in stats if r["pid"] == spark_part), key=lambda r: r[PARTITION]):
                counted.put(spark_part, r[PARTITION], start=at)
                at += r["n"]
        for p in sorted({r[PARTITION] for r in stats}):
            ranges = sorted((r for r in stats if r[PARTITION] == p), key=lambda r: r["lo"])
            if any(a["hi"] >= b["lo"] for a, b in zip(ranges, ranges[1:])):
                return None
            first = base[p]
            for r in ranges:
                counted.put(r["pid"], p, count=r["n"], first=first, lo=r["lo"], hi=r["hi"])
                first += r["n"]
            counted.expected[p] = first - base[p]
        return counted

    def _number_one_task(self, staged: DataFrame, n: int, base: dict[int, int], sort: bool):
        """A batch of one Spark partition: each record's offset is its partition's end offset plus the
        records before it there, counted as they come (or after a sort). A second task, should Spark
        split the batch after all, fails the write before anything is committed."""
        from pyspark.sql import functions as F

        if sort:
            staged = staged.sortWithinPartitions(PARTITION, SEQ)
        staged = staged.withColumn(POSITION_COLUMN, F.call_function(POSITION_FUNCTION, F.col(PARTITION),
                                                              F.col(SEQ).cast("long")))
        position = F.col(POSITION_COLUMN)
        bases = F.array(*[F.lit(base[p]).cast("long") for p in range(n)])
        failure = F.when(position < 0, F.lit(UNSORTED)).otherwise(F.lit(MOVED))
        offset = F.when((F.spark_partition_id() == 0) & (position >= 0),
                        F.element_at(bases, F.col(PARTITION) + 1) + position).otherwise(F.raise_error(failure).cast("long"))
        return staged.select(*with_offset(offset)), None, 0 if n == 1 else None

    def _number_in_order(self, staged: DataFrame, n: int, base: dict[int, int]) -> DataFrame:
        """Offsets by `row_number` over each topic partition in seq order: one task per partition."""
        from pyspark.sql import Window
        from pyspark.sql import functions as F

        bases = F.array(*[F.lit(base[p]).cast("long") for p in range(n)])
        position = F.row_number().over(Window.partitionBy(PARTITION).orderBy(SEQ))
        offset = F.element_at(bases, F.col(PARTITION) + 1) + position - 1
        return staged.withColumn(OFFSET, offset).select(*TOPIC_COLUMNS)

    def _stage(self, df: DataFrame, n: int, version: int, ts_type: str, keyed: bool = False) -> DataFrame:
        """The records in the topic's columns, each with its partition and `seq`, not yet numbered. With
        `keyed` (a compacted topic) a record without a key fails the batch, as Kafka's broker refuses it."""
        types = {f.name: f.dataType for f in df.schema.fields}
        # The columns depend on these only (the version only where it spreads unkeyed records over partitions):
        # a topic's next batch of the same shape takes them from the session's cache.
        key = ("stage", self.name, tuple((k, t.json()) for k, t in types.items()), n, version if n > 1 else None,
               ts_type, keyed)
        return df.select(*_STAGE_COLUMNS.get(df.sparkSession, key, lambda: tuple(
            self._stage_columns(types, n, version, ts_type, keyed))))

    def _stage_columns(self, types: Mapping[str, Any], n: int, version: int, ts_type: str, keyed: bool = False):
        """`_stage`'s columns for records of column `types` (expressions only: the same for every batch of
        those types)."""
        from pyspark.sql import functions as F
        from pyspark.sql.types import BinaryType, NullType, StringType

        if SEQ not in types:
            raise ValueError(f"records for topic '{self.name}' need a `seq` column (their order); columns: {list(types)}")
        for col in (KEY, VALUE):
            t = types.get(col)
            if t is not None and not isinstance(t, (BinaryType, StringType, NullType)):
                raise DataError(
                    f"records for topic '{self.name}': column `{col}` is {t.simpleString()}, not bytes; "
                    f"serialise it with the {col} converter first"
                )

        def opt(col: str, ddl: str):
            return F.col(col).cast(ddl) if col in types else F.lit(None).cast(ddl)

        key = opt(KEY, "binary")
        if keyed:
            key = F.when(key.isNull(), F.raise_error(F.concat(
                F.lit(f"{_KEYLESS} (record seq "), F.col(SEQ).cast("string"),
                F.lit(f"): topic '{self.name}' has cleanup.policy=compact, which keeps the latest record of each "
                      "key; give the records keys, or write them to a topic with cleanup.policy=delete"),
            ))).otherwise(key)
        chosen = partition_choice(types, n, version, self.name)
        now = batch_constant(F.current_timestamp())
        ts = now if ts_type == LOG_APPEND_TIME else F.coalesce(opt(TIMESTAMP, "timestamp"), now)
        headers = (
            F.coalesce(F.col(HEADERS).cast(HEADERS_DDL), F.array().cast(HEADERS_DDL))
            if HEADERS in types
            else F.array().cast(HEADERS_DDL)
        )
        return [
            chosen.alias(PARTITION),
            F.col(SEQ).cast("long").alias(SEQ),
            F.date_trunc("millisecond", ts).alias(TIMESTAMP),  # Kafka timestamps are milliseconds
            F.lit(ts_type).alias(TIMESTAMP_TYPE),
            key.alias(KEY),
            opt(VALUE, "binary").alias(VALUE),
            headers.alias(HEADERS),
            opt(KEY_SCHEMA_ID, "int").alias(KEY_SCHEMA_ID),
            opt(VALUE_SCHEMA_ID, "int").alias(VALUE_SCHEMA_ID),
        ]

    def _result(self, result, base: dict[int, int]) -> AppendResult:
        """Per-partition offsets from the written files' statistics (no pass over the data)."""
        acc: dict[int, list[int]] = {}
        for f in result.files:
            p = int(f.partition_values[PARTITION])
            stats = f.stats_dict
            lo, hi = stats["minValues"][OFFSET], stats["maxValues"][OFFSET]
            a = acc.setdefault(p, [lo, hi, 0])
            a[0], a[1], a[2] = min(a[0], lo), max(a[1], hi), a[2] + f.num_records
        parts = {}
        for p, (lo, hi, count) in sorted(acc.items()):
            if lo != base[p] or hi - lo + 1 != count:  # never expected: offsets must be dense
                raise StateError(
                    f"topic '{self.name}' partition {p}: appended offsets {lo}..{hi} ({count} records) are "
                    f"not dense from the end offset {base[p]}; is `seq` unique?"
                )
            parts[p] = PartitionAppend(lo, hi, count)
        return AppendResult(self.name, result.version, parts, sum(f.size for f in result.files))

    # --- reading ---------------------------------------------------------------------------------

    def first_record(self, ranges: Mapping[int, tuple[int, int]]) -> dict[str, bytes | None] | None:
        """The key and value bytes of the first record of the lowest partition's range [start, end), read on
        the driver from the one data file holding it (its row group found by statistics): what a converter
        needs to plan a batch, without a Spark job. None when the ranges are empty or no file's statistics
        name the record (the caller then asks Spark)."""
        import pyarrow.compute as pc
        import pyarrow.parquet as pq

        wanted = sorted((int(p), int(s)) for p, (s, e) in ranges.items() if e > s)
        if not wanted:
            return None
        partition, start = wanted[0]
        dt = self._require()
        try:
            actions = pa.table(dt.get_add_actions(flatten=True))
        except (DeltaError, OSError, ValueError) as e:
            raise StateError(f"cannot list the files of topic '{self.name}' ({self.uri}): {first_line(e)}") from e
        columns = (f"partition.{PARTITION}", f"min.{OFFSET}", f"max.{OFFSET}")
        if any(c not in actions.column_names for c in columns):  # statistics not kept: let Spark look
            return None
        holds = pc.and_(pc.equal(actions[columns[0]], partition),
                        pc.and_(pc.less_equal(actions[columns[1]], start), pc.greater_equal(actions[columns[2]], start)))
        paths = actions.filter(pc.fill_null(holds, False))["path"].to_pylist()
        if not paths:
            return None
        path = unquote(paths[0])
        if "://" in path:  # a file the log names by its full URI (not written here): let Spark read it
            return None
        try:
            if is_local(self.uri):
                source = path if path.startswith("/") else os.path.join(self.uri, path)
                return _record_at(pq.ParquetFile(source), start)
            from deltalake.fs import DeltaStorageHandler
            from pyarrow.fs import PyFileSystem

            fs = PyFileSystem(DeltaStorageHandler(self.uri, storage_opts(self.storage_options)))
            with fs.open_input_file(path) as f:
                return _record_at(pq.ParquetFile(f), start)
        except (OSError, pa.ArrowException) as e:  # Spark's read of the batch says what is wrong, if anything
            log.debug("topic '%s': first record not read from %s (%s); Spark reads it", self.name, path,
                      first_line(e))
            return None

    def read(
        self, ranges: Mapping[int, tuple[int, int]] | None = None, *, spark: SparkSession | None = None
    ) -> DataFrame:
        """Records of offsets [start, end) per partition (None = the whole topic), with a `topic`
        column first. Files outside the ranges are pruned by partition and offset statistics."""
        from pyspark.sql import functions as F

        from ingest.spark import get_spark

        spark = spark or self._spark or get_spark()
        dt = self._require()
        n = self._meta(dt)["partitions"]
        if ranges is None:
            df = read_table(spark, self.uri, version=dt.version(), storage_options=self.storage_options)
        else:
            wanted = {int(p): (int(s), int(e)) for p, (s, e) in ranges.items() if e > s}
            outside = [p for p in wanted if not 0 <= p < n]
            if outside:
                raise StateError(f"topic '{self.name}' has {n} partitions; cannot read partition(s) {outside}")
            if not wanted:
                df = read_table(spark, self.uri, version=dt.version(), storage_options=self.storage_options).limit(0)
            else:
                sql = " OR ".join(
                    f'("{PARTITION}" = {p} AND "{OFFSET}" >= {s} AND "{OFFSET}" < {e})' for p, (s, e) in wanted.items()
                )
                df = read_table(
                    spark, self.uri, version=dt.version(), partition_filters=sql, storage_options=self.storage_options
                )
                cond = None
                for p, (s, e) in wanted.items():
                    c = (F.col(PARTITION) == p) & (F.col(OFFSET) >= s) & (F.col(OFFSET) < e)
                    cond = c if cond is None else cond | c
                df = df.where(cond)
        return df.select(F.lit(self.name).alias("topic"), *TOPIC_COLUMNS)


def _record_at(pf: Any, offset: int) -> dict[str, bytes | None] | None:
    """Key and value of the record at `offset` in an open Parquet file of a topic, reading the one row
    group whose statistics hold it (all of them when a writer kept none)."""
    import pyarrow.compute as pc

    index = pf.schema_arrow.get_field_index(OFFSET)
    for g in range(pf.metadata.num_row_groups):
        stats = pf.metadata.row_group(g).column(index).statistics
        if stats is not None and stats.has_min_max and not stats.min <= offset <= stats.max:
            continue
        for batch in pf.iter_batches(batch_size=8192, row_groups=[g], columns=[OFFSET, KEY, VALUE]):
            at = pc.index(batch.column(OFFSET), offset).as_py()
            if at >= 0:
                row = batch.slice(at, 1).to_pylist()[0]
                return {KEY: row[KEY], VALUE: row[VALUE]}
    return None

