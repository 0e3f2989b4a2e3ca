"""The shape of the plan a chain of transforms compiles to: what keeps the chain fast, checked as plan
structure (speed itself is measured by tests/bench/bench_transforms.py, not asserted here).

A chain over records whose value Spark knows is never null (a source's struct) must leave each costly
field expression in the optimized plan once, and every projection must run as generated code.
"""

from __future__ import annotations

import re

from pyspark.sql import functions as F

from ingest.config.connector import validate_connector
from ingest.config.worker import load_worker
from ingest.records import RecordBatch
from ingest.records.schema import INT64_SCHEMA, OPTIONAL_TIMESTAMP_SCHEMA, STRING_SCHEMA, date, struct
from ingest.registry import default_registry
from ingest.runtime.pipeline import Pipeline, union_all
from tests.bench.bench_transforms import CHAIN as BOOK_CHAIN  # the benchmark's chain: the book's five transforms


def _serialised(spark, tmp_path, chain):
    worker = load_worker(None, {"lake.root": str(tmp_path), "file.connectors.enable": "true"})
    setup = validate_connector({"name": "shape", "connector.class": "FileStreamSource", "file": "/dev/null",
                                "topic": "books", "key.converter": "org.apache.kafka.connect.json.JsonConverter",
                                "value.converter": "org.apache.kafka.connect.json.JsonConverter", **chain},
                               worker, default_registry())
    pipeline = Pipeline.build(setup)
    value_schema = struct("kafka_books", ("id", INT64_SCHEMA), ("title", STRING_SCHEMA), ("source", STRING_SCHEMA),
                          ("published", date()), ("timestamp", OPTIONAL_TIMESTAMP_SCHEMA))
    rows = spark.range(5).select(
        F.lit("books").alias("topic"), F.lit(None).cast("int").alias("partition"), F.lit(None).cast("void").alias("key"),
        F.struct(F.col("id"), F.concat(F.lit("title "), F.col("id").cast("string")).alias("title"),
                 F.lit("jdbc").alias("source"), F.date_add(F.lit("2020-01-01").cast("date"), F.col("id").cast("int"))
                 .alias("published"), F.timestamp_millis(F.lit(1656234290000) + F.col("id")).alias("timestamp"))
        .alias("value"),
        F.lit(None).cast("array<struct<key:string,value:string>>").alias("headers"),
        F.current_timestamp().alias("timestamp"), F.col("id").alias("seq"))
    batches = pipeline.transform([RecordBatch(rows, None, value_schema, topics=("books",))])
    return union_all([pipeline.serialise(b).drop("topic") for b in batches])


def test_book_chain_formats_each_date_once_in_generated_code(spark, tmp_path):
    df = _serialised(spark, tmp_path, BOOK_CHAIN)
    qe = df._jdf.queryExecution()
    optimized = qe.optimizedPlan().toString()
    assert optimized.count("date_format(") == 1, optimized
    assert "lambdafunction" not in optimized, optimized  # a lambda turns generated code off for its projection
    physical = qe.executedPlan().toString()
    projects = [line for line in physical.splitlines() if re.search(r"\bProject \[", line)]
    assert projects and all(re.search(r"\*\(\d+\) Project", line) for line in projects), physical
    first = df.orderBy("seq").first()
    assert bytes(first["key"]).decode() == '{"schema":{"type":"int64","optional":false},"payload":0}'
    assert b'"origin":"jdbc","published":"2020-01-01"' in bytes(first["value"])
    assert bytes(first["value"]).endswith(b'"pipeline":"bench"}}')


def test_without_transforms_an_absent_key_is_a_null_literal(spark, tmp_path):
    """No key at all serialises to a typed null, so Spark prunes the key's partition hash from the plan."""
    df = _serialised(spark, tmp_path, {})
    assert df.schema["key"].dataType.simpleString() == "binary"
    assert "null AS key" in df._jdf.queryExecution().optimizedPlan().toString()
    assert df.filter(F.col("key").isNotNull()).count() == 0
