"""Kafka's header transforms: HeaderFrom ($Key/$Value), InsertHeader and DropHeaders, as column expressions.

Header values travel as strings in lakeconnect (see `SimpleHeaderConverter`): where Kafka adds a header
with a typed value, these transforms add the text Kafka's SimpleHeaderConverter would write for it
(`Values.convertToString`), built by `header_text`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from connectors.transforms._support import (
    MILLIS_PER_DAY, KeyOrValueTransform, as_map, java_date_text, kafka_names, list_setting, object_of, require_map,
    require_struct, variant_field,
)
from ingest.api import Transform
from ingest.config.configdef import ConfigDef, Importance, Type, ValidString
from ingest.errors import DataError, Problem
from ingest.records import HEADERS, KEY, RecordBatch
from ingest.records.schema import TIME, TIMESTAMP, ConnectSchema, Field

NULL_POINTER = "java.lang.NullPointerException"
ISO_TIMESTAMP = "yyyy-MM-dd'T'HH:mm:ss.SSS'Z'"
"""Values.ISO_8601_TIMESTAMP_FORMAT_PATTERN: how Kafka writes a Timestamp as a header string."""
ISO_DATE = "yyyy-MM-dd"
_JSON_OPTIONS = {"ignoreNullFields": "false", "timestampFormat": ISO_TIMESTAMP, "dateFormat": ISO_DATE,
                 "timeZone": "UTC"}
HEADER_ELEMENT = T.StructType([T.StructField("key", T.StringType()), T.StructField("value", T.StringType())])
HEADERS_TYPE = T.ArrayType(HEADER_ELEMENT)


# --- configuration checks that span several keys --------------------------------------------------------


class CrossCheckedConfigDef(ConfigDef):
    """A ConfigDef that also checks combinations of keys once every key is valid on its own (Kafka does
    such checks in `configure`; here they are reported at validate time with the other problems)."""

    def __init__(self, check: Callable[[Mapping[str, Any]], list[Problem]]):
        super().__init__()
        self._check = check

    def validate(self, raw: Mapping[str, Any], *, strict: bool = True) -> tuple[dict[str, Any], list[Problem]]:
        values, problems = super().validate(raw, strict=strict)
        if not problems:
            problems = problems + self._check(values)
        return values, problems


class NonEmptyStringValue:
    """Kafka's ConfigDef.NonEmptyString: the empty string is refused (blank text is a valid value)."""

    def __call__(self, key: str, value: Any) -> str | None:
        return "String must be non-empty" if value is not None and str(value) == "" else None

    def describe(self) -> str:
        return "non-empty string"


class NonEmptyList:
    """Kafka's NonEmptyListValidator."""

    def __call__(self, key: str, value: Any) -> str | None:
        return "Empty list" if value is None or len(value) == 0 else None

    def describe(self) -> str:
        return "non-empty list"


# --- header values as strings ----------------------------------------------------------------------------


def header_text(value: Column, data_type: T.DataType, schema: ConnectSchema | None) -> Column:
    """The string SimpleHeaderConverter writes for a Connect value (`Values.convertToString`); null stays null.

    Strings as they are; numbers and booleans as Java prints them; Date, Time and Timestamp as `java_date_text`
    (`yyyy-MM-dd`, `HH:mm:ss.SSS'Z'` or `yyyy-MM-dd'T'HH:mm:ss.SSS'Z'` by the instant, UTC); bytes in base64;
    decimals as BigDecimal.toString; structs, maps and arrays as compact JSON text (`{"a":1,"b":null}`,
    `[1,2]`). Schemaless values (VARIANT): a string as it is, anything else as its JSON text.
    """
    logical = schema.logical if schema is not None else None
    if isinstance(data_type, T.VariantType):
        is_string = F.schema_of_variant(value) == F.lit("STRING")
        text = F.when(is_string, F.try_variant_get(value, "$", "string")).otherwise(F.to_json(value))
        return F.when(value.isNull() | F.is_variant_null(value), F.lit(None).cast("string")).otherwise(text)
    if isinstance(data_type, T.NullType):
        return F.lit(None).cast("string")
    if isinstance(data_type, T.StringType):
        return value
    if isinstance(data_type, T.TimestampType):
        return java_date_text(F.unix_millis(value))
    if isinstance(data_type, T.DateType):
        return java_date_text(F.unix_date(value).cast("long") * F.lit(MILLIS_PER_DAY))
    if (logical == TIMESTAMP and isinstance(data_type, T.LongType)) or (
            logical == TIME and isinstance(data_type, T.IntegerType)):
        return java_date_text(value.cast("long"))
    if isinstance(data_type, T.BinaryType):
        return F.base64(value)
    if isinstance(data_type, T.DecimalType):  # Jackson writes BigDecimal.toString, as Kafka's Values does
        text = F.to_json(F.array(value))
        return F.when(value.isNull(), F.lit(None)).otherwise(F.substring(text, F.lit(2), F.length(text) - 2))
    if isinstance(data_type, (T.StructType, T.ArrayType, T.MapType)):
        return F.to_json(value, _JSON_OPTIONS)
    return value.cast("string")  # numbers and booleans: Spark prints them as Java does


