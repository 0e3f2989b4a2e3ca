"""Short/Integer/Long/Float/DoubleConverter: Kafka's big-endian serializer bytes, as column expressions."""

from __future__ import annotations

import math
import random
import struct

import pytest
from pyspark.sql import functions as F

from ingest.errors import DataError
from ingest.records import schema as S
from tests.converters.helpers import assert_no_python, column_bytes, values

random.seed(20240901)

_DOUBLE_SPECIALS = [0.0, -0.0, 1.0, -1.0, 0.1, 1e300, -1e-300, 5e-324, -5e-324, 2.2250738585072014e-308,
                    2.225073858507201e-308, 1.7976931348623157e308, float("inf"), float("-inf"), 2.0**-1022, 2.0**1023,
                    0.9999999999999999, 1.0000000000000002, 3.0, 4.0, 1023.9999999999999]
_FLOAT_SPECIALS = [0.0, -0.0, 1.0, -1.0, 1.1, 3.4028234663852886e38, -1.401298464324817e-45, 1.1754943508222875e-38,
                   1.1754942106924411e-38, float("inf"), float("-inf"), 16777216.0, 0.5, 0.75, 1e-40]


def _random_doubles(n):
    return [struct.unpack(">d", struct.pack(">Q", random.getrandbits(64)))[0] for _ in range(n)]


def _random_floats(n):
    return [struct.unpack(">f", struct.pack(">I", random.getrandbits(32)))[0] for _ in range(n)]


CASES = [
    ("org.apache.kafka.connect.converters.ShortConverter", "smallint", ">h", S.OPTIONAL_INT16_SCHEMA,
     [0, 1, -1, 255, 256, 32767, -32768] + [random.randint(-32768, 32767) for _ in range(50)]),
    ("org.apache.kafka.connect.converters.IntegerConverter", "int", ">i", S.OPTIONAL_INT32_SCHEMA,
     [0, 1, -1, 2**31 - 1, -(2**31), 65536] + [random.randint(-(2**31), 2**31 - 1) for _ in range(50)]),
    ("org.apache.kafka.connect.converters.LongConverter", "bigint", ">q", S.OPTIONAL_INT64_SCHEMA,
     [0, 1, -1, 2**63 - 1, -(2**63), 2**32] + [random.randint(-(2**63), 2**63 - 1) for _ in range(50)]),
    ("org.apache.kafka.connect.converters.FloatConverter", "float", ">f", S.OPTIONAL_FLOAT32_SCHEMA,
     _FLOAT_SPECIALS + [f for f in _random_floats(300) if not math.isnan(f)]),
    ("org.apache.kafka.connect.converters.DoubleConverter", "double", ">d", S.OPTIONAL_FLOAT64_SCHEMA,
     _DOUBLE_SPECIALS + [d for d in _random_doubles(300) if not math.isnan(d)]),
]


def test_integer_one_is_four_big_endian_bytes(spark, make):
    df = spark.createDataFrame([(1,)], "value int")
    assert column_bytes(make("IntegerConverter").from_connect(df, "value", S.INT32_SCHEMA)) == [b"\x00\x00\x00\x01"]


@pytest.mark.parametrize("name, ddl, fmt, schema, numbers", CASES, ids=[c[0].rsplit(".", 1)[1] for c in CASES])
def test_bytes_match_kafkas_serializers_and_read_back(spark, make, name, ddl, fmt, schema, numbers):
    converter = make(name)
    df = spark.createDataFrame([(i, v) for i, v in enumerate([*numbers, None])], f"offset bigint, value {ddl}")
    written = converter.from_connect(df, "value", schema).orderBy("offset")
    assert column_bytes(written) == [struct.pack(fmt, v) for v in numbers] + [None]
    [(read_schema, read)] = converter.to_connect(written, "value")
    assert read_schema == schema
    back = values(read.orderBy("offset"))
    assert [None if v is None else struct.pack(fmt, v) for v in back] == [struct.pack(fmt, v) for v in numbers] + [None]
    assert_no_python(written)
    assert_no_python(read)


@pytest.mark.parametrize("name, ddl", [("FloatConverter", "float"), ("DoubleConverter", "double")])
def test_nan_is_javas_canonical_nan(spark, make, name, ddl):
    df = spark.createDataFrame([(float("nan"),)], f"value {ddl}")
    written = make(name).from_connect(df, "value", None)
    expected = b"\x7f\xc0\x00\x00" if ddl == "float" else b"\x7f\xf8\x00\x00\x00\x00\x00\x00"
    assert column_bytes(written) == [expected]
    assert math.isnan(values(make(name).to_connect(written, "value")[0][1])[0])


def test_wrong_length_raises_kafkas_message_naming_the_record(spark, make):
    df = spark.createDataFrame([("ids", 2, 9, b"\x00\x00\x00\x01"), ("ids", 2, 10, b"\x01\x02")],
                               "topic string, partition int, offset bigint, value binary")
    with pytest.raises(DataError) as caught:
        make("IntegerConverter").to_connect(df, "value")
    assert "Failed to deserialize integer: Size of data received by IntegerDeserializer is not 4" in str(caught.value)
    assert "topic 'ids', partition 2, offset 10" in str(caught.value)
    assert values(make("IntegerConverter").bad_records(df, "value"), "offset") == [10]
    with pytest.raises(DataError, match="Size of data received by Deserializer is not 8"):
        make("DoubleConverter").to_connect(df, "value")


def test_column_of_another_type_is_refused(spark, make):
    df = spark.createDataFrame([(1,)], "value bigint")
    with pytest.raises(DataError, match=r"Failed to serialize to integer \(was bigint"):
        make("IntegerConverter").from_connect(df, "value", None)


def test_headers_hold_the_numbers_text(spark, make):
    df = spark.createDataFrame([([("n", "42"), ("m", "-1"), ("z", None)],)],
                               "headers array<struct<key:string,value:string>>")
    converter = make("LongConverter")
    written = df.select(converter.from_connect_header(F.col("headers")).alias("h"))
    assert [None if h.value is None else bytes(h.value) for h in written.collect()[0].h] == [
        struct.pack(">q", 42), struct.pack(">q", -1), None]
    back = written.select(converter.to_connect_header(F.col("h")).alias("h")).collect()[0].h
    assert [(h.key, h.value) for h in back] == [("n", "42"), ("m", "-1"), ("z", None)]
