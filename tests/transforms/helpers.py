"""Build record batches from Python values, run one transform as the runtime does, read the records back."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pyspark.sql import functions as F
from pyspark.sql import types as T

from ingest.records import ERROR, HEADERS, KEY, PARTITION, SEQ, TIMESTAMP, TOPIC, VALUE, RecordBatch
from ingest.records.schema import ConnectSchema
from ingest.runtime.pipeline import Pipeline
from ingest.runtime.tolerance import ErrorPolicy

SCHEMALESS = object()
"""Pass as a schema to build a schemaless part: its Python values become VARIANTs (Kafka's Map/List/...)."""

_HEADERS_TYPE = T.ArrayType(T.StructType([T.StructField("key", T.StringType()), T.StructField("value", T.StringType())]))


def _spark_type(schema: Any) -> T.DataType:
    if schema is SCHEMALESS:
        return T.StringType()  # JSON text, parsed to a VARIANT below
    if schema is None:
        return T.NullType()
    return schema.to_spark_type()


def batch_of(spark, records: list[Mapping[str, Any]], key_schema: Any = None, value_schema: Any = SCHEMALESS,
             ) -> RecordBatch:
    """A batch of records given as dicts with `key`, `value`, and optionally `topic` (default 'test'),
    `partition`, `headers` ([(key, value)]), `timestamp` (datetime). A part with schema SCHEMALESS takes
    JSON-able Python values; a part with a ConnectSchema takes values of its Spark type (dicts for structs)."""
    fields = [
        T.StructField(TOPIC, T.StringType(), False), T.StructField(PARTITION, T.IntegerType()),
        T.StructField(KEY, _spark_type(key_schema)), T.StructField(VALUE, _spark_type(value_schema)),
        T.StructField(HEADERS, _HEADERS_TYPE), T.StructField(TIMESTAMP, T.TimestampType()),
        T.StructField(SEQ, T.LongType()),
    ]
    rows = []
    for i, r in enumerate(records):
        key, value = r.get("key"), r.get("value")
        if key_schema is SCHEMALESS and key is not None:
            key = json.dumps(key)
        if value_schema is SCHEMALESS and value is not None:
            value = json.dumps(value)
        rows.append((r.get("topic", "test"), r.get("partition"), key, value, r.get("headers"), r.get("timestamp"), i))
    df = spark.createDataFrame(rows, T.StructType(fields))
    if key_schema is SCHEMALESS:
        df = df.withColumn(KEY, F.parse_json(F.col(KEY)))
    if value_schema is SCHEMALESS:
        df = df.withColumn(VALUE, F.parse_json(F.col(VALUE)))
    return RecordBatch(df, None if key_schema in (None, SCHEMALESS) else key_schema,
                       None if value_schema in (None, SCHEMALESS) else value_schema)


def make(cls: type, config: Mapping[str, str]):
    """The transform (or predicate) built from its settings, validated as the runtime validates them."""
    return cls(cls.config_def().parse(dict(config), strict=True, source=cls.__name__))


def apply(transform, batch: RecordBatch, predicate=None, negate: bool = False) -> list[RecordBatch]:
    """Run `transform` the way the runtime does (DataError -> records failed; predicate scoping)."""
    pipeline = Pipeline(None, None, None, [("t", transform, predicate, negate)], ErrorPolicy())
    return pipeline.transform([batch])


def apply_one(transform, batch: RecordBatch) -> RecordBatch:
    out = apply(transform, batch)
    assert len(out) == 1
    return out[0]


def _py(v: Any) -> Any:
    if hasattr(v, "toPython"):
        return v.toPython()
    if hasattr(v, "asDict"):
        return {k: _py(x) for k, x in v.asDict(recursive=False).items()}
    if isinstance(v, list):
        return [_py(x) for x in v]
    if isinstance(v, dict):
        return {k: _py(x) for k, x in v.items()}
    return v


def records(batch: RecordBatch) -> list[dict[str, Any]]:
    """The records of a batch in their original order, as dicts of Python values (VARIANTs as Python
    values, structs as dicts). `error` is the failure message of a failed record (else absent)."""
    df = batch.df
    out = []
    for row in df.orderBy(SEQ).collect():
        d = {TOPIC: row[TOPIC], KEY: _py(row[KEY]), VALUE: _py(row[VALUE]), TIMESTAMP: row[TIMESTAMP],
             HEADERS: [(h["key"], h["value"]) for h in row[HEADERS]] if row[HEADERS] is not None else None}
        if PARTITION in df.columns:
            d[PARTITION] = row[PARTITION]
        if ERROR in df.columns and row[ERROR] is not None:
            d["error"] = row[ERROR]["message"]
        out.append(d)
    return out


def schema(batch: RecordBatch, part: str = VALUE) -> ConnectSchema | None:
    return batch.key_schema if part == KEY else batch.value_schema
