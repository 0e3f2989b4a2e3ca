"""The object formats of Confluent's S3 sink (`format.class`, `keys.format.class`, `headers.format.class`).

A format has two halves. On the driver, `payload` turns a batch's column (value, key or headers, in
Connect form) into what each record contributes to an object: bytes for JSON and ByteArray (computed by
Spark, so executors only concatenate them), the record itself for Avro and Parquet. On the executors,
`writer` writes the payloads of one object, in offset order, to its upload.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ingest.api import Format
from ingest.config.configdef import ConfigDef, Importance, Type
from ingest.errors import DataError
from ingest.records.schema import ConnectSchema

LINE_SEPARATOR = b"\n"  # System.lineSeparator() on the Linux workers Confluent's objects come from
HEADERS_COLUMN = "h"  # the writer's column of header payloads (connectors/s3/writer.py)


FORMAT_BYTEARRAY_EXTENSION = "format.bytearray.extension"
FORMAT_BYTEARRAY_SEPARATOR = "format.bytearray.separator"


class _BytesWriter:
    """Payloads that are already the object's bytes: each slice is written as one buffer."""

    def __init__(self, out):
        self.out = out

    def write(self, values) -> None:
        data = _concatenated(values)
        if data:
            self.out.write(data)

    def close(self) -> None:
        pass


def _concatenated(values) -> memoryview | bytes:
    """The bytes of a binary Arrow array laid end to end: a view of its data buffer, no copy."""
    import numpy as np
    import pyarrow as pa

    if len(values) == 0:
        return b""
    width = np.int64 if pa.types.is_large_binary(values.type) else np.int32
    offsets = np.frombuffer(values.buffers()[1], dtype=width, count=len(values) + 1,
                            offset=values.offset * width().itemsize)
    data = values.buffers()[2]
    if data is None:
        return b""
    return memoryview(data)[int(offsets[0]):int(offsets[-1])]


class JsonFormat(Format):
    """Each record's view (value, key or headers) as JSON without a schema, one per line (Confluent's
    JsonRecordWriterProvider: JsonConverter with schemas.enable=false for structs, Jackson for the rest,
    which writes the same text)."""

    aliases = ("io.confluent.connect.s3.format.json.JsonFormat",)
    extension = ".json"

    def payload(self, df: DataFrame, column: str, schema: ConnectSchema | None, is_key: bool = False) -> DataFrame:
        from connectors.converters.json_converter import JsonConverter

        converted = JsonConverter({"schemas.enable": False}, is_key).from_connect(df, column, schema)
        return converted.withColumn(column, F.concat(F.col(column), F.lit(LINE_SEPARATOR)))

    def writer(self, out, schema: ConnectSchema | None, seed: str):
        return _BytesWriter(out)


class ByteArrayFormat(Format):
    """Values as raw bytes, one after another, each followed by `format.bytearray.separator` (default: a
    line separator). The view must be bytes (ByteArrayConverter's rule)."""

    aliases = ("io.confluent.connect.s3.format.bytearray.ByteArrayFormat",)
    extension = ".bin"

    @classmethod
    def config_def(cls) -> ConfigDef:
        return (ConfigDef()
                .define(FORMAT_BYTEARRAY_EXTENSION, Type.STRING, ".bin", importance=Importance.LOW, group="Connector",
                        doc="Output file extension for ByteArrayFormat. Defaults to '.bin'.")
                .define(FORMAT_BYTEARRAY_SEPARATOR, Type.STRING, None, importance=Importance.LOW, group="Connector",
                        doc="String inserted between records for ByteArrayFormat. Defaults to the line separator."))

    def file_extension(self) -> str:
        return self.config[FORMAT_BYTEARRAY_EXTENSION]

    def payload(self, df: DataFrame, column: str, schema: ConnectSchema | None, is_key: bool = False) -> DataFrame:
        dtype = df.schema[column].dataType
        if schema is not None and schema.type != "bytes":
            raise DataError(f"ByteArrayFormat writes bytes, but the records' {'key' if is_key else 'value'} schema is "
                            f"{schema.type.upper()}; use ByteArrayConverter for it, or JsonFormat")
        if not isinstance(dtype, (T.BinaryType, T.NullType)):
            raise DataError(f"ByteArrayFormat writes bytes, but the records' {'key' if is_key else 'value'} is "
                            f"{dtype.simpleString()}; use ByteArrayConverter for it, or JsonFormat")
        sep = self.config[FORMAT_BYTEARRAY_SEPARATOR]
        separator = LINE_SEPARATOR if sep is None else sep.encode("utf-8")
        return df.withColumn(column, F.concat(F.col(column).cast("binary"), F.lit(separator)))

    def writer(self, out, schema: ConnectSchema | None, seed: str):
        return _BytesWriter(out)


