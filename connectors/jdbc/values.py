"""A database's values as record fields and as offsets: Spark's reads of dates and times in their Connect types, in
`db.timezone` and `timestamp.granularity`, and Confluent's timestamp offsets (epoch millis and nanos)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ingest.records.schema import DATE as DATE_LOGICAL
from ingest.records.schema import TIME as TIME_LOGICAL
from ingest.records.schema import TIMESTAMP as TIMESTAMP_LOGICAL
from ingest.records.schema import ConnectSchema

TS = "timestamp"
TS_NANOS = "timestamp_nanos"


def as_connect(col: Column, spark_type: T.DataType, schema: ConnectSchema, db_timezone: str) -> Column:
    """A column as read by Spark, in the Spark type of its Connect schema."""
    logical = schema.logical
    target = schema.to_spark_type()
    if logical == TIMESTAMP_LOGICAL:
        value = col
        if isinstance(spark_type, T.StringType):
            value = F.coalesce(F.try_to_timestamp(col), F.timestamp_millis(col.try_cast("long")))
        if db_timezone and db_timezone.upper() not in ("UTC", "Z", "GMT"):
            value = F.to_utc_timestamp(value, db_timezone)
        return value.cast("timestamp")
    if logical == DATE_LOGICAL:
        if isinstance(spark_type, T.StringType):
            return F.to_date(F.try_to_timestamp(col))
        return col.cast("date")
    if logical == TIME_LOGICAL:
        if isinstance(spark_type, T.StringType):
            ts = F.try_to_timestamp(F.concat(F.lit("1970-01-01 "), col))
        else:
            ts = col.cast("timestamp")
        return F.pmod(F.unix_millis(ts), F.lit(86_400_000)).cast("int")
    return col.cast(target)


def granular_timestamp(instant: Column, granularity: str, zone: str) -> Column:
    """A timestamp as `timestamp.granularity` shows it (Confluent's DateTimeUtils). Its epoch numbers are whole
    seconds truncated toward zero plus the second's fraction, as Java's `getTime() / 1000` and `getNanos()`
    make them (for an instant before 1970 with a fraction, a second later than the instant, as Confluent's)."""
    micros = F.unix_micros(instant)
    millis = F.floor(micros / 1000)
    seconds = F.when(millis >= 0, F.floor(millis / 1000)).otherwise(-F.floor(-millis / 1000))
    fraction = F.pmod(micros, F.lit(1_000_000))
    if granularity.startswith("micros_iso") or granularity.startswith("nanos_iso"):
        digits = "S" * (6 if granularity.startswith("micros") else 9)
        return F.date_format(F.from_utc_timestamp(instant, zone), f"yyyy-MM-dd'T'HH:mm:ss.{digits}")
    if granularity.startswith("micros"):
        number = seconds.cast("long") * 1_000_000 + fraction
    else:
        number = seconds.cast("long") * 1_000_000_000 + fraction * 1000
    return number.cast("string") if granularity.endswith("_string") else number.cast("long")


def utc_instant(value: Any) -> dt.datetime:
    """A value the database gave in UTC (or epoch millis) as an aware datetime."""
    if isinstance(value, dt.datetime):
        return value if value.tzinfo else value.replace(tzinfo=dt.timezone.utc)
    if isinstance(value, dt.date):
        return dt.datetime(value.year, value.month, value.day, tzinfo=dt.timezone.utc)
    if isinstance(value, (int, float)):
        return dt.datetime.fromtimestamp(value / 1000, dt.timezone.utc)
    text = str(value).strip().replace("T", " ")
    parsed = dt.datetime.fromisoformat(text)
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.timezone.utc)


def ts_offset(value: dt.datetime) -> dict[str, int]:
    """Confluent's timestamp offset: epoch millis, and the nanoseconds within the second."""
    value = value.astimezone(dt.timezone.utc)
    epoch = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
    delta = value - epoch
    micros = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    return {TS: micros // 1000, TS_NANOS: value.microsecond * 1000}


def offset_ts(offset: Mapping[str, Any] | None) -> dt.datetime | None:
    if not offset or offset.get(TS) is None:
        return None
    millis = int(offset[TS])
    seconds, _ = divmod(millis, 1000)
    nanos = int(offset.get(TS_NANOS) if offset.get(TS_NANOS) is not None else (millis % 1000) * 1_000_000)
    return dt.datetime.fromtimestamp(seconds, dt.timezone.utc) + dt.timedelta(microseconds=nanos // 1000)
