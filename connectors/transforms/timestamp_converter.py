"""TimestampConverter: convert a timestamp (the whole key/value, or one field) between Unix epoch
numbers, strings in a `java.text.SimpleDateFormat` pattern, and Connect Date, Time and Timestamp
(Kafka's `org.apache.kafka.connect.transforms.TimestampConverter$Key` / `$Value`).

Kafka converts through a `java.util.Date` (epoch millis). So do we: every input becomes epoch millis
(a long column), every output is made from them. SimpleDateFormat patterns are compiled here, as Java
compiles them, into tokens; formatting builds the text token by token in UTC, and parsing matches the
text with a regular expression built from the tokens, then applies `java.util.Calendar`'s lenient
field arithmetic (month 13 is January of the next year, and so on).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from connectors.transforms._support import (
    _JAVA_CLASS, CheckedConfigDef, KeyOrValueTransform, as_map, kafka_names, object_of, put_entries, require_map,
    required_null_message, struct_get, struct_required_message, to_variant,
)
from ingest.config.configdef import ConfigDef, Importance, Type, ValidString
from ingest.errors import Problem
from ingest.records import KEY, RecordBatch
from ingest.records.schema import (
    DATE, DATE_SCHEMA, INT64_SCHEMA, OPTIONAL_DATE_SCHEMA, OPTIONAL_INT64_SCHEMA, OPTIONAL_STRING_SCHEMA,
    OPTIONAL_TIME_SCHEMA, OPTIONAL_TIMESTAMP_SCHEMA, STRING_SCHEMA, TIME, TIME_SCHEMA, TIMESTAMP, TIMESTAMP_SCHEMA,
    ConnectSchema, Field,
)

PURPOSE = "converting timestamp formats"
CONNECT_EXCEPTION = "org.apache.kafka.connect.errors.ConnectException"
NULL_POINTER_EXCEPTION = "java.lang.NullPointerException"

TYPE_STRING, TYPE_UNIX, TYPE_DATE, TYPE_TIME, TYPE_TIMESTAMP = "string", "unix", "Date", "Time", "Timestamp"
PRECISIONS = ("nanoseconds", "microseconds", "milliseconds", "seconds")

MILLIS_PER_DAY = 86_400_000
LONG_MAX, LONG_MIN = 2 ** 63 - 1, -(2 ** 63)
# Spark timestamps hold microseconds in a long; a date is an int of days.
MAX_TIMESTAMP_MILLIS = LONG_MAX // 1000
MAX_DATE_MILLIS = 2_000_000_000 * MILLIS_PER_DAY


# --- java.text.SimpleDateFormat -------------------------------------------------------------------

PATTERN_LETTERS = "GyMdkHmsSEDFwWahKzZYuXL"
# DateFormatSymbols of the default (English) locale.
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December"]
SHORT_MONTHS = [m[:3] for m in MONTHS]
WEEKDAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]
SHORT_WEEKDAYS = [d[:3] for d in WEEKDAYS]
# SimpleDateFormat.shouldObeyCount: numeric fields, whose width is fixed when another one abuts them.
_NUMERIC = set("ydkHmsSDFwWhKYu")


@dataclass(frozen=True)
class Token:
    """One element of a compiled pattern: `count` times the pattern letter `letter`, or literal `text`."""

    letter: str
    count: int = 0
    text: str = ""

    @property
    def numeric(self) -> bool:
        return bool(self.letter) and (self.letter in _NUMERIC or (self.letter in "ML" and self.count <= 2))


def compile_pattern(pattern: str) -> list[Token]:
    """SimpleDateFormat.compile: tokens, or ValueError with Java's IllegalArgumentException message."""
    tokens: list[Token] = []
    literal: list[str] = []
    i, n = 0, len(pattern)
    in_quote = False

    def flush() -> None:
        if literal:
            tokens.append(Token("", 0, "".join(literal)))
            literal.clear()

    while i < n:
        c = pattern[i]
        if c == "'":
            if i + 1 < n and pattern[i + 1] == "'":  # '' is a quote, inside quotes or not
                literal.append("'")
                i += 2
                continue
            in_quote = not in_quote
            i += 1
            continue
        if in_quote or not ("a" <= c <= "z" or "A" <= c <= "Z"):
            literal.append(c)
            i += 1
            continue
        if c not in PATTERN_LETTERS:
            raise ValueError(f"Illegal pattern character '{c}'")
        j = i
        while j < n and pattern[j] == c:
            j += 1
        flush()
        tokens.append(Token(c, j - i))
        i = j
    if in_quote:
        raise ValueError("Unterminated quote")
    flush()
    return tokens


def let(value: Column, body: Callable[[Column], Column]) -> Column:
    """`body(value)` with `value` computed once, however often `body` uses it (a one-element array)."""
    return F.get(F.transform(F.array(value), body), 0)


