"""Time-based partitioning of Confluent's storage connectors (kafka-connect-storage-common 11.x):
`TimeBasedPartitioner`, `DailyPartitioner` and `HourlyPartitioner`, their Joda-Time `path.format`
patterns, and the timestamp extractors `Wallclock`, `Record` and `RecordField`.

A record's partition is computed in three steps, as Confluent computes it:

1. `timestamp_column` gives each record's timestamp in epoch milliseconds (a Spark column; None for
   Wallclock, where the caller uses its clock);
2. `bucket` rounds it down to `partition.duration.ms` in the configured zone (Java long division, so
   timestamps before 1970 round towards 1970; Joda's `convertLocalToUTC(local, false)` for DST gaps
   and overlaps);
3. `JodaPattern.format` prints the bucket with `path.format` (`TimePartitioning.encode` does 2 and 3).

Where Confluent's results depend on the Java runtime, this module follows Joda-Time 2.14 on JDK 17:

- `locale` is read as Java's `new Locale(value)`: the whole value is the *language*. `en` and `fr`
  print English and French names; `en-US`, `fr-FR` or `en_GB` are languages Java does not know, so
  they print the root locale's names (`Jun` for both MMM and MMMM, `Thu` for E and EEEE, era `CE`).
  Names come from CLDR (babel); Java releases differ slightly among themselves.
- zone names (`z`, `zzzz`) exist only for UTC and fixed offsets: for region zones Java prints names
  from its own tables (`BRT`, `heure d’été d’Europe centrale`), which are not reproduced here.
- an ISO string without an offset in a `RecordField` is read in UTC (Joda uses the JVM's default zone).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import importlib.resources
import pathlib
import re
import zoneinfo
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from babel import Locale, UnknownLocaleError
from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

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
HOUR_MS, DAY_MS = 3_600_000, 86_400_000


# --- Joda-Time zones -------------------------------------------------------------------------------

_MS = dt.timedelta(milliseconds=1)
_EPOCH = dt.datetime(1970, 1, 1)
# Offsets are looked up through datetime, whose years stop at 1..9999: instants beyond use the edges.
_FIRST, _LAST = -62_104_060_800_000, 253_370_764_800_000  # 0002-01-01, 9998-12-31


class JodaZone(dt.tzinfo):
    """A Joda-Time `DateTimeZone`: `id` as Joda prints it (pattern ZZZ) and the tz database's offsets."""

    def __init__(self, id: str, rules: dt.tzinfo):
        self.id = id
        self._rules = rules

    def __reduce__(self):  # tzinfo pickles through a no-argument constructor: rebuild from the id instead
        return (zone, (self.id,))

    def __repr__(self) -> str:
        return f"JodaZone({self.id!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, JodaZone) and other.id == self.id

    def __hash__(self) -> int:
        return hash(self.id)

    @property
    def fixed(self) -> bool:
        """A fixed offset (UTC included), as opposed to a region of the tz database."""
        return isinstance(self._rules, dt.timezone)

    # tzinfo, so the zone also serves Python's datetime
    def utcoffset(self, d: dt.datetime | None) -> dt.timedelta | None:
        return self._rules.utcoffset(d)

    def dst(self, d: dt.datetime | None) -> dt.timedelta | None:
        return self._rules.dst(d)

    def tzname(self, d: dt.datetime | None) -> str | None:
        return self._rules.tzname(d)

    def fromutc(self, d: dt.datetime) -> dt.datetime:
        return self._rules.fromutc(d.replace(tzinfo=self._rules)).replace(tzinfo=self)

    # Joda's DateTimeZone
    def _state(self, instant: int) -> tuple[int, Any, Any]:
        """(offset in ms, dst, name) in effect at an instant: what a Joda transition changes."""
        utc = _EPOCH + dt.timedelta(milliseconds=min(max(instant, _FIRST), _LAST))
        local = self._rules.fromutc(utc.replace(tzinfo=self._rules))
        return local.utcoffset() // _MS, local.dst(), local.tzname()

    def offset(self, instant: int) -> int:
        """`getOffset(instant)`: milliseconds to add to UTC to get local time."""
        return self._state(instant)[0]

    def utc_to_local(self, instant: int) -> int:
        """`convertUTCToLocal`."""
        return instant + self.offset(instant)

    def local_to_utc(self, local: int) -> int:
        """`convertLocalToUTC(local, false)`: Joda's own answer in gaps and overlaps (which is not
        always java.time's: in an overlap east of Greenwich it is the later of the two instants)."""
        offset_local = self.offset(local)
        offset = self.offset(local - offset_local)
        if offset_local != offset and offset_local < 0:
            # Joda compares nextTransition() of both candidates: different means a transition lies
            # between them, i.e. `local` is in a DST gap, where the first estimate is the right one.
            lo, hi = sorted((local - offset_local, local - offset))
            if self._state(lo) != self._state(hi):
                offset = offset_local
        return local - offset


