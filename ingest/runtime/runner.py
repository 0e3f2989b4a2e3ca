"""One batch of a source or sink task, exactly once (DESIGN §3):

    plan (persist intent: batch id + exact ranges, bounded at plan time) -> read -> transform ->
    convert -> write (idempotent by batch id) -> commit offsets -> done

The batch protocol itself (next batch, PLANNED, offsets in the app transaction, COMMITTED) is
ingest/runtime/batches.py; this module runs the steps between.
"""

from __future__ import annotations

import functools
import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ingest.api import DECLINED, SinkTask, SourcePlan, SourceTask, TopicRange
from ingest.cache import BoundedSet
from ingest.config.connector import (AUTO_OFFSET_RESET, DLQ_REPLICATION, EARLIEST, LATEST, TOPIC_CREATION_PARTITIONS,
                                     TOPIC_CREATION_REPLICATION, TOPICS,
                                     TOPICS_REGEX, ConnectorSetup, topic_creation_configs)
from ingest.errors import DataError, LakeConnectError, StateError
from ingest.records import ERROR, TOPIC, RecordBatch
from ingest.runtime import faults
from ingest.runtime.batches import Batch, BatchLog, sink_group, task_app_id
from ingest.runtime.pipeline import Pipeline, plugin_class_name, union_all
from ingest.runtime.tolerance import (
    KAFKA_PRODUCE, ORIGIN, TASK_POLL, TASK_PUT, VALUE_CONVERTER, dead_letters, fill_class, guard,
    has_errors, log_failed, run_guarded, split, strip,
)
from ingest.state.stores import COMMITTED, EMPTY, Stores
from ingest.state.tables import canonical_json, eq
from ingest.topics import SchemaRegistry
from ingest.topics.backend import DeltaTopics, Topic, TopicBackend
from ingest.topics.many import JOB_TOPICS


@dataclass
class BatchReport:
    connector: str
    task: int
    batch_id: int | None
    outcome: str  # COMMITTED | EMPTY
    resumed: bool = False
    records: int = 0
    timings_ms: dict[str, float] = field(default_factory=dict)
    ranges: list[dict[str, Any]] = field(default_factory=list)
    failed: int = 0
    topics: list[str] = field(default_factory=list)  # a source's topics that got records (dags/ emits assets)
    # False when a sink committed no new position: it holds its records (flush.size not reached, say), so
    # running another batch now would read the same records again.
    progressed: bool = True

    def to_json(self) -> dict[str, Any]:
        return {"connector": self.connector, "task": self.task, "batch_id": self.batch_id, "outcome": self.outcome,
                "records": self.records, "failed": self.failed, "resumed": self.resumed, "topics": self.topics,
                "timings_ms": self.timings_ms}

    def summary(self) -> str:
        if self.outcome == EMPTY:
            return f"task {self.task}: nothing new"
        again = " (resumed after an interrupted run)" if self.resumed else ""
        total = sum(self.timings_ms.values())
        failed = f", {self.failed} failed records set aside (errors.tolerance=all)" if self.failed else ""
        if not self.progressed:
            return (f"task {self.task}: batch {self.batch_id} read {self.records} records in {total:.0f} ms and holds "
                    f"them (no object closed yet: flush.size or rotation not reached); a later run reads them "
                    f"again{failed}{again}")
        return (f"task {self.task}: batch {self.batch_id} committed {self.records} records in {total:.0f} ms"
                f"{failed}{again}")


# From this many topics in one source batch, the topics whose records are one Spark partition each are
# written by one Spark job (see ingest/topics/many.py) rather than a job each.
MANY_TOPICS = 8
# (connector, task) whose batch a converter's optimistic plan declined in this process: later batches take the
# general plans at once (the records that needed them are often of a kind the table keeps sending). At most
# 4,096 tasks, the least recently run first out: one dropped only tries the optimistic plan once more.
_DECLINED: BoundedSet[tuple[str, int]] = BoundedSet(4096)
# (connector, task) whose sink batch had records of another schema than its first in this process: later
# batches find their schemas first (Converter.to_connect). Bounded as _DECLINED.
_DECLINED_READS: BoundedSet[tuple[str, int]] = BoundedSet(4096)
MARKERS_FROM = "markers_from"  # in a source batch's plan: where its Kafka transactions' markers start
RESETS = "resets"  # in a sink batch's plan: the positions auto.offset.reset moved past removed records


