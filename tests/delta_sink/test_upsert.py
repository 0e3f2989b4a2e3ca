"""insert.mode=upsert: one row per primary key, the key's latest record (by partition and offset) wins,
through a MERGE computed by Spark and committed once."""

from __future__ import annotations

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from connectors.delta_sink.sink import DeltaTableSinkTask
from ingest.api import TaskContext, TopicRange
from ingest.delta import merge_dataframe, read_table
from ingest.errors import RetriableError
from ingest.records import RecordBatch
from ingest.runtime.batches import task_app_id
from ingest.records.schema import INT32_SCHEMA, OPTIONAL_STRING_SCHEMA, struct
from tests.delta_sink._support import (
    key, order, produce, sink_config, table_rows, table_version, worker_of,
)

STRING = "org.apache.kafka.connect.storage.StringConverter"


def test_latest_record_of_each_key_wins(spark, worker_file):
    # 3 partitions; key k<n> holds order n; several updates of a key inside one batch and across batches
    first = [(f"k{i % 7}", order(i % 7, f"v{i}", i)) for i in range(30)]
    produce(spark, worker_file, "orders", first, partitions=3)
    worker = worker_of(worker_file)
    worker.create("lake", sink_config(topics="orders", **{
        "key.converter": STRING, "insert.mode": "upsert", "pk.mode": "record_value", "pk.fields": "id"}))
    worker.run("lake")
    expected = {i % 7: (i % 7, f"v{i}", i) for i in range(30)}  # a key's records share a partition
    assert table_rows(worker_file, "orders") == sorted(expected.values())

    second = [(f"k{i % 3}", order(i % 3, f"w{i}", i)) for i in range(100, 110)] + [("k9", order(9, "new", 9))]
    produce(spark, worker_file, "orders", second, version=2)
    worker.run("lake")
    expected.update({i % 3: (i % 3, f"w{i}", i) for i in range(100, 110)})
    expected[9] = (9, "new", 9)
    assert table_rows(worker_file, "orders") == sorted(expected.values())
    table = DeltaTable(str(worker_of(worker_file).lake_root) + "/tables/orders")
    assert sum(pa.table(table.get_add_actions(flatten=True)).column("num_records").to_pylist()) == len(expected)


def test_tombstones_delete_keys_with_delete_enabled(spark, worker_file):
    records = [(key(1), order(1, "a", 1)), (key(2), order(2, "b", 2)), (key(1), None), (key(3), order(3, "c", 3)),
               (key(2), order(2, "b2", 20)), (key(3), None), (key(3), order(3, "back", 30))]
    produce(spark, worker_file, "orders", records)
    worker = worker_of(worker_file)
    worker.create("lake", sink_config(topics="orders", **{
        "insert.mode": "upsert", "pk.mode": "record_key", "delete.enabled": "true"}))
    worker.run("lake")
    assert table_rows(worker_file, "orders") == [(2, "b2", 20), (3, "back", 30)]
    produce(spark, worker_file, "orders", [(key(2), None), (key(4), None)], version=2)  # 4 was never there
    worker.run("lake")
    assert table_rows(worker_file, "orders") == [(3, "back", 30)]


def test_primitive_key_names_its_column(spark, worker_file):
    produce(spark, worker_file, "orders", [("alpha", order(1, "a", 1)), ("alpha", order(2, "b", 2)),
                                           ("beta", order(3, "c", 3))])
    worker = worker_of(worker_file)
    worker.create("lake", sink_config(topics="orders", **{
        "key.converter": STRING, "insert.mode": "upsert", "pk.mode": "record_key", "pk.fields": "name"}))
    worker.run("lake")
    assert table_rows(worker_file, "orders") == [("alpha", 2, "b", 2), ("beta", 3, "c", 3)]


# --- the write itself: idempotent, and safe against concurrent commits ---------------------------------

KEY = struct("k", ("id", INT32_SCHEMA))
VALUE = struct("v", ("id", INT32_SCHEMA), ("name", OPTIONAL_STRING_SCHEMA))


def _batch(spark, records) -> RecordBatch:
    rows = [("t", 0, offset, {"id": k}, None if name is False else {"id": k, "name": name}, None, None, "CreateTime",
             offset) for offset, (k, name) in enumerate(records)]
    schema = (f"topic string, partition int, offset long, key {KEY.to_spark_type().simpleString()}, "
              f"value {VALUE.to_spark_type().simpleString()}, headers array<struct<key:string,value:string>>, "
              "timestamp timestamp, timestamp_type string, seq long")
    return RecordBatch(spark.createDataFrame(rows, schema), KEY, VALUE)


def _task(worker_file, spark, **extra) -> DeltaTableSinkTask:
    import logging

    worker = worker_of(worker_file)
    setup = worker.validate(sink_config(topics="t", **{"insert.mode": "upsert", "pk.mode": "record_key",
                                                       "delete.enabled": "true", **extra}))
    context = TaskContext("lake", 0, worker.config, lambda: spark, logging.LoggerAdapter(logging.getLogger("t"), {}),
                          worker.lake_root, app_id=task_app_id("lake", 0, sink=True))
    return DeltaTableSinkTask(setup.config, context)


