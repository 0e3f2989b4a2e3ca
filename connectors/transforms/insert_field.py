"""InsertField: add the record's topic, partition, offset, timestamp and/or a static value as fields of
the key or the value (Kafka's `org.apache.kafka.connect.transforms.InsertField$Key` / `$Value`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from connectors.transforms._support import (
    CheckedConfigDef, KeyOrValueTransform, as_map, java_class_of, kafka_names, object_of,
    put_entries, require_map, required_null_message, struct_get, struct_required_message, to_variant,
)
from ingest.config.configdef import ConfigDef, Importance, Type
from ingest.errors import Problem
from ingest.records import KEY, OFFSET, PARTITION, TIMESTAMP, TOPIC, RecordBatch
from ingest.records.schema import (
    INT32_SCHEMA, INT64_SCHEMA, OPTIONAL_INT32_SCHEMA, OPTIONAL_INT64_SCHEMA, OPTIONAL_STRING_SCHEMA,
    OPTIONAL_TIMESTAMP_SCHEMA, STRING_SCHEMA, TIMESTAMP_SCHEMA, ConnectSchema, Field,
)

PURPOSE = "field insertion"
SCHEMA_BUILDER_EXCEPTION = "org.apache.kafka.connect.errors.SchemaBuilderException"
SOURCE_RECORD = "org.apache.kafka.connect.source.SourceRecord"

_OPTIONALITY_DOC = ("Suffix with <code>!</code> to make this a required field, or <code>?</code> to keep it "
                    "optional (the default).")
_FIELD_KEYS = ("topic.field", "partition.field", "offset.field", "timestamp.field", "static.field")


@dataclass(frozen=True)
class InsertionSpec:
    """Kafka's InsertionSpec: `name!` is a required field, `name?` or `name` an optional one."""

    name: str
    optional: bool

    @classmethod
    def parse(cls, spec: str | None) -> InsertionSpec | None:
        if spec is None:
            return None
        if spec.endswith("?"):
            return cls(spec[:-1], True)
        if spec.endswith("!"):
            return cls(spec[:-1], False)
        return cls(spec, True)


def _check(values: dict[str, Any]) -> list[Problem]:
    """What InsertField.configure rejects."""
    if all(values.get(k) is None for k in _FIELD_KEYS):
        return [Problem(None, "No field insertion configured")]
    if values.get("static.field") is not None and values.get("static.value") is None:
        spec = InsertionSpec.parse(values["static.field"])
        return [Problem("static.value", f"No value specified for static field: {spec.name}")]
    return []


def _ms(ts: Column) -> Column:
    """A Spark timestamp as Kafka's record timestamp: epoch millis (java.util.Date precision, floored)."""
    micros = F.unix_micros(ts)
    return F.call_function("div", micros - F.pmod(micros, F.lit(1000)), F.lit(1000))


