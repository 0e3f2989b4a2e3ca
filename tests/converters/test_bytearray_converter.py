"""ByteArrayConverter: bytes pass through; OPTIONAL_BYTES_SCHEMA; Kafka's checks and messages."""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from ingest.errors import DataError
from ingest.records import schema as S
from tests.converters.helpers import column_bytes, values

KAFKA_CLASS = "org.apache.kafka.connect.converters.ByteArrayConverter"


def test_bytes_pass_through_both_ways(spark, make):
    df = spark.createDataFrame([(b"\x00\xff raw",), (None,), (b"",)], "value binary")
    converter = make(KAFKA_CLASS)
    [(schema, read)] = converter.to_connect(df, "value")
    assert schema == S.OPTIONAL_BYTES_SCHEMA
    assert column_bytes(read) == [b"\x00\xff raw", None, b""]
    assert column_bytes(converter.from_connect(read, "value", schema)) == [b"\x00\xff raw", None, b""]
    assert column_bytes(converter.from_connect(read, "value", None)) == [b"\x00\xff raw", None, b""]


def test_the_books_extra_setting_is_ignored_as_kafka_ignores_it(make):
    make("ByteArrayConverter", {"schemas.enable": "true"}, is_key=True)


def test_wrong_schema_or_type_is_refused_with_kafkas_message(spark, make):
    df = spark.createDataFrame([("text",)], "value string")
    with pytest.raises(DataError, match="Invalid schema type for ByteArrayConverter: STRING"):
        make("ByteArrayConverter").from_connect(df, "value", S.STRING_SCHEMA)
    with pytest.raises(DataError, match="ByteArrayConverter is not compatible with objects of type string"):
        make("ByteArrayConverter").from_connect(df, "value", None)


def test_headers_are_utf8(spark, make):
    df = spark.createDataFrame([([("k", "v€")],)], "headers array<struct<key:string,value:string>>")
    converter = make("ByteArrayConverter")
    written = df.select(converter.from_connect_header(F.col("headers")).alias("h"))
    assert bytes(written.collect()[0].h[0].value) == "v€".encode()
    assert values(written.select(converter.to_connect_header(F.col("h"))[0]["value"].alias("v")), "v") == ["v€"]
