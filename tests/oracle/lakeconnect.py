"""lakeconnect's side: a chain case through lakeconnect's pipeline, in one Spark job.

The case becomes its records' DataFrame (read from the same JsonConverter payloads the oracle reads),
transformed and serialised exactly as a source connector's batch is (`Pipeline.transform`, then
`Pipeline.serialise`), and collected. A case whose query fails (a converter meeting a value it cannot
write fails the whole job, as the task would stop) answers with that error.
"""
from __future__ import annotations

import base64
import json
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ingest.config.connector import validate_connector
from ingest.config.worker import load_worker
from ingest.records import ERROR, HEADERS, KEY, PARTITION, SEQ, TIMESTAMP, TOPIC, VALUE, RecordBatch
from ingest.records.schema import DECIMAL, ConnectSchema, decimal_from_bytes
from ingest.registry import default_registry
from ingest.runtime.pipeline import Pipeline, union_all

_HEADERS = T.ArrayType(T.StructType([T.StructField("key", T.StringType()), T.StructField("value", T.StringType())]))
# A few rows per case: interpreted expressions cost less than compiling code for each case's, and the
# constraints of big CASE expressions take the optimizer longer than the whole query runs.
_QUICK = {"spark.sql.codegen.wholeStage": "false", "spark.sql.codegen.factoryMode": "NO_CODEGEN",
          "spark.sql.constraintPropagation.enabled": "false"}


def _wire(schema: ConnectSchema, node: Any) -> Any:
    """A JsonConverter payload as JSON that Spark's `from_json` reads into `_wire_type(schema's Spark type)`:
    nulls stay null (as the oracle reads them, `replace.null.with.default=false`), so the converters' own
    default handling is tested. A null where a nested schema is required has no Spark value: ValueError."""
    if node is None:
        return None
    if schema.name == DECIMAL and schema.type == "bytes":
        return str(decimal_from_bytes(base64.b64decode(node), schema.scale))
    if schema.type == "array":
        return [_wire(schema.value_schema, _present(schema.value_schema, v)) for v in node]
    if schema.type == "map":
        pairs = node.items() if isinstance(node, dict) else node
        return [{"key": _wire(schema.key_schema, _present(schema.key_schema, k, always=True)),
                 "value": _wire(schema.value_schema, _present(schema.value_schema, v))} for k, v in pairs]
    if schema.type == "struct":
        return {f.name: _wire(f.schema, _present(f.schema, node.get(f.name), f.name)) for f in schema.fields}
    return node  # dates (days), timestamps (millis) and bytes (base64) are restored in Spark


def _present(schema: ConnectSchema, node: Any, name: str = "an element", always: bool = False) -> Any:
    if node is None and (always or not schema.optional):
        raise ValueError(f"null value for required field {name}: a Spark row of the schema cannot hold it")
    return node


def _wire_type(data_type: T.DataType) -> T.DataType:
    """The type `from_json` reads a value of `data_type` as: dates and timestamps as numbers, decimals, bytes
    and schemaless values as text, maps as arrays of entries (JSON object keys can only be strings)."""
    if isinstance(data_type, T.DateType):
        return T.IntegerType()
    if isinstance(data_type, T.TimestampType):
        return T.LongType()
    if isinstance(data_type, (T.DecimalType, T.BinaryType, T.VariantType, T.NullType)):
        return T.StringType()
    if isinstance(data_type, T.ArrayType):
        return T.ArrayType(_wire_type(data_type.elementType))
    if isinstance(data_type, T.MapType):
        return T.ArrayType(T.StructType([T.StructField("key", _wire_type(data_type.keyType)),
                                         T.StructField("value", _wire_type(data_type.valueType))]))
    if isinstance(data_type, T.StructType):
        return T.StructType([T.StructField(f.name, _wire_type(f.dataType)) for f in data_type.fields])
    return data_type


def _restore(sql: str, data_type: T.DataType, depth: int = 0) -> str:
    """SQL reading a column read as `_wire_type(data_type)` back as `data_type` (SQL rather than Column
    calls: one call to the JVM for a whole schema instead of hundreds)."""
    if _wire_type(data_type) == data_type:
        return sql
    if isinstance(data_type, T.NullType):
        return "NULL"
    if isinstance(data_type, T.DateType):
        return f"date_from_unix_date({sql})"
    if isinstance(data_type, T.TimestampType):
        return f"timestamp_millis({sql})"
    if isinstance(data_type, T.DecimalType):
        return f"CAST({sql} AS {data_type.simpleString()})"
    if isinstance(data_type, T.BinaryType):
        return f"unbase64({sql})"
    if isinstance(data_type, T.VariantType):
        return f"parse_json({sql})"
    x = f"x{depth}"
    if isinstance(data_type, T.ArrayType):
        element = _required(_restore(x, data_type.elementType, depth + 1), data_type.elementType,
                            data_type.containsNull)
        return f"transform({sql}, {x} -> {element})"
    if isinstance(data_type, T.MapType):
        key = _required(_restore(f"{x}.key", data_type.keyType, depth + 1), data_type.keyType, False)
        value = _required(_restore(f"{x}.value", data_type.valueType, depth + 1), data_type.valueType,
                          data_type.valueContainsNull)
        return f"map_from_entries(transform({sql}, {x} -> named_struct('key', {key}, 'value', {value})))"
    fields = ", ".join(f"{_string(f.name)}, "
                       f"{_required(_restore(f'{sql}.{_name(f.name)}', f.dataType, depth), f.dataType, f.nullable)}"
                       for f in data_type.fields)
    return f"CASE WHEN {sql} IS NOT NULL THEN named_struct({fields}) END"


