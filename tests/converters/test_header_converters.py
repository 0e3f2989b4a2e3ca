"""SimpleHeaderConverter: header values as UTF-8 text; read back as the text of the value Kafka infers
(the default header.converter). tests/oracle compares the inference with Kafka's own over a large corpus."""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from tests.converters.helpers import assert_no_python

KAFKA_CLASS = "org.apache.kafka.connect.storage.SimpleHeaderConverter"


def test_header_values_round_trip_as_utf8(spark, make):
    df = spark.createDataFrame([([("trace", "abc-123"), ("note", "héllo 😀"), ("empty", ""), ("none", None)],), (None,)],
                               "headers array<struct<key:string,value:string>>")
    converter = make(KAFKA_CLASS)
    written = df.select(converter.from_connect_header(F.col("headers")).alias("headers"))
    rows = written.collect()
    assert [(h.key, None if h.value is None else bytes(h.value)) for h in rows[0].headers] == [
        ("trace", b"abc-123"), ("note", "héllo 😀".encode()), ("empty", b""), ("none", None)]
    assert rows[1].headers is None
    back = written.select(converter.to_connect_header(F.col("headers")).alias("headers"))
    assert back.collect() == df.collect()
    assert_no_python(back)


def test_found_by_its_short_names(registry):
    from ingest.registry import PluginKind

    for name in ("SimpleHeaderConverter", "SimpleHeader", KAFKA_CLASS):
        assert registry.get(PluginKind.CONVERTER, name).name == "SimpleHeaderConverter"


INFERRED = [  # header text -> (schema Kafka's Values.parseString infers, the text Values.convertToString writes)
    ("plain", "string", "plain"), ("", "string", ""), ("  ", "string", "  "), ("007", "int8", "7"),
    ("300", "int16", "300"), ("70000", "int32", "70000"), ("9223372036854775807", "int64", "9223372036854775807"),
    ("9223372036854775808", "decimal(0)", "9223372036854775808"), ("1.50", "float32", "1.5"), ("1.0", "int8", "1"),
    ("1e39", "float64", "1.0E39"), (" true ", "boolean", "true"), ("null", "null", None), ("[1, 2.5]", "array<float32>",
    "[1.0,2.5]"), ("[1,null]", "string", "[1,null]"), ('{"a":[1]}', "map<string,array<int8>>", '{"a":[1]}'),
    ("2024-01-31", "date", "2024-01-31"), ("2024-13-01", "date", "2025-01-01"), ("12:30:00.000Z", "time",
    "12:30:00.000Z"), ("2024-01-31T00:00:00.000Z", "timestamp", "2024-01-31"), ('"quoted"', "string", '"quoted"'),
    # numbers whose digits, written out, would be a billion: known past a long, or a fraction, before any is
    ("1e999999999", "decimal(-999999999)", "1E+999999999"), ("1e-100000000", "float32", "0.0"),
    ("0e20", "int8", "0"), ("[0e20]", "array<int8>", "[0]"),
]


@pytest.mark.parametrize("text, schema, value", INFERRED)
def test_reading_infers_what_kafka_infers(spark, make, text, schema, value):
    converter = make(KAFKA_CLASS)
    df = spark.createDataFrame([([("h", text)],)], "headers array<struct<key:string,value:string>>")
    written = df.select(converter.from_connect_header(F.col("headers")).alias("headers"))
    read = written.select(converter.to_connect_header(F.col("headers")).alias("text"),
                          converter.header_schemas(F.col("headers")).alias("schema")).first()
    assert (read.schema[0].schema, read.text[0].value) == (schema, value)
    assert_no_python(written.select(converter.to_connect_header(F.col("headers"))))
