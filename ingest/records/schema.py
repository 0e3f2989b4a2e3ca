"""Kafka Connect's data model: the schema of a record key or value, its JSON form and its Spark type.

A `ConnectSchema` is Kafka's `org.apache.kafka.connect.data.Schema`: a type (int8 … struct), whether it
is optional, an optional name/version/doc/parameters/default, and its parts (struct fields, array items,
map keys and values). Kafka's logical types are named schemas over a primitive: Date (int32 days),
Time (int32 millis of day), Timestamp (int64 epoch millis), Decimal (bytes, parameter `scale`).

`to_json()` is exactly the schema JSON that Kafka's JsonConverter writes (`asJsonSchema`), key order
included; `to_json_text()` its compact text, byte for byte as Jackson prints it. `from_json()` is
JsonConverter's `asConnectSchema`, with its error messages.

Default values are held in their Spark/Python form: int, float, bool, str, bytes, list, dict (struct:
field name -> value; map: key -> value), `datetime.date` (Date), int millis of day (Time),
`datetime.datetime` (Timestamp; naive means UTC) and `decimal.Decimal` (Decimal).
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal as _decimal
import hashlib
import json
import math
import struct as _struct
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any

from ingest.errors import DataError

if TYPE_CHECKING:
    from pyspark.sql.types import DataType

PRIMITIVE_TYPES = ("int8", "int16", "int32", "int64", "float32", "float64", "boolean", "string", "bytes")
TYPES = (*PRIMITIVE_TYPES, "array", "map", "struct")

DATE = "org.apache.kafka.connect.data.Date"
TIME = "org.apache.kafka.connect.data.Time"
TIMESTAMP = "org.apache.kafka.connect.data.Timestamp"
DECIMAL = "org.apache.kafka.connect.data.Decimal"
SCALE = "scale"
PRECISION = "connect.decimal.precision"
"""The parameter Debezium, the JDBC connectors and Confluent's converters use for a decimal's precision."""

# The physical type each logical type must have (Kafka's logical classes build exactly these).
LOGICAL_TYPES = {DATE: "int32", TIME: "int32", TIMESTAMP: "int64", DECIMAL: "bytes"}

# JsonConverter's type names differ from Schema.Type's for floating point only.
_JSON_TYPE_NAMES = {"float32": "float", "float64": "double"}
_TYPES_BY_JSON_NAME = {_JSON_TYPE_NAMES.get(t, t): t for t in TYPES}

BASE64 = "BASE64"
NUMERIC = "NUMERIC"

_EPOCH_DATE = dt.date(1970, 1, 1)
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


@dataclass(frozen=True)
class Field:
    """One field of a struct schema: its name, its position, its schema (Kafka's `Field`)."""

    name: str
    index: int
    schema: ConnectSchema


@dataclass(frozen=True, eq=False)
class ConnectSchema:
    """A Kafka Connect schema. Immutable; equal as Kafka's ConnectSchema.equals (parameters as a map)."""

    type: str
    optional: bool = False
    name: str | None = None
    version: int | None = None
    doc: str | None = None
    parameters: tuple[tuple[str, str], ...] = ()
    default: Any = None
    fields: tuple[Field, ...] = ()
    key_schema: ConnectSchema | None = None
    value_schema: ConnectSchema | None = None

    def __post_init__(self) -> None:
        if self.type not in TYPES:
            raise ValueError(f"unknown Connect schema type '{self.type}'; expected one of {', '.join(TYPES)}")
        params = self.parameters
        if isinstance(params, Mapping):
            params = tuple(params.items())
        object.__setattr__(self, "parameters", tuple((str(k), str(v)) for k, v in (params or ())))
        object.__setattr__(self, "fields", tuple(self.fields or ()))
        if self.type == "struct":
            names = [f.name for f in self.fields]
            if len(set(names)) != len(names):
                raise ValueError(f"struct schema {self.name or ''} has duplicate field names: {names}")
        elif self.fields:
            raise ValueError(f"only a struct schema has fields, not {self.type}")
        if self.type == "array" and self.value_schema is None:
            raise ValueError("an array schema needs its value (item) schema")
        if self.type == "map" and (self.key_schema is None or self.value_schema is None):
            raise ValueError("a map schema needs a key schema and a value schema")

    # --- identity ----------------------------------------------------------------------------------

    def _identity(self) -> tuple:
        return (self.type, self.optional, self.name, self.version, self.doc, frozenset(self.parameters),
                _freeze(self.default), self.fields, self.key_schema, self.value_schema)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ConnectSchema) and self._identity() == other._identity()

    def __hash__(self) -> int:
        return hash(self._identity())

    # --- convenience -------------------------------------------------------------------------------

    @property
    def params(self) -> dict[str, str]:
        return dict(self.parameters)

    @property
    def logical(self) -> str | None:
        """Kafka's logical type name (Date, Time, Timestamp, Decimal) when this schema is one, else None."""
        if self.name in LOGICAL_TYPES and LOGICAL_TYPES[self.name] == self.type:
            return self.name
        return None

    @property
    def scale(self) -> int:
        return int(self.params[SCALE])

    @property
    def precision(self) -> int | None:
        p = self.params.get(PRECISION)
        return int(p) if p is not None else None

    def field(self, name: str) -> Field | None:
        return next((f for f in self.fields if f.name == name), None)

    def as_optional(self) -> ConnectSchema:
        return replace(self, optional=True)

    def as_required(self) -> ConnectSchema:
        return replace(self, optional=False)

    def with_default(self, value: Any) -> ConnectSchema:
        return replace(self, default=value)

    # --- JSON (JsonConverter's schema form) --------------------------------------------------------

    def to_json(self, decimal_format: str = BASE64) -> dict[str, Any]:
        """JsonConverter.asJsonSchema: an ordered dict; floats of float32 defaults are `JavaFloat`."""
        if self.type == "array":
            out: dict[str, Any] = {"type": "array", "items": self.value_schema.to_json(decimal_format)}
        elif self.type == "map":
            out = {"type": "map", "keys": self.key_schema.to_json(decimal_format),
                   "values": self.value_schema.to_json(decimal_format)}
        elif self.type == "struct":
            # Each field is its schema's JSON with "field" appended last, as Kafka does.
            fields = [{**f.schema.to_json(decimal_format), "field": f.name} for f in self.fields]
            out = {"type": "struct", "fields": fields}
        else:
            out = {"type": _JSON_TYPE_NAMES.get(self.type, self.type)}
        out["optional"] = self.optional
        if self.name is not None:
            out["name"] = self.name
        if self.version is not None:
            out["version"] = self.version
        if self.doc is not None:
            out["doc"] = self.doc
        if self.parameters:
            out["parameters"] = dict(self.parameters)
        if self.default is not None:
            out["default"] = value_to_json(self, self.default, decimal_format)
        return out

    def to_json_text(self, decimal_format: str = BASE64) -> str:
        """The schema JSON exactly as Kafka's JsonConverter serialises it (compact, Jackson's number forms)."""
        return dumps(self.to_json(decimal_format))

    @classmethod
    def from_json(cls, node: Mapping[str, Any] | str | bytes) -> ConnectSchema:
        """JsonConverter.asConnectSchema: schema JSON (text or parsed) to a schema; DataError when invalid."""
        if isinstance(node, (str, bytes)):
            node = loads(node)
        schema = _schema_from_json(node)
        if schema is None:
            raise DataError("schema JSON is null; a schemaless value has no ConnectSchema")
        return schema

    def fingerprint(self) -> str:
        """sha256 of the canonical schema JSON (Kafka's order, parameters sorted): stable across runs."""
        return self._fingerprint

    @cached_property
    def _fingerprint(self) -> str:
        canonical = dumps(_canonical(self.to_json()))
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()

    # --- Spark -------------------------------------------------------------------------------------

    def to_spark_type(self) -> DataType:
        """The Spark type holding values of this schema; nullability of parts follows `optional`."""
        from pyspark.sql import types as T

        logical = self.logical
        if logical == DATE:
            return T.DateType()
        if logical == TIMESTAMP:
            return T.TimestampType()
        if logical == DECIMAL:
            precision, scale = self.precision or 38, self.scale
            if not 0 <= scale <= precision <= 38:
                raise ValueError(f"decimal(precision={precision}, scale={scale}) does not fit Spark's DecimalType")
            return T.DecimalType(precision, scale)
        # Time stays an int32 of millis of the day: Spark has no TIME type we rely on.
        simple = {
            "int8": T.ByteType, "int16": T.ShortType, "int32": T.IntegerType, "int64": T.LongType,
            "float32": T.FloatType, "float64": T.DoubleType, "boolean": T.BooleanType,
            "string": T.StringType, "bytes": T.BinaryType,
        }
        if self.type in simple:
            return simple[self.type]()
        if self.type == "array":
            return T.ArrayType(self.value_schema.to_spark_type(), self.value_schema.optional)
        if self.type == "map":
            return T.MapType(self.key_schema.to_spark_type(), self.value_schema.to_spark_type(),
                             self.value_schema.optional)
        return T.StructType([T.StructField(f.name, f.schema.to_spark_type(), f.schema.optional)
                             for f in self.fields])

    @classmethod
    def from_spark_type(cls, data_type: DataType, name: str | None = None, optional: bool = False) -> ConnectSchema:
        return from_spark_type(data_type, name, optional)


