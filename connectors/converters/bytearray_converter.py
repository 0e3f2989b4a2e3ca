"""Kafka's `org.apache.kafka.connect.converters.ByteArrayConverter`: bytes pass through unchanged."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import types as T

from connectors.converters._common import (
    RecordAndHeaderConverter, data_type, map_header_values, null_bytes, parse_settings, utf8_bytes, utf8_text,
)
from ingest.api import Converter, HeaderConverter
from ingest.errors import DataError
from ingest.records.schema import OPTIONAL_BYTES_SCHEMA, ConnectSchema


class ByteArrayConverter(RecordAndHeaderConverter, Converter, HeaderConverter):
    """Raw bytes in and out; reading gives OPTIONAL_BYTES_SCHEMA."""

    aliases = ("org.apache.kafka.connect.converters.ByteArrayConverter",)

    def __init__(self, configs: Mapping[str, Any] | None = None, is_key: bool = False):
        Converter.__init__(self, configs or {}, is_key)
        parse_settings(type(self), self.configs)

    def from_connect_record(self, df: DataFrame, column: str, schema: ConnectSchema | None) -> DataFrame:
        dtype = data_type(df, column)
        if schema is not None and schema.type != "bytes":
            raise DataError(f"Invalid schema type for ByteArrayConverter: {schema.type.upper()} (column '{column}')")
        if isinstance(dtype, T.NullType):
            return df.withColumn(column, null_bytes())
        if not isinstance(dtype, T.BinaryType):
            raise DataError(f"ByteArrayConverter is not compatible with objects of type {dtype.simpleString()} "
                            f"(column '{column}'); use StringConverter or JsonConverter")
        return df

    def to_connect_record(self, df: DataFrame, column: str) -> list[tuple[ConnectSchema, DataFrame]]:
        return [(OPTIONAL_BYTES_SCHEMA, df)]

    # Header values are strings in lakeconnect's record layout, so bytes are their UTF-8 form; header
    # bytes that are not UTF-8 do not survive the round trip (U+FFFD replaces malformed sequences).
    def from_connect_header(self, headers: Column) -> Column:
        return map_header_values(headers, utf8_bytes)

    def to_connect_header(self, headers: Column) -> Column:
        return map_header_values(headers, utf8_text)
