"""The S3 sink's per-partition writer on its own: Confluent's rotation rules, record by record, over real
objects in a local bucket (no Spark: the executor side is plain Arrow in, objects out)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from connectors.s3.writer import OUTPUT_SCHEMA, Part, TopicPartitionWriter, WriterPlan, write_partitions
from connectors.storage.formats import JsonFormat
from connectors.storage.localstore import LocalStore
from connectors.storage.timebased import TimePartitioning
from ingest.errors import DataError

MINUTE = 60_000
HOUR = 3_600_000


def plan(tmp_path, **changes) -> WriterPlan:
    (tmp_path / "b").mkdir(parents=True, exist_ok=True)
    values = dict(store=LocalStore(str(tmp_path), "b"), parts=(Part("v", JsonFormat(None), ".json"),),
                  flush_size=3, rotate_interval_ms=-1, rotate_schedule_interval_ms=-1, topics_dir="topics",
                  directory_delim="/", file_delim="+", zero_pad_width=10, now_ms=1_700_000_000_000)
    values.update(changes)
    return WriterPlan(**values)


def batch(offsets, encs=None, ts=None, tags=None, errs=None, topic="t", partition=0) -> pa.RecordBatch:
    n = len(offsets)
    return pa.RecordBatch.from_pydict({
        "topic": [topic] * n, "partition": pa.array([partition] * n, pa.int32()),
        "offset": pa.array(offsets, pa.int64()), "enc": pa.array(encs or ["partition=0"] * n, pa.string()),
        "ts": pa.array(ts or [None] * n, pa.int64()), "tag": pa.array(tags or [0] * n, pa.int32()),
        "err": pa.array(errs or [None] * n, pa.string()),
        "v0": pa.array([f"r{o}\n".encode() for o in offsets], pa.binary()),
        "v1": pa.array([f"s{o}\n".encode() for o in offsets], pa.binary()),
    })


def objects(tmp_path) -> dict[str, str]:
    root = tmp_path / "b"
    return {p.relative_to(root).as_posix(): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


def run(p: WriterPlan, *batches) -> dict:
    w = TopicPartitionWriter(p, "t", 0)
    for b in batches:
        w.write(b)
    rows = w.finish()
    return {r["kind"]: r for r in rows if r["kind"] == "position"}["position"]


def test_flush_size_commits_every_open_object_of_the_partition(tmp_path):
    """The book's field example: records for id=2, id=3, id=3 -> both objects committed at the third."""
    position = run(plan(tmp_path), batch([0, 1, 2], encs=["id=2", "id=3", "id=3"]))
    assert objects(tmp_path) == {"topics/t/id=2/t+0+0000000000.json": "r0\n",
                                 "topics/t/id=3/t+0+0000000001.json": "r1\nr2\n"}
    assert position["offset"] == 3


def test_records_short_of_flush_size_are_held_and_their_objects_aborted(tmp_path):
    position = run(plan(tmp_path), batch([0, 1, 2, 3, 4], encs=["a"] * 5))
    assert objects(tmp_path) == {"topics/t/a/t+0+0000000000.json": "r0\nr1\nr2\n"}
    assert position["offset"] == 3  # 3 and 4 wait for the next batch
    assert not [p for p in (tmp_path / "b").rglob(".*")], "an aborted upload left a file"


def test_records_split_over_arrow_batches_are_one_stream(tmp_path):
    run(plan(tmp_path, flush_size=4), batch([0, 1], encs=["a", "b"]), batch([2, 3], encs=["a", "b"]))
    assert objects(tmp_path) == {"topics/t/a/t+0+0000000000.json": "r0\nr2\n",
                                 "topics/t/b/t+0+0000000001.json": "r1\nr3\n"}


def test_a_schema_change_commits_before_the_record(tmp_path):
    """Confluent's schema compatibility NONE: a record whose value schema differs from its object's."""
    position = run(plan(tmp_path, flush_size=10), batch([0, 1, 2, 3], encs=["a"] * 4, tags=[0, 0, 1, 1]))
    assert objects(tmp_path) == {"topics/t/a/t+0+0000000000.json": "r0\nr1\n"}
    assert position["offset"] == 2


def _hourly(**extra) -> TimePartitioning:
    return TimePartitioning.from_config({"partitioner.class": "TimeBasedPartitioner", "partition.duration.ms": HOUR,
                                         "path.format": "'h'=HH", "locale": "en", "timezone": "UTC",
                                         "timestamp.extractor": "Record", **extra})


def test_rotate_interval_on_record_timestamps(tmp_path):
    """rotate.interval.ms: a record this much later than its object's first one, or in another time
    partition, commits the open objects first."""
    ts = [0, 10 * MINUTE, 29 * MINUTE, 31 * MINUTE, 40 * MINUTE, HOUR + 1, HOUR + 2]
    p = plan(tmp_path, flush_size=100, rotate_interval_ms=30 * MINUTE, time_partitioning=_hourly())
    position = run(p, batch(list(range(7)), encs=[None] * 7, ts=ts))
    assert objects(tmp_path) == {"topics/t/h=00/t+0+0000000000.json": "r0\nr1\nr2\n",
                                 "topics/t/h=00/t+0+0000000003.json": "r3\nr4\n"}
    assert position["offset"] == 5  # the h=01 object is open: its records wait


