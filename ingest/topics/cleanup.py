"""Kafka's log cleaning on a topic table: retention (`cleanup.policy=delete`) and compaction (`compact`).

Each record counts as a log segment of its own, so cleaning is record-granular where a broker's is
segment-granular. As of `now_ms`, per partition:

- **delete**: time retention removes the longest prefix of records whose timestamps are all older than
  `now - retention.ms` (-1: no time limit); size retention then removes the oldest records while the
  partition holds more than `retention.bytes` (-1: no limit), so a cleaned partition never holds more.
  A record's bytes are `len(key) + len(value)`: the payload a broker's log size is mostly made of
  (headers and record-batch overheads are left out, so the limit is a little looser than a broker's).
- **compact**: the cleanable range runs from the log start to the first record younger than
  `min.compaction.lag.ms`, and never includes the partition's last record (a broker never cleans the
  active segment). Within it only the highest offset of each key is kept, and such a latest record that
  is a tombstone (null value) goes too once older than `delete.retention.ms`. Keyless records (a topic
  made compacted before its records had keys) are never compacted away.
- **compact,delete**: compaction, then retention over what compaction kept.

A record without a timestamp never expires and never counts as too young to compact.

Offsets are immutable: records keep theirs (compaction leaves gaps), and the commit records, for every
partition it touches, the log start and end offsets as app transactions (`lakeconnect.log-start.<p>`,
`lakeconnect.log-end.<p>`, version = offset), which `TopicTable._offsets` reads back: removing every
record of a partition keeps its end offset, and compacting offset 0 away keeps its log start (only
retention moves it, to the first offset it left).

How: Spark flags the records to remove (windows over each partition, and over each key for
compaction); the driver gets one row per data file (how many of its records go), never records. ONE
commit, pinned to the table version read and made under the topic's lock (appends hold it too), removes
the files whose records all go and replaces those that lose some with their survivors, written by the
executors with their partition and offsets unchanged. It carries the commit metadata
`{"lakeconnect.maintenance": ...}`, by which concurrent pinned writers recognise a cleaning commit.
A clean interrupted before its commit leaves unreferenced files only: readers see the topic unchanged.
"""

from __future__ import annotations

import logging
import re
import time
from collections import defaultdict
from dataclasses import dataclass, field
from functools import reduce
from typing import TYPE_CHECKING, Any