def test_a_batch_put_again_is_a_noop(spark, worker_file):
    task = _task(worker_file, spark)
    ranges = [TopicRange("t", 0, 0, 3)]
    task.put([_batch(spark, [(1, "a"), (2, "b"), (1, "a2")])], ranges, {}, 1)
    task.put([_batch(spark, [(2, "b2"), (3, "c"), (1, False)])], ranges, {}, 2)
    version = table_version(worker_file, "t")
    assert table_rows(worker_file, "t") == [(2, "b2"), (3, "c")]
    task.put([_batch(spark, [(2, "b2"), (3, "c"), (1, False)])], ranges, {}, 2)  # a crashed batch, put again
    assert table_version(worker_file, "t") == version
    assert table_rows(worker_file, "t") == [(2, "b2"), (3, "c")]


def test_a_batch_older_than_the_table_is_refused(spark, worker_file):
    task = _task(worker_file, spark)
    task.put([_batch(spark, [(1, "a")])], [TopicRange("t", 0, 0, 1)], {}, 5)
    with pytest.raises(Exception, match="already holds batch 5 .* this run is at batch 2"):
        task.put([_batch(spark, [(1, "b")])], [TopicRange("t", 0, 0, 1)], {}, 2)


def test_merge_computed_again_when_a_commit_lands_in_between(spark, tmp_path):
    uri = str(tmp_path / "t")
    changes = lambda rows: spark.createDataFrame(rows, "id int, name string, gone boolean")  # noqa: E731
    merge_dataframe(changes([(1, "a", False), (2, "b", False)]), uri, keys=["id"], app_id="me", version=1,
                    delete="gone")
    landed = []

    def concurrent(files):  # another writer commits while our files are written
        if not landed:
            landed.append(merge_dataframe(changes([(2, "B", False), (7, "x", False)]), uri, keys=["id"],
                                          app_id="other", version=1, delete="gone"))

    result = merge_dataframe(changes([(1, "A", False), (2, None, True), (3, "c", False)]), uri, keys=["id"],
                             app_id="me", version=2, delete="gone", check_files=concurrent)
    assert landed[0] is not None and result.version == landed[0].version + 1
    rows = sorted(tuple(r) for r in read_table(spark, uri).collect())
    assert rows == [(1, "A"), (3, "c"), (7, "x")]  # nothing lost, nothing twice

    def twin(files):  # a twin of this very batch commits first: ours is then a no-op
        merge_dataframe(changes([(3, "C", False)]), uri, keys=["id"], app_id="me", version=3, delete="gone")

    assert merge_dataframe(changes([(3, "C", False)]), uri, keys=["id"], app_id="me", version=3, delete="gone",
                           check_files=twin) is None
    assert sorted(tuple(r) for r in read_table(spark, uri).collect()) == [(1, "A"), (3, "C"), (7, "x")]

    def always(files):  # a writer that wins every race: the merge gives up, retriably
        merge_dataframe(changes([(100 + len(files), "z", False)]), uri, keys=["id"], app_id="o2",
                        version=DeltaTable(uri).version() + 10, delete="gone")

    with pytest.raises(RetriableError):
        merge_dataframe(changes([(1, "AA", False)]), uri, keys=["id"], app_id="me", version=4, delete="gone",
                        check_files=always)
    assert ("1", "AA") not in {(str(r[0]), r[1]) for r in read_table(spark, uri).collect()}


def test_merge_rewrites_only_the_files_holding_a_key(spark, tmp_path, monkeypatch):
    import ingest.delta.merge as merge

    monkeypatch.setattr(merge, "REWRITE_WITHOUT_LOOKUP_BYTES", 0)  # look up which files hold the keys
    uri = str(tmp_path / "t")
    changes = lambda rows: spark.createDataFrame(rows, "id int, name string").coalesce(1)  # noqa: E731
    files = [merge_dataframe(changes(rows), uri, keys=["id"], app_id="me", version=v)
             for v, rows in enumerate([[(1, "a"), (5, "e")], [(2, "b"), (6, "f")], [(3, "c"), (7, "g")]], 1)]
    assert [len(f.removed) for f in files] == [0, 0, 0]  # key ranges overlap, but no key was in the table
    files = [f.added for f in files]
    # every file's key range holds 5, only the first file holds it
    result = merge_dataframe(changes([(5, "E"), (8, "h")]), uri, keys=["id"], app_id="me", version=4)
    assert [f.path for f in result.removed] == [f.path for f in files[0]] and result.rows_written == 3
    assert sorted(tuple(r) for r in read_table(spark, uri).collect()) == [
        (1, "a"), (2, "b"), (3, "c"), (5, "E"), (6, "f"), (7, "g"), (8, "h")]


def test_merge_into_a_partitioned_table(spark, tmp_path):
    from ingest.delta import write_dataframe

    uri = str(tmp_path / "t")
    rows = [(1, "a", "x y"), (2, "b", "z/w"), (3, "c", "x y")]
    write_dataframe(spark.createDataFrame(rows, "id int, v string, p string"),
                    uri, app_id="load", version=1, partition_by=["p"])
    result = merge_dataframe(spark.createDataFrame([(1, "A", "x y", False), (2, None, "z/w", True)],
                                                   "id int, v string, p string, gone boolean"),
                             uri, keys=["id"], app_id="me", version=1, delete="gone")
    assert len(result.removed) == 3 and DeltaTable(uri).metadata().partition_columns == ["p"]  # small: all
    assert sorted(tuple(r) for r in read_table(spark, uri).collect()) == [(1, "A", "x y"), (3, "c", "x y")]
