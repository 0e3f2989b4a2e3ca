"""Joda-Time's zones and patterns, as Confluent's time-based partitioners (connectors/storage/timebased.py)
use them: `zone` reads a `timezone` as Joda's `DateTimeZone.forID` (a `JodaZone`, with Joda's answers in
DST gaps and overlaps), and `JodaPattern` prints an instant with a `path.format` pattern as Joda's
`DateTimeFormat.forPattern(...).withZone(zone).print(instant)` does.

Where Joda's results depend on the Java runtime, this module follows Joda-Time 2.14 on JDK 17:

- `locale` is read as Java's `new Locale(value)`: the whole value is the *language*. `en` and `fr`
  print English and French names; `en-US`, `fr-FR` or `en_GB` are languages Java does not know, so
  they print the root locale's names (`Jun` for both MMM and MMMM, `Thu` for E and EEEE, era `CE`).
  Names come from CLDR (babel); Java releases differ slightly among themselves.
- zone names (`z`, `zzzz`) exist only for UTC and fixed offsets: for region zones Java prints names
  from its own tables (`BRT`, `heure d’été d’Europe centrale`), which are not reproduced here.
"""

from __future__ import annotations

import datetime as dt
import functools
import importlib.resources
import pathlib
import re
import zoneinfo
from typing import Any, NamedTuple

from babel import Locale, UnknownLocaleError

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


@functools.lru_cache(maxsize=1)  # no arguments: one entry, the file read once per process
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


@functools.lru_cache(maxsize=1)  # no arguments: one entry
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


# Keyed by the `locale` a config writes: a few distinct values in practice, and Java knows some 200 languages;
# a long-running process seeing more only builds the least recent again (babel's data, 2 to 7 ms).
@functools.lru_cache(maxsize=256)
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
            return (names.months[f.month - 1] if n >= 4 else names.months_short[f.month - 1] if n == 3
                    else _number(f.month, n))
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
