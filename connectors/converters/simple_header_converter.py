"""Kafka's `org.apache.kafka.connect.storage.SimpleHeaderConverter`: header values as UTF-8 text, typed on read.

Writing, Kafka writes `Values.convertToString(schema, value)` in UTF-8; lakeconnect's header values are that
text already, so they are written as their UTF-8 bytes. Reading, Kafka infers a schema and a value from the
text (`Values.parseString`: "42" an int8, "1.5" a float32, "true" a boolean, "[1,2]" an array, "2024-01-31"
a Date, "null" no value, anything else the string itself). Header values stay text in lakeconnect's record
layout, so a header read is the text Kafka's sinks see for that typed value (`Values.convertToString` of
it): "007" reads as "7", "1.50" as "1.5", "[1, 2]" as "[1,2]", "null" as a null value; a plain string as it
is. `header_schemas` gives the inferred schema of each header as well.

The inference is lakeconnect-jvm's `HeaderValues` (a port of Kafka's parser, run inside Spark's generated
code); only values that may be typed reach it (a cheap pattern first), others are kept without a call.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from connectors.converters._common import map_header_values, parse_settings, utf8_bytes, utf8_text
from ingest.api import HeaderConverter

JVM_FUNCTION = "lakeconnect_header_value"
JVM_CLASS = "io.lakeconnect.HeaderValues"
PARSED = T.StructType([T.StructField("schema", T.StringType()), T.StructField("value", T.StringType())])
# What Values.parseString may read as something other than the text itself: after Java's trim (characters up
# to U+0020), a digit (Character.isDigit), a sign, '[' or '{', or exactly null/true/false. Everything else is
# the string it is, and is kept without calling the parser.
MAY_BE_TYPED = r"^[\x00-\x20]*(?:[\p{Nd}+\-\[{]|(?:null|true|false)[\x00-\x20]*$)"


class SimpleHeaderConverter(HeaderConverter):
    """Header values as UTF-8 text; read back as the text of the value Kafka infers (the default `header.converter`)."""

    aliases = ("org.apache.kafka.connect.storage.SimpleHeaderConverter",)

    def __init__(self, configs: Mapping[str, Any] | None = None):
        super().__init__(configs or {})
        parse_settings(type(self), self.configs)

    def from_connect_header(self, headers: Column) -> Column:
        return map_header_values(headers, utf8_bytes)

    def to_connect_header(self, headers: Column) -> Column:
        parse = _parser()
        if parse is None:
            return map_header_values(headers, utf8_text)

        def convert(data: Column) -> Column:
            text = utf8_text(data)
            return F.when(text.rlike(MAY_BE_TYPED), parse(text)["value"]).otherwise(text)

        return map_header_values(headers, convert)

    def header_schemas(self, headers: Column) -> Column:
        """The header bytes' inferred schemas (`array<struct<key, schema>>`), as `HeaderValues.describe` writes
        them: `string`, `int8`, `float32`, `decimal(2)`, `date`, `array<int16>`, `map<string,null>`; "null"
        for a header without a value."""
        parse = _parser()
        if parse is None:
            raise RuntimeError(f"{JVM_CLASS} is not on this Spark session's class path: run `python -m ingest.jvm`")

        def schema(h: Column) -> Column:
            text = utf8_text(h["value"])
            described = F.when(text.isNull(), F.lit("null")).otherwise(parse(text)["schema"])
            return F.struct(h["key"].alias("key"), described.alias("schema"))

        return F.transform(headers, schema)


def _parser():
    """The JVM parser as a column function, or None (logged once by ingest.jvm) when the session lacks the jar:
    header values are then read as the text they are."""
    from pyspark.sql import SparkSession

    from ingest.jvm import java_function

    spark = SparkSession.getActiveSession()
    if spark is None or not java_function(spark, JVM_FUNCTION, JVM_CLASS, PARSED):
        return None
    return lambda text: F.call_function(JVM_FUNCTION, text)


def kafka_header_text(literal: str | None) -> str | None:
    """The text Kafka's header converter writes for `Values.parseString(literal)`, InsertHeader's header value:
    "007" is 7 and written "7", "null" is a null value. One call to the parser on the driver (not one per
    record); the literal as it is when the session lacks the jar (logged once, as for reading)."""
    from pyspark.sql import SparkSession

    from ingest.jvm import _instance

    spark = SparkSession.getActiveSession()
    if literal is None or spark is None or _parser() is None:
        return literal
    return _instance(spark, JVM_CLASS).call(literal).getString(1)
