"""Time-based partitioning of Confluent's storage connectors (kafka-connect-storage-common 11.x):
`TimeBasedPartitioner`, `DailyPartitioner` and `HourlyPartitioner` (their configuration, `TimePartitioning`)
and the timestamp extractors `Wallclock`, `Record` and `RecordField`. The Joda-Time zones and `path.format`
patterns they print with are in connectors/storage/joda.py.

A record's partition is computed in three steps, as Confluent computes it:

1. `timestamp_column` gives each record's timestamp in epoch milliseconds (a Spark column; None for
   Wallclock, where the caller uses its clock);
2. `bucket` rounds it down to `partition.duration.ms` in the configured zone (Java long division, so
   timestamps before 1970 round towards 1970; Joda's `convertLocalToUTC(local, false)` for DST gaps
   and overlaps);
3. `JodaPattern.format` prints the bucket with `path.format` (`TimePartitioning.encode` does 2 and 3).

Where Confluent's results depend on the Java runtime, this module follows Joda-Time 2.14 on JDK 17 (see
connectors/storage/joda.py for locales and zone names): an ISO string without an offset in a `RecordField`
is read in UTC (Joda uses the JVM's default zone).
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from connectors.storage.joda import DAY_MS, HOUR_MS, JodaPattern, JodaZone, zone
from connectors.transforms._support import struct_get
from ingest.config.configdef import ConfigDef, Importance, Type
from ingest.errors import ConfigError, DataError, Problem
from ingest.records import TIMESTAMP, VALUE
from ingest.records.schema import TIMESTAMP as TIMESTAMP_LOGICAL

if TYPE_CHECKING:
    from ingest.records import RecordBatch
    from ingest.records.schema import ConnectSchema

PARTITIONER_CLASS_CONFIG = "partitioner.class"
PARTITION_DURATION_MS_CONFIG = "partition.duration.ms"
PATH_FORMAT_CONFIG = "path.format"
LOCALE_CONFIG = "locale"
TIMEZONE_CONFIG = "timezone"
DIRECTORY_DELIM_CONFIG = "directory.delim"
TIMESTAMP_EXTRACTOR_CLASS_CONFIG = "timestamp.extractor"
TIMESTAMP_FIELD_NAME_CONFIG = "timestamp.field"

PACKAGE = "io.confluent.connect.storage.partitioner"
TIME_BASED, DAILY, HOURLY = "TimeBasedPartitioner", "DailyPartitioner", "HourlyPartitioner"
WALLCLOCK, RECORD, RECORD_FIELD = "Wallclock", "Record", "RecordField"


# --- time buckets ----------------------------------------------------------------------------------


def bucket(timestamp_ms: int, duration_ms: int, zone: JodaZone) -> int:
    """Confluent's `TimeBasedPartitioner.getPartition(duration, timestamp, zone)`: the start of the
    timestamp's bucket, in epoch milliseconds."""
    local = zone.utc_to_local(timestamp_ms)
    quotient = abs(local) // duration_ms  # Java's long division truncates towards zero
    partitioned = (quotient if local >= 0 else -quotient) * duration_ms
    return zone.local_to_utc(partitioned)


# --- configuration ---------------------------------------------------------------------------------

_EXTRACTOR_CLASSES = {f"{PACKAGE}.TimeBasedPartitioner${k}TimestampExtractor": k
                      for k in (WALLCLOCK, RECORD, RECORD_FIELD)}


def extractor_name(value: str) -> str:
    """`Wallclock`, `Record` or `RecordField` from the short name or Confluent's class name; ValueError
    with Confluent's message for anything else (custom extractor classes cannot run here)."""
    name = _EXTRACTOR_CLASSES.get(value, value)
    if name not in (WALLCLOCK, RECORD, RECORD_FIELD):
        raise ValueError(f"Invalid timestamp extractor: {value}")
    return name


def _partitioner_name(value: Any) -> str | None:
    name = str(value or "")
    name = name[len(PACKAGE) + 1:] if name.startswith(PACKAGE + ".") else name
    return name if name in (TIME_BASED, DAILY, HOURLY) else None


def _blank(value: str | None) -> bool:
    return value is None or not value.strip()


