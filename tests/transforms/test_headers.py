"""HeaderFrom ($Key/$Value), InsertHeader and DropHeaders, ported from Kafka's HeaderFromTest,
InsertHeaderTest and DropHeadersTest (same inputs, same outputs), plus tombstones, defaults, value
types and configuration errors. Header values are strings here (SimpleHeaderConverter's text)."""

from __future__ import annotations

import datetime as dt
import decimal

import pytest

from connectors.predicates import HasHeaderKey
from connectors.transforms.headers import DropHeaders, HeaderFromKey, HeaderFromValue, InsertHeader
from ingest.errors import ConfigError
from ingest.records.schema import (
    INT32_SCHEMA, OPTIONAL_BYTES_SCHEMA, OPTIONAL_STRING_SCHEMA, STRING_SCHEMA, ConnectSchema, decimal as decimal_schema,
    struct, timestamp,
)
from tests.converters.helpers import assert_no_python
from tests.transforms.helpers import SCHEMALESS, apply, apply_one, batch_of, make, records, schema

FOO = struct(None, ("foo", STRING_SCHEMA))
FOO_TEXT = '{"foo":"foo-value"}'

# Kafka's HeaderFromTest.data(): (description, original fields, headers, fields, header names, operation,
# expected fields, expected headers). Fields are (name, schema, value); headers (name, value).
BASIC = [("field1", STRING_SCHEMA, "field1-value"), ("field2", STRING_SCHEMA, "field2-value")]
CASES = [
    ("basic copy", BASIC, [("header1", "existing-value")], ["field1"], ["inserted1"], "copy",
     BASIC, [("header1", "existing-value"), ("inserted1", "field1-value")]),
    ("basic move", BASIC, [("header1", "existing-value")], ["field1"], ["inserted1"], "move",
     BASIC[1:], [("header1", "existing-value"), ("inserted1", "field1-value")]),
    ("copy with preexisting header", BASIC, [("inserted1", "existing-value")], ["field1"], ["inserted1"], "copy",
     BASIC, [("inserted1", "existing-value"), ("inserted1", "field1-value")]),
    ("move with preexisting header", BASIC, [("inserted1", "existing-value")], ["field1"], ["inserted1"], "move",
     BASIC[1:], [("inserted1", "existing-value"), ("inserted1", "field1-value")]),
    ("copy with struct value", [("field1", FOO, {"foo": "foo-value"}), BASIC[1]], [("header1", "existing-value")],
     ["field1"], ["inserted1"], "copy", [("field1", FOO, {"foo": "foo-value"}), BASIC[1]],
     [("header1", "existing-value"), ("inserted1", FOO_TEXT)]),
    ("move with struct value", [("field1", FOO, {"foo": "foo-value"}), BASIC[1]], [("header1", "existing-value")],
     ["field1"], ["inserted1"], "move", [BASIC[1]], [("header1", "existing-value"), ("inserted1", FOO_TEXT)]),
    ("two headers from same field", BASIC, [("header1", "existing-value")], ["field1", "field1"],
     ["inserted1", "inserted2"], "move", BASIC[1:],
     [("header1", "existing-value"), ("inserted1", "field1-value"), ("inserted2", "field1-value")]),
    ("two fields to same header", BASIC, [("header1", "existing-value")], ["field1", "field2"],
     ["inserted1", "inserted1"], "move", [],
     [("header1", "existing-value"), ("inserted1", "field1-value"), ("inserted1", "field2-value")]),
]
# Every case on values; the $Key variant on a few (the code path is the same, only the column differs).
KEY_CASES = {"basic copy", "basic move", "move with struct value", "two fields to same header"}
VARIANTS = [pytest.param(case, False, id=f"{case[0]}-value") for case in CASES] + [
    pytest.param(case, True, id=f"{case[0]}-key") for case in CASES if case[0] in KEY_CASES]


def _config(fields, headers, operation):
    return {"fields": ",".join(fields), "headers": ",".join(headers), "operation": operation}


def _record(is_key: bool, part_value, headers):
    other = "key" if not is_key else "value"
    return {("key" if is_key else "value"): part_value, other: None, "headers": headers}


def _part_schemas(is_key: bool, part_schema):
    return ({"key_schema": part_schema, "value_schema": None} if is_key
            else {"key_schema": None, "value_schema": part_schema})


@pytest.mark.parametrize("case,is_key", VARIANTS)
def test_with_schema(spark, case, is_key):
    _, fields, headers, transform_fields, header_names, operation, expected_fields, expected_headers = case
    part_schema = struct(None, *[(n, s) for n, s, _ in fields])
    batch = batch_of(spark, [_record(is_key, {n: v for n, _, v in fields}, headers)], **_part_schemas(is_key, part_schema))
    cls = HeaderFromKey if is_key else HeaderFromValue
    out = apply_one(make(cls, _config(transform_fields, header_names, operation)), batch)
    (rec,) = records(out)
    part = "key" if is_key else "value"
    assert rec["headers"] == expected_headers
    assert rec[part] == {n: v for n, _, v in expected_fields}
    assert schema(out, part) == struct(None, *[(n, s) for n, s, _ in expected_fields])
    assert "error" not in rec