UTC = JodaZone("UTC", dt.timezone.utc)

_OFFSET_ID = (re.compile(r"([+-])(\d\d)(?::(\d\d)(?::(\d\d)(?:[.,](\d{1,3}))?)?)?"),
              re.compile(r"([+-])(\d\d)(?:(\d\d)(?:(\d\d)(\d{1,3})?)?)?"))


@functools.lru_cache(maxsize=None)
def _tz_links() -> dict[str, str]:
    """Link name -> target, from the `tzdata.zi` of the tz database zoneinfo reads: Joda resolves a link
    such as US/Eastern to its target's id."""
    candidates: list[Any] = [pathlib.Path(path, "tzdata.zi") for path in zoneinfo.TZPATH]
    try:  # the order zoneinfo reads zones in
        candidates.append(importlib.resources.files("tzdata").joinpath("zoneinfo", "tzdata.zi"))
    except ModuleNotFoundError:
        pass
    for candidate in candidates:
        try:
            text = candidate.read_text(encoding="utf-8")
        except OSError:
            continue
        return {parts[2]: parts[1] for parts in (line.split() for line in text.splitlines())
                if len(parts) == 3 and parts[0] == "L"}
    return {}


@functools.lru_cache(maxsize=None)
def _tz_ids() -> frozenset[str]:
    # zoneinfo also lists files of the system's zoneinfo directory that are not zones.
    return frozenset(zoneinfo.available_timezones() - {"Factory", "localtime", "posixrules"})


def _print_offset(offset: int) -> str:
    """Joda's `DateTimeZone.printOffset`: +hh:mm, with :ss and .SSS only when not zero."""
    sign = "+" if offset >= 0 else "-"
    hours, rest = divmod(abs(offset), HOUR_MS)
    minutes, rest = divmod(rest, 60_000)
    seconds, millis = divmod(rest, 1000)
    text = f"{sign}{hours:02d}:{minutes:02d}"
    if seconds or millis:
        text += f":{seconds:02d}" + (f".{millis:03d}" if millis else "")
    return text


def zone(timezone: str) -> JodaZone:
    """Joda's `DateTimeZone.forID`: `UTC`, a tz database id (`Europe/Paris`, `EST`; case matters) or a
    fixed offset (`+01:00`, `-0800`, `+05`); ValueError naming anything else."""
    if timezone == "UTC":
        return UTC
    if timezone in _tz_ids():
        return JodaZone(_tz_links().get(timezone, timezone), zoneinfo.ZoneInfo(timezone))
    match = next((m for m in (p.fullmatch(timezone) for p in _OFFSET_ID) if m), None)
    if match:
        sign, hh, mm, ss, frac = match.groups()
        hours, minutes, seconds = int(hh), int(mm or 0), int(ss or 0)
        if hours <= 23 and minutes <= 59 and seconds <= 59:
            offset = hours * HOUR_MS + minutes * 60_000 + seconds * 1000 + int((frac or "0").ljust(3, "0"))
            offset = -offset if sign == "-" else offset
            if offset == 0:
                return UTC
            return JodaZone(_print_offset(offset), dt.timezone(offset * _MS))
    raise ValueError(f"The datetime zone id '{timezone}' is not recognised")


def bucket(timestamp_ms: int, duration_ms: int, zone: JodaZone) -> int:
    """Confluent's `TimeBasedPartitioner.getPartition(duration, timestamp, zone)`: the start of the
    timestamp's bucket, in epoch milliseconds."""
    local = zone.utc_to_local(timestamp_ms)
    quotient = abs(local) // duration_ms  # Java's long division truncates towards zero
    partitioned = (quotient if local >= 0 else -quotient) * duration_ms
    return zone.local_to_utc(partitioned)


# --- Joda-Time patterns ----------------------------------------------------------------------------


class _Symbols(NamedTuple):
    """What Joda takes from `java.text.DateFormatSymbols`; days from Monday."""

    months_short: tuple[str, ...]
    months: tuple[str, ...]
    days_short: tuple[str, ...]
    days: tuple[str, ...]
    am_pm: tuple[str, str]
    eras: tuple[str, str]


_MONTHS_ROOT = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_DAYS_ROOT = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
# Java's root locale (CLDR): abbreviated names for both widths.
_ROOT = _Symbols(_MONTHS_ROOT, _MONTHS_ROOT, _DAYS_ROOT, _DAYS_ROOT, ("AM", "PM"), ("BCE", "CE"))
_JAVA_LEGACY_LANGUAGES = {"iw": "he", "in": "id", "ji": "yi"}


