"""Confluent's ParquetFormat (`io.confluent.connect.s3.format.parquet.ParquetFormat`) for one object at a time.

Confluent writes Parquet through parquet-avro: the Connect schema becomes an Avro schema (AvroData, see
`connectors.storage.avro_schema`), and parquet-avro's AvroSchemaConverter derives the Parquet schema from it.
Here the same derivation gives an Arrow schema that pyarrow writes: one column per field of the value's
struct, required unless the field is optional, int8/int16/int32 all INT32, strings UTF8, Date/Time/
Timestamp/Decimal with their logical types (Decimal with AvroData's precision, 64 when the Connect schema
does not say), maps with string keys as MAP, other maps as lists of key/value groups.

Where pyarrow cannot write what parquet-avro writes, the file reads back the same but differs on disk:
lists use the three-level LIST layout (parquet-avro's default is the old two-level one), decimals are
FIXED_LEN_BYTE_ARRAY (parquet-avro: BINARY), TIME is marked not UTC-adjusted, and `lz4` is LZ4_RAW.
The Avro schema is stored under `parquet.avro.schema` as parquet-avro stores it.

Only structs make Parquet records: Confluent's ParquetFormat fails on any other value schema, and so does
this one (DataError). An optional struct is written as its record: its Avro schema is a union, which
parquet-avro refuses, but the values that reach a format are never null. Keys and headers objects are
wrapped as Confluent's record views wrap them: `key_view` and `headers_view`, with `wrap` for their values.
"""

from __future__ import annotations

import decimal
from typing import Any, BinaryIO

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from connectors.storage.avro_datums import (
    as_plain_array, check_values, decimal_unscaled_bytes, epoch_days, epoch_millis, millis_of_day, struct_field,
)
from connectors.storage.avro_schema import DEFAULT_DECIMAL_PRECISION, HEADERS_SCHEMA, UNION, avro_schema_text
from ingest.config.configdef import ConfigDef, Importance, Type
from ingest.errors import ConfigError, DataError, Problem
from ingest.records.schema import DATE, DECIMAL, TIME, TIMESTAMP, ConnectSchema, struct

# --- configuration ---------------------------------------------------------------------------------

PARQUET_CODEC_CONFIG = "parquet.codec"
PARQUET_CODEC_DEFAULT = "snappy"
PARQUET_CODECS = ("none", "snappy", "gzip", "brotli", "lz4", "zstd")
"""The values written here: Confluent's list (parquet-mr's codec names and `none`) without `lzo`."""
_PYARROW_CODECS = {"none": "NONE", "snappy": "SNAPPY", "gzip": "GZIP", "brotli": "BROTLI", "lz4": "LZ4",
                   "zstd": "ZSTD"}
# parquet-mr's default levels, where pyarrow's differ (pyarrow: gzip 9, zstd 1).
_LEVELS = {"gzip": 6, "zstd": 3}
_EXTENSIONS = {"none": "", "snappy": ".snappy", "gzip": ".gz", "brotli": ".br", "lz4": ".lz4", "zstd": ".zstd"}

PAGE_SIZE = 64 * 1024
"""Confluent's ParquetRecordWriterProvider page size."""
ROW_GROUP_BYTES = 64 * 1024 * 1024
ROW_GROUP_RECORDS = 1024 * 1024


def _codec_problem(value: Any) -> str | None:
    if value in _PYARROW_CODECS:
        return None
    allowed = ", ".join(PARQUET_CODECS)
    if value == "lzo":
        return f"lzo cannot be written here (pyarrow has no LZO writer); use one of: {allowed}"
    return f"invalid value '{value}'; expected one of: {allowed}"


def validate_parquet_codec(value: str | None) -> str:
    """The codec to use for `parquet.codec` (None = the default); ConfigError naming the allowed values."""
    if value is None:
        return PARQUET_CODEC_DEFAULT
    value = value.strip()  # Confluent trims, and is case-sensitive
    problem = _codec_problem(value)
    if problem:
        raise ConfigError([Problem(PARQUET_CODEC_CONFIG, problem)])
    return value


class _CodecValidator:
    def __call__(self, key: str, value: Any) -> str | None:
        return None if value is None else _codec_problem(str(value).strip())

    def describe(self) -> str:
        return "[" + ", ".join(PARQUET_CODECS) + "]"