class AvroFormat(Format):
    """An Avro object container file per object, the schema Confluent's AvroData derives (`avro.codec`).
    Keys are written with their own schema; headers as an array of {key, value} strings."""

    aliases = ("io.confluent.connect.s3.format.avro.AvroFormat",)

    @classmethod
    def config_def(cls) -> ConfigDef:
        from connectors.storage.avro import avro_config_def

        return avro_config_def()
    extension = ".avro"
    compressible = False

    def payload(self, df: DataFrame, column: str, schema: ConnectSchema | None, is_key: bool = False) -> DataFrame:
        if schema is None and column != HEADERS_COLUMN:
            raise DataError(f"AvroFormat needs records with a schema, but the {'keys' if is_key else 'values'} have "
                            "none; use a converter with schemas (JsonConverter with schemas.enable=true) or JsonFormat")
        return df

    def view(self, schema: ConnectSchema | None, is_key: bool, headers: bool) -> ConnectSchema | None:
        from connectors.storage.avro_schema import HEADERS_SCHEMA

        return HEADERS_SCHEMA if headers else schema

    def writer(self, out, schema: ConnectSchema | None, seed: str):
        from connectors.storage.avro import AvroWriter

        return AvroWriter(out, schema, self.config["avro.codec"], seed)


class ParquetFormat(Format):
    """A Parquet file per object, the columns parquet-avro derives from the record schema (`parquet.codec`).
    Keys are wrapped in a `RecordKey` struct and headers in `RecordHeaders`, as Confluent's views do."""

    aliases = ("io.confluent.connect.s3.format.parquet.ParquetFormat",)

    @classmethod
    def config_def(cls) -> ConfigDef:
        from connectors.storage.parquet import parquet_config_def

        return parquet_config_def()
    extension = ".parquet"
    compressible = False

    def file_extension(self) -> str:
        from connectors.storage.parquet import parquet_extension

        return parquet_extension(self.config["parquet.codec"])

    def payload(self, df: DataFrame, column: str, schema: ConnectSchema | None, is_key: bool = False) -> DataFrame:
        if schema is None and column != HEADERS_COLUMN:
            raise DataError(f"ParquetFormat needs records with a schema, but the {'keys' if is_key else 'values'} "
                            "have none; use a converter with schemas (JsonConverter with schemas.enable=true) or "
                            "JsonFormat")
        if is_key or column == HEADERS_COLUMN:  # Confluent's RecordKey / RecordHeaders structs
            return df.withColumn(column, F.struct(F.col(column).alias("key" if is_key else "headers")))
        return df

    def view(self, schema: ConnectSchema | None, is_key: bool, headers: bool) -> ConnectSchema | None:
        from connectors.storage.parquet import headers_view, key_view

        return key_view(schema) if is_key else headers_view() if headers else schema

    def writer(self, out, schema: ConnectSchema | None, seed: str):
        from connectors.storage.parquet import ParquetObjectWriter

        return ParquetObjectWriter(out, schema, self.config["parquet.codec"])


def extension(fmt: Any, compression_suffix: str = "") -> str:
    """The object name's extension for a format: its own, then `.gz` when the store compresses (JSON and
    ByteArray only, as in Confluent's connector)."""
    return fmt.file_extension() + (compression_suffix if fmt.compressible else "")
