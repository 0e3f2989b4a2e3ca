"""Flatten$Key / Flatten$Value against Kafka's FlattenTest: nested Structs and Maps, delimiters, optionality
and defaults inherited from parents, arrays kept, nulls, unsupported types."""

from __future__ import annotations

from connectors.predicates import RecordIsTombstone
from connectors.transforms.flatten import FlattenKey, FlattenValue
from ingest.records.schema import (
    BOOLEAN_SCHEMA, BYTES_SCHEMA, FLOAT32_SCHEMA, FLOAT64_SCHEMA, INT8_SCHEMA, INT16_SCHEMA, INT32_SCHEMA,
    INT64_SCHEMA, OPTIONAL_INT32_SCHEMA, OPTIONAL_INT64_SCHEMA, OPTIONAL_STRING_SCHEMA, STRING_SCHEMA,
    ConnectSchema, map_, struct,
)
from tests.converters.helpers import assert_no_python
from tests.transforms.helpers import SCHEMALESS, apply, apply_one, batch_of, make, records, schema

SUPPORTED = struct(None, ("int8", INT8_SCHEMA), ("int16", INT16_SCHEMA), ("int32", INT32_SCHEMA),
                   ("int64", INT64_SCHEMA), ("float32", FLOAT32_SCHEMA), ("float64", FLOAT64_SCHEMA),
                   ("boolean", BOOLEAN_SCHEMA), ("string", STRING_SCHEMA), ("bytes", BYTES_SCHEMA))
SUPPORTED_VALUE = {"int8": 8, "int16": 16, "int32": 32, "int64": 64, "float32": 32.0, "float64": 64.0,
                   "boolean": True, "string": "stringy", "bytes": b"bytes"}


def test_nested_struct(spark):
    two_levels = struct(None, ("A", struct(None, ("B", SUPPORTED))))
    b = batch_of(spark, [{"value": {"A": {"B": SUPPORTED_VALUE}}}], value_schema=two_levels)
    out = apply_one(make(FlattenValue, {}), b)
    assert schema(out) == struct(None, *[(f"A.B.{f.name}", f.schema) for f in SUPPORTED.fields])
    value = records(out)[0]["value"]
    assert value == {f"A.B.{k}": (bytearray(v) if isinstance(v, bytes) else v) for k, v in SUPPORTED_VALUE.items()}
    assert_no_python(out.df)


def test_nested_map_with_delimiter_and_key(spark):
    value = {"A": {"B": {"int64": 64, "float64": 64.5, "boolean": True, "string": "stringy", "null": None,
                         "empty": {}, "array": [1, {"x": {"y": 2}}]}}, "top": 1}
    b = batch_of(spark, [{"key": {"A": {"B": 12}}, "value": value}, {"key": None, "value": None},
                         {"key": 42, "value": 42}], key_schema=SCHEMALESS)
    out_value = apply_one(make(FlattenValue, {"delimiter": "#"}), b)
    out_key = apply_one(make(FlattenKey, {}), b)
    assert schema(out_value) is None and schema(out_key, "key") is None
    rv, rk = records(out_value), records(out_key)
    # Nulls are kept, empty Maps vanish, arrays and their contents are not modified.
    assert rv[0]["value"] == {"A#B#int64": 64, "A#B#float64": 64.5, "A#B#boolean": True, "A#B#string": "stringy",
                              "A#B#null": None, "A#B#array": [1, {"x": {"y": 2}}], "top": 1}
    assert rk[0]["key"] == {"A.B": 12}
    assert rv[1]["value"] is None and "error" not in rv[1]  # a tombstone passes through
    not_a_map = "Only Map objects supported in absence of schema for [flattening], found: java.lang.Long"
    assert rv[2]["error"] == not_a_map and rk[2]["error"] == not_a_map


def test_map_with_null_fields_and_name_clash(spark):
    value = {"firstNull": None, "firstNonNull": "nonNull", "secondNull": None, "secondNonNull": "alsoNonNull",
             "thirdNonNull": None}
    b = batch_of(spark, [{"value": value}, {"value": {"a": {"b": 2}, "a.b": 1}}])
    rs = records(apply_one(make(FlattenValue, {}), b))
    assert rs[0]["value"] == value
    # Two members named a.b: the later put wins. Kafka's HashMap also iterates "a" before "a.b" here.
    assert rs[1]["value"] == {"a.b": 1}


def test_optional_and_null_structs(spark):
    child = struct(None, ("opt_int32", OPTIONAL_INT32_SCHEMA), optional=True)
    nested = struct(None, ("B", child))
    b = batch_of(spark, [{"value": {"B": {"opt_int32": None}}}, {"value": {"B": None}}, {"value": None}],
                 value_schema=nested)
    out = apply_one(make(FlattenValue, {}), b)
    assert schema(out) == struct(None, ("B.opt_int32", OPTIONAL_INT32_SCHEMA))
    assert [r["value"] for r in records(out)] == [{"B.opt_int32": None}, {"B.opt_int32": None}, None]