class InsertField(KeyOrValueTransform):
    """Insert field(s) using attributes from the record metadata or a configured static value.

    As Kafka's InsertField: a Struct gets the new fields appended after its own (`makeUpdatedSchema`:
    name, version, doc and parameters copied; topic string, partition int32, offset int64, timestamp
    Connect Timestamp, static string; optional unless the name ends with `!`); a schemaless Map gets
    them as entries (the timestamp as epoch millis, a Long). A missing partition or timestamp is not
    inserted. A null key/value (tombstone) passes unchanged. `offset.field` needs sink records.
    """

    @classmethod
    def config_def(cls) -> ConfigDef:
        return (CheckedConfigDef(_check)
                .define("topic.field", Type.STRING, None, importance=Importance.MEDIUM,
                        doc="Field name for Kafka topic. " + _OPTIONALITY_DOC)
                .define("partition.field", Type.STRING, None, importance=Importance.MEDIUM,
                        doc="Field name for Kafka partition. " + _OPTIONALITY_DOC)
                .define("offset.field", Type.STRING, None, importance=Importance.MEDIUM,
                        doc="Field name for Kafka offset - only applicable to sink connectors.<br/>" + _OPTIONALITY_DOC)
                .define("timestamp.field", Type.STRING, None, importance=Importance.MEDIUM,
                        doc="Field name for record timestamp. " + _OPTIONALITY_DOC)
                .define("static.field", Type.STRING, None, importance=Importance.MEDIUM,
                        doc="Field name for static data field. " + _OPTIONALITY_DOC)
                .define("static.value", Type.STRING, None, importance=Importance.MEDIUM,
                        doc="Static field value, if field name configured.")
                .define("replace.null.with.default", Type.BOOLEAN, True, importance=Importance.MEDIUM,
                        doc="Whether to replace fields that have a default value and that are null to the default "
                            "value. When set to true, the default value is used, otherwise null is used."))

    def __init__(self, config):
        super().__init__(config)
        self.topic_field = InsertionSpec.parse(config["topic.field"])
        self.partition_field = InsertionSpec.parse(config["partition.field"])
        self.offset_field = InsertionSpec.parse(config["offset.field"])
        self.timestamp_field = InsertionSpec.parse(config["timestamp.field"])
        self.static_field = InsertionSpec.parse(config["static.field"])
        self.static_value: str | None = config["static.value"]
        self.replace_null_with_default: bool = config["replace.null.with.default"]

    # --- what gets inserted ------------------------------------------------------------------------

    def _insertions(self, batch: RecordBatch, schemaless: bool) -> list[tuple[InsertionSpec, ConnectSchema, Column, Column]]:
        """(spec, field schema, value, whether to insert) in Kafka's order. Schemaless values are VARIANTs
        of Kafka's Java types: String, Integer, Long (offset and timestamp millis)."""
        sink = OFFSET in batch.df.columns
        out = []
        if self.topic_field:
            schema = OPTIONAL_STRING_SCHEMA if self.topic_field.optional else STRING_SCHEMA
            out.append((self.topic_field, schema, F.col(TOPIC), F.lit(True)))
        if self.partition_field:
            schema = OPTIONAL_INT32_SCHEMA if self.partition_field.optional else INT32_SCHEMA
            partition = F.col(PARTITION).cast("int")
            out.append((self.partition_field, schema, partition, partition.isNotNull()))
        if self.offset_field:
            schema = OPTIONAL_INT64_SCHEMA if self.offset_field.optional else INT64_SCHEMA
            offset = F.col(OFFSET).cast("long") if sink else F.lit(None).cast("long")
            out.append((self.offset_field, schema, offset, F.lit(sink)))
        if self.timestamp_field:
            schema = OPTIONAL_TIMESTAMP_SCHEMA if self.timestamp_field.optional else TIMESTAMP_SCHEMA
            millis = _ms(F.col(TIMESTAMP))
            value = millis if schemaless else F.timestamp_millis(millis)
            out.append((self.timestamp_field, schema, value, millis.isNotNull()))
        if self.static_field:  # configure() guarantees a static value
            schema = OPTIONAL_STRING_SCHEMA if self.static_field.optional else STRING_SCHEMA
            out.append((self.static_field, schema, F.lit(self.static_value), F.lit(True)))
        return out

    def _require_sink(self, batch: RecordBatch, present: Column) -> RecordBatch:
        if self.offset_field and OFFSET not in batch.df.columns:
            return batch.fail(present, f"Only SinkRecord supported for [{PURPOSE}], found: {SOURCE_RECORD}")
        return batch

    # --- apply ---------------------------------------------------------------------------------------

    def apply(self, batch: RecordBatch) -> RecordBatch:
        data_type = self.operating_type(batch)
        if isinstance(data_type, T.NullType):  # no key at all: every record passes unchanged
            return batch
        if self.is_schemaless(batch):
            return self._apply_schemaless(batch, data_type)
        return self._apply_with_schema(batch, self.operating_schema(batch))

    def _apply_schemaless(self, batch: RecordBatch, data_type: T.DataType) -> RecordBatch:
        value = self.operating_value()
        if not isinstance(data_type, T.VariantType):  # a schemaless part that is not a VARIANT: never a Map
            found = F.concat(F.lit(f"Only Map objects supported in absence of schema for [{PURPOSE}], found: "),
                             java_class_of(to_variant(value, data_type)))
            return batch.fail(value.isNotNull(), found)
        present = value.isNotNull() & ~F.is_variant_null(value)
        batch = require_map(batch, value, PURPOSE)
        batch = self._require_sink(batch, present)
        puts = [(spec.name, inserted.cast("variant"), when)
                for spec, _schema, inserted, when in self._insertions(batch, schemaless=True)]
        entries = put_entries(as_map(value), puts)
        updated = F.when(present & as_map(value).isNotNull(), object_of(entries)).otherwise(value)
        return self.new_record(batch, None, updated)

    def _apply_with_schema(self, batch: RecordBatch, schema: ConnectSchema) -> RecordBatch:
        value = self.operating_value()
        present = value.isNotNull()
        not_struct = struct_required_message(schema, PURPOSE)
        if not_struct:
            return batch.fail(present, not_struct)
        insertions = self._insertions(batch, schemaless=False)
        names = [f.name for f in schema.fields]
        for spec, *_ in insertions:
            if spec.name in names:  # SchemaBuilder.field refuses a second field of the same name
                return batch.fail(present, f"Cannot create field because of field name duplication {spec.name}",
                                  exception=SCHEMA_BUILDER_EXCEPTION)
            names.append(spec.name)
        batch = self._require_sink(batch, present)

        copied = [(f, struct_get(value, f, self.replace_null_with_default)) for f in schema.fields]
        added = [(spec.name, F.when(when, inserted)) for spec, _s, inserted, when in insertions]
        fields = [Field(f.name, i, f.schema) for i, (f, _c) in enumerate(copied)]
        fields += [Field(spec.name, len(fields) + i, s) for i, (spec, s, _v, _w) in enumerate(insertions)]
        # copySchemaBasics: name, version, doc, parameters; the new struct is required, without default.
        updated_schema = ConnectSchema("struct", False, schema.name, schema.version, schema.doc, schema.parameters,
                                       fields=tuple(fields))
        if not self.replace_null_with_default:
            checks = [required_null_message(f.name, f.schema, c) for f, c in copied if f.schema.default is not None]
            if checks:
                message = F.coalesce(*checks)
                batch = batch.fail(present & message.isNotNull(), message)
        struct = F.struct(*[c.alias(f.name) for f, c in copied], *[c.alias(n) for n, c in added])
        return self.new_record(batch, updated_schema, self.unless_null(batch, struct))


_KEY_ALIASES, _VALUE_ALIASES = kafka_names("InsertField")


class InsertFieldKey(InsertField):
    __doc__ = InsertField.__doc__
    part = KEY
    aliases = _KEY_ALIASES


class InsertFieldValue(InsertField):
    __doc__ = InsertField.__doc__
    aliases = _VALUE_ALIASES
