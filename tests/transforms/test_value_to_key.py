"""ValueToKey against Kafka's ValueToKeyTest: the key becomes the listed value fields (a Struct with a
schema, a Map without), unknown fields and non-Struct values fail, replace.null.with.default."""

from __future__ import annotations

import pytest

from connectors.predicates import RecordIsTombstone
from connectors.transforms.value_to_key import ValueToKey
from ingest.errors import ConfigError
from ingest.records.schema import INT32_SCHEMA, STRING_SCHEMA, ConnectSchema, struct
from tests.converters.helpers import assert_no_python
from tests.transforms.helpers import SCHEMALESS, apply, apply_one, batch_of, make, records, schema


def test_schemaless(spark):
    b = batch_of(spark, [{"key": "old", "value": {"a": 1, "b": 2, "c": 3}}, {"key": "x", "value": {"a": 1}},
                         {"key": "t", "value": None}, {"key": "n", "value": 5}], key_schema=STRING_SCHEMA)
    out = apply_one(make(ValueToKey, {"fields": "a,b"}), b)
    rs = records(out)
    assert schema(out, "key") is None and schema(out) is None
    assert [r["key"] for r in rs[:2]] == [{"a": 1, "b": 2}, {"a": 1, "b": None}]
    assert rs[0]["value"] == {"a": 1, "b": 2, "c": 3}
    assert [r.get("error") for r in rs] == [
        None, None,
        "Only Map objects supported in absence of schema for [copying fields from value to key], found: null",
        "Only Map objects supported in absence of schema for [copying fields from value to key], "
        "found: java.lang.Long"]
    assert_no_python(out.df)


def test_with_schema(spark):
    value_schema = struct("v", ("a", INT32_SCHEMA), ("b", INT32_SCHEMA), ("c", INT32_SCHEMA))
    b = batch_of(spark, [{"value": {"a": 1, "b": 2, "c": 3}}, {"value": None}], value_schema=value_schema)
    out = apply_one(make(ValueToKey, {"fields": "a,b"}), b)
    assert schema(out, "key") == struct(None, ("a", INT32_SCHEMA), ("b", INT32_SCHEMA))
    assert schema(out) == value_schema
    rs = records(out)
    assert rs[0]["key"] == {"a": 1, "b": 2} and rs[0]["value"] == {"a": 1, "b": 2, "c": 3}
    assert rs[1]["error"] == "Only Struct objects supported for [copying fields from value to key], found: null"


def test_failures_with_schema(spark):
    value_schema = struct(None, ("a", INT32_SCHEMA))
    b = batch_of(spark, [{"value": {"a": 1}}, {"value": None}], value_schema=value_schema)
    missing = records(apply_one(make(ValueToKey, {"fields": "not_exist"}), b))
    twice = records(apply_one(make(ValueToKey, {"fields": "a,a"}), b))
    primitive = records(apply_one(make(ValueToKey, {"fields": "a"}), batch_of(
        spark, [{"value": 1}], value_schema=INT32_SCHEMA)))
    null_value = "Only Struct objects supported for [copying fields from value to key], found: null"
    assert [r["error"] for r in missing] == ["Field does not exist: not_exist", null_value]
    assert [r["error"] for r in twice] == ["Cannot create field because of field name duplication a", null_value]
    assert primitive[0]["error"] == \
        "Only Struct objects supported for [copying fields from value to key], found: java.lang.Integer"
    only_tombstones = records(apply_one(make(ValueToKey, {"fields": "a"}), batch_of(spark, [{"value": None}],
                                                                                   value_schema=None)))
    assert only_tombstones[0]["error"] == \
        "Only Map objects supported in absence of schema for [copying fields from value to key], found: null"


def test_replace_null_with_default(spark):
    value_schema = struct(None, ("a", ConnectSchema("int32", optional=True, default=7)), ("b", STRING_SCHEMA))
    b = batch_of(spark, [{"value": {"a": None, "b": "x"}}], value_schema=value_schema)
    replaced = apply_one(make(ValueToKey, {"fields": "a"}), b)
    kept = apply_one(make(ValueToKey, {"fields": "a", "replace.null.with.default": "false"}), b)
    assert schema(kept, "key") == struct(None, ("a", ConnectSchema("int32", optional=True, default=7)))
    assert [records(o)[0]["key"] for o in (replaced, kept)] == [{"a": 7}, {"a": None}]


def test_scoped_by_predicate(spark):
    b = batch_of(spark, [{"key": {"k": 1}, "value": {"id": 1}, "headers": [("h", "v")]},
                         {"key": {"k": 2}, "value": None}], key_schema=SCHEMALESS)
    outs = apply(make(ValueToKey, {"fields": "id"}), b, make(RecordIsTombstone, {}), negate=True)
    rs = [r for o in outs for r in records(o)]
    assert [(r["key"], r["value"], r["headers"], r.get("error")) for r in rs] == [
        ({"id": 1}, {"id": 1}, [("h", "v")], None), ({"k": 2}, None, None, None)]


def test_config():
    keys = ValueToKey.config_def().keys
    assert list(keys) == ["fields", "replace.null.with.default"]
    assert keys["fields"].required and keys["replace.null.with.default"].default is True
    assert ValueToKey.aliases == ("org.apache.kafka.connect.transforms.ValueToKey",)
    with pytest.raises(ConfigError) as e:
        make(ValueToKey, {"fields": ""})
    assert e.value.problems[0].message == "Empty list"