def floor_div(a: Column, b: int) -> Column:
    return F.call_function("div", a - F.pmod(a, F.lit(b)), F.lit(b))


def _number(value: Column, count: int) -> Column:
    """SimpleDateFormat.zeroPaddingNumber: at least `count` digits."""
    return F.format_string("%d" if count <= 1 else f"%0{count}d", value)


def _name(names: list[str], index: Column) -> Column:
    return F.get(F.array(*[F.lit(x) for x in names]), index)


# Pattern letters Spark's date_format prints exactly as SimpleDateFormat does (English, UTC) for years
# 1..9999, by count; anything else takes the general path below.
_SPARK_SAME = {"y": {2, 4}, "M": {1, 2, 3, 4}, "d": {1, 2}, "H": {1, 2}, "m": {1, 2}, "s": {1, 2}, "S": {3},
               "E": {3, 4}, "a": {1}, "h": {1, 2}}
_YEAR_1_MILLIS = -62135596800000  # 0001-01-01T00:00:00Z
_YEAR_10000_MILLIS = 253402300800000  # 10000-01-01T00:00:00Z


def spark_pattern(tokens: list[Token]) -> str | None:
    """The Spark datetime pattern printing the same text as `tokens`, when there is one."""
    out = []
    for t in tokens:
        if not t.letter:
            out.append("'" + t.text.replace("'", "''") + "'" if t.text else "")
        elif t.count in _SPARK_SAME.get(t.letter, ()):
            out.append(t.letter * t.count)
        else:
            return None
    return "".join(out)


def format_millis(tokens: list[Token], millis: Column) -> Column:
    """SimpleDateFormat.format(new Date(millis)) in UTC, for millis within ±2e9 days of the epoch.

    Common patterns (yyyy-MM-dd, HH:mm:ss.SSS, ...) within years 1..9999 use Spark's own date_format,
    which prints the same text an order of magnitude faster than the general path.
    """
    fast = spark_pattern(tokens)
    general = _format_millis(tokens, millis)
    if fast is None:
        return general
    in_range = (millis >= F.lit(_YEAR_1_MILLIS)) & (millis < F.lit(_YEAR_10000_MILLIS))
    return F.when(in_range, F.date_format(F.timestamp_millis(millis), fast)).otherwise(general)


def _format_millis(tokens: list[Token], millis: Column) -> Column:

    def fields(ms: Column) -> Column:
        # The fields a Calendar holds, computed once; weeks as en-US counts them (Sunday first, 1 day minimum).
        day = F.date_from_unix_date(floor_div(ms, MILLIS_PER_DAY).cast("int"))
        tod = F.pmod(ms, F.lit(MILLIS_PER_DAY))
        saturday = F.date_add(day, 7 - F.dayofweek(day))
        return F.struct(F.year(day).alias("year"), F.month(day).alias("month"), F.dayofmonth(day).alias("day"),
                        F.dayofweek(day).alias("dow"), F.dayofyear(day).alias("doy"),
                        F.call_function("div", tod, F.lit(3_600_000)).cast("int").alias("hour"),
                        F.pmod(F.call_function("div", tod, F.lit(60_000)), F.lit(60)).cast("int").alias("minute"),
                        F.pmod(F.call_function("div", tod, F.lit(1000)), F.lit(60)).cast("int").alias("second"),
                        F.pmod(tod, F.lit(1000)).cast("int").alias("milli"), F.year(saturday).alias("week_year"),
                        F.call_function("div", F.dayofyear(saturday) + 6, F.lit(7)).alias("week"),
                        F.dayofweek(F.trunc(day, "month")).alias("first_dow"))

    def text(p: Column) -> Column:
        parts = [_format_token(t, p) for t in tokens]
        return F.concat(*parts) if parts else F.lit("")

    # Inline, not `let`: a lambda anywhere in a projection makes Spark evaluate all of it without code
    # generation. Each token reads only its own Calendar field, which the optimizer picks out of the struct.
    return F.when(millis.isNotNull(), text(fields(millis)))


