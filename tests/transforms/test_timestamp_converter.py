"""TimestampConverter ($Key/$Value), ported from Kafka's TimestampConverterTest (same inputs, same outputs:
schemaless and schema'd conversions between Timestamp, Date, Time, unix and string, null values and null
fields, unix precisions, the key variant, configuration errors), plus the book's JDBC example, parse
failures, unsupported schemas, replace.null.with.default, SimpleDateFormat patterns (formatting,
lenient parsing, zones), predicates and plan checks."""

from __future__ import annotations

import datetime as dt

import pytest
from pyspark.sql import functions as F

from connectors.predicates import TopicNameMatches
from connectors.transforms.timestamp_converter import (
    TimestampConverterKey, TimestampConverterValue, compile_pattern, format_millis, parse_millis, parse_plan,
)
from ingest.errors import ConfigError
from ingest.records import ERROR
from ingest.records.schema import (
    DATE_SCHEMA, FLOAT64_SCHEMA, INT32_SCHEMA, INT64_SCHEMA, OPTIONAL_DATE_SCHEMA, OPTIONAL_INT64_SCHEMA,
    OPTIONAL_STRING_SCHEMA, OPTIONAL_TIME_SCHEMA, OPTIONAL_TIMESTAMP_SCHEMA, STRING_SCHEMA, TIME_SCHEMA,
    TIMESTAMP_SCHEMA, ConnectSchema, struct,
)
from tests.converters.helpers import assert_no_python
from tests.transforms.helpers import SCHEMALESS, apply, apply_one, batch_of, make, records, schema

UTC = dt.timezone.utc
STRING_DATE_FMT = "yyyy MM dd HH mm ss SSS z"
DATE_PLUS_TIME = dt.datetime(1970, 1, 2, 0, 0, 1, 234000)  # 86 401 234 ms
DATE = dt.date(1970, 1, 2)
TIME_MILLIS = 1234
DATE_PLUS_TIME_UNIX = 86401234
DATE_PLUS_TIME_UNIX_MICROS = DATE_PLUS_TIME_UNIX * 1000 + 123
DATE_PLUS_TIME_UNIX_NANOS = DATE_PLUS_TIME_UNIX_MICROS * 1000 + 456
DATE_PLUS_TIME_UNIX_SECONDS = 86401
DATE_PLUS_TIME_STRING = "1970 01 02 00 00 01 234 UTC"


def _aware(d: dt.datetime) -> dt.datetime:
    return d.replace(tzinfo=UTC)


def _variants(spark, *values):
    """A schemaless batch whose values are the given VARIANT expressions (None: a tombstone)."""
    b = batch_of(spark, [{"value": 0} for _ in values])
    value = F.lit(None).cast("variant")
    for i, v in enumerate(values):
        if v is not None:
            value = F.when(F.col("seq") == i, v.cast("variant")).otherwise(value)
    return b.with_df(b.df.withColumn("value", value))


def _chain(batch, *configs):
    for config in configs:
        batch = apply_one(make(TimestampConverterValue, config), batch)
    return batch


def test_config():
    for bad, message in [({}, "target.type: missing required configuration"),
                         ({"target.type": "invalid"}, "target.type: invalid value 'invalid'"),
                         ({"target.type": "unix", "unix.precision": "invalid"}, "unix.precision: invalid value"),
                         ({"target.type": "string"}, "format: TimestampConverter requires format option to be "
                                                     "specified when using string timestamps"),
                         ({"target.type": "string", "format": "  "}, "requires format option"),
                         ({"target.type": "string", "format": "bad-format"},
                          "format: TimestampConverter requires a SimpleDateFormat-compatible pattern for string "
                          "timestamps: bad-format"),
                         ({"target.type": "Date", "format": "'unterminated"}, "SimpleDateFormat-compatible")]:
        with pytest.raises(ConfigError, match=message):
            make(TimestampConverterValue, bad)
    make(TimestampConverterValue, {"target.type": "unix", "unix.precision": "seconds"})
    assert TimestampConverterValue.aliases == ("org.apache.kafka.connect.transforms.TimestampConverter$Value",)
    keys = TimestampConverterValue.config_def().keys
    assert (keys["field"].default, keys["format"].default, keys["unix.precision"].default) == ("", "", "milliseconds")
    assert keys["target.type"].doc == "The desired timestamp representation: string, unix, Date, Time, or Timestamp"