@pytest.mark.parametrize("case,is_key", VARIANTS)
def test_schemaless(spark, case, is_key):
    _, fields, headers, transform_fields, header_names, operation, expected_fields, expected_headers = case
    batch = batch_of(spark, [_record(is_key, {n: v for n, _, v in fields}, headers)],
                     **_part_schemas(is_key, SCHEMALESS))
    cls = HeaderFromKey if is_key else HeaderFromValue
    out = apply_one(make(cls, _config(transform_fields, header_names, operation)), batch)
    (rec,) = records(out)
    assert rec["headers"] == expected_headers
    assert rec["key" if is_key else "value"] == {n: v for n, _, v in expected_fields}
    assert schema(out, "key" if is_key else "value") is None


@pytest.mark.parametrize("cls", [HeaderFromKey, HeaderFromValue])
@pytest.mark.parametrize("fields,headers", [("foo,bar", "foo"), ("foo", "foo,bar"), ("", "")],
                         ids=["extra field", "extra header", "empty"])
def test_invalid_config(cls, fields, headers):
    with pytest.raises(ConfigError) as e:
        make(cls, {"fields": fields, "headers": headers, "operation": "copy"})
    if fields and headers:
        assert "'fields' config must have the same number of elements as 'headers' config." in str(e.value)
    else:
        assert "Empty list" in str(e.value)


def test_invalid_operation():
    with pytest.raises(ConfigError, match="operation"):
        make(HeaderFromValue, {"fields": "a", "headers": "b", "operation": "swap"})


def test_tombstones_fail_as_kafka_requirements_say(spark):
    value_schema = struct(None, ("a", STRING_SCHEMA))
    with_schema = batch_of(spark, [{"value": {"a": "x"}}, {"value": None}], value_schema=value_schema)
    out = records(apply_one(make(HeaderFromValue, _config(["a"], ["h"], "move")), with_schema))
    assert out[0]["headers"] == [("h", "x")] and out[0]["value"] == {}
    assert out[1]["error"] == "Only Struct objects supported for [header move], found: null"

    schemaless = batch_of(spark, [{"value": {"a": "x"}}, {"value": None}, {"value": [1]}])
    out = records(apply_one(make(HeaderFromValue, _config(["a"], ["h"], "copy")), schemaless))
    assert out[0]["headers"] == [("h", "x")]
    assert out[1]["error"] == "Only Map objects supported in absence of schema for [header copy], found: null"
    assert out[2]["error"] == ("Only Map objects supported in absence of schema for [header copy], "
                               "found: java.util.ArrayList")


def test_field_missing_from_schema_fails_every_record(spark):
    batch = batch_of(spark, [{"value": {"a": "x"}}], value_schema=struct(None, ("a", STRING_SCHEMA)))
    (rec,) = records(apply_one(make(HeaderFromValue, _config(["nope"], ["h"], "copy")), batch))
    assert "nope" in rec["error"]


def test_schemaless_missing_field_gives_a_null_header(spark):
    batch = batch_of(spark, [{"value": {"a": 1, "b": {"c": [1, 2.5]}, "s": "text", "n": None}}])
    t = make(HeaderFromValue, _config(["a", "b", "s", "n", "zz"], ["a", "b", "s", "n", "zz"], "move"))
    (rec,) = records(apply_one(t, batch))
    assert rec["headers"] == [("a", "1"), ("b", '{"c":[1,2.5]}'), ("s", "text"), ("n", None), ("zz", None)]
    assert rec["value"] == {}


def test_header_text_of_typed_values(spark):
    value_schema = struct(None, ("i", INT32_SCHEMA), ("ts", timestamp()), ("d", decimal_schema(2, 10)),
                          ("b", OPTIONAL_BYTES_SCHEMA), ("s", struct(None, ("x", OPTIONAL_STRING_SCHEMA), optional=True)))
    value = {"i": 42, "ts": dt.datetime(2019, 8, 23, 14, 34, 54, 346000), "d": decimal.Decimal("12.50"),
             "b": bytearray(b"hi"), "s": {"x": None}}
    batch = batch_of(spark, [{"value": value}], value_schema=value_schema)
    t = make(HeaderFromValue, _config(["i", "ts", "d", "b", "s"], ["i", "ts", "d", "b", "s"], "copy"))
    out = apply_one(t, batch)
    (rec,) = records(out)
    assert rec["headers"] == [("i", "42"), ("ts", "2019-08-23T14:34:54.346Z"), ("d", "12.50"), ("b", "aGk="),
                              ("s", '{"x":null}')]
    assert_no_python(out.df)


