"""ReplaceField ($Key/$Value), ported from Kafka's ReplaceFieldTest (same inputs, same outputs: schema'd,
schemaless, tombstones, replace.null.with.default on key and value), plus the deprecated
blacklist/whitelist names, rename collisions, configuration errors, predicates and plan checks."""

from __future__ import annotations

import pytest

from connectors.predicates import RecordIsTombstone
from connectors.transforms.replace_field import ReplaceFieldKey, ReplaceFieldValue
from ingest.errors import ConfigError
from ingest.records.schema import BOOLEAN_SCHEMA, INT32_SCHEMA, STRING_SCHEMA, ConnectSchema, struct
from tests.converters.helpers import assert_no_python
from tests.transforms.helpers import SCHEMALESS, apply, apply_one, batch_of, make, records, schema

SCHEMA = struct("schema", ("dont", STRING_SCHEMA), ("abc", INT32_SCHEMA), ("foo", BOOLEAN_SCHEMA),
                ("etc", STRING_SCHEMA), version=2, doc="doc")
VALUE = {"dont": "whatever", "abc": 42, "foo": True, "etc": "etc"}


def test_schemaless(spark):
    t = make(ReplaceFieldValue, {"exclude": "dont", "renames": "abc:xyz,foo:bar"})
    b = batch_of(spark, [{"value": VALUE}, {"value": None}, {"value": [1]}])
    rs = records(apply_one(t, b))
    assert rs[0]["value"] == {"xyz": 42, "bar": True, "etc": "etc"}
    assert rs[1]["value"] is None and "error" not in rs[1]  # tombstoneSchemaless
    assert rs[2]["error"] == ("Only Map objects supported in absence of schema for [field replacement], "
                              "found: java.util.ArrayList")


def test_with_schema(spark):
    t = make(ReplaceFieldValue, {"include": "abc,foo", "renames": "abc:xyz,foo:bar"})
    b = batch_of(spark, [{"value": VALUE}, {"value": None}], value_schema=SCHEMA)
    out = apply_one(t, b)
    assert schema(out) == struct("schema", ("xyz", INT32_SCHEMA), ("bar", BOOLEAN_SCHEMA), version=2, doc="doc")
    rs = records(out)
    assert rs[0]["value"] == {"xyz": 42, "bar": True}
    assert rs[1]["value"] is None and "error" not in rs[1]  # tombstoneWithSchema


@pytest.mark.parametrize("replace, expected", [("false", None), ("true", 42)])
def test_replace_null_with_default_on_value_and_key(spark, replace, expected):
    props = {"include": "abc", "renames": "abc:optional_with_default", "replace.null.with.default": replace}
    part_schema = struct(None, ("abc", ConnectSchema("int32", True, default=42)), ("other", INT32_SCHEMA))
    value_batch = batch_of(spark, [{"value": {"abc": None, "other": 1}}], value_schema=part_schema)
    out = apply_one(make(ReplaceFieldValue, props), value_batch)
    assert [f.name for f in schema(out).fields] == ["optional_with_default"]
    key_batch = batch_of(spark, [{"key": {"abc": None, "other": 1}, "value": None}], key_schema=part_schema,
                         value_schema=None)
    out_key = apply_one(make(ReplaceFieldKey, props), key_batch)
    assert [f.name for f in schema(out_key, "key").fields] == ["optional_with_default"]
    assert records(out)[0]["value"] == {"optional_with_default": expected}
    assert records(out_key)[0]["key"] == {"optional_with_default": expected}


def test_deprecated_names_and_collisions(spark):
    b = batch_of(spark, [{"value": VALUE}])
    blacklisted = records(apply_one(make(ReplaceFieldValue, {"blacklist": "dont,etc"}), b))[0]["value"]
    assert blacklisted == {"abc": 42, "foo": True}
    whitelisted = records(apply_one(make(ReplaceFieldValue, {"whitelist": "abc"}), b))[0]["value"]
    assert whitelisted == {"abc": 42}
    both = records(apply_one(make(ReplaceFieldValue, {"include": "foo", "whitelist": "abc"}), b))[0]["value"]
    assert both == {"foo": True}  # the new name wins
    # Schemaless: the renamed entry replaces the kept one of the same name.
    collided = records(apply_one(make(ReplaceFieldValue, {"renames": "abc:etc"}), b))[0]["value"]
    assert collided == {"dont": "whatever", "etc": 42, "foo": True}
    # With a schema Kafka's SchemaBuilder refuses the duplicate field.
    sb = batch_of(spark, [{"value": VALUE}, {"value": None}], value_schema=SCHEMA)
    rs = records(apply_one(make(ReplaceFieldValue, {"renames": "abc:etc"}), sb))
    assert rs[0]["error"] == "Cannot create field because of field name duplication etc"
    assert "error" not in rs[1]


def test_predicate_scope_other_columns_and_plan(spark):
    t = make(ReplaceFieldValue, {"exclude": "dont"})
    b = batch_of(spark, [{"value": VALUE, "key": {"k": 1}, "headers": [("h", "v")], "partition": 2},
                         {"value": None, "key": {"k": 2}}], key_schema=SCHEMALESS)
    outs = apply(t, b, make(RecordIsTombstone, {}), negate=True)
    assert len(outs) == 1  # schemaless: same shape, one pass
    rs = records(outs[0])
    assert rs[0]["value"] == {"abc": 42, "foo": True, "etc": "etc"}
    assert (rs[0]["key"], rs[0]["headers"], rs[0]["partition"], rs[0]["topic"]) == ({"k": 1}, [("h", "v")], 2, "test")
    assert rs[1] == {**rs[1], "value": None, "key": {"k": 2}}
    assert_no_python(outs[0].df)
    assert_no_python(apply_one(t, batch_of(spark, [{"value": VALUE}], value_schema=SCHEMA)).df)


def test_config():
    with pytest.raises(ConfigError, match="renames: Invalid rename mapping: abc"):
        make(ReplaceFieldValue, {"renames": "foo:bar,abc"})
    with pytest.raises(ConfigError, match="Invalid rename mapping: a:b:c"):
        make(ReplaceFieldValue, {"renames": "a:b:c"})
    with pytest.raises(ConfigError, match="Invalid rename mapping: a:"):
        make(ReplaceFieldValue, {"renames": "a:"})
    assert make(ReplaceFieldValue, {"renames": ":b"}).renames == {"": "b"}
    keys = ReplaceFieldValue.config_def().keys
    assert keys["blacklist"].doc == "Deprecated. Use exclude instead." and keys["blacklist"].default is None
    assert keys["renames"].describe_validator() == "list of colon-delimited pairs, e.g. <code>foo:bar,abc:xyz</code>"
    assert ReplaceFieldKey.aliases == ("org.apache.kafka.connect.transforms.ReplaceField$Key",)
