"""`batch_constant`: a batch's own values (its timestamp, its number) stay out of Spark's generated code,
so the next batch of a connector reuses the compiled code instead of compiling its own."""

from __future__ import annotations

import datetime as dt

from pyspark.sql import functions as F

from ingest.jvm import BATCH_CONSTANT, batch_constant


def _generated_code(df) -> str:
    """The Java code Spark generates for `df` (without the plan tree, which names the values)."""
    plan = df._jdf.queryExecution().executedPlan()
    subtrees = df.sparkSession._jvm.org.apache.spark.sql.execution.debug.package.codegenStringSeq(plan)
    return "\n".join(subtrees.apply(i)._2() for i in range(subtrees.size()))


def _batch(spark, ts_ms: int, version: int, wrap: bool):
    value = (lambda c: batch_constant(c)) if wrap else (lambda c: c)
    return spark.range(10).select(
        F.col("id"),
        value((F.lit(ts_ms) / 1000).cast("timestamp")).alias("timestamp"),
        F.xxhash64(F.col("id"), value(F.lit(version))).alias("spread"),
    )


def test_values_are_kept_and_the_code_is_the_same_for_every_batch(spark):
    first, second = _batch(spark, 1_700_000_000_123, 7, True), _batch(spark, 1_700_000_999_456, 8, True)
    rows = first.orderBy("id").collect()
    assert rows[0]["timestamp"] == dt.datetime(2023, 11, 14, 22, 13, 20, 123000)
    plain = _batch(spark, 1_700_000_000_123, 7, False).orderBy("id").collect()
    assert [r["spread"] for r in rows] == [r["spread"] for r in plain]  # the same hash as the literal's
    assert BATCH_CONSTANT in first._jdf.queryExecution().optimizedPlan().toString()  # not folded away
    assert _generated_code(first) == _generated_code(second)


def test_plain_literals_differ_in_the_code(spark):
    """The reason for it: Spark writes a literal of a primitive type into the code."""
    first, second = _batch(spark, 1_700_000_000_123, 7, False), _batch(spark, 1_700_000_999_456, 8, False)
    assert _generated_code(first) != _generated_code(second)


def test_a_null_constant(spark):
    row = spark.range(1).select(batch_constant(F.lit(None).cast("long")).alias("v")).first()
    assert row["v"] is None