def _format_token(t: Token, p: Column) -> Column:
    n, letter = t.count, t.letter
    if not letter:
        return F.lit(t.text)
    year = F.when(p["year"] > 0, p["year"]).otherwise(1 - p["year"])
    hour = p["hour"]
    simple = {
        "d": p["day"], "H": hour, "m": p["minute"], "s": p["second"], "S": p["milli"], "D": p["doy"],
        "k": F.when(hour == 0, 24).otherwise(hour), "K": hour % 12,
        "h": F.when(hour % 12 == 0, 12).otherwise(hour % 12), "u": (p["dow"] + 5) % 7 + 1,
        "F": F.call_function("div", p["day"] - 1, F.lit(7)) + 1, "w": p["week"],
        "W": F.call_function("div", p["day"] + p["first_dow"] - 2, F.lit(7)) + 1,
    }
    if letter in simple:
        return _number(simple[letter], n)
    if letter in "yY":
        value = year if letter == "y" else p["week_year"]
        return _number(value % 100, 2) if n == 2 else _number(value, n)
    if letter in "ML":
        if n >= 4:
            return _name(MONTHS, p["month"] - 1)
        return _name(SHORT_MONTHS, p["month"] - 1) if n == 3 else _number(p["month"], n)
    if letter == "E":
        return _name(WEEKDAYS if n >= 4 else SHORT_WEEKDAYS, p["dow"] - 1)
    if letter == "a":
        return F.when(hour < 12, F.lit("AM")).otherwise(F.lit("PM"))
    if letter == "G":
        return F.when(p["year"] > 0, F.lit("AD")).otherwise(F.lit("BC"))
    # The format's time zone is UTC: z, Z and X print it.
    return F.lit({"z": "Coordinated Universal Time" if n >= 4 else "UTC", "Z": "+0000", "X": "Z"}[letter])


def _alternatives(names: list[str]) -> str:
    return "(?i:" + "|".join(re.escape(x) for x in names) + ")"


def _zone_regex(t: Token) -> str:
    if t.letter == "X":  # ISO 8601: Z, or an offset whose form the count fixes
        offset = {1: r"[+-]\d{2}", 2: r"[+-]\d{4}"}.get(t.count, r"[+-]\d{2}:\d{2}")
        return f"(Z|{offset})"
    # z and Z: RFC 822 (+hhmm), GMT with an optional +h:mm offset, or a name of UTC.
    return r"([+-]\d{4}|(?i:GMT)(?:[+-]\d{1,2}:\d{2})?|(?i:UTC|Coordinated Universal Time|Greenwich Mean Time))"


@dataclass(frozen=True)
class ParsePlan:
    """A pattern compiled for parsing: the regular expression and what each of its groups holds."""

    regex: str
    groups: list[Token]
    supported: bool


def parse_plan(tokens: list[Token]) -> ParsePlan:
    """SimpleDateFormat.parse as a regular expression. A numeric field followed by another numeric field
    takes exactly as many digits as it has letters (obeyCount); otherwise as many digits as there are.
    Any field may be preceded by spaces or tabs. Parsing stops at the end of the pattern: text after it
    is ignored, as Java ignores it."""
    regex, groups = ["^"], []
    for i, t in enumerate(tokens):
        if not t.letter:
            regex.append(re.escape(t.text))
            continue
        regex.append(r"[ \t]*")
        following = tokens[i + 1] if i + 1 < len(tokens) else None
        if t.numeric:
            obey = following is not None and following.letter != "" and following.numeric
            regex.append(rf"(?=[\s\S]{{{t.count}}})(\d{{1,{t.count}}})" if obey else r"(\d+)")
        elif t.letter in "ML":
            regex.append("(" + _alternatives(MONTHS + SHORT_MONTHS) + ")")
        elif t.letter == "E":
            regex.append("(" + _alternatives(WEEKDAYS + SHORT_WEEKDAYS) + ")")
        elif t.letter == "a":
            regex.append("(" + _alternatives(["AM", "PM"]) + ")")
        elif t.letter == "G":
            regex.append("(" + _alternatives(["AD", "BC"]) + ")")
        else:
            regex.append(_zone_regex(t))
        groups.append(t)
    letters = {t.letter for t in groups}
    # Week-based fields, and a day of the week without a day of the month or year, make java.util.Calendar
    # resolve the date from weeks: not supported here.
    supported = not (letters & set("YwWF")) and not (letters & set("Eu") and not letters & set("dD"))
    return ParsePlan("".join(regex), groups, supported)


def _last_index(groups: list[Token], letters: str) -> int:
    return max((i for i, t in enumerate(groups) if t.letter in letters), default=-1)


def _days_from_civil(year: Column, month: Column) -> Column:
    """Days from 1970-01-01 to the first of `month` (1-12) of proleptic Gregorian `year` (longs)."""
    y = year - F.when(month <= 2, 1).otherwise(0)
    era = F.call_function("div", F.when(y >= 0, y).otherwise(y - 399), F.lit(400))
    yoe = y - era * 400
    doy = F.call_function("div", (month + F.when(month > 2, -3).otherwise(9)) * 153 + 2, F.lit(5))
    doe = yoe * 365 + F.call_function("div", yoe, F.lit(4)) - F.call_function("div", yoe, F.lit(100)) + doy
    return era * 146097 + doe - 719468


