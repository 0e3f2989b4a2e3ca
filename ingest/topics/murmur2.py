"""Kafka's default partitioner for keyed records: `toPositive(murmur2(keyBytes)) % numPartitions`.

`murmur2` is a line-by-line port of Kafka's `org.apache.kafka.common.utils.Utils.murmur2` (Java
`int` arithmetic: 32-bit, wrapping, signed result). `murmur2_array` is the same function over an
Arrow binary array with numpy (keys grouped by length, each group hashed as one matrix).
`partition_column` puts Kafka's partitioner in a Spark plan: the Java function of `ingest.jvm` when the
session has it, else an Arrow UDF over `murmur2_array` (no per-row Python either way).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

if TYPE_CHECKING:
    from pyspark.sql import Column

SEED = 0x9747B28C
M = 0x5BD1E995
R = 24
_MASK = 0xFFFFFFFF
_CHUNK_BYTES = 16 << 20  # bound on the key matrix hashed at once


def _signed(h: int) -> int:
    return h - (1 << 32) if h & 0x80000000 else h


def murmur2(data: bytes) -> int:
    """Kafka's `Utils.murmur2(byte[])`: a signed 32-bit int."""
    length = len(data)
    h = (SEED ^ length) & _MASK
    length4 = length // 4
    for i in range(length4):
        i4 = i * 4
        k = data[i4] | (data[i4 + 1] << 8) | (data[i4 + 2] << 16) | (data[i4 + 3] << 24)
        k = (k * M) & _MASK
        k ^= k >> R
        k = (k * M) & _MASK
        h = (h * M) & _MASK
        h ^= k
    tail = length % 4
    base = length & ~3
    if tail == 3:
        h ^= data[base + 2] << 16
    if tail >= 2:
        h ^= data[base + 1] << 8
    if tail >= 1:
        h ^= data[base]
        h = (h * M) & _MASK
    h ^= h >> 13
    h = (h * M) & _MASK
    h ^= h >> 15
    return _signed(h)


def to_positive(n: int) -> int:
    """Kafka's `Utils.toPositive`: clears the sign bit (not abs(): abs(MIN_VALUE) overflows)."""
    return n & 0x7FFFFFFF


def partition_for_key(key: bytes, num_partitions: int) -> int:
    """The partition Kafka's producer picks for a record with (serialised) `key`."""
    if num_partitions <= 0:
        raise ValueError(f"num_partitions must be positive, not {num_partitions}")
    return to_positive(murmur2(key)) % num_partitions


def _hash_matrix(mat: np.ndarray) -> np.ndarray:
    """murmur2 of each row of an (n, L) uint8 matrix, as uint32."""
    n, length = mat.shape
    m = np.uint32(M)
    h = np.full(n, (SEED ^ length) & _MASK, dtype=np.uint32)
    nblocks = length // 4
    if nblocks:
        blocks = np.ascontiguousarray(mat[:, : nblocks * 4]).view("<u4")
        for i in range(nblocks):
            k = blocks[:, i] * m
            k ^= k >> np.uint32(R)
            k *= m
            h *= m
            h ^= k
    tail, base = length % 4, nblocks * 4
    if tail == 3:
        h ^= mat[:, base + 2].astype(np.uint32) << np.uint32(16)
    if tail >= 2:
        h ^= mat[:, base + 1].astype(np.uint32) << np.uint32(8)
    if tail >= 1:
        h ^= mat[:, base].astype(np.uint32)
        h *= m
    h ^= h >> np.uint32(13)
    h *= m
    h ^= h >> np.uint32(15)
    return h


def murmur2_array(keys: pa.Array | pa.ChunkedArray) -> pa.Array:
    """murmur2 of every key of a binary (or string) array: int32, null where the key is null."""
    if isinstance(keys, pa.ChunkedArray):
        keys = keys.combine_chunks() if keys.num_chunks != 1 else keys.chunk(0)
    if pa.types.is_large_binary(keys.type) or pa.types.is_large_string(keys.type):
        keys = keys.cast(pa.large_binary())
        off_type = np.int64
    else:
        keys = keys.cast(pa.binary())
        off_type = np.int32
    n = len(keys)
    out = np.zeros(n, dtype=np.uint32)
    if n:
        bufs = keys.buffers()
        offsets = np.frombuffer(bufs[1], dtype=off_type)[keys.offset : keys.offset + n + 1].astype(np.int64)
        data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)
        lengths = np.diff(offsets)
        order = np.argsort(lengths, kind="stable")
        uniq, starts = np.unique(lengths[order], return_index=True)
        bounds = list(starts[1:]) + [n]
        for length, lo, hi in zip(uniq, starts, bounds):
            rows = order[lo:hi]
            step = max(1, _CHUNK_BYTES // max(int(length), 1))
            for c in range(0, len(rows), step):
                part = rows[c : c + step]
                mat = data[offsets[part][:, None] + np.arange(int(length))] if length else np.zeros((len(part), 0), np.uint8)
                out[part] = _hash_matrix(mat)
    valid = keys.is_valid().to_numpy(zero_copy_only=False) if keys.null_count else None
    return pa.array(out.view(np.int32), type=pa.int32(), mask=None if valid is None else ~valid)


def partitions_for_keys(keys: pa.Array | pa.ChunkedArray, num_partitions: int) -> pa.Array:
    """`partition_for_key` of every key (int32; null for null keys)."""
    if num_partitions <= 0:
        raise ValueError(f"num_partitions must be positive, not {num_partitions}")
    hashes = murmur2_array(keys)
    arr = hashes.fill_null(0).to_numpy()
    positive = (arr.astype(np.int64) & 0x7FFFFFFF) % num_partitions
    mask = None if not hashes.null_count else ~hashes.is_valid().to_numpy(zero_copy_only=False)
    return pa.array(positive.astype(np.int32), type=pa.int32(), mask=mask)


def _partition_udf_body(keys: pa.Array, num_partitions: pa.Array) -> pa.Array:
    n = num_partitions[0].as_py() if len(num_partitions) else 1
    return partitions_for_keys(keys, n)


def partition_column(key: Column | str, num_partitions: int) -> Column:
    """Spark column: Kafka's partition for binary `key` among `num_partitions` (null for a null key).

    The JVM function from `ingest.jvm` when the session has it (Spark runs it in its generated code);
    else the Arrow UDF over `murmur2_array` (same results, each batch of keys through Python).
    """
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F
    from pyspark.sql.types import IntegerType

    from ingest.jvm import java_function

    col = (F.col(key) if isinstance(key, str) else key).cast("binary")
    spark = SparkSession.getActiveSession()
    if spark is not None and java_function(spark, JVM_FUNCTION, JVM_CLASS, IntegerType()):
        return F.call_function(JVM_FUNCTION, col, F.lit(int(num_partitions)))
    return python_partition_column(col, num_partitions)


JVM_FUNCTION = "lakeconnect_kafka_partition"
JVM_CLASS = "io.lakeconnect.KafkaPartition"


def python_partition_column(key: Column, num_partitions: int) -> Column:
    """`partition_column` as an Arrow UDF (the fallback, and the reference the JVM function is tested against)."""
    from pyspark.sql import functions as F

    udf = F.arrow_udf(_partition_udf_body, "int")
    return udf(key.cast("binary"), F.lit(int(num_partitions)))
