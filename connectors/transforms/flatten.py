"""Flatten: Kafka's `Flatten$Key` / `Flatten$Value`, nested Structs (or Maps) to one level, field names
joined with `delimiter`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from connectors.transforms._support import (
    MAP_OF_VARIANTS, KeyOrValueTransform, as_map, kafka_names, not_a_map, object_of, require_map,
    required_null_message, struct_get, struct_required_message,
)
from ingest.config.configdef import ConfigDef, Importance, Type
from ingest.errors import DataError
from ingest.records import KEY, VALUE, RecordBatch
from ingest.records.schema import ConnectSchema, Field

DELIMITER_CONFIG = "delimiter"
PURPOSE = "flattening"
# Copied to the flattened struct as they are (arrays too: "Array fields and their contents are not modified").
_KEPT_TYPES = ("int8", "int16", "int32", "int64", "float32", "float64", "boolean", "string", "bytes", "array")


@dataclass(frozen=True)
class _Leaf:
    """One field of the flattened struct: its name, its schema, and the fields leading to it."""

    name: str
    schema: ConnectSchema
    path: tuple[Field, ...]


class _Flatten(KeyOrValueTransform):
    """Kafka's Flatten. With a schema: a Struct's nested Structs become fields named `parent<delimiter>child`,
    optional when any ancestor is, with the field's default or else the one its ancestors' defaults give
    (buildUpdatedSchema); arrays are kept; other types fail the record. Without a schema: nested Maps are
    flattened the same way, every other value kept. Null keys/values pass through."""

    @classmethod
    def config_def(cls) -> ConfigDef:
        return ConfigDef().define(
            DELIMITER_CONFIG, Type.STRING, ".", importance=Importance.MEDIUM,
            doc="Delimiter to insert between field names from the input record when generating field names for "
                "the output record")

    def __init__(self, config):
        super().__init__(config)
        self.delimiter: str = config[DELIMITER_CONFIG]

    def _name(self, prefix: str, name: str) -> str:
        return name if not prefix else prefix + self.delimiter + name

    def apply(self, batch: RecordBatch) -> RecordBatch:
        schema = self.operating_schema(batch)
        if schema is not None:
            return self._apply_with_schema(batch, schema)
        if isinstance(self.operating_type(batch), T.NullType):
            return batch
        return self._apply_schemaless(batch)

    # -- with a schema ---------------------------------------------------------------------------------

    def _leaves(self, schema: ConnectSchema, prefix: str, optional: bool, parent_default: Any,
                path: tuple[Field, ...]) -> list[_Leaf]:
        """buildUpdatedSchema: the flattened fields under `schema` (DataError for unsupported types)."""
        leaves: list[_Leaf] = []
        for field in schema.fields:
            name = self._name(prefix, field.name)
            field_optional = optional or field.schema.optional
            default = field.schema.default
            if default is None and parent_default is not None:
                default = parent_default.get(field.name)
            if field.schema.type in _KEPT_TYPES:
                leaves.append(_Leaf(name, _convert_field_schema(field.schema, field_optional, default),
                                    (*path, field)))
            elif field.schema.type == "struct":
                leaves += self._leaves(field.schema, name, field_optional, default, (*path, field))
            else:
                raise DataError(f"Flatten transformation does not support {field.schema.type.upper()} "
                                f"for record with schemas (for field {name}).")
        return leaves

    def _flattened_schema(self, schema: ConnectSchema) -> tuple[ConnectSchema, list[_Leaf]]:
        leaves = self._leaves(schema, "", schema.optional, schema.default, ())
        seen: set[str] = set()
        for leaf in leaves:  # SchemaBuilder.field refuses a second field of the same name
            if leaf.name in seen:
                raise DataError(f"Cannot create field because of field name duplication {leaf.name}")
            seen.add(leaf.name)
        # copySchemaBasics(schema, SchemaBuilder.struct()): name, version, doc, parameters; never optional.
        fields = tuple(Field(leaf.name, i, leaf.schema) for i, leaf in enumerate(leaves))
        return ConnectSchema("struct", False, schema.name, schema.version, schema.doc, schema.parameters,
                             fields=fields), leaves

    def _apply_with_schema(self, batch: RecordBatch, schema: ConnectSchema) -> RecordBatch:
        value = self.operating_value()
        not_struct = struct_required_message(schema, PURPOSE)
        if not_struct is not None:
            return batch.fail(value.isNotNull(), not_struct)
        try:
            out_schema, leaves = self._flattened_schema(schema)
        except DataError as e:  # Kafka builds the schema for every record that is not null
            return batch.fail(value.isNotNull(), str(e))
        columns, errors = [], []
        for leaf in leaves:
            parent = _nested(value, leaf.path[:-1])
            got = F.when(parent.isNull(), F.lit(None)).otherwise(struct_get(parent, leaf.path[-1]))
            if not leaf.schema.optional:  # Struct.put validates what buildWithSchema puts
                errors.append(F.when(parent.isNotNull(), required_null_message(leaf.name, leaf.schema, got)))
            columns.append(got.alias(leaf.name))
        if errors:
            batch = batch.fail(value.isNotNull() & F.coalesce(*errors).isNotNull(), F.coalesce(*errors))
        return self.new_record(batch, out_schema, self.unless_null(batch, F.struct(*columns)))

    # -- schemaless ------------------------------------------------------------------------------------

    def _apply_schemaless(self, batch: RecordBatch) -> RecordBatch:
        value = self.operating_value()
        batch = require_map(batch, value, PURPOSE)
        entries = F.map_entries(as_map(value))
        # One pass per level: a member holding a Map is replaced by its prefixed members. The number of
        # OBJECTs in the value's schema bounds its depth; passes beyond the depth change nothing.
        depth = F.size(F.split(F.schema_of_variant(value), "OBJECT<")) - 1
        flat = F.aggregate(F.sequence(F.lit(1), F.greatest(depth, F.lit(1))), entries,
                           lambda acc, _: self._one_level(acc))
        # Two members may get the same name ({"a.b": 1, "a": {"b": 2}}): the later one wins, as in Kafka's
        # Map.put; "later" is in key order here, in its HashMap's iteration order in Kafka.
        unique = F.filter(flat, lambda e, i: ~F.exists(F.slice(flat, i + 2, F.size(flat)),
                                                        lambda later: later["key"] == e["key"]))
        flattened = object_of(F.map_from_entries(unique))
        keep = value.isNull() | F.is_variant_null(value) | not_a_map(value)
        return self.new_record(batch, None, F.when(keep, value).otherwise(flattened))

    def _one_level(self, entries: Column) -> Column:
        def expand(entry: Column) -> Column:
            nested = F.try_variant_get(entry["value"], "$", MAP_OF_VARIANTS)
            members = F.transform(F.map_entries(nested), lambda m: F.struct(
                F.concat(entry["key"], F.lit(self.delimiter), m["key"]).alias("key"), m["value"].alias("value")))
            return F.when(nested.isNotNull(), members).otherwise(F.array(entry))

        return F.flatten(F.transform(entries, expand))


def _convert_field_schema(orig: ConnectSchema, optional: bool, default: Any) -> ConnectSchema:
    """Flatten.convertFieldSchema: copySchemaBasics(orig), optional when asked, the default given."""
    return ConnectSchema(orig.type, optional, orig.name, orig.version, orig.doc, orig.parameters, default,
                         key_schema=orig.key_schema, value_schema=orig.value_schema)


def _nested(value: Column, path: tuple[Field, ...]) -> Column:
    """`record.getStruct(name)` down `path` (Struct.get: a null struct gives its default); null on a null."""
    current = value
    for field in path:
        current = F.when(current.isNull(), F.lit(None)).otherwise(struct_get(current, field))
    return current


_KEY_ALIASES, _VALUE_ALIASES = kafka_names("Flatten")


class FlattenKey(_Flatten):
    __doc__ = _Flatten.__doc__
    aliases = _KEY_ALIASES
    part = KEY


class FlattenValue(_Flatten):
    __doc__ = _Flatten.__doc__
    aliases = _VALUE_ALIASES
    part = VALUE
