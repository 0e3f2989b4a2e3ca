"""JsonConverter's one-pass Java writer for flat struct records (`io.lakeconnect.JsonRecord`): it is used
where it applies, and every record comes out byte for byte as the general expressions write it (which
the other converter tests hold to Kafka's bytes), including the records it hands back to them."""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import replace
from decimal import Decimal

import pytest
from pyspark.sql import functions as F
from pyspark.sql import types as T

import connectors.converters.json_converter as json_converter
from connectors.converters import _json_fast
from connectors.converters._json_read import JsonOptions
from ingest.records import schema as S
from tests.converters.helpers import column_bytes, executed_plan

KAFKA_CLASS = "org.apache.kafka.connect.json.JsonConverter"
UTC = dt.timezone.utc

# Every kind the Java writer handles, each optional so that nulls are written too.
WIDE = S.struct(
    "wide",
    ("l", S.OPTIONAL_INT64_SCHEMA), ("i", S.OPTIONAL_INT32_SCHEMA), ("h", S.OPTIONAL_INT16_SCHEMA),
    ("c", S.OPTIONAL_INT8_SCHEMA), ("b", S.OPTIONAL_BOOLEAN_SCHEMA), ("s", S.OPTIONAL_STRING_SCHEMA),
    ("y", S.OPTIONAL_BYTES_SCHEMA), ("d", S.date(True)), ("t", S.timestamp(True)), ("tm", S.time(True)),
    ("small", S.decimal(2, 10, optional=True)), ("big", S.decimal(0, 38, optional=True)),
    ("weird \"name\"\n", S.OPTIONAL_STRING_SCHEMA), ("f32", S.OPTIONAL_FLOAT32_SCHEMA),
    ("f64", S.OPTIONAL_FLOAT64_SCHEMA),
)
STRINGS = ["", "plain", 'quote " and \\ backslash', "tab\tnew\nline\rcr\bbs\fff", "\x00\x01\x1f\x7f",
           "é ü ß 漢字 😀", "\u2028\u2029", "/slash/", "a" * 300]
LONGS = [0, 1, -1, 9, 10, -10, 2**31, -(2**31) - 1, 2**63 - 1, -(2**63), 1234567890123]
# Where Java's Float/Double.toString switch notation, shortest forms, extremes; NaN and the infinities,
# which the Java writer hands back (Jackson writes them quoted).
FLOATS = [0.0, -0.0, 1.0, -1.5, 0.1, 0.001, 1e-3, 9.999e-4, 1e-4, 1e7, 9999999.0, 1e23, 2e22, 123456789.125,
          5e-324, 1.7976931348623157e308, 3.4028234663852886e38, 1.401298464324817e-45, float("nan"),
          float("inf"), float("-inf")]


def _row(rnd: random.Random, i: int):
    def maybe(v):
        return None if rnd.random() < 0.15 else v

    micros = rnd.choice([0, 1, -1, 999, -999, 1000, -1001, 1_700_000_000_123_456, -86_400_000_001])
    return (
        maybe(rnd.choice(LONGS)), maybe(rnd.randint(-(2**31), 2**31 - 1)), maybe(rnd.randint(-(2**15), 2**15 - 1)),
        maybe(rnd.randint(-128, 127)), maybe(rnd.random() < 0.5), maybe(rnd.choice(STRINGS) + str(i)),
        maybe(bytes(rnd.randrange(256) for _ in range(rnd.randrange(0, 7)))),
        maybe(dt.date(1970, 1, 1) + dt.timedelta(days=rnd.randint(-40000, 40000))),
        maybe(dt.datetime(1970, 1, 1, tzinfo=UTC) + dt.timedelta(microseconds=micros)),
        maybe(rnd.randint(0, 86_399_999)),
        maybe(Decimal(rnd.randint(-(10**10) + 1, 10**10 - 1)).scaleb(-2)),
        maybe(Decimal(rnd.choice([0, 1, -1, 127, 128, -128, -129, 255, 256, 2**63, -(2**63), 10**38 - 1, -(10**38) + 1,
                                  rnd.randint(-(10**37), 10**37)]))),
        maybe(rnd.choice(STRINGS)),
        maybe(rnd.choice(FLOATS + [rnd.uniform(-1e6, 1e6)])),
        maybe(rnd.choice(FLOATS + [rnd.uniform(-1e6, 1e6), rnd.random() * 10.0 ** rnd.randint(-30, 30)])),
    )


