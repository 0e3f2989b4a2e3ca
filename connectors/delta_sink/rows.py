"""Records -> table rows, as column expressions over one RecordBatch (one key schema, one value schema).

A row's columns are the primary key's (pk.mode) then the value's fields (a Debezium envelope's `after`,
or `before` for a delete, when envelopes are applied), and in insert mode the record's Kafka
coordinates. Beside them every row carries what the write needs and drops:

    ORDER_*   the record's topic, partition and offset: the latest record of a key wins (upsert)
    DELETE    true: the row removes its key (Debezium op d, or a tombstone with delete.enabled)
    SKIP      true: the record makes no row (a tombstone that deletes nothing, Debezium t/m events)
    PROBLEM   why the record cannot be written (null when it can): the batch stops on the first one
    KEY_TEXT  the record key as text, for that message

A problem that the schemas alone show (a pk field the key lacks) is a `Refused`, raised on the driver
before any data is read.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from connectors.delta_sink import config as C
from ingest.config.settings import Settings, setting
from ingest.records import KEY, OFFSET, PARTITION, TIMESTAMP, TOPIC, VALUE, RecordBatch
from ingest.records.schema import ConnectSchema

ORDER_TOPIC, ORDER_PARTITION, ORDER_OFFSET = "__lc_order_topic", "__lc_order_partition", "__lc_order_offset"
DELETE, SKIP, PROBLEM, KEY_TEXT = "__lc_delete", "__lc_skip", "__lc_problem", "__lc_key_text"
MARKERS = (ORDER_TOPIC, ORDER_PARTITION, ORDER_OFFSET, DELETE, SKIP, PROBLEM, KEY_TEXT)

ENVELOPE_SUFFIX = ".Envelope"
BEFORE, AFTER, SOURCE, OP = "before", "after", "source", "op"
DELETED_COLUMN = "__deleted"  # Debezium's ExtractNewRecordState name, in insert mode with unwrap=true
VALUE_COLUMN = "value"  # the column of a value that is not a struct (insert mode only)
UPSERT_OPS, DELETE_OP, SKIPPED_OPS = ("c", "r", "u"), "d", ("t", "m")


class Refused(Exception):
    """The batch's schemas cannot make rows: what is wrong and what to do, without a record's coordinates
    (the sink adds those of the batch's first record)."""


@dataclass(frozen=True)
class DeltaSinkSettings(Settings):
    """How records become rows: the sink's typed keys."""

    mode: str = setting(C.INSERT_MODE, str.lower)
    pk_mode: str = setting(C.PK_MODE, str.lower)
    pk_fields: tuple[str, ...] = setting(C.PK_FIELDS, lambda v: tuple(v or ()))
    delete_enabled: bool = setting(C.DELETE_ENABLED, bool)
    unwrap: str = setting(C.DEBEZIUM_UNWRAP, str.lower)

    @property
    def upsert(self) -> bool:
        return self.mode == C.UPSERT

    def key_names(self, key_schema: ConnectSchema | None, row_schema: ConnectSchema | None) -> list[str]:
        """The primary key's column names for records of these schemas."""
        if self.pk_mode == C.PK_KAFKA:
            return list(self.pk_fields or C.KAFKA_PK_NAMES)
        if self.pk_mode == C.PK_RECORD_KEY:
            if key_schema is not None and key_schema.type == "struct":
                return list(self.pk_fields or [f.name for f in key_schema.fields])
            return list(self.pk_fields[:1])
        if self.pk_mode == C.PK_RECORD_VALUE:
            if row_schema is not None and row_schema.type == "struct":
                return list(self.pk_fields or [f.name for f in row_schema.fields])
            return list(self.pk_fields)
        return []


def is_envelope(schema: ConnectSchema | None) -> bool:
    """A Debezium change event's value: a struct named `*.Envelope` with before, after, source and op."""
    return (schema is not None and schema.type == "struct" and (schema.name or "").endswith(ENVELOPE_SUFFIX)
            and all(schema.field(n) is not None for n in (BEFORE, AFTER, SOURCE, OP)))


def applies_envelope(settings: DeltaSinkSettings, value_schema: ConnectSchema | None) -> bool:
    if settings.unwrap == C.UNWRAP_FALSE:
        return False
    if settings.unwrap == C.UNWRAP_TRUE:
        if value_schema is not None and not _envelope_shaped(value_schema):
            raise Refused(f"{C.DEBEZIUM_UNWRAP}=true, but the record value's schema {_describe(value_schema)} is "
                          "not a Debezium envelope (a struct with before, after and op); set it to auto or false "
                          "for this topic")
        return value_schema is not None
    return settings.upsert and is_envelope(value_schema)


def _envelope_shaped(schema: ConnectSchema) -> bool:
    return schema.type == "struct" and all(schema.field(n) is not None for n in (BEFORE, AFTER, OP))


def rows(batch: RecordBatch, settings: DeltaSinkSettings, schemaless: bool = True) -> DataFrame:
    """The batch's rows: the table's columns (key first), then the MARKERS columns.

    `schemaless` (insert mode): a value without a schema becomes the `value` column (its JSON text);
    False when the table's records have schemas, so that such values can only be tombstones."""
    # A barrier Spark cannot push filters through: a converter computes a batch's values after its own
    # filter (the records of this schema), raising on nulls a tombstone of another schema has; a filter
    # of ours on `value` pushed below it would evaluate those values for every record of the topic.
    df = batch.df.filter(F.spark_partition_id() >= 0)
    value = F.col(VALUE)
    tombstone = value.isNull()
    envelope = applies_envelope(settings, batch.value_schema)
    if envelope:
        op = value[OP]
        is_delete = op == F.lit(DELETE_OP)
        row = F.when(op.isin(*UPSERT_OPS), value[AFTER]).when(is_delete, value[BEFORE])
        row_schema = batch.value_schema.field(AFTER).schema
        if row_schema.type != "struct":
            raise Refused(f"the Debezium envelope's `after` is {_describe(row_schema)}, not a struct")
    else:
        op = None
        is_delete = F.lit(False)
        row, row_schema = value, batch.value_schema
    struct_row = row_schema is not None and row_schema.type == "struct"

    # Which records make no row, and which remove their key. A tombstone deletes its key with
    # delete.enabled; else it is skipped (Debezium follows each delete with one), unless envelopes are
    # never applied: then, as Confluent's JDBC sink does, it is a problem.
    skip = tombstone | op.isin(*SKIPPED_OPS) if envelope else tombstone
    if settings.upsert and settings.delete_enabled:
        skip = F.when(tombstone, F.lit(False)).otherwise(skip)
        is_delete = tombstone | is_delete
    elif settings.upsert and settings.unwrap == C.UNWRAP_FALSE:
        skip = F.lit(False)
    skip = F.coalesce(skip, F.lit(False))
    is_delete = F.coalesce(is_delete, F.lit(False))

    key_names = settings.key_names(batch.key_schema, row_schema)
    key_cols, key_problem = _key_columns(settings, batch, key_names, row, row_schema, df)
    value_cols = _value_columns(settings, row, row_schema, df, exclude=key_names, schemaless=schemaless)
    if not settings.upsert:
        have = set(key_names) | {name for name, _ in value_cols}
        if envelope:
            value_cols.append((DELETED_COLUMN, is_delete))
        coordinates = [(C.KAFKA_TOPIC_COLUMN, F.col(TOPIC)), (C.KAFKA_PARTITION_COLUMN, F.col(PARTITION).cast("int")),
                       (C.KAFKA_OFFSET_COLUMN, F.col(OFFSET).cast("long")),
                       (C.KAFKA_TIMESTAMP_COLUMN, F.col(TIMESTAMP).cast("timestamp"))]
        value_cols += [(n, c) for n, c in coordinates if n not in have]
    names = [n for n, _ in key_cols] + [n for n, _ in value_cols]
    clashes = sorted({n for n in names if names.count(n) > 1} | ({n for n in names} & set(MARKERS)))
    if clashes:
        raise Refused(f"the record makes column(s) {clashes} twice (a value field named like a key or Kafka "
                      "coordinate column); rename the field with a ReplaceField transform")

    problem = _problem(settings, envelope, op, tombstone, is_delete, skip, row, struct_row, key_problem)
    if not settings.upsert and not schemaless and row_schema is None:
        problem = F.when(~tombstone, F.lit(
            "the record value has no schema, but the table's records have one (a struct); use a value.converter "
            "with schemas for every record of the topic, or write schemaless records to another table"
        )).otherwise(problem)
    return df.select(
        *[c.alias(n) for n, c in key_cols], *[c.alias(n) for n, c in value_cols],
        F.col(TOPIC).alias(ORDER_TOPIC), F.col(PARTITION).cast("int").alias(ORDER_PARTITION),
        F.col(OFFSET).cast("long").alias(ORDER_OFFSET), is_delete.alias(DELETE), skip.alias(SKIP),
        problem.alias(PROBLEM), key_text(df).alias(KEY_TEXT),
    )


def _key_columns(settings: DeltaSinkSettings, batch: RecordBatch, names: list[str], row: Column,
                 row_schema: ConnectSchema | None, df: DataFrame) -> tuple[list[tuple[str, Column]], Column]:
    """(name, column) of each primary key column, and why a record has no key (null when it has one)."""
    mode = settings.pk_mode
    no_problem = F.lit(None).cast("string")
    if mode == C.PK_NONE:
        return [], no_problem
    if mode == C.PK_KAFKA:
        cols = [F.col(TOPIC), F.col(PARTITION).cast("int"), F.col(OFFSET).cast("long")]
        return list(zip(names, cols)), no_problem
    if mode == C.PK_RECORD_KEY:
        key, schema = F.col(KEY), batch.key_schema
        if schema is None:  # no key, or a key without a schema: no key columns to take
            return ([(n, F.lit(None).cast("string")) for n in names], F.when(key.isNull(), F.lit(
                "the record has no key, but pk.mode=record_key takes the primary key from it")).otherwise(F.lit(
                "the record key has no schema (schemaless JSON?), so pk.mode=record_key cannot tell its fields; use "
                "a key.converter with schemas (JsonConverter with key.converter.schemas.enable=true, or "
                "StringConverter/LongConverter for a primitive key with one pk.fields name)")))
        if schema.type == "struct":
            missing = [n for n in names if schema.field(n) is None]
            if missing:
                raise Refused(f"pk.fields names {missing}, which the record key (a struct with fields "
                              f"{[f.name for f in schema.fields]}) lacks; set pk.fields to key fields, or leave it "
                              "empty to use all of them")
            cols = [(n, key[n]) for n in names]
            where = "key field"
        elif schema.type in ("array", "map"):
            raise Refused(f"the record key is {_describe(schema)}; pk.mode=record_key needs a struct or a "
                          "primitive key")
        else:
            if len(settings.pk_fields) != 1:
                raise Refused(f"the record key is a primitive ({schema.type}); pk.mode=record_key then needs "
                              f"exactly one pk.fields name for its column, not {list(settings.pk_fields)}")
            return [(names[0], key)], F.when(key.isNull(), F.lit(
                "the record has no key (null), but pk.mode=record_key takes the primary key from it"))
        problem = F.when(key.isNull(), F.lit("the record has no key (null), but pk.mode=record_key takes the "
                                             "primary key from it"))
        for n, c in cols:
            problem = problem.when(c.isNull(), F.lit(f"the record key has no value for primary key {where} '{n}'"))
        return cols, problem
    # record_value: from the row (the envelope's before for a delete)
    if row_schema is None or row_schema.type != "struct":
        return [(n, F.lit(None).cast("string")) for n in names], F.lit(
            f"pk.mode=record_value needs a struct value with a schema, not {_describe(row_schema)}")
    missing = [n for n in names if row_schema.field(n) is None]
    if missing:
        raise Refused(f"pk.fields names {missing}, which the record value (a struct with fields "
                      f"{[f.name for f in row_schema.fields]}) lacks; set pk.fields to value fields")
    cols = [(n, row[n]) for n in names]
    problem = F.when(row.isNull(), F.lit(None).cast("string"))  # no row: a tombstone or skipped event
    for n, c in cols:
        problem = problem.when(c.isNull(), F.lit(f"the record value has no value for primary key field '{n}'"))
    return cols, problem


def _value_columns(settings: DeltaSinkSettings, row: Column, row_schema: ConnectSchema | None, df: DataFrame,
                   exclude: list[str], schemaless: bool) -> list[tuple[str, Column]]:
    if row_schema is not None and row_schema.type == "struct":
        return [(f.name, row[f.name]) for f in row_schema.fields if f.name not in exclude]
    if settings.upsert or (row_schema is None and not schemaless):
        return []  # a record without a struct value is a problem (or a tombstone): no value columns
    dtype = df.schema[VALUE].dataType
    if isinstance(dtype, T.NullType):
        return []
    if isinstance(dtype, T.VariantType):  # schemaless JSON: its text (Delta has no VARIANT at writer 2)
        return [(VALUE_COLUMN, F.to_json(row))]
    return [(VALUE_COLUMN, row)]


def _problem(settings: DeltaSinkSettings, envelope: bool, op: Column | None, tombstone: Column, is_delete: Column,
             skip: Column, row: Column, struct_row: bool, key_problem: Column) -> Column:
    """Why a record cannot be written; null when it can (or when it makes no row)."""
    p = F.when(skip & ~is_delete, F.lit(None).cast("string"))
    if envelope:
        p = (p.when(~op.isin(*UPSERT_OPS, DELETE_OP), F.concat(
                F.lit("unknown Debezium operation '"), F.coalesce(op, F.lit("null")),
                F.lit("' (expected c, r, u, d, t or m)")))
             .when(op.isin(*UPSERT_OPS) & row.isNull(), F.concat(
                F.lit("the Debezium event (op '"), op, F.lit("') has no `after` row")))
             .when((op == F.lit(DELETE_OP)) & row.isNull() & F.lit(settings.pk_mode == C.PK_RECORD_VALUE),
                   F.lit("the Debezium delete has no `before` row to take the primary key from "
                         "(pk.mode=record_value); use pk.mode=record_key")))
    elif settings.upsert:
        p = p.when(tombstone & ~is_delete, F.lit(
            "a tombstone (null value) with delete.enabled=false and lakeconnect.debezium.unwrap=false; set "
            "delete.enabled=true to delete its key, or drop tombstones with a Filter transform and the "
            "RecordIsTombstone predicate"))
        if not struct_row:
            p = p.when(~tombstone, F.lit(
                "insert.mode=upsert needs a struct value with a schema (the table's columns), but this value "
                "has none (schemaless JSON, or a primitive); use a value.converter with schemas, e.g. "
                "JsonConverter with value.converter.schemas.enable=true"))
    return p.otherwise(key_problem)


def key_text(df: DataFrame) -> Column:
    """The record key as text for messages: JSON for structured keys, hex for bytes."""
    key = F.col(KEY)
    dtype = df.schema[KEY].dataType
    if isinstance(dtype, (T.StructType, T.ArrayType, T.MapType, T.VariantType)):
        text = F.to_json(key)
    elif isinstance(dtype, T.BinaryType):
        text = F.concat(F.lit("0x"), F.hex(key))
    elif isinstance(dtype, T.NullType):
        text = F.lit(None).cast("string")
    else:
        text = key.cast("string")
    return F.coalesce(text, F.lit("null"))


def _describe(schema: ConnectSchema | None) -> str:
    if schema is None:
        return "schemaless (no schema)"
    return f"{schema.type}" + (f" '{schema.name}'" if schema.name else "")
