"""InsertField ($Key/$Value), ported from Kafka's InsertFieldTest (same inputs, same outputs: schema'd,
schemaless, tombstones), plus offsets on sink/source records, replace.null.with.default, the book's
ReplaceField -> InsertField chain, configuration errors, predicates and plan checks."""

from __future__ import annotations

import datetime as dt

import pytest
from pyspark.sql import functions as F

from connectors.predicates import TopicNameMatches
from connectors.transforms.insert_field import InsertFieldKey, InsertFieldValue
from connectors.transforms.replace_field import ReplaceFieldValue
from ingest.errors import ConfigError
from ingest.records.schema import (
    INT32_SCHEMA, INT64_SCHEMA, OPTIONAL_INT32_SCHEMA, OPTIONAL_INT64_SCHEMA, OPTIONAL_STRING_SCHEMA,
    OPTIONAL_TIMESTAMP_SCHEMA, STRING_SCHEMA, ConnectSchema, struct,
)
from tests.converters.helpers import assert_no_python
from tests.transforms.helpers import SCHEMALESS, apply, apply_one, batch_of, make, records, schema

UTC = dt.timezone.utc
PROPS = {"topic.field": "topic_field!", "partition.field": "partition_field", "timestamp.field": "timestamp_field?",
         "static.field": "instance_id", "static.value": "my-instance-id"}
SIMPLE = struct("name", ("magic", OPTIONAL_INT64_SCHEMA), version=1, doc="doc")


