"""Kafka's number converters (`org.apache.kafka.connect.converters.{Short,Integer,Long,Float,Double}Converter`).

Each writes its number big-endian in a fixed width, as Kafka's Short/Integer/Long/Float/DoubleSerializer
do, and reads it back with the optional schema of its type. Integers are pure column expressions
(two's-complement hex); floats are taken apart into their IEEE-754 fields by exact power-of-two arithmetic.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from connectors.converters._common import (
    RecordAndHeaderConverter, bad_records, data_type, map_header_values, null_bytes, parse_settings,
    raise_first_bad,
)
from ingest.api import Converter, HeaderConverter
from ingest.errors import DataError
from ingest.records.schema import (
    OPTIONAL_FLOAT32_SCHEMA, OPTIONAL_FLOAT64_SCHEMA, OPTIONAL_INT16_SCHEMA, OPTIONAL_INT32_SCHEMA,
    OPTIONAL_INT64_SCHEMA, ConnectSchema,
)


class NumberConverter(RecordAndHeaderConverter, Converter, HeaderConverter):
    """Kafka's NumberConverter: one number type, fixed width, big-endian."""

    type_name: ClassVar[str]  # Kafka's name in its messages: "integer", "long", ...
    schema: ClassVar[ConnectSchema]
    spark_type: ClassVar[type[T.DataType]]
    width: ClassVar[int]
    deserializer: ClassVar[str]

    def __init__(self, configs: Mapping[str, Any] | None = None, is_key: bool = False):
        Converter.__init__(self, configs or {}, is_key)
        parse_settings(type(self), self.configs)

    def from_connect_record(self, df: DataFrame, column: str, schema: ConnectSchema | None) -> DataFrame:
        dtype = data_type(df, column)
        if isinstance(dtype, T.NullType):
            return df.withColumn(column, null_bytes())
        if not isinstance(dtype, self.spark_type):
            # Kafka casts the value to its Java class: an Integer is not a Long, nor a Long an Integer.
            raise DataError(f"Failed to serialize to {self.type_name} (was {dtype.simpleString()}, column "
                            f"'{column}'); cast the column to {self.spark_type().simpleString()} first")
        return df.withColumn(column, self.encode(df[column]))

    def to_connect_record(self, df: DataFrame, column: str) -> list[tuple[ConnectSchema, DataFrame]]:
        raise_first_bad(df, self._reason(df[column]), "fix the producer, or use ByteArrayConverter for this topic")
        return [(self.schema, df.withColumn(column, self.decode(df[column])))]

    def record_errors(self, df: DataFrame, column: str) -> Column:
        return self._reason(df[column])

    def header_errors(self, headers: Column) -> Column:
        bad = F.filter(headers, lambda h: self._reason(h["value"]).isNotNull())
        return F.when(F.size(bad) > 0, F.concat(F.lit("header '"), bad[0]["key"], F.lit("': "),
                                                self._reason(bad[0]["value"])))

    def bad_records(self, df: DataFrame, column: str) -> DataFrame:
        """The records `to_connect` would reject (wrong length), with an `error` column."""
        return bad_records(df, self._reason(df[column]))

    # Header values are strings in lakeconnect's layout: a header holds the number's text.
    def from_connect_header(self, headers: Column) -> Column:
        return map_header_values(headers, lambda v: self.encode(v.cast(self.spark_type())))

    def to_connect_header(self, headers: Column) -> Column:
        def convert(b: Column) -> Column:
            check = F.when(self._reason(b).isNotNull(), F.raise_error(self._reason(b)))
            return check.otherwise(self.decode(b).cast(T.StringType()))

        return map_header_values(headers, convert)

    def _reason(self, data: Column) -> Column:
        message = (f"Failed to deserialize {self.type_name}: Size of data received by {self.deserializer} "
                   f"is not {self.width}")
        return F.when(data.isNotNull() & (F.length(data) != self.width), F.lit(message))

    def encode(self, value: Column) -> Column:
        raise NotImplementedError

    def decode(self, data: Column) -> Column:
        raise NotImplementedError


class _IntegralConverter(NumberConverter):
    def encode(self, value: Column) -> Column:
        # hex() of a bigint is its two's complement (16 digits when negative): keep the low `width` bytes.
        digits = F.lpad(F.hex(value.cast(T.LongType())), 16, "0")
        return F.unhex(F.substring(digits, 17 - 2 * self.width, 2 * self.width))

    def decode(self, data: Column) -> Column:
        digits = F.hex(data)
        negative = F.substring(digits, 1, 1) >= F.lit("8")
        extended = F.when(negative, F.lpad(digits, 16, "F")).otherwise(F.lpad(digits, 16, "0"))
        # conv to a negative base reads the 64 bits as signed.
        return F.conv(extended, 16, -10).cast(T.LongType()).cast(self.spark_type())


class ShortConverter(_IntegralConverter):
    """int16, 2 bytes big-endian (ShortSerializer)."""

    aliases = ("org.apache.kafka.connect.converters.ShortConverter",)
    type_name = "short"
    schema = OPTIONAL_INT16_SCHEMA
    spark_type = T.ShortType
    width = 2
    deserializer = "ShortDeserializer"


class IntegerConverter(_IntegralConverter):
    """int32, 4 bytes big-endian (IntegerSerializer)."""

    aliases = ("org.apache.kafka.connect.converters.IntegerConverter",)
    type_name = "integer"
    schema = OPTIONAL_INT32_SCHEMA
    spark_type = T.IntegerType
    width = 4
    deserializer = "IntegerDeserializer"


