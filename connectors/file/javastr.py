"""`String.valueOf` of Connect data, as the JVM prints it: what FileStreamSink writes for a value."""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import math
from typing import Any

from ingest.records.schema import TIME, _java_float_text

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def _java_hash(s: str) -> int:
    h = 0
    for ch in s.encode("utf-16-be").decode("utf-16-be"):
        h = (31 * h + ord(ch)) & 0xFFFFFFFF
    return h


def _hashmap_order(keys: list[Any]) -> list[Any]:
    """Iteration order of a java.util.HashMap filled with `keys` in order (JsonConverter builds one): strings
    hash as java.lang.String, integers as java.lang.Integer/Long."""
    cap = 16
    while len(keys) > cap * 0.75:
        cap *= 2
    def bucket(k: Any) -> int:
        if isinstance(k, int) and not isinstance(k, bool):
            h = (k ^ (k >> 32)) & 0xFFFFFFFF if not -2**31 <= k < 2**31 else k & 0xFFFFFFFF
        else:
            h = _java_hash(str(k))
        return (h ^ (h >> 16)) & (cap - 1)
    return [k for _, _, k in sorted((bucket(k), i, k) for i, k in enumerate(keys))]


def _double(v: float) -> str:
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    if v == int(v) and abs(v) < 1e7:
        return f"{int(v)}.0" if v != 0 or math.copysign(1, v) > 0 else "-0.0"
    r = repr(v)
    if "e" in r:
        mantissa, exp = r.split("e")
        if "." not in mantissa:
            mantissa += ".0"
        return f"{mantissa}E{int(exp)}"
    return r


def java_string(value: Any, schema: Any = None) -> str:
    if value is None:
        return "null"
    if hasattr(value, "toPython"):  # a Spark VariantVal: schemaless JSON
        value = value.toPython()
        schema = None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        if getattr(schema, "name", None) == TIME:  # a java.util.Date on 1970-01-01
            return java_string(_EPOCH + dt.timedelta(milliseconds=value))
        return str(value)
    if isinstance(value, float):
        if getattr(schema, "type", None) == "float32":  # Float.toString: the shortest text of the float
            return _java_float_text(value, True)
        return _double(value)
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, str):
        return value
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(bytes(value)).decode()
    if isinstance(value, dt.datetime):
        return value.strftime("%a %b %d %H:%M:%S UTC %Y")
    if isinstance(value, dt.date):
        return value.strftime("%a %b %d 00:00:00 UTC %Y")
    if hasattr(value, "asDict"):  # a Spark Row: a Connect Struct
        fields = getattr(schema, "fields", None) or ()
        d = value.asDict(recursive=False)
        parts = []
        for name in d:
            if d[name] is not None:
                sub = next((f.schema for f in fields if f.name == name), None)
                parts.append(f"{name}={java_string(d[name], sub)}")
        return "Struct{" + ",".join(parts) + "}"
    if isinstance(value, dict):  # JsonConverter reads every map, typed or not, into a java.util.HashMap
        key_schema, value_schema = getattr(schema, "key_schema", None), getattr(schema, "value_schema", None)
        return "{" + ", ".join(f"{java_string(k, key_schema)}={java_string(value[k], value_schema)}"
                               for k in _hashmap_order(list(value))) + "}"
    if isinstance(value, (list, tuple)):
        element = getattr(schema, "value_schema", None)
        return "[" + ", ".join(java_string(v, element) for v in value) + "]"
    return str(value)
