"""StringConverter: value.toString() in a charset, and strings back with OPTIONAL_STRING_SCHEMA."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from pyspark.sql import functions as F

from ingest.errors import ConfigError, DataError
from ingest.records import schema as S
from tests.converters.helpers import assert_no_python, column_bytes, values

KAFKA_CLASS = "org.apache.kafka.connect.storage.StringConverter"


def test_the_books_sink_example_passes_json_through_as_text(spark, make):
    df = spark.createDataFrame([(b'{"greeting":"hello"}',), (None,)], "value binary")
    [(schema, read)] = make(KAFKA_CLASS).to_connect(df, "value")
    assert schema == S.OPTIONAL_STRING_SCHEMA
    assert values(read) == ['{"greeting":"hello"}', None]
    assert column_bytes(make(KAFKA_CLASS).from_connect(read, "value", schema)) == [b'{"greeting":"hello"}', None]


def test_values_are_written_as_java_tostring(spark, make):
    df = spark.createDataFrame(
        [("héllo", 1, -9223372036854775808, True, 1e20, 1.5, 7, 2, Decimal("0.00000001"), Decimal("12.50"),
          dt.date(1970, 1, 2), dt.datetime(2023, 9, 1, 12, 0, 5))],
        "s string, i int, l bigint, b boolean, d double, f float, t tinyint, sh smallint, tiny decimal(10,8), "
        "dec decimal(5,2), day date, ts timestamp")
    converter = make("StringConverter")
    expected = {"s": "héllo".encode(), "i": b"1", "l": b"-9223372036854775808", "b": b"true", "d": b"1.0E20",
                "f": b"1.5", "t": b"7", "sh": b"2", "tiny": b"1E-8", "dec": b"12.50",
                "day": b"Fri Jan 02 00:00:00 UTC 1970", "ts": b"Fri Sep 01 12:00:05 UTC 2023"}
    for column, text in expected.items():
        assert column_bytes(converter.from_connect(df, column, None), column) == [text], column
    time_of_day = spark.createDataFrame([(3723000,)], "value int")
    written = converter.from_connect(time_of_day, "value", S.TIME_SCHEMA)
    assert column_bytes(written) == [b"Thu Jan 01 01:02:03 UTC 1970"]
    assert_no_python(converter.from_connect(df, "s", None))


def test_structs_lists_and_maps_print_as_java(spark, make):
    df = spark.createDataFrame(
        [((1, None, "x", [1, None], {"k": 2.5}, (dt.date(1970, 1, 1),)),)],
        "value struct<id:int, gone:string, name:string, tags:array<int>, m:map<string,double>, d:struct<day:date>>")
    written = make("StringConverter").from_connect(df, "value", None)
    # Struct.toString leaves out null fields; lists and maps print as Java's collections.
    assert column_bytes(written) == [
        b"Struct{id=1,name=x,tags=[1, null],m={k=2.5},d=Struct{day=Thu Jan 01 00:00:00 UTC 1970}}"]
    assert_no_python(written)


def test_bytes_have_no_meaningful_tostring(spark, make):
    df = spark.createDataFrame([(b"x",)], "b binary")
    with pytest.raises(DataError, match="StringConverter cannot write"):
        make("StringConverter").from_connect(df, "b", None)


@pytest.mark.parametrize("encoding, expected", [
    ("UTF-8", "aé€".encode("utf-8")),
    ("UTF8", "aé€".encode("utf-8")),
    ("UTF-16", b"\xfe\xff" + "aé€".encode("utf-16-be")),  # Java writes a big-endian BOM
    ("UTF-16LE", "aé€".encode("utf-16-le")),
    ("UTF-32", "aé€".encode("utf-32-be")),
])
def test_encodings(spark, make, encoding, expected):
    converter = make("StringConverter", {"converter.encoding": encoding})
    df = spark.createDataFrame([("aé€",)], "value string")
    written = converter.from_connect(df, "value", S.STRING_SCHEMA)
    assert column_bytes(written) == [expected]
    assert values(converter.to_connect(written, "value")[0][1]) == ["aé€"]


def test_latin1(spark, make):
    converter = make("StringConverter", {"converter.encoding": "ISO-8859-1"})
    df = spark.createDataFrame([("café",)], "value string")
    assert column_bytes(converter.from_connect(df, "value", None)) == [b"caf\xe9"]


def test_unknown_encoding_is_a_config_error(make):
    with pytest.raises(ConfigError, match="converter.encoding"):
        make("StringConverter", {"converter.encoding": "KLINGON"})


def test_malformed_utf8_becomes_replacement_characters(spark, make):
    df = spark.createDataFrame([(b"a\xff(b",)], "value binary")
    assert values(make("StringConverter").to_connect(df, "value")[0][1]) == ["a\ufffd(b"]


def test_headers(spark, make):
    df = spark.createDataFrame([([("k", "vé"), ("n", None)],)], "headers array<struct<key:string,value:string>>")
    converter = make("StringConverter")
    written = df.select(converter.from_connect_header(F.col("headers")).alias("h"))
    assert [(h.key, None if h.value is None else bytes(h.value)) for h in written.collect()[0].h] == [
        ("k", "vé".encode()), ("n", None)]
    back = written.select(converter.to_connect_header(F.col("h")).alias("h")).collect()[0].h
    assert [(h.key, h.value) for h in back] == [("k", "vé"), ("n", None)]
