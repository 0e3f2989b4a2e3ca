"""The Connect data model: Kafka's schema JSON byte for byte, parsing with Kafka's errors, Spark types."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal

import pytest
from pyspark.sql import types as T

from ingest.errors import DataError
from ingest.records import schema as S
from ingest.records.schema import ConnectSchema, Field, from_spark_type

# --- JSON, as Kafka's JsonConverter.asJsonSchema writes it ------------------------------------------


@pytest.mark.parametrize("schema, text", [
    (S.STRING_SCHEMA, '{"type":"string","optional":false}'),
    (S.OPTIONAL_STRING_SCHEMA, '{"type":"string","optional":true}'),
    (S.INT8_SCHEMA, '{"type":"int8","optional":false}'),
    (S.INT16_SCHEMA, '{"type":"int16","optional":false}'),
    (S.INT32_SCHEMA, '{"type":"int32","optional":false}'),
    (S.OPTIONAL_INT64_SCHEMA, '{"type":"int64","optional":true}'),
    # JsonConverter's names for the floating point types are "float" and "double".
    (S.FLOAT32_SCHEMA, '{"type":"float","optional":false}'),
    (S.FLOAT64_SCHEMA, '{"type":"double","optional":false}'),
    (S.BOOLEAN_SCHEMA, '{"type":"boolean","optional":false}'),
    (S.OPTIONAL_BYTES_SCHEMA, '{"type":"bytes","optional":true}'),
])
def test_primitive_schema_json(schema, text):
    assert schema.to_json_text() == text
    assert ConnectSchema.from_json(text) == schema


def test_struct_json_puts_fields_after_type_and_field_names_last():
    books = S.struct("books", ("id", S.INT32_SCHEMA))
    assert books.to_json_text() == (
        '{"type":"struct","fields":[{"type":"int32","optional":false,"field":"id"}],"optional":false,"name":"books"}')


def test_debezium_key_schema_as_kafka_prints_it():
    key = S.struct("dbserver1.inventory.customers.Key", ("id", S.INT32_SCHEMA))
    assert key.to_json_text() == (
        '{"type":"struct","fields":[{"type":"int32","optional":false,"field":"id"}],'
        '"optional":false,"name":"dbserver1.inventory.customers.Key"}')


def test_name_version_doc_parameters_default_order():
    # As in a Debezium change event's "source" block: ... name, version, parameters, default, field.
    enum = ConnectSchema("string", True, "io.debezium.data.Enum", 1, parameters={"allowed": "true,last,false"},
                         default="false")
    source = S.struct("io.debezium.connector.mysql.Source", ("snapshot", enum))
    assert source.to_json_text() == (
        '{"type":"struct","fields":[{"type":"string","optional":true,"name":"io.debezium.data.Enum","version":1,'
        '"parameters":{"allowed":"true,last,false"},"default":"false","field":"snapshot"}],"optional":false,'
        '"name":"io.debezium.connector.mysql.Source"}')
    documented = ConnectSchema("int32", False, "n", 2, "the doc")
    assert documented.to_json_text() == '{"type":"int32","optional":false,"name":"n","version":2,"doc":"the doc"}'


def test_array_and_map_json():
    assert S.array(S.STRING_SCHEMA, optional=True).to_json_text() == (
        '{"type":"array","items":{"type":"string","optional":false},"optional":true}')
    assert S.map_(S.STRING_SCHEMA, S.OPTIONAL_INT32_SCHEMA).to_json_text() == (
        '{"type":"map","keys":{"type":"string","optional":false},"values":{"type":"int32","optional":true},'
        '"optional":false}')


def test_logical_types_have_kafkas_names_versions_and_parameters():
    assert S.DATE_SCHEMA.to_json_text() == (
        '{"type":"int32","optional":false,"name":"org.apache.kafka.connect.data.Date","version":1}')
    assert S.TIME_SCHEMA.to_json_text() == (
        '{"type":"int32","optional":false,"name":"org.apache.kafka.connect.data.Time","version":1}')
    assert S.timestamp(optional=True).to_json_text() == (
        '{"type":"int64","optional":true,"name":"org.apache.kafka.connect.data.Timestamp","version":1}')
    assert S.decimal(2).to_json_text() == (
        '{"type":"bytes","optional":false,"name":"org.apache.kafka.connect.data.Decimal","version":1,'
        '"parameters":{"scale":"2"}}')
    assert S.decimal(2, 10).to_json_text().endswith(
        '"parameters":{"scale":"2","connect.decimal.precision":"10"}}')
    assert S.decimal(3, 12).scale == 3 and S.decimal(3, 12).precision == 12
    assert S.DATE_SCHEMA.logical == S.DATE and S.INT32_SCHEMA.logical is None
    # A logical name over the wrong physical type is not that logical type.
    assert ConnectSchema("string", name=S.DATE).logical is None


def test_defaults_are_written_in_kafkas_json_forms():
    cases = [
        (S.FLOAT32_SCHEMA.with_default(1.1), "1.1"),  # Float.toString, not the double's 1.100000023841858
        (S.FLOAT64_SCHEMA.with_default(1e20), "1.0E20"),
        (S.FLOAT64_SCHEMA.with_default(0.5), "0.5"),
        (S.INT64_SCHEMA.with_default(7), "7"),
        (S.BOOLEAN_SCHEMA.with_default(False), "false"),
        (S.BYTES_SCHEMA.with_default(b"test-string"), '"dGVzdC1zdHJpbmc="'),
        (S.decimal(2).with_default(Decimal("1.56")), '"AJw="'),
        (S.DATE_SCHEMA.with_default(dt.date(1970, 1, 1) + dt.timedelta(days=10000)), "10000"),
        (S.TIMESTAMP_SCHEMA.with_default(dt.datetime(2001, 9, 9, 1, 46, 40)), "1000000000000"),
        (S.array(S.INT32_SCHEMA).with_default([1, 2]), "[1,2]"),
        (S.map_(S.INT32_SCHEMA, S.STRING_SCHEMA).with_default({1: "a"}), '[[1,"a"]]'),
    ]
    for schema, default_json in cases:
        text = schema.to_json_text()
        assert text.endswith(f',"default":{default_json}}}'), text
        assert ConnectSchema.from_json(text) == schema, text
    numeric = S.decimal(2).with_default(Decimal("1.50"))
    assert numeric.to_json_text(decimal_format="NUMERIC").endswith(',"default":1.50}')


def test_struct_default_follows_field_order():
    point = S.struct("p", ("x", S.INT32_SCHEMA), ("y", S.OPTIONAL_INT32_SCHEMA)).with_default({"y": 2, "x": 1})
    assert point.to_json_text().endswith(',"default":{"x":1,"y":2}}')
    assert ConnectSchema.from_json(point.to_json_text()).default == {"x": 1, "y": 2}


# --- parsing, as JsonConverter.asConnectSchema --------------------------------------------------------


def _nested() -> ConnectSchema:
    address = S.struct("address", ("street", S.STRING_SCHEMA), ("zip", S.OPTIONAL_INT32_SCHEMA), optional=True)
    return S.struct(
        "person",
        ("id", S.INT64_SCHEMA),
        ("name", S.OPTIONAL_STRING_SCHEMA.with_default("anon")),
        ("tags", S.array(S.STRING_SCHEMA, optional=True)),
        ("scores", S.map_(S.STRING_SCHEMA, S.FLOAT64_SCHEMA, optional=True)),
        ("by_day", S.map_(S.DATE_SCHEMA, S.array(S.OPTIONAL_INT16_SCHEMA), optional=True)),
        ("address", address),
        ("balance", S.decimal(2, 12, optional=True)),
        ("seen", S.timestamp(optional=True)),
        ("at", S.time(optional=True)),
        ("photo", S.OPTIONAL_BYTES_SCHEMA),
        ("ratio", S.OPTIONAL_FLOAT32_SCHEMA),
        ("tiny", S.OPTIONAL_INT8_SCHEMA),
        ("ok", S.OPTIONAL_BOOLEAN_SCHEMA),
        version=3, doc="a person",
    )


def test_json_round_trip_of_a_nested_schema():
    schema = _nested()
    text = schema.to_json_text()
    parsed = ConnectSchema.from_json(text)
    assert parsed == schema
    assert parsed.to_json_text() == text
    assert ConnectSchema.from_json(json.loads(text)) == schema
    assert [f.index for f in parsed.fields] == list(range(len(schema.fields)))


def test_parsing_follows_kafkas_leniency():
    # No "optional" means required; unknown keys are ignored; a version must be an integer to count.
    parsed = ConnectSchema.from_json('{"type":"struct","fields":[{"field":"a","type":"boolean"},'
                                     '{"field":"b","type":"string","optional":true}],"extra":1,"version":"x"}')
    assert parsed == S.struct(None, ("a", S.BOOLEAN_SCHEMA), ("b", S.OPTIONAL_STRING_SCHEMA))
    # The book's schema example, spacing and all.
    book = ConnectSchema.from_json('{  \n "type": "struct",\n "fields": [\n {"type": "string", "field": "item"},'
                                   ' {"type": "string", "field": "price"} ] }')
    assert [f.name for f in book.fields] == ["item", "price"]


@pytest.mark.parametrize("text, message", [
    ('{"optional":false}', "Schema must contain 'type' field"),
    ('{"type":"float64"}', "Unknown schema type: float64"),
    ('{"type":"struct"}', 'Struct schema\'s "fields" argument is not an array.'),
    ('{"type":"struct","fields":[{"type":"int32"}]}', "Struct schema's field name not specified properly"),
    ('{"type":"array"}', "Array schema did not specify the element type"),
    ('{"type":"map","values":{"type":"int32"}}', "Map schema did not specify the key type"),
    ('{"type":"map","keys":{"type":"int32"}}', "Map schema did not specify the value type"),
    ('{"type":"bytes","parameters":{"scale":2}}', "Schema parameters must have string values."),
    ('{"type":', "not valid JSON"),
])
def test_invalid_schema_json_raises_kafkas_message(text, message):
    with pytest.raises(DataError, match=message.replace("(", r"\(").replace(".", r"\.")):
        ConnectSchema.from_json(text)


# --- identity --------------------------------------------------------------------------------------


def test_equality_treats_parameters_as_a_map_and_fingerprint_is_stable():
    a = ConnectSchema("bytes", name=S.DECIMAL, version=1,
                      parameters=(("scale", "2"), ("connect.decimal.precision", "5")))
    b = ConnectSchema("bytes", name=S.DECIMAL, version=1, parameters={"connect.decimal.precision": "5", "scale": "2"})
    assert a == b and hash(a) == hash(b)
    assert a.fingerprint() == b.fingerprint()
    assert len(a.fingerprint()) == 64 and int(a.fingerprint(), 16) >= 0
    assert _nested().fingerprint() == _nested().fingerprint()
    assert S.STRING_SCHEMA.fingerprint() != S.OPTIONAL_STRING_SCHEMA.fingerprint()
    assert len({_nested(), _nested()}) == 1  # hashable, defaults included


def test_constructors_validate_shape():
    with pytest.raises(ValueError, match="unknown Connect schema type"):
        ConnectSchema("float")
    with pytest.raises(ValueError, match="duplicate field names"):
        S.struct("s", ("a", S.INT32_SCHEMA), ("a", S.INT64_SCHEMA))
    with pytest.raises(ValueError):
        ConnectSchema("array")
    assert S.struct("s", Field("a", 0, S.INT32_SCHEMA)).field("a").schema == S.INT32_SCHEMA


# --- Spark types -----------------------------------------------------------------------------------


@pytest.mark.parametrize("schema, spark_type", [
    (S.INT8_SCHEMA, T.ByteType()), (S.INT16_SCHEMA, T.ShortType()), (S.INT32_SCHEMA, T.IntegerType()),
    (S.INT64_SCHEMA, T.LongType()), (S.FLOAT32_SCHEMA, T.FloatType()), (S.FLOAT64_SCHEMA, T.DoubleType()),
    (S.BOOLEAN_SCHEMA, T.BooleanType()), (S.STRING_SCHEMA, T.StringType()), (S.BYTES_SCHEMA, T.BinaryType()),
    (S.DATE_SCHEMA, T.DateType()), (S.TIMESTAMP_SCHEMA, T.TimestampType()),
    (S.decimal(2, 10), T.DecimalType(10, 2)), (S.decimal(4), T.DecimalType(38, 4)),
    (S.TIME_SCHEMA, T.IntegerType()),
])
def test_spark_type_of_each_type(schema, spark_type):
    assert schema.to_spark_type() == spark_type


def test_spark_type_of_nested_schema_and_back():
    schema = _nested()
    spark_type = schema.to_spark_type()
    assert spark_type["id"].nullable is False and spark_type["name"].nullable is True
    assert spark_type["tags"].dataType == T.ArrayType(T.StringType(), containsNull=False)
    assert spark_type["by_day"].dataType == T.MapType(T.DateType(), T.ArrayType(T.ShortType(), True), False)
    back = from_spark_type(spark_type, name="person")
    assert back.name == "person" and back.type == "struct"
    assert back.to_spark_type() == spark_type  # types and nullability survive the round trip
    assert [f.name for f in back.fields] == [f.name for f in schema.fields]
    assert back.field("balance").schema == S.decimal(2, 12, optional=True)
    assert back.field("seen").schema == S.timestamp(optional=True)
    assert back.field("by_day").schema.key_schema == S.DATE_SCHEMA
    assert back.field("at").schema == S.OPTIONAL_INT32_SCHEMA  # Spark cannot tell a Time from an int32


def test_spark_types_without_a_connect_schema():
    with pytest.raises(ValueError, match="no Kafka Connect schema"):
        from_spark_type(T.VariantType())
    with pytest.raises(ValueError, match="does not fit"):
        ConnectSchema("bytes", name=S.DECIMAL, version=1, parameters={"scale": "2", S.PRECISION: "40"}).to_spark_type()


def test_spark_dataframe_with_a_schemas_type(spark):
    schema = _nested()
    df = spark.createDataFrame([], T.StructType([T.StructField("value", schema.to_spark_type(), False)]))
    assert from_spark_type(df.schema["value"].dataType, "person").to_spark_type() == schema.to_spark_type()


# --- Jackson's text --------------------------------------------------------------------------------


@pytest.mark.parametrize("value, text", [
    (1.0, "1.0"), (0.1, "0.1"), (100.0, "100.0"), (1e-3, "0.001"), (9.999e-4, "9.999E-4"),
    (1234567.0, "1234567.0"), (1e7, "1.0E7"), (1.5e-10, "1.5E-10"), (-2.5, "-2.5"), (-0.0, "-0.0"),
    (123456789.125, "1.23456789125E8"), (float("nan"), '"NaN"'), (float("-inf"), '"-Infinity"'),
])
def test_doubles_print_as_java(value, text):
    assert S.dumps(value) == text


@pytest.mark.parametrize("value, text", [
    (1.1, "1.1"), (3.4028235e38, "3.4028235E38"), (16777217.0, "1.6777216E7"), (1e40, '"Infinity"'),
])
def test_floats_print_as_java(value, text):
    assert S.dumps(S.JavaFloat(value)) == text


def test_strings_and_decimals_print_as_jackson():
    assert S.dumps("a\u0001\u001f\n\t\"\\/é") == '"a\\u0001\\u001F\\n\\t\\"\\\\/é"'
    assert S.dumps(Decimal("0.00000001")) == "1E-8"
    assert S.dumps(Decimal("1.50")) == "1.50"
    assert S.dumps({"a": [1, None, True]}) == '{"a":[1,null,true]}'


def test_decimal_bytes_are_minimal_twos_complement():
    assert S.decimal_to_bytes(Decimal("1.56"), 2) == b"\x00\x9c"  # Kafka's JsonConverterTest: "AJw="
    assert S.decimal_to_bytes(Decimal("0"), 0) == b"\x00"
    assert S.decimal_to_bytes(Decimal("-1.28"), 2) == b"\x80"
    assert S.decimal_to_bytes(Decimal("-1.29"), 2) == b"\xff\x7f"
    assert S.decimal_from_bytes(b"\xff\x7f", 2) == Decimal("-1.29")
    with pytest.raises(DataError):
        S.decimal_to_bytes(Decimal("1.234"), 2)