def _ts(millis: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(millis / 1000, UTC)


def test_copy_schema_and_insert_configured_fields(spark):
    t = make(InsertFieldValue, PROPS)
    b = batch_of(spark, [{"value": {"magic": 42}, "partition": 0, "timestamp": _ts(789)},
                         {"value": {"magic": None}, "partition": 1},  # no timestamp: field stays null
                         {"value": None, "partition": 0, "timestamp": _ts(1)}],  # tombstone passes
                 value_schema=SIMPLE)
    out = apply_one(t, b)
    expected = struct("name", ("magic", OPTIONAL_INT64_SCHEMA), ("topic_field", STRING_SCHEMA),
                      ("partition_field", OPTIONAL_INT32_SCHEMA), ("timestamp_field", OPTIONAL_TIMESTAMP_SCHEMA),
                      ("instance_id", OPTIONAL_STRING_SCHEMA), version=1, doc="doc")
    assert schema(out) == expected
    rs = records(out)
    assert rs[0]["value"] == {"magic": 42, "topic_field": "test", "partition_field": 0,
                              "timestamp_field": dt.datetime(1970, 1, 1, 0, 0, 0, 789000),
                              "instance_id": "my-instance-id"}
    assert rs[1]["value"] == {"magic": None, "topic_field": "test", "partition_field": 1,
                              "timestamp_field": None, "instance_id": "my-instance-id"}
    assert rs[2]["value"] is None and "error" not in rs[2]
    assert [r["timestamp"] for r in rs] == [dt.datetime(1970, 1, 1, 0, 0, 0, 789000), None,
                                            dt.datetime(1970, 1, 1, 0, 0, 0, 1000)]


def test_schemaless_insert_configured_fields(spark):
    t = make(InsertFieldValue, PROPS)
    b = batch_of(spark, [{"value": {"magic": 42}, "partition": 0, "timestamp": _ts(123)},
                         {"value": None, "partition": 0},  # tombstone: unchanged
                         {"value": {"partition_field": "kept"}},  # no partition, no timestamp: not inserted
                         {"value": "text"}])
    rs = records(apply_one(t, b))
    assert rs[0]["value"] == {"magic": 42, "topic_field": "test", "partition_field": 0, "timestamp_field": 123,
                              "instance_id": "my-instance-id"}
    assert rs[1]["value"] is None and "error" not in rs[1]
    assert rs[2]["value"] == {"partition_field": "kept", "topic_field": "test", "instance_id": "my-instance-id"}
    assert rs[3]["error"] == ("Only Map objects supported in absence of schema for [field insertion], "
                              "found: java.lang.String")


def test_key_fields_and_null_key(spark):
    """insertKeyFieldsIntoTombstoneEvent and insertIntoNullKeyLeavesRecordUnchanged."""
    t = make(InsertFieldKey, PROPS)
    b = batch_of(spark, [{"key": {"magic": 42}, "value": None, "partition": 0},
                         {"key": None, "value": {"magic": 42}, "partition": 0}],
                 key_schema=SCHEMALESS, value_schema=SCHEMALESS)
    rs = records(apply_one(t, b))
    assert rs[0]["key"] == {"magic": 42, "topic_field": "test", "partition_field": 0, "instance_id": "my-instance-id"}
    assert rs[0]["value"] is None
    assert rs[1]["key"] is None and rs[1]["value"] == {"magic": 42} and "error" not in rs[1]


def test_top_level_struct_required(spark):
    t = make(InsertFieldValue, {"topic.field": "topic_field"})
    out = apply_one(t, batch_of(spark, [{"value": 42}, {"value": None}], value_schema=INT32_SCHEMA))
    rs = records(out)
    assert rs[0]["error"] == "Only Struct objects supported for [field insertion], found: java.lang.Integer"
    assert "error" not in rs[1]
    assert schema(out) == INT32_SCHEMA


def test_offset_needs_a_sink_record(spark):
    t = make(InsertFieldValue, {"offset.field": "offset_field!"})
    source = batch_of(spark, [{"value": {"magic": 1}}, {"value": None}], value_schema=SIMPLE)
    rs = records(apply_one(t, source))
    assert rs[0]["error"] == ("Only SinkRecord supported for [field insertion], "
                              "found: org.apache.kafka.connect.source.SourceRecord")
    assert "error" not in rs[1]

    sink = source.with_df(source.df.withColumn("offset", F.col("seq") + 100))
    out = apply_one(t, sink)
    assert schema(out).field("offset_field").schema == INT64_SCHEMA
    assert [r["value"] for r in records(out)] == [{"magic": 1, "offset_field": 100}, None]

    schemaless = batch_of(spark, [{"value": {"a": 1}}])
    sink = schemaless.with_df(schemaless.df.withColumn("offset", F.lit(7).cast("long")))
    assert records(apply_one(t, sink))[0]["value"] == {"a": 1, "offset_field": 7}
    assert records(apply_one(t, schemaless))[0]["error"].startswith("Only SinkRecord supported")


def test_replace_null_with_default(spark):
    with_default = ConnectSchema("int32", True, default=42)
    value_schema = struct(None, ("abc", with_default), ("req", ConnectSchema("int32", False, default=7)))
    # A Struct whose required field was never put: null, read as its default (Spark holds it as a null).
    nullable = struct(None, ("abc", with_default), ("req", ConnectSchema("int32", True, default=7)))
    b = batch_of(spark, [{"value": {"abc": None, "req": None}}], value_schema=nullable).with_schemas(
        value_schema=value_schema)
    replaced = records(apply_one(make(InsertFieldValue, {"topic.field": "t"}), b))[0]
    assert replaced["value"] == {"abc": 42, "req": 7, "t": "test"}
    kept = records(apply_one(make(InsertFieldValue, {"topic.field": "t", "replace.null.with.default": "false"}), b))[0]
    assert kept["error"] == 'Invalid value: null used for required field: "req", schema type: INT32'


def test_duplicate_field_name(spark):
    t = make(InsertFieldValue, {"topic.field": "magic"})
    rs = records(apply_one(t, batch_of(spark, [{"value": {"magic": 1}}], value_schema=SIMPLE)))
    assert rs[0]["error"] == "Cannot create field because of field name duplication magic"


def test_book_example_replace_then_insert(spark):
    """ReplaceField$Value (renames=source:origin) then InsertField$Value (timestamp.field=ts)."""
    when = dt.datetime(2022, 6, 23, 10, 30, 15, 123000, tzinfo=UTC)
    b = batch_of(spark, [{"value": {"source": "kafka-console-producer", "type": "event"}, "timestamp": when}])
    b = apply_one(make(ReplaceFieldValue, {"renames": "source:origin"}), b)
    out = apply_one(make(InsertFieldValue, {"timestamp.field": "ts"}), b)
    assert schema(out) is None
    assert records(out)[0]["value"] == {"origin": "kafka-console-producer", "type": "event",
                                        "ts": int(when.timestamp() * 1000)}


def test_predicate_scope_other_columns_and_plan(spark):
    t = make(InsertFieldValue, {"topic.field": "t", "partition.field": "p!"})
    b = batch_of(spark, [{"value": {"magic": 1}, "topic": "a", "partition": 3, "key": None,
                          "headers": [("h", "v")], "timestamp": _ts(5)},
                         {"value": {"magic": 2}, "topic": "b", "partition": 4}], value_schema=SIMPLE)
    outs = apply(t, b, make(TopicNameMatches, {"pattern": "a"}))
    assert sum(o.df.count() for o in outs) == 2
    changed = [o for o in outs if schema(o) != SIMPLE]
    assert len(changed) == 1 and schema(changed[0]).field("p").schema == INT32_SCHEMA
    r = records(changed[0])[0]
    assert r["value"] == {"magic": 1, "t": "a", "p": 3}
    assert (r["topic"], r["partition"], r["headers"], r["timestamp"]) == (
        "a", 3, [("h", "v")], dt.datetime(1970, 1, 1, 0, 0, 0, 5000))
    unchanged = [o for o in outs if schema(o) == SIMPLE]
    assert [x["value"] for x in records(unchanged[0])] == [{"magic": 2}]
    assert_no_python(changed[0].df)
    assert_no_python(apply_one(make(InsertFieldValue, PROPS), batch_of(spark, [{"value": {"a": 1}}])).df)


def test_config_errors():
    with pytest.raises(ConfigError, match="No field insertion configured"):
        make(InsertFieldValue, {})
    with pytest.raises(ConfigError, match="static.value: No value specified for static field: x"):
        make(InsertFieldValue, {"static.field": "x!"})
    assert InsertFieldValue.aliases == ("org.apache.kafka.connect.transforms.InsertField$Value",)
    assert InsertFieldKey.aliases == ("org.apache.kafka.connect.transforms.InsertField$Key",)
    keys = InsertFieldValue.config_def().keys
    assert keys["offset.field"].doc == ("Field name for Kafka offset - only applicable to sink connectors.<br/>"
                                        "Suffix with <code>!</code> to make this a required field, or <code>?</code> "
                                        "to keep it optional (the default).")
    assert keys["replace.null.with.default"].default is True
