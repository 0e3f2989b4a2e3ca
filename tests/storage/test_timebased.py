"""Confluent's time-based partitioning: Joda-Time patterns, zones and buckets, the partitioners' config
rules, and the timestamp extractors on small batches. Expected strings are Joda-Time's own (2.14 on
JDK 17), written out by hand."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from pyspark.sql import functions as F

from connectors.storage.joda import DAY_MS, HOUR_MS, JodaPattern, zone
from connectors.storage.timebased import TimePartitioning, bucket, missing_timestamp_message, timestamp_column
from ingest.errors import ConfigError, DataError
from ingest.records.schema import (
    FLOAT64_SCHEMA, INT64_SCHEMA, OPTIONAL_INT64_SCHEMA, OPTIONAL_STRING_SCHEMA, date, struct, timestamp,
)
from tests.transforms.helpers import batch_of

HOURLY_PATH = "'year'=YYYY/'month'=MM/'day'=dd/'hour'=HH"
T = 1686229500000  # 2023-06-08T13:05:00Z, a Thursday


def ms(iso: str) -> int:
    return int(dt.datetime.fromisoformat(iso).replace(tzinfo=dt.timezone.utc).timestamp() * 1000)


def fmt(pattern: str, instant: int = T, timezone: str = "UTC", locale: str = "en") -> str:
    return JodaPattern(pattern, locale).format(instant, zone(timezone))


# --- patterns --------------------------------------------------------------------------------------


def test_hourly_path_in_utc_and_in_new_york():
    assert fmt(HOURLY_PATH) == "year=2023/month=06/day=08/hour=13"
    assert fmt(HOURLY_PATH, timezone="America/New_York") == "year=2023/month=06/day=08/hour=09"
    assert fmt(HOURLY_PATH, timezone="Asia/Kolkata") == "year=2023/month=06/day=08/hour=18"


def test_numbers_weeks_centuries_and_two_digit_years():
    assert fmt("C CC Y YY YYY y yy x xx w ww e ee D DDD") == "20 20 2023 23 2023 2023 23 2023 23 23 23 4 04 159 159"
    # 2021-01-03 is a Sunday of ISO week 53 of 2020
    assert fmt("xxxx-'W'ww-e yyyy", ms("2021-01-03T12:00:00")) == "2020-W53-7 2021"
    midnight = ms("2023-06-08T00:00:00")
    assert fmt("h hh K k kk H HH m s", midnight) == "12 12 0 24 24 0 00 0 0"
    assert fmt("S SS SSS SSSS SSSSSS", T + 7) == "0 00 007 0070 007000"
    assert fmt("SSSSSSSSSSSSSSSSS", T + 7) == "007000000000000"  # Joda keeps at most 15 digits


def test_years_before_the_common_era():
    year_minus_1 = ms("0001-01-01T00:00:00") - 366 * DAY_MS  # ISO year 0 is 1 BC; -1 is 2 BC
    assert fmt("yyyy YYYY yy YY G C", year_minus_1 - 365 * DAY_MS) == "-0001 0002 01 01 BC 0"
    assert fmt("G", year_minus_1, locale="en-US") == "BCE"  # Java's root locale


def test_text_follows_java_new_locale():
    # Confluent builds `new Locale(value)`: the value is the language, so only `fr` is French;
    # fr-FR, en-GB and en_US are languages Java does not know, printed with the root locale's names.
    assert fmt("MMM MMMM E EEEE a G", locale="fr") == "juin juin jeu. jeudi PM ap. J.-C."
    assert fmt("MMM MMMM E EEEE a G", locale="fr-FR") == "Jun Jun Thu Thu PM CE"
    assert fmt("MMM MMMM E EEEE a G", locale="en") == "Jun June Thu Thursday PM AD"
    assert fmt("MMM MMMM E EEEE", locale="EN") == "Jun June Thu Thursday"
    assert fmt("E EEEE", locale="en-GB") == "Thu Thu"
    assert fmt("E", locale="en_US") == "Thu"
    assert fmt("MMMM EEEE", locale="de") == "Juni Donnerstag"
    assert fmt("a", ms("2023-06-08T01:00:00"), locale="en") == "AM"


def test_quotes_and_literal_text():
    assert fmt("'it''s' yyyy''MM") == "it's 2023'06"
    assert fmt("'year'=yyyy/'T'HH") == "year=2023/T13"
    assert fmt("''") == "'"
    assert fmt("yyyy 'unterminated MM") == "2023 unterminated MM"
    assert fmt("dd.MM.yyyy - HH:mm") == "08.06.2023 - 13:05"


@pytest.mark.parametrize("pattern, message", [
    ("yyyy-MM-dd q", "Illegal pattern component: q"),
    ("uuuu", "Illegal pattern component: uuuu"),
    ("'year'=YYYY/hour=HH", "Illegal pattern component: o"),  # unquoted text is read as letters: h is one, o is not
    ("", "Invalid pattern specification"),
])
def test_illegal_patterns(pattern, message):
    with pytest.raises(ValueError, match=message):
        JodaPattern(pattern, "en")


def test_offsets_ids_and_zone_names():
    assert fmt("Z ZZ ZZZ") == "+0000 +00:00 UTC"
    assert fmt("Z ZZ ZZZ", timezone="America/New_York") == "-0400 -04:00 America/New_York"
    assert fmt("Z ZZ ZZZ", timezone="US/Eastern") == "-0400 -04:00 America/New_York"  # a link prints its target
    assert fmt("Z ZZ ZZZ z zzzz", timezone="+05:30") == "+0530 +05:30 +05:30 +05:30 +05:30"
    assert fmt("z zzzz") == "UTC Coordinated Universal Time"
    with pytest.raises(ValueError, match="zone names"):
        fmt("z", timezone="Europe/Paris")


# --- zones and buckets -----------------------------------------------------------------------------


@pytest.mark.parametrize("timezone, joda_id", [
    ("UTC", "UTC"), ("Europe/Paris", "Europe/Paris"), ("America/New_York", "America/New_York"),
    ("+01:00", "+01:00"), ("-08:00", "-08:00"), ("+0100", "+01:00"), ("+01", "+01:00"),
    ("+01:30:15.123", "+01:30:15.123"), ("-00:00", "UTC"), ("Etc/GMT+5", "Etc/GMT+5"),
])
def test_zone_ids(timezone, joda_id):
    assert zone(timezone).id == joda_id


@pytest.mark.parametrize("timezone, offset", [("EST", "-05:00"), ("CET", "+01:00"), ("MST", "-07:00"), ("HST", "-10:00")])
def test_tz_database_abbreviated_zones(timezone, offset):
    assert fmt("ZZ", ms("2023-01-15T00:00:00"), timezone) == offset


@pytest.mark.parametrize("timezone", ["utc", "Europe/paris", "+1:00", "+24:00", "GMT+1", "", "Factory", "localtime"])
def test_unknown_zones(timezone):
    with pytest.raises(ValueError, match=re.escape(f"The datetime zone id '{timezone}' is not recognised")):
        zone(timezone)


@pytest.mark.parametrize("timezone, at, duration, start", [
    ("UTC", "2023-06-08T13:05:00", 60_000, "2023-06-08T13:05:00"),
    ("UTC", "2023-06-08T13:05:00", HOUR_MS, "2023-06-08T13:00:00"),
    ("UTC", "2023-06-08T13:05:00", DAY_MS, "2023-06-08T00:00:00"),
    ("America/New_York", "2023-06-08T13:05:00", DAY_MS, "2023-06-08T04:00:00"),
    ("Asia/Kathmandu", "2023-06-08T13:05:00", HOUR_MS, "2023-06-08T12:15:00"),  # +05:45
    # New York springs forward at 07:00Z (02:00 EST -> 03:00 EDT): local 02:00 is in the gap.
    ("America/New_York", "2023-03-12T07:30:00", HOUR_MS, "2023-03-12T07:00:00"),
    ("America/New_York", "2023-03-12T07:30:00", 2 * HOUR_MS, "2023-03-12T07:00:00"),
    ("America/New_York", "2023-03-12T07:30:00", DAY_MS, "2023-03-12T05:00:00"),
    # ... and falls back at 06:00Z: 01:30 EST goes to the first 01:00 (EDT).
    ("America/New_York", "2023-11-05T06:30:00", HOUR_MS, "2023-11-05T05:00:00"),
    ("America/New_York", "2023-11-05T06:30:00", 2 * HOUR_MS, "2023-11-05T04:00:00"),
    # Paris falls back at 01:00Z: east of Greenwich Joda takes the later 02:00 (CET), after the record.
    ("Europe/Paris", "2023-10-29T00:45:00", HOUR_MS, "2023-10-29T01:00:00"),
    ("Europe/Paris", "2023-10-29T00:45:00", 60_000, "2023-10-29T01:45:00"),
    ("Europe/Paris", "2023-03-26T01:30:00", HOUR_MS, "2023-03-26T01:00:00"),
    ("Europe/Paris", "2023-03-26T01:30:00", DAY_MS, "2023-03-25T23:00:00"),
    # Java's long division truncates towards zero: before 1970, buckets round up towards 1970.
    ("UTC", "1969-12-31T23:59:59.999", 60_000, "1970-01-01T00:00:00"),
    ("UTC", "1969-12-31T23:59:59.999", DAY_MS, "1970-01-01T00:00:00"),
    ("UTC", "1969-12-31T22:30:00", HOUR_MS, "1969-12-31T23:00:00"),
    ("America/New_York", "1969-12-31T23:30:00", DAY_MS, "1970-01-01T05:00:00"),
])
def test_bucket(timezone, at, duration, start):
    assert bucket(ms(at), duration, zone(timezone)) == ms(start)


# --- configuration ---------------------------------------------------------------------------------


def time_based(**settings) -> TimePartitioning:
    config = {"partitioner.class": "io.confluent.connect.storage.partitioner.TimeBasedPartitioner",
              "partition.duration.ms": "3600000", "path.format": HOURLY_PATH, "locale": "en-US",
              "timezone": "UTC", "timestamp.extractor": "Record"}
    return TimePartitioning.from_config({**config, **settings})


def test_every_problem_is_reported():
    with pytest.raises(ConfigError) as e:
        TimePartitioning.from_config({"partitioner.class": "TimeBasedPartitioner", "timestamp.extractor": "Foo"})
    problems = {p.key: p.message for p in e.value.problems}
    assert set(problems) == {"partition.duration.ms", "path.format", "locale", "timezone", "timestamp.extractor"}
    assert "-1" in problems["partition.duration.ms"]
    assert problems["path.format"].startswith("Path format cannot be empty")
    assert problems["timestamp.extractor"].startswith("Invalid timestamp extractor: Foo")

    with pytest.raises(ConfigError) as e:
        time_based(**{"path.format": "'year'=YYYY/hour=HH", "timezone": "Mars/Olympus", "partition.duration.ms": "0",
                      "timestamp.extractor": "RecordField", "timestamp.field": ""})
    problems = {p.key: p.message for p in e.value.problems}
    assert set(problems) == {"path.format", "timezone", "partition.duration.ms", "timestamp.field"}
    assert "Illegal pattern component: o" in problems["path.format"]
    assert "The datetime zone id 'Mars/Olympus' is not recognised" in problems["timezone"]


def test_time_based_settings():
    p = time_based(**{"path.format": HOURLY_PATH + "/", "timezone": "America/New_York"})
    assert (p.partitioner, p.duration_ms, p.path_format) == ("TimeBasedPartitioner", HOUR_MS, HOURLY_PATH)
    assert p.deterministic and not time_based(**{"timestamp.extractor": "Wallclock"}).deterministic
    assert p.encode(T) == "year=2023/month=06/day=08/hour=09"
    assert p.encode(T + 60_000) == p.encode(T)
    assert len(p._encoded) == 1  # one format per bucket
    p = time_based(**{"timestamp.extractor": "io.confluent.connect.storage.partitioner."
                                             "TimeBasedPartitioner$RecordFieldTimestampExtractor"})
    assert (p.extractor, p.field) == ("RecordField", "timestamp")


def test_daily_and_hourly_use_their_own_path_and_duration():
    daily = TimePartitioning.from_config({"partitioner.class": "DailyPartitioner", "locale": "en", "timezone": "UTC",
                                          "directory.delim": "_", "path.format": "ignored", "partition.duration.ms": 5})
    assert (daily.duration_ms, daily.path_format) == (DAY_MS, "'year'=YYYY_'month'=MM_'day'=dd")
    assert daily.encode(T) == "year=2023_month=06_day=08"
    hourly = TimePartitioning.from_config({"partitioner.class": "io.confluent.connect.storage.partitioner."
                                                                "HourlyPartitioner",
                                           "locale": "en", "timezone": "Europe/Paris", "directory.delim": "|"})
    assert hourly.encode(T) == "year=2023|month=06|day=08|hour=15"
    with pytest.raises(ConfigError) as e:
        TimePartitioning.from_config({"partitioner.class": "HourlyPartitioner"})
    assert {p.key for p in e.value.problems} == {"locale", "timezone"}


# --- extractors ------------------------------------------------------------------------------------

VALUE_SCHEMA = struct(None, ("millis", OPTIONAL_INT64_SCHEMA), ("at", timestamp(True)),
                      ("iso", OPTIONAL_STRING_SCHEMA), ("ratio", FLOAT64_SCHEMA), ("day", date(True)),
                      ("meta", struct(None, ("created", INT64_SCHEMA), optional=True)))
ISO = ["2023-06-08T13:45:00Z", "2023-06-08T13:45:00.123+02:00", "2023-06-08", "2023-W23-4T10", "not a date", None]
SCHEMALESS_VALUES = [{"ts": 1686229500000}, {"ts": "2023-06-08T13:45:00Z"}, {"ts": 1686229500000.9},
                     {"a": {"b": 1686229500001}, "x.y": 7}, {"ts": True}, {"ts": None}, "text", None]


@pytest.fixture(scope="module")
def extracted(spark):
    """One Spark job per batch: every extraction the tests below read."""
    at = dt.datetime(2023, 6, 8, 13, 5, tzinfo=dt.timezone.utc)
    rows = [{"value": {"millis": 1686229500000 + i, "at": at, "iso": iso, "ratio": 1.5, "meta": {"created": 42}},
             "timestamp": at if i else None} for i, iso in enumerate(ISO)]
    with_schema = batch_of(spark, rows + [{"value": None, "timestamp": at}], value_schema=VALUE_SCHEMA)
    columns = {name: timestamp_column("RecordField", name, with_schema) for name in ("millis", "at", "iso", "meta.created")}
    columns["record"] = timestamp_column("Record", None, with_schema)
    got = with_schema.df.select(*[c.alias(n) for n, c in columns.items()]).collect()
    schemaless = batch_of(spark, [{"value": v} for v in SCHEMALESS_VALUES])
    fields = {"ts": "ts", "a.b": "a.b", "xy": '"x.y"'}
    loose = schemaless.df.select(*[timestamp_column("RecordField", f, schemaless).alias(n)
                                   for n, f in fields.items()]).collect()
    return {name: [r[name] for r in got] for name in columns} | {name: [r[name] for r in loose] for name in fields}


def test_record_timestamp(extracted):
    assert extracted["record"] == [None] + [T] * 6  # no timestamp: null, the caller fails the record
    assert missing_timestamp_message("Record") == (
        "Unable to determine timestamp using timestamp.extractor "
        "io.confluent.connect.storage.partitioner.TimeBasedPartitioner$RecordTimestampExtractor for record: ")


def test_record_field_with_a_schema(extracted):
    assert extracted["millis"] == [1686229500000 + i for i in range(6)] + [None]  # the last is a tombstone
    assert extracted["at"] == [T] * 6 + [None]
    assert extracted["meta.created"] == [42] * 6 + [None]
    assert extracted["iso"] == [ms("2023-06-08T13:45:00"), ms("2023-06-08T11:45:00.123"), ms("2023-06-08T00:00:00"),
                                ms("2023-06-08T10:00:00"), None, None, None]


def test_record_field_schemaless(extracted):
    assert extracted["ts"] == [T, ms("2023-06-08T13:45:00"), T, None, None, None, None, None]
    assert extracted["a.b"] == [None, None, None, T + 1, None, None, None, None]
    assert extracted["xy"] == [None, None, None, 7, None, None, None, None]  # quotes keep the dot in the name


def test_record_field_problems_of_the_whole_batch(spark):
    batch = batch_of(spark, [], value_schema=VALUE_SCHEMA)
    with pytest.raises(DataError, match=r"'nope' does not exist.*millis, at, iso, ratio, day, meta"):
        timestamp_column("RecordField", "nope", batch)
    with pytest.raises(DataError, match=r"'meta.nope' does not exist.*meta has the fields: created"):
        timestamp_column("RecordField", "meta.nope", batch)
    with pytest.raises(DataError, match="record field: ratio: it is float64"):
        timestamp_column("RecordField", "ratio", batch)
    with pytest.raises(DataError, match=r"record field: day: it is int32 \(org.apache.kafka.connect.data.Date\)"):
        timestamp_column("RecordField", "day", batch)
    strings = batch_of(spark, [], value_schema=OPTIONAL_STRING_SCHEMA)
    with pytest.raises(DataError, match="these values are string"):
        timestamp_column("RecordField", "ts", strings)
    assert timestamp_column("Wallclock", None, batch) is None
    assert isinstance(timestamp_column("Record", None, batch), type(F.lit(1)))
