"""Kafka's `org.apache.kafka.connect.converters.BooleanConverter`: one byte, 0x01 for true and 0x00 for false.

As Kafka's BooleanSerializer/BooleanDeserializer: null is null both ways; reading, anything but one byte that
is 0x00 or 0x01 is a bad record, with Kafka's message (`Failed to deserialize boolean: Size of data received
by BooleanDeserializer is not 1`, or `... Unexpected byte received by BooleanDeserializer: -1`, the byte as
Java's signed byte). Writing, a schema other than BOOLEAN fails with `Invalid schema type for
BooleanConverter: INT32`. Usable as key, value or header converter.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from connectors.converters._common import (
    RecordAndHeaderConverter, bad_records, data_type, map_header_values, null_bytes, parse_settings,
    raise_first_bad,
)
from ingest.api import Converter, HeaderConverter
from ingest.errors import DataError
from ingest.records.schema import OPTIONAL_BOOLEAN_SCHEMA, ConnectSchema

_FAILED = "Failed to deserialize boolean: "


class BooleanConverter(RecordAndHeaderConverter, Converter, HeaderConverter):
    """Booleans as one byte; reading gives OPTIONAL_BOOLEAN_SCHEMA."""

    aliases = ("org.apache.kafka.connect.converters.BooleanConverter",)

    def __init__(self, configs: Mapping[str, Any] | None = None, is_key: bool = False):
        Converter.__init__(self, configs or {}, is_key)
        parse_settings(type(self), self.configs)

    def from_connect_record(self, df: DataFrame, column: str, schema: ConnectSchema | None) -> DataFrame:
        if schema is not None and schema.type != "boolean":
            raise DataError(f"Invalid schema type for BooleanConverter: {schema.type.upper()} (column '{column}'); "
                            "use a converter for that type, or cast the column to boolean")
        dtype = data_type(df, column)
        if isinstance(dtype, T.NullType):
            return df.withColumn(column, null_bytes())
        if not isinstance(dtype, T.BooleanType):
            # Kafka casts the value to Boolean: "BooleanConverter is not compatible with objects of type ...".
            raise DataError(f"BooleanConverter is not compatible with objects of type {dtype.simpleString()} "
                            f"(column '{column}'); cast the column to boolean first")
        return df.withColumn(column, encode(df[column]))

    def to_connect_record(self, df: DataFrame, column: str) -> list[tuple[ConnectSchema, DataFrame]]:
        raise_first_bad(df, reason(df[column]), "fix the producer, or use ByteArrayConverter for this topic")
        return [(OPTIONAL_BOOLEAN_SCHEMA, df.withColumn(column, decode(df[column])))]

    def record_errors(self, df: DataFrame, column: str) -> Column:
        return reason(df[column])

    def bad_records(self, df: DataFrame, column: str) -> DataFrame:
        """The records `to_connect` would reject, with an `error` column."""
        return bad_records(df, reason(df[column]))

    def header_errors(self, headers: Column) -> Column:
        bad = F.filter(headers, lambda h: reason(h["value"]).isNotNull())
        return F.when(F.size(bad) > 0, F.concat(F.lit("header '"), bad[0]["key"], F.lit("': "),
                                                reason(bad[0]["value"])))

    # Header values are text in lakeconnect's layout: a boolean header is the text "true" or "false" (what
    # Kafka's SimpleHeaderConverter writes for one, and what it reads as a BOOLEAN); any other text would
    # have another schema in Kafka, which this converter refuses to write.
    def from_connect_header(self, headers: Column) -> Column:
        def convert(text: Column) -> Column:
            flag = F.trim(text)  # Values.parseString trims before it reads true/false
            refused = F.concat(F.lit("Invalid schema type for BooleanConverter: the header value '"), text,
                               F.lit("' is not a boolean; use SimpleHeaderConverter for this header"))
            return (F.when(text.isNull(), null_bytes()).when(flag.isin("true", "false"), encode(flag == "true"))
                    .otherwise(F.raise_error(refused).cast(T.BinaryType())))

        return map_header_values(headers, convert)

    def to_connect_header(self, headers: Column) -> Column:
        def convert(data: Column) -> Column:
            why = reason(data)
            return F.when(why.isNotNull(), F.raise_error(why).cast(T.StringType())).otherwise(
                decode(data).cast(T.StringType()))

        return map_header_values(headers, convert)

    def header_schemas(self, headers: Column) -> Column:
        """Every header's schema as Kafka's toConnectHeader gives it: `optional boolean`."""
        schema = F.lit("optional boolean").alias("schema")
        return F.transform(headers, lambda h: F.struct(h["key"].alias("key"), schema))


def encode(value: Column) -> Column:
    return F.when(value.isNull(), null_bytes()).otherwise(F.unhex(F.when(value, F.lit("01")).otherwise(F.lit("00"))))


def decode(data: Column) -> Column:
    return F.when(data.isNull(), F.lit(None).cast(T.BooleanType())).otherwise(F.hex(data) == F.lit("01"))


def reason(data: Column) -> Column:
    """Why `data` is not a boolean (Kafka's message), or null."""
    byte = F.conv(F.hex(data), 16, 10).cast(T.IntegerType())
    signed = F.when(byte >= 128, byte - 256).otherwise(byte)  # Java prints the byte signed
    return (F.when(data.isNull(), F.lit(None).cast(T.StringType()))
            .when(F.length(data) != 1, F.lit(_FAILED + "Size of data received by BooleanDeserializer is not 1"))
            .when(~F.hex(data).isin("00", "01"),
                  F.concat(F.lit(_FAILED + "Unexpected byte received by BooleanDeserializer: "),
                           signed.cast(T.StringType()))))