# --- constructors, in the spirit of Kafka's Schema constants and SchemaBuilder ---------------------


def _primitive(t: str, optional: bool = False) -> ConnectSchema:
    return ConnectSchema(t, optional)


INT8_SCHEMA = _primitive("int8")
INT16_SCHEMA = _primitive("int16")
INT32_SCHEMA = _primitive("int32")
INT64_SCHEMA = _primitive("int64")
FLOAT32_SCHEMA = _primitive("float32")
FLOAT64_SCHEMA = _primitive("float64")
BOOLEAN_SCHEMA = _primitive("boolean")
STRING_SCHEMA = _primitive("string")
BYTES_SCHEMA = _primitive("bytes")
OPTIONAL_INT8_SCHEMA = _primitive("int8", True)
OPTIONAL_INT16_SCHEMA = _primitive("int16", True)
OPTIONAL_INT32_SCHEMA = _primitive("int32", True)
OPTIONAL_INT64_SCHEMA = _primitive("int64", True)
OPTIONAL_FLOAT32_SCHEMA = _primitive("float32", True)
OPTIONAL_FLOAT64_SCHEMA = _primitive("float64", True)
OPTIONAL_BOOLEAN_SCHEMA = _primitive("boolean", True)
OPTIONAL_STRING_SCHEMA = _primitive("string", True)
OPTIONAL_BYTES_SCHEMA = _primitive("bytes", True)


