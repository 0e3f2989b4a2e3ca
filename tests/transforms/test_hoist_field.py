"""HoistField$Key / HoistField$Value against Kafka's HoistFieldTest: a Struct of one field with a schema, a
Map of one entry without; nulls are hoisted too (a required schema refuses them)."""

from __future__ import annotations

from connectors.predicates import RecordIsTombstone
from connectors.transforms.hoist_field import HoistFieldKey, HoistFieldValue
from ingest.records.schema import INT32_SCHEMA, OPTIONAL_INT32_SCHEMA, STRING_SCHEMA, struct
from tests.converters.helpers import assert_no_python
from tests.transforms.helpers import SCHEMALESS, apply, apply_one, batch_of, make, records, schema


def test_schemaless(spark):
    b = batch_of(spark, [{"key": 42}, {"key": {"a": [1]}}, {"key": None}], key_schema=SCHEMALESS,
                 value_schema=None)
    out = apply_one(make(HoistFieldKey, {"field": "magic"}), b)
    assert schema(out, "key") is None
    assert [r["key"] for r in records(out)] == [{"magic": 42}, {"magic": {"a": [1]}}, {"magic": None}]
    assert_no_python(out.df)


def test_with_schema(spark):
    b = batch_of(spark, [{"key": 42, "value": "v"}], key_schema=INT32_SCHEMA, value_schema=STRING_SCHEMA)
    optional = batch_of(spark, [{"value": 1}, {"value": None}], value_schema=OPTIONAL_INT32_SCHEMA)
    required = batch_of(spark, [{"value": 1}, {"value": None}], value_schema=INT32_SCHEMA)
    out = apply_one(make(HoistFieldKey, {"field": "magic"}), b)
    out_optional, out_required = (apply_one(make(HoistFieldValue, {"field": "f"}), x) for x in (optional, required))
    assert schema(out, "key") == struct(None, ("magic", INT32_SCHEMA)) and schema(out) == STRING_SCHEMA
    assert schema(out_optional) == struct(None, ("f", OPTIONAL_INT32_SCHEMA))
    assert [(r["key"], r["value"]) for r in records(out)] == [({"magic": 42}, "v")]
    assert [r["value"] for r in records(out_optional)] == [{"f": 1}, {"f": None}]
    assert [r.get("error") for r in records(out_required)] == [
        None, 'Invalid value: null used for required field: "f", schema type: INT32']


def test_scoped_by_predicate(spark):
    b = batch_of(spark, [{"key": "k", "value": {"a": 1}, "headers": [("h", "v")]}, {"key": "t", "value": None}],
                 key_schema=STRING_SCHEMA)
    outs = apply(make(HoistFieldValue, {"field": "x"}), b, make(RecordIsTombstone, {}), negate=True)
    rs = [r for o in outs for r in records(o)]
    assert [(r["key"], r["value"], r["headers"]) for r in rs] == [("k", {"x": {"a": 1}}, [("h", "v")]),
                                                                  ("t", None, None)]


def test_config():
    keys = HoistFieldValue.config_def().keys
    assert list(keys) == ["field"] and keys["field"].required
    assert keys["field"].doc == "Field name for the single field that will be created in the resulting Struct or Map."
    assert HoistFieldKey.aliases == ("org.apache.kafka.connect.transforms.HoistField$Key",)
