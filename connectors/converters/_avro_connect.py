"""Avro schemas to Connect schemas, as Confluent's `AvroData.toConnectSchema` maps them, and the Spark
expressions that move values between a Connect schema's Spark type and the type Spark's Avro functions
(`to_avro`, `from_avro`) use for an Avro schema.

The Avro side is the JSON tree of a schema as the registry returns it. Spark's Avro functions read and write
Avro's binary encoding itself; these expressions only reshape what they take and give: a Connect map with
non-string keys is an array of `MapEntry` records in Avro, an int8 is an Avro int, a union is a struct
named after its branches, a decimal's precision is capped at Spark's 38 (the bytes do not depend on it).
"""

from __future__ import annotations

import base64
import json
import copy
from typing import Any

from pyspark.sql import Column
from pyspark.sql import functions as F

from connectors.storage.avro import write_long
from connectors.storage.avro_schema import enum_symbols
from ingest.errors import DataError
from ingest.records.java import hashmap_order
from ingest.runtime.tolerance import MARKER
from ingest.records.schema import DATE, DECIMAL, PRECISION, SCALE, TIME, TIMESTAMP, ConnectSchema, Field

NAMESPACE = "io.confluent.connect.avro"
DEFAULT_SCHEMA_FULL_NAME = NAMESPACE + ".ConnectDefault"
MAP_ENTRY = "MapEntry"
UNION = NAMESPACE + ".Union"
ENUM = NAMESPACE + ".Enum"
RECORD_DOC = NAMESPACE + ".record.doc"
FIELD_DOC_PREFIX = NAMESPACE + ".field.doc."
FIELD_DEFAULT_FLAG = NAMESPACE + ".field.default"
ENUM_DOC_PREFIX = NAMESPACE + ".enum.doc."
ENUM_DEFAULT_PREFIX = NAMESPACE + ".enum.default."
FIXED_SIZE = "connect.fixed.size"
DEFAULT_PRECISION = 64
SPARK_MAX_PRECISION = 38
_NON_AVRO_INTS = {"int8": "int8", "int16": "int16"}


def _type(node: Any) -> str:
    if isinstance(node, list):
        return "union"
    if isinstance(node, str):
        return node
    t = node.get("type")
    return _type(t) if isinstance(t, (dict, list)) else t


def _props(node: Any) -> dict[str, Any]:
    return node if isinstance(node, dict) else {}


class _Names:
    """Named types of one schema by full name, as Avro resolves a reference (`"Address"` after its definition)."""

    def __init__(self, root: Any):
        self.by_name: dict[str, Any] = {}
        self._collect(root, None)

    def _collect(self, node: Any, space: str | None) -> None:
        if isinstance(node, list):
            for b in node:
                self._collect(b, space)
        elif isinstance(node, dict):
            kind = node.get("type")
            if isinstance(kind, (dict, list)):
                self._collect(kind, space)
                return
            if kind in ("record", "error", "enum", "fixed"):
                full = _full(node, space)
                node["__full"] = full
                self.by_name.setdefault(full, node)
                space = full.rpartition(".")[0] or None
                for f in node.get("fields") or []:
                    self._collect(f.get("type"), space)
            elif kind == "array":
                self._collect(node.get("items"), space)
            elif kind == "map":
                self._collect(node.get("values"), space)

    def resolve(self, node: Any, space: str | None = None) -> Any:
        if isinstance(node, str) and node not in _PRIMITIVES:
            full = node if "." in node else (f"{space}.{node}" if space else node)
            found = self.by_name.get(full) or self.by_name.get(node)
            if found is None:
                raise DataError(f"the Avro schema refers to an unknown type '{node}'")
            return found
        if isinstance(node, dict) and isinstance(node.get("type"), (dict, list)):
            return self.resolve(node["type"], space)
        return node


_PRIMITIVES = ("null", "boolean", "int", "long", "float", "double", "bytes", "string")


def _full(node: dict[str, Any], space: str | None) -> str:
    name = str(node.get("name"))
    if "." in name:
        return name
    ns = node.get("namespace", space)
    return f"{ns}.{name}" if ns else name


def parse_tree(avro: Any) -> tuple[Any, _Names]:
    tree = copy.deepcopy(avro)
    return tree, _Names(tree)


