"""A faster way to the same bytes: struct records written by one Java expression (`io.lakeconnect.JsonRecord`).

`render` (in `_json_write`) builds Kafka's JSON text from Spark expressions: the fields brought to their
JSON form, `to_json`, then the envelope concatenated around it and the text cast to bytes, each step a
copy of the record. For the commonest records (a struct of integers, booleans, strings, bytes, dates,
timestamps, decimals and floats, as a table row is, and structs of such structs, as a Debezium change
event is) the Java expression writes the final bytes in one pass from Spark's internal row. It hands a
record back (null) whenever it is not sure to write what `render` writes: a null where the schema wants
a default or forbids one, a string that is not valid UTF-8, a float that is NaN or infinite (Jackson
quotes them). Those records take `render`, which also raises the errors, so results are the same record
for record.
"""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from connectors.converters._json_read import JsonOptions
from ingest.records.schema import DATE, DECIMAL, NUMERIC, TIMESTAMP, ConnectSchema, quote

FUNCTION = "lakeconnect_json_record"
BUILDER = "io.lakeconnect.JsonRecordBuilder"
_INTEGERS = {T.LongType: "l", T.IntegerType: "i", T.ShortType: "h", T.ByteType: "c"}
_INTEGER_SCHEMAS = ("int8", "int16", "int32", "int64")


def field_spec(data_type: T.DataType, schema: ConnectSchema, options: JsonOptions) -> str | None:
    """The JsonRecord spec of a struct column of `data_type` under `schema`, or None when the Java
    expression does not write it (maps, arrays, fields out of order, at any depth)."""
    lines = _struct_lines(data_type, schema, options)
    return None if lines is None else "\n".join(lines)


def _struct_lines(data_type: T.DataType, schema: ConnectSchema, options: JsonOptions) -> list[str] | None:
    if schema.type != "struct" or not isinstance(data_type, T.StructType):
        return None
    if [f.name for f in data_type.fields] != [f.name for f in schema.fields]:
        return None
    lines = []
    for spark_field, field in zip(data_type.fields, schema.fields):
        takes_default = field.schema.default is not None and options.replace_null_with_default
        nulls = "n" if field.schema.optional and not takes_default else "x"
        if field.schema.type == "struct":
            inner = _struct_lines(spark_field.dataType, field.schema, options)
            if inner is None:
                return None
            lines += [f"{{ {nulls} {quote(field.name)}", *inner, "}"]
            continue
        kind = _kind(spark_field.dataType, field.schema, options)
        if kind is None:
            return None
        lines.append(f"{kind} {nulls} {quote(field.name)}")
    return lines


def _kind(data_type: T.DataType, schema: ConnectSchema, options: JsonOptions) -> str | None:
    logical = schema.logical
    if logical == DATE:
        return "D" if isinstance(data_type, T.DateType) else None
    if logical == TIMESTAMP:
        return "T" if type(data_type) is T.TimestampType else None
    if logical == DECIMAL:
        if not isinstance(data_type, T.DecimalType):
            return None
        return f"{'N' if options.decimal_format == NUMERIC else 'B'}{data_type.precision}.{data_type.scale}"
    # Time, and a name that is no Kafka logical type (Debezium's io.debezium.time.Date, ...): the primitive.
    if schema.type in _INTEGER_SCHEMAS:
        return _INTEGERS.get(type(data_type))
    if schema.type == "boolean" and isinstance(data_type, T.BooleanType):
        return "b"
    if schema.type == "float64" and isinstance(data_type, T.DoubleType):
        return "d"
    if schema.type == "float32" and isinstance(data_type, T.FloatType):
        return "f"
    if schema.type == "string" and type(data_type) is T.StringType and data_type == T.StringType():
        return "s"
    if schema.type == "bytes" and isinstance(data_type, T.BinaryType):
        return "y"
    return None


def json_record(value: Column, spec: str, prefix: str, suffix: str) -> Column:
    """The record's bytes (prefix + payload + suffix), null where the general expression must write it."""
    return F.call_function(FUNCTION, value, F.lit(spec), F.lit(prefix), F.lit(suffix))


def available() -> bool:
    from pyspark.sql import SparkSession

    from ingest.jvm import java_expression

    spark = SparkSession.getActiveSession()
    return spark is not None and java_expression(spark, FUNCTION, BUILDER)
