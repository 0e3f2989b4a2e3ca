"""The Avro schema Confluent's `AvroData.fromConnectSchema` builds from a Connect schema (schema-registry's
avro-data with the S3 sink's settings: `connect.meta.data=true`, no name scrubbing, no enhanced enums):
`avro_schema`, and `avro_schema_text`, that schema as Avro's `Schema.toString()` prints it.

AvroFormat writes it into each object's header (connectors/storage/avro.py), ParquetFormat stores it as
parquet-avro does (connectors/storage/parquet.py), and the Avro converter registers it
(connectors/converters/avro_converter.py). The values themselves are converted in
connectors/storage/avro_datums.py.
"""

from __future__ import annotations

import datetime as dt
import re
import struct
from dataclasses import dataclass, field
from typing import Any

from ingest.errors import DataError
from ingest.records.schema import (
    DATE, DECIMAL, STRING_SCHEMA, TIME, TIMESTAMP, ConnectSchema, JavaFloat, array, decimal_to_bytes, dumps,
)
from ingest.records.schema import struct as connect_struct

NAMESPACE = "io.confluent.connect.avro"
DEFAULT_SCHEMA_NAME = "ConnectDefault"
MAP_ENTRY_TYPE_NAME = "MapEntry"
DEFAULT_DECIMAL_PRECISION = 64
"""AvroData's precision for a Decimal without `connect.decimal.precision`."""

ENUM = NAMESPACE + ".Enum"
UNION = NAMESPACE + ".Union"
ENUM_DOC_PREFIX = NAMESPACE + ".enum.doc."
ENUM_DEFAULT_PREFIX = NAMESPACE + ".enum.default."
FIXED_SIZE = "connect.fixed.size"
_RECORD_DOC = NAMESPACE + ".record.doc"
_FIELD_DOC_PREFIX = NAMESPACE + ".field.doc."
_FIELD_DEFAULT_FLAG = NAMESPACE + ".field.default"
_LOGICAL_TYPES = {DATE: "date", TIME: "time-millis", TIMESTAMP: "timestamp-millis"}
PRIMITIVES = {"int8": "int", "int16": "int", "int32": "int", "int64": "long", "float32": "float",
              "float64": "double", "boolean": "boolean", "string": "string", "bytes": "bytes"}
"""Connect's primitive types and the Avro type each is written as (int8 and int16 as Avro ints)."""
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

HEADER_SCHEMA = connect_struct(None, ("key", STRING_SCHEMA), ("value", STRING_SCHEMA))
"""One Kafka header as Confluent's HeaderRecordView writes it (`SINGLE_HEADER_SCHEMA`): key and value
as required strings (`Values.convertToString` of the header value)."""
HEADERS_SCHEMA = array(HEADER_SCHEMA)
"""What a `.headers.avro` object holds per Kafka record: the record's headers as an array."""

_NO_DEFAULT = object()


def _add_prop(props: dict[str, Any], key: str, value: Any) -> None:
    # Avro's JsonProperties.addProp: the first value stays; a different second one is an error.
    if key in props and props[key] != value:
        raise DataError(f"Can't overwrite property: {key}")
    props.setdefault(key, value)


# Avro's schema objects as AvroData builds them; `_to_json` prints them as Avro's Schema.toString does.
# Equality is Avro's too (names, fields and properties), which decides when a record is written by name.


@dataclass(eq=True)
class _Primitive:
    type: str
    props: dict[str, Any] = field(default_factory=dict)


@dataclass(eq=True)
class _Array:
    items: Any
    props: dict[str, Any] = field(default_factory=dict)


@dataclass(eq=True)
class _Map:
    values: Any
    props: dict[str, Any] = field(default_factory=dict)


@dataclass(eq=True)
class _Union:
    branches: list[Any]


class _Named:
    """A named Avro type (record, enum, fixed), known by its full name: `namespace.name`."""

    name: str
    namespace: str | None

    @property
    def full_name(self) -> str:
        return self.name if self.namespace is None else f"{self.namespace}.{self.name}"


@dataclass(eq=True)
class _Fixed(_Named):
    name: str
    namespace: str | None
    size: int
    props: dict[str, Any] = field(default_factory=dict)


@dataclass(eq=True)
class _Enum(_Named):
    name: str
    namespace: str | None
    doc: str | None
    symbols: list[str]
    default: str | None
    props: dict[str, Any] = field(default_factory=dict)


@dataclass(eq=True)
class _Field:
    name: str
    schema: Any
    doc: str | None
    default: Any


@dataclass(eq=True)
class _Record(_Named):
    name: str
    namespace: str | None
    doc: str | None
    fields: list[_Field] = field(default_factory=list)
    props: dict[str, Any] = field(default_factory=dict)