def test_optional_and_default_values_nested(spark):
    """An optional parent makes its children optional; a parent's default gives the children theirs."""
    parent = struct(None, ("req_field", STRING_SCHEMA),
                    ("opt_field", ConnectSchema("string", optional=True, default="child_default")), optional=True)
    parent = parent.with_default({"req_field": "req_default", "opt_field": None})
    value_schema = struct("outer", ("parent", parent), ("n", INT32_SCHEMA), version=3, doc="d")
    b = batch_of(spark, [{"value": {"parent": None, "n": 1}}, {"value": {"parent": {"req_field": "r",
                                                                                   "opt_field": None}, "n": 2}}],
                 value_schema=value_schema)
    out = apply_one(make(FlattenValue, {"delimiter": "_"}), b)
    assert schema(out) == struct(
        "outer", ("parent_req_field", ConnectSchema("string", optional=True, default="req_default")),
        ("parent_opt_field", ConnectSchema("string", optional=True, default="child_default")),
        ("n", INT32_SCHEMA), version=3, doc="d")
    # Struct.get: a null parent gives its default struct; a null field its own default.
    assert [r["value"] for r in records(out)] == [
        {"parent_req_field": "req_default", "parent_opt_field": "child_default", "n": 1},
        {"parent_req_field": "r", "parent_opt_field": "child_default", "n": 2}]


def test_arrays_kept_other_types_fail(spark):
    inner = struct(None, ("baz", struct(None, ("lfg", STRING_SCHEMA))))
    with_array = struct(None, ("foo", ConnectSchema("array", doc="durk", value_schema=inner)))
    b = batch_of(spark, [{"value": {"foo": [{"baz": {"lfg": "lfg"}}]}}], value_schema=with_array)
    out = apply_one(make(FlattenValue, {}), b)
    assert schema(out) == with_array
    with_map = struct(None, ("m", map_(STRING_SCHEMA, OPTIONAL_INT64_SCHEMA)), ("s", OPTIONAL_STRING_SCHEMA))
    maps = batch_of(spark, [{"value": {"m": {"a": 1}, "s": "x"}}, {"value": None}],
                    value_schema=with_map.as_optional())
    clash = struct(None, ("a", struct(None, ("b", INT32_SCHEMA))), ("a.b", INT32_SCHEMA))
    clashes = batch_of(spark, [{"value": {"a": {"b": 1}, "a.b": 2}}], value_schema=clash)
    primitive = batch_of(spark, [{"value": 42}], value_schema=INT32_SCHEMA)
    rs = [records(apply_one(make(FlattenValue, {}), x)) for x in (b, maps, clashes, primitive)]
    assert rs[0][0]["value"] == {"foo": [{"baz": {"lfg": "lfg"}}]}
    assert [r.get("error") for r in rs[1]] == [
        "Flatten transformation does not support MAP for record with schemas (for field m).", None]
    assert rs[2][0]["error"] == "Cannot create field because of field name duplication a.b"
    assert rs[3][0]["error"] == "Only Struct objects supported for [flattening], found: java.lang.Integer"


def test_struct_with_null_fields_and_tombstone(spark):
    value_schema = struct(None, *[(n, OPTIONAL_STRING_SCHEMA) for n in ("firstNull", "firstNonNull", "secondNull")])
    named = struct("name", ("magic", OPTIONAL_INT64_SCHEMA), version=1, doc="doc")
    b = batch_of(spark, [{"value": {"firstNull": None, "firstNonNull": "nonNull", "secondNull": None}}],
                 value_schema=value_schema)
    tombstone = batch_of(spark, [{"value": None}], value_schema=named)
    out, out_tombstone = apply_one(make(FlattenValue, {}), b), apply_one(make(FlattenValue, {}), tombstone)
    assert schema(out) == value_schema and schema(out_tombstone) == named
    assert records(out)[0]["value"] == {"firstNull": None, "firstNonNull": "nonNull", "secondNull": None}
    assert records(out_tombstone)[0]["value"] is None


def test_scoped_by_predicate(spark):
    b = batch_of(spark, [{"key": "k", "value": {"a": {"b": 1}}, "headers": [("h", "v")]}, {"key": "t", "value": None}],
                 key_schema=STRING_SCHEMA)
    outs = apply(make(FlattenValue, {}), b, make(RecordIsTombstone, {}), negate=True)
    rs = [r for o in outs for r in records(o)]
    assert [(r["key"], r["value"], r["headers"]) for r in rs] == [("k", {"a.b": 1}, [("h", "v")]), ("t", None, None)]
    assert_no_python(outs[0].df)


def test_config():
    keys = FlattenValue.config_def().keys
    assert list(keys) == ["delimiter"] and keys["delimiter"].default == "."
    assert FlattenKey.aliases == ("org.apache.kafka.connect.transforms.Flatten$Key",)
    assert FlattenValue.aliases == ("org.apache.kafka.connect.transforms.Flatten$Value",)
