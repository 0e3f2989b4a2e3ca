"""The S3 sink's formats, partitioners and bad input, run in-process through the Worker on a local bucket
(the same code as the CLI; the CLI and the S3 server are covered by test_book and test_exactly_once)."""

from __future__ import annotations

import gzip
import io
import json

import pyarrow.parquet as pq
import pytest
from fastavro import reader

from ingest.config.worker import load_worker
from ingest.errors import ConfigError, DataError, LakeConnectError
from ingest.topics import TopicTable

SCHEMA = {"type": "struct", "name": "order", "fields": [
    {"type": "int64", "field": "id"}, {"type": "string", "field": "title"},
    {"type": "int64", "field": "ts", "optional": True}, {"type": "boolean", "field": "gift", "optional": True}]}
HOUR = 3_600_000


def value(i: int, ts: int | None = None, gift: bool | None = None) -> bytes:
    return json.dumps({"schema": SCHEMA, "payload": {"id": i % 3, "title": f"book {i}", "ts": ts, "gift": gift}}).encode()


@pytest.fixture
def world(tmp_path, spark):
    """A worker on a fresh lake, a local bucket, and a function that fills the topic `orders` (2 partitions)."""
    from ingest.runtime.worker import Worker

    worker = Worker(load_worker(None, {"lake.root": str(tmp_path / "lake"), "lake.allowed.paths": str(tmp_path)}))
    (tmp_path / "objects" / "b").mkdir(parents=True)
    topic = TopicTable(worker.lake_root, "orders")
    topic.create(2)
    versions = iter(range(1, 100))

    def produce(values: list[bytes | None], keys: list[bytes] | None = None, headers=None, partition: int = 0):
        rows = [(keys[i] if keys else f"k{i}".encode(), v, i, partition, headers) for i, v in enumerate(values)]
        df = spark.createDataFrame(rows, "key binary, value binary, seq long, partition int, "
                                         "headers array<struct<key:string,value:binary>>")
        topic.append(df, app_id="test", version=next(versions))

    return worker, tmp_path / "objects", produce


def sink(worker, objects, **config) -> str:
    name = f"s3-{len(worker.list())}"
    worker.create(name, {"name": name, "connector.class": "S3Sink", "topics": "orders", "s3.bucket.name": "b",
                         "store.url": objects.as_uri(), "value.converter": "org.apache.kafka.connect.json.JsonConverter",
                         "key.converter": "org.apache.kafka.connect.converters.ByteArrayConverter",
                         "format.class": "JsonFormat", "flush.size": "2", **config})
    return name


def files(objects) -> dict[str, bytes]:
    root = objects / "b"
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_default_partitioner_json_with_keys_and_headers_and_gzip(world):
    worker, objects, produce = world
    produce([value(i) for i in range(3)], headers=[{"key": "h", "value": b"1"}])
    name = sink(worker, objects, **{"store.kafka.keys": "true", "keys.format.class": "ByteArrayFormat",
                                    "store.kafka.headers": "true", "headers.format.class": "JsonFormat",
                                    "s3.compression.type": "gzip", "topics.dir": "exports", "file.delim": "-",
                                    "filename.offset.zero.pad.width": "4"})
    worker.run(name)
    got = files(objects)
    assert set(got) == {"exports/orders/partition=0/orders-0-0000.json.gz",
                        "exports/orders/partition=0/orders-0-0000.keys.bin.gz",
                        "exports/orders/partition=0/orders-0-0000.headers.json.gz"}
    assert gzip.decompress(got["exports/orders/partition=0/orders-0-0000.json.gz"]).decode().splitlines() == [
        '{"id":0,"title":"book 0","ts":null,"gift":null}', '{"id":1,"title":"book 1","ts":null,"gift":null}']
    assert gzip.decompress(got["exports/orders/partition=0/orders-0-0000.keys.bin.gz"]) == b"k0\nk1\n"
    headers = gzip.decompress(got["exports/orders/partition=0/orders-0-0000.headers.json.gz"]).decode().splitlines()
    assert len(headers) == 2 and all('"h"' in h and '"1"' in h for h in headers)