@pytest.fixture
def wide_frame(spark):
    rnd = random.Random(7)
    rows = [(_row(rnd, i),) for i in range(400)] + [(None,)]  # and a tombstone
    return spark.createDataFrame(rows, T.StructType([T.StructField("value", WIDE.to_spark_type(), True)]))


def _general(monkeypatch, converter, df, schema):
    with monkeypatch.context() as m:
        m.setattr(json_converter, "json_fast_available", lambda: False)
        out = converter.from_connect(df, "value", schema)
        assert "lakeconnect_json_record" not in executed_plan(out)
        return column_bytes(out)


@pytest.mark.parametrize("configs", [{}, {"schemas.enable": "false"}, {"decimal.format": "NUMERIC"}])
def test_every_kind_is_written_as_the_general_expressions_write_it(spark, make, monkeypatch, wide_frame, configs):
    converter = make(KAFKA_CLASS, configs)
    fast = converter.from_connect(wide_frame, "value", WIDE)
    assert "lakeconnect_json_record" in executed_plan(fast)
    assert "WholeStageCodegen" in executed_plan(fast) or "*(" in executed_plan(fast)
    got, expected = column_bytes(fast), _general(monkeypatch, converter, wide_frame, WIDE)
    assert got[-1] is None and expected[-1] is None
    mismatched = [(g, e) for g, e in zip(got, expected) if g != e]
    assert not mismatched, mismatched[:3]


def test_records_it_hands_back_get_their_default_or_kafkas_error(spark, make, monkeypatch):
    schema = S.struct("s", ("n", S.OPTIONAL_INT32_SCHEMA.with_default(42)), ("r", S.STRING_SCHEMA))
    df = spark.createDataFrame([((None, "x"),), ((7, "y"),)], "value struct<n:int,r:string>")
    converter = make(KAFKA_CLASS)
    fast = converter.from_connect(df, "value", schema)
    assert "lakeconnect_json_record" in executed_plan(fast)
    got = column_bytes(fast)
    assert got == _general(monkeypatch, converter, df, schema)
    assert got[0].endswith(b'"payload":{"n":42,"r":"x"}}')
    keep_nulls = make(KAFKA_CLASS, {"schemas.enable": "false", "replace.null.with.default": "false"})
    assert column_bytes(keep_nulls.from_connect(df, "value", schema))[0] == b'{"n":null,"r":"x"}'

    missing = spark.createDataFrame([((1, None),)], "value struct<n:int,r:string>")
    with pytest.raises(Exception, match=r"null value for field that is required and has no default value \(\$\.r\)"):
        converter.from_connect(missing, "value", schema).collect()


def test_a_string_that_is_not_utf8_is_written_as_spark_decodes_it(spark, make, monkeypatch):
    schema = S.struct("s", ("s", S.OPTIONAL_STRING_SCHEMA))
    raw = spark.createDataFrame([(b"ok \xff\xfe bad", ), (b"\xc3\xa9 fine",)], "b binary")
    df = raw.select(F.struct(F.col("b").cast("string").alias("s")).alias("value"))
    converter = make(KAFKA_CLASS, {"schemas.enable": "false"})
    got = column_bytes(converter.from_connect(df, "value", schema))
    assert got == _general(monkeypatch, converter, df, schema)
    assert got == ['{"s":"ok \ufffd\ufffd bad"}'.encode(), '{"s":"é fine"}'.encode()]