def parquet_config_def() -> ConfigDef:
    """The key ParquetFormat adds to a sink's ConfigDef."""
    return ConfigDef().define(PARQUET_CODEC_CONFIG, Type.STRING, PARQUET_CODEC_DEFAULT, _CodecValidator(),
                              Importance.LOW, doc="The Parquet compression codec to be used for output files.")


def parquet_extension(codec: str) -> str:
    """The object name's extension, as Confluent names it: the codec's (`.snappy`, `.gz`, ...) then `.parquet`."""
    return _EXTENSIONS[validate_parquet_codec(codec)] + ".parquet"


# --- record views: keys and headers as Confluent's Parquet writer wraps them --------------------------

RECORD_KEY = "RecordKey"
RECORD_HEADERS = "RecordHeaders"


def key_view(key_schema: ConnectSchema) -> ConnectSchema:
    """The schema of a `.keys.parquet` object: KeyRecordView's struct `RecordKey` with the key as `key`."""
    return struct(RECORD_KEY, ("key", key_schema))


def headers_view() -> ConnectSchema:
    """The schema of a `.headers.parquet` object: HeaderRecordView's struct `RecordHeaders` holding
    `headers`, an array of {key, value} strings."""
    return struct(RECORD_HEADERS, ("headers", HEADERS_SCHEMA))


def wrap(values: pa.Array, field: str) -> pa.StructArray:
    """Values as a one-field struct array (`key` for keys, `headers` for headers), for the views above."""
    return pa.StructArray.from_arrays([as_plain_array(values)], [field])


# --- Connect schema -> Arrow schema (AvroSchemaConverter on AvroData's schema) --------------------------


def _record(schema: ConnectSchema | None) -> ConnectSchema:
    if schema is None:
        raise DataError("Parquet needs a schema: schemaless values (no value schema, e.g. JsonConverter with "
                        "schemas.enable=false) cannot be written as Parquet; use JsonFormat")
    if schema.type != "struct":
        raise DataError(f"ParquetFormat writes structs only, not {schema.type} (Confluent's fails the same way: "
                        "\"Avro schema must be a record\"); use JsonFormat, or HoistField$Value to make the value "
                        "a struct")
    # An optional struct would be a union in Avro; values reaching a format are never null, so the record
    # of its required twin describes them.
    return schema.as_required()


def _decimal_type(s: ConnectSchema) -> pa.DataType:
    precision = s.precision or DEFAULT_DECIMAL_PRECISION
    if not 0 <= s.scale <= precision:
        return pa.binary()  # Avro refuses such a decimal: parquet-avro writes the bytes without annotation
    return pa.decimal128(precision, s.scale) if precision <= 38 else pa.decimal256(precision, s.scale)


_SIMPLE = {"int8": pa.int32(), "int16": pa.int32(), "int32": pa.int32(), "int64": pa.int64(),
           "float32": pa.float32(), "float64": pa.float64(), "boolean": pa.bool_(), "string": pa.string(),
           "bytes": pa.binary()}


def _arrow_type(s: ConnectSchema) -> pa.DataType:
    logical = s.logical
    if logical == DATE:
        return pa.date32()
    if logical == TIME:
        return pa.time32("ms")
    if logical == TIMESTAMP:
        return pa.timestamp("ms", tz="UTC")
    if logical == DECIMAL:
        return _decimal_type(s)
    if s.type in _SIMPLE:
        return _SIMPLE[s.type]
    if s.type == "array":
        return pa.list_(_arrow_field("element", s.value_schema))
    if s.type == "map" and s.key_schema.type == "string" and not s.key_schema.optional:
        return pa.map_(pa.field("key", pa.string(), nullable=False), _arrow_field("value", s.value_schema))
    if s.type == "map":
        entry = pa.struct([_arrow_field("key", s.key_schema), _arrow_field("value", s.value_schema)])
        return pa.list_(pa.field("element", entry, nullable=False))
    if s.name == UNION:  # parquet-avro's group for an Avro union: member0, member1, ... (its non-null branches)
        return pa.struct([_arrow_field(f"member{i}", f.schema) for i, f in enumerate(s.fields)])
    return pa.struct([_arrow_field(f.name, f.schema) for f in s.fields])