class _FromConnect:
    """AvroData.fromConnectSchema with its FromConnectContext: shared records and default-name numbering."""

    def __init__(self, connect_meta_data: bool, enhanced: bool = False):
        self.meta = connect_meta_data
        self.enhanced = enhanced
        self.name_index = 0
        self.by_schema: dict[ConnectSchema, Any] = {}  # required schemas already converted (schemaMap)
        self.by_name: dict[str, _Record] = {}  # named records, reused by name (cycleReferences)

    def record(self, name: str | None, doc: str | None) -> _Record:
        """An empty record named as AvroData names it: the Connect name split at its last dot, else
        ConnectDefault, ConnectDefault2, ... in the order unnamed records are met."""
        if name is not None:
            namespace, _, simple = name.rpartition(".")
            _check_name(simple)
            return _Record(simple, namespace or None, doc)
        namespace, simple = self.name_or_default(None)
        return _Record(simple, namespace, doc)

    def name_or_default(self, name: str | None) -> tuple[str | None, str]:
        """AvroData.getNameOrDefault: (namespace, name) of a Connect name, else the next ConnectDefault name."""
        if name is not None:
            namespace, _, simple = name.rpartition(".")
            return namespace or None, simple
        self.name_index += 1
        return NAMESPACE, DEFAULT_SCHEMA_NAME + (str(self.name_index) if self.name_index > 1 else "")

    def with_cycle(self, s: ConnectSchema) -> Any:
        if s.name is not None and s.name in self.by_name:
            return _optional(s, self.by_name[s.name])
        return self.convert(s)

    def convert(self, s: ConnectSchema) -> Any:
        if not s.optional and s in self.by_schema:
            return self.by_schema[s]
        base: Any
        params = s.params
        if s.type == "bytes" and FIXED_SIZE in params:
            namespace, simple = self.name_or_default(s.name)
            _check_name(simple)
            base = _Fixed(simple, namespace, int(params[FIXED_SIZE]))
            if s.logical == DECIMAL:
                _add_prop(base.props, "scale", s.scale)
                _add_prop(base.props, "precision", s.precision or DEFAULT_DECIMAL_PRECISION)
        elif s.type == "string" and self.enhanced and ENUM in params:
            # enhanced.avro.schema.support: a string read from an Avro enum is written as that enum again
            _, simple = self.name_or_default(s.name)
            namespace, _, name = params[ENUM].rpartition(".")
            base = _Enum(name, namespace or None, params.get(ENUM_DOC_PREFIX + simple), enum_symbols(s),
                         params.get(ENUM_DEFAULT_PREFIX + simple))
        elif s.type in PRIMITIVES:
            base = _Primitive(PRIMITIVES[s.type])
            if s.logical == DECIMAL:
                _add_prop(base.props, "scale", s.scale)
                _add_prop(base.props, "precision", s.precision or DEFAULT_DECIMAL_PRECISION)
        elif s.type == "array":
            base = _Array(self.with_cycle(s.value_schema))
        elif s.type == "map" and s.key_schema.type == "string" and not s.key_schema.optional:
            base = _Map(self.with_cycle(s.value_schema))
        elif s.type == "map":
            # Avro maps only have string keys: other maps become arrays of key/value records.
            if s.name is None:
                entry = _Record(MAP_ENTRY_TYPE_NAME, NAMESPACE, None)
            else:
                entry = self.record(s.name, None)
                entry.props["connect.internal.type"] = MAP_ENTRY_TYPE_NAME
            entry.fields = [self.field("key", s.key_schema, None), self.field("value", s.value_schema, None)]
            base = _Array(entry)
        elif s.name == UNION:
            # A Connect union is an Avro union again: null first when optional, then each member's type.
            members = [self.with_cycle(f.schema.as_required()) for f in s.fields]
            seen: set[str] = set()
            for m in members:  # Avro's Schema.createUnion: one branch per type, or per name for named types
                key = _union_key(m)
                if key in seen:
                    raise DataError(f"Duplicate in union:{key} (the union's member types, as Avro schemas, must "
                                    "differ; an enum read as a string needs enhanced.avro.schema.support=true)")
                seen.add(key)
            return _Union([_Primitive("null"), *members] if s.optional else members)
        elif s.optional:
            # An optional struct is a union around the record of its required twin; no metadata on the union.
            return _Union([_Primitive("null"), self.with_cycle(s.as_required())])
        else:
            record = self.record(s.name, params.get(_RECORD_DOC))
            if s.name is not None:
                self.by_name[s.name] = record
            record.fields = [self.field(f.name, f.schema, params.get(_FIELD_DOC_PREFIX + f.name)) for f in s.fields]
            base = record
        self.annotate(s, base)
        final = _optional(s, base)
        if not s.optional:
            self.by_schema[s] = final
        return final

    def annotate(self, s: ConnectSchema, base: Any) -> None:
        props = base.props
        if self.meta:
            if s.doc is not None:
                _add_prop(props, "connect.doc", s.doc)
            if s.version is not None:
                _add_prop(props, "connect.version", s.version)
            params = {k: v for k, v in s.parameters if k != _FIELD_DEFAULT_FLAG}
            if params:
                _add_prop(props, "connect.parameters", params)
            if s.default is not None and _FIELD_DEFAULT_FLAG not in s.params:
                _add_prop(props, "connect.default", _default_json(s, s.default))
            if s.name is not None:
                _add_prop(props, "connect.name", s.name)
            if s.type in ("int8", "int16"):
                _add_prop(props, "connect.type", s.type)
        logical = s.logical
        if logical == DECIMAL:
            # LogicalTypes.decimal(p, s).addToSchema, or the legacy prop when Avro would refuse the pair.
            _add_prop(props, "logicalType", "decimal")
        elif logical in _LOGICAL_TYPES:
            _add_prop(props, "logicalType", _LOGICAL_TYPES[logical])
        for k, v in s.parameters:
            if k.startswith("avro"):
                _add_prop(props, k, v)

    def field(self, name: str, s: ConnectSchema, doc: str | None) -> _Field:
        _check_name(name)
        schema = self.convert(s)
        default: Any = _NO_DEFAULT
        if s.default is not None:
            # Avro's Field keeps a default only when it fits the field's schema (a union: its first branch).
            candidate = _as_avro_default(_default_json(s, s.default))
            if _valid_default(schema, candidate):
                default = candidate
        elif s.optional:
            default = None
        return _Field(name, schema, doc, default)