def to_connect_schema(avro: Any, version: int | None = None, *, connect_meta_data: bool = True,
                      enhanced: bool = False) -> ConnectSchema:
    """AvroData.toConnectSchema (generalized sum types off): the Connect schema a value written with Avro schema
    `avro` (a JSON tree) is read as; `version`, the registry's version of the schema, where the schema carries
    no `connect.version`. With `enhanced` (enhanced.avro.schema.support) a union's fields for its records,
    enums and fixed types are named by full name."""
    tree, names = parse_tree(avro)
    return _Converter(names, connect_meta_data, enhanced).convert(tree, False, None, None, version, None)


class _Converter:
    def __init__(self, names: _Names, meta: bool, enhanced: bool = False):
        self.names = names
        self.meta = meta
        self.enhanced = enhanced

    def convert(self, node: Any, force_optional: bool, field_default: Any, doc_default: str | None,
                version: int | None, space: str | None, has_field_default: bool = False) -> ConnectSchema:
        node = self.names.resolve(node, space)
        kind = _type(node)
        props = _props(node)
        connect_type, logical = props.get("connect.type"), props.get("logicalType")
        params: dict[str, str] = {}
        name: str | None = None
        fields: list[Field] = []
        key = value = None
        inner_space = space
        if kind == "boolean":
            t = "boolean"
        elif kind in ("bytes", "fixed"):
            if isinstance(logical, str) and logical.lower() == "decimal":
                scale = props.get("scale")
                t, name = "bytes", DECIMAL
                params[SCALE] = str(int(scale) if isinstance(scale, (int, float)) else 0)
                precision = props.get("precision")
                if precision is not None:
                    if not isinstance(precision, int):
                        raise DataError("precision property must be a JSON Integer. "
                                        "https://avro.apache.org/docs/1.9.1/spec.html#Decimal")
                    if precision != DEFAULT_PRECISION:
                        params[PRECISION] = str(precision)
            else:
                t = "bytes"
            if kind == "fixed":
                params[FIXED_SIZE] = str(props.get("size"))
        elif kind == "double":
            t = "float64"
        elif kind == "float":
            t = "float32"
        elif kind == "int":
            t = "int32"
            if isinstance(logical, str):
                if logical.lower() == "date":
                    name = DATE
                elif logical.lower() == "time-millis":
                    name = TIME
            elif connect_type is not None:
                if connect_type not in _NON_AVRO_INTS:
                    raise DataError("Connect type annotation for Avro int field is null")
                t = _NON_AVRO_INTS[connect_type]
        elif kind == "long":
            t = "int64"
            if isinstance(logical, str) and logical.lower() == "timestamp-millis":
                name = TIMESTAMP
        elif kind == "string":
            t = "string"
        elif kind == "array":
            items = self.names.resolve(node["items"], space)
            if _is_map_entry(items):
                entry_fields = {f["name"]: f for f in items.get("fields") or []}
                if len(entry_fields) != 2 or "key" not in entry_fields or "value" not in entry_fields:
                    raise DataError("Found map encoded as array of key-value pairs, but array elements do not match "
                                    "the expected format.")
                entry_space = items["__full"].rpartition(".")[0] or None
                t = "map"
                key = self.convert(entry_fields["key"]["type"], False, None, None, None, entry_space)
                value = self.convert(entry_fields["value"]["type"], False, None, None, None, entry_space)
            else:
                t = "array"
                value = self.convert(items, False, None, None, None, space)
        elif kind == "map":
            t = "map"
            key = ConnectSchema("string")
            value = self.convert(node["values"], False, None, None, None, space)
        elif kind in ("record", "error"):
            t = "struct"
            inner_space = node["__full"].rpartition(".")[0] or None
            if self.meta and node.get("doc") is not None:
                params[RECORD_DOC] = node["doc"]
            for i, f in enumerate(node.get("fields") or []):
                if self.meta and f.get("doc") is not None:
                    params[FIELD_DOC_PREFIX + f["name"]] = f["doc"]
                fields.append(Field(f["name"], i, self.convert(f["type"], False, f.get("default"), f.get("doc"),
                                                               None, inner_space, has_field_default="default" in f)))
        elif kind == "enum":
            t = "string"
            simple = node["__full"].rpartition(".")[2]
            if self.meta:
                if node.get("doc") is not None:
                    params[ENUM_DOC_PREFIX + simple] = node["doc"]
                if node.get("default") is not None:
                    params[ENUM_DEFAULT_PREFIX + simple] = node["default"]
            params[ENUM] = node["__full"]
            for symbol in node.get("symbols") or []:
                params[f"{ENUM}.{symbol}"] = symbol
        elif kind == "union":
            branches = node if isinstance(node, list) else node["type"]
            if len(branches) == 2 and any(_type(b) == "null" for b in branches):
                other = next(b for b in branches if _type(b) != "null")
                return self.convert(other, True, None, doc_default, None, space)
            t, name = "struct", UNION
            optional = False
            seen: set[str] = set()
            for i, b in enumerate(branches):
                resolved = self.names.resolve(b, space)
                if _type(resolved) == "null":
                    optional = True
                    continue
                field_name = _member_name(resolved, self.enhanced)
                if field_name in seen:
                    raise DataError("Multiple union schemas map to the Connect union field name")
                seen.add(field_name)
                fields.append(Field(field_name, len(fields), self.convert(resolved, True, None, None, None, space)))
            force_optional = force_optional or optional
        elif kind == "null":
            raise DataError("Standalone null schemas are not supported by this converter")
        else:
            raise DataError(f"Couldn't translate unsupported schema type {kind}.")

        doc = props.get("connect.doc") if self.meta else None
        connect_version = props.get("connect.version")
        if connect_version is not None:
            if not isinstance(connect_version, int):
                raise DataError(f"Invalid Connect version found: {connect_version}")
            version = connect_version
        parameters = props.get("connect.parameters")
        if self.meta and parameters is not None:
            if not isinstance(parameters, dict):
                raise DataError(f"Expected JSON object for schema parameters but found: {parameters}")
            for k, v in parameters.items():
                if not isinstance(v, str):
                    raise DataError(f"Expected schema parameter values to be strings but found: {v}")
                params[k] = v
        for k, v in props.items():
            if k.startswith("avro"):
                params[k] = v if isinstance(v, str) else str(v)
        default_json = field_default if has_field_default else props.get("connect.default")
        if has_field_default and self.meta and "connect.default" not in props:
            params[FIELD_DEFAULT_FLAG] = "true"
        connect_name = props.get("connect.name")
        if connect_name is not None:
            if not isinstance(connect_name, str):
                raise DataError(f"Invalid schema name: {connect_name}")
            if name is not None and connect_name != name:
                raise DataError(f"Mismatched names: name already added to SchemaBuilder ({name}) differs from name "
                                f"in source schema ({connect_name})")
            candidate = connect_name
        elif kind in ("record", "error", "enum") or (kind == "fixed" and name != DECIMAL):
            candidate = node["__full"]
        else:
            candidate = None
        if candidate is not None and not candidate.startswith(DEFAULT_SCHEMA_FULL_NAME):
            name = name or candidate
        schema = ConnectSchema(t, force_optional, name, version if version is not None and version >= 0 else None,
                               doc, tuple(params.items()), None, tuple(fields), key, value)
        if default_json is not None:
            try:
                schema = schema.with_default(_default(schema, node, default_json, self.names, inner_space))
            except (DataError, ValueError, TypeError, KeyError):
                pass  # AvroData: "Ignoring invalid default"
        return schema


