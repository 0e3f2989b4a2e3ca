"""MaskField: replace the values of the named fields of the key or the value with a "null" value of
their type, or a custom replacement (Kafka's `org.apache.kafka.connect.transforms.MaskField$Key` /
`$Value`)."""

from __future__ import annotations

import datetime as dt
import decimal
import re
from typing import Any

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from connectors.transforms._support import (
    _JAVA_CLASS,
    KeyOrValueTransform, as_map, java_class_of, kafka_names, object_of, put_entries, require_map, struct_get,
    struct_required_message, to_variant,
)
from ingest.config.configdef import ConfigDef, Importance, Type
from ingest.records import KEY, RecordBatch
from ingest.records.schema import DATE, DECIMAL, TIME, TIMESTAMP, ConnectSchema

PURPOSE = "mask fields"

# java.math.BigDecimal(String): sign, digits with an optional point, optional exponent.
_JAVA_DECIMAL = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
_JAVA_INTEGER = re.compile(r"[+-]?\d+")
_INTEGRAL_KINDS = ("TINYINT", "SMALLINT", "INT", "BIGINT")


class NonEmptyList:
    """Kafka's NonEmptyListValidator."""

    def __call__(self, key: str, value: Any) -> str | None:
        return "Empty list" if value is not None and len(value) == 0 else None

    def describe(self) -> str:
        return "non-empty list"


class NonEmptyString:
    """Kafka's ConfigDef.NonEmptyString: null passes, "" does not (blank text does)."""

    def __call__(self, key: str, value: Any) -> str | None:
        return "String must be non-empty" if value is not None and value == "" else None

    def describe(self) -> str:
        return "non-empty string"


# --- Kafka's replacement conversions (Values.convertToX, BigDecimal::new), evaluated once -------------


def _not_a_number(replacement: str) -> str:
    return f"Unable to convert {replacement} (class java.lang.String) to a number"


def _java_long(replacement: str, bits: int = 64) -> int | str:
    """Values.convertToLong/Integer/Short/Byte: `(narrowed) new BigDecimal(s).longValue()`, or the error."""
    if not _JAVA_DECIMAL.fullmatch(replacement):
        return _not_a_number(replacement)
    d = decimal.Decimal(replacement)
    sign, digits, exponent = d.as_tuple()
    coefficient = int("".join(map(str, digits)) or "0")
    if exponent >= 0:  # BigDecimal.longValue keeps the low 64 bits; avoid building a huge integer
        whole = coefficient * pow(10, exponent, 2 ** 64)
    else:
        whole = coefficient // 10 ** min(-exponent, 4000)
    whole = -whole if sign else whole
    whole %= 2 ** bits
    return whole - 2 ** bits if whole >= 2 ** (bits - 1) else whole


def _java_double(replacement: str) -> float | str:
    """Values.convertToDouble/Float: `new BigDecimal(s).doubleValue()`, or the error."""
    if not _JAVA_DECIMAL.fullmatch(replacement):
        return _not_a_number(replacement)
    return float(decimal.Decimal(replacement))


def _custom_unsupported(java_class: str) -> str:
    return f"Cannot mask value of type class {java_class} with custom replacement."


def _null_unsupported(java_class: str) -> str:
    return f"Cannot mask value of type: class {java_class}"


_INT_BITS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}
_SCHEMA_CLASSES = {"bytes": "[B", "array": "java.util.ArrayList", "map": "java.util.HashMap",
                   "struct": "org.apache.kafka.connect.data.Struct", "boolean": "java.lang.Boolean"}


def masked_with_schema(schema: ConnectSchema, replacement: str | None) -> Column | str:
    """The masked value of a (non-null) field of `schema`, or Kafka's DataException message."""
    spark_type = schema.to_spark_type()
    logical = schema.logical
    if replacement is None:  # MaskField.PRIMITIVE_VALUE_MAPPING, by the value's Java class
        if logical == DATE:
            return F.lit(dt.date(1970, 1, 1))
        if logical == TIMESTAMP:
            return F.timestamp_millis(F.lit(0))
        if logical in (TIME, DECIMAL) or schema.type in ("int8", "int16", "int32", "int64", "float32", "float64"):
            return F.lit(0).cast(spark_type)
        if schema.type == "boolean":
            return F.lit(False)
        if schema.type == "string":
            return F.lit("")
        if schema.type == "array":
            return F.array().cast(spark_type)
        if schema.type == "map":
            return F.create_map().cast(spark_type)
        return _null_unsupported(_SCHEMA_CLASSES[schema.type])
    if logical in (DATE, TIME, TIMESTAMP):
        return _custom_unsupported("java.util.Date")
    if logical == DECIMAL:
        return _decimal_replacement(replacement, spark_type)
    if schema.type in _INT_BITS:
        converted: Any = _java_long(replacement, _INT_BITS[schema.type])
    elif schema.type in ("float32", "float64"):
        converted = _java_double(replacement)
    elif schema.type == "string":
        return F.lit(replacement)
    else:
        return _custom_unsupported(_SCHEMA_CLASSES[schema.type])
    return converted if isinstance(converted, str) else F.lit(converted).cast(spark_type)