def test_field_partitioner_on_two_fields_and_avro_with_keys(world):
    worker, objects, produce = world
    produce([value(i, gift=i % 2 == 0) for i in range(4)])
    name = sink(worker, objects, **{"partitioner.class": "FieldPartitioner", "partition.field.name": "id,gift",
                                    "format.class": "AvroFormat", "avro.codec": "deflate", "flush.size": "4",
                                    "store.kafka.keys": "true", "keys.format.class": "AvroFormat"})
    worker.run(name)
    got = files(objects)
    assert set(got) == {f"topics/orders/{d}/orders+0+{o:010d}.{x}" for d, o in
                        (("id=0/gift=true", 0), ("id=1/gift=false", 1), ("id=2/gift=true", 2), ("id=0/gift=false", 3))
                        for x in ("avro", "keys.avro")}
    records = [r for k, v in sorted(got.items()) if k.endswith("+0000000001.avro") for r in reader(io.BytesIO(v))]
    assert records == [{"id": 1, "title": "book 1", "ts": None, "gift": False}]
    keys = [r for k, v in got.items() if k.endswith("0000000003.keys.avro") for r in reader(io.BytesIO(v))]
    assert keys == [b"k3"]
    assert reader(io.BytesIO(got["topics/orders/id=1/gift=false/orders+0+0000000001.avro"])).metadata[
        "avro.codec"] == "deflate"


