"""ExtractField: Kafka's `ExtractField$Key` / `ExtractField$Value`, replacing the key or value by one of its
fields (KIP-821 dotted paths with `field.syntax.version=V2`)."""

from __future__ import annotations

from typing import Any

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from connectors.transforms._support import (
    CheckedConfigDef, KeyOrValueTransform, java_class_of, kafka_names, not_a_map, require_map, struct_get,
    struct_required_message, variant_field,
)
from ingest.config.configdef import Importance, Type, ValidString
from ingest.errors import DataError, Problem
from ingest.records import KEY, VALUE, RecordBatch
from ingest.records.schema import ConnectSchema, Field

FIELD_CONFIG = "field"
FIELD_SYNTAX_VERSION_CONFIG = "field.syntax.version"
FIELD_SYNTAX_VERSION_DOC = (
    "Defines the version of the syntax to access fields. "
    "If set to <code>V1</code>, then the field paths are limited to access the elements at the root level of the "
    "struct or map. If set to <code>V2</code>, the syntax will support accessing nested elements. "
    "To access nested elements, dotted notation is used. "
    "If dots are already included in the field name, then backtick pairs can be used to wrap field names "
    "containing dots. E.g. to access the subfield <code>baz</code> from a field named \"foo.bar\" in a struct/map "
    "the following format can be used to access its elements: \"<code>foo.bar</code>.baz\".")
PURPOSE = "field extraction"
NESTED_PURPOSE = "nested field access"
NON_STRUCT_LOOKUP = "Cannot look up fields on non-struct type"


class SyntaxVersionValidator(ValidString):
    """ConfigDef.CaseInsensitiveValidString.in(V1, V2), with Kafka's message."""

    def __call__(self, key: str, value: Any) -> str | None:
        if value is None or str(value).upper() in self.allowed:
            return None
        return "String must be one of (case insensitive): " + ", ".join(self.allowed)


class PathError(ValueError):
    """A V2 path Kafka's SingleFieldPath refuses (a ConfigException)."""


def field_path(path: str, version: str) -> list[str]:
    """SingleFieldPath's steps: the path itself in V1; dotted steps, backticks quoting dots, in V2."""
    if version.upper() == "V1":
        return [path]
    steps: list[str] = []
    idx = 0
    while 0 <= idx < len(path):
        if path[idx] != "`":
            start = idx
            idx = path.find(".", idx)
            steps.append(path[start:idx] if idx >= 0 else path[start:])
            if idx >= 0:
                idx += 1
            continue
        backtick_at, idx = idx, idx + 1
        start, field = idx, ""
        while True:
            idx = path.find("`", idx)
            if idx == -1:
                _incomplete_backticks(path, backtick_at)
            escaped = path[idx - 1] == "\\"
            if idx >= len(path) - 1:  # the closing backtick ends the path
                if escaped:
                    _incomplete_backticks(path, backtick_at)
                steps.append(field + path[start:idx])
                idx += 1
                break
            if path[idx + 1] != ".":  # a backtick inside the name
                idx += 1
                continue
            if escaped:  # \` before a dot: a backtick in the name
                field += path[start:idx - 1] + "`"
                idx += 1
                start = idx
                continue
            steps.append(field + path[start:idx])
            idx += 2
            break
    if path.endswith("."):
        steps.append("")
    return steps


def _incomplete_backticks(path: str, at: int) -> None:
    raise PathError(f"Incomplete backtick pair in path: [{path}], consider adding a backslash before backtick "
                    f"at position {at} to escape it")


def _check_path(values: dict[str, Any]) -> list[Problem]:
    """What SingleFieldPath's constructor rejects in configure(), reported at validate time."""
    path, version = values.get(FIELD_CONFIG), values.get(FIELD_SYNTAX_VERSION_CONFIG)
    if path is None or version is None:
        return []
    try:
        field_path(path, version)
    except PathError as e:
        return [Problem(FIELD_CONFIG, str(e))]
    return []