class LongConverter(_IntegralConverter):
    """int64, 8 bytes big-endian (LongSerializer)."""

    aliases = ("org.apache.kafka.connect.converters.LongConverter",)
    type_name = "long"
    schema = OPTIONAL_INT64_SCHEMA
    spark_type = T.LongType
    width = 8
    deserializer = "LongDeserializer"


class _FloatingConverter(NumberConverter):
    mantissa_bits: ClassVar[int]
    bias: ClassVar[int]

    def encode(self, value: Column) -> Column:
        digits = F.lpad(F.hex(_ieee_bits(value, self.mantissa_bits, self.bias, self.width)), 16, "0")
        return F.unhex(F.substring(digits, 17 - 2 * self.width, 2 * self.width))

    def decode(self, data: Column) -> Column:
        bits = F.conv(F.hex(data), 16, -10 if self.width == 8 else 10).cast(T.LongType())
        return _from_ieee_bits(bits, self.mantissa_bits, self.bias, self.width).cast(self.spark_type())


class FloatConverter(_FloatingConverter):
    """float32, the 4 bytes of Float.floatToRawIntBits big-endian (FloatSerializer)."""

    aliases = ("org.apache.kafka.connect.converters.FloatConverter",)
    # Kafka's FloatDeserializer says "Deserializer" in its size message, not its own name.
    type_name = "float"
    schema = OPTIONAL_FLOAT32_SCHEMA
    spark_type = T.FloatType
    width = 4
    deserializer = "Deserializer"
    mantissa_bits, bias = 23, 127


class DoubleConverter(_FloatingConverter):
    """float64, the 8 bytes of Double.doubleToRawLongBits big-endian (DoubleSerializer)."""

    aliases = ("org.apache.kafka.connect.converters.DoubleConverter",)
    type_name = "double"
    schema = OPTIONAL_FLOAT64_SCHEMA
    spark_type = T.DoubleType
    width = 8
    deserializer = "Deserializer"
    mantissa_bits, bias = 52, 1023


# IEEE-754 by arithmetic. Spark has no bit cast for floating point, but multiplying or dividing by a
# power of two is exact in binary floating point, so exponent and mantissa can be taken apart (and put
# together) without rounding. NaN is written as Java's canonical NaN (Spark keeps no NaN payloads).


def _ieee_bits(value: Column, mantissa_bits: int, bias: int, width: int) -> Column:
    """The IEEE-754 bits of a float (width 4) or double (width 8), as a long (the low `8*width` bits)."""
    x = value.cast(T.DoubleType())
    a = F.abs(x)
    min_normal, subnormal_unit = 2.0 ** (1 - bias), 2.0 ** (1 - bias - mantissa_bits)
    max_exponent = 2 * bias + 1
    normal = (a >= min_normal) & (a < float("inf"))  # Spark orders NaN above infinity, so NaN is not normal
    # log2 may be off by one next to a power of two: correct the exponent by comparing with 2^e.
    safe = F.when(normal, a).otherwise(F.lit(1.0))  # keeps log2 and the division away from 0, inf, NaN
    e0 = F.floor(F.log2(safe))
    ratio = safe / F.pow(F.lit(2.0), e0)
    e = e0 + F.when(ratio >= 2, 1).when(ratio < 1, -1).otherwise(0)
    exponent = (F.when(F.isnan(x) | (a == float("inf")), max_exponent)
                .when(normal, e + bias).otherwise(0).cast(T.LongType()))
    fraction = (F.when(F.isnan(x), F.lit(1 << (mantissa_bits - 1)))
                .when(a == float("inf"), F.lit(0))
                .when(normal, (safe / F.pow(F.lit(2.0), e) - 1) * 2.0 ** mantissa_bits)
                .otherwise(a / subnormal_unit)).cast(T.LongType())
    # -0.0 == 0 (and Spark's atan2 drops the sign of -0.0), but its text keeps the sign.
    negative = F.when(x == 0, x.cast(T.StringType()).startswith("-")).otherwise(x < 0)
    sign_bit = F.lit(-(2**63) if width == 8 else 2**31).cast(T.LongType())
    bits = F.shiftleft(exponent, mantissa_bits).bitwiseOR(fraction)
    signed = F.when(negative, bits.bitwiseOR(sign_bit)).otherwise(bits)
    return F.when(value.isNull(), F.lit(None)).otherwise(signed)


def _from_ieee_bits(bits: Column, mantissa_bits: int, bias: int, width: int) -> Column:
    """The double whose IEEE-754 bits (float layout when width 4) are `bits`."""
    max_exponent = 2 * bias + 1
    exponent = F.shiftright(bits, mantissa_bits).bitwiseAND(max_exponent)
    fraction = bits.bitwiseAND((1 << mantissa_bits) - 1)
    negative = bits < 0 if width == 8 else bits >= 2**31
    magnitude = (
        F.when(exponent == max_exponent, F.when(fraction == 0, F.lit(float("inf"))).otherwise(F.lit(float("nan"))))
        .when(exponent == 0, fraction.cast(T.DoubleType()) * 2.0 ** (1 - bias - mantissa_bits))
        .otherwise((fraction + (1 << mantissa_bits)).cast(T.DoubleType())
                   * F.pow(F.lit(2.0), exponent - (bias + mantissa_bits)))
    )
    return F.when(negative, -magnitude).otherwise(magnitude)