@dataclass(frozen=True)
class OffsetReset:
    """A sink's position in a topic partition moved by `auto.offset.reset` from below the log start (records
    removed by retention or compaction before it read them) to `to`: the offsets in between are skipped."""

    topic: str
    partition: int
    committed: int
    to: int

    @property
    def skipped(self) -> int:
        return self.to - self.committed

    def to_json(self) -> dict[str, Any]:
        return {"topic": self.topic, "partition": self.partition, "committed": self.committed, "to": self.to}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> OffsetReset:
        return cls(d["topic"], int(d["partition"]), int(d["committed"]), int(d["to"]))


class _Steps:
    """Times each step and passes the fault-injection point after it."""

    def __init__(self, progress: Callable[[str], None] | None):
        self.timings: dict[str, float] = {}
        self._t = time.perf_counter()
        self._progress = progress

    def done(self, step: str) -> None:
        t = time.perf_counter()
        self.timings[step] = round((t - self._t) * 1000, 1)
        self._t = t
        if self._progress:
            self._progress(step)
        faults.point(step)


class BatchRunner:
    """Runs batches of one connector task against the lake's topics and state stores."""

    def __init__(self, setup: ConnectorSetup, stores: Stores, lake_root: str, storage_options: dict[str, str],
                 pipeline: Pipeline, log, progress: Callable[[str], None] | None = None,
                 topics: TopicBackend | None = None):
        self.setup = setup
        self.topics = topics or DeltaTopics(lake_root, storage_options or None)
        self.stores = stores
        self.lake_root = lake_root
        self.storage_options = storage_options
        self.pipeline = pipeline
        self.log = log
        self.progress = progress
        self.name = setup.name

    def _topic(self, name: str) -> Topic:
        return self.topics.topic(name)

    # --- sources -----------------------------------------------------------------------------------

    def run_source(self, task: SourceTask, task_id: int, offsets_key: str, offsets_store=None) -> BatchReport:
        offsets_store = offsets_store or self.stores.offsets
        steps = _Steps(self.progress)
        app_id = task_app_id(self.name, task_id, sink=False)
        log = BatchLog(self.stores.runs, self.name, task_id, app_id)
        current = log.next()
        batch_id = current.id
        if current.resumed:
            plan = SourcePlan.from_json(current.plan)
            mark = current.plan.get(MARKERS_FROM)
            self.log.info(f"resuming batch {batch_id}, planned by an interrupted run")
        else:
            committed = {p: e.offset for p, e in offsets_store.committed(offsets_key).items()}
            if not committed:
                self._refuse_silent_reset(task_id, offsets_key, offsets_store)
            plan = task.plan(committed)
            if plan.empty:
                log.empty(current)
                return BatchReport(self.name, task_id, None, EMPTY)
            mark = self.pipeline.policy.retrying(self.topics.batch_mark, KAFKA_PRODUCE, "reading the batch markers' end")
            log.planned(current, {**plan.to_json(), **({MARKERS_FROM: mark} if mark is not None else {})})
        marks = {MARKERS_FROM: mark} if mark is not None else {}
        steps.done("plan")

        policy = self.pipeline.policy
        batches = policy.retrying(lambda: task.read(plan), TASK_POLL, f"reading batch {batch_id}")
        steps.done("read")
        batches = self.pipeline.transform(batches)
        steps.done("transform")
        explained = functools.partial(_explained, task, plan)
        # The converters' plans for the usual records first, unless one of them declined a record of this connector
        # before in this process: a batch that declines is converted and written again with the general plans.
        # Topic tables only: a Kafka topic may have taken some of the batch's records when the query fails.
        optimistic = self.topics.atomic_appends and (self.name, task_id) not in _DECLINED
        frames, persisted, topics, failed = explained(lambda: run_guarded(
            lambda: self._serialise(batches, optimistic=optimistic), self.name, task_id))
        steps.done("convert")

        written_bytes = [0]

        def write() -> int:
            written = 0
            partitions = self.setup.config[TOPIC_CREATION_PARTITIONS]
            if frames:
                # A topic's records come from the frames that can hold them: a batch per table of a 1,000-table
                # source is a frame of one topic each, and filtering one union of them all for every topic
                # would make Spark analyse the whole union a thousand times.
                by_topic: dict[str, list] = {}
                for frame, _, frame_topics in frames:
                    for topic in frame_topics:
                        # A frame of one topic holds only its records: no filter (Spark analyses each one).
                        by_topic.setdefault(topic, []).append(
                            frame if len(frame_topics) == 1 else frame.filter(F.col(TOPIC) == topic))
                # The source's count of the records holds for one frame of one topic, all of it written.
                counts = frames[0][1] if len(frames) == 1 and len(topics) == 1 and not failed else None
                tables, parts = {}, {}
                for topic in sorted(topics):
                    tables[topic] = table = self._topic(topic)
                    policy.retrying(lambda t=table: t.create(
                        partitions, topic_creation_configs(self.setup.config.originals), if_not_exists=True,
                        replication_factor=self.setup.config[TOPIC_CREATION_REPLICATION],
                        replication_key=TOPIC_CREATION_REPLICATION), KAFKA_PRODUCE, f"creating topic '{topic}'")
                    parts[topic] = union_all(by_topic[topic])  # a topic's append selects the columns it writes
                results = {}
                if len(topics) >= MANY_TOPICS and not marks:
                    # Many topics (a source over many tables): one Spark job writes those of small batches. A
                    # batch read in parallel ranges (it has counts) is big: it is numbered in parallel alone.
                    big = {t for _, c, frame_topics in frames if c is not None for t in frame_topics}
                    names = sorted(set(topics) - big)
                    done = self.topics.append_together([(tables[t], parts[t]) for t in names], app_id=app_id,
                                                       version=batch_id)
                    results = {names[i]: r for i, r in done.items()}
                    if done:
                        self.log.info(f"{len(done)} of {len(topics)} topics written together "
                                      f"({-(-len(names) // JOB_TOPICS)} Spark jobs of up to {JOB_TOPICS} topics)")
                for topic in sorted(topics):
                    if topic in results:
                        result = results[topic]
                    else:
                        result = policy.retrying(
                            lambda t=tables[topic], d=parts[topic]: t.append(d, app_id=app_id, version=batch_id,
                                                                             counts=counts, **marks),
                            KAFKA_PRODUCE, f"writing topic '{topic}'")
                    if result is not None:
                        written += result.count
                        written_bytes[0] += result.bytes
            return written

        def write_or_convert_again() -> int:
            nonlocal frames, persisted, topics, failed
            try:
                return write()
            except Exception as e:  # Spark's own exception types vary with the session kind
                if not optimistic or DECLINED not in str(e):
                    raise
            # Nothing was committed but topics whose records all took the optimistic plans (the same bytes).
            self.log.info(f"batch {batch_id}: a record needs a converter's general plan; converting the batch again")
            _DECLINED.add((self.name, task_id))
            for p in persisted:
                p.unpersist()
            frames, persisted, topics, failed = self._serialise(batches, optimistic=False)
            return write()

        records = explained(lambda: run_guarded(write_or_convert_again, self.name, task_id))
        failures = sum(log_failed(policy, f, self.name, task_id, sink=False) for f in failed)
        for p in persisted:
            p.unpersist()
        steps.done("write")

        ends = {canonical_json(r.partition): r.end for r in plan.ranges}
        log.commit_offsets(current, offsets_store, offsets_key, ends)
        steps.done("commit")
        report = BatchReport(self.name, task_id, batch_id, COMMITTED, current.resumed, records,
                             steps.timings, [r.to_json() for r in plan.ranges], failures,
                             sorted(topics))
        # Kafka Connect's source task metrics in spirit (ch. 9): polled, written, skipped, time per step.
        stats = {"records_read": records + failures, "records_written": records, "records_skipped": failures,
                 "errors_logged": failures if policy.log_enable else 0, "bytes_written": written_bytes[0],
                 "topics": sorted(topics), "timings_ms": steps.timings,
                 "latency_ms": round(sum(steps.timings.values()), 1)}
        log.committed(current, stats, plan.to_json())
        steps.done("done")
        return report

    def _refuse_silent_reset(self, task_id: int, offsets_key: str, offsets_store) -> None:
        """Batches were committed but the offsets table knows nothing of this connector: it was
        replaced or pointed elsewhere. Starting over would duplicate everything; a person decides."""
        last = self.stores.runs.last(self.name, task_id)
        if last is None or last["state"] != COMMITTED:
            return
        if offsets_store.read(eq("connector", offsets_key), columns=["connector"]).num_rows == 0:
            raise StateError(
                f"connector '{self.name}' has committed batches (last: {last['batch_id']}) but the offsets table "
                f"{offsets_store.uri} has no offsets for it; it was replaced or the worker points at another one. "
                f"Restore it, point offset.storage.topic back, or start over on purpose with "
                f"`lakeconnect connectors stop {self.name}` and `lakeconnect offsets reset {self.name}`")

    def _serialise(self, batches: list[RecordBatch], optimistic: bool = False):
        registry = SchemaRegistry(self.lake_root, storage_options=self.storage_options or None)
        policy = self.pipeline.policy
        persisted, all_topics, failed = [], set(), []
        staged: list[tuple[RecordBatch, list[str], list[str | None]]] = []
        for batch in batches:
            if has_errors(batch.df):
                if policy.tolerate:  # failed records are set aside: compute the batch once for both parts
                    df = batch.df.persist(StorageLevel.MEMORY_AND_DISK)
                    persisted.append(df)
                    good, bad = split(df)
                    failed.append(bad)
                    batch = replace(batch, df=good, counts=None)
                else:
                    batch = batch.with_df(strip(guard(batch.df)))
            topics = list(batch.topics) if batch.topics is not None else None
            if topics is None:  # finding them runs the batch once: keep the result for the write
                df = batch.df.persist(StorageLevel.MEMORY_AND_DISK)
                persisted.append(df)
                batch = batch.with_df(df)
                topics = self._distinct_topics(df)
            if topics:
                texts = [None if schema is None else json.dumps(schema.to_json(), separators=(",", ":"))
                         for schema in (batch.key_schema, batch.value_schema)]
                staged.append((batch, topics, texts))
        # Every batch's subjects in one registration: one read of the registry and one commit, not one per table.
        wanted = [(f"{t}-{part}", text) for _, topics, texts in staged for part, text in zip(("key", "value"), texts)
                  if text is not None for t in topics]
        ids = dict(zip(wanted, registry.register_many(wanted))) if wanted else {}
        frames = []
        for batch, topics, texts in staged:
            try:
                frame = self._serialise_one(batch, topics, texts, ids, optimistic)
            except DataError as e:  # the converter cannot write this batch's schema at all
                if not policy.tolerate:
                    raise
                failed.append(batch.fail_all(str(e), stage=e.stage or VALUE_CONVERTER,
                                             executing_class=e.executing_class).df)
                continue
            all_topics.update(topics)
            frames.append((frame, batch.counts, tuple(topics)))
        return frames, persisted, all_topics, failed

    def _serialise_one(self, batch: RecordBatch, topics: list[str], texts: list[str | None],
                       ids: dict[tuple[str, str], int], optimistic: bool = False):
        columns = [None if text is None else _per_topic({t: ids[(f"{t}-{part}", text)] for t in topics})
                   for part, text in zip(("key", "value"), texts)]
        return self.pipeline.serialise(batch, (_id_column(columns[0]), _id_column(columns[1])), optimistic, topics)

    @staticmethod
    def _distinct_topics(df) -> list[str]:
        return [r[0] for r in df.select(TOPIC).distinct().collect()]

    # --- sinks -------------------------------------------------------------------------------------

    def _sink_topics(self) -> list[str]:
        config = self.setup.config
        if config[TOPICS]:
            return list(config[TOPICS])
        pattern = re.compile(config[TOPICS_REGEX])
        return [t for t in self.topics.names() if pattern.fullmatch(t)]

    def _assigned(self, task_id: int, task_count: int, *, warn: bool = False) -> list[tuple[str, int, int, int]]:
        """This task's (topic, partition, log start, end offset): the topics' partitions dealt round-robin."""
        assigned: list[tuple[str, int, int, int]] = []
        for topic in self._sink_topics():
            table = self._topic(topic)
            if not table.exists():
                if warn:
                    self.log.warning(f"topic '{topic}' does not exist yet; nothing to consume from it")
                continue
            d = table.describe()
            for p in range(d.partitions):
                assigned.append((topic, p, d.start_offsets.get(p, 0), d.end_offsets.get(p, 0)))
        return [a for i, a in enumerate(sorted(assigned)) if i % task_count == task_id]

    def _committed(self, group: str) -> dict[tuple[str, int], dict[str, Any]]:
        return {(e.partition["kafka_topic"], e.partition["kafka_partition"]): e.offset or {}
                for e in self.stores.offsets.committed(group).values()}

    def _lag(self, task_id: int, task_count: int, group: str) -> int:
        """Records of this task's partitions not yet committed (Kafka's records-lag, summed)."""
        committed = self._committed(group)
        return sum(max(end - committed.get((t, p), {}).get("kafka_offset", start), 0)
                   for t, p, start, end in self._assigned(task_id, task_count))

    def _plan_positions(self, task_id: int, task_count: int, group: str) -> tuple[list[TopicRange], list[OffsetReset]]:
        """The batch's ranges, from the committed positions; and the positions below a log start that
        `consumer.override.auto.offset.reset` moves (none set: a StateError, never a silent loss)."""
        committed = self._committed(group)
        assigned = self._assigned(task_id, task_count, warn=True)
        # The consumer group (a Kafka backend's): a connector re-created under the same name on another lake
        # continues from it, and an offset someone else committed there (`kafka-consumer-groups
        # --reset-offsets`) moves the connector as it moves Kafka Connect's. Offsets a run committed itself
        # (GROUP_MARK) never override the lake's: a run killed between the two commits left the group behind.
        for tp, found in self.topics.group_positions(group, [(t, p) for t, p, _, _ in assigned]).items():
            mine = committed.get(tp, {}).get("kafka_offset")
            if mine is None:
                committed[tp] = {"kafka_offset": found.offset}
            elif not found.ours and found.offset != mine:
                self.log.warning(f"{tp[0]}-{tp[1]}: consumer group {group} was moved to offset {found.offset} by "
                                 f"another client (the connector was at {mine}); continuing from {found.offset}")
                committed[tp] = {"kafka_offset": found.offset}
        reset = str(self.setup.config.get(AUTO_OFFSET_RESET) or "").lower()
        ranges, resets = [], []
        for topic, p, start_offset, end in assigned:
            entry = committed.get((topic, p)) or {}
            start, metadata = entry.get("kafka_offset", start_offset), entry.get("metadata")
            if start < start_offset:
                if reset not in (EARLIEST, LATEST):
                    raise StateError(
                        f"{group} is at offset {start} of {topic}-{p}, before its log start {start_offset}: offsets "
                        f"{start}..{start_offset - 1} were removed by the topic's retention or compaction before "
                        f"connector '{self.name}' read them. Decide what to do, as Kafka's {AUTO_OFFSET_RESET} does: "
                        f"set it to {EARLIEST} (continue from the log start, {start_offset}) or {LATEST} (continue "
                        f"from the end, {end}), skipping the removed records, or reset the connector's offsets "
                        f"(`lakeconnect offsets reset {self.name}`)")
                moved = OffsetReset(topic, p, start, start_offset if reset == EARLIEST else end)
                self.log.warning(
                    f"{topic}-{p}: {group} was at offset {start}, before the log start {start_offset} (records removed "
                    f"by retention or compaction); {AUTO_OFFSET_RESET}={reset} moves it to {moved.to}, skipping "
                    f"{moved.skipped} offset(s)")
                resets.append(moved)
                start, metadata = moved.to, None  # what the sink kept about the old position no longer applies
            if end > start:
                ranges.append(TopicRange(topic, p, start, end, metadata))
        return ranges, resets

    def run_sink(self, task: SinkTask, task_id: int, task_count: int) -> BatchReport:
        steps = _Steps(self.progress)
        group = sink_group(self.name)
        log = BatchLog(self.stores.runs, self.name, task_id, task_app_id(self.name, task_id, sink=True))
        current = log.next()
        batch_id = current.id
        if current.resumed:
            ranges = [TopicRange.from_json(r) for r in current.plan["ranges"]]
            prepared = current.plan["prepared"]
            resets = [OffsetReset.from_json(r) for r in current.plan.get(RESETS) or []]
            self.log.info(f"resuming batch {batch_id}, planned by an interrupted run")
        else:
            ranges, resets = self._plan_positions(task_id, task_count, group)
            if not ranges and not resets:
                log.empty(current)
                return BatchReport(self.name, task_id, None, EMPTY)
            prepared = task.prepare(ranges) if ranges else None
            log.planned(current, {"ranges": [r.to_json() for r in ranges], "prepared": prepared,
                                **({RESETS: [r.to_json() for r in resets]} if resets else {})})
        steps.done("plan")
        if not ranges:  # only positions moved past removed records: commit them, nothing to read
            return self._commit_resets(log, current, resets, task_count, steps)

        policy = self.pipeline.policy
        frames = []
        for topic in sorted({r.topic for r in ranges}):
            bounds = {r.partition: (r.start, r.end) for r in ranges if r.topic == topic}
            source = self._topic(topic)
            # The task's session, made with the worker's spark.* settings (its master among them): reading
            # first with a default session would run the whole batch on a local one.
            frames.append(source.read(bounds, spark=task.context.spark).withColumn(TOPIC, F.lit(topic)))
        df = union_all(frames)
        persisted = []
        # Read once: good and failed records are both computed from the read; and a converter's checks
        # (bad records, embedded schemas) scan the records before the sink does, which from Kafka would
        # mean fetching the batch twice.
        if policy.tolerate or self.topics.remote_reads:
            df = df.persist(StorageLevel.MEMORY_AND_DISK)
            persisted.append(df)
        steps.done("read")
        # A batch of one schema is read with the converters' plans for it (no pass to find its schemas first),
        # unless a batch of this connector declined in this process before: a batch that declines is read and
        # put again with the general plans. A put that fails is run again from the same records anyway (a
        # retriable failure, or the next run resuming the batch), so the failed one leaves nothing behind.
        optimistic = not policy.tolerate and (self.name, task_id) not in _DECLINED_READS
        # One record for the converters to plan by, read from the first topic's files where it can be.
        first_topic = min(r.topic for r in ranges)
        first = (self._topic(first_topic).first_record({r.partition: (r.start, r.end) for r in ranges
                                                         if r.topic == first_topic})
                 if optimistic and self.pipeline.plans_by_first_record() else None)
        good: list[RecordBatch] = []
        guarded: list[DataFrame] = []
        failed: list[DataFrame] = []

        def convert(optimistic: bool) -> None:
            batches, failed_read = run_guarded(lambda: self.pipeline.deserialise(df, optimistic, first),
                                               self.name, task_id)
            failed[:] = [failed_read] if failed_read is not None else []
            good.clear()
            guarded.clear()
            for batch in self.pipeline.transform(batches):
                # Under tolerance the records keep ORIGIN into the put: a record the sink reports goes to the
                # dead letter queue as it was consumed (sinks select the columns they write).
                keep = (ORIGIN,) if policy.tolerate else ()
                if policy.tolerate and has_errors(batch.df):
                    ok, bad = split(batch.df, keep)
                    failed.append(bad)
                    good.append(batch.with_df(ok))
                else:
                    guarded.append(batch.df)
                    good.append(batch.with_df(strip(guard(batch.df), keep)))

        def attempt() -> list[RecordBatch]:
            task.context.errant.clear()  # what an attempt that failed reported is not this one's
            returned = task.put(good, ranges, prepared, batch_id)
            return [*task.context.errant, *(returned or [])]  # (a sink written before `report` returns them)

        def put() -> Any:
            return policy.retrying(attempt, TASK_PUT, f"sink batch {batch_id}")

        def put_or_read_again() -> Any:
            try:
                return put()
            except Exception as e:  # Spark's own exception types vary with the session kind
                if not optimistic or DECLINED not in str(e):
                    raise
            self.log.info(f"batch {batch_id}: a record has another schema than the batch's first; reading the "
                          f"batch again")
            _DECLINED_READS.add((self.name, task_id))
            convert(False)
            return put()

        convert(optimistic)
        steps.done("convert")
        steps.done("transform")  # lazily: the transforms run in the put
        errant = run_guarded(put_or_read_again, self.name, task_id, guarded) or []
        steps.done("put")
        for batch in errant:  # records the sink reported (Kafka's ErrantRecordReporter)
            marked = fill_class(batch.df, plugin_class_name(task))
            if not policy.tolerate:
                run_guarded(lambda m=marked: guard(m).count(), self.name, task_id, [marked])
            else:
                failed.append(marked)
        failures = self._handle_failed_sink_records(failed, task_id, batch_id)
        for p in persisted:
            p.unpersist()
        steps.done("write")

        planned = {(r.topic, r.partition): r for r in ranges}
        ends = {}
        delivered = 0  # records now behind the committed positions: in closed objects, written, or set aside
        for (t, p), done in task.pre_commit(ranges).items():
            r = planned.get((t, p))
            if r is not None and done.offset == r.start and (done.metadata or None) == r.metadata:
                continue  # nothing moved
            delivered += max(done.offset - r.start, 0) if r is not None else 0
            ends[canonical_json({"kafka_partition": p, "kafka_topic": t})] = {
                "kafka_offset": done.offset, **({"metadata": done.metadata} if done.metadata else {})}
        for reset, position in _reset_positions(resets).items():  # a reset sticks even where the sink held records
            ends.setdefault(reset, position)
        log.commit_offsets(current, self.stores.offsets, group, ends)
        self.topics.commit_group(group, {(json.loads(k)["kafka_topic"], json.loads(k)["kafka_partition"]):
                                         v["kafka_offset"] for k, v in ends.items()})
        steps.done("commit")
        records = sum(r.end - r.start for r in ranges)
        plan = {"ranges": [r.to_json() for r in ranges], "prepared": prepared}
        # Kafka Connect's sink task metrics in spirit (ch. 9): read, put, failed, lag left behind, time per step.
        stats = {"records_read": records, "records_written": max(delivered - failures, 0),
                 "records_failed": failures, "errors_logged": failures if policy.log_enable else 0,
                 "records_dead_lettered": failures if policy.dlq_topic else 0,
                 "topics": sorted({r.topic for r in ranges}), "timings_ms": steps.timings,
                 "latency_ms": round(sum(steps.timings.values()), 1),
                 "lag_records": self._lag(task_id, task_count, group),
                 "records_lost_to_retention": sum(r.skipped for r in resets)}
        if resets:
            plan[RESETS] = [r.to_json() for r in resets]
        log.committed(current, stats, plan)
        steps.done("done")
        return BatchReport(self.name, task_id, batch_id, COMMITTED, current.resumed, records, steps.timings,
                           [r.to_json() for r in ranges], failures, progressed=delivered > 0)

    def _commit_resets(self, log: BatchLog, current: Batch, resets: list[OffsetReset], task_count: int,
                       steps: _Steps) -> BatchReport:
        """A batch that only moves positions past removed records (auto.offset.reset=latest, or a partition
        left empty by retention): committed as any batch, so the next one starts from them and the skipped
        offsets are counted once."""
        group, task_id = sink_group(self.name), log.task_id
        log.commit_offsets(current, self.stores.offsets, group, _reset_positions(resets))
        self.topics.commit_group(group, {(r.topic, r.partition): r.to for r in resets})
        steps.done("commit")
        stats = {"records_read": 0, "records_written": 0, "records_failed": 0, "records_dead_lettered": 0,
                 "topics": sorted({r.topic for r in resets}), "timings_ms": steps.timings,
                 "latency_ms": round(sum(steps.timings.values()), 1),
                 "lag_records": self._lag(task_id, task_count, group),
                 "records_lost_to_retention": sum(r.skipped for r in resets)}
        log.committed(current, stats, {"ranges": [], "prepared": None, RESETS: [r.to_json() for r in resets]})
        steps.done("done")
        return BatchReport(self.name, task_id, current.id, COMMITTED, current.resumed, 0, steps.timings, [], 0)

    def _handle_failed_sink_records(self, failed: list, task_id: int, batch_id: int) -> int:
        """errors.tolerance=all: log the failed records and write them to the dead letter queue, once per
        batch (the DLQ append is idempotent by batch id, like every topic append)."""
        policy = self.pipeline.policy
        if not failed:
            return 0
        df = union_all([f.select(ERROR, ORIGIN) for f in failed])
        if policy.dlq_topic:
            letters = dead_letters(df, self.name, task_id, policy.dlq_context_headers)
            table = self._topic(policy.dlq_topic)
            table.create(1, if_not_exists=True, replication_factor=policy.dlq_replication_factor,  # one partition,
                         replication_key=DLQ_REPLICATION)  # as Kafka creates a DLQ topic
            dlq_app_id = task_app_id(self.name, task_id, sink=True) + ":dlq"
            policy.retrying(lambda: table.append(letters, app_id=dlq_app_id, version=batch_id), KAFKA_PRODUCE,
                            f"writing dead letter queue '{policy.dlq_topic}'")
        return log_failed(policy, df, self.name, task_id, sink=True)


def _reset_positions(resets: list[OffsetReset]) -> dict[str, dict[str, Any]]:
    """The offsets-table entries of positions moved by auto.offset.reset (no sink metadata: it described the
    old position)."""
    return {canonical_json({"kafka_partition": r.partition, "kafka_topic": r.topic}): {"kafka_offset": r.to}
            for r in resets}


def _explained(task: SourceTask, plan: SourcePlan, operation: Callable[[], Any]) -> Any:
    """Run a step that evaluates the task's records; a failure of its read comes out as the task explains it."""
    try:
        return operation()
    except LakeConnectError:
        raise
    except Exception as e:  # Spark's own exception types vary with the session kind
        explained = task.explain(e, plan)
        if explained is None:
            raise
        raise explained from e


def _per_topic(ids: dict[str, int]) -> Any:
    return next(iter(ids.values())) if len(set(ids.values())) == 1 else ids


def _id_column(ids: Any):
    if ids is None or isinstance(ids, int):
        return F.lit(ids).cast("int")
    expr = None
    for topic, i in ids.items():
        expr = (F.when(F.col(TOPIC) == topic, F.lit(i)) if expr is None else expr.when(F.col(TOPIC) == topic, F.lit(i)))
    return expr.cast("int")
