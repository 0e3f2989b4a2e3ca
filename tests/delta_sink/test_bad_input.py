"""Records the sink cannot write stop the batch with a message naming the record (topic, partition,
offset, key), what was expected and what to do; nothing of the batch reaches the table or the offsets."""

from __future__ import annotations

import pytest

from connectors.delta_sink.sink import DeltaTableSinkConnector
from ingest.errors import ConfigError, DataError
from tests.delta_sink._support import (
    ORDER_FIELDS, committed_offsets, field, key, order, produce, sink_config, table_version, worker_of,
)

STRING = "org.apache.kafka.connect.storage.StringConverter"
OPTIONAL_ID = [field("id", "int32"), *ORDER_FIELDS[1:]]
AS_TEXT = [ORDER_FIELDS[0], ORDER_FIELDS[1], field("quantity", "string")]

CASES = {
    "null primary key field": (
        {"key.converter": STRING, "insert.mode": "upsert", "pk.mode": "record_value", "pk.fields": "id"},
        [("k1", order(1, "a", 1, OPTIONAL_ID)), ("k2", order(None, "b", 2, OPTIONAL_ID))],
        ["offset 1 (key k2)", "no value for primary key field 'id'"]),
    "key lacks the pk field": (
        {"insert.mode": "upsert", "pk.mode": "record_key", "pk.fields": "sku"},
        [(key(1), order(1, "a", 1))],
        ["offset 0 (key {\"id\":1})", "pk.fields names ['sku']", "set pk.fields to key fields"]),
    "record without a key": (
        {"insert.mode": "upsert", "pk.mode": "record_key"},
        [(key(1), order(1, "a", 1)), (None, order(2, "b", 2))],
        ["offset 1 (key null)", "the record has no key"]),
    "primitive key without pk.fields": (
        {"key.converter": STRING, "insert.mode": "upsert", "pk.mode": "record_key"},
        [("k1", order(1, "a", 1))],
        ["offset 0 (key k1)", "exactly one pk.fields name"]),
    "schemaless value in upsert mode": (
        {"key.converter": STRING, "value.converter.schemas.enable": "false", "insert.mode": "upsert",
         "pk.mode": "record_key", "pk.fields": "name"},
        [("k1", '{"id": 1}')],
        ["offset 0 (key k1)", "needs a struct value with a schema", "value.converter.schemas.enable=true"]),
    "tombstone without delete.enabled": (
        {"insert.mode": "upsert", "pk.mode": "record_key", "lakeconnect.debezium.unwrap": "false"},
        [(key(1), order(1, "a", 1)), (key(1), None)],
        ["offset 1 (key {\"id\":1})", "tombstone", "set delete.enabled=true"]),
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_records_stop_the_batch(spark, worker_file, case):
    config, records, expected = CASES[case]
    produce(spark, worker_file, "orders", records)
    worker = worker_of(worker_file)
    worker.create("lake", sink_config(topics="orders", **config))
    with pytest.raises(DataError) as e:
        worker.run("lake")
    message = str(e.value)
    assert "cannot write the record at topic 'orders', partition 0, " in message, message
    for text in expected:
        assert text in message, message
    assert "Nothing of this batch was committed" in message
    assert table_version(worker_file, "orders") is None and committed_offsets(worker_file, "lake") == {}


def test_a_field_changing_type_is_refused(spark, worker_file):
    produce(spark, worker_file, "orders", [(key(1), order(1, "a", 1))])
    worker = worker_of(worker_file)
    worker.create("lake", sink_config(topics="orders", **{"insert.mode": "upsert", "pk.mode": "record_key",
                                                          "auto.evolve": "true"}))
    worker.run("lake")
    version, offsets = table_version(worker_file, "orders"), committed_offsets(worker_file, "lake")
    produce(spark, worker_file, "orders", [(key(2), order(2, "b", "many", AS_TEXT))], version=2)
    with pytest.raises(DataError) as e:
        worker.run("lake")
    message = str(e.value)
    assert "the record at topic 'orders', partition 0, offset 1 (key {\"id\":2})" in message
    assert "field 'quantity' is string in the record but int in the table" in message
    assert "Cast transform" in message
    assert table_version(worker_file, "orders") == version and committed_offsets(worker_file, "lake") == offsets


@pytest.mark.parametrize("config, problem", [
    ({"insert.mode": "upsert"}, "pk.mode: insert.mode=upsert needs a primary key"),
    ({"insert.mode": "upsert", "pk.mode": "record_value", "delete.enabled": "true"},
     "delete.enabled: delete.enabled=true deletes by the record key"),
    ({"pk.mode": "kafka", "pk.fields": "a,b"}, "pk.fields: pk.mode=kafka takes three names"),
    ({"table.name.format": "x_${topik}"}, "table.name.format: unknown placeholder(s) ['${topik}']"),
    ({"insert.mode": "update"}, "insert.mode: invalid value 'update'"),
])
def test_configuration_problems(worker_file, config, problem):
    with pytest.raises(ConfigError) as e:
        worker_of(worker_file).validate(sink_config(topics="orders", **config))
    assert problem in str(e.value)
    assert DeltaTableSinkConnector.aliases == ("io.lakeconnect.delta.DeltaTableSinkConnector", "DeltaTableSink")
