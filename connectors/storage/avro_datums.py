"""Arrow values of a Connect schema as the datums Avro writes (Confluent's `AvroData.fromConnectData`), and
the checks and conversions of those values that ParquetFormat shares (connectors/storage/parquet.py).

The values come from a Spark column handed over as Arrow arrays; they are checked as Connect's
`ConnectSchema.validateValue` would check them (`check_values`), vectorised, then converted: logical
types to their Avro ints, longs and bytes (`epoch_millis`, `epoch_days`, `millis_of_day`,
`decimal_unscaled_bytes`), and records, arrays and maps to the Python datums fastavro encodes exactly
as Avro's GenericDatumWriter encodes AvroData's (`avro_datums`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from connectors.storage.avro_schema import FIXED_SIZE, PRIMITIVES, UNION
from ingest.errors import DataError
from ingest.records.schema import DATE, DECIMAL, TIME, TIMESTAMP, ConnectSchema

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
    if s.type in PRIMITIVES:
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
    return PRIMITIVES[s.type]