def _arrow_field(name: str, s: ConnectSchema) -> pa.Field:
    return pa.field(name, _arrow_type(s), nullable=s.optional)


def arrow_schema(schema: ConnectSchema | None) -> pa.Schema:
    """The columns of a Parquet object of `schema`'s values: one per struct field, nullable when optional,
    typed as parquet-avro types them. DataError for a schema that is not a struct (see the module doc)."""
    record = _record(schema)
    return pa.schema([_arrow_field(f.name, f.schema) for f in record.fields])


# --- Arrow values -> the columns' types ------------------------------------------------------------------


def _nulls(arr: pa.Array) -> pa.Array | None:
    return arr.is_null() if arr.null_count else None


def _placeholder(t: pa.DataType) -> pa.Scalar:
    """Any value of type `t`: what a required column holds where an enclosing struct is null."""
    if pa.types.is_string(t):
        return pa.scalar("", t)
    if pa.types.is_binary(t):
        return pa.scalar(b"", t)
    if pa.types.is_boolean(t):
        return pa.scalar(False, t)
    if pa.types.is_decimal(t):
        return pa.scalar(decimal.Decimal(0), t)
    if pa.types.is_temporal(t):
        return pa.array([0], pa.int64() if t.bit_width == 64 else pa.int32()).cast(t)[0]
    return pa.scalar(0, t)


def _column(arr: pa.Array, s: ConnectSchema, target: pa.DataType, absent: pa.Array | None = None) -> pa.Array:
    """`arr` (values of `s`, as Spark gives them) as a column of type `target`.

    `absent` marks rows where an enclosing struct is null. Spark nulls every field below a null struct, but
    Parquet refuses nulls in a required column whatever its parents, so required values there get a
    placeholder; readers never see it, as the struct above is null.
    """
    logical = s.logical
    if logical == DATE:
        out = epoch_days(arr).cast(target)
    elif logical == TIME:
        out = millis_of_day(arr).cast(target)
    elif logical == TIMESTAMP:
        out = epoch_millis(arr).cast(target)
    elif logical == DECIMAL and pa.types.is_binary(target):
        out = pa.array(decimal_unscaled_bytes(arr, s.scale), pa.binary())
    elif logical == DECIMAL or s.type in _SIMPLE:
        out = arr.cast(target)
    elif s.type == "struct":
        nulls = _nulls(arr)
        below = nulls if absent is None else (absent if nulls is None else pc.or_(absent, nulls))
        children = [_column(struct_field(arr, f.name), f.schema, t.type, below) for f, t in zip(s.fields, target)]
        return pa.StructArray.from_arrays(children, fields=list(target), mask=nulls if s.optional else None)
    else:
        out = _nested(arr, s, target)
    if not s.optional and out.null_count:
        out = pc.fill_null(out, _placeholder(target))
    return out


def _nested(arr: pa.Array, s: ConnectSchema, target: pa.DataType) -> pa.Array:
    """Arrays and maps; a null list of a required field becomes an empty one (Spark leaves its range empty)."""
    mask = _nulls(arr) if s.optional else None
    offsets = arr.offsets
    start, end = offsets[0].as_py(), offsets[-1].as_py()
    relative = pa.array(offsets.to_numpy(zero_copy_only=False) - start, pa.int32())
    if s.type == "array":
        items = _column(arr.values.slice(start, end - start), s.value_schema, target.value_type)
        return pa.ListArray.from_arrays(relative, items, type=target, mask=mask)
    keys = arr.keys.slice(start, end - start)
    items = arr.items.slice(start, end - start)
    if pa.types.is_map(target):
        return pa.MapArray.from_arrays(relative, _column(keys, s.key_schema, target.key_type),
                                       _column(items, s.value_schema, target.item_type), type=target, mask=mask)
    entry = target.value_type
    entries = pa.StructArray.from_arrays([_column(keys, s.key_schema, entry.field("key").type),
                                          _column(items, s.value_schema, entry.field("value").type)],
                                         fields=list(entry))
    return pa.ListArray.from_arrays(relative, entries, type=target, mask=mask)