def config_def() -> ConfigDef:
    """The keys a time-based partitioner reads, declared as Confluent's PartitionerConfig declares them
    (plus `directory.delim` of StorageCommonConfig)."""
    group = "Partitioner"
    return (ConfigDef()
            .define(PARTITIONER_CLASS_CONFIG, Type.CLASS, f"{PACKAGE}.DefaultPartitioner", importance=Importance.HIGH,
                    group=group, doc="The partitioner to use when writing data to the store.")
            .define(PARTITION_DURATION_MS_CONFIG, Type.LONG, -1, importance=Importance.MEDIUM, group=group,
                    doc="The duration of a partition milliseconds used by ``TimeBasedPartitioner``. The default "
                        "value -1 means that we are not using ``TimeBasedPartitioner``.")
            .define(PATH_FORMAT_CONFIG, Type.STRING, "", importance=Importance.MEDIUM, group=group,
                    doc="This configuration is used to set the format of the data directories when partitioning "
                        "with ``TimeBasedPartitioner``. For example, ``'year'=YYYY/'month'=MM/'day'=dd/'hour'=HH``.")
            .define(LOCALE_CONFIG, Type.STRING, "", importance=Importance.MEDIUM, group=group,
                    doc="The locale to use when partitioning with ``TimeBasedPartitioner``. Used to format dates "
                        "and times (read as Java's ``new Locale(value)``: a language such as ``en``).")
            .define(TIMEZONE_CONFIG, Type.STRING, "", _valid_timezone, importance=Importance.MEDIUM, group=group,
                    doc="The timezone to use when partitioning with ``TimeBasedPartitioner``: a tz database id such "
                        "as ``America/Los_Angeles`` or ``Europe/Paris``, ``UTC``, or a fixed offset ``[+-]hh:mm``.")
            .define(TIMESTAMP_EXTRACTOR_CLASS_CONFIG, Type.STRING, WALLCLOCK, importance=Importance.MEDIUM, group=group,
                    doc="The extractor that gets the timestamp for records when partitioning with "
                        "``TimeBasedPartitioner``: ``Wallclock``, ``Record`` or ``RecordField``.")
            .define(TIMESTAMP_FIELD_NAME_CONFIG, Type.STRING, "timestamp", importance=Importance.MEDIUM, group=group,
                    doc="The record field to be used as timestamp by the timestamp extractor.")
            .define(DIRECTORY_DELIM_CONFIG, Type.STRING, "/", importance=Importance.MEDIUM, group="Storage",
                    doc="Directory delimiter pattern"))


def _valid_timezone(key: str, value: Any) -> str | None:
    """Confluent's TimezoneValidator: blank passes (the partitioner reports it), else DateTimeZone.forID."""
    if value is None or not str(value).strip():
        return None
    try:
        zone(str(value).strip())
    except ValueError as e:
        return f"{e}; use a tz database id such as Europe/Paris or America/New_York, UTC, or an offset such as +01:00"
    return None


