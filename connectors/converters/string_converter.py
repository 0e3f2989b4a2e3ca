"""Kafka's `org.apache.kafka.connect.storage.StringConverter`: `value.toString()` in a charset, and back.

Reading always gives Connect strings (OPTIONAL_STRING_SCHEMA). Writing renders each value as Java's
`toString` would: strings as they are, numbers and booleans as Java prints them, decimals as
BigDecimal.toString, Date/Time/Timestamp as java.util.Date.toString in the session time zone (Kafka uses
the worker JVM's), structs as `Struct{a=1,b=x}`, lists as `[1, 2]`, maps as `{k=v}`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from connectors.converters._common import (
    RecordAndHeaderConverter, data_type, map_header_values, parse_settings, utf8_bytes, utf8_text,
)
from connectors.converters._json_write import json_text
from ingest.api import Converter, HeaderConverter
from ingest.config.configdef import ConfigDef, Importance, Type
from ingest.errors import DataError
from ingest.records.schema import DATE, OPTIONAL_STRING_SCHEMA, TIME, TIMESTAMP, ConnectSchema

ENCODING = "converter.encoding"

# Java charset names and aliases -> the charsets Spark's encode/decode support.
_CHARSETS = {
    "utf-8": ("utf8", "unicode-1-1-utf-8"),
    "iso-8859-1": ("iso8859_1", "iso_8859_1", "iso8859-1", "iso_8859-1", "latin1", "l1", "8859_1", "819",
                   "cp819", "ibm819", "ibm-819", "iso-ir-100", "csisolatin1", "iso_8859_1:1987"),
    "us-ascii": ("ascii", "ascii7", "646", "iso646-us", "us", "iso_646.irv:1983", "default", "cp367",
                 "ibm367", "csascii"),
    "utf-16": ("utf16", "utf_16", "unicode"),
    "utf-16be": ("utf_16be", "x-utf-16be", "iso-10646-ucs-2", "unicodebigunmarked"),
    "utf-16le": ("utf_16le", "x-utf-16le", "unicodelittleunmarked"),
    "utf-32": ("utf32", "utf_32"),
}
_CHARSET_BY_NAME = {alias: name for name, aliases in _CHARSETS.items() for alias in (name, *aliases)}
# java.util.Date.toString
_JAVA_DATE_PATTERN = "EEE MMM dd HH:mm:ss zzz yyyy"


def spark_charset(java_name: str) -> str | None:
    return _CHARSET_BY_NAME.get(java_name.strip().lower())


def _valid_charset(key: str, value: Any) -> str | None:
    if value is None or spark_charset(value):
        return None
    return f"unsupported character set '{value}'; supported: {', '.join(n.upper() for n in _CHARSETS)}"


def encode_text(text: Column, charset: str) -> Column:
    return utf8_bytes(text) if charset == "utf-8" else F.encode(text, charset)


def decode_bytes(data: Column, charset: str) -> Column:
    return utf8_text(data) if charset == "utf-8" else F.decode(data, charset)


class StringConverter(RecordAndHeaderConverter, Converter, HeaderConverter):
    """Values as strings in a character set (`converter.encoding`, UTF-8 by default)."""

    aliases = ("org.apache.kafka.connect.storage.StringConverter",)

    def __init__(self, configs: Mapping[str, Any] | None = None, is_key: bool = False):
        Converter.__init__(self, configs or {}, is_key)
        self.charset = spark_charset(parse_settings(type(self), self.configs)[ENCODING])

    @classmethod
    def config_def(cls) -> ConfigDef:
        # Kafka's default is StandardCharsets.UTF_8.name(), i.e. "UTF-8".
        return ConfigDef().define(
            ENCODING, Type.STRING, "UTF-8", _valid_charset, Importance.HIGH, group="Converter",
            doc="The name of the Java character set to use for encoding strings as byte arrays.")

    def from_connect_record(self, df: DataFrame, column: str, schema: ConnectSchema | None) -> DataFrame:
        text = java_to_string(df[column], data_type(df, column), schema, column)
        return df.withColumn(column, encode_text(text, self.charset))

    def to_connect_record(self, df: DataFrame, column: str) -> list[tuple[ConnectSchema, DataFrame]]:
        return [(OPTIONAL_STRING_SCHEMA, df.withColumn(column, decode_bytes(df[column], self.charset)))]

    def from_connect_header(self, headers: Column) -> Column:
        return map_header_values(headers, lambda v: encode_text(v, self.charset))

    def to_connect_header(self, headers: Column) -> Column:
        return map_header_values(headers, lambda b: decode_bytes(b, self.charset))


def java_to_string(value: Column, dtype: T.DataType, schema: ConnectSchema | None, column: str) -> Column:
    """`value.toString()` as Java prints the Connect value Kafka would hold for this column (null stays null)."""
    logical = schema.logical if schema is not None else None
    if isinstance(dtype, T.NullType):
        return F.lit(None).cast(T.StringType())
    if isinstance(dtype, T.StringType):
        return value
    if logical == TIME and isinstance(dtype, T.IntegerType):
        return F.date_format(F.timestamp_millis(value.cast(T.LongType())), _JAVA_DATE_PATTERN)
    if isinstance(dtype, (T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.BooleanType,
                          T.FloatType, T.DoubleType)):
        return value.cast(T.StringType())  # Spark prints these as Java does (1.0E20, NaN, -0.0)
    if isinstance(dtype, T.DecimalType):
        return F.when(value.isNull(), F.lit(None)).otherwise(json_text(value))  # BigDecimal.toString
    if isinstance(dtype, (T.DateType, T.TimestampType)) or logical in (DATE, TIMESTAMP):
        return F.date_format(value.cast(T.TimestampType()), _JAVA_DATE_PATTERN)
    if isinstance(dtype, T.StructType):
        # Struct.toString: Struct{name=value,...}, fields whose value is null left out.
        parts = [F.when(value[f.name].isNotNull(), F.concat(F.lit(f.name + "="), java_to_string(
            value[f.name], f.dataType, _part(schema, f.name), column))) for f in dtype.fields]
        body = F.concat(F.lit("Struct{"), F.concat_ws(",", *parts), F.lit("}"))
        return F.when(value.isNull(), F.lit(None)).otherwise(body)
    if isinstance(dtype, T.ArrayType):  # AbstractCollection.toString: [a, b, null]
        items = F.transform(value, lambda x: _or_null(java_to_string(x, dtype.elementType, _part(schema), column)))
        return F.concat(F.lit("["), F.array_join(items, ", "), F.lit("]"))
    if isinstance(dtype, T.MapType):  # AbstractMap.toString: {k=v, k2=null}
        entries = F.transform(F.map_entries(value), lambda e: F.concat(
            java_to_string(e["key"], dtype.keyType, _part(schema, key=True), column), F.lit("="),
            _or_null(java_to_string(e["value"], dtype.valueType, _part(schema), column))))
        return F.concat(F.lit("{"), F.array_join(entries, ", "), F.lit("}"))
    raise DataError(
        f"StringConverter cannot write column '{column}' of Spark type {dtype.simpleString()}: Kafka would "
        "write Java's toString of it (an object identity for bytes); use ByteArrayConverter for bytes or "
        "JsonConverter for structured values")


def _part(schema: ConnectSchema | None, field: str | None = None, key: bool = False) -> ConnectSchema | None:
    """The schema of a struct field, a map key, or array items / map values (None when unknown)."""
    if schema is None:
        return None
    if field is not None:
        f = schema.field(field)
        return f.schema if f else None
    return schema.key_schema if key else schema.value_schema


def _or_null(text: Column) -> Column:
    return F.coalesce(text, F.lit("null"))