def with_field_syntax_version(definition: CheckedConfigDef) -> CheckedConfigDef:
    """FieldSyntaxVersion.appendConfigTo."""
    return definition.define(FIELD_SYNTAX_VERSION_CONFIG, Type.STRING, "V1",
                              SyntaxVersionValidator(("V1", "V2"), case_insensitive=True),
                              importance=Importance.HIGH, doc=FIELD_SYNTAX_VERSION_DOC)


class _ExtractField(KeyOrValueTransform):
    """Kafka's ExtractField: the key or value becomes one field of its Struct (schema: that field's schema,
    value `Struct.get`, the field's default for a null) or of its Map (schemaless: a missing field gives
    null). Null keys/values pass through; a field the schema lacks fails every record ("Unknown field")."""

    @classmethod
    def config_def(cls) -> CheckedConfigDef:
        return with_field_syntax_version(
            CheckedConfigDef(_check_path).define(FIELD_CONFIG, Type.STRING, importance=Importance.MEDIUM,
                                                 doc="Field name to extract."))

    def __init__(self, config):
        super().__init__(config)
        self.original_path: str = config[FIELD_CONFIG]
        self.steps = field_path(self.original_path, config[FIELD_SYNTAX_VERSION_CONFIG])

    def apply(self, batch: RecordBatch) -> RecordBatch:
        schema = self.operating_schema(batch)
        if schema is not None:
            return self._apply_with_schema(batch, schema)
        if isinstance(self.operating_type(batch), T.NullType):
            return batch  # only nulls: each passes through
        return self._apply_schemaless(batch)

    def _apply_schemaless(self, batch: RecordBatch) -> RecordBatch:
        value = self.operating_value()
        batch = require_map(batch, value, PURPOSE)  # requireMapOrNull
        current, errors = value, []
        for step in self.steps[:-1]:
            current = variant_field(current, step)
            errors.append(F.when(not_a_map(current), F.concat(
                F.lit(f"Only Map objects supported in absence of schema for [{NESTED_PURPOSE}], found: "),
                java_class_of(current))))
        if errors:
            batch = batch.fail(F.coalesce(*errors).isNotNull(), F.coalesce(*errors))
        extracted = variant_field(current, self.steps[-1])
        # A JSON null member is Kafka's null: the record's new key/value is null.
        return self.new_record(batch, None, F.when(F.is_variant_null(extracted), F.lit(None)).otherwise(extracted))

    def _field_from(self, schema: ConnectSchema) -> list[Field]:
        """SingleFieldPath.fieldFrom, keeping each step's field; DataError as Kafka's exceptions."""
        fields: list[Field] = []
        current = schema
        for step in self.steps:
            if current.type != "struct":
                raise DataError(NON_STRUCT_LOOKUP)
            field = current.field(step)
            if field is None:
                raise DataError(f"Unknown field: {self.original_path}",
                                exception_class="java.lang.IllegalArgumentException")
            fields.append(field)
            current = field.schema
        return fields

    def _apply_with_schema(self, batch: RecordBatch, schema: ConnectSchema) -> RecordBatch:
        value = self.operating_value()
        not_struct = struct_required_message(schema, PURPOSE)
        if not_struct is not None:  # requireStructOrNull, then fieldFrom on a schema without fields
            return batch.fail(value.isNotNull(), not_struct).fail(value.isNull(), NON_STRUCT_LOOKUP)
        fields = self._field_from(schema)
        return self.new_record(batch, fields[-1].schema, _value_from(value, fields))


def _value_from(value: Column, fields: list[Field]) -> Column:
    """SingleFieldPath.valueFrom(Struct): `Struct.get` at each step (defaults included); null on a null."""
    current = value
    for field in fields:
        current = F.when(current.isNull(), F.lit(None)).otherwise(struct_get(current, field))
    return current


_KEY_ALIASES, _VALUE_ALIASES = kafka_names("ExtractField")


class ExtractFieldKey(_ExtractField):
    __doc__ = _ExtractField.__doc__
    aliases = _KEY_ALIASES
    part = KEY


class ExtractFieldValue(_ExtractField):
    __doc__ = _ExtractField.__doc__
    aliases = _VALUE_ALIASES
    part = VALUE
