"""MaskField ($Key/$Value), ported from Kafka's MaskFieldTest (same inputs, same outputs: schemaless
and schema'd masks, replacements, unsupported types, type mismatches, empty replacement), plus nulls,
defaults, tombstones (Kafka's MaskField requires a Map/Struct), predicates and plan checks."""

from __future__ import annotations

import datetime as dt
import decimal

import pytest
from pyspark.sql import functions as F

from connectors.predicates import RecordIsTombstone
from connectors.transforms.mask_field import MaskFieldKey, MaskFieldValue
from ingest.errors import ConfigError
from ingest.records.schema import (
    BOOLEAN_SCHEMA, FLOAT32_SCHEMA, FLOAT64_SCHEMA, INT8_SCHEMA, INT16_SCHEMA, INT32_SCHEMA,
    INT64_SCHEMA, OPTIONAL_BYTES_SCHEMA, OPTIONAL_STRING_SCHEMA, STRING_SCHEMA, ConnectSchema, array, date, decimal as
    decimal_schema, map_, struct, time, timestamp,
)
from tests.converters.helpers import assert_no_python
from tests.transforms.helpers import apply, apply_one, batch_of, make, records, schema

SCHEMA = struct(None, ("magic", INT32_SCHEMA), ("bool", BOOLEAN_SCHEMA), ("byte", INT8_SCHEMA), ("short", INT16_SCHEMA),
                ("int", INT32_SCHEMA), ("long", INT64_SCHEMA), ("float", FLOAT32_SCHEMA), ("double", FLOAT64_SCHEMA),
                ("string", STRING_SCHEMA), ("date", date()), ("time", time()), ("timestamp", timestamp()),
                ("decimal", decimal_schema(0)), ("array", array(INT32_SCHEMA)), ("map", map_(STRING_SCHEMA, STRING_SCHEMA)))
NOW = dt.datetime(2024, 5, 6, 7, 8, 9)
VALUES_WITH_SCHEMA = {"magic": 42, "bool": True, "byte": 42, "short": 42, "int": 42, "long": 42, "float": 42.0,
                      "double": 42.0, "string": "hmm", "date": NOW.date(), "time": 1234, "timestamp": NOW,
                      "decimal": decimal.Decimal(42), "array": [1, 2, 3], "map": {"what": "what"}}


def members() -> dict:
    """Kafka's schemaless VALUES, as typed VARIANT members (JsonConverter reads every integer as a Long)."""
    return {
        "magic": F.lit(42), "bool": F.lit(True), "byte": F.lit(42).cast("tinyint"), "short": F.lit(42).cast("smallint"),
        "int": F.lit(42), "long": F.lit(42).cast("long"), "float": F.lit(42.0).cast("float"), "double": F.lit(42.0),
        "string": F.lit("55.121.20.20"), "date": F.lit(NOW.date()), "bigdec": F.lit(decimal.Decimal("42.0")),
        "list": F.array(F.lit(42)), "map": F.create_map(F.lit("key"), F.lit("value")),
    }


def _schemaless(spark, *members: dict):
    """A schemaless batch with one record per dict of VARIANT members (column expressions)."""
    b = batch_of(spark, [{"value": {}} for _ in members])
    value = F.lit(None).cast("variant")
    for i, m in enumerate(members):
        obj = F.to_variant_object(F.struct(*[c.alias(n) for n, c in m.items()]))
        value = F.when(F.col("seq") == i, obj).otherwise(value)
    return b.with_df(b.df.withColumn("value", value))


def _only(*names: str) -> list[dict]:
    return [{n: members()[n]} for n in names]


def test_schemaless(spark):
    fields = [n for n in members() if n != "magic"]
    out = apply_one(make(MaskFieldValue, {"fields": ",".join(fields)}), _schemaless(spark, members()))
    assert records(out)[0]["value"] == {
        "magic": 42, "bool": False, "byte": 0, "short": 0, "int": 0, "long": 0, "float": 0.0, "double": 0.0,
        "string": "", "date": dt.date(1970, 1, 1), "bigdec": 0.0, "list": [], "map": {}}