def header_array(entries: Sequence[tuple[str, Column]]) -> Column:
    """Headers `(name, text)` as an array<struct<key, value>> in the given order."""
    structs = [F.struct(F.lit(name).alias("key"), text.cast("string").alias("value")) for name, text in entries]
    return (F.array(*structs) if structs else F.array()).cast(HEADERS_TYPE)


def append_headers(batch: RecordBatch, added: Sequence[tuple[str, Column]] | Column,
                   where: Column | None = None) -> Column:
    """The headers column with headers appended in order (Kafka's `Headers.add`: `(name, text)` pairs, or an
    array from `header_array`) for the records in scope for which `where` holds; the other records keep
    their headers as they are."""
    existing = F.col(HEADERS)
    existing_type = batch.df.schema[HEADERS].dataType
    if not isinstance(existing_type, T.ArrayType):  # a column of nulls only
        existing, existing_type = existing.cast(HEADERS_TYPE), HEADERS_TYPE
    base = F.coalesce(existing, F.array().cast(existing_type))
    array = added if isinstance(added, Column) else header_array(added)
    applies = batch.active() if where is None else batch.active() & F.coalesce(where, F.lit(False))
    return F.when(applies, F.concat(base, array)).otherwise(existing)


# --- default values (Struct.get's replacement of a null by the field's default) ----------------------------


def default_literal(schema: ConnectSchema) -> Column | None:
    """The schema's default value as a Spark literal of its Spark type; None when it has no default."""
    if schema.default is None:
        return None
    return _literal(schema.default, schema).cast(schema.to_spark_type())


def _literal(value: Any, schema: ConnectSchema) -> Column:
    if value is None:
        return F.lit(None).cast(schema.to_spark_type())
    if schema.type == "struct":
        return F.struct(*[_literal(value.get(f.name), f.schema).alias(f.name) for f in schema.fields])
    if schema.type == "array":
        items = [_literal(v, schema.value_schema) for v in value]
        return F.array(*items) if items else F.array().cast(schema.to_spark_type())
    if schema.type == "map":
        pairs = [c for k, v in value.items() for c in (_literal(k, schema.key_schema), _literal(v, schema.value_schema))]
        return F.create_map(*pairs) if pairs else F.create_map().cast(schema.to_spark_type())
    if isinstance(value, dt.datetime) and value.tzinfo is None:  # naive means UTC in ConnectSchema
        value = value.replace(tzinfo=dt.timezone.utc)
    if isinstance(value, bytes):
        value = bytearray(value)
    return F.lit(value)


def with_default(value: Column, schema: ConnectSchema, replace_null: bool) -> Column:
    """Struct.get (null replaced by the field's default) or, when `replace_null` is off, getWithoutDefault."""
    default = default_literal(schema) if replace_null else None
    return value if default is None else F.coalesce(value, default)


# --- HeaderFrom -------------------------------------------------------------------------------------------


FIELDS = "fields"
HEADERS_SETTING = "headers"
OPERATION = "operation"
REPLACE_NULL_WITH_DEFAULT = "replace.null.with.default"


def _same_length(values: Mapping[str, Any]) -> list[Problem]:
    if len(values[FIELDS]) != len(values[HEADERS_SETTING]):
        return [Problem(HEADERS_SETTING, f"'{FIELDS}' config must have the same number of elements as "
                                         f"'{HEADERS_SETTING}' config.")]
    return []