@functools.lru_cache(maxsize=None)
def _symbols(locale: str) -> _Symbols:
    """The names Java gives `new Locale(locale)`: its language's, or the root locale's when Java does
    not know the language (which is the case of any value with a country, such as `en-US`)."""
    language = locale.lower()
    language = _JAVA_LEGACY_LANGUAGES.get(language, language)
    if not re.fullmatch(r"[a-z]{2,8}", language) or language == "root":
        return _ROOT
    try:
        data = Locale(language)
        months, days = data.months["format"], data.days["format"]
        periods = data.day_periods["format"]["abbreviated"]
        return _Symbols(tuple(months["abbreviated"][m] for m in range(1, 13)),
                        tuple(months["wide"][m] for m in range(1, 13)),
                        tuple(days["abbreviated"][d] for d in range(7)), tuple(days["wide"][d] for d in range(7)),
                        (periods["am"], periods["pm"]), (data.eras["abbreviated"][0], data.eras["abbreviated"][1]))
    except (UnknownLocaleError, ValueError, KeyError):
        return _ROOT


def _days(y: int, m: int, d: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (ISO chronology, any year)."""
    y -= m <= 2
    era, yoe = divmod(y, 400)
    doy = (153 * ((m + 9) % 12) + 2) // 5 + d - 1
    return era * 146_097 + yoe * 365 + yoe // 4 - yoe // 100 + doy - 719_468


def _civil(days: int) -> tuple[int, int, int]:
    """The (year, month, day) of a day number; the inverse of `_days`."""
    era, doe = divmod(days + 719_468, 146_097)
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146_096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    m = mp + 3 if mp < 10 else mp - 9
    return yoe + era * 400 + (m <= 2), m, doy - (153 * mp + 2) // 5 + 1


class _Fields(NamedTuple):
    year: int
    month: int
    day: int
    day_of_year: int
    day_of_week: int  # 1 = Monday
    weekyear: int
    week: int
    hour: int
    minute: int
    second: int
    millis: int

    @classmethod
    def of(cls, local: int) -> _Fields:
        days, of_day = divmod(local, DAY_MS)
        y, m, d = _civil(days)
        dow = (days + 3) % 7 + 1
        thursday = days - dow + 4  # an ISO week belongs to the year of its Thursday
        weekyear = _civil(thursday)[0]
        hour, rest = divmod(of_day, HOUR_MS)
        minute, rest = divmod(rest, 60_000)
        return cls(y, m, d, days - _days(y, 1, 1) + 1, dow, weekyear, (thursday - _days(weekyear, 1, 1)) // 7 + 1,
                   hour, minute, *divmod(rest, 1000))


def _number(value: int, width: int) -> str:
    """FormatUtils.appendPaddedInteger: the sign, then the digits padded to `width`."""
    return ("-" if value < 0 else "") + str(abs(value)).rjust(width, "0")


def _fraction(millis: int, width: int) -> str:
    """Joda's fraction of second: `width` digits, truncated; Joda keeps at most 15 significant ones."""
    if millis == 0:
        return "0" * width
    digits = min(width, 15)  # Joda caps the scale where millis * 10^digits would overflow a long
    return str(millis * 10 ** digits // 1000).rjust(digits, "0")


_LETTERS = frozenset("GCYxwweEyDMdaKhHkmsSzZ")


class JodaPattern:
    """A Joda-Time `DateTimeFormat.forPattern` pattern, printed as Joda prints it.

    Letters (a run of one letter is one field): G era, C century of era, Y year of era, x weekyear,
    w week of weekyear, e day of week (1 = Monday), E day name (EEEE full), y year, D day of year,
    M month (MMM short name, MMMM full name), d day, a AM/PM, K hour 0-11, h hour 1-12, H hour 0-23,
    k hour 1-24, m minute, s second, S fraction of second, z zone name, Z offset (-0800; ZZ -08:00;
    ZZZ zone id). YY, yy and xx print two digits. Text in '...' is literal, '' is a quote; other
    characters print as they are. Any other letter is a ValueError, with Joda's message.
    """

    def __init__(self, pattern: str, locale: str):
        if not pattern:
            raise ValueError("Invalid pattern specification: Pattern is null or empty")
        self.pattern = pattern
        self.locale = locale
        self.tokens = _tokens(pattern)
        self._symbols = _symbols(locale)

    def __repr__(self) -> str:
        return f"JodaPattern({self.pattern!r}, {self.locale!r})"

    def format(self, epoch_ms: int, zone: JodaZone) -> str:
        """The instant printed in `zone` (Joda's `DateTimeFormatter.withZone(zone).print(instant)`)."""
        offset = zone.offset(epoch_ms)
        fields = _Fields.of(epoch_ms + offset)
        return "".join(text if letter is None else self._field(letter, len(text), fields, zone, offset)
                       for letter, text in self.tokens)

    def _field(self, letter: str, n: int, f: _Fields, zone: JodaZone, offset: int) -> str:
        names = self._symbols
        if letter == "G":
            return names.eras[f.year > 0]
        if letter == "C":
            return _number(abs(f.year) // 100, n)  # ISO's century of era drops the year's sign
        if letter in "Yyx" and n == 2:
            return _number(abs(f.weekyear if letter == "x" else f.year) % 100, 2)
        if letter == "Y":
            return _number(f.year if f.year > 0 else 1 - f.year, n)
        if letter in "yx":
            return _number(f.year if letter == "y" else f.weekyear, n)
        if letter == "M":
            return names.months[f.month - 1] if n >= 4 else names.months_short[f.month - 1] if n == 3 else _number(f.month, n)
        if letter == "E":
            return (names.days if n >= 4 else names.days_short)[f.day_of_week - 1]
        if letter == "a":
            return names.am_pm[f.hour >= 12]
        if letter == "S":
            return _fraction(f.millis, n)
        if letter == "z":
            return _zone_name(zone, long=n >= 4, locale=self.locale)
        if letter == "Z":
            return zone.id if n >= 3 else _offset_text(offset, colon=n == 2)
        value = {"w": f.week, "e": f.day_of_week, "D": f.day_of_year, "d": f.day, "H": f.hour,
                 "K": f.hour % 12, "h": f.hour % 12 or 12, "k": f.hour or 24, "m": f.minute, "s": f.second}[letter]
        return _number(value, n)


def _tokens(pattern: str) -> list[tuple[str | None, str]]:
    """DateTimeFormat.parsePatternTo: (letter, run of it) for fields, (None, text) for literal text."""
    tokens: list[tuple[str | None, str]] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c.isascii() and c.isalpha():
            j = i
            while j + 1 < n and pattern[j + 1] == c:
                j += 1
            run = pattern[i:j + 1]
            if c not in _LETTERS:
                raise ValueError(f"Illegal pattern component: {run}")
            tokens.append((c, run))
            i = j + 1
            continue
        text, quoted = [], False
        while i < n:
            c = pattern[i]
            if c == "'":
                if i + 1 < n and pattern[i + 1] == "'":
                    text.append("'")
                    i += 1
                else:
                    quoted = not quoted
            elif not quoted and c.isascii() and c.isalpha():
                break
            else:
                text.append(c)
            i += 1
        tokens.append((None, "".join(text)))
    return tokens


def _offset_text(offset: int, colon: bool) -> str:
    """Joda's Z / ZZ: sign, hours and minutes (seconds dropped); +0000 for UTC."""
    hours, rest = divmod(abs(offset), HOUR_MS)
    return f"{'+' if offset >= 0 else '-'}{hours:02d}{':' if colon else ''}{rest // 60_000:02d}"


def _zone_name(zone: JodaZone, long: bool, locale: str) -> str:
    if zone is UTC and not long:
        return "UTC"
    if zone is UTC and _symbols(locale) in (_ROOT, _symbols("en")):
        return "Coordinated Universal Time"
    if zone.fixed and zone is not UTC:
        return zone.id  # Joda has no name for a fixed offset: it prints the id
    raise ValueError(
        f"zone names (pattern letter z) of {zone.id} come from the Java runtime's name tables, which are "
        "not available here; print the zone with Z, ZZ or ZZZ, or use a fixed-offset timezone")


# --- configuration ---------------------------------------------------------------------------------

_EXTRACTOR_CLASSES = {f"{PACKAGE}.TimeBasedPartitioner${k}TimestampExtractor": k for k in (WALLCLOCK, RECORD, RECORD_FIELD)}


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
    return f"Unable to determine timestamp using timestamp.extractor {PACKAGE}.TimeBasedPartitioner${name}TimestampExtractor for record: "


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
    """`_days` as a column expression."""
    y = y - F.when(m <= 2, 1).otherwise(0)
    era = _floor_div(y, 400)
    yoe = y - era * 400
    doy = _floor_div(153 * ((m + 9) % 12) + 2, 5) + d - 1
    return era * 146_097 + yoe * 365 + _floor_div(yoe, 4) - _floor_div(yoe, 100) + doy - 719_468


def _week_one(year: Column) -> Column:
    """The Monday starting ISO week 1 of a weekyear: the week holding 4 January."""
    jan4 = _days_column(year, F.lit(1), F.lit(4))
    return jan4 - F.pmod(jan4 + 3, 7)
