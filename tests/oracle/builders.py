"""Builders of oracle cases: schemas in JsonConverter's schema JSON, payloads, the usual records."""

from __future__ import annotations

import base64
from typing import Any

JSON = "org.apache.kafka.connect.json.JsonConverter"
STRING = "org.apache.kafka.connect.storage.StringConverter"
BYTES = "org.apache.kafka.connect.converters.ByteArrayConverter"
NUMBERS = {t: f"org.apache.kafka.connect.converters.{t}Converter"
           for t in ("Short", "Integer", "Long", "Float", "Double")}
SIMPLE_HEADER = "org.apache.kafka.connect.storage.SimpleHeaderConverter"
BOOLEAN = "org.apache.kafka.connect.converters.BooleanConverter"
T = "org.apache.kafka.connect.transforms."
P = "org.apache.kafka.connect.transforms.predicates."

# --- schemas, as JsonConverter writes them ----------------------------------------------------------

_JSON_NAMES = {"float32": "float", "float64": "double"}


def prim(t: str, optional: bool = False, default: Any = None, name: str | None = None,
         version: int | None = None, params: dict | None = None) -> dict:
    s: dict[str, Any] = {"type": _JSON_NAMES.get(t, t), "optional": optional}
    if name is not None:
        s["name"] = name
    if version is not None:
        s["version"] = version
    if params:
        s["parameters"] = params
    if default is not None:
        s["default"] = default
    return s


def struct(name: str | None, *fields: tuple[str, dict], optional: bool = False, version: int | None = None) -> dict:
    s: dict[str, Any] = {"type": "struct", "fields": [{**f, "field": n} for n, f in fields], "optional": optional}
    if name:
        s["name"] = name
    if version is not None:
        s["version"] = version
    return s


def array(items: dict, optional: bool = False) -> dict:
    return {"type": "array", "items": items, "optional": optional}


def map_(keys: dict, values: dict, optional: bool = False) -> dict:
    return {"type": "map", "keys": keys, "values": values, "optional": optional}


def date(optional=False):
    return prim("int32", optional, name="org.apache.kafka.connect.data.Date", version=1)


def time(optional=False):
    return prim("int32", optional, name="org.apache.kafka.connect.data.Time", version=1)


def timestamp(optional=False):
    return prim("int64", optional, name="org.apache.kafka.connect.data.Timestamp", version=1)


def decimal(scale: int, optional=False):
    return prim("bytes", optional, name="org.apache.kafka.connect.data.Decimal", version=1,
                params={"scale": str(scale)})


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def dec(unscaled: int) -> str:
    """A Decimal payload (BASE64 of the unscaled BigInteger's two's complement bytes)."""
    length = max(1, (unscaled.bit_length() + 8) // 8)
    return b64(unscaled.to_bytes(length, "big", signed=True))


# --- the records most transform cases use -----------------------------------------------------------

ADDRESS = struct("shop.Address", ("city", prim("string")), ("zip", prim("int32", True)), optional=True)
ORDER = struct(
    "shop.Order",
    ("id", prim("int64")),
    ("name", prim("string", True)),
    ("qty", prim("int32", True, default=1)),
    ("price", prim("float64", True)),
    ("ratio", prim("float32", True)),
    ("small", prim("int8", True)),
    ("mid", prim("int16", True)),
    ("paid", prim("boolean", True)),
    ("blob", prim("bytes", True)),
    ("amount", decimal(2, True)),
    ("day", date(True)),
    ("at", timestamp(True)),
    ("clock", time(True)),
    ("created", prim("string", True)),
    ("epoch", prim("int64", True)),
    ("address", ADDRESS),
    ("tags", array(prim("string"), True)),
    ("attrs", map_(prim("string"), prim("int32", True), True)),
    version=3,
)
ORDER_ROWS = [
    {"id": 1, "name": "Ada", "qty": 2, "price": 9.5, "ratio": 0.25, "small": -3, "mid": 300, "paid": True,
     "blob": b64(b"\x00\x01\xff"), "amount": dec(12345), "day": 19631, "at": 1656234290123, "clock": 45296789,
     "created": "2022-06-26 09:04:50", "epoch": 1656234290, "address": {"city": "Lyon", "zip": 69001},
     "tags": ["a", "b"], "attrs": {"x": 1, "y": None}},
    {"id": 2, "name": None, "qty": None, "price": -1.5, "ratio": 1e-7, "small": 127, "mid": -32768, "paid": False,
     "blob": b64(b""), "amount": dec(-5), "day": -1, "at": -1, "clock": 0, "created": "1969-12-31 23:59:59",
     "epoch": 0, "address": None, "tags": [], "attrs": {}},
    {"id": 3, "name": "Zoë ☃", "qty": 0, "price": 1e21, "ratio": 3.4028235e38, "small": None, "mid": None,
     "paid": None, "blob": None, "amount": None, "day": None, "at": None, "clock": None, "created": None,
     "epoch": None, "address": {"city": "", "zip": None}, "tags": None, "attrs": None},
]
SCHEMALESS_ROWS = [
    {"id": 1, "name": "Ada", "price": 9.5, "paid": True, "address": {"city": "Lyon", "zip": 69001},
     "tags": ["a", "b"], "created": "2022-06-26 09:04:50", "epoch": 1656234290123},
    {"id": 2, "name": None, "price": -1.25, "paid": False, "address": {"city": "Nice", "zip": None}, "tags": [],
     "created": "1969-12-31 23:59:59", "epoch": 0},
]
HEADERS = [["source", "db1"], ["retries", "3"], ["empty", None]]


def _records(rows: list, key: Any = None, **extra) -> list[dict]:
    out = []
    for i, row in enumerate(rows):
        r = {"topic": extra.get("topic", "orders"), "partition": i % 2 if extra.get("partitions", True) else None,
             "key": key(row) if callable(key) else key, "value": row, "headers": HEADERS if i != 1 else [],
             "timestamp": 1656234290123 + i * 86_400_000}
        out.append(r)
    return out


def chain(case_id: str, config: dict, value_schema: dict | None, records: list[dict],
          key_schema: dict | None = None) -> dict:
    full = {"key.converter": JSON, "value.converter": JSON, **config}
    return {"id": case_id, "kind": "chain", "config": full, "keySchema": key_schema, "valueSchema": value_schema,
            "records": records}


def one(label: str, cls: str, settings: dict | None = None) -> dict:
    """The config of a chain of one transform labelled `label`."""
    return {"transforms": label, f"transforms.{label}.type": cls,
            **{f"transforms.{label}.{k}": v for k, v in (settings or {}).items()}}
