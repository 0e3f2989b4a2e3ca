"""Kafka's Decimal bytes (the unscaled value as minimal two's-complement, big-endian) as Spark expressions.

An unscaled value that fits a long (up to 8 bytes; always, up to precision 18) takes the fast path: `hex` of a bigint
is its two's complement and `conv` to a negative base reads 64 bits back as signed. Wider values (up to
38 digits) are split into two unsigned 64-bit halves that `conv` can turn into hex; negative ones go
through their one's complement (a = -1 - u >= 0, whose hex digits complemented are u's two's
complement), which keeps every intermediate within decimal(38,0) and never rounds.
"""

from __future__ import annotations

from decimal import Decimal

from pyspark.sql import Column
from pyspark.sql import functions as F

_HEX = "0123456789ABCDEF"
_COMPLEMENT = "FEDCBA9876543210"
# A leading 00 before a byte < 0x80, or FF before a byte >= 0x80, is redundant (BigInteger.toByteArray).
_REDUNDANT_SIGN_BYTES = "^(?:(?:00)+(?=[0-7])|(?:FF)+(?=[89A-F]))"


JVM_FUNCTION = "lakeconnect_decimal_bytes"
JVM_CLASS = "io.lakeconnect.DecimalBytes"


def decimal_to_bytes(value: Column) -> Column:
    """Decimal.fromLogical for a decimal column whose scale is the schema's scale: the JVM function from
    `ingest.jvm` when the session has it (BigInteger.toByteArray in Spark's generated code), else
    `expression_decimal_to_bytes` (the same bytes, several string functions per value)."""
    from pyspark.sql import SparkSession
    from pyspark.sql.types import BinaryType

    from ingest.jvm import java_function

    spark = SparkSession.getActiveSession()
    if spark is not None and java_function(spark, JVM_FUNCTION, JVM_CLASS, BinaryType()):
        return F.call_function(JVM_FUNCTION, value)
    return expression_decimal_to_bytes(value)


def expression_decimal_to_bytes(value: Column) -> Column:
    """Decimal.fromLogical in Spark's own functions (the fallback, and the reference the JVM one is tested against)."""
    # The plain text of a decimal holds exactly `scale` fraction digits: without the point it is the unscaled value.
    unscaled = F.regexp_replace(value.cast("string"), r"\.", "")
    as_long = unscaled.try_cast("bigint")  # null when it does not fit
    digits = F.when(as_long.isNotNull(), _long_hex(as_long)).otherwise(_wide_hex(unscaled.cast("decimal(38,0)")))
    return F.when(value.isNull(), None).otherwise(F.unhex(F.regexp_replace(digits, _REDUNDANT_SIGN_BYTES, "")))


def bytes_to_decimal(data: Column, precision: int, scale: int) -> Column:
    """Decimal.toLogical: two's-complement bytes (1 to 16 of them) to decimal(precision, scale)."""
    digits = F.hex(data)
    negative = F.substring(digits, 1, 1) >= F.lit("8")
    length = F.length(digits)
    # "<unscaled>E-<scale>" casts exactly, where dividing decimals would round past 6 fraction digits.
    as_long = F.conv(F.when(negative, F.lpad(digits, 16, "F")).otherwise(F.lpad(digits, 16, "0")), 16, -10)
    unscaled = F.when(length <= 16, as_long).otherwise(_wide_value(digits, negative).cast("string"))
    value = F.concat(unscaled, F.lit(f"E-{scale}")).cast(f"decimal({precision},{scale})")
    return (
        F.when(data.isNull(), None)
        .when(length == 0, F.raise_error(F.lit("Invalid bytes for Decimal field: no bytes")))
        .when(length > 32, F.raise_error(F.lit("Invalid bytes for Decimal field: more than 16 bytes")))
        .otherwise(value)
    )


def _long_hex(unscaled: Column) -> Column:
    # hex() of a negative bigint is its 16-digit two's complement; a positive one needs its leading zeros.
    return F.lpad(F.hex(unscaled), 16, "0")


def _wide_hex(unscaled: Column) -> Column:
    """32 hex digits: the 128-bit two's complement of a decimal(38,0)."""
    negative = unscaled < 0
    a = F.when(negative, _ones_complement(unscaled, negative)).otherwise(unscaled)
    low = F.pmod(a, _two_64())
    high = ((a - low) / _two_64()).cast("decimal(20,0)")  # exact: a - low is a multiple of 2^64
    digits = F.concat(_hex16(high), _hex16(low))
    return F.when(negative, F.translate(digits, _HEX, _COMPLEMENT)).otherwise(digits)


def _wide_value(digits: Column, negative: Column) -> Column:
    """The decimal(38,0) whose two's complement is `digits` (up to 32 hex digits)."""
    a_digits = F.lpad(F.when(negative, F.translate(digits, _HEX, _COMPLEMENT)).otherwise(digits), 32, "0")
    high = F.conv(F.substring(a_digits, 1, 16), 16, 10).cast("decimal(20,0)")
    low = F.conv(F.substring(a_digits, 17, 16), 16, 10).cast("decimal(20,0)")
    a = (high * _two_64() + low).cast("decimal(38,0)")
    return F.when(negative, _ones_complement(a, negative)).otherwise(a)


def _ones_complement(x: Column, negative: Column) -> Column:
    # -1 - x, fed 0 on rows where it is not wanted: Spark may evaluate both CASE branches (common
    # subexpressions), and -1 - x overflows decimal(38,0) for x = 10^38 - 1. Not -x - 1: Spark's
    # decimal negation rounds to 34 digits (Scala's DECIMAL128) and overflows on 38-digit values.
    return F.lit(-1).cast("decimal(1,0)") - F.when(negative, x).otherwise(F.lit(0))


def _two_64() -> Column:
    return F.lit(Decimal(2**64)).cast("decimal(20,0)")


def _hex16(unsigned: Column) -> Column:
    return F.lpad(F.conv(unsigned.cast("string"), 10, 16), 16, "0")
