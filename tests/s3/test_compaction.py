"""Opt-in compaction of an S3 sink's small objects: merged into the first object of each run (the naming
contract holds: same names, every record once, in offset order), in every format, only below the
committed offsets, and exactly once when the job is killed halfway."""

from __future__ import annotations

import gzip
import io
import json

import pyarrow.parquet as pq
import pytest
from fastavro import reader

from ingest.config.worker import load_worker
from ingest.runtime.faults import CRASH_EXIT
from ingest.topics import TopicTable
from tests.conftest import cli, write_worker

SCHEMA = {"type": "struct", "name": "order", "fields": [{"type": "int64", "field": "id"},
                                                        {"type": "string", "field": "title"}]}


def _lake(tmp_path, spark, fmt: str, records: int = 7, **extra):
    """A topic of `records` records in one partition, sunk one object per record (flush.size=1), with keys."""
    from ingest.runtime.worker import Worker

    (tmp_path / "lake").mkdir(parents=True)
    worker_file = write_worker(tmp_path / "worker.properties", tmp_path / "lake")
    worker = Worker(load_worker(str(worker_file)))
    (tmp_path / "objects" / "b").mkdir(parents=True)
    topic = TopicTable(worker.lake_root, "orders")
    topic.create(1)
    rows = [(f"k{i}".encode(), json.dumps({"schema": SCHEMA, "payload": {"id": i, "title": f"t{i}"}}).encode(), i)
            for i in range(records)]
    topic.append(spark.createDataFrame(rows, "key binary, value binary, seq long"), app_id="t", version=1)
    worker.create("s3", {"name": "s3", "connector.class": "S3Sink", "topics": "orders", "s3.bucket.name": "b",
                         "store.url": (tmp_path / "objects").as_uri(), "flush.size": "1", "format.class": fmt,
                         "value.converter": "org.apache.kafka.connect.json.JsonConverter",
                         "key.converter": "org.apache.kafka.connect.converters.ByteArrayConverter",
                         "store.kafka.keys": "true", "keys.format.class": "ByteArrayFormat", **extra})
    worker.run("s3")
    return worker, worker_file, tmp_path / "objects" / "b"


def files(root) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_json_objects_merge_into_the_first_with_their_keys(tmp_path, spark):
    worker, _, root = _lake(tmp_path, spark, "JsonFormat", **{"s3.compression.type": "gzip"})
    before = files(root)
    assert len(before) == 14
    dry = worker_compact(worker, dry_run=True)
    assert dry["groups"] == 1 and dry["objects_merged"] == 7 and files(root) == before
    summary = worker_compact(worker)
    assert summary["groups"] == 1 and summary["objects_merged"] == 7
    after = files(root)
    base = "topics/orders/partition=0/orders+0+0000000000"
    assert set(after) == {f"{base}.json.gz", f"{base}.keys.bin.gz"}
    lines = gzip.decompress(after[f"{base}.json.gz"]).decode().splitlines()
    assert [json.loads(line)["id"] for line in lines] == list(range(7))
    assert gzip.decompress(after[f"{base}.keys.bin.gz"]) == b"".join(f"k{i}\n".encode() for i in range(7))
    assert worker_compact(worker)["groups"] == 0  # nothing left to merge


def worker_compact(worker, **options):
    from connectors.s3.sink import S3SinkConnector

    return S3SinkConnector.compact(worker, "s3", min_age_ms=0, **options)


def test_avro_and_parquet_objects_merge_record_for_record(tmp_path, spark):
    worker, _, root = _lake(tmp_path / "avro", spark, "AvroFormat", **{"avro.codec": "deflate"})
    worker_compact(worker)
    merged = files(root)["topics/orders/partition=0/orders+0+0000000000.avro"]
    assert [r["id"] for r in reader(io.BytesIO(merged))] == list(range(7))
    worker, _, root = _lake(tmp_path / "parquet", spark, "ParquetFormat")
    worker_compact(worker)
    merged = files(root)["topics/orders/partition=0/orders+0+0000000000.snappy.parquet"]
    assert pq.read_table(io.BytesIO(merged)).column("id").to_pylist() == list(range(7))


