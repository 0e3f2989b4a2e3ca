"""JsonConverter.fromConnectData as Spark column expressions: Connect values to Kafka's exact JSON text.

Spark's `to_json` writes through Jackson, as Kafka does, so numbers, strings and binary (base64) come out
byte for byte as Kafka writes them once logical types are brought to their JSON form first (Date -> days,
Timestamp -> epoch millis, Decimal -> two's-complement bytes or a number). The one shape `to_json` cannot
write is Kafka's map with non-string keys (an array of [key, value] pairs); a schema containing one is
rendered by concatenating the JSON of its parts, each again by `to_json`.
"""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from connectors.converters._decimal import decimal_to_bytes
from connectors.converters._json_read import JsonOptions, default_column
from ingest.records.schema import DATE, DECIMAL, NUMERIC, TIME, TIMESTAMP, ConnectSchema, quote

# Kafka writes a struct's null fields as `null`; Spark's to_json drops them unless told not to.
TO_JSON_OPTIONS = {"ignoreNullFields": "false"}
_PLAIN_TEXT_TYPES = ("int8", "int16", "int32", "int64", "boolean")
REQUIRED_NULL = "Conversion error: null value for field that is required and has no default value"


def json_text(value: Column) -> Column:
    """Jackson's JSON text of any Spark value; `null` for null. (Wrapped in an array so that `to_json`
    accepts primitives too, then unwrapped.)"""
    text = F.to_json(F.array(value), TO_JSON_OPTIONS)
    return F.substring(text, F.lit(2), F.length(text) - 2)


def render(
    value: Column, schema: ConnectSchema, options: JsonOptions, path: str = "$", top: bool = False
) -> Column:
    """The payload JSON text of `value` under `schema` (never null: a null value renders as `null`).

    `top`: the record's own key or value, whose null is a tombstone handled by the caller, so no
    default or required check applies to it.
    """
    if not top:
        value = _with_null_handling(value, schema, options, path)
    if not _has_keyed_map(schema):
        physical = _physical(value, schema, options, path)
        if schema.type in ("struct", "array", "map"):  # to_json takes these as they are: no wrapping
            return F.coalesce(F.to_json(physical, TO_JSON_OPTIONS), F.lit("null"))
        if schema.type in _PLAIN_TEXT_TYPES and schema.logical != DECIMAL:
            # Integers (Date, Time and Timestamp are integers here too) and booleans: their text is their
            # JSON, without a trip through the JSON writer.
            return F.coalesce(physical.cast("string"), F.lit("null"))
        return json_text(physical)
    if schema.type == "struct":
        parts = [F.lit("{")]
        for i, f in enumerate(schema.fields):
            parts.append(F.lit(("," if i else "") + quote(f.name) + ":"))
            parts.append(render(value.getField(f.name), f.schema, options, f"{path}.{f.name}"))
        body = F.concat(*parts, F.lit("}"))
    elif schema.type == "array":
        items = F.transform(value, lambda x: render(x, schema.value_schema, options, path + "[]"))
        body = F.concat(F.lit("["), F.array_join(items, ","), F.lit("]"))
    elif schema.key_schema.type == "string":
        entries = F.transform(F.map_entries(value), lambda e: F.concat(
            json_text(e["key"]), F.lit(":"), render(e["value"], schema.value_schema, options, path + "{}")))
        body = F.concat(F.lit("{"), F.array_join(entries, ","), F.lit("}"))
    else:  # Kafka writes a map with non-string keys as [[key, value], ...]
        entries = F.transform(F.map_entries(value), lambda e: F.concat(
            F.lit("["), render(e["key"], schema.key_schema, options, path + "{key}"), F.lit(","),
            render(e["value"], schema.value_schema, options, path + "{}"), F.lit("]")))
        body = F.concat(F.lit("["), F.array_join(entries, ","), F.lit("]"))
    return F.when(value.isNull(), F.lit("null")).otherwise(body)


def _physical(value: Column, schema: ConnectSchema, options: JsonOptions, path: str) -> Column:
    """`value` in the Spark type whose `to_json` is Kafka's JSON (null handling already applied here)."""
    logical = schema.logical
    if logical == DATE:
        return F.unix_date(value)
    if logical == TIMESTAMP:
        return F.unix_millis(value)
    if logical == DECIMAL:
        return value if options.decimal_format == NUMERIC else decimal_to_bytes(value)
    if schema.type == "struct":
        fields = [_child(value.getField(f.name), f.schema, options, f"{path}.{f.name}").alias(f.name)
                  for f in schema.fields]
        return F.when(value.isNull(), F.lit(None)).otherwise(F.struct(*fields))
    if schema.type == "array" and _needs_work(schema.value_schema, options):
        return F.transform(value, lambda x: _child(x, schema.value_schema, options, path + "[]"))
    if schema.type == "map" and _needs_work(schema.value_schema, options):
        return F.transform_values(value, lambda _, v: _child(v, schema.value_schema, options, path + "{}"))
    return value


