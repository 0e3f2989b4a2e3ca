"""JsonConverter.toConnectData as Spark column expressions: parsed JSON (a VARIANT) to typed Connect values.

One `variant_get` casts the payload to a Spark type in which every logical type still has its JSON form
(Date/Time as int, Timestamp as bigint, bytes as base64 text, Decimal as a variant: Kafka accepts both a
number and base64 bytes); a second pass of column expressions turns those into the final values.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from connectors.converters._decimal import bytes_to_decimal
from ingest.records.schema import DATE, DECIMAL, TIMESTAMP, ConnectSchema, dumps, value_to_json

_STAGED = "__lakeconnect_json_form"
_SIMPLE_DDL = {
    "int8": "tinyint", "int16": "smallint", "int32": "int", "int64": "bigint", "float32": "float",
    "float64": "double", "boolean": "boolean", "string": "string", "bytes": "string",
}


@dataclass(frozen=True)
class JsonOptions:
    """The JsonConverter settings that change how values are written or read."""

    decimal_format: str = "BASE64"
    replace_null_with_default: bool = True


def from_variant(value: Column, schema: ConnectSchema, options: JsonOptions, path: str = "$") -> Column:
    """The Connect value of JSON `value` (a VARIANT) under `schema`, in `schema.to_spark_type()`.

    One expression: fine for nested values and literals. For a whole column use `with_connect_value`,
    which Spark evaluates faster.
    """
    return _finish(json_form(value, schema), schema, options, path)


def json_form(value: Column, schema: ConnectSchema) -> Column:
    """`value` (a VARIANT) cast to the JSON form of `schema` (see `_json_ddl`)."""
    return F.variant_get(value, "$", _json_ddl(schema))


def with_connect_value(
    df: DataFrame, column: str, value: Column, schema: ConnectSchema, options: JsonOptions,
    fast: tuple[Column, Column] | None = None,
) -> DataFrame:
    """`df` with `column` set to the Connect value of JSON `value` (a VARIANT) under `schema`.

    The JSON form is its own projection first: Spark would otherwise evaluate the cast once for every
    field that reads from it (about 7x slower on a five-field struct). `fast`: (handled, value) of a
    reader that already has the value of some records; the expressions here read only the others.
    """
    staged = df.withColumn(_STAGED, json_form(value, schema))
    connect = _finish(F.col(_STAGED), schema, options, "$")
    if fast is not None:
        handled, fast_value = fast
        connect = F.when(handled, fast_value).otherwise(connect)  # a CASE branch not taken is not evaluated
    return staged.withColumn(column, connect).drop(_STAGED)


def default_column(schema: ConnectSchema) -> Column:
    """The schema's default value as a Spark literal of the schema's Spark type."""
    bare = replace(schema, default=None)
    return from_variant(F.parse_json(F.lit(dumps(value_to_json(bare, schema.default)))), bare, JsonOptions())


def _json_ddl(schema: ConnectSchema) -> str:
    """The Spark type (DDL) of the JSON form of `schema`'s values."""
    logical = schema.logical
    if logical == DECIMAL:
        return "variant"
    if logical == TIMESTAMP:
        return "bigint"
    if schema.type in _SIMPLE_DDL:
        return _SIMPLE_DDL[schema.type]  # Date and Time are int32 already
    if schema.type == "array":
        return f"array<{_json_ddl(schema.value_schema)}>"
    if schema.type == "map":
        if schema.key_schema.type == "string":
            return f"map<string,{_json_ddl(schema.value_schema)}>"
        return "array<array<variant>>"  # Kafka's [[key, value], ...]
    fields = ",".join(f"`{f.name.replace('`', '``')}`:{_json_ddl(f.schema)}" for f in schema.fields)
    return f"struct<{fields}>"


def _finish(value: Column, schema: ConnectSchema, options: JsonOptions, path: str) -> Column:
    """From the JSON form (see `_json_ddl`) to the Connect value, then convertToConnect's null rule."""
    logical = schema.logical
    if logical == DATE:
        value = F.date_from_unix_date(value)
    elif logical == TIMESTAMP:
        value = F.timestamp_millis(value)
    elif logical == DECIMAL:
        value = _decimal(value, schema)
    elif schema.type == "bytes":
        value = F.unbase64(value)
    elif schema.type == "struct" and any(_needs_finish(f.schema, options) for f in schema.fields):
        fields = [_finish(value.getField(f.name), f.schema, options, f"{path}.{f.name}").alias(f.name)
                  for f in schema.fields]
        value = F.when(value.isNull(), F.lit(None)).otherwise(F.struct(*fields))
    elif schema.type == "array" and _needs_finish(schema.value_schema, options):
        value = F.transform(value, lambda x: _finish(x, schema.value_schema, options, path + "[]"))
    elif schema.type == "map" and schema.key_schema.type != "string":
        value = F.map_from_entries(F.transform(value, lambda pair: F.struct(
            from_variant(pair[0], schema.key_schema, options, path + "{key}").alias("key"),
            from_variant(pair[1], schema.value_schema, options, path + "{}").alias("value"))))
    elif schema.type == "map" and _needs_finish(schema.value_schema, options):
        value = F.transform_values(value, lambda _, v: _finish(v, schema.value_schema, options, path + "{}"))
    return _null_rule(value, schema, options, path)


def _decimal(value: Column, schema: ConnectSchema) -> Column:
    # Kafka reads a Decimal from a JSON number or from base64 text, whatever decimal.format says.
    precision, scale = schema.precision or 38, schema.scale
    as_bytes = bytes_to_decimal(F.unbase64(F.variant_get(value, "$", "string")), precision, scale)
    as_number = F.variant_get(value, "$", f"decimal({precision},{scale})")
    return F.when(F.schema_of_variant(value) == F.lit("STRING"), as_bytes).otherwise(as_number)


def _null_rule(value: Column, schema: ConnectSchema, options: JsonOptions, path: str) -> Column:
    if schema.default is not None and options.replace_null_with_default:
        return F.coalesce(value, default_column(schema))
    if not schema.optional:
        message = f"Invalid null value for required {schema.type.upper()} field ({path})"
        return F.when(value.isNull(), F.raise_error(F.lit(message))).otherwise(value)
    return value


def _needs_finish(schema: ConnectSchema, options: JsonOptions) -> bool:
    """Whether the JSON form of `schema`'s values needs any expression to become the Connect value."""
    if schema.logical in (DATE, TIMESTAMP, DECIMAL) or schema.type == "bytes":
        return True
    if (schema.default is not None and options.replace_null_with_default) or not schema.optional:
        return True
    if schema.type == "struct":
        return any(_needs_finish(f.schema, options) for f in schema.fields)
    if schema.type == "map":
        return schema.key_schema.type != "string" or _needs_finish(schema.value_schema, options)
    if schema.type == "array":
        return _needs_finish(schema.value_schema, options)
    return False