# --- the writer ------------------------------------------------------------------------------------------


class PositionSink:
    """`out` as pyarrow wants a sink: it asks where it is; `out` need only take writes. Never closes `out`."""

    closed = False

    def __init__(self, out: BinaryIO):
        self._out = out
        self._pos = 0

    def write(self, data: Any) -> int:
        self._out.write(data)
        n = memoryview(data).nbytes
        self._pos += n
        return n

    def tell(self) -> int:
        return self._pos

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass

    def writable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    def readable(self) -> bool:
        return False


class ParquetObjectWriter:
    """Writes one Parquet file to `out`, as Confluent's ParquetRecordWriterProvider does (dictionary encoding,
    64 KiB pages, the codec's parquet-mr level).

    `write(values)` takes a slice of the value column (a struct array, in offset order). Rows wait until a
    row group is full, `row_group_records` rows or about `row_group_bytes` of Arrow data, and go out as
    soon as it is, so memory stays bounded whatever the object's size. `close()` writes the last row group
    and the footer, and leaves `out` open. The same records give the same bytes, however they are sliced
    as long as the record limit is the one that fills the groups.
    """

    def __init__(self, out: BinaryIO, schema: ConnectSchema | None, codec: str, *,
                 row_group_bytes: int = ROW_GROUP_BYTES, row_group_records: int = ROW_GROUP_RECORDS):
        self._codec = validate_parquet_codec(codec)
        self._schema = _record(schema)
        self._arrow = arrow_schema(self._schema)
        self._row_group_bytes = row_group_bytes
        self._row_group_records = row_group_records
        self._pending: list[pa.RecordBatch] = []
        self._pending_rows = self._pending_bytes = 0
        self._records = 0
        self._writer = pq.ParquetWriter(
            PositionSink(out), self._arrow, compression=_PYARROW_CODECS[self._codec],
            compression_level=_LEVELS.get(self._codec), use_dictionary=True, data_page_size=PAGE_SIZE,
            store_schema=False)
        # parquet-avro records the Avro schema it wrote with, and readers with Avro support use it.
        self._writer.add_key_value_metadata({"parquet.avro.schema": avro_schema_text(self._schema),
                                             "writer.model.name": "avro"})
        self._closed = False

    @property
    def records(self) -> int:
        """How many records were written so far."""
        return self._records

    @property
    def buffered_records(self) -> int:
        """Records waiting for their row group: what this writer holds in memory."""
        return self._pending_rows

    def write(self, values: pa.Array) -> None:
        """Append the records of `values` (a struct array of the schema, no nulls)."""
        if self._closed:
            raise ValueError("ParquetObjectWriter is closed")
        values = as_plain_array(values)
        check_values(values, self._schema)
        columns = [_column(struct_field(values, f.name), f.schema, self._arrow.field(f.name).type)
                   for f in self._schema.fields]
        batch = pa.RecordBatch.from_arrays(columns, schema=self._arrow)
        self._pending.append(batch)
        self._pending_rows += batch.num_rows
        self._pending_bytes += batch.nbytes
        self._records += batch.num_rows
        if self._pending_rows >= self._row_group_records or self._pending_bytes >= self._row_group_bytes:
            self._flush(final=False)

    def close(self) -> None:
        """Write the rows still waiting and the footer. `out` stays open."""
        if self._closed:
            return
        self._flush(final=True)
        self._writer.close()
        self._closed = True

    def _flush(self, final: bool) -> None:
        """Write full row groups (all waiting rows when `final`); the rest keeps waiting."""
        table = pa.Table.from_batches(self._pending, schema=self._arrow)
        while table.num_rows:
            # Rows per group: the record limit, or fewer when that many rows would pass the byte limit.
            per_row = table.nbytes / table.num_rows
            by_bytes = int(self._row_group_bytes // per_row) if per_row else self._row_group_records
            rows = max(1, min(self._row_group_records, by_bytes))
            if rows > table.num_rows:
                if not final:
                    break
                rows = table.num_rows
            self._writer.write_table(table.slice(0, rows), row_group_size=rows)
            table = table.slice(rows)
        self._pending = table.to_batches()
        self._pending_rows, self._pending_bytes = table.num_rows, table.nbytes
