"""What every converter shares: finding the first bad record, header mapping, and the header/record API split."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ingest.errors import DataError
from ingest.records import OFFSET, PARTITION, SEQ, TOPIC

ERROR = "error"
"""The column `bad_records` adds: why the record cannot be converted."""

_COORDINATES = (TOPIC, PARTITION, OFFSET, SEQ)


def bad_records(df: DataFrame, reason: Column) -> DataFrame:
    """The rows whose `reason` is not null, with the reason in an `error` column (for a dead letter queue)."""
    return df.withColumn(ERROR, reason).where(F.col(ERROR).isNotNull())


def raise_first_bad(df: DataFrame, reason: Column, fix: str) -> None:
    """Raise DataError for the bad record that comes first (by partition, offset), if there is one.

    Runs one small Spark job; only the one bad row (its coordinates and reason) reaches the driver.
    """
    coords = [c for c in _COORDINATES if c in df.columns]
    order = [c for c in (PARTITION, OFFSET, SEQ) if c in coords]
    bad = bad_records(df, reason).select(*coords, ERROR)
    rows = (bad.orderBy(*order) if order else bad).limit(1).collect()
    if rows:
        raise DataError(f"{rows[0][ERROR]} ({describe(rows[0], coords)}); {fix}")


def describe(row: Any, coords: list[str]) -> str:
    parts = [f"{c} {row[c]!r}" if c == TOPIC else f"{c} {row[c]}" for c in coords if row[c] is not None]
    return "record at " + ", ".join(parts) if parts else "record without coordinates"


def data_type(df: DataFrame, column: str) -> T.DataType:
    return df.schema[column].dataType


def null_bytes() -> Column:
    return F.lit(None).cast(T.BinaryType())


def map_header_values(headers: Column, convert: Callable[[Column], Column]) -> Column:
    """Apply `convert` to every header value; keys and order stay, a null header array stays null."""
    if convert is utf8_bytes:
        # A cast, not a lambda: Spark compiles casts into the batch's generated code, while any lambda
        # makes it fall back to evaluating the whole projection row by row.
        return headers.cast("array<struct<key:string,value:binary>>")
    return F.transform(headers, lambda h: F.struct(h["key"].alias("key"), convert(h["value"]).alias("value")))


def utf8_bytes(text: Column) -> Column:
    # Spark strings are UTF-8 inside: the cast is String.getBytes(UTF_8) without a copy through Java.
    return text.cast(T.BinaryType())


def utf8_text(data: Column) -> Column:
    # new String(bytes, UTF_8): malformed sequences become U+FFFD, as Java's decoder replaces them.
    return F.make_valid_utf8(data.cast(T.StringType()))


class RecordAndHeaderConverter:
    """Mixin for Kafka classes that are both a Converter and a HeaderConverter: the record methods
    (`from_connect`/`to_connect`) delegate to `*_record`, the header methods are `*_header`."""

    def from_connect(self, df: DataFrame, column: str, schema: Any) -> DataFrame:
        return self.from_connect_record(df, column, schema)

    def to_connect(self, df: DataFrame, column: str) -> list[tuple[Any, DataFrame]]:
        return self.to_connect_record(df, column)

    def from_connect_record(self, df: DataFrame, column: str, schema: Any) -> DataFrame:
        raise NotImplementedError

    def to_connect_record(self, df: DataFrame, column: str) -> list[tuple[Any, DataFrame]]:
        raise NotImplementedError


def parse_settings(cls: Any, configs: Any) -> Any:
    """The converter's settings, typed. Unknown keys are ignored, as Kafka's converters ignore them
    (the book sets `key.converter.schemas.enable` on a ByteArrayConverter)."""
    return cls.config_def().parse(dict(configs or {}), strict=False, source=f"{cls.__name__} settings")