def _union_key(node: Any) -> str:
    if isinstance(node, _Named):
        return node.full_name
    if isinstance(node, _Primitive):
        return node.type
    return {_Array: "array", _Map: "map", _Union: "union"}[type(node)]


def _optional(s: ConnectSchema, base: Any) -> Any:
    if not s.optional:
        return base
    # A default must match a union's first branch, so an optional schema with a default puts null last.
    return _Union([base, _Primitive("null")] if s.default is not None else [_Primitive("null"), base])


def _check_name(name: str) -> None:
    # Avro's Schema.validateName, with its messages.
    if not name:
        raise DataError("Empty name")
    if not (name[0].isalpha() or name[0] == "_") or not name[0].isascii():
        raise DataError(f"Illegal initial character: {name}")
    if not _NAME.fullmatch(name):
        raise DataError(f"Illegal character in: {name}")


def _default_json(s: ConnectSchema, value: Any) -> Any:
    """AvroData.defaultValueFromConnect: a default as the JSON tree Jackson holds (floats as float32)."""
    if value is None:
        return None
    logical = s.logical
    if logical == DECIMAL:
        return decimal_to_bytes(value, s.scale).decode("latin-1")
    if logical == DATE:
        return value if isinstance(value, int) else (value - dt.date(1970, 1, 1)).days
    if logical == TIMESTAMP:
        if isinstance(value, dt.datetime):
            aware = value if value.tzinfo else value.replace(tzinfo=dt.timezone.utc)
            return (aware - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)) // dt.timedelta(milliseconds=1)
        return int(value)
    t = s.type
    if t in ("int8", "int16", "int32", "int64"):
        return int(value)
    if t == "float32":
        return JavaFloat(value)
    if t == "float64":
        return float(value)
    if t == "boolean":
        return bool(value)
    if t == "string":
        return str(value)
    if t == "bytes":
        return bytes(value).decode("latin-1")  # Avro's JSON form of bytes: one char per byte
    if t == "array":
        return [_default_json(s.value_schema, v) for v in value]
    if t == "map":
        if s.key_schema.type == "string" and not s.key_schema.optional:
            return {k: _default_json(s.value_schema, v) for k, v in value.items()}
        return [[_default_json(s.key_schema, k), _default_json(s.value_schema, v)] for k, v in value.items()]
    out = {}
    for f in s.fields:  # Struct.get falls back to the field's own default
        v = value.get(f.name)
        out[f.name] = _default_json(f.schema, f.schema.default if v is None else v)
    return out


def _as_avro_default(node: Any) -> Any:
    # JacksonUtils.toObject then toJsonNode: a float32 default becomes the double of that float
    # (0.1f is written 0.10000000149011612 in the field's "default").
    if isinstance(node, JavaFloat):
        return struct.unpack("<f", struct.pack("<f", node))[0]
    if isinstance(node, list):
        return [_as_avro_default(v) for v in node]
    if isinstance(node, dict):
        return {k: _as_avro_default(v) for k, v in node.items()}
    return node