def _required(sql: str, data_type: T.DataType, nullable: bool) -> str:
    """A required field as Spark knows one, not nullable (`_wire` refused nulls there already)."""
    return sql if nullable else f"coalesce({sql}, {_zero(data_type)})"


def _zero(data_type: T.DataType) -> str:
    """A value of the type that Spark knows is never null."""
    if isinstance(data_type, T.StructType):
        return "named_struct(" + ", ".join(f"{_string(f.name)}, {_zero(f.dataType)}" for f in data_type.fields) + ")"
    if isinstance(data_type, T.ArrayType):
        return f"array_repeat({_zero(data_type.elementType)}, 0)"
    if isinstance(data_type, T.MapType):
        return (f"map_from_arrays(array_repeat({_zero(data_type.keyType)}, 0), "
                f"array_repeat({_zero(data_type.valueType)}, 0))")
    if isinstance(data_type, T.DateType):
        return "date_from_unix_date(0)"
    if isinstance(data_type, T.TimestampType):
        return "timestamp_millis(0)"
    if isinstance(data_type, T.BinaryType):
        return "X''"
    if isinstance(data_type, T.StringType):
        return "''"
    if isinstance(data_type, T.BooleanType):
        return "false"
    return f"CAST(0 AS {data_type.simpleString()})"


