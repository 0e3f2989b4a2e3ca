"""ReplaceField: keep, drop and rename the fields of the key or the value (Kafka's
`org.apache.kafka.connect.transforms.ReplaceField$Key` / `$Value`)."""

from __future__ import annotations

from typing import Any

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from connectors.transforms._support import (
    KeyOrValueTransform, as_map, java_class_of, kafka_names, object_of, put_entries, require_map,
    required_null_message, struct_get, struct_required_message, to_variant,
)
from ingest.config.configdef import ConfigDef, Importance, Type
from ingest.records import KEY, RecordBatch
from ingest.records.schema import ConnectSchema, Field

PURPOSE = "field replacement"
SCHEMA_BUILDER_EXCEPTION = "org.apache.kafka.connect.errors.SchemaBuilderException"


def parse_rename_mappings(mappings: list[str]) -> dict[str, str]:
    """ReplaceField.parseRenameMappings: `old:new` pairs; Java's String.split drops trailing empty parts."""
    renames: dict[str, str] = {}
    for mapping in mappings:
        parts = mapping.split(":")
        while parts and parts[-1] == "":
            parts.pop()
        if len(parts) != 2:
            raise ValueError(f"Invalid rename mapping: {mapping}")
        renames[parts[0]] = parts[1]
    return renames


class RenameMappings:
    """Kafka's validator of `renames`."""

    def __call__(self, key: str, value: Any) -> str | None:
        try:
            parse_rename_mappings(value or [])
        except ValueError as e:
            return str(e)
        return None

    def describe(self) -> str:
        return "list of colon-delimited pairs, e.g. <code>foo:bar,abc:xyz</code>"


class ReplaceField(KeyOrValueTransform):
    """Filter or rename fields.

    As Kafka's ReplaceField: a field is kept when it is not excluded and (no include list, or included);
    kept fields are renamed by `renames`. A Struct's schema keeps its name, version, doc and parameters
    (`copySchemaBasics`: the new struct is required, without default); a schemaless Map keeps its other
    entries. `blacklist`/`whitelist` are the deprecated names of `exclude`/`include` (the new name wins
    when both are set). A null key/value (tombstone) passes unchanged.
    """

    @classmethod
    def config_def(cls) -> ConfigDef:
        return (ConfigDef()
                .define("exclude", Type.LIST, [], importance=Importance.MEDIUM,
                        doc="Fields to exclude. This takes precedence over the fields to include.")
                .define("blacklist", Type.LIST, None, importance=Importance.LOW, doc="Deprecated. Use exclude instead.")
                .define("include", Type.LIST, [], importance=Importance.MEDIUM,
                        doc="Fields to include. If specified, only these fields will be used.")
                .define("whitelist", Type.LIST, None, importance=Importance.LOW, doc="Deprecated. Use include instead.")
                .define("renames", Type.LIST, [], RenameMappings(), importance=Importance.MEDIUM,
                        doc="Field rename mappings.")
                .define("replace.null.with.default", Type.BOOLEAN, True, importance=Importance.MEDIUM,
                        doc="Whether to replace fields that have a default value and that are null to the default "
                            "value. When set to true, the default value is used, otherwise null is used."))

    def __init__(self, config):
        super().__init__(config)
        # ConfigUtils.translateDeprecatedConfigs: the deprecated key counts only when the new one is absent.
        self.exclude = set(self._translated(config, "exclude", "blacklist"))
        self.include = set(self._translated(config, "include", "whitelist"))
        self.renames = parse_rename_mappings(config["renames"])
        self.reverse_renames = {new: old for old, new in self.renames.items()}
        self.replace_null_with_default: bool = config["replace.null.with.default"]

    @staticmethod
    def _translated(config, key: str, deprecated: str) -> list[str]:
        if key not in config.originals and config[deprecated] is not None:
            return config[deprecated]
        return config[key]

    def keep(self, name: str) -> bool:
        return name not in self.exclude and (not self.include or name in self.include)

    def renamed(self, name: str) -> str:
        return self.renames.get(name, name)

    # --- apply ---------------------------------------------------------------------------------------

    def apply(self, batch: RecordBatch) -> RecordBatch:
        data_type = self.operating_type(batch)
        if isinstance(data_type, T.NullType):
            return batch
        if self.is_schemaless(batch):
            return self._apply_schemaless(batch, data_type)
        return self._apply_with_schema(batch, self.operating_schema(batch))

    def _apply_schemaless(self, batch: RecordBatch, data_type: T.DataType) -> RecordBatch:
        value = self.operating_value()
        if not isinstance(data_type, T.VariantType):
            found = F.concat(F.lit(f"Only Map objects supported in absence of schema for [{PURPOSE}], found: "),
                             java_class_of(to_variant(value, data_type)))
            return batch.fail(value.isNotNull(), found)
        batch = require_map(batch, value, PURPOSE)
        entries = as_map(value)
        excluded, include, sources = sorted(self.exclude), sorted(self.include), sorted(self.renames)

        def kept(k: Column, _v: Column) -> Column:
            keep = ~k.isin(*excluded) if excluded else F.lit(True)
            if include:
                keep = keep & k.isin(*include)
            return (keep & ~k.isin(*sources)) if sources else keep

        # Each kept entry under its new name (HashMap.put: a renamed entry replaces a kept one of that name).
        renamed = [(new, entries[old], F.map_contains_key(entries, old)) for old, new in self.renames.items()
                   if self.keep(old)]
        out = put_entries(F.map_filter(entries, kept), renamed)
        updated = F.when(entries.isNotNull(), object_of(out)).otherwise(value)
        return self.new_record(batch, None, updated)

    def _apply_with_schema(self, batch: RecordBatch, schema: ConnectSchema) -> RecordBatch:
        value = self.operating_value()
        present = value.isNotNull()
        not_struct = struct_required_message(schema, PURPOSE)
        if not_struct:
            return batch.fail(present, not_struct)
        fields: list[Field] = []
        for f in schema.fields:
            if self.keep(f.name):
                name = self.renamed(f.name)
                if any(g.name == name for g in fields):
                    return batch.fail(present, f"Cannot create field because of field name duplication {name}",
                                      exception=SCHEMA_BUILDER_EXCEPTION)
                fields.append(Field(name, len(fields), f.schema))
        updated_schema = ConnectSchema("struct", False, schema.name, schema.version, schema.doc, schema.parameters,
                                       fields=tuple(fields))
        columns: list[Column] = []
        checks: list[Column] = []
        for f in fields:
            # Kafka reads each new field from the old field its name maps back to (reverseRenamed).
            source = schema.field(self.reverse_renames.get(f.name, f.name))
            if source is None:
                return batch.fail(present, f"{self.reverse_renames[f.name]} is not a valid field name")
            got = struct_get(value, source, self.replace_null_with_default)
            columns.append(got.alias(f.name))
            if not self.replace_null_with_default and source.schema.default is not None:
                checks.append(required_null_message(f.name, f.schema, got))
        if checks:
            message = F.coalesce(*checks)
            batch = batch.fail(present & message.isNotNull(), message)
        return self.new_record(batch, updated_schema, self.unless_null(batch, F.struct(*columns)))


_KEY_ALIASES, _VALUE_ALIASES = kafka_names("ReplaceField")


class ReplaceFieldKey(ReplaceField):
    __doc__ = ReplaceField.__doc__
    part = KEY
    aliases = _KEY_ALIASES


class ReplaceFieldValue(ReplaceField):
    __doc__ = ReplaceField.__doc__
    aliases = _VALUE_ALIASES
