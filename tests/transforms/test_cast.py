"""Cast$Key / Cast$Value against Kafka's CastTest: whole-value and field casts, with and without schemas,
Java's conversion rules, output schemas, per-record failures and configuration errors."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal

import pytest
from pyspark.sql import functions as F

from connectors.predicates import RecordIsTombstone
from connectors.transforms.cast import CastKey, CastValue
from ingest.errors import ConfigError
from ingest.records import ERROR, SEQ
from ingest.records.schema import (
    BOOLEAN_SCHEMA, BYTES_SCHEMA, DATE_SCHEMA, FLOAT32_SCHEMA, FLOAT64_SCHEMA, INT8_SCHEMA, INT16_SCHEMA,
    INT32_SCHEMA, INT64_SCHEMA, OPTIONAL_FLOAT32_SCHEMA, OPTIONAL_INT16_SCHEMA, OPTIONAL_INT32_SCHEMA,
    OPTIONAL_TIMESTAMP_SCHEMA, STRING_SCHEMA, TIME_SCHEMA, TIMESTAMP_SCHEMA, ConnectSchema, decimal, struct,
)
from ingest.runtime.pipeline import union_all
from tests.converters.helpers import assert_no_python
from tests.transforms.helpers import SCHEMALESS, apply, apply_one, batch_of, make, records, schema

DAY = dt.date(1970, 1, 2)
EPOCH = dt.datetime(1970, 1, 1)
SUPPORTED_INPUT = "[INT8, INT16, INT32, INT64, FLOAT32, FLOAT64, BOOLEAN, STRING, BYTES]"


def outcomes(*batches):
    """(value, error message) of every record of each batch, in one Spark job: values through JSON."""
    frames = []
    for i, b in enumerate(batches):
        error = F.col(ERROR)["message"] if ERROR in b.df.columns else F.lit(None).cast("string")
        frames.append(b.df.select(F.lit(i).alias("case"), F.col(SEQ), error.alias("error"),
                                  F.to_json(F.struct(F.col("value").alias("v")), {"ignoreNullFields": "false"}).alias("json")))
    rows = sorted(union_all(frames).collect(), key=lambda r: (r["case"], r[SEQ]))
    out: list[list] = [[] for _ in batches]
    for r in rows:
        out[r["case"]].append((json.loads(r["json"]).get("v"), r["error"]))
    return out


@pytest.mark.parametrize("spec, message", [
    ("", "Must specify at least one field to cast."),
    ("foo:faketype", "Invalid type found in casting spec: faketype"),
    ("foo:array", "Cast transformation does not support casting to ARRAY; supported types are "
                  "[INT8, INT16, INT32, INT64, FLOAT32, FLOAT64, BOOLEAN, STRING]"),
    ("foo:bytes", "Cast transformation does not support casting to BYTES; supported types are "
                  "[INT8, INT16, INT32, INT64, FLOAT32, FLOAT64, BOOLEAN, STRING]"),
    ("foo:int8:extra", "Invalid value [foo:int8:extra] for configuration renames: "
                       "Invalid rename mapping: foo:int8:extra"),
    ("foo:int8,int32", "Cast transformations that specify a type to cast the entire value to may ony specify "
                       "a single cast in their spec"),
    ("faketype", "No enum constant org.apache.kafka.connect.data.Schema.Type.FAKETYPE"),
])
def test_config_errors_at_validate_time(spec, message):
    with pytest.raises(ConfigError) as e:
        make(CastValue, {"spec": spec})
    assert [p.message for p in e.value.problems] == [message]


def test_config_def_matches_kafka():
    keys = CastValue.config_def().keys
    assert list(keys) == ["spec", "replace.null.with.default"]
    assert keys["spec"].required and keys["spec"].importance.value == "HIGH"
    assert keys["spec"].doc.endswith("Note that binary fields can only be cast to string.")
    assert keys["spec"].describe_validator() == "list of colon-delimited pairs, e.g. <code>foo:bar,abc:xyz</code>"
    assert keys["replace.null.with.default"].default is True
    assert CastKey.aliases == ("org.apache.kafka.connect.transforms.Cast$Key",)
    assert make(CastValue, {"spec": " INT8 "}).whole_value_type == "int8"
    assert make(CastValue, {"spec": "a:Float64, b : string"}).casts == {"a": "float64", "b": "string"}


TARGETS = ("int8", "int16", "int32", "int64", "float32", "float64", "boolean", "string")


def test_whole_value_with_schema(spark):
    b = batch_of(spark, [{"value": 42}, {"value": 0}, {"value": None}], value_schema=INT32_SCHEMA)
    outs = [apply_one(make(CastValue, {"spec": t}), b) for t in TARGETS]
    assert [schema(o) for o in outs] == [ConnectSchema(t) for t in TARGETS]
    assert [o.df.schema["value"].dataType.simpleString() for o in outs] == \
        ["tinyint", "smallint", "int", "bigint", "float", "double", "boolean", "string"]
    assert [[v for v, _ in case] for case in outcomes(*outs)] == [
        [42, 0, None], [42, 0, None], [42, 0, None], [42, 0, None], [42.0, 0.0, None], [42.0, 0.0, None],
        [True, False, None], ["42", "0", None]]


def test_whole_value_schemaless_and_keys(spark):
    b = batch_of(spark, [{"value": 42}, {"value": 0}, {"value": ["foo"]}], value_schema=SCHEMALESS)
    outs = [apply_one(make(CastValue, {"spec": t}), b) for t in TARGETS]
    assert all(schema(o) is None for o in outs)
    unsupported = f"Cast transformation does not support casting from ARRAY; supported types are {SUPPORTED_INPUT}"
    expected = [[42, 0], [42, 0], [42, 0], [42, 0], [42.0, 0.0], [42.0, 0.0], [True, False], ["42", "0"]]
    # A failed record keeps its failure; its value is the runtime's to set aside (from the record as read).
    assert outcomes(*outs) == [[(v, None) for v in vs] + [(None, unsupported)] for vs in expected]
    keys = batch_of(spark, [{"key": 42, "value": "bogus"}], key_schema=SCHEMALESS, value_schema=STRING_SCHEMA)
    keys_with_schema = batch_of(spark, [{"key": 42, "value": "bogus"}], key_schema=INT32_SCHEMA,
                                value_schema=STRING_SCHEMA)
    keyed = [apply_one(make(CastKey, {"spec": "int8"}), k) for k in (keys, keys_with_schema)]
    assert [schema(k, "key") for k in keyed] == [None, INT8_SCHEMA]
    assert [records(k)[0]["key"] for k in keyed] == [42, 42]
    assert [records(k)[0]["value"] for k in keyed] == ["bogus", "bogus"]


def test_null_values_pass_through(spark):
    with_schema = batch_of(spark, [{"key": "key", "value": None}], key_schema=STRING_SCHEMA,
                           value_schema=STRING_SCHEMA)
    schemaless = batch_of(spark, [{"key": "key", "value": None}], key_schema=STRING_SCHEMA)
    null_key = batch_of(spark, [{"key": None, "value": "value"}], key_schema=STRING_SCHEMA,
                        value_schema=STRING_SCHEMA)
    xform = make(CastValue, {"spec": "foo:int64"})
    out1, out2 = apply_one(xform, with_schema), apply_one(xform, schemaless)
    out3 = apply_one(make(CastKey, {"spec": "foo:int64"}), null_key)
    assert schema(out1) == STRING_SCHEMA and schema(out2) is None and schema(out3, "key") == STRING_SCHEMA
    assert [records(o)[0]["value"] for o in (out1, out2)] == [None, None]
    assert records(out3)[0]["key"] is None and records(out3)[0]["value"] == "value"


def test_whole_value_logical_and_default(spark):
    decimal_out = apply_one(make(CastValue, {"spec": "string"}),
                            batch_of(spark, [{"value": Decimal(42)}], value_schema=decimal(0)))
    timestamp_out = apply_one(make(CastValue, {"spec": "string"}), batch_of(
        spark, [{"value": dt.datetime(1970, 1, 2, 0, 0, 0, 1000)}], value_schema=TIMESTAMP_SCHEMA))
    float_schema = ConnectSchema("float32", default=-42.125)
    default_out = apply_one(make(CastValue, {"spec": "int32"}),
                            batch_of(spark, [{"value": 42.125}], value_schema=float_schema))
    assert schema(default_out) == ConnectSchema("int32", default=-42)
    # A whole-value cast keeps the schema's name, version and parameters (copySchemaBasics).
    assert schema(decimal_out) == ConnectSchema("string", name=decimal(0).name, version=1,
                                                parameters=(("scale", "0"),))
    assert [c[0][0] for c in outcomes(decimal_out, timestamp_out, default_out)] == \
        ["42", "1970-01-02T00:00:00.001Z", 42]


def test_a_timestamp_default_cast_to_string_prints_in_utc_as_its_values_do(spark):
    # Kafka's Values formats a java.util.Date in UTC, whatever the JVM's zone: the schema's default (cast in
    # Python) and the records' values (cast by Spark) alike.
    spark.conf.set("spark.sql.session.timeZone", "Asia/Tokyo")
    try:
        ts = dt.datetime(1970, 1, 2, 0, 0, 0, 1000, tzinfo=dt.timezone.utc)
        value_schema = struct(None, ("t", TIMESTAMP_SCHEMA.with_default(ts)))
        out = apply_one(make(CastValue, {"spec": "t:string"}), batch_of(spark, [{"value": {"t": ts}}],
                                                                           value_schema=value_schema))
        assert schema(out).fields[0].schema.default == "1970-01-02T00:00:00.001Z"
        assert records(out)[0]["value"] == {"t": "1970-01-02T00:00:00.001Z"}
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")


def test_logical_to_primitive(spark):
    value_schema = struct(
        None, ("date_to_int32", DATE_SCHEMA), ("timestamp_to_int64", TIMESTAMP_SCHEMA),
        ("time_to_int64", TIME_SCHEMA), ("decimal_to_int32", decimal(0)),
        ("timestamp_to_float64", TIMESTAMP_SCHEMA), ("null_timestamp_to_int32", OPTIONAL_TIMESTAMP_SCHEMA))
    spec = ("date_to_int32:int32,timestamp_to_int64:int64,time_to_int64:int64,decimal_to_int32:int32,"
            "timestamp_to_float64:float64,null_timestamp_to_int32:int32")
    late = dt.datetime(2262, 4, 11)  # Spark's timestamps end before Kafka's test value, Long.MAX_VALUE millis
    value = {"date_to_int32": DAY, "timestamp_to_int64": EPOCH, "time_to_int64": 1,
             "decimal_to_int32": Decimal(2**31), "timestamp_to_float64": late,
             "null_timestamp_to_int32": None}
    out = apply_one(make(CastValue, {"spec": spec}), batch_of(spark, [{"value": value}], value_schema=value_schema))
    assert records(out)[0]["value"] == {
        "date_to_int32": 1, "timestamp_to_int64": 0, "time_to_int64": 1, "decimal_to_int32": -2**31,
        "timestamp_to_float64": float((late - EPOCH) // dt.timedelta(milliseconds=1)),
        "null_timestamp_to_int32": None}
    assert [f.schema for f in schema(out).fields] == [
        INT32_SCHEMA, INT64_SCHEMA, INT64_SCHEMA, INT32_SCHEMA, FLOAT64_SCHEMA, OPTIONAL_INT32_SCHEMA]


def test_logical_to_string(spark):
    value_schema = struct(None, ("date", DATE_SCHEMA), ("decimal", decimal(0)), ("time", TIME_SCHEMA),
                          ("timestamp", TIMESTAMP_SCHEMA), ("epoch_date", DATE_SCHEMA),
                          ("small", decimal(8)), ("zero", decimal(8)), ("plain", decimal(8)))
    value = {"date": DAY, "decimal": Decimal(1982), "time": 3_600_000, "timestamp": dt.datetime(2024, 5, 6, 7, 8, 9),
             "epoch_date": dt.date(1970, 1, 1), "small": Decimal("0.00000001"), "zero": Decimal(0),
             "plain": Decimal("12.5")}
    spec = ",".join(f"{f}:string" for f in value)
    out = apply_one(make(CastValue, {"spec": spec}), batch_of(spark, [{"value": value}], value_schema=value_schema))
    # Values.dateFormatFor: time of day below one day of millis (1970-01-01 too), a date on midnight.
    assert records(out)[0]["value"] == {
        "date": "1970-01-02", "decimal": "1982", "time": "01:00:00.000Z", "timestamp": "2024-05-06T07:08:09.000Z",
        "epoch_date": "00:00:00.000Z", "small": "1E-8", "zero": "0E-8", "plain": "12.50000000"}
    assert all(f.schema == STRING_SCHEMA for f in schema(out).fields)


def test_fields_with_schema(spark):
    value_schema = struct(
        None, ("int8", INT8_SCHEMA), ("int16", OPTIONAL_INT16_SCHEMA), ("int32", ConnectSchema("int32", default=2)),
        ("int64", INT64_SCHEMA), ("float32", FLOAT32_SCHEMA), ("float64", ConnectSchema("float64", default=-1.125)),
        ("boolean", BOOLEAN_SCHEMA), ("string", STRING_SCHEMA), ("bigdecimal", decimal(0)), ("date", DATE_SCHEMA),
        ("optional", OPTIONAL_FLOAT32_SCHEMA), ("timestamp", TIMESTAMP_SCHEMA), ("bytes", BYTES_SCHEMA))
    spec = ("int8:int16,int16:int32,int32:int64,int64:boolean,float32:float64,float64:boolean,boolean:int8,"
            "string:int32,bigdecimal:string,date:string,optional:int32,bytes:string")
    value = {"int8": 8, "int16": 16, "int32": 32, "int64": 64, "float32": 32.0, "float64": -64.0, "boolean": True,
             "string": "42", "bigdecimal": Decimal(42), "date": DAY, "optional": None, "timestamp": EPOCH,
             "bytes": bytes([0xFE, 0xDC, 0xBA, 0x98, 0x76, 0x54, 0x32, 0x10])}
    out = apply_one(make(CastValue, {"spec": spec}), batch_of(spark, [{"value": value}], value_schema=value_schema))
    assert records(out)[0]["value"] == {
        "int8": 8, "int16": 16, "int32": 32, "int64": True, "float32": 32.0, "float64": True, "boolean": 1,
        "string": 42, "bigdecimal": "42", "date": "1970-01-02", "optional": None, "timestamp": EPOCH,
        "bytes": "/ty6mHZUMhA="}
    fields = {f.name: f.schema for f in schema(out).fields}
    assert fields == {
        "int8": INT16_SCHEMA, "int16": OPTIONAL_INT32_SCHEMA, "int32": ConnectSchema("int64", default=2),
        "int64": BOOLEAN_SCHEMA, "float32": FLOAT64_SCHEMA, "float64": ConnectSchema("boolean", default=True),
        "boolean": INT8_SCHEMA, "string": INT32_SCHEMA, "bigdecimal": STRING_SCHEMA, "date": STRING_SCHEMA,
        "optional": OPTIONAL_INT32_SCHEMA, "timestamp": TIMESTAMP_SCHEMA, "bytes": STRING_SCHEMA}
    assert schema(out).name is None and not schema(out).optional


def test_fields_schemaless(spark):
    value = {"int8": 8, "int16": 16, "int32": 32, "int64": 64, "float32": 32.0, "float64": -64.0, "boolean": True,
             "string": "42", "other": "kept"}
    spec = "int8:int16,int16:int32,int32:int64,int64:boolean,float32:float64,float64:boolean,boolean:int8," \
           "string:int32,missing:int8"
    b = batch_of(spark, [{"value": value}, {"value": None}, {"value": 42}])
    out = apply_one(make(CastValue, {"spec": spec}), b)
    rs = records(out)
    # A field the Map lacks is put as null, as Kafka's HashMap.put(field, null).
    assert rs[0]["value"] == {"int8": 8, "int16": 16, "int32": 32, "int64": True, "float32": 32.0, "float64": True,
                              "boolean": 1, "string": 42, "other": "kept", "missing": None}
    assert rs[1]["value"] is None and "error" not in rs[1]
    assert rs[2]["error"] == "Only Map objects supported in absence of schema for [cast types], found: java.lang.Long"


def test_java_conversion_rules(spark):
    """Narrowing wraps, floating point saturates (NaN -> 0), strings parse with Java's rules."""
    b = batch_of(spark, [{"value": v} for v in [300, -129, 1e10, -1e300, 3.9, -3.9, "12", "+7", " 42", "abc",
                                                 "128", True, 9223372036854775808]])
    int8, int32 = (apply_one(make(CastValue, {"spec": t}), b) for t in ("int8", "int32"))
    floats = batch_of(spark, [{"value": v} for v in [" 1.5 ", "1e3", "1.5f", "0x1p3", "Infinity", "inf", "nan", "x"]])
    f64 = apply_one(make(CastValue, {"spec": "float64"}), floats)
    bools = batch_of(spark, [{"value": v} for v in ["TRUE", "yes", 0.5, -2, 0]])
    boolean = apply_one(make(CastValue, {"spec": "boolean"}), bools)
    strings = batch_of(spark, [{"value": v} for v in [1.0e7, 0.001, 1.5, 12345678901234567890]])
    text = apply_one(make(CastValue, {"spec": "string"}), strings)
    got_int8, got_int32, got_f64, got_bool, got_text = outcomes(int8, int32, f64, boolean, text)

    def out_of_range(s):
        return f"Value ({s}) was out of range for requested data type"

    # A record that fails keeps its failure; its value is the runtime's to set aside.
    assert got_int8 == [(44, None), (127, None), (-1, None), (0, None), (3, None), (-3, None), (12, None),
                        (7, None), (None, out_of_range(" 42")), (None, out_of_range("abc")),
                        (None, out_of_range("128")), (1, None), (0, None)]
    assert [v for v, _ in got_int32] == [300, -129, 2147483647, -2147483648, 3, -3, 12, 7, None, None, 128, 1, 0]
    assert got_f64[:5] == [(1.5, None), (1000.0, None), (1.5, None), (8.0, None), ("Infinity", None)]
    assert got_f64[5:] == [(None, out_of_range(s)) for s in ("inf", "nan", "x")]
    assert [v for v, _ in got_bool] == [True, False, False, True, False]
    # Double.toString; an integer beyond a long is Jackson's BigInteger.longValue() (its low 64 bits).
    assert [v for v, _ in got_text] == ["1.0E7", "0.001", "1.5", "-6101065172474983726"]