def _name(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _string(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _batch(spark, case: dict) -> RecordBatch:
    """The case's records as a batch read from one JSON literal: the rows live in the plan, so reading them
    needs no Python worker (a DataFrame made from Python rows does), and a few calls build any case."""
    key_schema = ConnectSchema.from_json(case["keySchema"]) if case["keySchema"] is not None else None
    value_schema = ConnectSchema.from_json(case["valueSchema"]) if case["valueSchema"] is not None else None
    key_type = key_schema.to_spark_type() if key_schema else T.VariantType()
    if key_schema is None and all(r["key"] is None for r in case["records"]):
        key_type = T.NullType()  # no key at all, as a source without keys (FileStreamSource) gives its batches
    value_type = value_schema.to_spark_type() if value_schema else T.VariantType()
    rows = []
    for seq, r in enumerate(case["records"]):
        rows.append({
            TOPIC: r["topic"], PARTITION: r.get("partition"),
            KEY: _wire(key_schema, r["key"]) if key_schema else _schemaless(r["key"]),
            VALUE: _wire(value_schema, r["value"]) if value_schema else _schemaless(r["value"]),
            HEADERS: [{"key": k, "value": v} for k, v in r.get("headers", [])],
            TIMESTAMP: r.get("timestamp"), SEQ: seq})
    types = {TOPIC: T.StringType(), PARTITION: T.IntegerType(), KEY: key_type, VALUE: value_type,
             HEADERS: _HEADERS, TIMESTAMP: T.TimestampType(), SEQ: T.LongType()}
    wire = T.ArrayType(T.StructType([T.StructField(name, _wire_type(t)) for name, t in types.items()]))
    df = spark.range(1).select(F.inline(F.from_json(F.lit(json.dumps(rows)), wire)))
    df = df.selectExpr(*[f"{_restore(_name(name), t)} AS {_name(name)}" for name, t in types.items()])
    # The exact Spark types of the schemas (what was read may be looser about nulls).
    if df.schema != T.StructType([T.StructField(n, t) for n, t in types.items()]):
        df = df.select(*[F.col(n).cast(t) for n, t in types.items()])
    return RecordBatch(df, key_schema, value_schema)


def _schemaless(node: Any) -> str | None:
    return None if node is None else json.dumps(node)


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
        # The error column named once, as the runtime's guard names it: a plain `isNotNull()` filter is
        # pushed down the projections with the column's whole expression copied into it at each use.
        failed = F.transform(F.array(F.col(ERROR)), lambda e: e.isNotNull())[0] if ERROR in df.columns \
            else F.lit(False)
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
    return union_all(frames)


def answer(spark, case: dict) -> dict[str, Any]:
    """The case's answer from lakeconnect, in the oracle's form ({"records": [...]} or {"error": ...}): one
    Spark job. A query that fails (a converter meeting a value it cannot write stops the whole batch, as the
    task would stop) answers with its error."""
    try:
        df = _frame(spark, case)
    except Exception as e:  # noqa: BLE001 - a config or schema error is this case's answer
        return {"error": {"class": type(e).__name__, "message": str(e)}}
    saved = {k: spark.conf.get(k, None) for k in _QUICK}
    for k, v in _QUICK.items():
        spark.conf.set(k, v)
    try:
        rows = df.collect()
    except Exception as e:  # noqa: BLE001 - the batch failed, as the task would
        return {"error": {"class": type(e).__name__, "message": _first_line(e)}}
    finally:
        for k, v in saved.items():
            spark.conf.unset(k) if v is None else spark.conf.set(k, v)
    got = {row["seq"]: row for row in rows}
    return {"records": [_record(got.get(i)) for i in range(len(case["records"]))]}


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


# --- "read" cases: a topic's bytes through the converters, as a sink task reads them ---------------------

_READ_TYPE = T.StructType([
    T.StructField(TOPIC, T.StringType()), T.StructField(PARTITION, T.IntegerType()),
    T.StructField("offset", T.LongType()), T.StructField(KEY, T.BinaryType()), T.StructField(VALUE, T.BinaryType()),
    T.StructField(HEADERS, T.ArrayType(T.StructType([T.StructField("key", T.StringType()),
                                                     T.StructField("value", T.BinaryType())]))),
    T.StructField(TIMESTAMP, T.TimestampType()), T.StructField("timestamp_type", T.StringType())])
_LOGICAL = {"org.apache.kafka.connect.data.Date": "date", "org.apache.kafka.connect.data.Time": "time",
            "org.apache.kafka.connect.data.Timestamp": "timestamp"}


def describe(schema: ConnectSchema | None) -> str:
    """A Connect schema as the oracle's Read.describe writes Kafka's (`optional boolean`, `array<int8>`)."""
    if schema is None:
        return "null"
    prefix = "optional " if schema.optional else ""
    if schema.name == DECIMAL:
        return f"{prefix}decimal({dict(schema.parameters).get('scale')})"
    if schema.name in _LOGICAL:
        return prefix + _LOGICAL[schema.name]
    if schema.type == "array":
        return f"{prefix}array<{describe(schema.value_schema)}>"
    if schema.type == "map":
        return f"{prefix}map<{describe(schema.key_schema)},{describe(schema.value_schema)}>"
    return prefix + schema.type


def read_answer(spark, case: dict) -> dict[str, Any]:
    """A "read" case's answer from lakeconnect (`Pipeline.deserialise`), with failures tolerated so that each
    bad record answers with its own error, as Kafka's converters fail one record at a time."""
    from connectors.transforms.headers import header_text
    from ingest.runtime.tolerance import ORIGIN

    try:
        pipeline = _pipeline({**case["config"], "errors.tolerance": "all"})
        rows = [(r.get("topic", "test"), 0, i, _bytes(r.get("key")), _bytes(r.get("value")),
                 [(k, _bytes(v)) for k, v in r.get("headers", [])], None, "CreateTime")
                for i, r in enumerate(case["records"])]
        batches, failed = pipeline.deserialise(spark.createDataFrame(rows, _READ_TYPE))
        converter = pipeline.header_converter
        answers: dict[int, dict[str, Any]] = {}
        for batch in batches:
            df = batch.df
            schemas = getattr(converter, "header_schemas", None)
            schema_column = schemas(F.col(ORIGIN)[HEADERS]) if schemas else F.lit(None)
            texts = [header_text(df[c], df.schema[c].dataType, s).alias(c)
                     for c, s in ((KEY, batch.key_schema), (VALUE, batch.value_schema))]
            for row in df.select("offset", *texts, HEADERS, schema_column.alias("schemas")).collect():
                header_schemas = [h["schema"] for h in row["schemas"] or []] if schemas else None
                answers[row["offset"]] = {
                    KEY: {"schema": describe(batch.key_schema), "text": row[KEY]},
                    VALUE: {"schema": describe(batch.value_schema), "text": row[VALUE]},
                    HEADERS: [[h["key"], header_schemas[i] if header_schemas else None, h["value"]]
                              for i, h in enumerate(row[HEADERS] or [])]}
        if failed is not None:
            for row in failed.select("offset", F.col(ERROR)["message"].alias("message")).collect():
                answers[row["offset"]] = {"error": {"class": "DataException", "message": row["message"]}}
    except Exception as e:  # noqa: BLE001 - the batch failed, as the task would
        return {"error": {"class": type(e).__name__, "message": _first_line(e)}}
    return {"records": [answers.get(i, {"dropped": True}) for i in range(len(case["records"]))]}


def _bytes(b64: str | None) -> bytes | None:
    return None if b64 is None else base64.b64decode(b64)