def struct(name: str | None, *fields: Field | tuple[str, ConnectSchema], optional: bool = False,
           version: int | None = None, doc: str | None = None) -> ConnectSchema:
    """A struct schema; fields as `(name, schema)` pairs (or Fields), indexed in the order given."""
    built = tuple(Field(f.name if isinstance(f, Field) else f[0], i, f.schema if isinstance(f, Field) else f[1])
                  for i, f in enumerate(fields))
    return ConnectSchema("struct", optional, name, version, doc, fields=built)


def array(value_schema: ConnectSchema, optional: bool = False) -> ConnectSchema:
    return ConnectSchema("array", optional, value_schema=value_schema)


def map_(key_schema: ConnectSchema, value_schema: ConnectSchema, optional: bool = False) -> ConnectSchema:
    return ConnectSchema("map", optional, key_schema=key_schema, value_schema=value_schema)


# Kafka's logical builders all set version 1 (Date.builder(), Decimal.builder(scale), ...).
def date(optional: bool = False) -> ConnectSchema:
    return ConnectSchema("int32", optional, DATE, 1)


def time(optional: bool = False) -> ConnectSchema:
    return ConnectSchema("int32", optional, TIME, 1)


def timestamp(optional: bool = False) -> ConnectSchema:
    return ConnectSchema("int64", optional, TIMESTAMP, 1)


def decimal(scale: int, precision: int | None = None, optional: bool = False) -> ConnectSchema:
    """Decimal.builder(scale), plus `connect.decimal.precision` (after `scale`) when the precision is known."""
    params: list[tuple[str, str]] = [(SCALE, str(scale))]
    if precision is not None:
        params.append((PRECISION, str(precision)))
    return ConnectSchema("bytes", optional, DECIMAL, 1, parameters=tuple(params))


DATE_SCHEMA = date()
TIME_SCHEMA = time()
TIMESTAMP_SCHEMA = timestamp()
OPTIONAL_DATE_SCHEMA = date(True)
OPTIONAL_TIME_SCHEMA = time(True)
OPTIONAL_TIMESTAMP_SCHEMA = timestamp(True)