@pytest.mark.parametrize("schema", [
    S.struct("nested", ("inner", S.struct("inner", ("a", S.array(S.FLOAT32_SCHEMA))))),
    S.struct("arrays", ("a", S.array(S.INT32_SCHEMA))),
    S.struct("maps", ("m", S.map_(S.STRING_SCHEMA, S.INT32_SCHEMA))),
    S.INT64_SCHEMA,
])
def test_other_shapes_take_the_general_expressions(schema):
    assert _json_fast.field_spec(schema.to_spark_type(), schema, JsonOptions("BASE64", True)) is None


def test_fields_in_another_order_than_the_schema_take_the_general_expressions():
    schema = S.struct("s", ("a", S.INT32_SCHEMA), ("b", S.INT32_SCHEMA))
    swapped = T.StructType([T.StructField("b", T.IntegerType()), T.StructField("a", T.IntegerType())])
    assert _json_fast.field_spec(swapped, schema, JsonOptions("BASE64", True)) is None
    assert _json_fast.field_spec(schema.to_spark_type(), schema, JsonOptions("BASE64", True)) == 'i x "a"\ni x "b"'


# A Debezium change event's shape: optional row structs before/after, a required source struct with a
# defaulted field, Debezium's logical names on primitives (written as the primitive), a null struct.
ROW = S.struct("db.t.Value", ("id", S.INT32_SCHEMA), ("name", S.OPTIONAL_STRING_SCHEMA),
               ("born", replace(S.OPTIONAL_INT32_SCHEMA, name="io.debezium.time.Date")),
               ("at", replace(S.OPTIONAL_INT64_SCHEMA, name="io.debezium.time.MicroTimestamp")),
               ("zoned", replace(S.OPTIONAL_STRING_SCHEMA, name="io.debezium.time.ZonedTimestamp")),
               ("price", S.decimal(2, 10, optional=True)), ("day", S.date(True)), optional=True)
SOURCE = S.struct("io.debezium.connector.mysql.Source", ("version", S.STRING_SCHEMA),
                  ("snapshot", S.OPTIONAL_STRING_SCHEMA.with_default("false")), ("pos", S.INT64_SCHEMA))
ENVELOPE = S.struct("db.t.Envelope", ("before", ROW), ("after", ROW), ("source", SOURCE), ("op", S.STRING_SCHEMA),
                    ("ts_ms", S.OPTIONAL_INT64_SCHEMA),
                    ("transaction", S.struct("event.block", ("id", S.STRING_SCHEMA), optional=True)))


def _event(rnd: random.Random, i: int):
    def row():
        if rnd.random() < 0.3:
            return None
        maybe = lambda v: None if rnd.random() < 0.2 else v  # noqa: E731
        return (i, maybe(rnd.choice(STRINGS)), maybe(rnd.randint(-40000, 40000)), maybe(rnd.choice(LONGS)),
                maybe("2024-01-02T03:04:05Z"), maybe(Decimal(rnd.randint(-(10**10) + 1, 10**10 - 1)).scaleb(-2)),
                maybe(dt.date(2000, 1, 1) + dt.timedelta(days=rnd.randint(-9000, 9000))))
    snapshot = None if rnd.random() < 0.2 else rnd.choice(["true", "last", "false"])  # null: its default
    return (row(), row(), ("2.3.0.Final", snapshot, i), rnd.choice("crud"), rnd.choice([None, 1_700_000_000_000]),
            None if rnd.random() < 0.9 else ("tx-1",))


@pytest.mark.parametrize("configs", [{}, {"schemas.enable": "false"}, {"decimal.format": "NUMERIC"},
                                     {"replace.null.with.default": "false"}])