@dataclasses.dataclass(frozen=True)
class TimePartitioning:
    """A configured time-based partitioner. `from_config` builds it with Confluent's rules; `encode`
    gives a record timestamp's encoded partition, `timestamp_column` the timestamps of a batch."""

    partitioner: str  # TimeBasedPartitioner, DailyPartitioner or HourlyPartitioner
    duration_ms: int
    path_format: str  # as printed: without a trailing delimiter; Daily's and Hourly's fixed patterns
    locale: str
    timezone: str
    extractor: str  # Wallclock, Record or RecordField
    field: str
    delim: str = "/"
    zone: JodaZone = dataclasses.field(init=False, repr=False, compare=False)
    pattern: JodaPattern = dataclasses.field(init=False, repr=False, compare=False)
    _encoded: dict[int, str] = dataclasses.field(init=False, repr=False, compare=False, default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "zone", zone(self.timezone))
        object.__setattr__(self, "pattern", JodaPattern(self.path_format, self.locale))
        self.pattern.format(0, self.zone)  # a pattern naming a zone we cannot name fails now, not per record

    @property
    def deterministic(self) -> bool:
        """The partition depends on the record only (not on when the batch runs)."""
        return self.extractor in (RECORD, RECORD_FIELD)

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> TimePartitioning:
        """Confluent's `configure()` of the three partitioners, raw or typed values; every problem at once."""
        values, problems = config_def().validate(config, strict=False)
        reported = {p.key for p in problems}  # their values are missing from `values`

        def check(key: str, ok: bool, message: str) -> bool:
            if not ok and key not in reported:
                problems.append(Problem(key, message))
                reported.add(key)
            return ok and key not in reported

        name = _partitioner_name(values.get(PARTITIONER_CLASS_CONFIG))
        check(PARTITIONER_CLASS_CONFIG, name is not None, f"{values.get(PARTITIONER_CLASS_CONFIG)} is not a time-based "
              f"partitioner; use {TIME_BASED}, {DAILY} or {HOURLY}")
        delim = values.get(DIRECTORY_DELIM_CONFIG) or ""
        duration, path = values.get(PARTITION_DURATION_MS_CONFIG), values.get(PATH_FORMAT_CONFIG)
        if name == DAILY:  # Daily and Hourly set these two keys, then run TimeBased's configure()
            duration, path = DAY_MS, f"'year'=YYYY{delim}'month'=MM{delim}'day'=dd"
        elif name == HOURLY:
            duration, path = HOUR_MS, f"'year'=YYYY{delim}'month'=MM{delim}'day'=dd{delim}'hour'=HH"
        # Confluent accepts 0, then divides by it for every record.
        check(PARTITION_DURATION_MS_CONFIG, duration is not None and duration > 0,
              f"Partition duration needs to be a positive number of milliseconds, not {duration}; set it, e.g. "
              f"3600000 for hourly partitions")
        if check(PATH_FORMAT_CONFIG, not _blank(path) and path != delim, "Path format cannot be empty; set a "
                 "Joda-Time pattern such as 'year'=YYYY/'month'=MM/'day'=dd/'hour'=HH"):
            if not _blank(delim) and path.endswith(delim):
                path = path[:-len(delim)]
        locale, timezone = values.get(LOCALE_CONFIG), values.get(TIMEZONE_CONFIG)
        check(LOCALE_CONFIG, not _blank(locale), "Locale cannot be empty; set a Java locale language such as en")
        tz = None
        if check(TIMEZONE_CONFIG, not _blank(timezone), "Timezone cannot be empty; set a zone such as UTC"):
            try:
                tz = zone(timezone)  # the validator trims the value, Confluent's configure() does not
            except ValueError as e:
                check(TIMEZONE_CONFIG, False, f"{e} (mind the spaces)")
        extractor, field = values.get(TIMESTAMP_EXTRACTOR_CLASS_CONFIG), values.get(TIMESTAMP_FIELD_NAME_CONFIG)
        try:
            extractor = extractor_name(extractor or "")
        except ValueError as e:
            check(TIMESTAMP_EXTRACTOR_CLASS_CONFIG, False, f"{e}; use {WALLCLOCK}, {RECORD} or {RECORD_FIELD} "
                  "(custom TimestampExtractor classes cannot run here)")
        check(TIMESTAMP_FIELD_NAME_CONFIG, extractor != RECORD_FIELD or not _blank(field),
              "timestamp.field cannot be empty with timestamp.extractor=RecordField; name the value field holding "
              "the timestamp (dots reach into nested fields)")
        if PATH_FORMAT_CONFIG not in reported:
            try:
                pattern = JodaPattern(path, locale or "")
                if tz is not None:
                    pattern.format(0, tz)
            except ValueError as e:
                hint = "; quote literal text with single quotes" if "Illegal pattern" in str(e) else ""
                check(PATH_FORMAT_CONFIG, False, f"{e} (path format {path}{hint})")
        if problems:
            raise ConfigError(problems)
        return cls(name, duration, path, locale, timezone, extractor, field, delim)

    def bucket(self, timestamp_ms: int) -> int:
        """The start of the timestamp's partition, in epoch milliseconds."""
        return bucket(timestamp_ms, self.duration_ms, self.zone)

    def encode(self, timestamp_ms: int) -> str:
        """The encoded partition of a record timestamp (Confluent's `encodePartition`)."""
        start = self.bucket(timestamp_ms)
        text = self._encoded.get(start)
        if text is None:
            text = self._encoded[start] = self.pattern.format(start, self.zone)
        return text

    def timestamp_column(self, batch: RecordBatch) -> Column | None:
        """The records' timestamps as this partitioner extracts them (see `timestamp_column`)."""
        return timestamp_column(self.extractor, self.field, batch)


# --- timestamp extractors --------------------------------------------------------------------------