def test_schemaless_conversions(spark):
    """testSchemaless*: Timestamp to every type, every type to Timestamp, null values, unsupported types."""
    inputs = _variants(spark, F.lit(_aware(DATE_PLUS_TIME)), F.lit(DATE), F.timestamp_millis(F.lit(TIME_MILLIS)),
                       F.lit(DATE_PLUS_TIME_UNIX), F.lit(DATE_PLUS_TIME_STRING), None, F.lit(1.5).cast("double"))
    unsupported = "TimestampConverter does not support class java.lang.Double objects as timestamps"
    day, epoch = dt.datetime(1970, 1, 2, tzinfo=UTC), dt.datetime(1970, 1, 1, tzinfo=UTC)
    time_of_day = dt.datetime(1970, 1, 1, 0, 0, 1, 234000, tzinfo=UTC)
    expected = {
        "Timestamp": [_aware(DATE_PLUS_TIME), day, time_of_day, _aware(DATE_PLUS_TIME), _aware(DATE_PLUS_TIME)],
        "Date": [DATE, DATE, epoch.date(), DATE, DATE],
        "Time": [time_of_day, epoch, time_of_day, time_of_day, time_of_day],
        "unix": [DATE_PLUS_TIME_UNIX, 86400000, TIME_MILLIS, DATE_PLUS_TIME_UNIX, DATE_PLUS_TIME_UNIX],
        "string": [DATE_PLUS_TIME_STRING, "1970 01 02 00 00 00 000 UTC", "1970 01 01 00 00 01 234 UTC",
                   DATE_PLUS_TIME_STRING, DATE_PLUS_TIME_STRING],
    }
    for target, values in expected.items():
        out = apply_one(make(TimestampConverterValue, {"target.type": target, "format": STRING_DATE_FMT}), inputs)
        assert schema(out) is None
        rs = records(out)
        assert [r["value"] for r in rs[:6]] == [*values, None], target
        assert [r.get("error") for r in rs] == [None] * 6 + [unsupported], target


def test_schemaless_fields_precisions_and_key(spark):
    # testSchemalessFieldConversion, null fields, testSchemalessStringToUnix_{Micros,Nanos,Seconds}
    b = _variants(spark, F.to_variant_object(F.struct(F.lit(_aware(DATE_PLUS_TIME)).alias("ts"),
                                                      *[F.lit(DATE_PLUS_TIME_STRING).alias(n) for n in "mns"])),
                  F.parse_json(F.lit('{"other": 1}')), None, F.lit("not a map"))
    out = _chain(b, {"target.type": "Date", "field": "ts"},
                 *[{"target.type": "unix", "field": n, "unix.precision": p, "format": STRING_DATE_FMT}
                   for n, p in (("m", "microseconds"), ("n", "nanoseconds"), ("s", "seconds"))])
    rs = records(out)
    assert rs[0]["value"] == {"ts": DATE, "m": 86401234000, "n": 86401234000000, "s": DATE_PLUS_TIME_UNIX_SECONDS}
    assert rs[1]["value"] == {"other": 1, "ts": None, "m": None, "n": None, "s": None}  # put(field, null)
    assert rs[2]["value"] is None and "error" not in rs[2]
    assert rs[3]["error"] == ("Only Map objects supported in absence of schema for [converting timestamp formats], "
                              "found: java.lang.String")
    # testKey
    kb = batch_of(spark, [{"key": 0, "value": None}], key_schema=SCHEMALESS, value_schema=None)
    kb = kb.with_df(kb.df.withColumn("key", F.lit(_aware(DATE_PLUS_TIME)).cast("variant")))
    key_out = apply_one(make(TimestampConverterKey, {"target.type": "Timestamp"}), kb)
    assert schema(key_out, "key") is None and records(key_out)[0]["key"] == _aware(DATE_PLUS_TIME)


