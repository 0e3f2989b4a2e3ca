"""Column expressions and function registrations kept per Spark session (`ingest.spark.SessionCache`,
`ingest.jvm`): built once, reused by later batches of the same session, never across sessions."""

from __future__ import annotations

from pyspark.sql import functions as F

from ingest.jvm import session_key
from ingest.spark import SessionCache


def test_a_value_is_built_once_per_key_and_session(spark):
    cache, built = SessionCache(size=2), []

    def build(n):
        def make():
            built.append(n)
            return F.lit(n)
        return make

    a = cache.get(spark, ("a",), build(1))
    assert cache.get(spark, ("a",), build(99)) is a and built == [1]
    assert spark.range(1).select(a.alias("v")).first()["v"] == 1
    cache.get(spark, ("b",), build(2))
    cache.get(spark, ("c",), build(3))  # the oldest (a) goes
    cache.get(spark, ("a",), build(4))
    assert built == [1, 2, 3, 4]
    other = spark.newSession()
    assert session_key(other) != session_key(spark)
    cache.get(other, ("a",), build(5))
    assert built == [1, 2, 3, 4, 5]


def test_a_registered_function_is_asked_for_once_per_session(spark, monkeypatch):
    from pyspark.sql.catalog import Catalog

    from ingest.jvm import BATCH_CONSTANT, java_expression

    asked = []
    real = Catalog.functionExists
    monkeypatch.setattr(Catalog, "functionExists", lambda self, name, *a: asked.append(name) or real(self, name, *a))
    other = spark.newSession()  # its own function registry: nothing registered there yet
    for _ in range(3):
        assert java_expression(other, BATCH_CONSTANT, "io.lakeconnect.BatchConstantBuilder")
    assert asked == [BATCH_CONSTANT]
    assert other.range(1).select(F.call_function(BATCH_CONSTANT, F.lit(7)).alias("v")).first()["v"] == 7