def test_with_schema(spark):
    fields = [f.name for f in SCHEMA.fields if f.name != "magic"]
    b = batch_of(spark, [{"value": VALUES_WITH_SCHEMA}], value_schema=SCHEMA)
    out = apply_one(make(MaskFieldValue, {"fields": ",".join(fields)}), b)
    assert schema(out) == SCHEMA
    assert records(out)[0]["value"] == {
        "magic": 42, "bool": False, "byte": 0, "short": 0, "int": 0, "long": 0, "float": 0.0, "double": 0.0,
        "string": "", "date": dt.date(1970, 1, 1), "time": 0, "timestamp": dt.datetime(1970, 1, 1),
        "decimal": decimal.Decimal(0), "array": [], "map": {}}


def test_schemaless_with_replacement(spark):
    fields = ["short", "byte", "int", "long", "float", "double", "string", "bigdec"]
    out = apply_one(make(MaskFieldValue, {"fields": ",".join(fields), "replacement": "123"}),
                    _schemaless(spark, members()))
    value = records(out)[0]["value"]
    assert {n: value[n] for n in fields} == {"short": 123, "byte": 123, "int": 123, "long": 123, "float": 123.0,
                                             "double": 123.0, "string": "123", "bigdec": 123.0}
    # Values.convertToX: BigDecimal parsing, truncation and narrowing as Java does.
    out = apply_one(make(MaskFieldValue, {"fields": "byte,double", "replacement": "300.9"}),
                    _schemaless(spark, {"byte": F.lit(1).cast("tinyint"), "double": F.lit(1.0)}))
    assert records(out)[0]["value"] == {"byte": 300, "double": 300.9}  # a schemaless byte is a Long


def test_schemaless_unsupported_replacement_and_mismatch(spark):
    out = apply_one(make(MaskFieldValue, {"fields": "date,bool,list,map", "replacement": "123"}),
                    _schemaless(spark, *_only("date", "bool", "list", "map")))
    assert [r["error"] for r in records(out)] == [
        "Cannot mask value of type class java.util.Date with custom replacement.",
        "Cannot mask value of type class java.lang.Boolean with custom replacement.",
        "Cannot mask value of type class java.util.ArrayList with custom replacement.",
        "Cannot mask value of type class java.util.HashMap with custom replacement."]
    numbers = ["byte", "short", "int", "long", "float", "double", "bigdec"]
    out = apply_one(make(MaskFieldValue, {"fields": ",".join([*numbers, "string"]), "replacement": "foo"}),
                    _schemaless(spark, *_only(*numbers, "string")))
    rs = records(out)
    assert [r.get("error") for r in rs[:-1]] == ["Unable to convert foo (class java.lang.String) to a number"] * 7
    assert rs[-1]["value"]["string"] == "foo" and "error" not in rs[-1]


def test_with_schema_and_replacement(spark):
    fields = ["short", "byte", "int", "long", "float", "double", "string"]
    b = batch_of(spark, [{"value": VALUES_WITH_SCHEMA}], value_schema=SCHEMA)
    value = records(apply_one(make(MaskFieldValue, {"fields": ",".join(fields), "replacement": "123.0"}), b))[0]["value"]
    assert {n: value[n] for n in fields} == {"short": 123, "byte": 123, "int": 123, "long": 123, "float": 123.0,
                                             "double": 123.0, "string": "123.0"}
    # A decimal takes a replacement of its own scale (0 here): Kafka's Struct.put refuses any other.
    value = records(apply_one(make(MaskFieldValue, {"fields": "decimal", "replacement": "123"}), b))[0]["value"]
    assert value["decimal"] == decimal.Decimal(123)


