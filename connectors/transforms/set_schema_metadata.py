"""SetSchemaMetadata: Kafka's `SetSchemaMetadata$Key` / `SetSchemaMetadata$Value`, setting the name and/or
version of the key or value schema."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from pyspark.sql import functions as F
from pyspark.sql import types as T

from connectors.transforms._support import CheckedConfigDef, KeyOrValueTransform, kafka_names, struct_get
from ingest.config.configdef import Importance, Type
from ingest.errors import DataError, Problem
from ingest.records import KEY, VALUE, RecordBatch

SCHEMA_NAME_CONFIG = "schema.name"
SCHEMA_VERSION_CONFIG = "schema.version"
REPLACE_NULL_WITH_DEFAULT_CONFIG = "replace.null.with.default"
PURPOSE = "updating schema metadata"


def _check(values: dict[str, Any]) -> list[Problem]:
    """SetSchemaMetadata.configure's check, reported at validate time."""
    if values.get(SCHEMA_NAME_CONFIG) is None and values.get(SCHEMA_VERSION_CONFIG) is None:
        return [Problem(None, "Neither schema name nor version configured")]
    return []


class _SetSchemaMetadata(KeyOrValueTransform):
    """Kafka's SetSchemaMetadata: the schema gets the configured name and/or version, nothing else changes
    (a Struct is rebuilt under it: with `replace.null.with.default`, a null field takes its default).
    A schemaless key/value that is not null fails ("Schema required"). As in Kafka 3.x, a schema that is
    not a struct fails every record: building the new ConnectSchema asks it for its fields."""

    @classmethod
    def config_def(cls) -> CheckedConfigDef:
        return (CheckedConfigDef(_check)
                .define(SCHEMA_NAME_CONFIG, Type.STRING, None, importance=Importance.HIGH, doc="Schema name to set.")
                .define(SCHEMA_VERSION_CONFIG, Type.INT, None, importance=Importance.HIGH,
                        doc="Schema version to set.")
                .define(REPLACE_NULL_WITH_DEFAULT_CONFIG, Type.BOOLEAN, True, importance=Importance.MEDIUM,
                        doc="Whether to replace fields that have a default value and that are null to the default "
                            "value. When set to true, the default value is used, otherwise null is used."))

    def __init__(self, config):
        super().__init__(config)
        self.schema_name: str | None = config[SCHEMA_NAME_CONFIG]
        self.schema_version: int | None = config[SCHEMA_VERSION_CONFIG]
        self.replace_null_with_default: bool = config[REPLACE_NULL_WITH_DEFAULT_CONFIG]

    def apply(self, batch: RecordBatch) -> RecordBatch:
        schema = self.operating_schema(batch)
        value = self.operating_value()
        if schema is None:  # a null without a schema passes; anything else needs one
            if isinstance(self.operating_type(batch), T.NullType):
                return batch
            return batch.fail(value.isNotNull() & ~F.is_variant_null(value), f"Schema required for [{PURPOSE}]")
        if schema.type != "struct":
            raise DataError("Cannot list fields on non-struct type")
        updated = replace(schema,
                          name=self.schema_name if self.schema_name is not None else schema.name,
                          version=self.schema_version if self.schema_version is not None else schema.version)
        if self.replace_null_with_default and any(f.schema.default is not None for f in schema.fields):
            rebuilt = F.struct(*[struct_get(value, f).alias(f.name) for f in schema.fields])
            return self.new_record(batch, updated, self.unless_null(batch, rebuilt))
        return self.new_record(batch, updated, value)


_KEY_ALIASES, _VALUE_ALIASES = kafka_names("SetSchemaMetadata")


class SetSchemaMetadataKey(_SetSchemaMetadata):
    __doc__ = _SetSchemaMetadata.__doc__
    aliases = _KEY_ALIASES
    part = KEY


class SetSchemaMetadataValue(_SetSchemaMetadata):
    __doc__ = _SetSchemaMetadata.__doc__
    aliases = _VALUE_ALIASES
    part = VALUE