def test_with_schema_from_timestamp(spark):
    """testWithSchemaTimestampTo{Date,Time,Unix,String} and testWithSchemaIdentity, as fields of one Struct."""
    names = ["date", "time", "unix", "string", "identity"]
    s = struct("row", *[(n, TIMESTAMP_SCHEMA) for n in names], version=3)
    b = batch_of(spark, [{"value": {n: DATE_PLUS_TIME for n in names}}], value_schema=s)
    out = _chain(b, *[{"field": n, "target.type": t, "format": STRING_DATE_FMT}
                      for n, t in zip(names, ["Date", "Time", "unix", "string", "Timestamp"])])
    assert schema(out) == struct("row", ("date", DATE_SCHEMA), ("time", TIME_SCHEMA), ("unix", INT64_SCHEMA),
                                 ("string", STRING_SCHEMA), ("identity", TIMESTAMP_SCHEMA), version=3)
    assert records(out)[0]["value"] == {"date": DATE, "time": TIME_MILLIS, "unix": DATE_PLUS_TIME_UNIX,
                                        "string": DATE_PLUS_TIME_STRING, "identity": DATE_PLUS_TIME}


def test_with_schema_to_timestamp(spark):
    """testWithSchema{Date,Time,Unix,String}ToTimestamp and testWithSchemaFieldConversion_{Micros,Nanos,Seconds}."""
    s = struct(None, ("date", DATE_SCHEMA), ("time", TIME_SCHEMA), ("unix", INT64_SCHEMA), ("string", STRING_SCHEMA),
               ("micros", INT64_SCHEMA), ("nanos", INT64_SCHEMA), ("seconds", INT64_SCHEMA), ("other", STRING_SCHEMA))
    value = {"date": DATE, "time": TIME_MILLIS, "unix": DATE_PLUS_TIME_UNIX, "string": DATE_PLUS_TIME_STRING,
             "micros": DATE_PLUS_TIME_UNIX_MICROS, "nanos": DATE_PLUS_TIME_UNIX_NANOS,
             "seconds": DATE_PLUS_TIME_UNIX_SECONDS, "other": "test"}
    b = batch_of(spark, [{"value": value}], value_schema=s)
    precision = {"micros": "microseconds", "nanos": "nanoseconds", "seconds": "seconds"}
    out = _chain(b, *[{"field": n, "target.type": "Timestamp", "format": STRING_DATE_FMT,
                       "unix.precision": precision.get(n, "milliseconds")} for n in list(value)[:-1]])
    assert [f.schema for f in schema(out).fields] == [TIMESTAMP_SCHEMA] * 7 + [STRING_SCHEMA]
    assert records(out)[0]["value"] == {"date": dt.datetime(1970, 1, 2), "time": dt.datetime(1970, 1, 1, 0, 0, 1, 234000),
                                        "unix": DATE_PLUS_TIME, "string": DATE_PLUS_TIME, "micros": DATE_PLUS_TIME,
                                        "nanos": DATE_PLUS_TIME, "seconds": dt.datetime(1970, 1, 2, 0, 0, 1),
                                        "other": "test"}


def test_with_schema_whole_value_and_nulls(spark):
    """testWithSchemaNullValueConversion / testWithSchemaNullFieldConversion (schemas for every input and
    target type), and whole-value conversions with a tombstone."""
    optional_inputs = [OPTIONAL_INT64_SCHEMA, OPTIONAL_TIME_SCHEMA, OPTIONAL_DATE_SCHEMA, OPTIONAL_STRING_SCHEMA,
                       OPTIONAL_TIMESTAMP_SCHEMA]
    targets = {"Timestamp": OPTIONAL_TIMESTAMP_SCHEMA, "unix": OPTIONAL_INT64_SCHEMA, "Time": OPTIONAL_TIME_SCHEMA,
               "Date": OPTIONAL_DATE_SCHEMA, "string": OPTIONAL_STRING_SCHEMA}
    s = struct(None, *[(f"f{i}", x) for i, x in enumerate(optional_inputs)], ("other", STRING_SCHEMA), optional=True)
    b = batch_of(spark, [{"value": {"other": "test"}}, {"value": None}], value_schema=s)
    for target, expected in targets.items():
        t = [{"field": f"f{i}", "target.type": target, "format": STRING_DATE_FMT} for i in range(5)]
        out = _chain(b, *t)
        assert schema(out) == struct(None, *[(f"f{i}", expected) for i in range(5)], ("other", STRING_SCHEMA),
                                     optional=True)
    # The whole value: each target once, each input schema once (Kafka checks every pair; the schema
    # depends on the target and the input's optionality only).
    for (target, expected), x in zip(targets.items(), optional_inputs):
        whole = make(TimestampConverterValue, {"target.type": target, "format": STRING_DATE_FMT})
        assert schema(apply_one(whole, batch_of(spark, [], value_schema=x))) == expected
    rs = records(out)
    assert rs[0]["value"] == {"f0": None, "f1": None, "f2": None, "f3": None, "f4": None, "other": "test"}
    assert rs[1]["value"] is None and "error" not in rs[1]
    whole = apply_one(make(TimestampConverterValue, {"target.type": "Date"}),
                      batch_of(spark, [{"value": DATE_PLUS_TIME}, {"value": None}], value_schema=OPTIONAL_TIMESTAMP_SCHEMA))
    assert schema(whole) == OPTIONAL_DATE_SCHEMA
    assert [r["value"] for r in records(whole)] == [DATE, None]