def _child(value: Column, schema: ConnectSchema, options: JsonOptions, path: str) -> Column:
    return _physical(_with_null_handling(value, schema, options, path), schema, options, path)


def _with_null_handling(value: Column, schema: ConnectSchema, options: JsonOptions, path: str) -> Column:
    """convertToJson's null rule: the default if there is one (and replace.null.with.default), else null
    when optional, else Kafka's DataException (here a Spark error carrying Kafka's message)."""
    if schema.default is not None and options.replace_null_with_default:
        return F.coalesce(value, default_column(schema))
    if not schema.optional:
        return F.when(value.isNull(), F.raise_error(F.lit(f"{REQUIRED_NULL} ({path})"))).otherwise(value)
    return value


def _needs_work(schema: ConnectSchema, options: JsonOptions) -> bool:
    """Whether values of `schema` need any expression beyond themselves to be written."""
    if schema.logical in (DATE, TIMESTAMP) or (schema.logical == DECIMAL and options.decimal_format != NUMERIC):
        return True
    if (schema.default is not None and options.replace_null_with_default) or not schema.optional:
        return True
    if schema.type == "struct":
        return True
    if schema.type in ("array", "map"):
        return _needs_work(schema.value_schema, options)
    return False


def _has_keyed_map(schema: ConnectSchema) -> bool:
    """Whether a map with non-string keys (written as [[k, v], ...]) occurs anywhere in `schema`."""
    if schema.type == "map":
        return schema.key_schema.type != "string" or _has_keyed_map(schema.value_schema)
    if schema.type == "array":
        return _has_keyed_map(schema.value_schema)
    return any(_has_keyed_map(f.schema) for f in schema.fields)


def spark_type_problem(data_type: T.DataType, schema: ConnectSchema, path: str = "$") -> str | None:
    """Why a Spark column of `data_type` cannot hold values of `schema` (None when it can).

    Kafka fails on a value whose Java class does not match its schema; this is that check, made once
    on the driver against the column's type instead of on every record.
    """
    expected = {
        DATE: (T.DateType,), TIMESTAMP: (T.TimestampType, T.TimestampNTZType), DECIMAL: (T.DecimalType,),
        TIME: (T.IntegerType,),
    }.get(schema.logical or "")
    if expected is None:
        expected = (type(schema.to_spark_type()),) if schema.type not in ("array", "map", "struct") else None
    if expected is not None:
        if not isinstance(data_type, expected):
            return f"{path}: Spark type {data_type.simpleString()} cannot hold {_describe(schema)}"
        if schema.logical == DECIMAL and data_type.scale != schema.scale:
            return (f"{path}: {data_type.simpleString()} has scale {data_type.scale}, "
                    f"the schema's scale is {schema.scale}")
        return None
    if schema.type == "array":
        if not isinstance(data_type, T.ArrayType):
            return f"{path}: Spark type {data_type.simpleString()} is not an array"
        return spark_type_problem(data_type.elementType, schema.value_schema, path + "[]")
    if schema.type == "map":
        if not isinstance(data_type, T.MapType):
            return f"{path}: Spark type {data_type.simpleString()} is not a map"
        return (spark_type_problem(data_type.keyType, schema.key_schema, path + "{key}")
                or spark_type_problem(data_type.valueType, schema.value_schema, path + "{}"))
    if not isinstance(data_type, T.StructType):
        return f"{path}: Spark type {data_type.simpleString()} is not a struct"
    spark_fields = {f.name: f.dataType for f in data_type.fields}
    if set(spark_fields) != {f.name for f in schema.fields}:
        return (f"{path}: struct fields {sorted(spark_fields)} do not match the schema's "
                f"{[f.name for f in schema.fields]}")
    for f in schema.fields:
        problem = spark_type_problem(spark_fields[f.name], f.schema, f"{path}.{f.name}")
        if problem:
            return problem
    return None


def _describe(schema: ConnectSchema) -> str:
    return f"{schema.type} ({schema.name})" if schema.name else schema.type