def _member_name(node: Any, enhanced: bool = False) -> str:
    """AvroData.unionMemberFieldName: a named type's simple name (its full name with enhanced support), else
    the type's name."""
    kind = _type(node)
    if kind in ("record", "error", "enum", "fixed"):
        return node["__full"] if enhanced else node["__full"].rpartition(".")[2]
    return kind


def _is_map_entry(node: Any) -> bool:
    if _type(node) not in ("record", "error"):
        return False
    full = node["__full"]
    return full == f"{NAMESPACE}.{MAP_ENTRY}" or node.get("connect.internal.type") == MAP_ENTRY


def _default(schema: ConnectSchema, node: Any, value: Any, names: _Names, space: str | None) -> Any:
    """AvroData.defaultValueFromAvro: a default's JSON as the Connect value the schema holds."""
    if value is None:
        return None
    node = names.resolve(node, space)
    kind = _type(node)
    logical = schema.logical
    if kind == "union":
        branches = node if isinstance(node, list) else node["type"]
        first = names.resolve(branches[0], space)
        if _type(first) == "null":
            return None
        if schema.name == UNION:
            member = schema.fields[0]  # the first branch's field, however the union's fields are named
            return {member.name: _default(member.schema, first, value, names, space)}
        return _default(schema, first, value, names, space)
    if kind in ("int", "long"):
        number = int(value)
        if logical == DATE:
            import datetime as dt

            return dt.date(1970, 1, 1) + dt.timedelta(days=number)
        if logical == TIMESTAMP:
            import datetime as dt

            return dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(milliseconds=number)
        return number
    if kind in ("float", "double"):
        return float(value)
    if kind == "boolean":
        return bool(value)
    if kind in ("string", "enum"):
        return str(value)
    if kind in ("bytes", "fixed"):
        data = value.encode("latin-1") if isinstance(value, str) else base64.b64decode(value)
        if logical == DECIMAL:
            import decimal

            return decimal.Decimal(int.from_bytes(data, "big", signed=True)).scaleb(-schema.scale)
        return data
    if kind == "array":
        if schema.type == "map":  # AvroData reads such a default through the array's element: it fails, ignored
            raise DataError("a map default written as an array of entries")
        return [_default(schema.value_schema, node["items"], v, names, space) for v in value]
    if kind == "map":
        return {k: _default(schema.value_schema, node["values"], v, names, space) for k, v in value.items()}
    if kind in ("record", "error"):
        inner = node["__full"].rpartition(".")[0] or None
        return {f["name"]: _default(schema.field(f["name"]).schema, f["type"], value.get(f["name"]), names, inner)
                for f in node.get("fields") or []}
    return None