def test_book_example_jdbc_date_to_string(spark):
    s = struct("kafka_books", ("id", INT32_SCHEMA), ("title", OPTIONAL_STRING_SCHEMA), ("published", DATE_SCHEMA))
    b = batch_of(spark, [{"value": {"id": 1, "title": "Kafka Connect", "published": dt.date(2022, 6, 23)},
                          "topic": "jdbc_books", "headers": [("h", "1")], "partition": 0}], value_schema=s)
    t = make(TimestampConverterValue, {"field": "published", "format": "yyyy-MM-dd", "target.type": "string"})
    outs = apply(t, b, make(TopicNameMatches, {"pattern": "jdbc_.*"}))
    out = [o for o in outs if schema(o) != s][0]
    assert schema(out) == struct("kafka_books", ("id", INT32_SCHEMA), ("title", OPTIONAL_STRING_SCHEMA),
                                 ("published", STRING_SCHEMA))
    r = records(out)[0]
    assert r["value"] == {"id": 1, "title": "Kafka Connect", "published": "2022-06-23"}
    assert (r["topic"], r["headers"], r["partition"]) == ("jdbc_books", [("h", "1")], 0)
    assert_no_python(out.df)


def test_failures(spark):
    s = struct(None, ("ts", OPTIONAL_STRING_SCHEMA), ("n", INT32_SCHEMA))
    b = batch_of(spark, [{"value": {"ts": "2022-06-23", "n": 1}}, {"value": {"ts": "23/06/2022", "n": 2}},
                         {"value": None}], value_schema=s)
    rs = records(apply_one(make(TimestampConverterValue, {"field": "ts", "format": "yyyy-MM-dd",
                                                          "target.type": "Date"}), b))
    assert rs[0]["value"] == {"ts": dt.date(2022, 6, 23), "n": 1}
    assert rs[1]["error"] == "Could not parse timestamp: value (23/06/2022) does not match pattern (yyyy-MM-dd)"
    assert "error" not in rs[2]
    rs = records(apply_one(make(TimestampConverterValue, {"field": "n", "target.type": "Date"}), b))
    assert rs[0]["error"] == "Schema Schema{INT32} does not correspond to a known timestamp type format"
    assert "error" not in rs[2]
    npe = apply_one(make(TimestampConverterValue, {"field": "ts", "target.type": "Date"}), b)
    assert records(npe)[0]["error"] == ('Cannot invoke "java.text.SimpleDateFormat.parse(String)" because '
                                        '"config.format" is null')
    assert npe.df.orderBy("seq").first()[ERROR]["exception"] == "java.lang.NullPointerException"
    whole = apply_one(make(TimestampConverterValue, {"target.type": "Date"}),
                      batch_of(spark, [{"value": 1.5}, {"value": None}], value_schema=FLOAT64_SCHEMA))
    errors = [(r[ERROR]["exception"], r[ERROR]["message"]) for r in whole.df.orderBy("seq").collect()]
    assert errors == [("org.apache.kafka.connect.errors.ConnectException",
                       "Schema Schema{FLOAT64} does not correspond to a known timestamp type format")] * 2
    assert schema(whole) == FLOAT64_SCHEMA