def from_spark_type(data_type: DataType, name: str | None = None, optional: bool = False) -> ConnectSchema:
    """The Connect schema of a Spark type; `name` names a top-level struct. Inverse of `to_spark_type`.

    Spark cannot tell a Time from an int32, so an IntegerType is always int32; TIMESTAMP_NTZ maps to Timestamp.
    """
    from pyspark.sql import types as T

    simple = [
        (T.ByteType, "int8"), (T.ShortType, "int16"), (T.IntegerType, "int32"), (T.LongType, "int64"),
        (T.FloatType, "float32"), (T.DoubleType, "float64"), (T.BooleanType, "boolean"),
        (T.StringType, "string"), (T.BinaryType, "bytes"),
    ]
    for spark_cls, t in simple:
        if isinstance(data_type, spark_cls):
            return ConnectSchema(t, optional, name)
    if isinstance(data_type, T.DateType):
        return date(optional)
    if isinstance(data_type, (T.TimestampType, T.TimestampNTZType)):
        return timestamp(optional)
    if isinstance(data_type, T.DecimalType):
        return decimal(data_type.scale, data_type.precision, optional)
    if isinstance(data_type, T.ArrayType):
        return array(from_spark_type(data_type.elementType, optional=data_type.containsNull), optional)
    if isinstance(data_type, T.MapType):
        return map_(from_spark_type(data_type.keyType),
                    from_spark_type(data_type.valueType, optional=data_type.valueContainsNull), optional)
    if isinstance(data_type, T.StructType):
        fields = [(f.name, from_spark_type(f.dataType, optional=f.nullable)) for f in data_type.fields]
        return struct(name, *fields, optional=optional)
    raise ValueError(f"Spark type {data_type.simpleString()} has no Kafka Connect schema")


# --- JSON text as Jackson writes it -----------------------------------------------------------------


class JavaFloat(float):
    """A float32 value: printed as Java's Float.toString, not Double.toString."""


def loads(text: str | bytes) -> Any:
    """Parse JSON keeping object order and exact decimals (as Kafka's deserializer, USE_BIG_DECIMAL_FOR_FLOATS)."""
    try:
        return json.loads(text, parse_float=_decimal.Decimal)
    except ValueError as e:
        raise DataError(f"schema text is not valid JSON: {e}") from e


def dumps(obj: Any) -> str:
    """Compact JSON text exactly as Jackson writes a JsonNode tree (Kafka's JsonSerializer)."""
    if obj is None:
        return "null"
    if obj is True:
        return "true"
    if obj is False:
        return "false"
    if isinstance(obj, int):
        return str(obj)
    if isinstance(obj, float):
        return _java_float_text(obj, isinstance(obj, JavaFloat))
    if isinstance(obj, _decimal.Decimal):
        return str(obj)  # Python's to-sci-string is BigDecimal.toString: 1.00, 1E-8, 1E+3
    if isinstance(obj, str):
        return quote(obj)
    if isinstance(obj, Mapping):
        return "{" + ",".join(quote(str(k)) + ":" + dumps(v) for k, v in obj.items()) + "}"
    if isinstance(obj, (list, tuple)):
        return "[" + ",".join(dumps(v) for v in obj) + "]"
    raise TypeError(f"cannot write {type(obj).__name__} as JSON")


_SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