def _decimal_replacement(replacement: str, spark_type: T.DecimalType) -> Column | str:
    """`new BigDecimal(replacement)` in the field's Decimal type. Kafka's Struct.put refuses a BigDecimal
    whose scale (the fractional digits as written: "1.5" has scale 1, "1.50" scale 2, "15E1" scale -1) is
    not the schema's, so any other scale fails the records, with Kafka's message."""
    if not _JAVA_DECIMAL.fullmatch(replacement):
        return f"Unable to convert {replacement} (class java.lang.String) to number"
    d = decimal.Decimal(replacement)
    scale = -d.as_tuple().exponent
    if scale != spark_type.scale:
        return (f"Decimal value has mismatching scale for given Decimal schema. Schema has scale "
                f"{spark_type.scale}, value has scale {scale}.")
    if len(d.as_tuple().digits) > spark_type.precision:  # more digits than the Spark decimal holds
        return "BigDecimal has mismatching scale value for given Decimal schema"
    return F.lit(str(d)).try_cast(spark_type)


# The Java class each VARIANT type stands for (schema_of_variant's leading word).
_KIND_CLASSES = {**_JAVA_CLASS, "TIMESTAMP_NTZ": "java.util.Date"}


def _kind(value: Column) -> Column:
    return F.regexp_extract(F.schema_of_variant(value), r"^([A-Z_]+)", 1)


def schemaless_masks(replacement: str | None) -> tuple[dict[str, Column], dict[str, str]]:
    """Per VARIANT type: the masked VARIANT, or Kafka's DataException message. Integral numbers are Longs,
    decimal and double numbers Doubles (JsonConverter's reading of JSON numbers)."""
    masks: dict[str, Column] = {}
    errors: dict[str, str] = {}
    if replacement is None:
        zero = {"BOOLEAN": F.lit(False), "FLOAT": F.lit(0.0).cast("float"), "DOUBLE": F.lit(0.0),
                "DECIMAL": F.lit(0.0), "STRING": F.lit(""), "DATE": F.lit(dt.date(1970, 1, 1)),
                "TIMESTAMP": F.timestamp_millis(F.lit(0)),
                "TIMESTAMP_NTZ": F.timestamp_millis(F.lit(0)).cast("timestamp_ntz"),
                "ARRAY": F.parse_json(F.lit("[]")), "OBJECT": F.parse_json(F.lit("{}")),
                **{k: F.lit(0).cast("long") for k in _INTEGRAL_KINDS}}
        masks.update(zero)
        errors.update({k: _null_unsupported(c) for k, c in _KIND_CLASSES.items() if k not in zero})
        return masks, errors
    masks["STRING"] = F.lit(replacement)
    for kinds, converted, spark_type in ((_INTEGRAL_KINDS, _java_long(replacement), "long"),
                                         (("FLOAT",), _java_double(replacement), "float"),
                                         (("DOUBLE", "DECIMAL"), _java_double(replacement), "double")):
        for k in kinds:
            if isinstance(converted, str):
                errors[k] = converted
            else:
                masks[k] = F.lit(converted).cast(spark_type)
    errors.update({k: _custom_unsupported(c) for k, c in _KIND_CLASSES.items() if k not in masks and k not in errors})
    return masks, errors


def _lookup(entries: dict[str, Column], value_type: str) -> Column:
    return F.create_map(*[c for k, v in entries.items() for c in (F.lit(k), v)]).cast(f"map<string,{value_type}>")


