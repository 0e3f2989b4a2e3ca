"""Confluent's AvroFormat (`io.confluent.connect.s3.format.avro.AvroFormat`) for one object at a time.

Three parts, each Confluent's:

- the key `avro.codec` and its values (Avro's `CodecFactory` names);
- `avro_schema`: the Avro schema Confluent's `AvroData.fromConnectSchema` builds from a Connect schema
  (schema-registry's avro-data with the S3 sink's settings: `connect.meta.data=true`, no name scrubbing,
  no enhanced enums), and `avro_schema_text`, that schema as Avro's `Schema.toString()` prints it;
- `AvroWriter`: an Avro object container file (the bytes of one `.avro` object) written from slices of a
  Spark column handed over as Arrow arrays, block by block as Avro's `DataFileWriter` cuts them.

The writer is reproducible: its sync marker comes from a seed (the object key), so writing the same
records under the same key gives the same bytes, which makes a re-run after a crash upload the same object.
Schemaless values cannot be written: a schema of None is a `DataError` (see `AvroWriter`).
"""

from __future__ import annotations

import bz2
import datetime as dt
import hashlib
import io
import lzma
import re
import struct
import zlib
from dataclasses import dataclass, field
from typing import Any, BinaryIO

import fastavro
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ingest.config.configdef import ConfigDef, Importance, Type, ValidString
from ingest.errors import ConfigError, DataError, Problem
from ingest.records.schema import (
    DATE, DECIMAL, STRING_SCHEMA, TIME, TIMESTAMP, ConnectSchema, JavaFloat, array, decimal_to_bytes, dumps,
)
from ingest.records.schema import struct as connect_struct

# --- configuration ---------------------------------------------------------------------------------

AVRO_CODEC_CONFIG = "avro.codec"
AVRO_CODEC_DEFAULT = "null"
AVRO_CODECS = ("null", "deflate", "snappy", "bzip2", "xz", "zstandard")
"""The values Confluent's S3 sink accepts: names Avro's `CodecFactory.fromString` knows, without levels."""


def validate_avro_codec(value: str | None) -> str:
    """The codec to use for `avro.codec` (None = the default); ConfigError naming the allowed values."""
    if value is None:
        return AVRO_CODEC_DEFAULT
    if value not in AVRO_CODECS:
        raise ConfigError([Problem(AVRO_CODEC_CONFIG, f"invalid value '{value}'; expected one of: "
                                   f"{', '.join(AVRO_CODECS)}")])
    return value


def avro_config_def() -> ConfigDef:
    """The key AvroFormat adds to a sink's ConfigDef."""
    return ConfigDef().define(
        AVRO_CODEC_CONFIG, Type.STRING, AVRO_CODEC_DEFAULT, ValidString.of(*AVRO_CODECS), Importance.LOW,
        doc="The Avro compression codec to be used for output files. Available values: "
            + ", ".join(AVRO_CODECS) + ".")


# --- Connect schema -> Avro schema (AvroData.fromConnectSchema) ---------------------------------------

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
_PRIMITIVES = {"int8": "int", "int16": "int", "int32": "int", "int64": "long", "float32": "float",
               "float64": "double", "boolean": "boolean", "string": "string", "bytes": "bytes"}
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
        elif s.type in _PRIMITIVES:
            base = _Primitive(_PRIMITIVES[s.type])
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


# --- Arrow values -> Avro datums (AvroData.fromConnectData) -----------------------------------------

_INT_RANGES = {"int8": (-2**7, 2**7 - 1), "int16": (-2**15, 2**15 - 1), "int32": (-2**31, 2**31 - 1)}
_UNIT_MILLIS = {"s": (1000, 1), "ms": (1, 1), "us": (1, 1000), "ns": (1, 1_000_000)}