def test_failures_per_record(spark):
    value_schema = struct(None, ("bytes", ConnectSchema("bytes", optional=True)),
                          ("nested", struct(None, ("x", INT32_SCHEMA), optional=True)), ("s", STRING_SCHEMA))
    b = batch_of(spark, [{"value": {"bytes": b"\x01", "nested": None, "s": "1"}},
                         {"value": {"bytes": None, "nested": {"x": 1}, "s": "1"}},
                         {"value": {"bytes": None, "nested": None, "s": "z"}},
                         {"value": {"bytes": None, "nested": None, "s": "2"}}], value_schema=value_schema)
    out = apply_one(make(CastValue, {"spec": "bytes:int8,nested:int8,s:int8"}), b)
    primitive = batch_of(spark, [{"value": 1}, {"value": None}], value_schema=ConnectSchema("int32", optional=True))
    non_struct = apply_one(make(CastValue, {"spec": "a:int8"}), primitive)
    rs, ns = records(out), records(non_struct)
    assert [r.get("error") for r in rs] == [
        "Unexpected type in Cast transformation: class [B",
        f"Cast transformation does not support casting from STRUCT; supported types are {SUPPORTED_INPUT}",
        "Value (z) was out of range for requested data type", None]
    assert rs[3]["value"] == {"bytes": None, "nested": None, "s": 2}
    assert [r.get("error") for r in ns] == ["Cannot list fields on non-struct type", None]
    assert schema(non_struct) == schema(batch_of(spark, [], value_schema=ConnectSchema("int32", optional=True)))


