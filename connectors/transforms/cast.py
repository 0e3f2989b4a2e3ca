"""Cast: Kafka's `Cast$Key` / `Cast$Value`, casting fields (or the whole key or value) to a primitive type.

Kafka's `castValueToType` per value, as Spark column expressions: Java's numeric conversions
(`Number.byteValue()` wraps, `(int) double` saturates, NaN -> 0), booleans to 1/0, numbers to boolean
`!= 0`, strings parsed with `Byte.parseByte` ... `Double.parseDouble` / `Boolean.parseBoolean`, binary to
base64, Date/Time/Timestamp through their internal number (or `Values.dateFormatFor` text), Decimal
through `BigDecimal`. A string that does not parse fails its record with Kafka's DataException message.
Schema defaults are cast in Python, with the same rules, when the output schema is built.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import math
import re
from dataclasses import replace
from typing import Any

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from connectors.file.javastr import _hashmap_order
from connectors.transforms._support import (
    MILLIS_PER_DAY, KeyOrValueTransform, as_map, java_date_text, kafka_names, object_of, require_map,
    required_null_message, struct_get,
)
from ingest.config.configdef import ConfigDef, Importance, Type
from ingest.errors import DataError
from ingest.records import KEY, VALUE, RecordBatch
from ingest.records.schema import DATE, DECIMAL, TIME, TIMESTAMP, ConnectSchema, _java_float_text, _to_float32

SPEC_CONFIG = "spec"
REPLACE_NULL_WITH_DEFAULT_CONFIG = "replace.null.with.default"
PURPOSE = "cast types"

INPUT_TYPES = ("int8", "int16", "int32", "int64", "float32", "float64", "boolean", "string", "bytes")
OUTPUT_TYPES = ("int8", "int16", "int32", "int64", "float32", "float64", "boolean", "string")
SCHEMA_TYPES = (*INPUT_TYPES, "array", "map", "struct")  # Kafka's Schema.Type enum

_SPARK_TYPES = {"int8": T.ByteType(), "int16": T.ShortType(), "int32": T.IntegerType(), "int64": T.LongType(),
                "float32": T.FloatType(), "float64": T.DoubleType(), "boolean": T.BooleanType(),
                "string": T.StringType()}
_BITS = {"int8": 8, "int16": 16, "int32": 32}
_EPOCH_DATE = dt.date(1970, 1, 1)
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_JAVA_WHITESPACE = "".join(chr(i) for i in range(33))  # String.trim() strips every char <= ' '

WHOLE_VALUE = None
"""The key of the whole-value cast in the parsed spec (Kafka's WHOLE_VALUE_CAST)."""


def _enum_list(types: tuple[str, ...]) -> str:
    return "[" + ", ".join(t.upper() for t in types) + "]"


def unsupported_input(schema_type: str) -> str:
    return (f"Cast transformation does not support casting from {schema_type.upper()}; "
            f"supported types are {_enum_list(INPUT_TYPES)}")


BYTES_UNEXPECTED = "Unexpected type in Cast transformation: class [B"
UNSUPPORTED_DATE = ("Cast transformation was passed a value of type class java.util.Date which is not "
                    "supported by Connect's data API")


# --- the spec: Cast.parseFieldTypes --------------------------------------------------------------------


class SpecError(ValueError):
    """A `spec` Kafka rejects (its ConfigException / IllegalArgumentException message)."""


def _java_split(text: str, sep: str = ":") -> list[str]:
    """String.split(sep): trailing empty strings removed; no separator -> the text itself."""
    if sep not in text:
        return [text]
    parts = text.split(sep)
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def _schema_type(name: str) -> str | None:
    t = name.strip(_JAVA_WHITESPACE).lower()
    return t if t in SCHEMA_TYPES else None


def _valid_output(t: str) -> str:
    if t not in OUTPUT_TYPES:
        raise SpecError(f"Cast transformation does not support casting to {t.upper()}; "
                        f"supported types are {_enum_list(OUTPUT_TYPES)}")
    return t


def parse_field_types(mappings: list[str]) -> dict[str | None, str]:
    """Cast.parseFieldTypes: field -> target type (WHOLE_VALUE -> type for a whole-value cast)."""
    casts: dict[str | None, str] = {}
    whole = False
    for mapping in mappings:
        parts = _java_split(mapping)
        if len(parts) > 2:
            raise SpecError(f"Invalid value [{', '.join(mappings)}] for configuration renames: "
                            f"Invalid rename mapping: {mapping}")
        if len(parts) == 1:
            target = _schema_type(parts[0])
            if target is None:  # Schema.Type.valueOf, not wrapped in a ConfigException by Kafka
                raise SpecError("No enum constant org.apache.kafka.connect.data.Schema.Type."
                                + parts[0].strip(_JAVA_WHITESPACE).upper())
            casts[WHOLE_VALUE] = _valid_output(target)
            whole = True
        elif len(parts) == 0:
            raise SpecError("Index 1 out of bounds for length 0")
        else:
            target = _schema_type(parts[1])
            if target is None:
                raise SpecError("Invalid type found in casting spec: " + parts[1].strip(_JAVA_WHITESPACE))
            casts[parts[0].strip(_JAVA_WHITESPACE)] = _valid_output(target)
    if whole and len(mappings) > 1:
        raise SpecError("Cast transformations that specify a type to cast the entire value to "
                        "may ony specify a single cast in their spec")
    return casts


class SpecValidator:
    """Kafka's anonymous validator of `spec`: non-empty, then parseFieldTypes."""

    def __call__(self, key: str, value: Any) -> str | None:
        if not value:
            return "Must specify at least one field to cast."
        try:
            parse_field_types(value)
        except SpecError as e:
            return str(e)
        return None

    def describe(self) -> str:
        return "list of colon-delimited pairs, e.g. <code>foo:bar,abc:xyz</code>"


# --- castValueToType as column expressions ---------------------------------------------------------------
#
# A source "kind" says which Java object Kafka would hold: int (Byte..Long), float32, float64, decimal
# (BigDecimal), boolean, string, bytes (byte[]), date/time/timestamp (java.util.Date, encoded to their
# number for a numeric target), or unsupported:<TYPE> (Struct, List, Map).


def _kind(schema: ConnectSchema) -> str:
    logical = {DATE: "date", TIME: "time", TIMESTAMP: "timestamp", DECIMAL: "decimal"}.get(schema.logical or "")
    if logical:
        return logical
    if schema.type in ("int8", "int16", "int32", "int64"):
        return "int"
    if schema.type in INPUT_TYPES:
        return schema.type
    return "unsupported:" + schema.type


def _wrap(value: Column, bits: int) -> Column:
    """The low `bits` bits of an integral value as a signed number: Java's narrowing `(byte) long`.
    ((x & mask) ^ sign) - sign sign-extends without naming `x` twice (nested casts stay small)."""
    sign = 1 << (bits - 1)
    low = value.cast("long").bitwiseAND(F.lit((1 << bits) - 1))
    return low.bitwiseXOR(F.lit(sign)) - F.lit(sign)


def _saturate(value: Column, bits: int) -> Column:
    """Java's `(int) double` / `(long) double`: truncation toward zero, saturating, NaN -> 0."""
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    clamped = F.least(F.greatest(F.nanvl(value.cast("double"), F.lit(0.0)), F.lit(float(lo))), F.lit(float(hi)))
    return clamped.cast("int" if bits == 32 else "long")


def _decimal_long(value: Column) -> Column:
    """BigDecimal.longValue(): the fraction dropped, then the low 64 bits of the integer."""
    whole = value - value % 1  # % keeps the dividend's sign: truncation toward zero
    unsigned = F.pmod(whole, F.lit(decimal.Decimal(1 << 64)))  # in [0, 2^64)
    signed = F.pmod(unsigned + F.lit(decimal.Decimal(1 << 63)), F.lit(decimal.Decimal(1 << 64))) \
        - F.lit(decimal.Decimal(1 << 63))
    return signed.cast("long")


def _long_value(src: Column, kind: str) -> Column:
    """Number.longValue() of the (logical-encoded) value."""
    if kind in ("float32", "float64"):
        return _saturate(src, 64)
    if kind == "decimal":
        return _decimal_long(src)
    if kind == "boolean":
        return F.when(src, F.lit(1)).otherwise(F.lit(0)).cast("long")
    if kind == "date":  # Date.fromLogical: days since the epoch
        return F.unix_date(src).cast("long")
    if kind == "timestamp":  # Timestamp.fromLogical: millis since the epoch
        return F.unix_millis(src)
    return src.cast("long")  # int, time (millis of the day)


def _int_value(src: Column, kind: str) -> Column:
    """Number.intValue(): saturating from floating point, wrapping from wider integers."""
    if kind in ("float32", "float64"):
        return _saturate(src, 32)
    return _wrap(_long_value(src, kind), 32).cast("int")


def _epoch_millis(src: Column, kind: str) -> Column:
    """java.util.Date.getTime() of a Date / Time / Timestamp value."""
    if kind == "date":
        return F.unix_date(src).cast("long") * F.lit(MILLIS_PER_DAY)
    if kind == "timestamp":
        return F.unix_millis(src)
    return src.cast("long")


def _decimal_text(src: Column, scale: int) -> Column:
    """BigDecimal.toString(): plain, except scientific when the exponent of the leading digit is < -6."""
    plain = src.cast("string")  # Spark prints a decimal plainly with exactly `scale` decimals
    if scale == 0:
        return plain
    digits = F.regexp_replace(F.regexp_replace(F.abs(src).cast("string"), r"\.", ""), "^0+(?=.)", "")
    adjusted = F.length(digits) - 1 - scale
    rest = F.substring(digits, 2, 1 << 30)
    scientific = F.concat(F.when(src < 0, F.lit("-")).otherwise(F.lit("")), F.substring(digits, 1, 1),
                          F.when(F.length(rest) > 0, F.concat(F.lit("."), rest)).otherwise(F.lit("")),
                          F.lit("E"), adjusted.cast("string"))
    return F.when(adjusted < -6, scientific).otherwise(plain)


def _out_of_range(text: Column) -> Column:
    return F.concat(F.lit("Value ("), text, F.lit(") was out of range for requested data type"))


def _parse_integral(text: Column, target: str) -> tuple[Column, Column]:
    """Byte/Short/Integer/Long.parseXxx: an optional sign and decimal digits, within range."""
    value = F.when(text.rlike("^[+-]?[0-9]+$"), text.try_cast(_SPARK_TYPES[target]))
    return value, F.when(text.isNotNull() & value.isNull(), _out_of_range(text))


def _parse_floating(text: Column, target: str) -> tuple[Column, Column]:
    """Float.parseFloat / Double.parseDouble. Spark's cast runs the same Java parser, but also accepts
    'inf', 'nan' and other spellings of the special values: those are refused as Java refuses them."""
    trimmed = F.regexp_replace(text, r"^[\x00-\x20]+|[\x00-\x20]+$", "")
    not_java = trimmed.rlike("(?i)^[+-]?(inf|infinity|nan)$") & ~trimmed.rlike("^[+-]?(Infinity|NaN)$")
    value = F.when(~not_java, trimmed.try_cast(_SPARK_TYPES[target]))
    return value, F.when(text.isNotNull() & value.isNull(), _out_of_range(text))


def convert(src: Column, kind: str, target: str, scale: int = 0) -> tuple[Column, Column | None]:
    """Kafka's castValueToType for a non-null value of `kind`: (value in the target's Spark type,
    DataException message or None when the cast cannot fail). `scale`: a decimal's scale."""
    spark_type = _SPARK_TYPES[target]
    if kind.startswith("unsupported:"):
        return F.lit(None).cast(spark_type), F.lit(unsupported_input(kind.split(":", 1)[1]))
    if kind == "unsupported_date":
        return F.lit(None).cast(spark_type), F.lit(UNSUPPORTED_DATE)
    if kind == "bytes" and target != "string":
        return F.lit(None).cast(spark_type), F.lit(BYTES_UNEXPECTED)
    if target == "string":
        return _to_string(src, kind, scale), None
    if kind == "string":
        if target in ("float32", "float64"):
            return _parse_floating(src, target)
        if target == "boolean":  # Boolean.parseBoolean: "true" ignoring case, anything else false
            return F.lower(src) == F.lit("true"), None
        return _parse_integral(src, target)
    if target == "boolean":
        if kind == "boolean":
            return src, None
        return _long_value(src, kind) != 0, None
    if target in ("float32", "float64"):
        if kind == "boolean":
            return F.when(src, F.lit(1.0)).otherwise(F.lit(0.0)).cast(spark_type), None
        if kind in ("date", "time", "timestamp"):
            return _long_value(src, kind).cast(spark_type), None
        return src.cast(spark_type), None  # int, float32, float64, decimal: Java's widening/rounding
    if target == "int64":
        return _long_value(src, kind), None
    value = _int_value(src, kind)
    return (value if target == "int32" else _wrap(value, _BITS[target])).cast(spark_type), None


def _to_string(src: Column, kind: str, scale: int) -> Column:
    if kind == "bytes":
        return F.base64(src)
    if kind == "decimal":
        return _decimal_text(src, scale)
    if kind in ("date", "time", "timestamp"):
        return java_date_text(_epoch_millis(src, kind))
    return src.cast("string")  # Spark prints numbers as Java's toString does; booleans as true/false


# Schemaless values are cast in three projections, each reading the previous one's columns: the VARIANT's
# kind, then its typed views, then the cast. One expression would repeat the VARIANT work in every branch
# of every CASE (Spark keeps a projection apart when its results are read more than once).
_VARIANT_KINDS = {"BIGINT": "int", "DOUBLE": "float64", "DECIMAL": "float64", "FLOAT": "float32",
                  "BOOLEAN": "boolean", "STRING": "string", "BINARY": "bytes", "OBJECT": "unsupported:map",
                  "ARRAY": "unsupported:array", "DATE": "unsupported_date", "TIMESTAMP": "unsupported_date",
                  "TIMESTAMP_NTZ": "unsupported_date"}
_VIEWS = (("int", "l"), ("float64", "d"), ("float32", "f"), ("boolean", "b"), ("string", "s"), ("bytes", "x"))


def variant_kind(value: Column) -> Column:
    """The `convert` kind of the Java object Kafka would hold for a schemaless value (null for a null):
    JSON numbers are Long or Double, objects Map, arrays List."""
    described = F.schema_of_variant(value)
    kinds = F.create_map(*[F.lit(x) for pair in _VARIANT_KINDS.items() for x in pair])
    # parse_json keeps an integer literal beyond a long as DECIMAL(p>=19,0) (a fraction like 1.0 may lose its
    # zeros too, but as DECIMAL(p<19,0): every integer literal that fits a long is a BIGINT).
    big_integer = described.rlike(r"^DECIMAL\((19|[23][0-9]),0\)")
    return F.when(big_integer, F.lit("int")).otherwise(kinds[F.regexp_extract(described, r"^([A-Z_]+)", 1)])


def variant_views(value: Column, kind: Column) -> Column:
    """The value in the Spark type of its kind (one field per kind, null unless it is that kind)."""
    ddl = {"float64": "double", "float32": "float", "boolean": "boolean", "string": "string", "bytes": "binary"}
    # An integral JSON number beyond a long: Jackson's BigInteger.longValue(), the low 64 bits.
    long_view = F.coalesce(F.try_variant_get(value, "$", "bigint"),
                           _decimal_long(F.try_variant_get(value, "$", "decimal(38,0)")))
    views = [F.when(kind == "int", long_view).alias("l")]
    views += [F.when(kind == k, F.try_variant_get(value, "$", ddl[k])).alias(name) for k, name in _VIEWS[1:]]
    return F.struct(*views)


def convert_views(kind: Column, views: Column, target: str) -> tuple[Column, Column]:
    """castValueToType(null, value, target) from `variant_kind` and `variant_views`: (value, error)."""
    cases = [(k, convert(views[name], k, target)) for k, name in _VIEWS]
    cases += [(k, convert(F.lit(None), k, target)) for k in ("unsupported:map", "unsupported:array",
                                                              "unsupported_date")]
    result = F.lit(None).cast(_SPARK_TYPES[target])
    error = F.lit(None).cast("string")
    for k, (converted, message) in reversed(cases):
        result = F.when(kind == k, converted).otherwise(result)
        if message is not None:
            error = F.when(kind == k, message).otherwise(error)
    return result, error


class _Stages:
    """Temporary columns holding intermediate projections; dropped before the batch is returned."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def add(self, batch: RecordBatch, columns: list[Column]) -> tuple[RecordBatch, list[Column]]:
        names = [f"__lc_cast_{len(self.names) + i}" for i in range(len(columns))]
        self.names += names
        staged = batch.with_df(batch.df.withColumns(dict(zip(names, columns))))
        return staged, [F.col(n) for n in names]

    def drop(self, batch: RecordBatch) -> RecordBatch:
        return batch.with_df(batch.df.drop(*self.names))


def cast_variants(batch: RecordBatch, values: list[Column], targets: list[str], stages: _Stages,
                  ) -> tuple[RecordBatch, list[tuple[Column, Column]]]:
    """Each schemaless value cast to its target: (batch with the stages, [(value, error)])."""
    batch, kinds = stages.add(batch, [variant_kind(v) for v in values])
    batch, views = stages.add(batch, [variant_views(v, k) for v, k in zip(values, kinds)])
    return batch, [convert_views(k, w, t) for k, w, t in zip(kinds, views, targets)]


# --- castValueToType for schema defaults (Python values) ------------------------------------------------


def _java_text_of_millis(millis: int) -> str:
    """Values.dateFormatFor(date).format(date) for a Python value, in UTC as `java_date_text`."""
    m = _EPOCH + dt.timedelta(milliseconds=millis)
    day = f"{m.year:04d}-{m.month:02d}-{m.day:02d}"
    time = f"{m.hour:02d}:{m.minute:02d}:{m.second:02d}.{m.microsecond // 1000:03d}Z"
    if millis < MILLIS_PER_DAY:
        return time
    return day if millis % MILLIS_PER_DAY == 0 else f"{day}T{time}"


def _millis_of(value: Any, kind: str) -> int:
    if kind == "date":
        return (value - _EPOCH_DATE).days * MILLIS_PER_DAY
    if kind == "timestamp":
        aware = value if value.tzinfo else value.replace(tzinfo=dt.timezone.utc)
        return (aware - _EPOCH) // dt.timedelta(milliseconds=1)
    return int(value)


def _py_wrap(n: int, bits: int) -> int:
    n &= (1 << bits) - 1
    return n - (1 << bits) if n >= 1 << (bits - 1) else n


def _py_saturate(x: float, bits: int) -> int:
    if math.isnan(x):
        return 0
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return hi if x >= hi else lo if x <= lo else int(x)


_JAVA_FLOAT = re.compile(r"[+-]?(NaN|Infinity|((\d+\.?\d*|\.\d+)([eE][+-]?\d+)?)[fFdD]?)")
_JAVA_HEX_FLOAT = re.compile(r"[+-]?0[xX]([0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][+-]?\d+[fFdD]?")


def _py_parse(text: str, target: str) -> Any:
    if target == "boolean":
        return text.lower() == "true"
    if target in ("float32", "float64"):
        s = text.strip(_JAVA_WHITESPACE)
        if _JAVA_FLOAT.fullmatch(s):
            x = float(s.rstrip("fFdD").replace("Infinity", "inf"))
        elif _JAVA_HEX_FLOAT.fullmatch(s):
            x = float.fromhex(s.rstrip("fFdD"))
        else:
            raise DataError(f"Value ({text}) was out of range for requested data type")
        return _to_float32(x) if target == "float32" else x
    bits = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}[target]
    if re.fullmatch(r"[+-]?[0-9]+", text) and -(1 << (bits - 1)) <= int(text) < 1 << (bits - 1):
        return int(text)
    raise DataError(f"Value ({text}) was out of range for requested data type")


def cast_default(schema: ConnectSchema, value: Any, target: str) -> Any:
    """castValueToType(schema, value, target) for a Python value (a schema's default); DataError as Kafka."""
    if value is None:
        return None
    kind = _kind(schema)
    if kind.startswith("unsupported:"):
        raise DataError(unsupported_input(schema.type))
    if target == "string":
        return _py_text(value, kind)
    if kind == "bytes":
        raise DataError(BYTES_UNEXPECTED)
    if kind == "string":
        return _py_parse(value, target)
    if kind in ("date", "time", "timestamp"):  # encodeLogicalType
        value = _millis_of(value, kind) // (MILLIS_PER_DAY if kind == "date" else 1)
    if target == "boolean":
        return bool(value) if kind == "boolean" else _py_long(value) != 0
    if isinstance(value, bool):
        value = int(value)
    if target in ("float32", "float64"):
        x = float(value)
        return _to_float32(x) if target == "float32" else x
    if target == "int64":
        return _py_long(value)
    n = _py_saturate(value, 32) if isinstance(value, float) else _py_wrap(int(value), 32)
    return n if target == "int32" else _py_wrap(n, _BITS[target])


def _py_long(value: Any) -> int:
    if isinstance(value, float):
        return _py_saturate(value, 64)
    return _py_wrap(int(value), 64)  # int() drops a Decimal's fraction toward zero, as BigDecimal does


def _py_text(value: Any, kind: str) -> str:
    if kind == "bytes":
        return base64.b64encode(bytes(value)).decode("ascii")
    if kind in ("date", "time", "timestamp"):
        return _java_text_of_millis(_millis_of(value, kind))
    if kind == "boolean":
        return "true" if value else "false"
    if kind in ("float32", "float64"):
        return _java_float_text(float(value), kind == "float32").strip('"')
    return str(value)  # int, string, Decimal (Python's to-sci-string is BigDecimal.toString)


# --- the transform ---------------------------------------------------------------------------------------


class _Cast(KeyOrValueTransform):
    """Kafka's Cast: `spec` is `field:type,...` (fields of a Struct or Map) or one `type` (the whole key or
    value). Output schema as `getOrBuildSchema` builds it: a cast field gets a plain SchemaBuilder of the
    target type, optional when the input field was, its default cast; a whole-value cast keeps the
    schema's name, version, doc and parameters. Null keys/values pass through unchanged."""

    @classmethod
    def config_def(cls) -> ConfigDef:
        return (ConfigDef()
                .define(SPEC_CONFIG, Type.LIST, validator=SpecValidator(), importance=Importance.HIGH,
                        doc="List of fields and the type to cast them to of the form field1:type,field2:type to "
                            "cast fields of Maps or Structs. A single type to cast the entire value. Valid types "
                            "are int8, int16, int32, int64, float32, float64, boolean, and string. Note that binary "
                            "fields can only be cast to string.")
                .define(REPLACE_NULL_WITH_DEFAULT_CONFIG, Type.BOOLEAN, True, importance=Importance.MEDIUM,
                        doc="Whether to replace fields that have a default value and that are null to the default "
                            "value. When set to true, the default value is used, otherwise null is used."))

    def __init__(self, config):
        super().__init__(config)
        self.casts = parse_field_types(config[SPEC_CONFIG])
        self.whole_value_type = self.casts.get(WHOLE_VALUE)
        self.replace_null_with_default: bool = config[REPLACE_NULL_WITH_DEFAULT_CONFIG]

    def apply(self, batch: RecordBatch) -> RecordBatch:
        if isinstance(self.operating_type(batch), T.NullType):
            return batch  # every value is null: Kafka returns such records unchanged
        schema = self.operating_schema(batch)
        if schema is None:
            return self._apply_schemaless(batch)
        if self.whole_value_type is not None:
            return self._apply_whole_with_schema(batch, schema)
        return self._apply_fields_with_schema(batch, schema)

    # -- schemaless ------------------------------------------------------------------------------------

    def _apply_schemaless(self, batch: RecordBatch) -> RecordBatch:
        value = self.operating_value()
        is_null = value.isNull() | F.is_variant_null(value)
        stages = _Stages()
        if self.whole_value_type is not None:
            batch, [(cast, error)] = cast_variants(batch, [value], [self.whole_value_type], stages)
            batch = batch.fail(~is_null & error.isNotNull(), error)
            out = self.new_record(batch, None, F.when(is_null, value).otherwise(cast.cast("variant")))
            return stages.drop(out)
        batch = require_map(batch, value, PURPOSE)
        batch, [entries] = stages.add(batch, [as_map(value)])
        fields = _hashmap_order(list(self.casts))  # Kafka iterates its HashMap of casts
        batch, converted = cast_variants(batch, [entries[f] for f in fields], [self.casts[f] for f in fields],
                                         stages)
        first_error = F.coalesce(*[e for _, e in converted])
        batch = batch.fail(~is_null & first_error.isNotNull(), first_error)
        kept = F.map_filter(entries, lambda k, _: ~k.isin(*fields))
        cast_entries = F.create_map(*[x for f, (c, _) in zip(fields, converted) for x in (F.lit(f), c.cast("variant"))])
        updated = object_of(F.map_concat(kept, cast_entries))
        out = self.new_record(batch, None, F.when(is_null | entries.isNull(), value).otherwise(updated))
        return stages.drop(out)

    # -- with a schema ---------------------------------------------------------------------------------

    def _whole_schema(self, schema: ConnectSchema) -> ConnectSchema:
        """copySchemaBasics(valueSchema, builder of the target type), optional and default as the input."""
        out = replace(ConnectSchema(self.whole_value_type), name=schema.name, version=schema.version,
                      doc=schema.doc, parameters=schema.parameters, optional=schema.optional)
        default = cast_default(schema, schema.default, self.whole_value_type)
        return out.with_default(_as_logical_default(out, default))

    def _apply_whole_with_schema(self, batch: RecordBatch, schema: ConnectSchema) -> RecordBatch:
        value = self.operating_value()
        try:
            out_schema = self._whole_schema(schema)
        except DataError as e:  # getOrBuildSchema fails for every record that is not null
            return batch.fail(value.isNotNull(), str(e))
        kind = _kind(schema)
        cast, error = convert(value, kind, self.whole_value_type, schema.scale if kind == "decimal" else 0)
        if error is not None:
            batch = batch.fail(value.isNotNull() & error.isNotNull(), error)
        return self.new_record(batch, out_schema, self.unless_null(batch, _as_schema_type(cast, out_schema)))

    def _field_schema(self, field_schema: ConnectSchema, target: str) -> ConnectSchema:
        out = ConnectSchema(target, optional=field_schema.optional)
        return out.with_default(cast_default(field_schema, field_schema.default, target))

    def _struct_schema(self, schema: ConnectSchema) -> ConnectSchema:
        if schema.type != "struct":
            raise DataError("Cannot list fields on non-struct type")
        fields = tuple(replace(f, schema=self._field_schema(f.schema, self.casts[f.name]))
                       if f.name in self.casts else f for f in schema.fields)
        out = ConnectSchema("struct", schema.optional, schema.name, schema.version, schema.doc, schema.parameters,
                            fields=fields)
        if schema.default is not None:  # castValueToType(struct schema, ...) refuses a STRUCT
            raise DataError(unsupported_input("struct"))
        return out

    def _apply_fields_with_schema(self, batch: RecordBatch, schema: ConnectSchema) -> RecordBatch:
        value = self.operating_value()
        try:
            out_schema = self._struct_schema(schema)
        except DataError as e:  # getOrBuildSchema fails for every record that is not null
            return batch.fail(value.isNotNull(), str(e))
        new_fields, errors = [], []
        for field, out_field in zip(schema.fields, out_schema.fields):
            original = struct_get(value, field, self.replace_null_with_default)
            new = original
            if field.name in self.casts:
                kind = _kind(field.schema)
                new, error = convert(original, kind, self.casts[field.name],
                                     field.schema.scale if kind == "decimal" else 0)
                new = F.when(original.isNull(), F.lit(None)).otherwise(new)
                if error is not None:
                    errors.append(F.when(original.isNotNull(), error))
            if not out_field.schema.optional:  # Struct.put validates the new value
                errors.append(required_null_message(field.name, out_field.schema, new))
            new_fields.append(new.alias(field.name))
        if errors:
            first = F.coalesce(*errors)
            batch = batch.fail(value.isNotNull() & first.isNotNull(), first)
        return self.new_record(batch, out_schema, self.unless_null(batch, F.struct(*new_fields)))


def _as_schema_type(value: Column, schema: ConnectSchema) -> Column:
    """A cast result in the Spark type of its output schema: a whole-value cast keeps the input's name, so an
    int32 named Date (or an int64 named Timestamp) is held as Spark holds that logical type."""
    if schema.logical == DATE:
        return F.date_from_unix_date(value)
    if schema.logical == TIMESTAMP:
        return F.timestamp_millis(value)
    return value


def _as_logical_default(schema: ConnectSchema, default: Any) -> Any:
    if default is None:
        return None
    if schema.logical == DATE:
        return _EPOCH_DATE + dt.timedelta(days=default)
    if schema.logical == TIMESTAMP:
        return (_EPOCH + dt.timedelta(milliseconds=default)).replace(tzinfo=None)
    return default


_KEY_ALIASES, _VALUE_ALIASES = kafka_names("Cast")


class CastKey(_Cast):
    __doc__ = _Cast.__doc__
    aliases = _KEY_ALIASES
    part = KEY


class CastValue(_Cast):
    __doc__ = _Cast.__doc__
    aliases = _VALUE_ALIASES
    part = VALUE
