"""lakeconnect's side: the corpus's chain cases through lakeconnect's pipeline, in few Spark jobs.

Each case becomes its records' DataFrame (built from the same JsonConverter payloads the oracle reads),
transformed and serialised exactly as a source connector's batch is (`Pipeline.transform`, then
`Pipeline.serialise`); the cases' rows are unioned and collected together. A case whose query fails (a
converter meeting a value it cannot write fails the whole job, as the task would stop) is found by
halving the group that failed, and answers with that error.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import logging
import time
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ingest.config.connector import validate_connector
from ingest.config.worker import load_worker
from ingest.records import ERROR, HEADERS, KEY, PARTITION, SEQ, TIMESTAMP, TOPIC, VALUE, RecordBatch
from ingest.records.schema import DATE, DECIMAL, TIMESTAMP as TIMESTAMP_NAME, ConnectSchema, decimal_from_bytes
from ingest.registry import default_registry
from ingest.runtime.pipeline import Pipeline, union_all

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_HEADERS = T.ArrayType(T.StructType([T.StructField("key", T.StringType()), T.StructField("value", T.StringType())]))
GROUP = 24  # cases per Spark job: bigger plans take Spark's optimizer longer than the jobs they save
# A few rows per case: interpreted expressions cost less than compiling code for each case's, and the
# constraints of a union of big CASE expressions take the optimizer longer than the whole query runs.
_QUICK = {"spark.sql.codegen.wholeStage": "false", "spark.sql.codegen.factoryMode": "NO_CODEGEN",
          "spark.sql.constraintPropagation.enabled": "false"}
log = logging.getLogger(__name__)


def python_value(schema: ConnectSchema, node: Any) -> Any:
    """A JsonConverter payload as the Python value of the schema's Spark type; nulls stay null (as the oracle
    reads them, `replace.null.with.default=false`), so the converters' own default handling is tested."""
    if node is None:
        return None
    if schema.name == DATE and schema.type == "int32":
        return (_EPOCH + dt.timedelta(days=node)).date()
    if schema.name == TIMESTAMP_NAME and schema.type == "int64":
        return _EPOCH + dt.timedelta(milliseconds=node)
    if schema.name == DECIMAL and schema.type == "bytes":
        return decimal_from_bytes(base64.b64decode(node), schema.scale)
    if schema.type == "bytes":
        return base64.b64decode(node)
    if schema.type == "array":
        return [python_value(schema.value_schema, v) for v in node]
    if schema.type == "map":
        pairs = node.items() if isinstance(node, dict) else node
        return {python_value(schema.key_schema, k): python_value(schema.value_schema, v) for k, v in pairs}
    if schema.type == "struct":
        return {f.name: python_value(f.schema, node.get(f.name)) for f in schema.fields}
    return node


def _literal(value: Any, data_type: T.DataType) -> Column:
    """`value` (a Python value of `data_type`) as a Spark literal of exactly that type."""
    if value is None:
        return F.lit(None).cast(data_type)
    if isinstance(data_type, T.VariantType):
        return F.parse_json(F.lit(json.dumps(value)))
    if isinstance(data_type, T.ArrayType):
        return F.array(*[_literal(v, data_type.elementType) for v in value]).cast(data_type)
    if isinstance(data_type, T.MapType):
        parts = [_literal(p, t) for k, v in value.items()
                 for p, t in ((k, data_type.keyType), (v, data_type.valueType))]
        return F.create_map(*parts).cast(data_type)
    if isinstance(data_type, T.StructType):
        fields = [_literal(value.get(f.name), f.dataType).alias(f.name) for f in data_type.fields]
        return F.struct(*fields).cast(data_type)
    if isinstance(data_type, T.BinaryType):
        return F.lit(bytearray(value))
    return F.lit(value).cast(data_type)


def _batch(spark, case: dict) -> RecordBatch:
    """The case's records as a batch built of literals: the rows live in the plan, so reading them needs
    no Python worker (a DataFrame made from Python rows does, one task per partition of every case)."""
    key_schema = ConnectSchema.from_json(case["keySchema"]) if case["keySchema"] is not None else None
    value_schema = ConnectSchema.from_json(case["valueSchema"]) if case["valueSchema"] is not None else None
    key_type = key_schema.to_spark_type() if key_schema else T.VariantType()
    value_type = value_schema.to_spark_type() if value_schema else T.VariantType()
    rows = []
    for seq, r in enumerate(case["records"]):
        ts = r.get("timestamp")
        key = python_value(key_schema, r["key"]) if key_schema else r["key"]
        value = python_value(value_schema, r["value"]) if value_schema else r["value"]
        rows.append(F.struct(
            F.lit(r["topic"]).alias(TOPIC), F.lit(r.get("partition")).cast("int").alias(PARTITION),
            _literal(key, key_type).alias(KEY), _literal(value, value_type).alias(VALUE),
            _literal([{"key": k, "value": v} for k, v in r.get("headers", [])], _HEADERS).alias(HEADERS),
            _literal(None if ts is None else _EPOCH + dt.timedelta(milliseconds=ts),
                     T.TimestampType()).alias(TIMESTAMP),
            F.lit(seq).cast("long").alias(SEQ)))
    df = spark.range(1).select(F.inline(F.array(*rows)))
    # The exact Spark types of the schemas (the literals' nullability may be looser).
    df = df.withColumns({KEY: F.col(KEY).cast(key_type), VALUE: F.col(VALUE).cast(value_type)})
    return RecordBatch(df, key_schema, value_schema)