def missing_timestamp_message(extractor: str) -> str:
    """Confluent's message for a record whose timestamp cannot be determined; the caller appends the
    record (`SinkRecord{kafkaOffset=…} ConnectRecord{topic='…', kafkaPartition=…, …}`)."""
    name = extractor_name(extractor)
    return (f"Unable to determine timestamp using timestamp.extractor "
            f"{PACKAGE}.TimeBasedPartitioner${name}TimestampExtractor for record: ")


def timestamp_column(extractor: str, field: str | None, batch: RecordBatch) -> Column | None:
    """Each record's timestamp in epoch milliseconds (long), as Confluent's extractors give it.

    Wallclock: None (the caller uses its clock). Record: the record's timestamp. RecordField: the value
    field `field` (dots reach into nested structs or maps): int32/int64 epoch millis, a Timestamp, or a
    string Joda's ISODateTimeFormat.dateTimeParser() reads; schemaless values (VARIANT objects) also
    numbers (truncated), strings and dates. A problem common to the whole batch (no such field, a field
    of another type, values that are neither structs nor maps) raises DataError.

    The column is null for a record without a timestamp (no record timestamp, a tombstone, a null or
    unreadable field), which Confluent fails: the caller must fail those records, with
    `missing_timestamp_message`.
    """
    name = extractor_name(extractor)
    if name == WALLCLOCK:
        return None
    if name == RECORD:
        return F.unix_millis(F.col(TIMESTAMP))
    field = field or ""
    schema = batch.value_schema
    data_type = batch.df.schema[VALUE].dataType
    if schema is not None and schema.type == "struct":
        return _struct_millis(F.col(VALUE), schema, field)
    if isinstance(data_type, T.NullType):
        return F.lit(None).cast("long")  # only tombstones: each fails
    if isinstance(data_type, (T.VariantType, T.MapType)) and (schema is None or schema.type == "map"):
        return _map_millis(F.col(VALUE), data_type, field)
    found = schema.type if schema is not None else data_type.simpleString()
    raise DataError(f"Error encoding partition: timestamp.extractor=RecordField reads a field of Struct or Map values, "
                    f"and these values are {found}; use timestamp.extractor=Record or Wallclock")


def _java_dot_split(path: str) -> list[str]:
    """Java's `path.split("\\.")`: trailing empty parts are dropped."""
    parts = path.split(".")
    while parts and not parts[-1]:
        parts.pop()
    return parts


_QUOTED_DOT = re.compile(r'\.(?=(?:[^"]*"[^"]*")*[^"]*$)')


def _missing(field: str, where: str, names: list[str]) -> DataError:
    available = ", ".join(names) if names else "none"
    return DataError(f"The nested field named '{field}' does not exist. {where} has the fields: {available}; "
                     f"set timestamp.field to one of them (dots reach into nested fields)")


def _unsupported(field: str, found: str) -> DataError:
    return DataError(f"Error extracting timestamp from record field: {field}: it is {found}, and RecordField reads "
                     f"int32/int64 epoch milliseconds, a Timestamp or an ISO-8601 string; point timestamp.field at "
                     f"such a field or use timestamp.extractor=Record")


def _struct_millis(value: Column, schema: ConnectSchema, field: str) -> Column:
    """DataUtils.getNestedFieldValue on a Struct (plain dots), then the field schema's type decides."""
    current, current_schema, path = value, schema, []
    for name in _java_dot_split(field) or [""]:
        found = current_schema.field(name) if current_schema.type == "struct" else None
        if found is None:
            names = [f.name for f in current_schema.fields]
            raise _missing(field, f"The value {'.'.join(path) or 'struct'}", names)
        # Struct.get: a null field reads as its default, but a null struct has no fields at all.
        current = F.when(current.isNull(), F.lit(None)).otherwise(struct_get(current, found))
        current_schema, path = found.schema, [*path, name]
    if current_schema.logical == TIMESTAMP_LOGICAL:
        return F.unix_millis(current)
    if current_schema.logical is None and current_schema.type in ("int32", "int64"):
        return current.cast("long")
    if current_schema.logical is None and current_schema.type == "string":
        return _iso_millis(current)
    found = current_schema.type + (f" ({current_schema.name})" if current_schema.name else "")
    raise _unsupported(field, found)