# --- the schema Spark's Avro functions are given ----------------------------------------------------

def spark_facing(avro: Any) -> Any:
    """`avro` as Spark's Avro functions may take it: each decimal's precision at most 38 (Spark's DecimalType
    cannot hold more; the bytes a decimal is written as do not depend on its precision)."""
    tree = copy.deepcopy(avro)

    def walk(node: Any) -> None:
        if isinstance(node, list):
            for b in node:
                walk(b)
        elif isinstance(node, dict):
            if node.get("logicalType") == "decimal":
                precision = node.get("precision", DEFAULT_PRECISION)
                if isinstance(precision, int) and precision > SPARK_MAX_PRECISION:
                    node["precision"] = SPARK_MAX_PRECISION
            for k in ("type", "items", "values"):
                if isinstance(node.get(k), (dict, list)):
                    walk(node[k])
            for f in node.get("fields") or []:
                walk(f.get("type"))

    walk(tree)
    return tree


# --- values: Connect's Spark type <-> what Spark's Avro functions take and give ------------------------

def to_avro_input(col: Column, schema: ConnectSchema, *, enhanced: bool = False) -> Column:
    """A Connect value (its schema's Spark type) shaped as the Avro schema AvroData builds for it: maps whose keys
    are not required strings become arrays of key/value structs (`MapEntry` records). With `enhanced`, a string
    that is not one of its enum's symbols fails the batch with AvroData's message, not Spark's."""
    if not _needs_reshaping(schema, enhanced):
        return col
    return _reshape_out(col, schema, enhanced)


def _is_enum(s: ConnectSchema) -> bool:
    return s.type == "string" and ENUM in s.params


def _needs_reshaping(s: ConnectSchema, enhanced: bool) -> bool:
    if s.type == "map":  # every map: string-keyed ones are reordered as a HashMap iterates them
        return True
    if s.type == "array":
        return _needs_reshaping(s.value_schema, enhanced)
    if s.type == "struct":
        return any(_needs_reshaping(f.schema, enhanced) for f in s.fields)
    return enhanced and _is_enum(s)


def _reshape_out(col: Column, s: ConnectSchema, enhanced: bool) -> Column:
    if not _needs_reshaping(s, enhanced):
        return col
    if s.type == "map":
        if s.key_schema.type == "string" and not s.key_schema.optional:
            # AvroData copies the map into a java.util.HashMap, which Avro's writer iterates
            return F.transform_values(hashmap_order(col), lambda _, v: _reshape_out(v, s.value_schema, enhanced))
        return F.transform(F.map_entries(col), lambda e: F.struct(
            _reshape_out(e["key"], s.key_schema, enhanced).alias("key"),
            _reshape_out(e["value"], s.value_schema, enhanced).alias("value")))
    if s.type == "array":
        return F.transform(col, lambda v: _reshape_out(v, s.value_schema, enhanced))
    if s.type == "string":
        symbols = enum_symbols(s)
        failure = F.concat(F.lit(f"{MARKER}AvroConverter cannot write the string '"), col,
                           F.lit(f"' as enum {s.params[ENUM]}: it is not one of its symbols ({', '.join(symbols)})"))
        return F.when(col.isNull() | col.isin(symbols), col).otherwise(F.raise_error(failure).cast("string"))
    struct = F.struct(*[_reshape_out(col[f.name], f.schema, enhanced).alias(f.name) for f in s.fields])
    return F.when(col.isNull(), F.lit(None)).otherwise(struct)


