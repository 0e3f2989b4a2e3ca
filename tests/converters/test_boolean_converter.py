"""BooleanConverter: one byte, 0x01/0x00, as Kafka's BooleanSerializer and BooleanDeserializer."""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from ingest.errors import DataError
from ingest.records import schema as S
from tests.converters.helpers import assert_no_python, column_bytes, values

KAFKA_CLASS = "org.apache.kafka.connect.converters.BooleanConverter"


def test_writes_one_byte_and_reads_it_back(spark, make):
    converter = make(KAFKA_CLASS)
    df = spark.createDataFrame([(0, True), (1, False), (2, None)], "offset bigint, value boolean")
    written = converter.from_connect(df, "value", S.OPTIONAL_BOOLEAN_SCHEMA).orderBy("offset")
    assert column_bytes(written) == [b"\x01", b"\x00", None]
    [(schema, read)] = converter.to_connect(written, "value")
    assert schema == S.OPTIONAL_BOOLEAN_SCHEMA
    assert values(read.orderBy("offset")) == [True, False, None]
    assert_no_python(read)


def test_schemaless_booleans_and_a_key_converter(spark, make):
    converter = make("BooleanConverter", is_key=True)
    df = spark.createDataFrame([(True,)], "key boolean")
    assert column_bytes(converter.from_connect(df, "key", None), "key") == [b"\x01"]


@pytest.mark.parametrize("data, message", [
    (b"", "Failed to deserialize boolean: Size of data received by BooleanDeserializer is not 1"),
    (b"\x01\x00", "Failed to deserialize boolean: Size of data received by BooleanDeserializer is not 1"),
    (b"\x02", "Failed to deserialize boolean: Unexpected byte received by BooleanDeserializer: 2"),
    (b"\xff", "Failed to deserialize boolean: Unexpected byte received by BooleanDeserializer: -1"),
    (b"\x80", "Failed to deserialize boolean: Unexpected byte received by BooleanDeserializer: -128"),
])
def test_a_bad_record_fails_with_kafkas_message_and_its_coordinates(spark, make, data, message):
    converter = make(KAFKA_CLASS)
    df = spark.createDataFrame([("orders", 0, 10, b"\x01"), ("orders", 0, 11, data)],
                               "topic string, partition int, offset bigint, value binary")
    with pytest.raises(DataError) as failure:
        converter.to_connect(df, "value")
    assert message in str(failure.value)
    assert "topic 'orders'" in str(failure.value) and "offset 11" in str(failure.value)
    assert values(converter.bad_records(df, "value"), "offset") == [11]


def test_a_schema_other_than_boolean_is_refused_on_write(spark, make):
    df = spark.createDataFrame([(1,)], "value int")
    with pytest.raises(DataError, match="Invalid schema type for BooleanConverter: INT32"):
        make(KAFKA_CLASS).from_connect(df, "value", S.INT32_SCHEMA)
    with pytest.raises(DataError, match="BooleanConverter is not compatible with objects of type int"):
        make(KAFKA_CLASS).from_connect(df, "value", None)


def test_headers(spark, make):
    converter = make(KAFKA_CLASS)
    df = spark.createDataFrame([([("a", "true"), ("b", "false"), ("c", None)],)],
                               "headers array<struct<key:string,value:string>>")
    written = df.select(converter.from_connect_header(F.col("headers")).alias("headers"))
    assert [(h.key, h.value) for h in written.collect()[0].headers] == [
        ("a", bytearray(b"\x01")), ("b", bytearray(b"\x00")), ("c", None)]
    back = written.select(converter.to_connect_header(F.col("headers")).alias("headers"))
    assert back.collect() == df.collect()
    not_boolean = spark.createDataFrame([([("a", "yes")],)], "headers array<struct<key:string,value:string>>")
    with pytest.raises(Exception, match="Invalid schema type for BooleanConverter"):
        not_boolean.select(converter.from_connect_header(F.col("headers"))).collect()
    bad = spark.createDataFrame([([("h", b"\x05")],)], "headers array<struct<key:string,value:binary>>")
    assert bad.select(converter.header_errors(F.col("headers"))).first()[0] == (
        "header 'h': Failed to deserialize boolean: Unexpected byte received by BooleanDeserializer: 5")