class HeaderFrom(KeyOrValueTransform):
    """Kafka's `HeaderFrom`: moves or copies fields of the key/value into headers, in the configured order.

    As Kafka: with a schema the key/value must be a Struct (a tombstone fails with Kafka's
    `Only Struct objects supported for [header copy], found: null`), every field must be in the schema
    (Kafka fails with a NullPointerException; here every record fails with a DataError naming the field),
    and `move` removes the fields from the value and from its schema (a copy of the schema's name,
    version, doc and parameters, not optional, as `SchemaUtil.copySchemaBasics` builds it). Without a
    schema the value must be a Map (`requireMap`); a missing field gives a header with a null value.
    A header is always added, even when one with that name exists.

    Header values are strings in lakeconnect: a field's value becomes the text Kafka's default
    SimpleHeaderConverter writes for it (`header_text`): primitives as Java prints them, structs, maps and
    arrays as compact JSON text such as `{"foo":"foo-value"}`, schemaless strings as they are and other
    schemaless values as JSON. `replace.null.with.default` (KIP-1040) decides whether a null field with a
    default gives its default (Struct.get) or null (getWithoutDefault), in the header and in the fields a
    `move` keeps.
    """

    @classmethod
    def config_def(cls) -> ConfigDef:
        return (CrossCheckedConfigDef(_same_length)
                .define(FIELDS, Type.LIST, validator=NonEmptyList(), importance=Importance.HIGH,
                        doc="Field names in the record whose values are to be copied or moved to headers.")
                .define(HEADERS_SETTING, Type.LIST, validator=NonEmptyList(), importance=Importance.HIGH,
                        doc="Header names, in the same order as the field names listed in the fields configuration "
                            "property.")
                .define(OPERATION, Type.STRING, validator=ValidString.of("move", "copy"), importance=Importance.HIGH,
                        doc="Either <code>move</code> if the fields are to be moved to the headers (removed from the "
                            "key/value), or <code>copy</code> if the fields are to be copied to the headers (retained "
                            "in the key/value).")
                .define(REPLACE_NULL_WITH_DEFAULT, Type.BOOLEAN, True, importance=Importance.MEDIUM,
                        doc="Whether to replace fields that have a default value and that are null to the default "
                            "value. When set to true, the default value is used, otherwise null is used."))

    @property
    def fields(self) -> list[str]:
        return list_setting(self.config[FIELDS])

    @property
    def header_names(self) -> list[str]:
        return list_setting(self.config[HEADERS_SETTING])

    @property
    def move(self) -> bool:
        return self.config[OPERATION] == "move"

    @property
    def purpose(self) -> str:
        return f"header {self.config[OPERATION]}"

    def apply(self, batch: RecordBatch) -> RecordBatch:
        if self.is_schemaless(batch):
            return self._apply_schemaless(batch)
        return self._apply_with_schema(batch, self.operating_schema(batch))

    def _apply_with_schema(self, batch: RecordBatch, schema: ConnectSchema) -> RecordBatch:
        require_struct(schema, self.purpose)
        for name in self.fields:
            if schema.field(name) is None:
                where = f"the {self.part} schema" + (f" {schema.name}" if schema.name else "")
                raise DataError(f"Field '{name}' named in '{FIELDS}' is not in {where}: Kafka's HeaderFrom "
                                "fails with a NullPointerException", exception_class=NULL_POINTER)
        value = self.operating_value()
        batch = batch.fail(value.isNull(), f"Only Struct objects supported for [{self.purpose}], found: null")
        replace_null = self.config[REPLACE_NULL_WITH_DEFAULT]
        struct_type = self.operating_type(batch)
        entries = []
        for field_name, header in zip(self.fields, self.header_names):
            field_schema = schema.field(field_name).schema
            field_value = with_default(value[field_name], field_schema, replace_null)
            entries.append((header, header_text(field_value, struct_type[field_name].dataType, field_schema)))
        headers = append_headers(batch, entries)
        if not self.move:
            return batch.set({HEADERS: headers})
        kept = [f for f in schema.fields if f.name not in self.fields]
        new_schema = ConnectSchema("struct", False, schema.name, schema.version, schema.doc, schema.parameters,
                                   fields=tuple(Field(f.name, i, f.schema) for i, f in enumerate(kept)))
        moved = F.struct(*[with_default(value[f.name], f.schema, replace_null).alias(f.name) for f in kept])
        out = batch.set({HEADERS: headers, self.part: F.when(value.isNull(), F.lit(None)).otherwise(moved)})
        return out.with_schemas(key_schema=new_schema) if self.part == KEY else out.with_schemas(value_schema=new_schema)

    def _apply_schemaless(self, batch: RecordBatch) -> RecordBatch:
        value = self.operating_value()
        if not isinstance(self.operating_type(batch), T.VariantType):  # no key/value at all: every one is null
            return batch.fail_all(f"Only Map objects supported in absence of schema for [{self.purpose}], found: null")
        batch = require_map(batch, value, self.purpose, allow_null=False)
        entries = [(header, header_text(variant_field(value, name), T.VariantType(), None))
                   for name, header in zip(self.fields, self.header_names)]
        columns = {HEADERS: append_headers(batch, entries)}
        if self.move:
            moved = F.lit(list(dict.fromkeys(self.fields)))
            kept = F.map_filter(as_map(value), lambda k, _v: ~F.array_contains(moved, k))
            columns[self.part] = object_of(kept)
        return batch.set(columns)