def _map_millis(value: Column, data_type: T.DataType, field: str) -> Column:
    """DataUtils.getNestedFieldValue on a Map: dots outside double quotes split the path, quotes go."""
    current, current_type = value, data_type
    for name in (part.replace('"', "") for part in _QUOTED_DOT.split(field)):
        if isinstance(current_type, T.VariantType):
            current = F.try_variant_get(current, "$", "map<string,variant>")[name]
        elif isinstance(current_type, T.MapType) and isinstance(current_type.keyType, T.StringType):
            current, current_type = current[name], current_type.valueType
        elif isinstance(current_type, T.StructType) and name in current_type.fieldNames():
            current, current_type = current[name], current_type[name].dataType
        else:
            names = current_type.fieldNames() if isinstance(current_type, T.StructType) else []
            raise _missing(field, f"A value of type {current_type.simpleString()}", names)
    if isinstance(current_type, T.VariantType):
        return _variant_millis(current)
    if isinstance(current_type, (T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.FloatType, T.DoubleType,
                                 T.DecimalType)):
        return current.try_cast("long")  # Number.longValue(): fractions truncated
    if isinstance(current_type, T.StringType):
        return _iso_millis(current)
    if isinstance(current_type, T.TimestampType):
        return F.unix_millis(current)
    if isinstance(current_type, T.DateType):
        return F.unix_date(current).cast("long") * DAY_MS
    raise _unsupported(field, current_type.simpleString())