@pytest.mark.parametrize("replace_null,expected", [("true", "dflt"), ("false", None)])
def test_replace_null_with_default(spark, replace_null, expected):
    with_default = ConnectSchema("string", optional=True, default="dflt")
    value_schema = struct(None, ("a", with_default), ("b", with_default))
    batch = batch_of(spark, [{"value": {"a": None, "b": None}}], value_schema=value_schema)
    t = make(HeaderFromValue, {**_config(["a"], ["h"], "move"), "replace.null.with.default": replace_null})
    (rec,) = records(apply_one(t, batch))
    assert rec["headers"] == [("h", expected)]
    assert rec["value"] == {"b": expected}


def test_scoped_by_a_predicate(spark):
    batch = batch_of(spark, [{"value": {"a": "x"}, "headers": [("p", "1")]}, {"value": {"a": "y"}}])
    out = apply(make(HeaderFromValue, _config(["a"], ["h"], "copy")), batch, make(HasHeaderKey, {"name": "p"}))
    recs = sorted((r for b in out for r in records(b)), key=lambda r: r["value"]["a"])
    assert [r["headers"] for r in recs] == [[("p", "1"), ("h", "x")], None]


# --- InsertHeader (InsertHeaderTest) ---------------------------------------------------------------------


@pytest.mark.parametrize("existing,expected", [
    (None, [("dummy header", "dummy value")]),
    ([("BBB", "existent value")], [("BBB", "existent value"), ("dummy header", "dummy value")]),
    ([("dummy header", "existent value"), ("BBB", "existent value")],
     [("dummy header", "existent value"), ("BBB", "existent value"), ("dummy header", "dummy value")]),
], ids=["string value", "when one exists", "with same key"])
def test_insert_header(spark, existing, expected):
    batch = batch_of(spark, [{"value": None, "headers": existing}], value_schema=None)
    (rec,) = records(apply_one(make(InsertHeader, {"header": "dummy header", "value.literal": "dummy value"}), batch))
    assert rec["headers"] == expected


def test_insert_header_value_literal_required():
    # Kafka's value.literal has no default: "Missing required configuration "value.literal""
    with pytest.raises(ConfigError, match="value.literal: missing required configuration"):
        make(InsertHeader, {"header": "AAA"})


@pytest.mark.parametrize("key", ["value.literal", "literal.value"], ids=["Kafka's key", "lakeconnect's earlier key"])
def test_insert_header_literal_is_the_text_kafka_writes(spark, key):
    batch = batch_of(spark, [{"value": None}], value_schema=None)
    (rec,) = records(apply_one(make(InsertHeader, {"header": "AAA", key: "2019-08-23"}), batch))
    assert rec["headers"] == [("AAA", "2019-08-23")]


def test_insert_header_kafka_key_wins(spark):
    batch = batch_of(spark, [{"value": None}], value_schema=None)
    settings = {"header": "AAA", "value.literal": "kafka", "literal.value": "old"}
    (rec,) = records(apply_one(make(InsertHeader, settings), batch))
    assert rec["headers"] == [("AAA", "kafka")]


@pytest.mark.parametrize("settings", [{"value.literal": "x"}, {"header": "", "value.literal": "x"}],
                         ids=["null name", "blank name"])
def test_insert_header_name_required(settings):
    with pytest.raises(ConfigError, match="header"):
        make(InsertHeader, settings)


# --- DropHeaders (DropHeadersTest) -----------------------------------------------------------------------


@pytest.mark.parametrize("names,existing,expected", [
    ("AAA", [("AAA", "dummy value")], []),
    ("BBB", [("AAA", "dummy value"), ("BBB", "dummy value")], [("AAA", "dummy value")]),
    ("BBB", None, None),
    ("AAA", [("BBB", "dummy value"), ("CCC", "dummy value")], [("BBB", "dummy value"), ("CCC", "dummy value")]),
    ("AAA,BBB", [("AAA", "v"), ("BBB", "v"), ("AAA", "v"), ("CCC", "v"), ("DDD", "v"), ("DDD", "v")],
     [("CCC", "v"), ("DDD", "v"), ("DDD", "v")]),
], ids=["existing", "one out of two", "out of zero", "no match", "several"])
def test_drop_headers(spark, names, existing, expected):
    batch = batch_of(spark, [{"value": None, "headers": existing}], value_schema=None)
    (rec,) = records(apply_one(make(DropHeaders, {"headers": names}), batch))
    assert rec["headers"] == expected


def test_drop_headers_reads_lakeconnects_earlier_key(spark):
    batch = batch_of(spark, [{"value": None, "headers": [("AAA", "v"), ("BBB", "v")]}], value_schema=None)
    (rec,) = records(apply_one(make(DropHeaders, {"names": "AAA"}), batch))
    assert rec["headers"] == [("BBB", "v")]


@pytest.mark.parametrize("settings,message", [({"headers": ""}, "Empty list"), ({"names": ""}, "Empty list"),
                                              ({}, "headers: missing required configuration")],
                         ids=["empty", "empty earlier key", "unset"])
def test_drop_headers_needs_names(settings, message):
    with pytest.raises(ConfigError, match=message):
        make(DropHeaders, settings)