def _valid_default(schema: Any, value: Any) -> bool:
    """Avro's Schema.isValidDefault for the shapes AvroData builds."""
    if isinstance(schema, _Union):
        return _valid_default(schema.branches[0], value)
    if isinstance(schema, _Record):
        if not isinstance(value, dict):
            return False
        for f in schema.fields:
            v = value[f.name] if f.name in value else f.default
            if v is _NO_DEFAULT or not _valid_default(f.schema, v):
                return False
        return True
    if isinstance(schema, _Array):
        return isinstance(value, list) and all(_valid_default(schema.items, v) for v in value)
    if isinstance(schema, _Map):
        return isinstance(value, dict) and all(_valid_default(schema.values, v) for v in value.values())
    if isinstance(schema, (_Fixed, _Enum)):
        return isinstance(value, str)
    t = schema.type
    if t in ("string", "bytes"):
        return isinstance(value, str)
    if t in ("int", "long"):
        return isinstance(value, int) and not isinstance(value, bool) and (t == "long" or -2**31 <= value < 2**31)
    if t in ("float", "double"):
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if t == "boolean":
        return isinstance(value, bool)
    return value is None  # null


def _to_json(node: Any, names: dict[str, Any], space: str | None) -> Any:
    """Avro's Schema.toJson: a named type (record, enum, fixed) is written in full once, then by name
    (relative to the namespace)."""
    if isinstance(node, _Union):
        return [_to_json(b, names, space) for b in node.branches]
    if isinstance(node, _Named):
        known = names.get(node.full_name)
        if known is not None:
            if known == node:
                return node.name if node.namespace in (None, space) else node.full_name
            raise DataError(f"Can't redefine: {node.full_name}")
        names[node.full_name] = node
        out: dict[str, Any] = {"type": {_Record: "record", _Enum: "enum", _Fixed: "fixed"}[type(node)],
                               "name": node.name}
        if node.namespace is not None and node.namespace != space:
            out["namespace"] = node.namespace
        elif node.namespace is None and space is not None:
            out["namespace"] = ""
        if isinstance(node, _Fixed):
            out["size"] = node.size
            return {**out, **node.props}
        if node.doc is not None:
            out["doc"] = node.doc
        if isinstance(node, _Enum):
            out["symbols"] = list(node.symbols)
            if node.default is not None:
                out["default"] = node.default
            return {**out, **node.props}
        out["fields"] = [_field_json(f, names, node.namespace) for f in node.fields]
        return {**out, **node.props}
    if isinstance(node, _Array):
        return {"type": "array", "items": _to_json(node.items, names, space), **node.props}
    if isinstance(node, _Map):
        return {"type": "map", "values": _to_json(node.values, names, space), **node.props}
    return {"type": node.type, **node.props} if node.props else node.type


def _field_json(f: _Field, names: dict[str, Any], space: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {"name": f.name, "type": _to_json(f.schema, names, space)}
    if f.doc is not None:
        out["doc"] = f.doc
    if f.default is not _NO_DEFAULT:
        out["default"] = f.default
    return out


def enum_symbols(s: ConnectSchema) -> list[str]:
    """The symbols of the Avro enum a Connect string was read from, in the order its parameters list them."""
    prefix = ENUM + "."
    return [k[len(prefix):] for k, _ in s.parameters if k.startswith(prefix)]


def avro_schema(schema: ConnectSchema | None, *, connect_meta_data: bool = True,
                enhanced: bool = False) -> dict | list | str:
    """The Avro schema AvroData.fromConnectSchema builds for `schema`, as the JSON tree Avro prints.

    A struct gives a record (a dict); a primitive without annotations is a bare type name ("string");
    an optional schema is a union (a list) with null first, or last when the schema has a default.
    Property order is Avro's (insertion order), so `avro_schema_text` is the text Confluent writes.
    DataError when Avro itself would refuse the schema (an invalid name, two different records of one name).
    With `enhanced` (enhanced.avro.schema.support) a string read from an Avro enum is an enum again.
    """
    if schema is None:
        raise DataError("Avro needs a schema: schemaless values (no value schema, e.g. JsonConverter with "
                        "schemas.enable=false) cannot be written as Avro or Parquet; use JsonFormat")
    return _to_json(_FromConnect(connect_meta_data, enhanced).convert(schema), {}, None)


def avro_schema_text(schema: ConnectSchema | None, *, connect_meta_data: bool = True, enhanced: bool = False) -> str:
    """`avro_schema` as Avro's `Schema.toString()` prints it: compact JSON, Jackson's number and escape forms."""
    return dumps(avro_schema(schema, connect_meta_data=connect_meta_data, enhanced=enhanced))
