"""The S3 sink's per-topic-partition writer, run on Spark executors inside `mapInArrow`.

Records arrive sorted by (topic, partition, offset), each Spark partition holding whole topic
partitions. Every topic partition goes through the state machine of Confluent's
`TopicPartitionWriter`: records go to one open object per encoded partition; before a record,
a value-schema change or a time rotation (`rotate.interval.ms`, `rotate.schedule.interval.ms`) commits
every open object of the topic partition; after a record, `flush.size` records since the last commit
do the same. Committing uploads the objects (all or nothing each); what is still open when the input
ends is aborted, and its records are read again by the next batch, which starts at the offset after
the last committed record (Confluent's `offsetToCommit`). Object names hold the start offset, so a batch
run again after a crash makes the same objects from the same records.

Input columns (see `INPUT_*`): topic, partition, offset, the encoded partition computed by Spark
(`enc`, may be null), the extractor's timestamp in ms (`ts`, time-based partitioners), the value schema
group (`tag`), why a record cannot be written (`err`), and the bytes or rows each object format
receives: `v<tag>` for values, `k` for keys, `h` for headers.
Output: one row per committed object and one per topic partition with its next offset.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from ingest.errors import DataError
from ingest.runtime import faults

log = logging.getLogger(__name__)

TOPIC, PARTITION, OFFSET = "topic", "partition", "offset"
ENC, TS, TAG, ERR, KEY_PAYLOAD, HEADER_PAYLOAD = "enc", "ts", "tag", "err", "k", "h"
DAY_MS = 86_400_000

OUTPUT_SCHEMA = pa.schema([
    ("kind", pa.string()),  # "object" | "position" | "errant"
    (TOPIC, pa.string()),
    (PARTITION, pa.int32()),
    (OFFSET, pa.int64()),  # object: its start offset; position: the next offset (-1: none); errant: the record's
    ("key", pa.string()),  # object: its key in the bucket (the value object's)
    ("records", pa.int64()),
    ("bytes", pa.int64()),
    ("message", pa.string()),
    ("next_rotation", pa.int64()),  # position: when rotate.schedule.interval.ms next commits (None: unused)
])
OUTPUT_DDL = ("kind string, topic string, partition int, offset long, key string, records long, bytes long, "
              "message string, next_rotation long")


def value_column(tag: int) -> str:
    return f"v{tag}"


@dataclass(frozen=True)
class Part:
    """One object kind written per file: values, keys or headers."""

    column: str
    format: Any  # connectors.storage.formats.Format, built from the connector config (picklable)
    extension: str  # e.g. ".json", ".keys.bin"
    schemas: dict[int, Any] = field(default_factory=dict)  # the ConnectSchema of each value-schema group


@dataclass(frozen=True)
class WriterPlan:
    """Everything an executor needs, shipped with the function (no secret appears in its repr)."""

    store: Any  # connectors.storage.objectstore.ObjectStore
    parts: tuple[Part, ...]
    flush_size: int
    rotate_interval_ms: int
    rotate_schedule_interval_ms: int
    topics_dir: str
    directory_delim: str
    file_delim: str
    zero_pad_width: int
    now_ms: int
    time_partitioning: Any = None  # connectors.storage.timebased.TimePartitioning or None
    schedule_zone: Any = None  # tzinfo for rotate.schedule.interval.ms
    append_late_data: bool = False
    tolerate: bool = False
    next_rotation: dict[str, int] = field(default_factory=dict)
    """By "topic-partition": when rotate.schedule.interval.ms commits next, as an earlier batch left it."""
    seen_until: dict[str, int] = field(default_factory=dict)
    """By "topic-partition": the offset up to which earlier batches read. Records before it arrived before
    this batch: they were in the open objects all along, so the wall clock rotates nothing among them,
    and a rotation due since then happens once they are all back in their objects."""

    def object_key(self, topic: str, partition: int, encoded: str, start: int, extension: str) -> str:
        """`<topics.dir>/<topic>/<encoded>/<topic>+<partition>+<start offset, zero-padded><extension>`."""
        d = self.directory_delim
        name = f"{topic}{self.file_delim}{partition}{self.file_delim}{start:0{self.zero_pad_width}d}{extension}"
        return f"{self.topics_dir}{d}{topic}{d}{encoded}{d}{name}"


class _OpenObject:
    """The uploads of one (values, keys, headers) object set, written as its records come."""

    def __init__(self, plan: WriterPlan, topic: str, partition: int, encoded: str, start: int, tag: int):
        self.start, self.records, self.tag = start, 0, tag
        self.keys = [plan.object_key(topic, partition, encoded, start, p.extension) for p in plan.parts]
        self.uploads, self.writers = [], []
        try:
            for part, key in zip(plan.parts, self.keys):
                upload = _Counted(plan.store.upload(key))
                self.uploads.append(upload)
                self.writers.append(part.format.writer(upload, part.schemas.get(tag), key))
        except BaseException:
            self.abort()
            raise

    def write(self, columns: list[pa.Array]) -> None:
        for writer, values in zip(self.writers, columns):
            writer.write(values)
        self.records += len(columns[0])

    def commit(self) -> int:
        """Finish and upload every object of the set (values first, as Confluent does); their bytes."""
        for writer, upload in zip(self.writers, self.uploads):
            writer.close()
            upload.commit()
        return sum(u.size for u in self.uploads)

    def abort(self) -> None:
        for upload in self.uploads:
            try:
                upload.abort()
            except Exception as e:  # an abort that fails leaves an incomplete upload the next batch aborts
                log.warning("could not abort the upload of %s: %s", self.keys[0], e)


class _Counted:
    """An upload that counts the bytes written to it."""

    def __init__(self, upload):
        self.upload, self.size, self.aborted = upload, 0, False

    def write(self, data) -> int:
        if self.aborted:  # a format writer finishing after its object was aborted: pyarrow's ParquetWriter
            return len(data)  # writes its footer when garbage-collected, which the aborted upload refuses
        self.size += len(data)
        self.upload.write(data)
        faults.executor_point("object-write")  # a crash with the object half-uploaded
        return len(data)

    def commit(self) -> None:
        self.upload.commit()

    def abort(self) -> None:
        self.aborted = True
        self.upload.abort()


class TopicPartitionWriter:
    """Confluent's TopicPartitionWriter for one topic partition, over the records of one batch."""

    def __init__(self, plan: WriterPlan, topic: str, partition: int):
        self.plan, self.topic, self.partition = plan, topic, partition
        self.open: dict[str, _OpenObject] = {}
        self.schemas: dict[str, int] = {}  # the value schema group each open object holds
        self.record_count = 0
        self.base_ts: int | None = None
        self.current_ts: int | None = None
        self.current_encoded: str | None = None
        self.current_offset = -1
        self.offset_to_commit: int | None = None
        self.out: list[dict[str, Any]] = []
        kept = plan.next_rotation.get(f"{topic}-{partition}")
        self.next_scheduled = kept if kept is not None else self._next_scheduled(plan.now_ms)
        self.seen_until = plan.seen_until.get(f"{topic}-{partition}", -1)
        self.now: int | None = None  # None while replaying records an earlier batch read

    # --- the state machine ---------------------------------------------------------------------------

    def write(self, batch: pa.RecordBatch) -> None:
        """The records of `batch` (all of this topic partition, in offset order)."""
        if self._write_uniform(batch):
            return
        plan = self.plan
        offsets = batch.column(OFFSET).to_pylist()
        encs = batch.column(ENC).to_pylist()
        tss = batch.column(TS).to_pylist()
        tags = batch.column(TAG).to_pylist()
        errs = batch.column(ERR)
        errs = errs.to_pylist() if errs.null_count < len(errs) else None
        timed = plan.time_partitioning is not None
        run_start = None  # records [run_start, i) go to the same open object, written in one slice
        run_object: _OpenObject | None = None
        i, n = 0, len(offsets)
        while i < n:
            if self.now is None and offsets[i] >= self.seen_until:  # the first record this batch reads anew
                self._flush_run(batch, run_object, run_start, i)
                run_object, run_start = None, None
                self._caught_up()
            if errs is not None and errs[i] is not None:
                self._flush_run(batch, run_object, run_start, i)
                run_object, run_start = None, None
                self._bad_record(offsets[i], errs[i])
                i += 1
                continue
            ts = tss[i]
            if timed:
                self.current_ts = ts if ts is not None else plan.now_ms
                if self.base_ts is None:
                    self.base_ts = self.current_ts
            encoded = self._encode(encs[i], self.current_ts if timed else None)
            tag = tags[i]
            current_tag = self.schemas.setdefault(encoded, tag)
            if current_tag != tag and self.record_count > 0:  # Confluent's schema compatibility NONE
                self.schemas[encoded] = tag
                rotate = True
            else:
                rotate = self._rotate_on_time(encoded, self.current_ts, self.now)
                if rotate:
                    self.next_scheduled = self._next_scheduled(plan.now_ms)
            if rotate:
                self._flush_run(batch, run_object, run_start, i)
                run_object, run_start = None, None
                self._commit()
                continue  # the record is looked at again, against the new objects
            if self._update_encoded():
                self.current_encoded = encoded
            target = self.current_encoded
            obj = self.open.get(target)
            if obj is None or obj is not run_object:
                self._flush_run(batch, run_object, run_start, i)
                if obj is None:
                    obj = _OpenObject(plan, self.topic, self.partition, target, offsets[i], self.schemas[target])
                    self.open[target] = obj
                run_object, run_start = obj, i
            self.current_offset = offsets[i]
            self.record_count += 1
            i += 1
            if self.record_count >= plan.flush_size:
                self._flush_run(batch, run_object, run_start, i)
                run_object, run_start = None, None
                self._commit()
        self._flush_run(batch, run_object, run_start, n)

    def _write_uniform(self, batch: pa.RecordBatch) -> bool:
        """The common case in whole slices: one encoded partition and one value schema in the batch, no
        time rules, no failed record. Only flush.size (and a schema change at the first record) can then
        commit, so the records between commits are written as one slice, with what the record-by-record
        path would do. False (nothing done) when the batch is not such a case."""
        import pyarrow.compute as pc

        plan = self.plan
        if plan.time_partitioning is not None or plan.rotate_schedule_interval_ms > 0:
            return False
        encs, tags, errs = batch.column(ENC), batch.column(TAG), batch.column(ERR)
        if errs.null_count != len(errs) or encs.null_count or pc.count_distinct(encs).as_py() != 1 \
                or pc.count_distinct(tags).as_py() != 1:
            return False
        enc, tag, n = encs[0].as_py(), tags[0].as_py(), batch.num_rows
        offsets = batch.column(OFFSET)
        i = 0
        while i < n:
            if self.schemas.setdefault(enc, tag) != tag and self.record_count > 0:  # schema compatibility NONE
                self._commit()
                continue
            self.schemas[enc] = tag
            self.current_encoded = enc
            obj = self.open.get(enc)
            if obj is None:
                obj = self.open[enc] = _OpenObject(plan, self.topic, self.partition, enc, offsets[i].as_py(), tag)
            take = min(n - i, plan.flush_size - self.record_count)
            self._flush_run(batch, obj, i, i + take)
            self.record_count += take
            self.current_offset = offsets[i + take - 1].as_py()
            i += take
            if self.record_count >= plan.flush_size:
                self._commit()
        return True

    def finish(self) -> list[dict[str, Any]]:
        """End of the input: Confluent's commit when no data is left (scheduled rotation), then abort what
        is still open; the rows to report."""
        if self.now is None:
            self._caught_up()
        elif self.record_count > 0 and self._rotate_on_time(self.current_encoded, self.current_ts, self.now):
            self.next_scheduled = self._next_scheduled(self.now)
            self._commit()
        for obj in self.open.values():
            obj.abort()
        self.open.clear()
        position = _row("position", self.topic, self.partition,
                        -1 if self.offset_to_commit is None else self.offset_to_commit)
        position["next_rotation"] = self.next_scheduled
        self.out.append(position)
        return self.out

    def abort(self) -> None:
        for obj in self.open.values():
            obj.abort()
        self.open.clear()

    # --- helpers -------------------------------------------------------------------------------------

    def _caught_up(self) -> None:
        """Between the records earlier batches read and the new ones: Confluent's commit when no data is
        left, at this batch's time (the scheduled rotation that came due while the records were held)."""
        self.now = self.plan.now_ms
        if self.record_count > 0 and self._rotate_on_time(self.current_encoded, self.current_ts, self.now):
            self.next_scheduled = self._next_scheduled(self.now)
            self._commit()

    def _encode(self, enc: str | None, ts: int | None) -> str:
        time_part = self.plan.time_partitioning
        if time_part is None:
            return enc
        encoded = time_part.encode(ts)
        return encoded if enc is None else f"{enc}{self.plan.directory_delim}{encoded}"

    def _update_encoded(self) -> bool:
        """Confluent's shouldUpdateCurrentEncodedPartition: late data may stay in the open object."""
        if self.current_ts is None or self.base_ts is None or self.current_encoded is None:
            return True
        return not (self.plan.append_late_data and self.current_ts < self.base_ts)

    def _rotate_on_time(self, encoded: str | None, ts: int | None, now: int) -> bool:
        if self.record_count <= 0:
            return False
        plan = self.plan
        periodic = plan.rotate_interval_ms > 0 and plan.time_partitioning is not None and (
            ts - self.base_ts >= plan.rotate_interval_ms
            or (encoded != self.current_encoded and not plan.append_late_data))
        scheduled = plan.rotate_schedule_interval_ms > 0 and now is not None and now >= self.next_scheduled
        return periodic or scheduled

    def _next_scheduled(self, now: int) -> int | None:
        """DateTimeUtils.getNextTimeAdjustedByDay: the next multiple of the interval since local midnight."""
        interval = self.plan.rotate_schedule_interval_ms
        if interval <= 0:
            return None
        from connectors.storage.timebased import bucket

        start_of_day = bucket(now, DAY_MS, self.plan.schedule_zone)
        return start_of_day + ((now - start_of_day) // interval + 1) * interval

    def _flush_run(self, batch: pa.RecordBatch, obj: _OpenObject | None, start: int | None, end: int) -> None:
        if obj is None or start is None or end <= start:
            return
        columns = []
        for part in self.plan.parts:
            name = value_column(obj.tag) if part.column == "v" else part.column
            columns.append(batch.column(name).slice(start, end - start))
        obj.write(columns)

    def _commit(self) -> None:
        for encoded, obj in self.open.items():
            size = obj.commit()
            self.out.append(_row("object", self.topic, self.partition, obj.start, key=obj.keys[0],
                                 records=obj.records, size=size))
            faults.executor_point("upload")
        self.open.clear()
        self.offset_to_commit = self.current_offset + 1
        self.schemas.clear()
        self.record_count = 0
        self.base_ts = None
        self.current_encoded = None

    def _bad_record(self, offset: int, message: str) -> None:
        where = f"record {self.topic}-{self.partition}@{offset}"
        if not self.plan.tolerate:
            raise DataError(f"{where}: {message}")
        self.out.append(_row("errant", self.topic, self.partition, offset, message=message))


def _row(kind: str, topic: str, partition: int, offset: int, *, key: str | None = None, records: int = 0,
         size: int = 0, message: str | None = None) -> dict[str, Any]:
    return {"kind": kind, TOPIC: topic, PARTITION: partition, OFFSET: offset, "key": key, "records": records,
            "bytes": size, "message": message, "next_rotation": None}


def write_partitions(plan: WriterPlan):
    """The `mapInArrow` function: Arrow batches of records in (topic, partition, offset) order in, the
    committed objects and each topic partition's next offset out."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        writer: TopicPartitionWriter | None = None
        try:
            for batch in batches:
                if not batch.num_rows:
                    continue
                topics = batch.column(TOPIC)
                parts = batch.column(PARTITION)
                # Split the batch where the topic partition changes (runs of equal values).
                bounds = _run_bounds(topics, parts)
                for start, end in bounds:
                    topic, partition = topics[start].as_py(), parts[start].as_py()
                    if writer is None or (writer.topic, writer.partition) != (topic, partition):
                        if writer is not None:
                            yield pa.RecordBatch.from_pylist(writer.finish(), schema=OUTPUT_SCHEMA)
                        writer = TopicPartitionWriter(plan, topic, partition)
                    writer.write(batch.slice(start, end - start))
            if writer is not None:
                yield pa.RecordBatch.from_pylist(writer.finish(), schema=OUTPUT_SCHEMA)
                writer = None
        finally:
            if writer is not None:  # a failure: nothing half-written stays visible
                writer.abort()

    return run


def _run_bounds(topics: pa.Array, parts: pa.Array) -> list[tuple[int, int]]:
    """[start, end) of each run of one (topic, partition) in a batch."""
    import pyarrow.compute as pc

    n = len(parts)
    if n == 0:
        return []
    if pc.all(pc.equal(parts, parts[0])).as_py() and pc.all(pc.equal(topics, topics[0])).as_py():
        return [(0, n)]
    t, p = topics.to_pylist(), parts.to_pylist()
    bounds, start = [], 0
    for i in range(1, n):
        if t[i] != t[start] or p[i] != p[start]:
            bounds.append((start, i))
            start = i
    bounds.append((start, n))
    return bounds
