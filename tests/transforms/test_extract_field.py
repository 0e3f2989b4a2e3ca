"""ExtractField$Key / ExtractField$Value against Kafka's ExtractFieldTest (V1 and V2 paths, with and without
schemas, nulls), plus the book's ValueToKey + ExtractField$Key chain and configuration errors."""

from __future__ import annotations

import pytest

from connectors.predicates import RecordIsTombstone
from connectors.transforms.extract_field import ExtractFieldKey, ExtractFieldValue, field_path
from connectors.transforms.value_to_key import ValueToKey
from ingest.errors import ConfigError
from ingest.records.schema import (
    INT32_SCHEMA, INT64_SCHEMA, OPTIONAL_INT32_SCHEMA, STRING_SCHEMA, ConnectSchema, struct,
)
from ingest.runtime.pipeline import Pipeline
from ingest.runtime.tolerance import ErrorPolicy
from tests.converters.helpers import assert_no_python
from tests.transforms.helpers import SCHEMALESS, apply, apply_one, batch_of, make, records, schema

V2 = {"field.syntax.version": "V2"}


def test_schemaless_v1_and_v2(spark):
    b = batch_of(spark, [{"key": {"magic": 42}}, {"key": {"magic": {"foo": 42}}}, {"key": None}, {"key": {"x": 1}},
                         {"key": {"magic": 7, "magic.foo": 8}}, {"key": 5}], key_schema=SCHEMALESS)
    v1 = apply_one(make(ExtractFieldKey, {"field": "magic"}), b)
    v2 = apply_one(make(ExtractFieldKey, {"field": "magic.foo", **V2}), b)
    assert schema(v1, "key") is None and schema(v2, "key") is None
    rs1, rs2 = records(v1), records(v2)
    not_a_map = "Only Map objects supported in absence of schema for [field extraction], found: java.lang.Long"
    assert [r["key"] for r in rs1[:5]] == [42, {"foo": 42}, None, None, 7]
    assert rs1[5]["error"] == not_a_map
    # V2: nested access; a member that is not a Map on the way fails the record.
    assert [r["key"] for r in rs2[1:4]] == [42, None, None]
    assert [r.get("error") for r in rs2] == [
        "Only Map objects supported in absence of schema for [nested field access], found: java.lang.Long",
        None, None, None,
        "Only Map objects supported in absence of schema for [nested field access], found: java.lang.Long",
        not_a_map]


def test_with_schema_v1_and_v2(spark):
    foo = struct(None, ("foo", INT32_SCHEMA), optional=True)
    key_schema = struct(None, ("magic", INT32_SCHEMA), ("nested", foo),
                        ("dflt", ConnectSchema("int32", optional=True, default=5)), optional=True)
    b = batch_of(spark, [{"key": {"magic": 42, "nested": {"foo": 43}, "dflt": None}},
                         {"key": {"magic": 1, "nested": None, "dflt": 6}}, {"key": None}], key_schema=key_schema)
    outs = [apply_one(make(ExtractFieldKey, {"field": "magic"}), b),
            apply_one(make(ExtractFieldKey, {"field": "nested.foo", **V2}), b),
            apply_one(make(ExtractFieldKey, {"field": "dflt"}), b)]
    assert [schema(o, "key") for o in outs] == [INT32_SCHEMA, INT32_SCHEMA, ConnectSchema("int32", True, default=5)]
    # Struct.get gives a null field's default; a null struct gives null (testNullWithSchema).
    assert [[r["key"] for r in records(o)] for o in outs] == [[42, 1, None], [43, None, None], [5, 6, None]]


def test_unknown_field_with_schema_fails_every_record(spark):
    foo = struct(None, ("foo", INT32_SCHEMA))
    b = batch_of(spark, [{"key": {"magic": {"foo": 42}}}], key_schema=struct(None, ("magic", foo)))
    v1 = records(apply_one(make(ExtractFieldKey, {"field": "nonexistent"}), b))
    v2 = records(apply_one(make(ExtractFieldKey, {"field": "magic.nonexistent", **V2}), b))
    assert v1[0]["error"] == "Unknown field: nonexistent"
    assert v2[0]["error"] == "Unknown field: magic.nonexistent"
    out = Pipeline(None, None, None, [("t", make(ExtractFieldKey, {"field": "nope"}), None, False)],
                   ErrorPolicy()).transform([b])[0]
    assert out.df.select("__lc_error.exception").first()[0] == "java.lang.IllegalArgumentException"