_HEADER_FROM_KEY, _HEADER_FROM_VALUE = kafka_names("HeaderFrom")


class HeaderFromKey(HeaderFrom):
    """Kafka's `HeaderFrom$Key`: fields of the record key into headers (see `HeaderFrom`)."""

    aliases = _HEADER_FROM_KEY
    part: ClassVar[str] = KEY


class HeaderFromValue(HeaderFrom):
    """Kafka's `HeaderFrom$Value`: fields of the record value into headers (see `HeaderFrom`)."""

    aliases = _HEADER_FROM_VALUE


# --- InsertHeader, DropHeaders ----------------------------------------------------------------------------


class _absent_or:
    """A validator that also lets the key be unset (a cross-check then decides what is required)."""

    def __init__(self, inner) -> None:
        self._inner = inner

    def __call__(self, key: str, value: Any) -> str | None:
        return None if value is None else self._inner(key, value)

    def describe(self) -> str:
        return self._inner.describe()


def _one_of(key: str, old: str, doc: str) -> Callable[[Mapping[str, Any]], list[Problem]]:
    """Kafka's key `key` is required, or lakeconnect's earlier name for it, `old` (still read; Kafka's wins)."""
    def check(values: Mapping[str, Any]) -> list[Problem]:
        if values.get(key) is None and values.get(old) is None:
            return [Problem(key, f"missing required configuration ({doc})")]
        return []
    return check


class InsertHeader(Transform):
    """Kafka's `InsertHeader`: adds a header `header` with the literal `value.literal` to every record,
    always (a header with the same name already there stays; Kafka adds, it does not replace).

    Kafka parses the literal with `Values.parseString` and the header converter writes the parsed value
    back as text; lakeconnect keeps header values as that text ("007" is "7", "[1, 2]" is "[1,2]", "null" a
    null value), from the same parser. lakeconnect's earlier name for `value.literal`, `literal.value`, is
    still read.
    """

    aliases = ("org.apache.kafka.connect.transforms.InsertHeader",)
    scoped = True

    @classmethod
    def config_def(cls) -> ConfigDef:
        return (CrossCheckedConfigDef(_one_of("value.literal", "literal.value", "Literal value with which to set "
                                              "the header. The value is parsed as a Connect value."))
                .define("header", Type.STRING, validator=NonEmptyStringValue(), importance=Importance.MEDIUM,
                        doc="The name of the header.")
                .define("value.literal", Type.STRING, None, importance=Importance.MEDIUM,
                        doc="Literal value with which to set the header.")
                .define("literal.value", Type.STRING, None, importance=Importance.LOW,
                        doc="lakeconnect's earlier name for value.literal."))

    def apply(self, batch: RecordBatch) -> RecordBatch:
        from connectors.converters.simple_header_converter import kafka_header_text

        value = self.config["value.literal"]
        literal = F.lit(kafka_header_text(self.config["literal.value"] if value is None else value)).cast("string")
        return batch.set({HEADERS: append_headers(batch, [(self.config["header"], literal)])})


class DropHeaders(Transform):
    """Kafka's `DropHeaders`: removes every header whose name is in `headers` (all of them, not just the
    first). lakeconnect's earlier name for the key, `names`, is still read."""

    aliases = ("org.apache.kafka.connect.transforms.DropHeaders",)
    scoped = True

    @classmethod
    def config_def(cls) -> ConfigDef:
        return (CrossCheckedConfigDef(_one_of("headers", "names", "The name of the headers to be removed."))
                .define("headers", Type.LIST, None, validator=_absent_or(NonEmptyList()),
                        importance=Importance.HIGH, doc="The name of the headers to be removed.")
                .define("names", Type.LIST, None, validator=_absent_or(NonEmptyList()), importance=Importance.LOW,
                        doc="lakeconnect's earlier name for headers."))

    def apply(self, batch: RecordBatch) -> RecordBatch:
        chosen = self.config["headers"] if self.config["headers"] is not None else self.config["names"]
        names = F.lit(list(dict.fromkeys(list_setting(chosen))))
        kept = F.filter(F.col(HEADERS), lambda h: ~F.coalesce(F.array_contains(names, h["key"]), F.lit(False)))
        return batch.set({HEADERS: kept})