def test_replace_null_with_default(spark):
    default = dt.datetime(2020, 1, 2, 3, 4, 5)
    s = struct(None, ("ts", ConnectSchema("int64", True, "org.apache.kafka.connect.data.Timestamp", 1,
                                          default=default)))
    b = batch_of(spark, [{"value": {"ts": None}}], value_schema=s)
    replaced = apply_one(make(TimestampConverterValue, {"field": "ts", "target.type": "unix"}), b)
    kept = apply_one(make(TimestampConverterValue, {"field": "ts", "target.type": "unix",
                                                    "replace.null.with.default": "false"}), b)
    assert schema(replaced).field("ts").schema == OPTIONAL_INT64_SCHEMA
    assert records(replaced)[0]["value"] == {"ts": int(default.replace(tzinfo=UTC).timestamp() * 1000)}
    assert records(kept)[0]["value"] == {"ts": None}


def test_simple_date_format(spark):
    """SimpleDateFormat as Java runs it: formatting in UTC, lenient parsing, trailing text, zones."""
    formats = [("EEEE, MMMM d, yyyy G 'at' h:mm:ss a zzzz", 1656000000123,
                "Thursday, June 23, 2022 AD at 4:00:00 PM Coordinated Universal Time"),
               ("yy/M/d k K u D F w W YYYY X XX XXX Z S SSSS", 1735603200000,
                "24/12/31 24 0 2 366 5 1 5 2025 Z Z Z +0000 0 0000"),
               ("''yyyy'' 'o''clock' EEE MMM", -1, "'1969' o'clock Wed Dec"),
               ("yyyyy.MMMMM.dd GGG hh:mm aaa", 0, "01970.January.01 AD 12:00 AM")]
    parses = [("yyyy-MM-dd", "2022-6-3", dt.datetime(2022, 6, 3)),
              ("yyyy-MM-dd", "2022-06-23T10:00 trailing text", dt.datetime(2022, 6, 23)),
              ("yyyy-MM-dd", "2022-13-32", dt.datetime(2023, 2, 1)),  # lenient
              ("yyyy-MM-dd HH:mm:ss", "2022-06-23 25:61:61", dt.datetime(2022, 6, 24, 2, 2, 1)),
              ("yyyyMMddHHmmss", "20220623101112", dt.datetime(2022, 6, 23, 10, 11, 12)),
              ("dd MMM yyyy hh:mm a", " 23 jun 2022 12:30 AM", dt.datetime(2022, 6, 23, 0, 30)),
              ("EEE, d MMM yyyy HH:mm:ss Z", "Thu, 23 Jun 2022 10:11:12 -0700", dt.datetime(2022, 6, 23, 17, 11, 12)),
              ("yyyy-MM-dd'T'HH:mm:ss.SSSXXX", "2022-06-23T10:11:12.5+05:30",
               dt.datetime(2022, 6, 23, 4, 41, 12, 5000)),
              ("yyyy-MM-dd HH:mm z", "2022-06-23 10:00 GMT-1:30", dt.datetime(2022, 6, 23, 11, 30)),
              ("yyyy", "22", dt.datetime(22, 1, 1)),
              ("yyyy-MM-dd", "June 23, 2022", None),
              ("yyyy-MM-dd HH:mm Z", "2022-06-23 10:00 +2400", None)]
    df = spark.range(1)
    cols = [format_millis(compile_pattern(p), F.lit(ms)).alias(f"f{i}") for i, (p, ms, _) in enumerate(formats)]
    cols += [parse_millis(parse_plan(compile_pattern(p)), F.lit(text), dt.datetime(1946, 1, 1)).alias(f"p{i}")
             for i, (p, text, _) in enumerate(parses)]
    row = df.select(*cols).collect()[0]
    assert [row[f"f{i}"] for i in range(len(formats))] == [x[2] for x in formats]

    def millis(d):
        return None if d is None else int((d.replace(tzinfo=UTC) - dt.datetime(1970, 1, 1, tzinfo=UTC)).total_seconds()
                                           * 1000)

    assert [row[f"p{i}"] for i in range(len(parses))] == [millis(x[2]) for x in parses]
    for bad in ["bad-format", "yyyy-MM-dd'T", "yyyy-MM-ddTHH"]:
        with pytest.raises(ValueError):
            compile_pattern(bad)
    assert not parse_plan(compile_pattern("YYYY-ww")).supported