def quote(s: str) -> str:
    """A JSON string as Jackson escapes it: short escapes, other controls as \\u00XX (upper-case hex)."""
    out = []
    for ch in s:
        if ch in _SHORT_ESCAPES:
            out.append(_SHORT_ESCAPES[ch])
        elif ord(ch) < 0x20:
            out.append(f"\\u{ord(ch):04X}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _java_float_text(x: float, is_float32: bool) -> str:
    """Double.toString / Float.toString, as Jackson prints numbers; NaN and infinities become strings."""
    if is_float32:
        x = _to_float32(x)
    if math.isnan(x):
        return '"NaN"'
    if math.isinf(x):
        return '"Infinity"' if x > 0 else '"-Infinity"'
    if x == 0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    shortest = _shortest_float32(x) if is_float32 else repr(x)
    sign, digits, exponent = _decimal.Decimal(shortest).normalize().as_tuple()
    if len(digits) == 1:
        # Java prints at least two significant digits' worth (d.d): of those, the closest to the value, which
        # differs from d.0 where one digit was only just enough (Float.MIN_VALUE is 1.4E-45, not 1.0E-45).
        sign, digits, exponent = _decimal.Decimal(f"{_decimal.Decimal(x):.1e}").normalize().as_tuple()
    ds = "".join(map(str, digits))
    e10 = len(ds) - 1 + exponent  # exponent of the leading digit
    if -3 <= e10 < 7:  # Java prints plain decimals in [1e-3, 1e7)
        if e10 >= 0:
            ds = ds.ljust(e10 + 1, "0")
            text = ds[: e10 + 1] + "." + (ds[e10 + 1:] or "0")
        else:
            text = "0." + "0" * (-e10 - 1) + ds
    else:
        text = ds[0] + "." + (ds[1:] or "0") + "E" + str(e10)
    return ("-" if sign else "") + text


def _to_float32(x: float) -> float:
    try:
        return _struct.unpack(">f", _struct.pack(">f", x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)


def _shortest_float32(f: float) -> str:
    """The fewest significant digits that read back as the same float32 (Float.toString's digits)."""
    for digits in range(1, 10):
        s = f"{f:.{digits - 1}e}"
        if _to_float32(float(s)) == f:
            return s
    return repr(f)


def _canonical(node: Any) -> Any:
    if isinstance(node, Mapping):
        return {k: (dict(sorted(v.items())) if k == "parameters" else _canonical(v)) for k, v in node.items()}
    if isinstance(node, list):
        return [_canonical(v) for v in node]
    return node


def _freeze(value: Any) -> Any:
    if isinstance(value, Mapping):
        return tuple((k, _freeze(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, bytearray):
        return bytes(value)
    return value


# --- values <-> JSON (JsonConverter.convertToJson / convertToConnect), used for defaults -------------


def decimal_to_bytes(value: _decimal.Decimal, scale: int) -> bytes:
    """Decimal.fromLogical: the unscaled value's minimal two's-complement big-endian bytes."""
    exact = _decimal.Context(prec=100)  # the default context's 28 digits would round a 38-digit value
    unscaled = int(value.scaleb(scale, exact).to_integral_value(context=exact))
    if _decimal.Decimal(unscaled).scaleb(-scale, exact) != value:
        raise DataError(f"decimal {value} does not have scale {scale}")
    length = (unscaled if unscaled >= 0 else ~unscaled).bit_length() // 8 + 1
    return unscaled.to_bytes(length, "big", signed=True)


def decimal_from_bytes(data: bytes, scale: int) -> _decimal.Decimal:
    """Decimal.toLogical."""
    if not data:
        raise DataError("Invalid bytes for Decimal field: no bytes (a BigInteger needs at least one)")
    return _decimal.Decimal(int.from_bytes(data, "big", signed=True)).scaleb(-scale)


def value_to_json(schema: ConnectSchema, value: Any, decimal_format: str = BASE64) -> Any:
    """One Connect value as JsonConverter.convertToJson makes it (a tree for `dumps`)."""
    if value is None:
        if schema.default is not None:
            return value_to_json(schema, schema.default, decimal_format)
        if schema.optional:
            return None
        raise DataError("Conversion error: null value for field that is required and has no default value")
    logical = schema.logical
    if logical == DATE:
        return value if isinstance(value, int) else (value - _EPOCH_DATE).days
    if logical == TIME:
        if isinstance(value, dt.time):
            return ((value.hour * 60 + value.minute) * 60 + value.second) * 1000 + value.microsecond // 1000
        return int(value)
    if logical == TIMESTAMP:
        if isinstance(value, dt.datetime):
            aware = value if value.tzinfo else value.replace(tzinfo=dt.timezone.utc)
            return (aware - _EPOCH) // dt.timedelta(milliseconds=1)
        return int(value)
    if logical == DECIMAL:
        value = _decimal.Decimal(value)
        if decimal_format.upper() == NUMERIC:
            return value
        return base64.b64encode(decimal_to_bytes(value, schema.scale)).decode("ascii")
    t = schema.type
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
        return base64.b64encode(bytes(value)).decode("ascii")
    if t == "array":
        return [value_to_json(schema.value_schema, v, decimal_format) for v in value]
    if t == "map":
        pairs = [(value_to_json(schema.key_schema, k, decimal_format),
                  value_to_json(schema.value_schema, v, decimal_format)) for k, v in value.items()]
        if schema.key_schema.type == "string":
            return {k: v for k, v in pairs}
        return [[k, v] for k, v in pairs]
    return {f.name: value_to_json(f.schema, value.get(f.name), decimal_format) for f in schema.fields}


def value_from_json(schema: ConnectSchema, node: Any) -> Any:
    """JsonConverter.convertToConnect with a schema, for a parsed JSON tree (defaults)."""
    if node is None:
        if schema.default is not None:
            return schema.default
        if schema.optional:
            return None
        raise DataError(f"Invalid null value for required {schema.type.upper()} field")
    logical = schema.logical
    if logical == DATE:
        return _EPOCH_DATE + dt.timedelta(days=int(node))
    if logical == TIME:
        return int(node)
    if logical == TIMESTAMP:
        return (_EPOCH + dt.timedelta(milliseconds=int(node))).replace(tzinfo=None)
    if logical == DECIMAL:
        if isinstance(node, str):
            return decimal_from_bytes(base64.b64decode(node), schema.scale)
        return _decimal.Decimal(str(node)) if isinstance(node, float) else _decimal.Decimal(node)
    t = schema.type
    if t in ("int8", "int16", "int32", "int64"):
        return int(node)
    if t in ("float32", "float64"):
        return float(node)
    if t == "boolean":
        return bool(node)
    if t == "string":
        return str(node)
    if t == "bytes":
        return base64.b64decode(node)
    if t == "array":
        return [value_from_json(schema.value_schema, v) for v in node]
    if t == "map":
        if schema.key_schema.type == "string":
            return {k: value_from_json(schema.value_schema, v) for k, v in node.items()}
        return {_hashable(value_from_json(schema.key_schema, k)): value_from_json(schema.value_schema, v)
                for k, v in node}
    if not isinstance(node, Mapping):
        raise DataError(f"Struct value must be a JSON object, got {dumps(node)[:80]}")
    return {f.name: value_from_json(f.schema, node.get(f.name)) for f in schema.fields}


def _hashable(v: Any) -> Any:
    return _freeze(v) if isinstance(v, (list, dict)) else v


def _schema_from_json(node: Any) -> ConnectSchema | None:
    """JsonConverter.asConnectSchema, with Kafka's messages."""
    if node is None:
        return None
    if not isinstance(node, Mapping):
        raise DataError(f"Schema must be a JSON object, got {dumps(node)[:80]}")
    type_name = node.get("type")
    if not isinstance(type_name, str):
        raise DataError("Schema must contain 'type' field")
    t = _TYPES_BY_JSON_NAME.get(type_name)
    if t is None:
        raise DataError("Unknown schema type: " + type_name)
    kwargs: dict[str, Any] = {}
    if t == "struct":
        fields_node = node.get("fields")
        if not isinstance(fields_node, list):
            raise DataError("Struct schema's \"fields\" argument is not an array.")
        fields = []
        for i, f in enumerate(fields_node):
            fname = f.get("field") if isinstance(f, Mapping) else None
            if not isinstance(fname, str):
                raise DataError("Struct schema's field name not specified properly")
            fields.append(Field(fname, i, _schema_from_json(f)))
        kwargs["fields"] = tuple(fields)
    elif t == "array":
        items = node.get("items")
        if items is None:
            raise DataError("Array schema did not specify the element type")
        kwargs["value_schema"] = _schema_from_json(items)
    elif t == "map":
        keys, values = node.get("keys"), node.get("values")
        if keys is None:
            raise DataError("Map schema did not specify the key type")
        if values is None:
            raise DataError("Map schema did not specify the value type")
        kwargs["key_schema"], kwargs["value_schema"] = _schema_from_json(keys), _schema_from_json(values)
    # Kafka reads these only when they have the right JSON type, and ignores them otherwise.
    optional = node.get("optional") is True
    name = node.get("name") if isinstance(node.get("name"), str) else None
    version = node.get("version")
    version = version if isinstance(version, int) and not isinstance(version, bool) else None
    doc = node.get("doc") if isinstance(node.get("doc"), str) else None
    params_node = node.get("parameters")
    params: list[tuple[str, str]] = []
    if isinstance(params_node, Mapping):
        for k, v in params_node.items():
            if not isinstance(v, str):
                raise DataError("Schema parameters must have string values.")
            params.append((k, v))
    schema = ConnectSchema(t, optional, name, version, doc, tuple(params), **kwargs)
    if node.get("default") is not None:
        schema = replace(schema, default=value_from_json(schema, node["default"]))
    return schema