def test_runs_stop_at_the_target_size_and_young_directories_wait(tmp_path, spark):
    worker, _, root = _lake(tmp_path, spark, "JsonFormat")
    size = len(files(root)["topics/orders/partition=0/orders+0+0000000000.json"])
    from connectors.s3.sink import S3SinkConnector

    assert S3SinkConnector.compact(worker, "s3", min_age_ms=3_600_000)["groups"] == 0  # just written: open
    S3SinkConnector.compact(worker, "s3", min_age_ms=0, target_bytes=3 * size)
    names = sorted(k.rsplit("/", 1)[1] for k in files(root) if k.endswith(".json"))
    assert names == ["orders+0+0000000000.json", "orders+0+0000000003.json", "orders+0+0000000006.json"]


@pytest.mark.parametrize("crash", ["plan", "merged-object:1", "merged-object:2", "merge"])
def test_a_compaction_killed_halfway_finishes_exactly_once(tmp_path, spark, crash):
    _, clean_worker, clean_root = _lake(tmp_path / "clean", spark, "JsonFormat")
    assert cli("compact", "s3", "--min-age-ms", "0", worker=clean_worker).returncode == 0
    _, worker_file, root = _lake(tmp_path / "crash", spark, "JsonFormat")
    r = cli("compact", "s3", "--min-age-ms", "0", worker=worker_file, env={"LAKECONNECT_CRASH_AT": crash})
    assert r.returncode == CRASH_EXIT, r.stderr
    r = cli("compact", "s3", "--min-age-ms", "0", worker=worker_file)
    assert r.returncode == 0, r.stderr
    assert files(root) == files(clean_root)
    assert not [p for p in root.rglob(".*")], "a temporary upload was left behind"


@pytest.mark.parametrize("crash", ["merged-object:2", "merge"])
def test_a_killed_compaction_is_finished_after_offsets_are_altered(tmp_path, spark, crash):
    """Altering offsets abandons the sink's planned batches, not a compaction's: planned again, it would merge
    over a merged object whose sources were never deleted (every record twice)."""
    _, clean_worker, clean_root = _lake(tmp_path / "clean", spark, "JsonFormat")
    assert cli("compact", "s3", "--min-age-ms", "0", worker=clean_worker).returncode == 0
    _, worker_file, root = _lake(tmp_path / "crash", spark, "JsonFormat")
    r = cli("compact", "s3", "--min-age-ms", "0", worker=worker_file, env={"LAKECONNECT_CRASH_AT": crash})
    assert r.returncode == CRASH_EXIT, r.stderr
    offsets = tmp_path / "offsets.json"
    offsets.write_text(json.dumps({"offsets": [{"partition": {"kafka_topic": "orders", "kafka_partition": 0},
                                                "offset": {"kafka_offset": 7}}]}))
    for args in (("connectors", "stop", "s3"), ("offsets", "alter", "s3", str(offsets)),
                 ("connectors", "resume", "s3"), ("compact", "s3", "--min-age-ms", "0")):
        r = cli(*args, worker=worker_file)
        assert r.returncode == 0, (args, r.stderr)
    assert files(root) == files(clean_root)


def test_compaction_waits_for_every_task_of_the_sink(tmp_path, spark):
    """No sink batch runs while objects are merged: compaction takes the lease of each task, not only the
    first task's."""
    from ingest.runtime.lease import Lease

    worker, worker_file, root = _lake(tmp_path, spark, "JsonFormat", **{"tasks.max": "2"})
    before = files(root)
    with Lease(worker.lake_root, "s3.task-1").acquire("a sink batch of task 1"):
        r = cli("compact", "s3", "--min-age-ms", "0", worker=worker_file)
    assert r.returncode == 3 and "task 1" in r.stderr, (r.returncode, r.stderr)
    assert files(root) == before
    assert cli("compact", "s3", "--min-age-ms", "0", worker=worker_file).returncode == 0
    assert files(root) != before