from ingest.config.topic_configs import (
    CLEANUP_POLICY, COMPACT, DELETE, DELETE_RETENTION_MS, MIN_COMPACTION_LAG_MS, RETENTION_BYTES, RETENTION_MS,
    topic_configs,
)
from ingest.delta import CommitOptions, FileOptions, file_name, read_table, snapshot_files, write_dataframe
from ingest.delta._commit import MAINTENANCE_KEY, commit_files, plan_write
from ingest.errors import StateError
from ingest.topics.layout import (
    KEY, LOG_CLEANED_TXN, LOG_END_TXN, LOG_START_TXN, OFFSET, PARTITION, TIMESTAMP, TOPIC_SCHEMA, VALUE,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from ingest.delta import DataFile
    from ingest.topics.table import TopicTable

log = logging.getLogger(__name__)

RETENTION, COMPACTION = "retention", "compaction"
_FILE = "__lakeconnect_clean_file"
_IN_RANGE = "__lakeconnect_cleanable"
_COMPACTED = "__lakeconnect_compacted"
_RETAINED = "__lakeconnect_retained"
_PLAIN_NAME = re.compile(r"[A-Za-z0-9._=-]+")
_NO_LIMIT = -1


@dataclass(frozen=True)
class CleanResult:
    """What one clean removed. `table_version` is None when there was nothing to remove (no commit)."""

    topic: str
    table_version: int | None
    removed: dict[int, int] = field(default_factory=dict)  # records removed per partition (only those touched)
    files_removed: int = 0
    files_added: int = 0
    start_offsets: dict[int, int] = field(default_factory=dict)  # every partition's log start after the clean

    @property
    def records_removed(self) -> int:
        return sum(self.removed.values())

    def to_json(self) -> dict[str, Any]:
        return {"topic": self.topic, "table_version": self.table_version, "records_removed": self.records_removed,
                "removed": {str(p): n for p, n in sorted(self.removed.items())}, "files_removed": self.files_removed,
                "files_added": self.files_added,
                "start_offsets": {str(p): o for p, o in sorted(self.start_offsets.items())}}


@dataclass(frozen=True)
class CleanRules:
    """The topic's configs that decide what goes, with the clean's clock."""

    now_ms: int
    delete: bool
    compact: bool
    retention_ms: int
    retention_bytes: int
    delete_retention_ms: int
    min_compaction_lag_ms: int

    @classmethod
    def of(cls, values: dict[str, Any], now_ms: int) -> CleanRules:
        policy = values[CLEANUP_POLICY]
        return cls(now_ms, DELETE in policy, COMPACT in policy, values[RETENTION_MS], values[RETENTION_BYTES],
                   values[DELETE_RETENTION_MS], values[MIN_COMPACTION_LAG_MS])

    @property
    def idle(self) -> bool:
        """Whether nothing could ever go: a delete-only topic with neither a time nor a size limit."""
        return not self.compact and self.retention_ms == _NO_LIMIT and self.retention_bytes == _NO_LIMIT


def clean_topic(table: TopicTable, *, now_ms: int | None = None, spark: SparkSession | None = None) -> CleanResult:
    """Apply the topic's retention and compaction as of `now_ms` (default: now) in ONE commit; see the
    module's docstring. Nothing to remove: no commit, and the result's `table_version` is None."""
    now_ms = int(time.time() * 1000) if now_ms is None else int(now_ms)
    with table._lock():
        dt = table._require()
        meta = table._meta(dt)
        n = meta["partitions"]
        rules = CleanRules.of(topic_configs(table.name, meta["configs"]), now_ms)
        start, end = table._offsets(dt, n)
        nothing = CleanResult(table.name, None, start_offsets=start)
        files = snapshot_files(dt, table.uri)
        if rules.idle or not files:
            return nothing
        from pyspark import StorageLevel

        from ingest.spark import get_spark

        spark = spark or table._spark or get_spark()
        version = dt.version()
        by_name = _files_by_name(files, table)
        records = read_table(spark, table.uri, version=version, columns=[PARTITION, OFFSET, TIMESTAMP, KEY, VALUE],
                             storage_options=table.storage_options, files=[f.path for f in files], file_column=_FILE)
        flags = _flagged(records, rules).persist(StorageLevel.MEMORY_AND_DISK)
        try:
            plan = _CleanPlan.of(_per_file(flags), by_name, start, end, table)
            if not plan.touched:
                return nothing
            return _commit(plan, flags, table, spark, version, rules)
        finally:
            flags.unpersist()


def _files_by_name(files: list[DataFile], table: TopicTable) -> dict[tuple[int, str], DataFile]:
    """Live files by (partition, file name): how a record names its file (Spark's native writer gives the
    same name to the files one task writes in different partitions, never twice in one)."""
    out: dict[tuple[int, str], DataFile] = {}
    for f in files:
        key = (int(f.partition_values[PARTITION]), file_name(f.path))
        if key in out or not _PLAIN_NAME.fullmatch(key[1]):
            raise StateError(
                f"topic '{table.name}' has data files whose names are repeated in partition {key[0]} or need "
                f"escaping ({key[1]!r}); cleaning identifies files by name. Copy the topic's records to a new "
                "topic (an append rewrites them) and clean that one."
            )
        out[key] = f
    return out


def _flagged(records: DataFrame, rules: CleanRules) -> DataFrame:
    """(file, partition, offset, compacted, retained) of every record: whether compaction removes it,
    whether retention removes it (of those compaction keeps)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    ts = F.unix_millis(F.col(TIMESTAMP))
    offset = F.col(OFFSET)
    by_partition = Window.partitionBy(PARTITION)
    if rules.compact:
        too_young = ts > F.lit(rules.now_ms - rules.min_compaction_lag_ms)
        # Exclusive end of the cleanable range: the first record too young, or the last record (the active
        # segment), whichever comes first. `least` skips the null of a partition with no young record.
        cleanable_end = F.least(F.min(F.when(too_young, offset)).over(by_partition), F.max(offset).over(by_partition))
        records = records.withColumn(_IN_RANGE, (offset < cleanable_end) & F.col(KEY).isNotNull())
        latest = F.max(F.when(F.col(_IN_RANGE), offset)).over(Window.partitionBy(PARTITION, KEY))
        expired_tombstone = F.col(VALUE).isNull() & F.coalesce(
            ts < F.lit(rules.now_ms - rules.delete_retention_ms), F.lit(False))
        records = records.withColumn(_COMPACTED, F.col(_IN_RANGE) & ((offset < latest) | expired_tombstone))
    else:
        records = records.withColumn(_COMPACTED, F.lit(False))
    kept = ~F.col(_COMPACTED)
    removed_by = []
    if rules.delete and rules.retention_ms != _NO_LIMIT:
        fresh = kept & F.coalesce(ts >= F.lit(rules.now_ms - rules.retention_ms), F.lit(True))
        first_fresh = F.min(F.when(fresh, offset)).over(by_partition)  # null: every record kept has expired
        removed_by.append(first_fresh.isNull() | (offset < first_fresh))
    if rules.delete and rules.retention_bytes != _NO_LIMIT:
        size = F.coalesce(F.length(KEY), F.lit(0)) + F.coalesce(F.length(VALUE), F.lit(0))
        newest_first = by_partition.orderBy(offset.desc()).rowsBetween(Window.unboundedPreceding, Window.currentRow)
        # The bytes of this record and of every newer one kept: this record goes while they exceed the limit.
        held = F.sum(F.when(kept, size.cast("long")).otherwise(F.lit(0))).over(newest_first)
        removed_by.append(held > F.lit(rules.retention_bytes))
    retained = kept & reduce(lambda a, b: a | b, removed_by) if removed_by else F.lit(False)
    return records.select(_FILE, PARTITION, OFFSET, _COMPACTED, retained.alias(_RETAINED))


def _per_file(flags: DataFrame) -> list[Any]:
    """One small row per data file (metadata, as the snapshot's file list is): its partition, name,
    records, records removed by compaction and by retention, and its lowest offset kept (null: none)."""
    from pyspark.sql import functions as F

    dropped = F.col(_COMPACTED) | F.col(_RETAINED)
    return (flags.groupBy(PARTITION, _FILE)
            .agg(F.count(F.lit(1)).alias("records"), F.count_if(_COMPACTED).alias("compacted"),
                 F.count_if(_RETAINED).alias("retained"), F.min(F.when(~dropped, F.col(OFFSET))).alias("first_kept"))
            .collect())


@dataclass
class _CleanPlan:
    """The files a clean removes or rewrites, and each touched partition's offsets after it."""

    touched: list[DataFile]  # every file losing records: removed by the commit
    rewritten: list[DataFile]  # those keeping some: their survivors are written again
    kept: dict[int, int]  # records the rewritten files keep, per partition
    compacted: dict[int, int]
    retained: dict[int, int]
    start: dict[int, int]  # every partition's log start after the clean
    end: dict[int, int]

    @classmethod
    def of(cls, rows: list[Any], by_name: dict[tuple[int, str], DataFile], start: dict[int, int],
           end: dict[int, int], table: TopicTable) -> _CleanPlan:
        touched, rewritten = [], []
        kept: dict[int, int] = defaultdict(int)
        compacted: dict[int, int] = defaultdict(int)
        retained: dict[int, int] = defaultdict(int)
        first_kept: dict[int, int] = {}
        for r in rows:
            p = r[PARTITION]
            f = by_name.get((p, r[_FILE]))
            if f is None or f.num_records and f.num_records != r["records"]:  # 0: a file without statistics
                raise StateError(
                    f"topic '{table.name}' partition {p}: file {r[_FILE]!r} read with {r['records']} records is not "
                    f"the snapshot's ({None if f is None else f.num_records}); the table changed while it was read. "
                    "Run the clean again."
                )
            if r["first_kept"] is not None:
                first_kept[p] = min(first_kept.get(p, r["first_kept"]), r["first_kept"])
            gone = r["compacted"] + r["retained"]
            if not gone:
                continue
            touched.append(f)
            compacted[p] += r["compacted"]
            retained[p] += r["retained"]
            if gone < r["records"]:
                rewritten.append(f)
                kept[p] += r["records"] - gone
        after = dict(start)
        for p, count in retained.items():
            if count:  # retention moves the log start to the first offset it left (the end when none)
                after[p] = first_kept.get(p, end[p])
        return cls(touched, rewritten, dict(kept), dict(compacted), dict(retained), after, dict(end))

    @property
    def partitions(self) -> list[int]:
        return sorted(set(self.compacted) | set(self.retained))

    def removed(self) -> dict[int, int]:
        return {p: self.compacted.get(p, 0) + self.retained.get(p, 0) for p in self.partitions}

    def maintenance(self) -> str:
        """What removed records: `compaction`, `retention`, or both (`compaction,retention`)."""
        kinds = [k for k, counts in ((COMPACTION, self.compacted), (RETENTION, self.retained)) if any(counts.values())]
        return ",".join(kinds)

    def transactions(self, now_ms: int) -> list[tuple[str, int]]:
        txns = [(LOG_CLEANED_TXN, now_ms)]
        for p in self.partitions:
            txns += [(f"{LOG_START_TXN}{p}", self.start[p]), (f"{LOG_END_TXN}{p}", self.end[p])]
        return txns


def _commit(plan: _CleanPlan, flags: DataFrame, table: TopicTable, spark: SparkSession, version: int,
            rules: CleanRules) -> CleanResult:
    """ONE commit pinned to `version`: the touched files removed, the survivors of the rewritten ones added."""
    from pyspark.sql import functions as F

    metadata = {MAINTENANCE_KEY: plan.maintenance()}
    txns = plan.transactions(rules.now_ms)
    if not plan.rewritten:  # whole files go: nothing to write
        write = plan_write(table.uri, TOPIC_SCHEMA, schema_mode=None, storage_options=table.storage_options,
                           expected_version=version)
        result = commit_files(write, [], commit_metadata=metadata, removes=plan.touched, app_transactions=txns)
    else:
        names = [file_name(f.path) for f in plan.rewritten]
        partitions = sorted({int(f.partition_values[PARTITION]) for f in plan.rewritten})
        dropped = (flags.where((F.col(_COMPACTED) | F.col(_RETAINED)) & F.col(_FILE).isin(names)
                               & F.col(PARTITION).isin(partitions))
                   .select(PARTITION, OFFSET))
        survivors = (read_table(spark, table.uri, version=version, storage_options=table.storage_options,
                                files=[f.path for f in plan.rewritten])
                     .join(dropped, [PARTITION, OFFSET], "left_anti")
                     .repartition(PARTITION).sortWithinPartitions(PARTITION, OFFSET))
        result = write_dataframe(
            survivors, table.uri, app_id=None, version=None, schema_mode=None, storage_options=table.storage_options,
            files=FileOptions(opaque=(VALUE,)),
            commit=CommitOptions(expected_version=version, remove=tuple(plan.touched), app_transactions=tuple(txns),
                                 metadata=metadata, check_files=_survivors_check(plan, table)))
    if result is None:  # never expected: the commit carries no app transaction of its own to be a retry of
        raise StateError(f"topic '{table.name}': the clean's commit was skipped as already committed; run it again")
    removed = plan.removed()
    log.info("topic '%s': %s removed %d record(s) (%s per partition) in version %d; log start offsets %s",
             table.name, plan.maintenance(), sum(removed.values()), removed, result.version,
             {p: plan.start[p] for p in plan.partitions})
    return CleanResult(table.name, result.version, removed, len(plan.touched), len(result.files), plan.start)


def _survivors_check(plan: _CleanPlan, table: TopicTable):
    """The written files hold exactly the records the rewritten files keep, per partition: checked before
    the commit, so a rewrite that lost or duplicated a record never lands."""

    def check(files: list[DataFile]) -> None:
        written: dict[int, int] = defaultdict(int)
        for f in files:
            written[int(f.partition_values[PARTITION])] += f.num_records
        written = {p: c for p, c in written.items() if c}
        if written != plan.kept:
            raise StateError(f"topic '{table.name}': the clean rewrote {dict(written)} records per partition where "
                             f"the files it replaces keep {plan.kept}; nothing was committed. Run it again.")

    return check