def test_time_based_record_field_partitions_and_parquet(world):
    worker, objects, produce = world
    produce([value(i, ts=i * HOUR // 2) for i in range(4)])  # hours 0, 0, 1, 1 of 1970-01-01
    name = sink(worker, objects, **{"partitioner.class": "HourlyPartitioner", "timestamp.extractor": "RecordField",
                                    "timestamp.field": "ts", "locale": "en", "timezone": "UTC",
                                    "format.class": "ParquetFormat", "flush.size": "4",
                                    "rotate.interval.ms": str(HOUR)})
    worker.run(name)
    got = files(objects)
    # rotate.interval.ms: the record of another hour commits the open object; the last hour stays open
    assert set(got) == {"topics/orders/year=1970/month=01/day=01/hour=00/orders+0+0000000000.snappy.parquet"}
    table = pq.read_table(io.BytesIO(next(iter(got.values()))))
    assert table.column_names == ["id", "title", "ts", "gift"] and table.column("title").to_pylist() == ["book 0", "book 1"]
    assert worker.offsets(name) == [{"partition": {"kafka_partition": 0, "kafka_topic": "orders"},
                                     "offset": {"kafka_offset": 2}}]


def test_field_and_time_partitioner(world):
    worker, objects, produce = world
    produce([value(i, ts=HOUR * 24 + i) for i in range(2)])
    name = sink(worker, objects, **{"partitioner.class": "FieldAndTimeBasedPartitioner", "partition.field.name": "id",
                                    "partition.duration.ms": str(HOUR * 24), "path.format": "'day'=dd",
                                    "locale": "en", "timezone": "UTC", "timestamp.extractor": "RecordField",
                                    "timestamp.field": "ts"})
    worker.run(name)
    assert set(files(objects)) == {"topics/orders/id=0/day=02/orders+0+0000000000.json",
                                   "topics/orders/id=1/day=02/orders+0+0000000001.json"}


class _Answers(list):
    """What JsonConverter.to_connect_optimistic answered, call by call; `firsts`: the record each was given."""

    def __init__(self):
        super().__init__()
        self.firsts = []


@pytest.fixture
def reads(monkeypatch):
    """(_Answers, the runtime module), with the runtime's memory of declined batches emptied."""
    import connectors.converters.json_converter as json_converter
    from ingest.api import NOT_READ
    from ingest.runtime import runner

    answers = _Answers()
    real = json_converter.JsonConverter.to_connect_optimistic

    def spy(self, df, column, first=NOT_READ):
        answers.firsts.append(first)
        answers.append(real(self, df, column, first))
        return answers[-1]

    monkeypatch.setattr(json_converter.JsonConverter, "to_connect_optimistic", spy)
    monkeypatch.setattr(runner, "_DECLINED_READS", set())
    return answers, runner


def test_a_batch_of_one_schema_is_read_without_a_pass_to_find_its_schemas(world, reads):
    worker, objects, produce = world
    answers, runner = reads
    produce([value(i) for i in range(3)])
    worker.run(sink(worker, objects, **{"flush.size": "3"}))
    assert len(answers) == 1 and answers[0] is not None and not runner._DECLINED_READS
    assert answers.firsts == [value(0)]  # the record the plan is made by, read from the topic's file
    assert files(objects)["topics/orders/partition=0/orders+0+0000000000.json"].decode().splitlines()[2] == (
        '{"id":2,"title":"book 2","ts":null,"gift":null}')


def test_no_record_is_read_first_when_no_converter_plans_by_one(world, monkeypatch):
    worker, objects, produce = world
    produce([value(i) for i in range(2)])

    def refuse(self, ranges):
        raise AssertionError("first_record read for converters that do not use it")

    monkeypatch.setattr(TopicTable, "first_record", refuse)
    worker.run(sink(worker, objects, **{"value.converter": "org.apache.kafka.connect.converters.ByteArrayConverter",
                                        "format.class": "ByteArrayFormat"}))
    assert len(files(objects)) == 1


def test_a_batch_whose_schema_changes_is_read_again_and_written_as_by_the_general_reading(world, reads):
    worker, objects, produce = world
    answers, runner = reads
    wider = {**SCHEMA, "fields": SCHEMA["fields"] + [{"type": "string", "field": "isbn", "optional": True}]}
    later = [json.dumps({"schema": wider, "payload": {"id": i, "title": f"book {i}", "isbn": f"i{i}"}}).encode()
             for i in (2, 3)]
    produce([value(0), value(1), *later, None, value(5)])
    name = sink(worker, objects, **{"flush.size": "3", "behavior.on.null.values": "ignore"})
    worker.run(name)
    assert answers[0] is not None and runner._DECLINED_READS == {(name, 0)}  # the first record's schema, declined
    got = {k: v.decode().splitlines() for k, v in files(objects).items()}
    # Confluent's schema compatibility NONE: each schema change commits the open object first.
    assert got == {
        "topics/orders/partition=0/orders+0+0000000000.json": [
            '{"id":0,"title":"book 0","ts":null,"gift":null}', '{"id":1,"title":"book 1","ts":null,"gift":null}'],
        "topics/orders/partition=0/orders+0+0000000002.json": [
            '{"id":2,"title":"book 2","ts":null,"gift":null,"isbn":"i2"}',
            '{"id":3,"title":"book 3","ts":null,"gift":null,"isbn":"i3"}']}
    assert worker.offsets(name)[0]["offset"] == {"kafka_offset": 4}  # record 5 waits in its open object

    # Later batches of this connector in this process find their schemas first.
    produce([value(6)])
    worker.run(name)
    assert answers[1:] == []


def test_tombstones_fail_by_default_naming_the_record_and_are_skipped_with_ignore(world):
    worker, objects, produce = world
    produce([value(0), None, value(2)])
    name = sink(worker, objects)
    with pytest.raises(DataError, match=r"orders-0@1: Null valued records are not writeable.*behavior.on.null.values"):
        worker.run(name)
    assert files(objects) == {} and worker.offsets(name) == []  # nothing half-written, offsets untouched
    name = sink(worker, objects, **{"behavior.on.null.values": "ignore"})
    worker.run(name)
    assert files(objects)["topics/orders/partition=0/orders+0+0000000000.json"].decode().count("\n") == 2


def test_a_partition_whose_records_are_all_skipped_moves_past_them(world):
    """A partition none of whose new records reaches an object (ignored tombstones, records the converter
    fails on under errors.tolerance=all) commits its position past them: else every run read them again and
    sent the failed ones to the dead letter queue again."""
    worker, objects, produce = world
    produce([None, None])
    produce([b"not json", b"{broken"], partition=1)
    name = sink(worker, objects, **{"behavior.on.null.values": "ignore", "errors.tolerance": "all",
                                    "errors.deadletterqueue.topic.name": "dlq"})
    worker.run(name)
    assert files(objects) == {}
    positions = {o["partition"]["kafka_partition"]: o["offset"]["kafka_offset"] for o in worker.offsets(name)}
    assert positions == {0: 2, 1: 2}
    dlq = TopicTable(worker.lake_root, "dlq")
    assert dlq.read(spark=worker.spark()).count() == 2
    worker.run(name)
    worker.run(name)
    assert dlq.read(spark=worker.spark()).count() == 2


def test_a_tombstone_beside_a_malformed_record_under_tolerance(world):
    """A batch holding a tombstone (skipped) and a record that is not JSON (set aside): the JSON converter's
    payload was evaluated for the malformed record too (the sink's null filter and the tolerance filter are
    one predicate to Spark, in no set order), and its duplicate-keys error failed the batch."""
    worker, objects, produce = world
    produce([value(0), None, b"not json", value(3)])
    name = sink(worker, objects, **{"behavior.on.null.values": "ignore", "errors.tolerance": "all",
                                    "errors.deadletterqueue.topic.name": "dlq"})
    worker.run(name)
    assert files(objects)["topics/orders/partition=0/orders+0+0000000000.json"].decode().count("\n") == 2
    letters = TopicTable(worker.lake_root, "dlq").read(spark=worker.spark()).collect()
    assert [bytes(r["value"]) for r in letters] == [b"not json"]


def test_a_record_the_writer_refuses_goes_to_the_dead_letter_queue(world):
    """Under errors.tolerance=all a record the S3 writer cannot place (a null partition field) is reported
    (Kafka's ErrantRecordReporter) and lands in the dead letter queue with its reason; the others are written
    and the batch commits past all of them."""
    worker, objects, produce = world
    produce([value(0, gift=True), value(1), value(2, gift=False)])
    name = sink(worker, objects, **{"partitioner.class": "FieldPartitioner", "partition.field.name": "gift",
                                    "flush.size": "1", "errors.tolerance": "all",
                                    "errors.deadletterqueue.topic.name": "dlq",
                                    "errors.deadletterqueue.context.headers.enable": "true"})
    worker.run(name)
    assert sorted(files(objects)) == ["topics/orders/gift=false/orders+0+0000000002.json",
                                      "topics/orders/gift=true/orders+0+0000000000.json"]
    letters = TopicTable(worker.lake_root, "dlq").read(spark=worker.spark()).collect()
    assert [bytes(r["value"]) for r in letters] == [value(1)]
    headers = {h["key"]: h["value"] for h in letters[0]["headers"]}
    assert b"names no partition" in headers["__connect.errors.exception.message"], headers
    assert {o["partition"]["kafka_partition"]: o["offset"]["kafka_offset"] for o in worker.offsets(name)} == {0: 3}


def test_a_record_without_the_partition_field_names_the_field(world):
    worker, objects, produce = world
    produce([value(0)])
    name = sink(worker, objects, **{"partitioner.class": "FieldPartitioner", "partition.field.name": "isbn"})
    with pytest.raises(DataError, match=r"no field 'isbn'.*its fields are id, title, ts, gift"):
        worker.run(name)
    assert files(objects) == {} and worker.offsets(name) == []


def test_schemaless_values_under_field_partitioner_and_avro_are_refused(world):
    worker, objects, produce = world
    produce([b'{"id": 1}'])
    base = {"value.converter.schemas.enable": "false"}
    for extra, pattern in (({"partitioner.class": "FieldPartitioner", "partition.field.name": "id"},
                            "FieldPartitioner needs struct values with a schema"),
                           ({"format.class": "AvroFormat"}, "AvroFormat needs records with a schema")):
        name = sink(worker, objects, **base, **extra)
        with pytest.raises(DataError, match=pattern):
            worker.run(name)
    assert files(objects) == {}


@pytest.mark.parametrize("config, key", [
    ({"path.format": "'year'=YYYY/'q'=Q", "partitioner.class": "TimeBasedPartitioner", "partition.duration.ms": "1000",
      "locale": "en", "timezone": "UTC"}, "path.format"),
    ({"timezone": "Mars/Olympus", "partitioner.class": "HourlyPartitioner", "locale": "en"}, "timezone"),
    ({"partitioner.class": "DailyPartitioner", "timezone": "UTC"}, "locale"),
    ({"format.class": "ParquetFormat", "parquet.codec": "lzo"}, "parquet.codec"),
    ({"partitioner.class": "FieldPartitioner"}, "partition.field.name"),
    ({"s3.bucket.name": ""}, "s3.bucket.name"),
])
def test_bad_settings_are_refused_naming_the_key(world, config, key):
    worker, objects, _ = world
    with pytest.raises(ConfigError) as e:
        sink(worker, objects, **config)
    assert any(p.key == key for p in e.value.problems), e.value


def test_a_half_given_login_is_one_problem(world):
    worker, objects, _ = world
    with pytest.raises(ConfigError) as e:
        sink(worker, objects, **{"aws.secret.access.key": "s3cr3t"})
    assert [p.key for p in e.value.problems] == ["aws.access.key.id"], e.value
    assert "s3cr3t" not in str(e.value)


def test_a_missing_bucket_names_the_key_and_leaves_offsets_alone(world):
    worker, objects, produce = world
    produce([value(0), value(1)])
    name = sink(worker, objects, **{"s3.bucket.name": "nope"})
    with pytest.raises(LakeConnectError, match="s3.bucket.name"):
        worker.run(name)
    assert worker.offsets(name) == []