def _variant_millis(v: Column) -> Column:
    """A schemaless leaf by what Java would hold: a Number, a String or a Date; anything else fails."""
    kind = F.regexp_extract(F.schema_of_variant(v), r"^([A-Z_]+)", 1)
    numbers = ("TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "DECIMAL")
    return (F.when(v.isNull() | F.is_variant_null(v), F.lit(None))
            .when(kind.isin(*numbers), F.try_variant_get(v, "$", "bigint"))
            .when(kind == "STRING", _iso_millis(F.try_variant_get(v, "$", "string")))
            .when(kind == "TIMESTAMP", F.unix_millis(F.try_variant_get(v, "$", "timestamp")))
            .when(kind == "DATE", F.unix_date(F.try_variant_get(v, "$", "date")).cast("long") * DAY_MS)
            .cast("long"))


# ISODateTimeFormat.dateTimeParser(): [date] ['T' [time] [offset]], a time required without a date.
# Joda reads numbers greedily and takes the longest date alternative, without backtracking; a regex
# backtracks, but no number here may be followed by a digit, so both accept the same texts. Field
# ranges (month 13, 29 February, week 53) are checked after the match, as Joda checks them.
_OFFSET_RE = r"([Zz]|[+-]\d\d(?::\d\d(?::\d\d(?:[.,]\d{1,3})?)?)?|[+-]\d\d(?:\d\d(?:\d\d\d{0,3})?)?)"
_ISO_RE = (r"^(([+-]?\d{1,9})(?:-[Ww](\d{1,2})(?:-(\d))?|-(\d{3})|-(\d{1,2})(?:-(\d{1,2}))?)?)?"
           r"(?:([Tt])((\d{1,2})(?::(\d{1,2})(?::(\d{1,2})(?:[.,](\d{1,9}))?|[.,](\d{1,9}))?|[.,](\d{1,9}))?)?"
           + _OFFSET_RE + r"?)?$")
(_DATE, _YEAR, _WEEK, _WEEKDAY, _DAY_OF_YEAR, _MONTH, _DAY, _T, _TIME, _HOUR, _MINUTE, _SECOND,
 _SECOND_FRACTION, _MINUTE_FRACTION, _HOUR_FRACTION, _OFFSET) = range(1, 17)
_MIN_YEAR, _MAX_YEAR = -292_275_054, 292_278_993  # Joda's ISO chronology


def _iso_millis(text: Column) -> Column:
    """Joda's `ISODateTimeFormat.dateTimeParser().parseMillis(text)` as a column: null where Joda throws."""
    def group(i: int) -> Column:
        return F.regexp_extract(text, _ISO_RE, i)

    def number(i: int) -> Column:
        return F.when(group(i) != "", group(i).cast("long"))

    def between(c: Column, lo: int | Column, hi: int | Column) -> Column:
        return c.isNotNull() & (c >= lo) & (c <= hi)

    year, has_date = number(_YEAR), group(_DATE) != ""
    week, weekday, day_of_year = number(_WEEK), F.coalesce(number(_WEEKDAY), F.lit(1)), number(_DAY_OF_YEAR)
    month, day = F.coalesce(number(_MONTH), F.lit(1)), F.coalesce(number(_DAY), F.lit(1))
    leap = ((F.pmod(year, 4) == 0) & (F.pmod(year, 100) != 0)) | (F.pmod(year, 400) == 0)
    month_days = (F.when(month == 2, F.when(leap, 29).otherwise(28))
                  .when(month.isin(4, 6, 9, 11), 30).otherwise(31))
    week_one = _week_one(year)
    days = (F.when(~has_date, F.lit(0))
            .when(week.isNotNull(), week_one + (week - 1) * 7 + weekday - 1)
            .when(day_of_year.isNotNull(), _days_column(year, F.lit(1), F.lit(1)) + day_of_year - 1)
            .otherwise(_days_column(year, month, day)))
    date_ok = (~has_date | (between(year, _MIN_YEAR, _MAX_YEAR) & F.when(
        week.isNotNull(), between(week, 1, (_week_one(year + 1) - week_one) / 7) & between(weekday, 1, 7))
        .when(day_of_year.isNotNull(), between(day_of_year, 1, F.when(leap, 366).otherwise(365)))
        .otherwise(between(month, 1, 12) & between(day, 1, month_days))))

    hour = F.coalesce(number(_HOUR), F.lit(0))
    minute, second = F.coalesce(number(_MINUTE), F.lit(0)), F.coalesce(number(_SECOND), F.lit(0))
    fraction = (F.when(group(_SECOND_FRACTION) != "", _fraction_column(group(_SECOND_FRACTION), 1000))
                .when(group(_MINUTE_FRACTION) != "", _fraction_column(group(_MINUTE_FRACTION), 60_000))
                .when(group(_HOUR_FRACTION) != "", _fraction_column(group(_HOUR_FRACTION), HOUR_MS))
                .otherwise(F.lit(0)))
    time_ok = (hour <= 23) & (minute <= 59) & (second <= 59) & (has_date | (group(_HOUR) != ""))

    offset_text = group(_OFFSET)
    digits = F.regexp_replace(offset_text, r"[^0-9]", "")

    def part(start: int, length: int) -> Column:
        return F.coalesce(F.substring(digits, start, length).try_cast("long"), F.lit(0))

    offset_hours, offset_minutes, offset_seconds = part(1, 2), part(3, 2), part(5, 2)
    offset_millis = F.coalesce(F.rpad(F.substring(digits, 7, 3), 3, "0").try_cast("long"), F.lit(0))
    offset = (offset_hours * HOUR_MS + offset_minutes * 60_000 + offset_seconds * 1000 + offset_millis)
    offset = F.when(F.substring(offset_text, 1, 1) == "-", -offset).otherwise(offset)
    offset_ok = (offset_hours <= 23) & (offset_minutes <= 59) & (offset_seconds <= 59)

    millis = days * DAY_MS + hour * HOUR_MS + minute * 60_000 + second * 1000 + fraction - offset
    matched = text.isNotNull() & text.rlike(_ISO_RE)
    return F.when(matched & date_ok & time_ok & offset_ok, millis.cast("long"))


def _fraction_column(digits: Column, unit_ms: int) -> Column:
    """Joda's Fraction parser: digit k weighs (unit * 10) // 10^k, and the sum is divided by 10."""
    padded = F.rpad(digits, 9, "0")
    weighted = [F.substring(padded, k, 1).cast("long") * (unit_ms * 10 // 10 ** k)
                for k in range(1, 10) if unit_ms * 10 // 10 ** k]
    return (functools.reduce(lambda a, b: a + b, weighted) / 10).cast("long")  # a sum >= 0: truncation is floor


def _floor_div(a: Column, b: int) -> Column:
    return F.floor(a / b)  # exact: the values here stay far below 2^53


def _days_column(y: Column, m: Column, d: Column) -> Column:
    """`_days` of connectors/storage/joda.py (days since 1970-01-01) as a column expression."""
    y = y - F.when(m <= 2, 1).otherwise(0)
    era = _floor_div(y, 400)
    yoe = y - era * 400
    doy = _floor_div(153 * ((m + 9) % 12) + 2, 5) + d - 1
    return era * 146_097 + yoe * 365 + _floor_div(yoe, 4) - _floor_div(yoe, 100) + doy - 719_468


def _week_one(year: Column) -> Column:
    """The Monday starting ISO week 1 of a weekyear: the week holding 4 January."""
    jan4 = _days_column(year, F.lit(1), F.lit(4))
    return jan4 - F.pmod(jan4 + 3, 7)
