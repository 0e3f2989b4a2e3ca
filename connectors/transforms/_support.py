"""What Kafka's transforms share, as Spark column expressions: the `$Key`/`$Value` split, the schemaless
(VARIANT) form of Kafka's `Map` values, and Kafka's `Requirements` checks.

Records with a schema hold Connect values in the Spark type of the schema (`ConnectSchema.to_spark_type`):
a Struct is a Spark struct, a Date a DateType, and so on. Records without a schema (JsonConverter with
`schemas.enable=false`) hold a VARIANT: Kafka's schemaless `Map` is a VARIANT object, a `List` a VARIANT
array, a String/Long/Double/Boolean a VARIANT primitive.

A transform changes records through `RecordBatch.set` / `drop` / `fail` (they respect predicates and
records that failed an earlier stage) and returns the schemas that follow with `with_schemas`. A problem
with the whole batch (a field the schema does not have) is raised as `DataError`: the runtime then fails
every record in scope, as Kafka fails each record, and `errors.tolerance` decides what happens.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ingest.api import Transform
from ingest.errors import DataError
from ingest.records import KEY, VALUE, RecordBatch
from ingest.records.schema import ConnectSchema

MAP_OF_VARIANTS = "map<string,variant>"

# What Java class Kafka names in "found: ..." for a schemaless value of each VARIANT type.
_JAVA_CLASS = {
    "OBJECT": "java.util.HashMap", "ARRAY": "java.util.ArrayList", "STRING": "java.lang.String",
    "BIGINT": "java.lang.Long", "INT": "java.lang.Long", "SMALLINT": "java.lang.Long", "TINYINT": "java.lang.Long",
    "DOUBLE": "java.lang.Double", "FLOAT": "java.lang.Float", "BOOLEAN": "java.lang.Boolean",
    "DECIMAL": "java.math.BigDecimal", "BINARY": "[B", "DATE": "java.util.Date", "TIMESTAMP": "java.util.Date",
}


class KeyOrValueTransform(Transform):
    """Base of a transform with Kafka's `$Key` and `$Value` variants: `part` says which it operates on."""

    part: ClassVar[str] = VALUE
    scoped: ClassVar[bool] = True
    """Changes records only through `RecordBatch.set`/`drop`/`fail`, so a predicate can scope it in one pass."""

    def operating_schema(self, batch: RecordBatch) -> ConnectSchema | None:
        return batch.key_schema if self.part == KEY else batch.value_schema

    def operating_value(self) -> Column:
        return F.col(self.part)

    def operating_type(self, batch: RecordBatch) -> T.DataType:
        return batch.df.schema[self.part].dataType

    def is_schemaless(self, batch: RecordBatch) -> bool:
        """Kafka's `operatingSchema(record) == null`: no schema, the value is a VARIANT (or absent)."""
        return self.operating_schema(batch) is None

    def unless_null(self, batch: RecordBatch, result: Column) -> Column:
        """Kafka's `value == null ? null : result` for the operating part.

        When Spark knows the column holds no null (a source's struct, or a transform's result built from
        one), this is `result` itself: a conditional around a new struct hides it from the optimizer, which
        then copies the struct's field expressions into every later reader (each transform after this one
        and the converter), so a costly field such as a formatted date would be computed many times.
        """
        if not batch.df.schema[self.part].nullable:
            return result
        return F.when(self.operating_value().isNull(), F.lit(None)).otherwise(result)

    def new_record(self, batch: RecordBatch, schema: ConnectSchema | None, value: Column) -> RecordBatch:
        """Kafka's `newRecord(record, updatedSchema, updatedValue)` for the operating part."""
        out = batch.set({self.part: value})
        return out.with_schemas(key_schema=schema) if self.part == KEY else out.with_schemas(value_schema=schema)


def kafka_names(base: str, package: str = "org.apache.kafka.connect.transforms") -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The aliases of a transform's `$Key` and `$Value` classes, e.g. `Cast$Key`, `Cast$Value`."""
    return (f"{package}.{base}$Key",), (f"{package}.{base}$Value",)


# --- Kafka's Requirements ----------------------------------------------------------------------------


def require_struct(schema: ConnectSchema | None, purpose: str) -> ConnectSchema:
    """Requirements.requireStruct at the schema level: the batch's values must be Structs."""
    if schema is None or schema.type != "struct":
        found = "null" if schema is None else _schema_java_class(schema)
        raise DataError(f"Only Struct objects supported for [{purpose}], found: {found}")
    return schema