def _pipeline(config: dict[str, str]) -> Pipeline:
    worker = load_worker(None, {"file.connectors.enable": "true"})
    setup = validate_connector({"name": "oracle", "connector.class": "FileStreamSource", "file": "/dev/null",
                                "topic": "oracle", **config}, worker, default_registry())
    return Pipeline.build(setup)


def _frame(spark, case: dict) -> DataFrame:
    """The case's records after lakeconnect's chain and converters: one row per record kept or failed."""
    pipeline = _pipeline(case["config"])
    batch = _batch(spark, case)
    frames = []
    for batch in pipeline.transform([batch]):
        df = batch.df
        failed = F.col(ERROR).isNotNull() if ERROR in df.columns else F.lit(False)
        if ERROR in df.columns:
            frames.append(df.filter(failed).select(
                F.col(SEQ).alias("seq"), F.lit(None).cast("string").alias(TOPIC),
                F.lit(None).cast("int").alias(PARTITION),
                F.lit(None).cast("binary").alias(KEY), F.lit(None).cast("binary").alias(VALUE),
                F.lit(None).cast("array<struct<key:string,value:binary>>").alias(HEADERS),
                F.lit(None).cast("long").alias(TIMESTAMP), F.col(ERROR)["message"].alias("error")))
        written = pipeline.serialise(batch.with_df(df.filter(~failed)))
        frames.append(written.select(
            F.col(SEQ).alias("seq"), TOPIC, PARTITION, KEY, VALUE, HEADERS,
            F.unix_millis(F.col(TIMESTAMP)).alias(TIMESTAMP), F.lit(None).cast("string").alias("error")))
    return union_all(frames).withColumn("case", F.lit(case["id"]))


def run(spark, cases: list[dict], expect_failure: set[str] = frozenset()) -> dict[str, dict[str, Any]]:
    """Every case's answer from lakeconnect, in the oracle's form ({"records": [...]} or {"error": ...}).

    `expect_failure`: ids of cases likely to fail their query (Kafka failed a record of them); each runs in a
    job of its own rather than failing a group's. Only the batching depends on it, never an answer."""
    answers: dict[str, dict[str, Any]] = {}
    planned: list[tuple[dict, DataFrame]] = []
    started = time.monotonic()
    for case in cases:
        try:
            planned.append((case, _frame(spark, case)))
        except Exception as e:  # noqa: BLE001 - a config or schema error is this case's answer
            answers[case["id"]] = {"error": {"class": type(e).__name__, "message": str(e)}}
    log.warning("oracle: %d cases planned in %.0f s", len(cases), time.monotonic() - started)
    saved = {k: spark.conf.get(k, None) for k in _QUICK}
    for k, v in _QUICK.items():
        spark.conf.set(k, v)
    try:
        alone = [p for p in planned if p[0]["id"] in expect_failure]
        grouped = [p for p in planned if p[0]["id"] not in expect_failure]
        for start in range(0, len(grouped), GROUP):
            _collect(grouped[start:start + GROUP], answers)
        for p in alone:
            _collect([p], answers)
    finally:
        for k, v in saved.items():
            spark.conf.unset(k) if v is None else spark.conf.set(k, v)
    return answers


def _collect(group: list[tuple[dict, DataFrame]], answers: dict) -> None:
    started = time.monotonic()
    try:
        rows = union_all([df for _, df in group]).collect()
        log.warning("oracle: %d cases collected in %.0f s", len(group), time.monotonic() - started)
    except Exception as e:  # noqa: BLE001 - one case's failed query fails the group: find it by halving
        if len(group) == 1:
            answers[group[0][0]["id"]] = {"error": {"class": type(e).__name__, "message": _first_line(e)}}
            return
        half = len(group) // 2
        _collect(group[:half], answers)
        _collect(group[half:], answers)
        return
    by_case: dict[str, dict[int, Any]] = {case["id"]: {} for case, _ in group}
    for row in rows:
        by_case[row["case"]][row["seq"]] = row
    for case, _ in group:
        got = by_case[case["id"]]
        answers[case["id"]] = {"records": [_record(got.get(i)) for i in range(len(case["records"]))]}


def _record(row) -> dict[str, Any]:
    if row is None:
        return {"dropped": True}
    if row["error"] is not None:
        return {"error": {"class": "DataException", "message": row["error"]}}
    return {"topic": row[TOPIC], "partition": row[PARTITION], "timestamp": row[TIMESTAMP],
            "key": _b64(row[KEY]), "value": _b64(row[VALUE]),
            "headers": [[h["key"], _b64(h["value"])] for h in row[HEADERS] or []]}


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(bytes(data)).decode("ascii")


def _first_line(e: Exception) -> str:
    """The failure's message, short: Spark's carry the whole JVM stack."""
    text = " ".join(str(e).split())
    return text[:500] or type(e).__name__
