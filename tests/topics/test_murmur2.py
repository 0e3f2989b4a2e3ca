"""Kafka's murmur2 partitioner, scalar, vectorised and inside Spark."""

from __future__ import annotations

import random

import pyarrow as pa
import pytest

from ingest.topics import murmur2, murmur2_array, partition_column, partition_for_key, partitions_for_keys, to_positive

# From Kafka's UtilsTest.testMurmur2.
KAFKA_VECTORS = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    b"abc": 479470107,
}


@pytest.mark.parametrize("key,expected", list(KAFKA_VECTORS.items()))
def test_kafka_vectors(key, expected):
    assert murmur2(key) == expected


def test_to_positive_and_partition():
    assert to_positive(-1) == 0x7FFFFFFF and to_positive(-(2**31)) == 0
    # 21 -> toPositive(-973932308) = 1173551340
    assert partition_for_key(b"21", 1) == 0
    assert partition_for_key(b"21", 7) == (-973932308 & 0x7FFFFFFF) % 7 == 1173551340 % 7
    with pytest.raises(ValueError):
        partition_for_key(b"x", 0)


def test_vectorised_matches_scalar():
    rng = random.Random(7)
    keys = [bytes(rng.randrange(256) for _ in range(rng.randrange(0, 70))) for _ in range(3000)]
    keys += list(KAFKA_VECTORS) + [b""]
    arr = pa.array(keys + [None], pa.binary())
    assert murmur2_array(arr).to_pylist() == [murmur2(k) for k in keys] + [None]
    sliced = arr.slice(11, 500)  # non-zero array offset
    assert murmur2_array(sliced).to_pylist() == [murmur2(k) for k in keys[11:511]]
    assert partitions_for_keys(arr, 12).to_pylist() == [partition_for_key(k, 12) for k in keys] + [None]
    chunked = pa.chunked_array([arr.slice(0, 10), arr.slice(10)])
    assert murmur2_array(chunked).to_pylist() == murmur2_array(arr).to_pylist()


def test_spark_column_matches_scalar(spark):
    keys = list(KAFKA_VECTORS) + [b"", b"k1", None]
    df = spark.createDataFrame([(k,) for k in keys], "key binary")
    got = [r.p for r in df.select(partition_column("key", 5).alias("p")).collect()]
    assert got == [partition_for_key(k, 5) if k is not None else None for k in keys]
    strings = spark.createDataFrame([("21",), ("foobar",)], "key string")
    assert [r.p for r in strings.select(partition_column("key", 3).alias("p")).collect()] == [
        partition_for_key(b"21", 3),
        partition_for_key(b"foobar", 3),
    ]


def test_jvm_partitioner_is_used_and_matches_python(spark):
    """The session from get_spark loads lakeconnect's Java partitioner (built by the set-up), and it puts
    every key where Kafka's partitioner and the Python fallback do, across key lengths and counts."""
    from pyspark.sql import functions as F

    from ingest.topics.murmur2 import JVM_FUNCTION, python_partition_column

    plan = spark.range(1).select(partition_column(F.lit(b"k"), 3).alias("p"))._jdf.queryExecution()
    assert "KafkaPartition" in plan.analyzed().toString() or JVM_FUNCTION in plan.analyzed().toString()
    rng = random.Random(11)
    keys = [bytes(rng.randrange(256) for _ in range(rng.randrange(0, 40))) for _ in range(2000)]
    keys += list(KAFKA_VECTORS) + [b"", None]
    df = spark.createDataFrame([(k,) for k in keys], "key binary")
    for n in (1, 3, 12, 1000):
        rows = df.select(partition_column("key", n).alias("jvm"),
                         python_partition_column(F.col("key"), n).alias("py")).collect()
        expected = [partition_for_key(k, n) if k is not None else None for k in keys]
        assert [r.jvm for r in rows] == expected
        assert [r.py for r in rows] == expected