def test_replace_null_with_default(spark):
    value_schema = struct(None, ("a", ConnectSchema("int32", optional=True, default=2)),
                          ("b", ConnectSchema("string", optional=True, default="x")))
    b = batch_of(spark, [{"value": {"a": None, "b": None}}], value_schema=value_schema)
    replaced = apply_one(make(CastValue, {"spec": "a:int64"}), b)
    kept = apply_one(make(CastValue, {"spec": "a:int64", "replace.null.with.default": "false"}), b)
    assert [c[0][0] for c in outcomes(replaced, kept)] == [{"a": 2, "b": "x"}, {"a": None, "b": None}]
    assert schema(replaced).fields[0].schema == ConnectSchema("int64", optional=True, default=2)


def test_scoped_by_predicate_and_plan(spark):
    b = batch_of(spark, [{"key": "k", "value": {"a": "1"}, "headers": [("h", "v")]}, {"key": "t", "value": None}],
                 key_schema=STRING_SCHEMA)
    outs = apply(make(CastValue, {"spec": "a:int32"}), b, make(RecordIsTombstone, {}), negate=True)
    rs = [r for o in outs for r in records(o)]
    assert len(rs) == 2
    assert rs[0]["value"] == {"a": 1} and rs[0]["key"] == "k" and rs[0]["headers"] == [("h", "v")]
    assert rs[1]["value"] is None and rs[1]["key"] == "t"
    with_schema = batch_of(spark, [{"value": {"a": "1"}}], value_schema=struct(None, ("a", STRING_SCHEMA)))
    assert_no_python(apply_one(make(CastValue, {"spec": "a:float32"}), with_schema).df)
    assert_no_python(outs[0].df)