def test_non_struct_schema(spark):
    b = batch_of(spark, [{"value": 1}, {"value": None}], value_schema=OPTIONAL_INT32_SCHEMA)
    rs = records(apply_one(make(ExtractFieldValue, {"field": "magic"}), b))
    assert [r["error"] for r in rs] == [
        "Only Struct objects supported for [field extraction], found: java.lang.Integer",
        "Cannot look up fields on non-struct type"]


def test_value_to_key_then_extract_field_key(spark):
    """The book's example: valueToKey(fields=id) then ExtractField$Key(field=id) gives the key 1 (int64)."""
    value_schema = struct("book", ("id", INT64_SCHEMA), ("title", STRING_SCHEMA))
    b = batch_of(spark, [{"key": None, "value": {"id": 1, "title": "Kafka"}}], value_schema=value_schema)
    pipeline = Pipeline(None, None, None, [("valueToKey", make(ValueToKey, {"fields": "id"}), None, False),
                                           ("extractId", make(ExtractFieldKey, {"field": "id"}), None, False)],
                        ErrorPolicy())
    [out] = pipeline.transform([b])
    assert schema(out, "key") == INT64_SCHEMA and schema(out) == value_schema
    assert records(out)[0]["key"] == 1 and records(out)[0]["value"] == {"id": 1, "title": "Kafka"}
    assert_no_python(out.df)


def test_scoped_by_predicate(spark):
    b = batch_of(spark, [{"key": "k", "value": {"a": {"b": 1}}, "headers": [("h", "v")]}, {"key": "t", "value": None}],
                 key_schema=STRING_SCHEMA)
    outs = apply(make(ExtractFieldValue, {"field": "a"}), b, make(RecordIsTombstone, {}), negate=True)
    rs = [r for o in outs for r in records(o)]
    assert [(r["key"], r["value"], r["headers"]) for r in rs] == [("k", {"b": 1}, [("h", "v")]), ("t", None, None)]
    assert_no_python(outs[0].df)


def test_config():
    keys = ExtractFieldValue.config_def().keys
    assert list(keys) == ["field", "field.syntax.version"]
    assert keys["field"].required and keys["field.syntax.version"].default == "V1"
    assert ExtractFieldKey.aliases == ("org.apache.kafka.connect.transforms.ExtractField$Key",)
    assert make(ExtractFieldValue, {"field": "a", "field.syntax.version": "v2"}).steps == ["a"]
    with pytest.raises(ConfigError) as e:
        make(ExtractFieldValue, {"field": "a", "field.syntax.version": "V3"})
    assert e.value.problems[0].message == "String must be one of (case insensitive): V1, V2"
    with pytest.raises(ConfigError) as e:
        make(ExtractFieldValue, {"field": "`a.b", **V2})
    assert e.value.problems[0].message == (
        "Incomplete backtick pair in path: [`a.b], consider adding a backslash before backtick at position 0 "
        "to escape it")
    with pytest.raises(ConfigError):
        make(ExtractFieldValue, {})


@pytest.mark.parametrize("path, steps", [
    ("foo", ["foo"]), ("foo.bar", ["foo", "bar"]), ("`foo.bar`.baz", ["foo.bar", "baz"]),
    ("foo.`bar.baz`", ["foo", "bar.baz"]), ("`foo\\`.bar`.baz", ["foo`.bar", "baz"]), ("foo.", ["foo", ""]),
    ("`foo`bar`.baz", ["foo`bar", "baz"]), (".foo", ["", "foo"]),
])
def test_v2_paths(path, steps):
    """SingleFieldPath's V2 parsing (FieldPathNotationTest); V1 keeps the path whole."""
    assert field_path(path, "V2") == steps
    assert field_path(path, "V1") == [path]