def parse_millis(plan: ParsePlan, text: Column, century_start: dt.datetime) -> Column:
    """SimpleDateFormat.parse(text).getTime() in UTC (lenient), or null when the text does not match."""
    groups = plan.groups

    def parse(s: Column) -> Column:
        values = [F.regexp_extract(s, plan.regex, i + 1).alias(f"g{i}") for i in range(len(groups))]
        matched = s.rlike(plan.regex)
        return F.when(matched, let(F.struct(*values) if values else F.struct(F.lit(0).alias("g")), compute))

    def number(g: Column) -> Column:
        return F.when(F.length(g) <= 9, g.try_cast("long"))

    def compute(g: Column) -> Column:
        field: dict[str, Column] = {}
        checks = [F.lit(True)]
        for i, t in enumerate(groups):
            raw = g[f"g{i}"]
            if t.numeric:
                field[t.letter] = number(raw)
                checks.append(field[t.letter].isNotNull())
                if t.letter == "y" and t.count <= 2:
                    field["yy"] = F.length(raw) == 2
            elif t.letter in "ML":
                names = {x.lower(): j % 12 + 1 for j, x in enumerate(MONTHS + SHORT_MONTHS)}
                field[t.letter] = F.create_map(*[F.lit(x) for k, v in names.items() for x in (k, v)])[F.lower(raw)]
            elif t.letter in "aG":
                field[t.letter] = F.lower(raw) == F.lit("pm" if t.letter == "a" else "bc")
            elif t.letter in "zZX":
                offset = _offset_minutes(raw)
                field["zone"] = offset
                checks.append(offset.isNotNull())
        for letter, default in (("y", 1970), ("M", 1), ("L", 1), ("d", 1), ("D", 1), ("H", 0), ("k", 0), ("h", 0),
                                ("K", 0), ("m", 0), ("s", 0), ("S", 0)):
            field.setdefault(letter, F.lit(default).cast("long"))
        year = field["y"]
        century = century_start.year // 100 * 100
        if "yy" in field:  # two digits: within 80 years before and 20 after the format's creation
            year = F.when(field["yy"], year + century + F.when(year < century_start.year % 100, 100).otherwise(0)) \
                .otherwise(year)
        if any(t.letter == "G" for t in groups):
            year = F.when(field["G"], 1 - year).otherwise(year)
        month_index = _last_index(groups, "ML")
        month = field["L"] if month_index >= 0 and groups[month_index].letter == "L" else field["M"]
        months = year * 12 + month - 1  # lenient: month 13 is January of the next year
        first = _days_from_civil(F.call_function("div", months - F.pmod(months, F.lit(12)), F.lit(12)),
                                 F.pmod(months, F.lit(12)) + 1)
        use_day_of_year = _last_index(groups, "D") > _last_index(groups, "d")
        if use_day_of_year:
            days = _days_from_civil(year, F.lit(1)) + field["D"] - 1
        else:
            days = first + field["d"] - 1
        hours = _hour_of_day(groups, field)
        offset = field.get("zone", F.lit(0))
        millis = F.try_add(F.try_multiply(days, F.lit(MILLIS_PER_DAY)),
                           hours * 3_600_000 + (field["m"] - offset) * 60_000 + field["s"] * 1000 + field["S"])
        ok = checks[0]
        for c in checks[1:]:
            ok = ok & c
        result = F.when(ok, millis)
        if "yy" in field:  # an ambiguous year that lands before the century start is a century later
            start = int(century_start.replace(tzinfo=dt.timezone.utc).timestamp() * 1000)
            ambiguous = field["yy"] & (field["y"] == century_start.year % 100)
            result = let(result, lambda r: F.when(ambiguous & (r < start) & (r > -MAX_DATE_MILLIS), _plus_century(r))
                         .otherwise(r))
        return result

    return let(text, parse)


def _plus_century(millis: Column) -> Column:
    """Calendar.add(YEAR, 100) on a parsed instant: the same day and time, 100 years later."""
    day = F.date_from_unix_date(floor_div(millis, MILLIS_PER_DAY).cast("int"))
    later = F.add_months(day, 1200)
    return F.try_add(millis, (F.unix_date(later) - F.unix_date(day)).cast("long") * MILLIS_PER_DAY)


def _hour_of_day(groups: list[Token], field: dict[str, Column]) -> Column:
    """Calendar's choice between HOUR_OF_DAY (H, k) and HOUR + AM_PM (h, K, a): the last one set wins."""
    h24 = _last_index(groups, "Hk")
    h12 = _last_index(groups, "hK")
    ampm = _last_index(groups, "a")
    pm = field.get("a", F.lit(False))
    twelve = F.when(pm, 12).otherwise(0)
    if h24 >= 0 and (h12 < 0 or ampm < 0 or h24 > max(h12, ampm)):
        letter = groups[h24].letter
        return F.when(field[letter] == 24, 0).otherwise(field[letter]) if letter == "k" else field[letter]
    if h12 >= 0:
        letter = groups[h12].letter
        hour = F.when(field[letter] == 12, 0).otherwise(field[letter]) if letter == "h" else field[letter]
        return hour + twelve
    return twelve if ampm >= 0 else F.lit(0)