def test_with_schema_unsupported_replacement(spark):
    s = struct(None, ("time", time(True)), ("timestamp", timestamp(True)), ("array", array(INT32_SCHEMA, True)),
               ("bytes", OPTIONAL_BYTES_SCHEMA), ("decimal", decimal_schema(0, optional=True)))
    b = batch_of(spark, [{"value": {"time": 1}}, {"value": {"timestamp": NOW}}, {"value": {"array": [1]}},
                         {"value": {"bytes": b"x"}}, {"value": {"decimal": decimal.Decimal(1)}}, {"value": {}}],
                 value_schema=s)
    out = apply_one(make(MaskFieldValue, {"fields": "time,timestamp,array,bytes,decimal", "replacement": "1.5"}), b)
    assert [r.get("error") for r in records(out)] == [
        "Cannot mask value of type class java.util.Date with custom replacement.",
        "Cannot mask value of type class java.util.Date with custom replacement.",
        "Cannot mask value of type class java.util.ArrayList with custom replacement.",
        "Cannot mask value of type class [B with custom replacement.",
        "Decimal value has mismatching scale for given Decimal schema. Schema has scale 0, value has scale 1.",
        None]  # null fields stay null


def test_nulls_defaults_tombstones_and_unmaskable(spark):
    s = struct(None, ("s", ConnectSchema("string", True, default="dflt")), ("b", OPTIONAL_BYTES_SCHEMA),
               ("o", OPTIONAL_STRING_SCHEMA))
    b = batch_of(spark, [{"value": {"s": None, "b": None, "o": "x"}}, {"value": {"b": b"1"}}, {"value": None}],
                 value_schema=s)
    rs = records(apply_one(make(MaskFieldValue, {"fields": "s,b"}), b))
    assert rs[0]["value"] == {"s": "", "b": None, "o": "x"}  # Struct.get: the default, then masked
    assert rs[1]["error"] == "Cannot mask value of type: class [B"
    assert rs[2]["error"] == "Only Struct objects supported for [mask fields], found: null"
    rs = records(apply_one(make(MaskFieldValue, {"fields": "a,absent"}),
                           batch_of(spark, [{"value": {"a": "x"}}, {"value": None}, {"value": 5}])))
    assert rs[0]["value"] == {"a": "", "absent": None}
    assert rs[1]["error"] == "Only Map objects supported in absence of schema for [mask fields], found: null"
    assert rs[2]["error"] == "Only Map objects supported in absence of schema for [mask fields], found: java.lang.Long"


def test_predicate_key_and_plan(spark):
    t = make(MaskFieldKey, {"fields": "k"})
    b = batch_of(spark, [{"key": {"k": "secret", "n": 1}, "value": None, "headers": [("h", "v")]},
                         {"key": {"k": "kept"}, "value": {"v": 1}}],
                 key_schema=struct(None, ("k", STRING_SCHEMA), ("n", ConnectSchema("int32", True))),
                 value_schema=struct(None, ("v", INT32_SCHEMA)))
    outs = apply(t, b, make(RecordIsTombstone, {}))
    rs = sorted((r for o in outs for r in records(o)), key=lambda r: r["key"]["k"])
    assert [r["key"] for r in rs] == [{"k": "", "n": 1}, {"k": "kept", "n": None}]
    assert rs[0]["headers"] == [("h", "v")] and rs[1]["value"] == {"v": 1}
    assert all(schema(o, "key") == schema(b, "key") for o in outs)
    assert_no_python(outs[0].df)
    assert_no_python(apply_one(make(MaskFieldValue, {"fields": "a", "replacement": "1"}),
                               batch_of(spark, [{"value": {"a": 1}}])).df)


def test_config():
    with pytest.raises(ConfigError, match="String must be non-empty"):
        make(MaskFieldValue, {"fields": "short", "replacement": ""})
    with pytest.raises(ConfigError, match="fields: Empty list"):
        make(MaskFieldValue, {"fields": ""})
    with pytest.raises(ConfigError, match="fields: missing required configuration"):
        make(MaskFieldValue, {})
    assert make(MaskFieldValue, {"fields": "a", "replacement": " "}).replacement == " "
    assert MaskFieldValue.config_def().keys["replacement"].doc == (
        "Custom value replacement, that will be applied to all 'fields' values (numeric or non-empty string "
        "values only).")
    assert MaskFieldKey.aliases == ("org.apache.kafka.connect.transforms.MaskField$Key",)
