"""ValueToKey: Kafka's `ValueToKey`, replacing the record key with a new key made of fields of the value."""

from __future__ import annotations

from typing import Any

from pyspark.sql import functions as F
from pyspark.sql import types as T

from connectors.transforms._support import (
    as_map, list_setting, object_of, require_map, required_null_message, struct_get, struct_required_message,
)
from ingest.api import Transform
from ingest.config.configdef import ConfigDef, Importance, Type
from ingest.records import KEY, VALUE, RecordBatch
from ingest.records.schema import struct

FIELDS_CONFIG = "fields"
REPLACE_NULL_WITH_DEFAULT_CONFIG = "replace.null.with.default"
PURPOSE = "copying fields from value to key"
NULL_NOT_A_MAP = f"Only Map objects supported in absence of schema for [{PURPOSE}], found: null"


class NonEmptyListValidator:
    """Kafka's NonEmptyListValidator."""

    def __call__(self, key: str, value: Any) -> str | None:
        return "Empty list" if not value else None

    def describe(self) -> str:
        return "non-empty list"


class ValueToKey(Transform):
    """Kafka's ValueToKey. With a value schema: the key becomes a Struct of the listed value fields under an
    unnamed struct schema holding those fields' schemas (a field the value lacks fails the record: "Field
    does not exist"); `replace.null.with.default` chooses `Struct.get` or `getWithoutDefault`. Without
    one: the key becomes a Map of those members (null when absent). The value must be a Struct (or a Map):
    a null value fails, as Kafka's requireStruct / requireMap do."""

    aliases = ("org.apache.kafka.connect.transforms.ValueToKey",)
    scoped = True

    @classmethod
    def config_def(cls) -> ConfigDef:
        return (ConfigDef()
                .define(FIELDS_CONFIG, Type.LIST, validator=NonEmptyListValidator(), importance=Importance.HIGH,
                        doc="Field names on the record value to extract as the record key.")
                .define(REPLACE_NULL_WITH_DEFAULT_CONFIG, Type.BOOLEAN, True, importance=Importance.MEDIUM,
                        doc="Whether to replace fields that have a default value and that are null to the default "
                            "value. When set to true, the default value is used, otherwise null is used."))

    def __init__(self, config):
        super().__init__(config)
        self.fields: list[str] = list_setting(config[FIELDS_CONFIG])
        self.replace_null_with_default: bool = config[REPLACE_NULL_WITH_DEFAULT_CONFIG]

    def apply(self, batch: RecordBatch) -> RecordBatch:
        if batch.value_schema is None:
            if isinstance(batch.df.schema[VALUE].dataType, T.NullType):  # only tombstones: requireMap fails them
                return batch.fail(F.lit(True), NULL_NOT_A_MAP)
            return self._apply_schemaless(batch)
        return self._apply_with_schema(batch)

    def _apply_schemaless(self, batch: RecordBatch) -> RecordBatch:
        value = F.col(VALUE)
        batch = require_map(batch, value, PURPOSE, allow_null=False)
        members = as_map(value)
        names = list(dict.fromkeys(self.fields))  # a HashMap holds each name once
        key = object_of(F.create_map(*[x for name in names for x in (F.lit(name), members[name])]))
        return batch.set({KEY: key}).with_schemas(key_schema=None)

    def _apply_with_schema(self, batch: RecordBatch) -> RecordBatch:
        schema, value = batch.value_schema, F.col(VALUE)
        batch = batch.fail(value.isNull(), f"Only Struct objects supported for [{PURPOSE}], found: null")
        not_struct = struct_required_message(schema, PURPOSE)
        if not_struct is not None:
            return batch.fail(F.lit(True), not_struct)
        missing = next((name for name in self.fields if schema.field(name) is None), None)
        if missing is not None:
            return batch.fail(F.lit(True), f"Field does not exist: {missing}")
        duplicate = next((name for i, name in enumerate(self.fields) if name in self.fields[:i]), None)
        if duplicate is not None:  # SchemaBuilder.field refuses a name twice
            return batch.fail(F.lit(True), f"Cannot create field because of field name duplication {duplicate}")
        fields = [schema.field(name) for name in self.fields]
        key_schema = struct(None, *[(f.name, f.schema) for f in fields])
        values = [(f, struct_get(value, f, self.replace_null_with_default)) for f in fields]
        errors = [required_null_message(f.name, f.schema, v) for f, v in values if not f.schema.optional]
        if errors:  # Struct.put validates each value it is given
            batch = batch.fail(F.coalesce(*errors).isNotNull(), F.coalesce(*errors))
        key = F.struct(*[v.alias(f.name) for f, v in values])
        return batch.set({KEY: key}).with_schemas(key_schema=key_schema)