def _offset_minutes(zone: Column) -> Column:
    """The offset a parsed zone names, in minutes; null when out of range (Java refuses hours > 23 and
    minutes > 59). Z, GMT and the names of UTC are 0."""
    offset = r"([+-])(\d{1,2}):?(\d{2})?$"
    sign = F.when(F.regexp_extract(zone, offset, 1) == "-", -1).otherwise(1)
    hours = F.regexp_extract(zone, offset, 2).try_cast("long")
    minutes = F.coalesce(F.regexp_extract(zone, offset, 3).try_cast("long"), F.lit(0).cast("long"))
    return (F.when(~zone.rlike(r"[+-]\d"), F.lit(0).cast("long"))
            .when((hours <= 23) & (minutes <= 59), sign * (hours * 60 + minutes)))


class SimpleDateFormatPattern:
    """A `java.text.SimpleDateFormat` pattern (blank allowed); `message` prefixes Java's complaint."""

    def __init__(self, message: str = ""):
        self.message = message

    def __call__(self, key: str, value: Any) -> str | None:
        if value is None or not value.strip():
            return None
        try:
            compile_pattern(value)
        except ValueError as e:
            return f"{self.message}{value}" if self.message else str(e)
        return None

    def describe(self) -> str:
        return "a java.text.SimpleDateFormat pattern"


# --- conversions through epoch millis ------------------------------------------------------------


def _saturated_multiply(value: Column, factor: int) -> Column:
    """TimeUnit's conversion to a finer unit: Long.MAX_VALUE/MIN_VALUE on overflow."""
    limit = LONG_MAX // factor
    return (F.when(value > limit, F.lit(LONG_MAX)).when(value < -limit, F.lit(LONG_MIN))
            .otherwise(value * factor))


def _type_schema(target: str, optional: bool) -> ConnectSchema:
    return {TYPE_STRING: (STRING_SCHEMA, OPTIONAL_STRING_SCHEMA), TYPE_UNIX: (INT64_SCHEMA, OPTIONAL_INT64_SCHEMA),
            TYPE_DATE: (DATE_SCHEMA, OPTIONAL_DATE_SCHEMA), TYPE_TIME: (TIME_SCHEMA, OPTIONAL_TIME_SCHEMA),
            TYPE_TIMESTAMP: (TIMESTAMP_SCHEMA, OPTIONAL_TIMESTAMP_SCHEMA)}[target][optional]


def timestamp_type_from_schema(schema: ConnectSchema) -> str:
    """TimestampConverter.timestampTypeFromSchema (by the schema's name first, as Kafka does)."""
    names = {TIMESTAMP: TYPE_TIMESTAMP, DATE: TYPE_DATE, TIME: TYPE_TIME}
    if schema.name in names:
        return names[schema.name]
    if schema.type == "string":
        return TYPE_STRING
    if schema.type == "int64":
        return TYPE_UNIX
    shown = f"{schema.name}:{schema.type.upper()}" if schema.name else schema.type.upper()
    raise ValueError(f"Schema Schema{{{shown}}} does not correspond to a known timestamp type format")


def converted(value: Column, error: Column) -> Column:
    """A conversion's result as one struct: the value (null when it failed) and why it failed (else null)."""
    return F.struct(value.alias("value"), error.cast("string").alias("error"))


