"""A faster way to the same values: JsonConverter records read by two Java expressions
(`io.lakeconnect.JsonEnvelope`, `io.lakeconnect.JsonPayload`), each one scan of the record's bytes.

Reading with schemas (`json_converter`) parses every record twice through Spark's JSON reader: once to a
map, for the distinct embedded schemas and the envelope checks, then to a VARIANT whose `variant_get`
gives the JSON form of the fields, and a pass of column expressions brings the logical types to their
Spark values (`_json_read`). `schema_text` takes the first parse's place: the raw text of the schema
member. For the commonest records (a flat struct of integers, floats, booleans, strings, bytes, dates,
timestamps and decimals, as a table row is) `payload` reads the payload straight into the final
struct. Each hands a record back whenever it is not sure to give what the general reading gives:
malformed JSON or UTF-8, duplicate or extra members, a value of another JSON kind than its field's or
out of its range, a null where the schema forbids one. Those records take the general expressions,
which also raise the errors, so results are the same record for record.
"""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

from connectors.converters._json_read import JsonOptions, default_column
from ingest.records.schema import DATE, DECIMAL, TIME, TIMESTAMP, ConnectSchema, quote

ENVELOPE_FUNCTION = "lakeconnect_json_schema_text"
ENVELOPE_BUILDER = "io.lakeconnect.JsonEnvelopeBuilder"
PAYLOAD_FUNCTION = "lakeconnect_json_payload"
PAYLOAD_BUILDER = "io.lakeconnect.JsonPayloadBuilder"
UNSURE = "\u0001"
"""`schema_text` of a record only the strict reading can judge (no schema text starts with it)."""

_KINDS = {"int8": "c", "int16": "h", "int32": "i", "int64": "l", "float32": "f", "float64": "d",
          "boolean": "b", "string": "s", "bytes": "y"}


def schema_text(value: Column) -> Column:
    """The raw text of the record's schema member; null for a null record or a null schema; UNSURE."""
    return F.call_function(ENVELOPE_FUNCTION, value)


def schema_text_of(spark, value: bytes | None) -> str | None:
    """`schema_text` of one record's bytes, by the same Java code on the driver (no Spark job)."""
    if value is None:
        return None
    text = spark._jvm.io.lakeconnect.JsonEnvelope.schemaText(bytearray(value))
    return None if text is None else text.toString()


def payload_spec(schema: ConnectSchema, options: JsonOptions) -> str | None:
    """The JsonPayload spec of records with `schema`, or None when the Java expression does not read them
    (nested values, arrays, maps, a primitive record)."""
    if schema.type != "struct" or not schema.fields:
        return None
    lines = ["n" if schema.optional and not _takes_default(schema, options) else "x"]
    for field in schema.fields:
        kind = _kind(field.schema)
        if kind is None:
            return None
        nulls = "n" if field.schema.optional or _takes_default(field.schema, options) else "x"
        lines.append(f"{kind} {nulls} {quote(field.name)}")
    return "\n".join(lines)


def _kind(schema: ConnectSchema) -> str | None:
    logical = schema.logical
    if logical == DATE:
        return "D"
    if logical == TIMESTAMP:
        return "T"
    if logical == DECIMAL:
        precision, scale = schema.precision or 38, schema.scale
        return f"M{precision}.{scale}" if 0 <= scale <= precision <= 38 and precision > 0 else None
    if logical not in (None, TIME):
        return None
    return _KINDS.get(schema.type)


def _takes_default(schema: ConnectSchema, options: JsonOptions) -> bool:
    return schema.default is not None and options.replace_null_with_default


def payload(value: Column, spec: str) -> Column:
    """struct<handled, value>: the record's value, when `handled`; otherwise the general path reads it."""
    return F.call_function(PAYLOAD_FUNCTION, value, F.lit(spec))


def with_defaults(value: Column, schema: ConnectSchema, options: JsonOptions) -> Column:
    """`payload`'s value with each null field that has a default replaced by it (the Java expression
    leaves them null: defaults can be of any kind, Spark's literals make them)."""
    defaults = {f.name for f in schema.fields if _takes_default(f.schema, options)}
    if not defaults:
        return value
    fields = [(F.coalesce(value.getField(f.name), default_column(f.schema)) if f.name in defaults else value.getField(f.name)).alias(f.name)
              for f in schema.fields]
    return F.when(value.isNull(), F.lit(None)).otherwise(F.struct(*fields))


def available() -> bool:
    from pyspark.sql import SparkSession

    from ingest.jvm import java_expression

    spark = SparkSession.getActiveSession()
    return (spark is not None and java_expression(spark, ENVELOPE_FUNCTION, ENVELOPE_BUILDER)
            and java_expression(spark, PAYLOAD_FUNCTION, PAYLOAD_BUILDER))