def _schema_java_class(schema: ConnectSchema) -> str:
    return {"string": "java.lang.String", "int8": "java.lang.Byte", "int16": "java.lang.Short",
            "int32": "java.lang.Integer", "int64": "java.lang.Long", "float32": "java.lang.Float",
            "float64": "java.lang.Double", "boolean": "java.lang.Boolean", "bytes": "[B",
            "array": "java.util.ArrayList", "map": "java.util.HashMap"}.get(schema.type, schema.type)


def java_class_of(value: Column) -> Column:
    """The Java class Kafka would name for a schemaless value (a VARIANT), for error messages."""
    kind = F.regexp_extract(F.schema_of_variant(value), r"^([A-Z]+)", 1)
    mapping = F.create_map(*[x for k, v in _JAVA_CLASS.items() for x in (F.lit(k), F.lit(v))])
    return F.coalesce(mapping[kind], kind)


def as_map(value: Column) -> Column:
    """A schemaless value as map<string, variant> (null when it is not an object, or null)."""
    return F.try_variant_get(value, "$", MAP_OF_VARIANTS)


def not_a_map(value: Column) -> Column:
    """Requirements.requireMap fails: a non-null value that is not an object (schemaless)."""
    return value.isNotNull() & ~F.is_variant_null(value) & as_map(value).isNull()


def require_map(batch: RecordBatch, value: Column, purpose: str, allow_null: bool = True) -> RecordBatch:
    """Fail the records whose schemaless value is not a Map, with Kafka's message (requireMap /
    requireMapOrNull). With `allow_null=False` a null value fails too (Kafka's requireMap on a tombstone)."""
    found = F.concat(F.lit(f"Only Map objects supported in absence of schema for [{purpose}], found: "),
                     F.coalesce(java_class_of(value), F.lit("null")))
    bad = not_a_map(value)
    if not allow_null:
        bad = bad | value.isNull() | F.is_variant_null(value)
        found = F.when(value.isNull() | F.is_variant_null(value), F.lit(
            f"Only Map objects supported in absence of schema for [{purpose}], found: null")).otherwise(found)
    return batch.fail(bad, found)


def object_of(entries: Column) -> Column:
    """A VARIANT object from a map<string, variant> (or a struct)."""
    return F.to_variant_object(entries)


def variant_field(value: Column, name: str) -> Column:
    """The member `name` of a schemaless Map (a VARIANT; null when absent or not an object)."""
    return as_map(value)[name]


def to_variant(value: Column, data_type: T.DataType) -> Column:
    """Any Spark value as a VARIANT (structs and maps become objects, arrays arrays)."""
    if isinstance(data_type, T.VariantType):
        return value
    if isinstance(data_type, (T.StructType, T.MapType, T.ArrayType)):
        return F.to_variant_object(value)
    if isinstance(data_type, T.NullType):
        return F.lit(None).cast("variant")
    return value.cast("variant")


MILLIS_PER_DAY = 86_400_000


def java_date_text(millis: Column) -> Column:
    """A Date, Time or Timestamp (millis since the epoch) as Kafka's `Values` prints a java.util.Date, for
    Cast to string and for header values: the format follows the instant, not the schema
    (`Values.dateFormatFor`): before the epoch's second day a time of day (so 1969-12-31 is
    `00:00:00.000Z`), at midnight a date, otherwise a timestamp; in UTC, as Values' formats are."""
    ts = F.timestamp_millis(millis)
    return (F.when(millis < F.lit(MILLIS_PER_DAY), utc_format(ts, "HH:mm:ss.SSS'Z'"))
            .when(millis % F.lit(MILLIS_PER_DAY) == 0, utc_format(ts, "yyyy-MM-dd"))
            .otherwise(utc_format(ts, "yyyy-MM-dd'T'HH:mm:ss.SSS'Z'")))


def utc_format(ts: Column, pattern: str) -> Column:
    """`ts` formatted with a Java date pattern in UTC, whatever the session's time zone."""
    return F.date_format(F.to_utc_timestamp(ts, F.current_timezone()), pattern)


