"""Appending one batch to many topics with one Spark job.

A source over a thousand tables writes a thousand topics per batch, most of them a few records. Appended
one by one, each topic costs a Spark job of its own (a quarter of a second on two cores, whatever the
size); here every topic whose records are one Spark partition is numbered in its own task of ONE job,
which writes each topic's files into that topic's table, and the driver then commits each topic with
the same pinned, app-transaction-carrying commit a single append makes. Exactly once holds as it does
for appends made one after another: a topic already holding `(app_id, version)` is skipped, and a topic
whose commit loses a race, or that the job could not take, is left to `TopicTable.append`.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import logging
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
from py4j.protocol import Py4JError
from pyspark.errors import PySparkException

from ingest.config.topic_configs import compacted, topic_configs
from ingest.delta._commit import WritePlan, commit_files, plan_write
from ingest.delta._files import META_SCHEMA, DataFile, write_files
from ingest.delta._table import arrow_schema_of_spark, transaction_version
from ingest.delta.write import _remove
from ingest.errors import RetriableError
from ingest.jvm import session_key
from ingest.topics.layout import OFFSET, PARTITION, SEQ, TIMESTAMP_TYPE, TIMESTAMP_TYPE_CONFIG, TOPIC_COLUMNS, VALUE
from ingest.topics.numbering import POSITION_COLUMN, POSITION_FUNCTION, UNSORTED, position_function
from ingest.topics.table import AppendResult, TopicTable

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

log = logging.getLogger(__name__)

TOPIC_INDEX = "__lc_topic"
# Whole-stage code generation compiles a class for each part of the union (each has its own topic index
# literal): most of the job's time for a thousand small parts. Off for this job, its expressions are still
# compiled, once each.
WHOLE_STAGE_CODEGEN = "spark.sql.codegen.wholeStage"
# Spark runs a union of one-partition parts as ONE task, part after part, and a task frees the memory its
# operators took (a sort's pages) only when it ends: a thousand parts with a sort each exhaust it. Each part
# gets a task of its own instead.
UNION_OUTPUT_PARTITIONING = "spark.sql.unionOutputPartitioning"
# Offsets are counted per (topic, partition) slot in an int: topic * MAX_PARTITIONS + partition.
MAX_PARTITIONS = 1 << 12
# Topics per Spark job: the plan of a union of a thousand converted batches (a CDC source's Debezium
# envelopes) outgrew the driver's default 1 GiB heap; a hundred at a time stay small.
JOB_TOPICS = 100


@dataclass
class _Planned:
    index: int  # in the caller's list
    table: TopicTable
    base: dict[int, int]  # each partition's end offset at `pinned`
    staged: DataFrame
    partitions: int
    pinned: int  # the table version the offsets come from: the commit must come right after it
    plan: WritePlan | None = None


def append_topics(
    items: Sequence[tuple[TopicTable, DataFrame]], *, app_id: str, version: int
) -> tuple[dict[int, AppendResult | None], list[int]]:
    """Append each `(topic, records)` of `items` (records as `TopicTable.append` takes them) in ONE commit
    per topic carrying `(app_id, version)`, the records written by one Spark job.

    Each topic's records are numbered in one task, so this is for batches of small parts: give a batch of
    many Spark partitions to `TopicTable.append`. Returns the results by index into `items` (None: the
    topic already held that batch) and the indexes left for `TopicTable.append`: a commit that lost a
    race, or a job that failed (its errors are the single append's to report, in its words).
    """
    if not items or not position_function():
        return {}, list(range(len(items)))
    results: dict[int, AppendResult | None] = {}
    # The staging expressions of one kind of batch (column types, partitions, timestamp type, keys required)
    # are the same for every topic: built once, not once per topic. Errors they raise name the topic they
    # were built for, so a failed job leaves its topics to `TopicTable.append`, which names its own.
    staging: dict[tuple, list] = {}
    for chunk in range(0, len(items), JOB_TOPICS):
        planned: list[_Planned] = []
        for i in range(chunk, min(chunk + JOB_TOPICS, len(items))):
            table, df = items[i]
            dt = table._require()
            meta = table._meta(dt)
            n = meta["partitions"]
            committed = transaction_version(dt, app_id)
            if committed is not None and committed >= version:
                results[i] = None
                continue
            if n >= MAX_PARTITIONS:
                continue
            _, base = table._offsets(dt, n)
            values = topic_configs(table.name, meta["configs"])
            types = {f.name: f.dataType for f in df.schema.fields}
            kind = (tuple((c, t.simpleString()) for c, t in types.items()), n, values[TIMESTAMP_TYPE_CONFIG],
                    compacted(values))
            columns = staging.get(kind)
            if columns is None:
                columns = staging[kind] = table._stage_columns(types, n, version, kind[2], keyed=kind[3])
            planned.append(_Planned(i, table, base, df.select(*columns), n, dt.version()))
        if planned:
            results.update(_append_planned(planned, app_id, version))
    return results, [i for i in range(len(items)) if i not in results]


def _append_planned(planned: list[_Planned], app_id: str, version: int) -> dict[int, AppendResult | None]:
    """One job's topics written, then each committed: the results of those that were, by index in `items`."""
    done: dict[int, AppendResult | None] = {}
    files = None
    for sort in (False, True):
        try:
            files = _write(planned, app_id, version, sort)
            break
        except (PySparkException, Py4JError) as e:
            if UNSORTED in str(e) and not sort:
                continue
            log.warning("a many-topic append of %d topics failed (%s); appending them one by one",
                        len(planned), str(e).splitlines()[0][:200])
            break
    if files is not None:
        for k, p in enumerate(planned):
            mine = files.get(k, [])
            if p.plan is None:  # a twin committed this batch while it was planned
                done[p.index] = None
                continue
            gap = _not_dense(mine, p.base)
            if gap:  # Spark split the topic's records over tasks after all: each counted from the end offset
                log.info("topic '%s': %s; appending it alone", p.table.name, gap)
                _remove(p.plan, mine)
                continue
            try:
                written = commit_files(p.plan, mine, commit_metadata={"lakeconnect.topic": p.table.name})
            except RetriableError as e:
                log.info("topic '%s': %s; appending it alone", p.table.name, e)
                _remove(p.plan, mine)
                continue
            done[p.index] = None if written is None else p.table._result(written, p.base)
    return done


def _not_dense(files: list[DataFile], base: dict[int, int]) -> str | None:
    """What is wrong with the offsets of a topic's written files, if anything: each partition's must run
    from its end offset with neither gap nor repeat."""
    acc: dict[int, list[int]] = {}
    for f in files:
        stats = f.stats_dict
        lo, hi = stats["minValues"][OFFSET], stats["maxValues"][OFFSET]
        a = acc.setdefault(int(f.partition_values[PARTITION]), [lo, hi, 0])
        a[0], a[1], a[2] = min(a[0], lo), max(a[1], hi), a[2] + f.num_records
    for p, (lo, hi, count) in sorted(acc.items()):
        if lo != base[p] or hi - lo + 1 != count:
            return f"partition {p}: offsets {lo}..{hi} for {count} records from end offset {base[p]}"
    return None


def _write(planned: list[_Planned], app_id: str, version: int, sort: bool) -> dict[int, list[DataFile]]:
    """ONE job numbers and writes every topic's records, each topic whole in one task (its offsets counted in
    a (topic, partition) slot of their own), a few tasks each running their share of topics in turn. Each
    topic's write is planned, pinned to the snapshot its offsets came from, first; the files come back by
    topic."""
    from pyspark.sql import functions as F

    from ingest.runtime.pipeline import union_all

    # Each topic's records in one partition (free when they are; big batches of many partitions are for
    # `TopicTable.append`, which numbers them in parallel), numbered as they come, or sorted first, in a slot
    # of their (topic, partition): one expression over the union, the end offsets looked up by slot.
    union = union_all([p.staged.coalesce(1).withColumn(TOPIC_INDEX, F.lit(k)) for k, p in enumerate(planned)])
    # A few tasks, each running its share of the topics one after another: a task per topic would cost
    # more in task and Python worker start-up than most topics' writes.
    union = union.coalesce(min(len(planned), 2 * union.sparkSession.sparkContext.defaultParallelism))
    if sort:
        union = union.sortWithinPartitions(TOPIC_INDEX, PARTITION, SEQ)
    firsts, bases = [], []
    for p in planned:
        firsts.append(len(bases))
        bases.extend(p.base[q] for q in range(p.partitions))
    slot = (F.col(TOPIC_INDEX) * F.lit(MAX_PARTITIONS) + F.col(PARTITION)).cast("int")
    union = union.withColumn(POSITION_COLUMN, F.call_function(POSITION_FUNCTION, slot, F.col(SEQ).cast("long")))
    at = F.element_at(F.expr(f"array({', '.join(map(str, firsts))})"), F.col(TOPIC_INDEX) + 1) + F.col(PARTITION) + 1
    offset = F.element_at(F.expr(f"array({', '.join(f'{b}L' for b in bases)})"), at) + F.col(POSITION_COLUMN)
    union = union.withColumn(OFFSET, F.when(F.col(POSITION_COLUMN) >= 0, offset).otherwise(
        F.raise_error(F.lit(UNSORTED)).cast("long"))).select(*TOPIC_COLUMNS, TOPIC_INDEX)
    schema = arrow_schema_of_spark(union.select(*TOPIC_COLUMNS).schema)
    for p in planned:
        p.plan = plan_write(p.table.uri, schema, mode="append", schema_mode=None, app_id=app_id, version=version,
                            storage_options=p.table.storage_options, expected_version=p.pinned)
    first = next((p.plan for p in planned if p.plan is not None), None)
    if first is None:
        return {}
    spec = replace(first.file_spec(), opaque=(VALUE,), unfiltered=(TIMESTAMP_TYPE,))
    uris = [p.table.uri for p in planned]
    job = union.mapInArrow(
        partial(_write_task, spec=spec, uris=uris),
        f"{TOPIC_INDEX} int, path string, size long, partition_values string, num_records long, stats string",
    )
    with _conf(job.sparkSession, {WHOLE_STAGE_CODEGEN: "false", UNION_OUTPUT_PARTITIONING: "false"}):
        rows = job.collect()
    files: dict[int, list[DataFile]] = {}
    for r in rows:
        files.setdefault(r[TOPIC_INDEX], []).append(
            DataFile(r["path"], r["size"], json.loads(r["partition_values"]), r["num_records"], r["stats"]))
    return files


# (session, SQL setting) -> [jobs holding it, the value they hold, the value before the first]: see `_conf`.
# An entry lives while a job holds it, so there are as many as jobs running at once.
_HELD: dict[tuple[tuple[int, str], str], list] = {}
_HELD_CHANGED = threading.Condition()


@contextlib.contextmanager
def _conf(spark, values: dict[str, str]) -> Iterator[None]:
    """The session's settings `values` while the job is planned and run, then as they were.

    SQL settings belong to the Spark session, which the runs on a worker's threads share: two jobs that each
    saved and restored them could save each other's temporary value as "before" and restore it for good. So
    holders are counted per session and setting: the first job to take a setting saves its value and sets it,
    later ones wanting the same value only count themselves in, the last to finish puts the saved value back;
    one wanting another value waits until the setting is free. Counting, not a lock held for the job, so such
    jobs still run side by side. Other queries of the session planned meanwhile see these values too: both of
    the settings here change how a plan is compiled and partitioned, never its results."""
    session = session_key(spark)
    wanted = {(session, key): value for key, value in values.items()}
    with _HELD_CHANGED:
        _HELD_CHANGED.wait_for(lambda: all(k not in _HELD or _HELD[k][1] == v for k, v in wanted.items()))
        taken: list[tuple[tuple[int, str], str]] = []
        try:
            for held, value in wanted.items():
                if held in _HELD:
                    _HELD[held][0] += 1
                else:
                    before = spark.conf.get(held[1], None)
                    spark.conf.set(held[1], value)
                    _HELD[held] = [1, value, before]
                taken.append(held)
        except BaseException:
            _release(spark, taken)
            raise
    try:
        yield
    finally:
        with _HELD_CHANGED:
            _release(spark, list(wanted))


def _release(spark, taken: list[tuple[tuple[int, str], str]]) -> None:
    """Count one job out of each of `taken`; the last holder of a setting restores it. Called with _HELD_CHANGED
    held, so a setting is restored before another job can read it as its "before"."""
    restore = []
    for held in taken:
        entry = _HELD[held]
        entry[0] -= 1
        if entry[0] == 0:
            del _HELD[held]
            restore.append((held[1], entry[2]))
    try:
        for key, before in restore:
            if before is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, before)
    finally:
        _HELD_CHANGED.notify_all()