class TimestampConverter(KeyOrValueTransform):
    """Convert timestamps between different formats such as Unix epoch, strings, and Connect
    Date/Timestamp types. Applies to individual fields or to the entire value.

    As Kafka's TimestampConverter: the input type comes from the schema (Timestamp, Date, Time by name;
    string; int64 is unix), or without a schema from the value (a date or timestamp, a whole number as
    unix, a string). The output has the target type's schema (optional as the input was); within a
    Struct the other fields are copied (`replace.null.with.default`) and the struct keeps its name,
    version, doc, parameters and optionality. Schemaless outputs of Date/Time/Timestamp are VARIANT
    date/timestamp values; a schemaless field that is absent is added as null. Strings are parsed and
    formatted with `format` (SimpleDateFormat, UTC); a string that does not match fails the record.
    """

    @classmethod
    def config_def(cls) -> ConfigDef:
        return (CheckedConfigDef(_check)
                .define("field", Type.STRING, "", importance=Importance.HIGH,
                        doc="The field containing the timestamp, or empty if the entire value is a timestamp")
                .define("target.type", Type.STRING, validator=ValidString.of(
                            TYPE_STRING, TYPE_UNIX, TYPE_DATE, TYPE_TIME, TYPE_TIMESTAMP), importance=Importance.HIGH,
                        doc="The desired timestamp representation: string, unix, Date, Time, or Timestamp")
                .define("format", Type.STRING, "", SimpleDateFormatPattern(
                            "TimestampConverter requires a SimpleDateFormat-compatible pattern for string timestamps: "),
                        importance=Importance.MEDIUM,
                        doc="A SimpleDateFormat-compatible format for the timestamp. Used to generate the output when "
                            "type=string or used to parse the input if the input is a string.")
                .define("unix.precision", Type.STRING, "milliseconds", ValidString.of(*PRECISIONS),
                        importance=Importance.LOW,
                        doc="The desired Unix precision for the timestamp: seconds, milliseconds, microseconds, or "
                            "nanoseconds. Used to generate the output when type=unix or used to parse the input if the "
                            "input is a Long.Note: This SMT will cause precision loss during conversions from, and to, "
                            "values with sub-millisecond components.")
                .define("replace.null.with.default", Type.BOOLEAN, True, importance=Importance.MEDIUM,
                        doc="Whether to replace fields that have a default value and that are null to the default "
                            "value. When set to true, the default value is used, otherwise null is used."))

    def __init__(self, config):
        super().__init__(config)
        self.field: str = config["field"]
        self.target: str = config["target.type"]
        pattern: str = config["format"]
        self.pattern: str | None = pattern if pattern.strip() else None
        self.tokens = compile_pattern(self.pattern) if self.pattern else None
        self.precision: str = config["unix.precision"]
        self.replace_null_with_default: bool = config["replace.null.with.default"]
        # SimpleDateFormat's two-digit years fall within 80 years before and 20 after its creation.
        now = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)
        self.century_start = now.replace(year=now.year - 80, day=min(now.day, 28))

    # --- to and from epoch millis (structs of value and error, each part computed once) ------------

    def to_raw(self, source: str, value: Column) -> Column:
        """Kafka's TimestampTranslator.toRaw: epoch millis of a value of the `source` type."""
        none = F.lit(None)
        if source == TYPE_TIMESTAMP:
            return converted(floor_div(F.unix_micros(value), 1000), none)
        if source == TYPE_DATE:
            return converted(F.unix_date(value).cast("long") * MILLIS_PER_DAY, none)
        if source == TYPE_TIME:
            return converted(value.cast("long"), none)
        if source == TYPE_UNIX:
            unix = value.cast("long")
            millis = {"seconds": _saturated_multiply(unix, 1000), "milliseconds": unix,
                      "microseconds": F.call_function("div", unix, F.lit(1000)),
                      "nanoseconds": F.call_function("div", unix, F.lit(1_000_000))}[self.precision]
            return converted(millis, none)
        if self.tokens is None:  # Kafka's config.format is null: SimpleDateFormat.parse is never reached
            message = 'Cannot invoke "java.text.SimpleDateFormat.parse(String)" because "config.format" is null'
            return converted(F.lit(None).cast("long"), F.when(value.isNotNull(), F.lit(message)))
        plan = parse_plan(self.tokens)
        if not plan.supported:
            message = (f"lakeconnect cannot parse timestamps with the pattern ({self.pattern}): week-based fields "
                       f"(Y, w, W, F, or a day of the week without a day of the month) are not supported")
            return converted(F.lit(None).cast("long"), F.when(value.isNotNull(), F.lit(message)))

        def parsed(s: Column) -> Column:
            message = F.concat(F.lit("Could not parse timestamp: value ("), s,
                               F.lit(f") does not match pattern ({self.pattern})"))
            return let(parse_millis(plan, s, self.century_start),
                       lambda ms: converted(ms, F.when(s.isNotNull() & ms.isNull(), message)))

        return let(value, parsed)

    def to_type(self, millis: Column, schemaless: bool) -> Column:
        """Kafka's TimestampTranslator.toType: the target type's value of epoch millis (Spark types, or
        VARIANTs without a schema). `millis` is used several times: pass a cheap column."""
        target = self.target
        if target == TYPE_UNIX:
            out = {"seconds": F.call_function("div", millis, F.lit(1000)), "milliseconds": millis,
                   "microseconds": _saturated_multiply(millis, 1000),
                   "nanoseconds": _saturated_multiply(millis, 1_000_000)}[self.precision]
            return converted(out.cast("variant") if schemaless else out, F.lit(None))
        limit = MAX_DATE_MILLIS if target in (TYPE_STRING, TYPE_DATE) else MAX_TIMESTAMP_MILLIS
        in_range = (millis >= -limit) & (millis <= limit)
        error = F.when(~in_range, F.concat(F.lit("lakeconnect cannot represent the timestamp "),
                                           millis.cast("string"), F.lit(f" (epoch millis) as a {target}")))
        safe = F.when(in_range, millis)
        if target == TYPE_STRING:
            out = format_millis(self.tokens, safe)
        elif target == TYPE_DATE:
            out = F.date_from_unix_date(floor_div(safe, MILLIS_PER_DAY).cast("int"))
        elif target == TYPE_TIME:
            tod = F.pmod(safe, F.lit(MILLIS_PER_DAY))
            out = F.timestamp_millis(tod) if schemaless else tod.cast("int")
        else:
            out = F.timestamp_millis(safe)
        return converted(out.cast("variant") if schemaless else out, error)

    def convert(self, source: str, value: Column, schemaless: bool = False) -> Column:
        """convertTimestamp(value, source): the struct of the converted value and the failure."""
        raw = self.to_raw(source, value)
        if source != TYPE_STRING:
            # Epoch millis of a Date, Time, Timestamp or unix number is plain arithmetic: Spark compiles
            # it inline, where `let` (a lambda Spark evaluates without code generation) would cost more.
            out = self.to_type(raw["value"], schemaless)
            return converted(out["value"], F.coalesce(raw["error"], out["error"]))
        return self._then_to_type(raw, schemaless)

    def _then_to_type(self, raw: Column, schemaless: bool) -> Column:
        def body(r: Column) -> Column:
            return let(self.to_type(r["value"], schemaless),
                       lambda out: converted(out["value"], F.coalesce(r["error"], out["error"])))

        return let(raw, body)

    def convert_schemaless(self, value: Column) -> Column:
        """convertTimestamp(value) with the type inferred from the VARIANT (inferTimestampType): a date or
        timestamp is a java.util.Date, a whole number a Long (unix), a string a String."""

        def raw(e: Column) -> Column:
            v, kind = e["v"], e["kind"]
            sources = [
                (kind.isin("TIMESTAMP", "TIMESTAMP_NTZ", "DATE"),
                 self.to_raw(TYPE_TIMESTAMP, F.try_variant_get(v, "$", "timestamp"))),
                (kind.isin("TINYINT", "SMALLINT", "INT", "BIGINT"),
                 self.to_raw(TYPE_UNIX, F.try_variant_get(v, "$", "long"))),
                (kind == "STRING", self.to_raw(TYPE_STRING, F.try_variant_get(v, "$", "string"))),
            ]
            unsupported = F.concat(F.lit("TimestampConverter does not support class "),
                                   F.coalesce(_kind_classes()[kind], kind), F.lit(" objects as timestamps"))
            out = converted(F.lit(None).cast("long"),
                            F.when(v.isNull() | (kind == "VOID"), F.lit(None)).otherwise(unsupported))
            for cond, source in reversed(sources):
                out = F.when(cond, source).otherwise(out)
            return out

        def typed(v: Column) -> Column:
            return F.struct(v.alias("v"), F.regexp_extract(F.schema_of_variant(v), r"^([A-Z_]+)", 1).alias("kind"))

        return self._then_to_type(let(let(value, typed), raw), schemaless=True)

    # --- apply ---------------------------------------------------------------------------------------

    def apply(self, batch: RecordBatch) -> RecordBatch:
        data_type = self.operating_type(batch)
        if isinstance(data_type, T.NullType):
            return batch
        if self.is_schemaless(batch):
            value = self.operating_value()
            if not isinstance(data_type, T.VariantType):
                value = to_variant(value, data_type)
            return self._apply_schemaless(batch, value)
        return self._apply_with_schema(batch, self.operating_schema(batch))

    def _with_conversion(self, batch: RecordBatch, conversion: Column, condition: Column,
                         finish: Callable[[RecordBatch, Column], RecordBatch]) -> RecordBatch:
        """Compute `conversion` once into a working column, fail the records it could not convert (where
        `condition` holds), let `finish` build the new record from its value, then drop the column."""
        batch = batch.set({_WORK: conversion})
        error = F.col(_WORK)["error"]
        if self.tokens is None:  # Kafka's SimpleDateFormat is null: a string input throws a NullPointerException
            npe = error.startswith('Cannot invoke "java.text.SimpleDateFormat')
            batch = batch.fail(condition & npe, error, exception=NULL_POINTER_EXCEPTION)
        batch = batch.fail(condition & error.isNotNull(), error)
        out = finish(batch, F.col(_WORK)["value"])
        return out.with_df(out.df.drop(_WORK, _MILLIS))

    def _convert_in(self, batch: RecordBatch, source: str, value: Column) -> tuple[RecordBatch, Column]:
        """`convert(source, value)`, with the epoch millis of a non-string source in a working column first.

        The conversion reads the millis many times (range checks, the fast and the general format). As a
        column reference that is one small node each time; as the expression itself, Spark's optimizer
        copies it into every reader of every transform after this one, and planning alone takes seconds.
        """
        if source == TYPE_STRING:
            return batch, self.convert(source, value)
        batch = batch.set({_MILLIS: self.to_raw(source, value)["value"]})  # non-string sources never fail here
        return batch, self.to_type(F.col(_MILLIS), schemaless=False)

    def _apply_schemaless(self, batch: RecordBatch, value: Column) -> RecordBatch:
        if not self.field:
            is_null = value.isNull() | F.is_variant_null(value)
            return self._with_conversion(batch, self.convert_schemaless(value), F.lit(True), lambda b, converted_value:
                                         self.new_record(b, None, F.when(is_null, value).otherwise(converted_value)))
        batch = require_map(batch, value, PURPOSE)
        entries = as_map(value)

        def finish(b: RecordBatch, converted_value: Column) -> RecordBatch:
            # HashMap.put(field, convertTimestamp(value.get(field))): an absent field is added as null.
            updated = put_entries(entries, [(self.field, converted_value, None)])
            return self.new_record(b, None, F.when(entries.isNotNull(), object_of(updated)).otherwise(value))

        return self._with_conversion(batch, self.convert_schemaless(entries[self.field]), entries.isNotNull(), finish)

    def _apply_with_schema(self, batch: RecordBatch, schema: ConnectSchema) -> RecordBatch:
        value = self.operating_value()
        if not self.field:
            try:
                source = timestamp_type_from_schema(schema)
            except ValueError as e:  # thrown before the value is looked at: tombstones fail too
                return batch.fail(F.lit(True), str(e), exception=CONNECT_EXCEPTION)
            updated_schema = _type_schema(self.target, schema.optional)
            batch, conversion = self._convert_in(batch, source, value)
            return self._with_conversion(batch, conversion, F.lit(True),
                                         lambda b, v: self.new_record(b, updated_schema, v))
        not_struct = struct_required_message(schema, PURPOSE)
        if not_struct:  # a null value then fails on schema.fields()
            message = F.when(value.isNull(), F.lit("Cannot list fields on non-struct type")).otherwise(not_struct)
            return batch.fail(F.lit(True), message)
        field = schema.field(self.field)
        if field is None:  # nothing to convert: the Struct is copied
            return self._copy_struct(batch, schema, value, None, None)
        try:
            source = timestamp_type_from_schema(field.schema)
        except ValueError as e:
            return batch.fail(value.isNotNull(), str(e), exception=CONNECT_EXCEPTION)
        batch, conversion = self._convert_in(batch, source,
                                             struct_get(value, field, self.replace_null_with_default))
        return self._with_conversion(batch, conversion, value.isNotNull(), lambda b, v: self._copy_struct(
            b, schema, value, field, v))

    def _copy_struct(self, batch: RecordBatch, schema: ConnectSchema, value: Column, converted_field: Field | None,
                     converted_value: Column | None) -> RecordBatch:
        """The new Struct: the converted field with the target type's schema, the others as they were."""
        fields: list[Field] = []
        columns: list[Column] = []
        checks: list[Column] = []
        for f in schema.fields:
            out_schema, got = f.schema, struct_get(value, f, self.replace_null_with_default)
            if converted_field is not None and f.name == converted_field.name:
                out_schema, got = _type_schema(self.target, f.schema.optional), converted_value
            fields.append(Field(f.name, len(fields), out_schema))
            columns.append(got.alias(f.name))
            if not self.replace_null_with_default and f.schema.default is not None:
                checks.append(required_null_message(f.name, out_schema, got))
        if checks:
            message = F.coalesce(*checks)
            batch = batch.fail(value.isNotNull() & message.isNotNull(), message)
        # copySchemaBasics, plus the struct's optionality. (Kafka also converts a struct-level default
        # value; such a default is dropped here.)
        updated_schema = ConnectSchema("struct", schema.optional, schema.name, schema.version, schema.doc,
                                       schema.parameters, fields=tuple(fields))
        return self.new_record(batch, updated_schema, self.unless_null(batch, F.struct(*columns)))


_WORK = "__lc_timestamp_converter"
_MILLIS = "__lc_timestamp_converter_millis"


def _kind_classes() -> Column:
    """The Java class a VARIANT type stands for; JSON's non-integral numbers are Doubles to Kafka."""
    classes = {**_JAVA_CLASS, "DECIMAL": "java.lang.Double", "TIMESTAMP_NTZ": "java.util.Date"}
    return F.create_map(*[F.lit(x) for k, v in classes.items() for x in (k, v)])


def _check(values: dict[str, Any]) -> list[Problem]:
    """What TimestampConverter.configure rejects beyond single keys."""
    if values.get("target.type") == TYPE_STRING and "format" in values and not values["format"].strip():
        return [Problem("format", "TimestampConverter requires format option to be specified when using string "
                                  "timestamps")]
    return []


_KEY_ALIASES, _VALUE_ALIASES = kafka_names("TimestampConverter")


class TimestampConverterKey(TimestampConverter):
    __doc__ = TimestampConverter.__doc__
    part = KEY
    aliases = _KEY_ALIASES


class TimestampConverterValue(TimestampConverter):
    __doc__ = TimestampConverter.__doc__
    aliases = _VALUE_ALIASES