def as_plain_array(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    """One contiguous array with its values spelled out (chunks combined, dictionaries decoded)."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if pa.types.is_dictionary(values.type):
        values = values.dictionary_decode()
    return values


def check_values(values: pa.Array, schema: ConnectSchema, path: str = "value") -> None:
    """Fail as Connect's `ConnectSchema.validateValue` would: a null in a required place, an int8/16/32 out of
    range; a null value itself is a tombstone, which the sink handles before a format sees it. Vectorised."""
    values = as_plain_array(values)
    if values.null_count:
        raise DataError(f"{path}: a null value (tombstone) cannot be written; behavior.on.null.values decides "
                        "what happens to tombstones before they reach a format")
    _check(values, schema, path, None)


def struct_field(arr: pa.Array, name: str, path: str = "value") -> pa.Array:
    """The child `name` of a struct array (sliced with it); DataError naming the fields when it is missing."""
    try:
        return arr.field(name)
    except KeyError:
        raise DataError(f"{path}: the values have no field '{name}' (they have: "
                        f"{', '.join(f.name for f in arr.type)})") from None


def _check(arr: pa.Array, s: ConnectSchema, path: str, present: pa.Array | None) -> None:
    """`present`: where the enclosing structs are not null (None: everywhere); only there do values count."""
    if s.type in _INT_RANGES and pa.types.is_integer(arr.type) and arr.type.bit_width > int(s.type[3:]):
        lo, hi = _INT_RANGES[s.type]
        bounds = pc.min_max(arr if present is None else arr.filter(present)).as_py()
        for v in (bounds["min"], bounds["max"]):
            if v is not None and not lo <= v <= hi:
                raise DataError(f"{path}: value {v} does not fit Connect type {s.type}")
    if s.type == "struct":
        here = arr.is_valid() if present is None else pc.and_(present, arr.is_valid())
        for f in s.fields:
            child = struct_field(arr, f.name, path)
            if not f.schema.optional and child.null_count and pc.any(pc.and_(child.is_null(), here)).as_py():
                raise DataError(f'Invalid value: null used for required field: "{f.name}", schema type: '
                                f"{f.schema.type.upper()} (at {path}.{f.name})")
            _check(child, f.schema, f"{path}.{f.name}", here)
    elif s.type == "array":
        _check_items(_children(arr)[1], s.value_schema, f"{path}[]")
    elif s.type == "map":
        _, keys, items = _map_children(arr)
        _check(keys, s.key_schema, f"{path}.key", None)
        _check_items(items, s.value_schema, f"{path}.value")


def _check_items(items: pa.Array, s: ConnectSchema, path: str) -> None:
    if not s.optional and items.null_count:
        raise DataError(f"{path}: null used for a required {s.type.upper()} element")
    _check(items, s, path, None)


def _children(arr: pa.Array) -> tuple[np.ndarray, pa.Array]:
    """A list array's offsets (from 0) and the part of its child those offsets cover."""
    offsets = arr.offsets.to_numpy(zero_copy_only=False)
    start = int(offsets[0])
    return offsets - start, arr.values.slice(start, int(offsets[-1]) - start)


def _map_children(arr: pa.Array) -> tuple[np.ndarray, pa.Array, pa.Array]:
    offsets = arr.offsets.to_numpy(zero_copy_only=False)
    start, length = int(offsets[0]), int(offsets[-1] - offsets[0])
    return offsets - start, arr.keys.slice(start, length), arr.items.slice(start, length)


def epoch_millis(arr: pa.Array) -> pa.Array:
    """Timestamps as int64 epoch milliseconds (floored, as java.util.Date holds them); ints pass through."""
    if pa.types.is_timestamp(arr.type):
        mul, div = _UNIT_MILLIS[arr.type.unit]
        raw = arr.cast(pa.int64())
        if mul == 1 and div == 1:
            return raw
        ints = raw.fill_null(0).to_numpy() * mul // div
        return pa.array(ints, pa.int64(), mask=arr.is_null().to_numpy(zero_copy_only=False))
    return arr.cast(pa.int64())


def epoch_days(arr: pa.Array) -> pa.Array:
    """Dates as int32 days since the epoch."""
    if pa.types.is_date64(arr.type):
        arr = arr.cast(pa.date32())
    return arr.cast(pa.int32())


def millis_of_day(arr: pa.Array) -> pa.Array:
    """Times of day as int32 milliseconds (Connect's Time); Spark hands them over as int32 already."""
    if pa.types.is_time(arr.type):
        mul, div = _UNIT_MILLIS[arr.type.unit]
        ints = arr.cast(pa.int64()).fill_null(0).to_numpy() * mul // div
        return pa.array(ints.astype(np.int32), pa.int32(), mask=arr.is_null().to_numpy(zero_copy_only=False))
    return arr.cast(pa.int32())


def decimal_unscaled_bytes(arr: pa.Array, scale: int) -> list[bytes | None]:
    """Decimal.fromLogical for each value: the unscaled value's minimal two's-complement big-endian bytes."""
    if not pa.types.is_decimal(arr.type):
        raise DataError(f"a Decimal needs a decimal column, not {arr.type}")
    if arr.type.scale != scale:
        raise DataError("BigDecimal has mismatching scale value for given Decimal schema "
                        f"(column scale {arr.type.scale}, schema scale {scale})")
    width = arr.type.byte_width
    raw = memoryview(arr.buffers()[1]).cast("B")[arr.offset * width:(arr.offset + len(arr)) * width].tobytes()
    valid = arr.is_valid().to_numpy(zero_copy_only=False) if arr.null_count else None
    out: list[bytes | None] = []
    from_bytes = int.from_bytes
    for i in range(len(arr)):
        if valid is not None and not valid[i]:
            out.append(None)
            continue
        v = from_bytes(raw[i * width:(i + 1) * width], "little", signed=True)
        out.append(v.to_bytes(((v if v >= 0 else ~v).bit_length() >> 3) + 1, "big", signed=True))
    return out


def avro_datums(values: pa.Array, schema: ConnectSchema) -> list[Any]:
    """Arrow values of `schema` as the Python datums fastavro encodes exactly as Avro's GenericDatumWriter
    encodes AvroData's: records as dicts, logical types as their Avro ints/longs/bytes."""
    return _datums(as_plain_array(values), schema)


def _datums(arr: pa.Array, s: ConnectSchema) -> list[Any]:
    logical = s.logical
    if logical == DATE:
        return epoch_days(arr).to_pylist()
    if logical == TIME:
        return millis_of_day(arr).to_pylist()
    if logical == TIMESTAMP:
        return epoch_millis(arr).to_pylist()
    if logical == DECIMAL:
        return decimal_unscaled_bytes(arr, s.scale)
    if s.type in _PRIMITIVES:
        return arr.to_pylist()
    valid = arr.is_valid().to_numpy(zero_copy_only=False) if arr.null_count else None
    if s.name == UNION:
        # The first member that is set, as fastavro's (branch, value) so the branch is the member's own.
        members = [(_branch_name(f.schema), _datums(struct_field(arr, f.name), f.schema)) for f in s.fields]
        rows = []
        for i in range(len(arr)):
            set_ = next(((branch, values[i]) for branch, values in members if values[i] is not None), None)
            rows.append(None if set_ is None else set_ if set_[0] else set_[1])
    elif s.type == "struct":
        names = [f.name for f in s.fields]
        columns = [_datums(struct_field(arr, f.name), f.schema) for f in s.fields]
        rows = [dict(zip(names, row)) for row in zip(*columns)] if names else [{} for _ in range(len(arr))]
    elif s.type == "array":
        offsets, items = _children(arr)
        flat = _datums(items, s.value_schema)
        rows = [flat[a:b] for a, b in zip(offsets[:-1].tolist(), offsets[1:].tolist())]
    else:
        offsets, keys, items = _map_children(arr)
        flat_keys, flat_items = _datums(keys, s.key_schema), _datums(items, s.value_schema)
        bounds = zip(offsets[:-1].tolist(), offsets[1:].tolist())
        if s.key_schema.type == "string" and not s.key_schema.optional:
            rows = [dict(zip(flat_keys[a:b], flat_items[a:b])) for a, b in bounds]
        else:
            rows = [[{"key": k, "value": v} for k, v in zip(flat_keys[a:b], flat_items[a:b])] for a, b in bounds]
    if valid is not None:
        rows = [r if ok else None for r, ok in zip(rows, valid)]
    return rows


def _branch_name(s: ConnectSchema) -> str | None:
    """The name fastavro knows a union's branch by: a named type's full name, else its type; None for a record
    without a Connect name (fastavro then finds the branch by the value's fields)."""
    if s.type == "struct":
        return s.name
    if s.type == "bytes" and FIXED_SIZE in s.params:
        return s.name
    if s.type in ("array", "map"):
        return "array" if s.type == "map" and not (s.key_schema.type == "string" and not s.key_schema.optional) \
            else s.type
    return _PRIMITIVES[s.type]


# --- the object container file (DataFileWriter) --------------------------------------------------------

SYNC_INTERVAL = 64_000
"""Avro's DataFileConstants.DEFAULT_SYNC_INTERVAL: a block is written once its records reach this many bytes."""
_CHUNK = 4096  # records converted to Python at a time: bounds memory, whatever the slice size
_MAGIC = b"Obj\x01"


def sync_marker(seed: bytes | str) -> bytes:
    """The 16-byte sync marker of an object, derived from its seed (the object key)."""
    data = seed.encode("utf-8") if isinstance(seed, str) else bytes(seed)
    return hashlib.sha256(b"lakeconnect avro sync marker\0" + data).digest()[:16]


def write_long(n: int) -> bytes:
    """Avro's long (and int): zig-zag, then a base-128 varint."""
    n = (n << 1) ^ (n >> 63)
    out = bytearray()
    while n & ~0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def read_long(buf: bytes | memoryview, pos: int) -> tuple[int, int]:
    """The Avro long at `pos` of `buf`, and the position after it."""
    shift = n = 0
    while True:
        b = buf[pos]
        pos += 1
        n |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return (n >> 1) ^ -(n & 1), pos


def _deflate(data: bytes) -> bytes:
    # Avro's DeflateCodec: raw deflate (no zlib header), Deflater.DEFAULT_COMPRESSION.
    c = zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, -15)
    return c.compress(data) + c.flush()