def test_late_records_join_the_open_object_with_append_late_data(tmp_path):
    ts = [HOUR + 5, HOUR + 6, 5, HOUR + 7]
    p = plan(tmp_path, flush_size=4, rotate_interval_ms=HOUR, time_partitioning=_hourly(), append_late_data=True)
    run(p, batch([0, 1, 2, 3], encs=[None] * 4, ts=ts))
    assert objects(tmp_path) == {"topics/t/h=01/t+0+0000000000.json": "r0\nr1\nr2\nr3\n"}
    p = plan(tmp_path / "strict", flush_size=4, rotate_interval_ms=HOUR, time_partitioning=_hourly())
    run(p, batch([0, 1, 2, 3], encs=[None] * 4, ts=ts))
    assert objects(tmp_path / "strict") == {"topics/t/h=01/t+0+0000000000.json": "r0\nr1\n",
                                            "topics/t/h=00/t+0+0000000002.json": "r2\n"}


def test_scheduled_rotation_commits_held_records_once_the_time_has_come(tmp_path):
    """rotate.schedule.interval.ms: a batch whose clock passed the next rotation commits the records an
    earlier batch held (they were in open objects before the rotation time), in one object."""
    now = 1_700_000_000_000 - 1_700_000_000_000 % MINUTE + 1_000  # one second into a minute
    first = plan(tmp_path, flush_size=10, rotate_schedule_interval_ms=MINUTE, schedule_zone=_hourly().zone, now_ms=now)
    position = run(first, batch([0, 1], encs=["a", "a"]))
    assert objects(tmp_path) == {} and position["offset"] == -1
    due = position["next_rotation"]
    assert due == now - 1_000 + MINUTE
    later = plan(tmp_path, flush_size=10, rotate_schedule_interval_ms=MINUTE, schedule_zone=_hourly().zone,
                 now_ms=due + 5, next_rotation={"t-0": due}, seen_until={"t-0": 2})
    position = run(later, batch([0, 1, 2], encs=["a", "a", "a"]))  # 2 is new: it goes to the next object
    assert objects(tmp_path) == {"topics/t/a/t+0+0000000000.json": "r0\nr1\n"}
    assert position["offset"] == 2 and position["next_rotation"] == due + MINUTE


def test_a_record_that_cannot_be_written_names_itself(tmp_path):
    strict = plan(tmp_path / "strict")
    with pytest.raises(DataError, match=r"record t-0@1: field 'id' is null"):
        list(write_partitions(strict)(iter([batch([0, 1, 2], errs=[None, "field 'id' is null", None])])))
    assert objects(tmp_path / "strict") == {}  # the open object was aborted, nothing half-written is left
    w = TopicPartitionWriter(plan(tmp_path, tolerate=True), "t", 0)
    w.write(batch([0, 1, 2, 3], errs=[None, "bad", None, None]))
    rows = w.finish()
    assert [(r["kind"], r["offset"]) for r in rows if r["kind"] != "object"] == [("errant", 1), ("position", 4)]
    assert objects(tmp_path)["topics/t/partition=0/t+0+0000000000.json"] == "r0\nr2\nr3\n"


def test_the_task_function_splits_topic_partitions_and_reports_each(tmp_path):
    p = plan(tmp_path, flush_size=2)
    both = pa.concat_batches([batch([0, 1, 2], partition=0), batch([0, 1], partition=1, encs=["partition=1"] * 2)])
    out = pa.Table.from_batches(list(write_partitions(p)(iter([both]))), schema=OUTPUT_SCHEMA).to_pylist()
    assert sorted((r["kind"], r["partition"], r["offset"]) for r in out) == [
        ("object", 0, 0), ("object", 1, 0), ("position", 0, 2), ("position", 1, 2)]
    assert set(objects(tmp_path)) == {"topics/t/partition=0/t+0+0000000000.json",
                                      "topics/t/partition=1/t+1+0000000000.json"}


@pytest.mark.parametrize("flush", [1, 3, 7, 100])
def test_whole_slices_write_what_record_by_record_writes(tmp_path, monkeypatch, flush):
    """Batches of one encoded partition and one schema go through in slices between commits; the objects
    and the position are those of the record-by-record path, schema changes between batches included."""
    def go(root, slices: bool):
        if not slices:
            monkeypatch.setattr(TopicPartitionWriter, "_write_uniform", lambda self, b: False)
        p = plan(root, flush_size=flush)
        position = run(p, batch(list(range(0, 5)), encs=["a"] * 5), batch(list(range(5, 9)), encs=["a"] * 4, tags=[1] * 4),
                       batch(list(range(9, 20)), encs=["b"] * 11, tags=[1] * 11))
        monkeypatch.undo()
        return objects(root), position["offset"]

    assert go(tmp_path / "slices", True) == go(tmp_path / "records", False)