def test_nested_structs_are_written_as_the_general_expressions_write_them(spark, make, monkeypatch, configs):
    rnd = random.Random(11)
    rows = [(_event(rnd, i),) for i in range(300)] + [(None,)]
    df = spark.createDataFrame(rows, T.StructType([T.StructField("value", ENVELOPE.to_spark_type(), True)]))
    converter = make(KAFKA_CLASS, configs)
    spec = _json_fast.field_spec(ENVELOPE.to_spark_type(), ENVELOPE, converter.options)
    assert spec is not None and spec.count("{ n ") == 3 and spec.count("{ x ") == 1, spec
    fast = converter.from_connect(df, "value", ENVELOPE)
    assert "lakeconnect_json_record" in executed_plan(fast)
    got, expected = column_bytes(fast), _general(monkeypatch, converter, df, ENVELOPE)
    mismatched = [(g, e) for g, e in zip(got, expected) if g != e]
    assert not mismatched, mismatched[:3]
    assert any(b'"snapshot":"false"' in g for g in got if g)  # a null's default, from the general path


def test_a_required_field_null_inside_a_nested_struct_gets_kafkas_error(spark, make):
    # A DDL type: every field nullable, as a column computed by a transform may be.
    df = spark.createDataFrame([((None, None, ("v", "true", None), "c", None, None),)],
                               f"value {ENVELOPE.to_spark_type().simpleString()}")
    with pytest.raises(Exception, match=r"required and has no default value \(\$\.source\.pos\)"):
        make(KAFKA_CLASS).from_connect(df, "value", ENVELOPE).collect()


def test_the_optimistic_plan_is_the_java_writer_alone_with_the_same_bytes(spark, make, monkeypatch, wide_frame):
    from ingest.api import DECLINED

    def finite(field):  # NaN and the infinities are handed back: the optimistic plan declines them
        return F.coalesce(F.abs(F.col(f"value.{field}")) < F.lit(float("inf")), F.lit(True))

    frame = wide_frame.where(finite("f32") & finite("f64"))
    converter = make(KAFKA_CLASS)
    general = converter.from_connect(frame, "value", WIDE)
    optimistic = converter.from_connect_optimistic(frame, "value", WIDE)

    def size(df):  # the optimised plan's whole tree (its string form is truncated)
        return len(df._jdf.queryExecution().optimizedPlan().toJSON())

    assert "lakeconnect_json_record" in executed_plan(optimistic) and DECLINED in executed_plan(optimistic)
    assert size(optimistic) * 3 < size(general), (size(optimistic), size(general))
    assert column_bytes(optimistic) == column_bytes(general)


def test_a_nullable_field_with_a_default_has_no_optimistic_plan(spark, make):
    schema = S.struct("s", ("n", S.OPTIONAL_INT32_SCHEMA.with_default(42)))
    df = spark.createDataFrame([((None,),), ((7,),)], "value struct<n:int>")
    assert make(KAFKA_CLASS).from_connect_optimistic(df, "value", schema) is None
    required = spark.createDataFrame([((None,),)], "value struct<n:int>")
    plan = make(KAFKA_CLASS).from_connect_optimistic(required, "value", S.struct("s", ("n", S.INT32_SCHEMA)))
    from ingest.api import DECLINED

    with pytest.raises(Exception, match=DECLINED):
        plan.collect()


def test_a_float_that_is_nan_or_infinite_is_written_quoted_as_kafka_writes_it(spark, make):
    """Jackson quotes NaN and the infinities (QUOTE_NON_NUMERIC_NUMBERS): the Java writer hands them back to
    the general expressions, and the optimistic plan declines them."""
    from ingest.api import DECLINED

    schema = S.struct("s", ("d", S.FLOAT64_SCHEMA), ("f", S.FLOAT32_SCHEMA))
    df = spark.createDataFrame([((float("nan"), 1.5),), ((1.5, float("-inf")),), ((0.1, 0.1),)],
                               "value struct<d:double,f:float>")
    converter = make(KAFKA_CLASS, {"schemas.enable": "false"})
    assert column_bytes(converter.from_connect(df, "value", schema)) == [
        b'{"d":"NaN","f":1.5}', b'{"d":1.5,"f":"-Infinity"}', b'{"d":0.1,"f":0.1}']
    optimistic = converter.from_connect_optimistic(df, "value", schema)
    with pytest.raises(Exception, match=DECLINED):
        optimistic.collect()