class MaskField(KeyOrValueTransform):
    """Mask specified fields with a valid null value for the field type (i.e. 0, false, empty string,
    and so on). For numeric and string fields, an optional replacement value can be specified that is
    converted to the correct type.

    As Kafka's MaskField: with a schema, the Struct keeps its schema and every field is read with
    `Struct.get` (a null takes the field's default); a null field stays null. Date/Time/Timestamp mask
    to the epoch, Decimal to 0, arrays and maps to empty ones; bytes and structs cannot be masked.
    A replacement converts as Kafka's `Values.convertTo*` (numbers) or is the string itself; other
    types fail. Without a schema a named field the Map lacks is added as null. Kafka's MaskField
    requires a Map/Struct: a tombstone fails.
    """

    @classmethod
    def config_def(cls) -> ConfigDef:
        return (ConfigDef()
                .define("fields", Type.LIST, validator=NonEmptyList(), importance=Importance.HIGH,
                        doc="Names of fields to mask.")
                .define("replacement", Type.STRING, None, NonEmptyString(), importance=Importance.LOW,
                        doc="Custom value replacement, that will be applied to all 'fields' values (numeric or "
                            "non-empty string values only)."))

    def __init__(self, config):
        super().__init__(config)
        self.fields: list[str] = list(dict.fromkeys(config["fields"]))
        self.replacement: str | None = config["replacement"]

    def apply(self, batch: RecordBatch) -> RecordBatch:
        data_type = self.operating_type(batch)
        if self.is_schemaless(batch):
            return self._apply_schemaless(batch, data_type)
        return self._apply_with_schema(batch, self.operating_schema(batch))

    def _apply_schemaless(self, batch: RecordBatch, data_type: T.DataType) -> RecordBatch:
        value = self.operating_value()
        prefix = f"Only Map objects supported in absence of schema for [{PURPOSE}], found: "
        if not isinstance(data_type, T.VariantType):
            found = F.lit("null") if isinstance(data_type, T.NullType) else java_class_of(to_variant(value, data_type))
            return batch.fail(F.lit(True), F.concat(F.lit(prefix), F.coalesce(found, F.lit("null"))))
        batch = require_map(batch, value, PURPOSE, allow_null=False)
        entries = as_map(value)
        masks, errors = schemaless_masks(self.replacement)
        mask_of = _lookup({k: v.cast("variant") for k, v in masks.items()}, "variant")
        error_of = _lookup({k: F.lit(v) for k, v in errors.items()}, "string")
        names = F.array(*[F.lit(n) for n in self.fields])
        unknown = (F.lit("Cannot mask value of type: class ") if self.replacement is None
                   else F.lit("Cannot mask value of type class "))
        # The type of each member, computed once per member (a struct per entry).
        typed = F.transform_values(entries, lambda _k, v: F.struct(v.alias("v"), _kind(v).alias("kind")))

        def is_null(e: Column) -> Column:
            return e["v"].isNull() | (e["kind"] == F.lit("VOID"))

        def error(e: Column) -> Column:
            known = F.when(F.map_contains_key(error_of, e["kind"]), error_of[e["kind"]])
            other = F.concat(unknown, e["kind"], F.lit("" if self.replacement is None else " with custom replacement."))
            return (F.when(is_null(e) | F.map_contains_key(mask_of, e["kind"]), F.lit(None).cast("string"))
                    .otherwise(F.coalesce(known, other)))

        masked = F.transform_values(typed, lambda k, e: F.when(
            F.array_contains(names, k) & ~is_null(e), mask_of[e["kind"]]).otherwise(e["v"]))
        # HashMap.put(field, masked(value.get(field))): a field the Map lacks is added as null.
        absent = [(n, F.lit(None).cast("variant"), ~F.map_contains_key(entries, n)) for n in self.fields]
        chosen = F.map_values(F.map_filter(typed, lambda k, _e: F.array_contains(names, k)))
        errors_found = F.filter(F.transform(chosen, error), lambda m: m.isNotNull())
        message = F.try_element_at(errors_found, F.lit(1))
        batch = batch.fail(message.isNotNull(), message)
        updated = put_entries(masked, absent)
        return self.new_record(batch, None, F.when(entries.isNotNull(), object_of(updated)).otherwise(value))

    def _apply_with_schema(self, batch: RecordBatch, schema: ConnectSchema) -> RecordBatch:
        value = self.operating_value()
        not_struct = struct_required_message(schema, PURPOSE)
        if not_struct:
            null_message = f"Only Struct objects supported for [{PURPOSE}], found: null"
            return batch.fail(F.lit(True), F.when(value.isNull(), F.lit(null_message)).otherwise(F.lit(not_struct)))
        batch = batch.fail(value.isNull(), f"Only Struct objects supported for [{PURPOSE}], found: null")
        columns, errors = [], []
        for f in schema.fields:
            got = struct_get(value, f)
            if f.name in self.fields:
                masked = masked_with_schema(f.schema, self.replacement)
                if isinstance(masked, str):
                    errors.append(F.when(got.isNotNull(), F.lit(masked)))
                    masked = got
                got = F.when(got.isNull(), got).otherwise(masked)
            columns.append(got.alias(f.name))
        if errors:
            message = F.coalesce(*errors)
            batch = batch.fail(message.isNotNull(), message)
        return self.new_record(batch, schema, F.when(value.isNull(), value).otherwise(F.struct(*columns)))


_KEY_ALIASES, _VALUE_ALIASES = kafka_names("MaskField")


class MaskFieldKey(MaskField):
    __doc__ = MaskField.__doc__
    part = KEY
    aliases = _KEY_ALIASES


class MaskFieldValue(MaskField):
    __doc__ = MaskField.__doc__
    aliases = _VALUE_ALIASES