def list_setting(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    return list(value)


# --- added for InsertField, ReplaceField, MaskField, TimestampConverter ---------------------------------

import datetime as dt  # noqa: E402
from collections.abc import Callable, Mapping  # noqa: E402

from ingest.config.configdef import ConfigDef  # noqa: E402
from ingest.errors import Problem  # noqa: E402
from ingest.records.schema import DATE as DATE_NAME  # noqa: E402
from ingest.records.schema import DECIMAL as DECIMAL_NAME  # noqa: E402
from ingest.records.schema import TIME as TIME_NAME  # noqa: E402
from ingest.records.schema import TIMESTAMP as TIMESTAMP_NAME  # noqa: E402
from ingest.records.schema import Field  # noqa: E402


class CheckedConfigDef(ConfigDef):
    """A ConfigDef that also runs a check across keys, for what Kafka's `configure()` rejects with a
    ConfigException (e.g. TimestampConverter's "requires format option"): reported at validate time."""

    def __init__(self, check: Callable[[dict[str, Any]], list[Problem]]):
        super().__init__()
        self._check = check

    def validate(self, raw: Mapping[str, Any], *, strict: bool = True) -> tuple[dict[str, Any], list[Problem]]:
        values, problems = super().validate(raw, strict=strict)
        return values, problems + self._check(values)


def connect_literal(schema: ConnectSchema, value: Any) -> Column:
    """A Connect value held in Python form (a schema default) as a Spark literal of the schema's type."""
    spark_type = schema.to_spark_type()
    if value is None:
        return F.lit(None).cast(spark_type)
    if schema.logical == TIMESTAMP_NAME:
        aware = value if value.tzinfo else value.replace(tzinfo=dt.timezone.utc)
        millis = (aware - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)) // dt.timedelta(milliseconds=1)
        return F.timestamp_millis(F.lit(millis))
    if schema.logical == DECIMAL_NAME:
        return F.lit(str(value)).try_cast(spark_type)
    if schema.type == "struct":
        return F.struct(*[connect_literal(f.schema, value.get(f.name)).alias(f.name) for f in schema.fields])
    if schema.type == "array":
        return F.array(*[connect_literal(schema.value_schema, v) for v in value]).cast(spark_type)
    if schema.type == "map":
        entries = [c for k, v in value.items()
                   for c in (connect_literal(schema.key_schema, k), connect_literal(schema.value_schema, v))]
        return F.create_map(*entries).cast(spark_type)
    if schema.type == "bytes":
        return F.lit(bytearray(value))
    return F.lit(value).cast(spark_type)


def struct_get(value: Column, field: Field, replace_null_with_default: bool = True) -> Column:
    """Kafka's `Struct.get(field)` (null -> the field's default value) or, with `replace_null_with_default`
    false, `Struct.getWithoutDefault`: one field of a Spark struct holding a Connect Struct."""
    got = value[field.name]
    if replace_null_with_default and field.schema.default is not None:
        return F.coalesce(got, connect_literal(field.schema, field.schema.default))
    return got


def struct_required_message(schema: ConnectSchema | None, purpose: str) -> str | None:
    """Requirements.requireStruct's message for a batch whose values are not Structs (None if they are),
    naming the Java class Kafka would see (java.util.Date for Date/Time/Timestamp, ...)."""
    if schema is not None and schema.type == "struct":
        return None
    logical = {DATE_NAME: "java.util.Date", TIME_NAME: "java.util.Date", TIMESTAMP_NAME: "java.util.Date",
               DECIMAL_NAME: "java.math.BigDecimal"}
    found = "null" if schema is None else logical.get(schema.logical or "", _schema_java_class(schema))
    return f"Only Struct objects supported for [{purpose}], found: {found}"


def required_null_message(name: str, schema: ConnectSchema, new_value: Column) -> Column:
    """ConnectSchema.validateValue on `Struct.put`: the message when a required field gets a null (else null)."""
    message = f'Invalid value: null used for required field: "{name}", schema type: {schema.type.upper()}'
    return F.when(new_value.isNull(), F.lit(message)) if not schema.optional else F.lit(None).cast("string")


def put_entries(entries: Column, puts: list[tuple[str, Column, Column | None]]) -> Column:
    """`HashMap.put(name, value)` of each (name, VARIANT value, condition) in order on a map<string, variant>:
    a put happens when its condition holds (None: always); a later put of the same name wins. Linear in
    the number of puts (each map is referenced once)."""
    if not puts:
        return entries
    grouped: dict[str, list[tuple[Column, Column]]] = {}
    for name, value, cond in puts:
        grouped.setdefault(name, []).append((value, F.lit(True) if cond is None else cond))
    values, conds = {}, {}
    for name, items in grouped.items():
        value, cond = items[0]
        for later_value, later_cond in items[1:]:
            value, cond = F.when(later_cond, later_value).otherwise(value), cond | later_cond
        values[name], conds[name] = value, cond

    def put_here(k: Column) -> Column:
        chosen = F.lit(False)
        for name in reversed(list(conds)):
            chosen = F.when(k == F.lit(name), conds[name]).otherwise(chosen)
        return chosen

    new = F.create_map(*[c for name, value in values.items() for c in (F.lit(name), value)])
    return F.map_concat(F.map_filter(entries, lambda k, _v: ~put_here(k)), F.map_filter(new, lambda k, _v: put_here(k)))