def _runs(batches: Iterator[pa.RecordBatch]) -> Iterator[tuple[int, pa.RecordBatch]]:
    """(topic, rows) runs of consecutive rows of one topic."""
    for b in batches:
        if not b.num_rows:
            continue
        topics = b.column(TOPIC_INDEX).to_numpy(zero_copy_only=False)
        cuts = [0, *(np.flatnonzero(topics[1:] != topics[:-1]) + 1).tolist(), b.num_rows]
        for start, end in zip(cuts, cuts[1:]):
            yield int(topics[start]), b.slice(start, end - start)


def _write_task(batches: Iterator[pa.RecordBatch], spec, uris: list[str]) -> Iterator[pa.RecordBatch]:
    """`mapInArrow` body: each run of a topic's records written into that topic's table (a task's records
    come topic after topic: a union's parts one after another)."""
    for topic, run in itertools.groupby(_runs(batches), key=lambda r: r[0]):
        written = write_files((rows for _, rows in run), replace(spec, table_uri=uris[topic]))
        if written:
            meta = pa.RecordBatch.from_pylist(
                [{"path": f.path, "size": f.size, "partition_values": json.dumps(f.partition_values),
                  "num_records": f.num_records, "stats": f.stats} for f in written], schema=META_SCHEMA)
            yield pa.RecordBatch.from_arrays([pa.array([topic] * meta.num_rows, pa.int32()), *meta.columns],
                                             names=[TOPIC_INDEX, *META_SCHEMA.names])
