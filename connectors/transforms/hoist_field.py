"""HoistField: Kafka's `HoistField$Key` / `HoistField$Value`, wrapping the key or value in a one-field Struct
(or a one-entry Map when there is no schema)."""

from __future__ import annotations

from pyspark.sql import functions as F

from connectors.transforms._support import (
    KeyOrValueTransform, kafka_names, object_of, required_null_message, to_variant,
)
from ingest.config.configdef import ConfigDef, Importance, Type
from ingest.records import KEY, VALUE, RecordBatch
from ingest.records.schema import struct

FIELD_CONFIG = "field"


class _HoistField(KeyOrValueTransform):
    """Kafka's HoistField: with a schema, the value becomes `Struct{field: value}` under the unnamed schema
    `SchemaBuilder.struct().field(field, schema)`; without one, the Map `{field: value}`. A null is hoisted
    too (Kafka does not pass it through); under a required schema `Struct.put` refuses it."""

    @classmethod
    def config_def(cls) -> ConfigDef:
        return ConfigDef().define(
            FIELD_CONFIG, Type.STRING, importance=Importance.MEDIUM,
            doc="Field name for the single field that will be created in the resulting Struct or Map.")

    def __init__(self, config):
        super().__init__(config)
        self.field_name: str = config[FIELD_CONFIG]

    def apply(self, batch: RecordBatch) -> RecordBatch:
        schema = self.operating_schema(batch)
        value = self.operating_value()
        if schema is None:
            entry = F.create_map(F.lit(self.field_name), to_variant(value, self.operating_type(batch)))
            return self.new_record(batch, None, object_of(entry))
        updated_schema = struct(None, (self.field_name, schema))
        error = required_null_message(self.field_name, schema, value)
        batch = batch.fail(error.isNotNull(), error)
        return self.new_record(batch, updated_schema, F.struct(value.alias(self.field_name)))


_KEY_ALIASES, _VALUE_ALIASES = kafka_names("HoistField")


class HoistFieldKey(_HoistField):
    __doc__ = _HoistField.__doc__
    aliases = _KEY_ALIASES
    part = KEY


class HoistFieldValue(_HoistField):
    __doc__ = _HoistField.__doc__
    aliases = _VALUE_ALIASES
    part = VALUE