def from_avro_output(col: Column, schema: ConnectSchema) -> Column:
    """What `from_avro` gives for a value of the Avro schema `to_connect_schema` mapped to `schema`, as that
    schema's Spark type: ints narrowed to int8/int16, decimals to their Connect precision, MapEntry arrays
    made maps, a union's `memberN` fields named after their branches."""
    return _reshape_in(col, schema)


def _reshape_in(col: Column, s: ConnectSchema) -> Column:
    """Leaves cast to their Connect Spark type; structs, arrays and maps rebuilt around them (a cast of a whole
    struct would have to match nullability field by field, which Spark's Avro reader does not promise)."""
    if s.type == "map":
        key_ok = s.key_schema.type == "string" and not s.key_schema.optional
        if key_ok:
            return F.transform_values(col, lambda _, v: _reshape_in(v, s.value_schema))
        entries = F.transform(col, lambda e: F.struct(_reshape_in(e["key"], s.key_schema).alias("key"),
                                                      _reshape_in(e["value"], s.value_schema).alias("value")))
        return F.map_from_entries(entries)
    if s.type == "array":
        return F.transform(col, lambda v: _reshape_in(v, s.value_schema))
    if s.type == "struct":
        if s.name == UNION:
            parts = [_reshape_in(col[f"member{i}"], f.schema).alias(f.name) for i, f in enumerate(s.fields)]
        else:
            parts = [_reshape_in(col[f.name], f.schema).alias(f.name) for f in s.fields]
        return F.when(col.isNull(), F.lit(None)).otherwise(F.struct(*parts))
    return col.cast(s.to_spark_type())


# --- unions: the Avro binary encoding composed where Spark's to_avro cannot write ----------------------

def has_union(s: ConnectSchema | None) -> bool:
    """Whether `s` holds a Connect union (a struct named io.confluent.connect.avro.Union) anywhere."""
    if s is None:
        return False
    if s.name == UNION:
        return True
    return any(has_union(f.schema) for f in s.fields or ()) or has_union(s.key_schema) or has_union(s.value_schema)


