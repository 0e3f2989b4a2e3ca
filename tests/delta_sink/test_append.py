"""insert.mode=insert: every record is appended as a row of its topic's table, with its Kafka coordinates."""

from __future__ import annotations

import json

import pytest

from ingest.errors import DataError
from tests.conftest import cli
from tests.delta_sink._support import (
    ORDER_FIELDS, field, order, produce, sink_config, table_columns, table_rows, table_version, worker_of,
)

STRING = "org.apache.kafka.connect.storage.StringConverter"
COORDINATES = ["__connect_topic", "__connect_partition", "__connect_offset", "__connect_timestamp"]


def test_console_produced_topic_is_appended_with_its_coordinates(spark, worker_file, lake):
    lines = "".join(f"k{i % 5}\t{order(i, f'book {i}', i * 10)}\n" for i in range(40))
    r = cli("topics", "produce", "orders", "--partitions", "2", "--property", "parse.key=true",
            worker=worker_file, stdin=lines)
    assert r.returncode == 0, r.stderr
    worker = worker_of(worker_file)
    worker.create("lake", sink_config(topics="orders", **{"key.converter": STRING}))
    assert worker.run("lake")[0].records == 40

    assert table_columns(worker_file, "orders") == ["id", "product", "quantity", *COORDINATES]
    rows = table_rows(worker_file, "orders", drop=("__connect_timestamp",))
    assert sorted((r[0], r[1], r[2]) for r in rows) == [(i, f"book {i}", i * 10) for i in range(40)]
    topic = worker.lake_root + "/topics/orders"
    from deltalake import DeltaTable

    coordinates = sorted((p, o) for p, o in zip(*DeltaTable(topic).to_pyarrow_table(
        columns=["partition", "offset"]).to_pydict().values()))
    assert sorted((r[4], r[5]) for r in rows) == coordinates
    assert {r[3] for r in rows} == {"orders"}

    # the next batch appends only the new records; a tombstone makes no row
    produce(spark, worker_file, "orders", [("k1", order(40, "late", 1)), ("k2", None)], version=2)
    assert worker.run("lake")[0].records == 2
    assert len(table_rows(worker_file, "orders", drop=("__connect_timestamp",))) == 41
    assert worker.run("lake")[0].outcome == "EMPTY"


def test_new_fields_need_auto_evolve(spark, worker_file):
    produce(spark, worker_file, "orders", [(None, order(1, "a", 1))])
    worker = worker_of(worker_file)
    worker.create("lake", sink_config(topics="orders"))
    worker.run("lake")
    before = table_version(worker_file, "orders")
    with_note = [*ORDER_FIELDS, field("note", "string")]
    produce(spark, worker_file, "orders", [(None, order(2, "b", 2, with_note, note="gift"))], version=2)
    with pytest.raises(DataError) as e:
        worker.run("lake")
    message = str(e.value)
    assert "topic 'orders', partition 0, offset 1" in message and "field 'note'" in message
    assert "auto.evolve=true" in message and table_version(worker_file, "orders") == before

    worker.update("lake", sink_config(topics="orders", **{"auto.evolve": "true"}))
    worker.run("lake")
    assert table_columns(worker_file, "orders") == ["id", "product", "quantity", *COORDINATES, "note"]
    assert [(*r[:3], r[-1]) for r in table_rows(worker_file, "orders")] == [(1, "a", 1, None), (2, "b", 2, "gift")]


def test_schemaless_values_are_kept_as_json_text(spark, worker_file):
    produce(spark, worker_file, "events", [(None, '{"a": 1, "b": [true]}'), (None, '"text"'), (None, None)])
    worker = worker_of(worker_file)
    worker.create("lake", sink_config(topics="events", **{"value.converter.schemas.enable": "false",
                                                          "key.converter.schemas.enable": "false"}))
    worker.run("lake")
    assert table_columns(worker_file, "events") == ["value", *COORDINATES]
    assert sorted(json.loads(r[0]) if r[0].startswith("{") else r[0] for r in
                  table_rows(worker_file, "events") if r[0].startswith("{")) == [{"a": 1, "b": [True]}]
    assert len(table_rows(worker_file, "events")) == 2  # the tombstone makes no row


def test_records_set_aside_under_tolerance_leave_the_table_its_own_columns(spark, worker_file):
    """Under errors.tolerance=all the batch's records carry their consumed form to the sink (for a record it
    reports); the table still gets only its columns, and the record that is not JSON goes to the queue."""
    produce(spark, worker_file, "orders", [(None, order(1, "a", 1)), (None, "not json"), (None, order(3, "c", 3))])
    worker = worker_of(worker_file)
    worker.create("lake", sink_config(topics="orders", **{"errors.tolerance": "all",
                                                          "errors.deadletterqueue.topic.name": "dlq"}))
    worker.run("lake")
    assert table_columns(worker_file, "orders") == ["id", "product", "quantity", *COORDINATES]
    assert [(r[0], r[1]) for r in table_rows(worker_file, "orders")] == [(1, "a"), (3, "c")]