def _snappy(data: bytes) -> bytes:
    # Avro's SnappyCodec: the compressed block, then the CRC32 of the uncompressed bytes, big-endian.
    return pa.compress(data, codec="snappy", asbytes=True) + struct.pack(">I", zlib.crc32(data))


_ZSTD = None


def _zstandard(data: bytes) -> bytes:
    global _ZSTD
    if _ZSTD is None:
        _ZSTD = pa.Codec("zstd", compression_level=3)  # Avro's ZstandardCodec default level
    return _ZSTD.compress(data, asbytes=True)


_BLOCK_CODECS = {
    "null": bytes,
    "deflate": _deflate,
    "snappy": _snappy,
    "bzip2": lambda data: bz2.compress(data, 9),
    "xz": lambda data: lzma.compress(data, format=lzma.FORMAT_XZ, preset=6),
    "zstandard": _zstandard,
}


class AvroWriter:
    """Writes one Avro object container file to `out`, as Confluent's AvroRecordWriterProvider does.

    `write(values)` takes a slice of the value column (Arrow, in offset order); `close()` writes the last
    block and leaves `out` open. The header carries `avro.schema` (Confluent's schema text) and
    `avro.codec`, in the order Avro's Java writer puts them; blocks are cut where Avro's DataFileWriter cuts
    them (once a block's records reach 64,000 bytes), whatever slices the records arrive in, and the sync
    marker comes from `sync_seed`: the same records under the same seed give the same bytes.

    A schema of None (schemaless values) is refused with a DataError: Confluent's AvroFormat cannot write
    them either (its writer is opened again for every schemaless record and fails on the second).
    """

    def __init__(self, out: BinaryIO, schema: ConnectSchema | None, codec: str, sync_seed: bytes | str, *,
                 connect_meta_data: bool = True):
        self._out = out
        self._schema = schema
        self._codec = validate_avro_codec(codec)
        self._compress = _BLOCK_CODECS[self._codec]
        tree = avro_schema(schema, connect_meta_data=connect_meta_data)
        self._sync = sync_marker(sync_seed)
        # fastavro encodes the records and cuts the blocks (uncompressed, into a scratch buffer); this class
        # writes the header and compresses each block, so the codecs do not depend on optional libraries.
        self._scratch = io.BytesIO()
        self._encoder = fastavro.write.Writer(self._scratch, fastavro.parse_schema(tree), codec="null",
                                              sync_interval=SYNC_INTERVAL, sync_marker=self._sync)
        self._scratch.seek(0)
        self._scratch.truncate()  # fastavro's own header; ours follows
        self._records = 0
        self._closed = False
        text = dumps(tree).encode("utf-8")
        meta = [(b"avro.schema", text), (b"avro.codec", self._codec.encode("ascii"))]
        header = bytearray(_MAGIC)
        header += write_long(len(meta))
        for k, v in meta:
            header += write_long(len(k)) + k + write_long(len(v)) + v
        header += write_long(0) + self._sync
        out.write(bytes(header))

    @property
    def records(self) -> int:
        """How many records were written so far."""
        return self._records

    def write(self, values: pa.Array) -> None:
        """Append the records of `values` (Arrow values of the schema, no nulls)."""
        if self._closed:
            raise ValueError("AvroWriter is closed")
        check_values(values, self._schema)
        values = as_plain_array(values)
        write = self._encoder.write
        for start in range(0, len(values), _CHUNK):
            for datum in avro_datums(values.slice(start, _CHUNK), self._schema):
                write(datum)
            self._drain()
        self._records += len(values)

    def close(self) -> None:
        """Write the last block. `out` stays open."""
        if self._closed:
            return
        self._encoder.flush()
        self._drain()
        self._closed = True

    def _drain(self) -> None:
        """Move the complete blocks fastavro has written to `out`, compressed with the codec."""
        buf = memoryview(self._scratch.getvalue())
        pos = 0
        while pos < len(buf):  # each block: record count, byte size, the records, the sync marker
            count, pos = read_long(buf, pos)
            size, pos = read_long(buf, pos)
            data = self._compress(bytes(buf[pos:pos + size]))
            pos += size + 16
            self._out.write(write_long(count) + write_long(len(data)) + data + self._sync)
        self._scratch.seek(0)
        self._scratch.truncate()