class UnionEncoder:
    """The Avro binary encoding of Connect values whose schema holds unions of several types, which Spark's
    `to_avro` writes only as null-or-one-type. Avro's encoding is a concatenation: a record is its fields'
    encodings one after another, a union the branch's index then the branch's encoding, an array or a map
    one block (the count, the items, a 0) as Avro's Java writer writes it. So the value is cut where unions
    are and every part without one is written by `to_avro` with a schema of its own; the rest is bytes
    concatenated by Spark expressions. A union's branch is the one named after its first non-null member, as
    AvroData writes it."""

    def __init__(self, writer: Any, to_avro, *, enhanced: bool = False):
        self.tree, self.names = parse_tree(writer)
        self.to_avro = to_avro
        self.enhanced = enhanced

    def encode(self, col: Column, schema: ConnectSchema) -> Column:
        return self._encode(col, schema, self.tree, None)

    def _encode(self, col: Column, s: ConnectSchema, node: Any, space: str | None) -> Column:
        node = self.names.resolve(node, space)
        if not has_union(s):
            shaped = _reshape_out(col, s, self.enhanced)
            return self.to_avro(shaped, json.dumps(spark_facing(self._standalone(node, space, set()))))
        kind = _type(node)
        if kind == "union":
            return self._union(col, s, node if isinstance(node, list) else node["type"], space)
        if kind in ("record", "error"):
            inner = node["__full"].rpartition(".")[0] or None
            parts = []
            for f in node.get("fields") or []:
                if s.type != "struct" or f["name"] not in {x.name for x in s.fields}:
                    raise DataError(f"the Avro schema's field '{f['name']}' has no field of the Connect schema to "
                                    "write")
                parts.append(self._encode(col[f["name"]], s.field(f["name"]).schema, f["type"], inner))
            return F.concat(*parts) if parts else F.lit(b"")
        if kind == "array" and s.type == "map":  # a map with other than string keys: MapEntry records
            entry = self.names.resolve(node["items"], space)
            fields = {f["name"]: f["type"] for f in entry["fields"]}
            inner = entry["__full"].rpartition(".")[0] or None
            return self._block(F.map_entries(col), lambda e: F.concat(
                self._encode(e["key"], s.key_schema, fields["key"], inner),
                self._encode(e["value"], s.value_schema, fields["value"], inner)))
        if kind == "array":
            return self._block(col, lambda e: self._encode(e, s.value_schema, node["items"], space))
        if kind == "map":
            return self._block(F.map_entries(hashmap_order(col)), lambda e: F.concat(
                self.to_avro(e["key"], '"string"'), self._encode(e["value"], s.value_schema, node["values"], space)))
        raise DataError(f"a Connect {s.type} holding a union cannot be written as Avro {kind}")

    def _union(self, col: Column, s: ConnectSchema, branches: list[Any], space: str | None) -> Column:
        resolved = [self.names.resolve(b, space) for b in branches]
        null_at = next((i for i, b in enumerate(resolved) if _type(b) == "null"), None)
        if null_at is None:
            none = F.raise_error(F.lit(f"{MARKER}a value of the non-optional union {s.name or s.type} is null; "
                                       "AvroConverter cannot write it")).cast("binary")
        else:
            none = F.lit(write_long(null_at))
        if s.name != UNION:  # an optional schema: a union of null and one type
            at = next(i for i, b in enumerate(resolved) if _type(b) != "null")
            return F.when(col.isNull(), none).otherwise(
                F.concat(F.lit(write_long(at)), self._encode(col, s.as_required(), resolved[at], space)))
        others = [i for i, b in enumerate(resolved) if _type(b) != "null"]
        by_member = {_member_name(resolved[i], self.enhanced): i for i in others}
        out = F.when(col.isNull(), none)
        for n, f in enumerate(s.fields):
            # the branch named after the member; else the one in its place (an enum member written as a string
            # without enhanced support: the union AvroData builds has a branch per member, in order)
            i = by_member.get(f.name, others[n] if len(others) == len(s.fields) else None)
            if i is None:
                raise DataError(f"the union's member '{f.name}' is not a branch of the Avro union it is written to")
            out = out.when(col[f.name].isNotNull(), F.concat(
                F.lit(write_long(i)), self._encode(col[f.name], f.schema.as_required(), resolved[i], space)))
        return out.otherwise(none)

    def _block(self, items: Column, encode_item) -> Column:
        """An array or map as one block: the count as an Avro long, the items, then 0 (an empty one is just 0)."""
        body = F.aggregate(F.transform(items, encode_item), F.lit(b""), lambda acc, x: F.concat(acc, x))
        return F.when(F.size(items) == 0, F.lit(b"\x00")).otherwise(
            F.concat(self.to_avro(F.size(items).cast("long"), '"long"'), body, F.lit(b"\x00")))

    def _standalone(self, node: Any, space: str | None, defined: set[str]) -> Any:
        """`node` as a schema of its own: each named type it uses defined in full where first met (by full
        name), then referred to by full name; the parse's bookkeeping left out."""
        node = self.names.resolve(node, space) if isinstance(node, str) else node
        if isinstance(node, str):
            return node
        if isinstance(node, list):
            return [self._standalone(b, space, defined) for b in node]
        kind = node.get("type")
        if isinstance(kind, (dict, list)):
            return self._standalone(kind, space, defined)
        out = {k: v for k, v in node.items() if k != "__full"}
        if kind in ("record", "error", "enum", "fixed"):
            full = node["__full"]
            if full in defined:
                return full
            defined.add(full)
            out["name"] = full
            out.pop("namespace", None)
            space = full.rpartition(".")[0] or None
            if "fields" in node:
                out["fields"] = [dict(f, type=self._standalone(f["type"], space, defined)) for f in node["fields"]]
        elif kind == "array":
            out["items"] = self._standalone(node["items"], space, defined)
        elif kind == "map":
            out["values"] = self._standalone(node["values"], space, defined)
        return out
