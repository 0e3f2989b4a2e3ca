"""SetSchemaMetadata$Key / $Value against Kafka's SetSchemaMetadataTest: name and/or version set, Structs
rebuilt under the new schema, schemaless values refused (nulls pass), the configure() check."""

from __future__ import annotations

import pytest

from connectors.predicates import RecordIsTombstone
from connectors.transforms.set_schema_metadata import SetSchemaMetadataKey, SetSchemaMetadataValue
from ingest.errors import ConfigError
from ingest.records.schema import INT32_SCHEMA, STRING_SCHEMA, ConnectSchema, struct
from tests.converters.helpers import assert_no_python
from tests.transforms.helpers import SCHEMALESS, apply, apply_one, batch_of, make, records, schema

ORIGINAL = struct("my.orig.SchemaDefn", ("f1", STRING_SCHEMA), ("f2", INT32_SCHEMA), doc="d")


def test_name_and_version(spark):
    b = batch_of(spark, [{"key": "k", "value": {"f1": "value1", "f2": 1}}, {"key": "t", "value": None}],
                 key_schema=STRING_SCHEMA, value_schema=ORIGINAL)
    name = apply_one(make(SetSchemaMetadataValue, {"schema.name": "foo"}), b)
    version = apply_one(make(SetSchemaMetadataValue, {"schema.version": "42"}), b)
    both = apply_one(make(SetSchemaMetadataValue, {"schema.name": "foo", "schema.version": 42}), b)
    assert (schema(name).name, schema(name).version) == ("foo", None)
    assert (schema(version).name, schema(version).version) == ("my.orig.SchemaDefn", 42)
    assert schema(both) == struct("foo", ("f1", STRING_SCHEMA), ("f2", INT32_SCHEMA), version=42, doc="d")
    assert schema(both, "key") == STRING_SCHEMA
    assert [(r["key"], r["value"]) for r in records(both)] == [("k", {"f1": "value1", "f2": 1}), ("t", None)]
    assert_no_python(both.df)


def test_key_and_defaults(spark):
    key_schema = struct(None, ("a", ConnectSchema("int32", optional=True, default=5)))
    b = batch_of(spark, [{"key": {"a": None}, "value": "v"}], key_schema=key_schema, value_schema=STRING_SCHEMA)
    replaced = apply_one(make(SetSchemaMetadataKey, {"schema.name": "k"}), b)
    kept = apply_one(make(SetSchemaMetadataKey, {"schema.name": "k", "replace.null.with.default": "false"}), b)
    assert schema(replaced, "key") == struct("k", ("a", ConnectSchema("int32", optional=True, default=5)))
    assert [records(o)[0]["key"] for o in (replaced, kept)] == [{"a": 5}, {"a": None}]


def test_schema_required_and_non_struct(spark):
    schemaless = batch_of(spark, [{"value": 42}, {"value": None}], value_schema=SCHEMALESS)
    primitive = batch_of(spark, [{"value": 42}, {"value": None}], value_schema=ConnectSchema("int32", True))
    rs = [records(apply_one(make(SetSchemaMetadataValue, {"schema.name": "foo"}), x)) for x in (schemaless, primitive)]
    # valueSchemaRequired / ignoreRecordWithNullValue
    assert [r.get("error") for r in rs[0]] == ["Schema required for [updating schema metadata]", None]
    # Kafka 3.x builds the new ConnectSchema with schema.fields(): a schema that is not a struct fails.
    assert [r.get("error") for r in rs[1]] == ["Cannot list fields on non-struct type"] * 2


def test_scoped_by_predicate(spark):
    b = batch_of(spark, [{"key": "k", "value": {"f1": "x", "f2": 1}, "headers": [("h", "v")]},
                         {"key": "t", "value": None}], key_schema=STRING_SCHEMA, value_schema=ORIGINAL)
    outs = apply(make(SetSchemaMetadataValue, {"schema.name": "foo"}), b, make(RecordIsTombstone, {}), negate=True)
    assert sorted(schema(o).name for o in outs) == ["foo", "my.orig.SchemaDefn"]
    rs = [r for o in outs for r in records(o)]
    assert [(r["key"], r["value"], r["headers"]) for r in rs] == [("k", {"f1": "x", "f2": 1}, [("h", "v")]),
                                                                  ("t", None, None)]


def test_config():
    keys = SetSchemaMetadataValue.config_def().keys
    assert list(keys) == ["schema.name", "schema.version", "replace.null.with.default"]
    assert SetSchemaMetadataKey.aliases == ("org.apache.kafka.connect.transforms.SetSchemaMetadata$Key",)
    with pytest.raises(ConfigError) as e:
        make(SetSchemaMetadataValue, {})
    assert [p.message for p in e.value.problems] == ["Neither schema name nor version configured"]
    with pytest.raises(ConfigError):
        make(SetSchemaMetadataValue, {"schema.version": "x"})
