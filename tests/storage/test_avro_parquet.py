"""AvroFormat and ParquetFormat objects: Confluent's schemas, values that read back, codecs, reproducible bytes."""

from __future__ import annotations

import bz2
import datetime as dt
import decimal
import io
import json
import lzma
import struct
import zlib

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql.pandas.types import to_arrow_type

from connectors.storage.avro import (
    AVRO_CODEC_CONFIG, AVRO_CODECS, SYNC_INTERVAL, AvroWriter, avro_config_def, sync_marker, validate_avro_codec,
)
from connectors.storage.avro_datums import decimal_unscaled_bytes
from connectors.storage.avro_schema import HEADERS_SCHEMA, avro_schema, avro_schema_text
from connectors.storage.parquet import (
    PARQUET_CODEC_CONFIG, PARQUET_CODECS, ParquetObjectWriter, arrow_schema, headers_view, key_view,
    parquet_config_def, parquet_extension, validate_parquet_codec, wrap,
)
from ingest.errors import ConfigError, DataError
from ingest.records import schema as S

UTC = dt.timezone.utc

ORDER = S.struct(None, ("id", S.INT64_SCHEMA), ("title", S.STRING_SCHEMA), ("quantity", S.INT16_SCHEMA))

INNER = S.struct("com.example.Inner", ("a", S.OPTIONAL_INT32_SCHEMA))
WIDE = S.struct(
    None,
    ("price", S.decimal(2, optional=True)),
    ("exact", S.decimal(3, precision=10, optional=True)),
    ("day", S.date(True)),
    ("at", S.time(True)),
    ("ts", S.timestamp(True)),
    ("raw", S.OPTIONAL_BYTES_SCHEMA),
    ("tags", S.array(S.STRING_SCHEMA, optional=True)),
    ("counts", S.map_(S.STRING_SCHEMA, S.INT32_SCHEMA, optional=True)),
    ("names", S.map_(S.INT32_SCHEMA, S.STRING_SCHEMA, optional=True)),
    ("inner", INNER.as_optional()),
    optional=True,
)


def spark_arrow(schema: S.ConnectSchema, rows: list) -> pa.Array:
    """Values as Spark hands a column of `schema` to mapInArrow (its Arrow types, from the Spark type)."""
    return pa.array(rows, type=to_arrow_type(schema.to_spark_type(), timezone="UTC"))


def compact(tree) -> str:
    return json.dumps(tree, separators=(",", ":"), ensure_ascii=False)


# --- Avro schemas, written out by hand as Confluent's AvroData builds them ---------------------------


def test_order_schema_is_confluents():
    expected = ('{"type":"record","name":"ConnectDefault","namespace":"io.confluent.connect.avro","fields":['
                '{"name":"id","type":"long"},{"name":"title","type":"string"},'
                '{"name":"quantity","type":{"type":"int","connect.type":"int16"}}]}')
    assert avro_schema_text(ORDER) == expected
    named = S.struct("shop.Order", *[(f.name, f.schema) for f in ORDER.fields], version=3, doc="an order")
    assert avro_schema_text(named) == (
        '{"type":"record","name":"Order","namespace":"shop","fields":[{"name":"id","type":"long"},'
        '{"name":"title","type":"string"},{"name":"quantity","type":{"type":"int","connect.type":"int16"}}],'
        '"connect.doc":"an order","connect.version":3,"connect.name":"shop.Order"}')


def test_optional_struct_with_logical_types_maps_and_a_nested_struct():
    decimal_props = {"connect.version": 1, "connect.name": "org.apache.kafka.connect.data.Decimal",
                     "logicalType": "decimal"}
    expected = ["null", {
        "type": "record", "name": "ConnectDefault", "namespace": "io.confluent.connect.avro", "fields": [
            {"name": "price", "type": ["null", {"type": "bytes", "scale": 2, "precision": 64, "connect.version": 1,
                                                "connect.parameters": {"scale": "2"},
                                                "connect.name": decimal_props["connect.name"],
                                                "logicalType": "decimal"}], "default": None},
            {"name": "exact", "type": ["null", {"type": "bytes", "scale": 3, "precision": 10, "connect.version": 1,
                                                "connect.parameters": {"scale": "3",
                                                                       "connect.decimal.precision": "10"},
                                                "connect.name": decimal_props["connect.name"],
                                                "logicalType": "decimal"}], "default": None},
            {"name": "day", "type": ["null", {"type": "int", "connect.version": 1,
                                              "connect.name": "org.apache.kafka.connect.data.Date",
                                              "logicalType": "date"}], "default": None},
            {"name": "at", "type": ["null", {"type": "int", "connect.version": 1,
                                             "connect.name": "org.apache.kafka.connect.data.Time",
                                             "logicalType": "time-millis"}], "default": None},
            {"name": "ts", "type": ["null", {"type": "long", "connect.version": 1,
                                             "connect.name": "org.apache.kafka.connect.data.Timestamp",
                                             "logicalType": "timestamp-millis"}], "default": None},
            {"name": "raw", "type": ["null", "bytes"], "default": None},
            {"name": "tags", "type": ["null", {"type": "array", "items": "string"}], "default": None},
            {"name": "counts", "type": ["null", {"type": "map", "values": "int"}], "default": None},
            {"name": "names", "type": ["null", {"type": "array", "items": {
                "type": "record", "name": "MapEntry",
                "fields": [{"name": "key", "type": "int"}, {"name": "value", "type": "string"}]}}],
             "default": None},
            {"name": "inner", "type": ["null", {"type": "record", "name": "Inner", "namespace": "com.example",
                                                "fields": [{"name": "a", "type": ["null", "int"], "default": None}],
                                                "connect.name": "com.example.Inner"}], "default": None},
        ]}]
    assert avro_schema_text(WIDE) == compact(expected)


def test_defaults_versions_and_parameters():
    flag = S.ConnectSchema("int8", name="flag", version=2, doc="a flag", parameters={"p": "v", "avro.java": "x"},
                           default=7)
    schema = S.struct(None,
                      ("n", S.INT32_SCHEMA.with_default(42)),
                      ("label", S.OPTIONAL_STRING_SCHEMA.with_default("x")),
                      ("flag", flag),
                      ("blob", S.BYTES_SCHEMA.with_default(b"\x00\xe9")),
                      ("ratio", S.FLOAT32_SCHEMA.with_default(0.1)),
                      ("sub", S.struct(None, ("a", S.INT32_SCHEMA), optional=True).with_default({"a": 1})))
    fields = {f["name"]: f for f in avro_schema(schema)["fields"]}
    assert fields["n"] == {"name": "n", "type": {"type": "int", "connect.default": 42}, "default": 42}
    # An optional schema with a default puts null last, so the default matches the union's first branch.
    assert fields["label"] == {"name": "label", "type": [{"type": "string", "connect.default": "x"}, "null"],
                               "default": "x"}
    assert fields["flag"] == {"name": "flag", "type": {
        "type": "int", "connect.doc": "a flag", "connect.version": 2,
        "connect.parameters": {"p": "v", "avro.java": "x"}, "connect.default": 7, "connect.name": "flag",
        "connect.type": "int8", "avro.java": "x"}, "default": 7}
    assert fields["blob"]["default"] == "\x00\xe9"  # bytes as ISO-8859-1 characters
    # The field default is the double Avro's Field stores; connect.default keeps the float.
    assert '"connect.default":0.1},"default":0.10000000149011612}' in avro_schema_text(schema)
    # An optional struct's union starts with null: its default does not fit and Avro drops it.
    assert "default" not in fields["sub"]
    assert fields["sub"]["type"][1]["connect.default"] == {"a": 1}
    assert fields["sub"]["type"][1]["name"] == "ConnectDefault2"


def test_records_are_named_once_then_referenced():
    point = S.struct("geo.Point", ("x", S.FLOAT64_SCHEMA))
    shape = S.struct("geo.Shape", ("a", point), ("b", point), ("c", point.as_optional()),
                     ("u", S.struct(None, ("v", S.INT32_SCHEMA))), ("w", S.struct(None, ("v", S.INT64_SCHEMA))))
    fields = avro_schema(shape)["fields"]
    assert fields[0]["type"]["name"] == "Point"
    assert fields[1]["type"] == "Point"
    assert fields[2]["type"] == ["null", "Point"]
    assert fields[3]["type"]["name"] == "ConnectDefault" and fields[4]["type"]["name"] == "ConnectDefault2"
    assert fields[3]["type"]["namespace"] == "io.confluent.connect.avro"
    clash = S.struct("geo.Shape", ("a", point), ("b", S.struct("geo.Point", ("y", S.FLOAT64_SCHEMA))))
    with pytest.raises(DataError, match="Can't redefine: geo.Point"):
        avro_schema(clash)


def test_headers_and_primitive_schemas():
    assert avro_schema(HEADERS_SCHEMA) == {"type": "array", "items": {
        "type": "record", "name": "ConnectDefault", "namespace": "io.confluent.connect.avro",
        "fields": [{"name": "key", "type": "string"}, {"name": "value", "type": "string"}]}}
    assert avro_schema(S.STRING_SCHEMA) == "string"
    assert avro_schema(S.OPTIONAL_INT64_SCHEMA) == ["null", "long"]
    assert avro_schema_text(S.INT8_SCHEMA) == '{"type":"int","connect.type":"int8"}'


def test_names_avro_refuses_and_schemaless_values_fail():
    with pytest.raises(DataError, match="Illegal character in: my-field"):
        avro_schema(S.struct(None, ("my-field", S.INT32_SCHEMA)))
    with pytest.raises(DataError, match="Illegal initial character: 1st"):
        avro_schema(S.struct(None, ("1st", S.INT32_SCHEMA)))
    with pytest.raises(DataError, match="schemaless"):
        AvroWriter(io.BytesIO(), None, "null", "k")
    with pytest.raises(DataError, match="schemaless"):
        ParquetObjectWriter(io.BytesIO(), None, "snappy")


# --- the Avro container ---------------------------------------------------------------------------------


def _read_long(buf: bytes, pos: int) -> tuple[int, int]:
    shift = n = 0
    while True:
        b = buf[pos]
        pos += 1
        n |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return (n >> 1) ^ -(n & 1), pos


def _decompress(codec: str, data: bytes) -> bytes:
    if codec == "null":
        return data
    if codec == "deflate":
        return zlib.decompress(data, -15)
    if codec == "snappy":
        size = shift = 0
        for b in data:  # a snappy block starts with its uncompressed length, a plain varint
            size |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                break
        raw = pa.decompress(data[:-4], decompressed_size=size, codec="snappy", asbytes=True)
        assert struct.unpack(">I", data[-4:])[0] == zlib.crc32(raw)
        return raw
    if codec == "bzip2":
        return bz2.decompress(data)
    if codec == "xz":
        return lzma.decompress(data)
    assert codec == "zstandard"
    return pa.CompressedInputStream(pa.BufferReader(data), "zstd").read()


def read_container(data: bytes):
    """An Avro object container file, read by the spec: metadata, sync marker, blocks, records."""
    assert data[:4] == b"Obj\x01"
    pos, meta = 4, []
    count, pos = _read_long(data, pos)
    for _ in range(count):
        n, pos = _read_long(data, pos)
        key = data[pos:pos + n].decode()
        pos += n
        n, pos = _read_long(data, pos)
        meta.append((key, data[pos:pos + n]))
        pos += n
    end, pos = _read_long(data, pos)
    assert end == 0
    sync, pos = data[pos:pos + 16], pos + 16
    meta = dict(meta) | {"order": [k for k, _ in meta]}
    schema = fastavro.parse_schema(json.loads(meta["avro.schema"]))
    blocks, records = [], []
    while pos < len(data):
        count, pos = _read_long(data, pos)
        size, pos = _read_long(data, pos)
        raw = _decompress(meta["avro.codec"].decode(), data[pos:pos + size])
        pos += size
        assert data[pos:pos + 16] == sync
        pos += 16
        blocks.append((count, len(raw)))
        stream = io.BytesIO(raw)
        records += [fastavro.schemaless_reader(stream, schema, schema) for _ in range(count)]
        assert stream.tell() == len(raw)
    return meta, sync, blocks, records


WIDE_ROWS = [
    {"price": decimal.Decimal("-1.28"), "exact": decimal.Decimal("1234567.891"), "day": dt.date(2024, 2, 29),
     "at": 3_723_004, "ts": dt.datetime(2024, 1, 2, 3, 4, 5, 678000, tzinfo=UTC), "raw": b"\x00\xff",
     "tags": ["a", "b"], "counts": [("x", 1), ("y", 2)], "names": [(1, "one"), (-2, "minus two")],
     "inner": {"a": 5}},
    {"price": None, "exact": None, "day": None, "at": None, "ts": None, "raw": None, "tags": None, "counts": None,
     "names": None, "inner": None},
    {"price": decimal.Decimal("0.00"), "exact": decimal.Decimal("-0.001"), "day": dt.date(1969, 12, 31), "at": 0,
     "ts": dt.datetime(1969, 12, 31, 23, 59, 59, 999000, tzinfo=UTC), "raw": b"", "tags": [], "counts": [],
     "names": [], "inner": {"a": None}},
]

WIDE_READ_BACK = [
    {"price": decimal.Decimal("-1.28"), "exact": decimal.Decimal("1234567.891"), "day": dt.date(2024, 2, 29),
     "at": dt.time(1, 2, 3, 4000), "ts": dt.datetime(2024, 1, 2, 3, 4, 5, 678000, tzinfo=UTC), "raw": b"\x00\xff",
     "tags": ["a", "b"], "counts": {"x": 1, "y": 2},
     "names": [{"key": 1, "value": "one"}, {"key": -2, "value": "minus two"}], "inner": {"a": 5}},
    {k: None for k in WIDE_ROWS[1]},
    {"price": decimal.Decimal("0.00"), "exact": decimal.Decimal("-0.001"), "day": dt.date(1969, 12, 31),
     "at": dt.time(0, 0), "ts": dt.datetime(1969, 12, 31, 23, 59, 59, 999000, tzinfo=UTC), "raw": b"", "tags": [],
     "counts": {}, "names": [], "inner": {"a": None}},
]


def write_avro(schema, values: pa.Array, codec="null", seed="topics/t/partition=0/t+0+0000000000.avro",
               slice_size=None) -> bytes:
    out = io.BytesIO()
    writer = AvroWriter(out, schema, codec, seed)
    step = slice_size or max(len(values), 1)
    for start in range(0, len(values), step):
        writer.write(values.slice(start, step))
    writer.close()
    assert not out.closed
    return out.getvalue()


def test_avro_round_trip_of_spark_values():
    data = write_avro(WIDE, spark_arrow(WIDE, WIDE_ROWS), slice_size=2)
    meta, _, blocks, records = read_container(data)
    assert meta["order"] == ["avro.schema", "avro.codec"]  # Java's HashMap puts avro.schema first
    assert meta["avro.schema"].decode() == avro_schema_text(WIDE)
    assert meta["avro.codec"] == b"null"
    assert records == WIDE_READ_BACK
    assert list(fastavro.reader(io.BytesIO(data))) == WIDE_READ_BACK  # and fastavro's own reader agrees


def test_avro_order_records_and_book_values():
    values = spark_arrow(ORDER, [{"id": 1, "title": "Kafka Connect", "quantity": 2},
                                 {"id": -(2**63), "title": "ünïcode ✓", "quantity": -(2**15)}])
    _, _, _, records = read_container(write_avro(ORDER, values))
    assert records == [{"id": 1, "title": "Kafka Connect", "quantity": 2},
                       {"id": -(2**63), "title": "ünïcode ✓", "quantity": -(2**15)}]


def test_decimals_are_encoded_as_connect_encodes_them():
    values = [decimal.Decimal(v) for v in ("0", "-1", "1", "-128", "127", "128", "-129", "-32768", "255",
                                           "99999999999999999999999999999999999999",
                                           "-99999999999999999999999999999999999999")]
    arr = pa.array(values + [None], pa.decimal128(38, 0))
    assert decimal_unscaled_bytes(arr.slice(1), 0) == [S.decimal_to_bytes(v, 0) for v in values[1:]] + [None]
    assert decimal_unscaled_bytes(arr, 0)[3] == b"\x80"  # BigInteger.toByteArray, one byte (fastavro: two)
    with pytest.raises(DataError, match="mismatching scale"):
        decimal_unscaled_bytes(pa.array([decimal.Decimal("1.5")], pa.decimal128(5, 1)), 2)


@pytest.mark.parametrize("codec", AVRO_CODECS)
def test_avro_every_codec(codec):
    rows = WIDE_ROWS * 400
    data = write_avro(WIDE, spark_arrow(WIDE, rows), codec=codec, slice_size=333)
    meta, _, blocks, records = read_container(data)
    assert meta["avro.codec"] == codec.encode()
    assert records == WIDE_READ_BACK * 400
    if codec != "null":
        assert len(data) < len(write_avro(WIDE, spark_arrow(WIDE, rows)))
    if codec in ("null", "deflate", "bzip2", "xz"):  # fastavro needs extra libraries for the other two
        assert list(fastavro.reader(io.BytesIO(data))) == WIDE_READ_BACK * 400


def test_avro_bytes_depend_on_the_seed_and_the_records_only():
    rows = [{"id": i, "title": f"book {i}", "quantity": i % 100} for i in range(20_000)]
    values = spark_arrow(ORDER, rows)
    first = write_avro(ORDER, values, "snappy", seed="a.avro", slice_size=1000)
    assert write_avro(ORDER, values, "snappy", seed="a.avro", slice_size=1000) == first
    assert write_avro(ORDER, values, "snappy", seed="a.avro", slice_size=777) == first  # however sliced
    assert write_avro(ORDER, values, "snappy", seed=b"a.avro") == first
    other = write_avro(ORDER, values, "snappy", seed="b.avro", slice_size=1000)
    assert other != first and len(other) == len(first)
    _, sync, blocks, _ = read_container(first)
    assert sync == sync_marker("a.avro") != sync_marker("b.avro")
    assert first.count(sync) == len(blocks) + 1


def test_avro_blocks_are_cut_as_avros_data_file_writer_cuts_them():
    rows = [{"id": i, "title": "x" * (i % 50), "quantity": 1} for i in range(30_000)]
    _, _, blocks, records = read_container(write_avro(ORDER, spark_arrow(ORDER, rows), slice_size=4999))
    assert len(records) == 30_000 and len(blocks) > 5
    assert all(size >= SYNC_INTERVAL for _, size in blocks[:-1])  # a block ends with the record that fills it
    assert all(size < SYNC_INTERVAL + 100 for _, size in blocks)


def test_required_nulls_and_out_of_range_values_are_data_errors():
    values = pa.array([{"id": 1, "title": None, "quantity": 1}],
                      pa.struct([("id", pa.int64()), ("title", pa.string()), ("quantity", pa.int16())]))
    with pytest.raises(DataError, match='null used for required field: "title", schema type: STRING'):
        write_avro(ORDER, values)
    with pytest.raises(DataError, match='required field: "title"'):
        ParquetObjectWriter(io.BytesIO(), ORDER, "snappy").write(values)
    wide = pa.array([{"id": 1, "title": "t", "quantity": 70_000}],
                    pa.struct([("id", pa.int64()), ("title", pa.string()), ("quantity", pa.int32())]))
    with pytest.raises(DataError, match="70000 does not fit Connect type int16"):
        write_avro(ORDER, wide)
    # A null struct may hold anything in its required fields: only present structs are checked.
    holder = S.struct(None, ("o", ORDER.as_optional()))
    nested = pa.array([{"o": None}, {"o": {"id": 2, "title": "t", "quantity": 3}}],
                      pa.struct([("o", values.type)]))
    assert read_container(write_avro(holder, nested))[3] == [
        {"o": None}, {"o": {"id": 2, "title": "t", "quantity": 3}}]
    out = io.BytesIO()
    writer = ParquetObjectWriter(out, holder, "snappy")
    writer.write(spark_arrow(holder, [{"o": None}, {"o": {"id": 2, "title": "t", "quantity": 3}}]))
    writer.close()
    assert pq.read_table(io.BytesIO(out.getvalue())).to_pylist() == [
        {"o": None}, {"o": {"id": 2, "title": "t", "quantity": 3}}]
    # Below a null struct, even a present struct's required fields may be null.
    deep = S.struct(None, ("o", S.struct(None, ("inner", S.struct(None, ("x", S.INT32_SCHEMA))), optional=True)))
    inner = pa.StructArray.from_arrays([pa.array([None, 1], pa.int32())], ["x"])
    top = pa.StructArray.from_arrays([pa.StructArray.from_arrays([inner], ["inner"], mask=pa.array([True, False]))],
                                     ["o"])
    assert read_container(write_avro(deep, top))[3] == [{"o": None}, {"o": {"inner": {"x": 1}}}]
    out = io.BytesIO()
    writer = ParquetObjectWriter(out, deep, "snappy")
    writer.write(top)
    writer.close()
    assert pq.read_table(io.BytesIO(out.getvalue())).to_pylist() == [{"o": None}, {"o": {"inner": {"x": 1}}}]
    with pytest.raises(DataError, match="tombstone"):
        write_avro(ORDER, pa.array([None], values.type))
    with pytest.raises(DataError, match="no field 'quantity'"):
        write_avro(ORDER, pa.array([{"id": 1, "title": "t"}], pa.struct([("id", pa.int64()), ("title", pa.string())])))


# --- configuration -----------------------------------------------------------------------------------------


def test_codec_keys_are_validated_with_the_allowed_values_named():
    assert validate_avro_codec(None) == "null" and validate_avro_codec("zstandard") == "zstandard"
    with pytest.raises(ConfigError) as e:
        validate_avro_codec("lz4")
    assert e.value.problems[0].key == AVRO_CODEC_CONFIG
    assert "null, deflate, snappy, bzip2, xz, zstandard" in str(e.value)
    assert validate_parquet_codec(None) == "snappy" and validate_parquet_codec(" zstd ") == "zstd"
    with pytest.raises(ConfigError) as e:
        validate_parquet_codec("lzo")
    assert e.value.problems[0].key == PARQUET_CODEC_CONFIG
    assert "lzo cannot be written" in str(e.value) and "none, snappy, gzip, brotli, lz4, zstd" in str(e.value)
    with pytest.raises(ConfigError, match="invalid value 'SNAPPY'"):  # Confluent's check is case-sensitive
        validate_parquet_codec("SNAPPY")
    with pytest.raises(ConfigError, match="lzo cannot be written"):
        ParquetObjectWriter(io.BytesIO(), ORDER, "lzo")
    _, problems = avro_config_def().validate({AVRO_CODEC_CONFIG: "gzip"})
    assert [p.key for p in problems] == [AVRO_CODEC_CONFIG]
    values, problems = parquet_config_def().validate({PARQUET_CODEC_CONFIG: "lzo"})
    assert [p.key for p in problems] == [PARQUET_CODEC_CONFIG] and "pyarrow" in problems[0].message
    assert parquet_config_def().validate({})[0][PARQUET_CODEC_CONFIG] == "snappy"
    assert parquet_extension("snappy") == ".snappy.parquet" and parquet_extension("none") == ".parquet"


# --- Parquet -----------------------------------------------------------------------------------------------


def read_parquet(data: bytes):
    return pq.ParquetFile(io.BytesIO(data))


def test_parquet_columns_are_typed_as_parquet_avro_types_them():
    schema = S.struct(None, ("i8", S.INT8_SCHEMA), ("i16", S.OPTIONAL_INT16_SCHEMA), ("i32", S.INT32_SCHEMA),
                      ("s", S.STRING_SCHEMA), *[(f.name, f.schema) for f in WIDE.fields])
    assert arrow_schema(schema) == pa.schema([
        pa.field("i8", pa.int32(), nullable=False),
        pa.field("i16", pa.int32()),
        pa.field("i32", pa.int32(), nullable=False),
        pa.field("s", pa.string(), nullable=False),
        pa.field("price", pa.decimal256(64, 2)),
        pa.field("exact", pa.decimal128(10, 3)),
        pa.field("day", pa.date32()),
        pa.field("at", pa.time32("ms")),
        pa.field("ts", pa.timestamp("ms", tz="UTC")),
        pa.field("raw", pa.binary()),
        pa.field("tags", pa.list_(pa.field("element", pa.string(), nullable=False))),
        pa.field("counts", pa.map_(pa.field("key", pa.string(), nullable=False),
                                   pa.field("value", pa.int32(), nullable=False))),
        pa.field("names", pa.list_(pa.field("element", pa.struct([pa.field("key", pa.int32(), nullable=False),
                                                                  pa.field("value", pa.string(), nullable=False)]),
                                            nullable=False))),
        pa.field("inner", pa.struct([pa.field("a", pa.int32())])),
    ])
    out = io.BytesIO()
    writer = ParquetObjectWriter(out, schema, "snappy")
    writer.write(spark_arrow(schema, [{"i8": -128, "i16": None, "i32": 1, "s": "é", **WIDE_ROWS[0]}]))
    writer.close()
    parquet_schema = read_parquet(out.getvalue()).schema
    columns = {c.path: c for c in (parquet_schema.column(i) for i in range(len(parquet_schema)))}
    assert columns["i8"].physical_type == "INT32" and columns["i8"].max_definition_level == 0
    assert columns["i16"].physical_type == "INT32" and columns["i16"].max_definition_level == 1
    assert str(columns["i8"].logical_type) == "None"  # no INT(8) annotation, as parquet-avro writes it
    assert str(columns["s"].logical_type) == "String"
    assert str(columns["day"].logical_type) == "Date"
    assert "milliseconds" in str(columns["ts"].logical_type) and "isAdjustedToUTC=true" in str(
        columns["ts"].logical_type)
    assert "precision=64, scale=2" in str(columns["price"].logical_type)


def test_parquet_round_trip_and_avro_schema_metadata():
    out = io.BytesIO()
    writer = ParquetObjectWriter(out, WIDE, "snappy")
    values = spark_arrow(WIDE, WIDE_ROWS)
    writer.write(values.slice(0, 1))
    writer.write(values.slice(1))
    writer.close()
    assert not out.closed and writer.records == 3
    f = read_parquet(out.getvalue())
    rows = f.read().to_pylist()
    for row, expected in zip(rows, WIDE_READ_BACK):
        assert row["counts"] == (None if expected["counts"] is None else list(expected["counts"].items()))
        row["counts"] = expected["counts"]
        if row["ts"] is not None:
            row["ts"] = row["ts"].astimezone(UTC)
    assert rows == WIDE_READ_BACK
    # The optional top-level struct is written as its record, as the values are never null.
    assert f.metadata.metadata[b"parquet.avro.schema"].decode() == avro_schema_text(WIDE.as_required())
    assert f.metadata.metadata[b"writer.model.name"] == b"avro"


@pytest.mark.parametrize("codec", PARQUET_CODECS)
def test_parquet_every_codec(codec):
    out = io.BytesIO()
    writer = ParquetObjectWriter(out, WIDE, codec)
    writer.write(spark_arrow(WIDE, WIDE_ROWS * 100))
    writer.close()
    f = read_parquet(out.getvalue())
    expected = {"none": "UNCOMPRESSED"}.get(codec, codec.upper())  # pyarrow's "LZ4" is LZ4_RAW on disk
    assert f.metadata.row_group(0).column(0).compression == expected
    assert f.read().num_rows == 300


def test_parquet_row_groups_keep_memory_bounded():
    rows = [{"id": i, "title": f"book {i}", "quantity": i % 7} for i in range(10_000)]
    values = spark_arrow(ORDER, rows)
    out = io.BytesIO()
    writer = ParquetObjectWriter(out, ORDER, "snappy", row_group_records=1000)
    for start in range(0, len(values), 777):
        writer.write(values.slice(start, 777))
        assert writer.buffered_records < 1000  # never more than one row group waits
    writer.close()
    f = read_parquet(out.getvalue())
    assert [f.metadata.row_group(i).num_rows for i in range(f.num_row_groups)] == [1000] * 10
    assert f.read().to_pylist() == rows
    by_bytes = io.BytesIO()
    writer = ParquetObjectWriter(by_bytes, ORDER, "snappy", row_group_bytes=64 * 1024)
    writer.write(values)
    writer.close()
    f = read_parquet(by_bytes.getvalue())
    assert f.num_row_groups > 3 and f.read().num_rows == 10_000


def test_parquet_same_records_same_bytes():
    values = spark_arrow(WIDE, WIDE_ROWS * 10)
    outputs = []
    for _ in range(2):
        out = io.BytesIO()
        writer = ParquetObjectWriter(out, WIDE, "snappy")
        writer.write(values)
        writer.close()
        outputs.append(out.getvalue())
    assert outputs[0] == outputs[1]


def test_parquet_values_must_be_structs_keys_and_headers_are_wrapped():
    with pytest.raises(DataError, match="Avro schema must be a record"):
        arrow_schema(S.STRING_SCHEMA)
    out = io.BytesIO()
    writer = ParquetObjectWriter(out, key_view(S.OPTIONAL_STRING_SCHEMA), "snappy")
    writer.write(wrap(pa.array(["k1", None]), "key"))
    writer.close()
    f = read_parquet(out.getvalue())
    assert f.schema_arrow.names == ["key"] and f.read().to_pylist() == [{"key": "k1"}, {"key": None}]
    assert json.loads(f.metadata.metadata[b"parquet.avro.schema"])["name"] == "RecordKey"
    headers = pa.array([[{"key": "h", "value": "1"}], []],
                       pa.list_(pa.struct([("key", pa.string()), ("value", pa.string())])))
    out = io.BytesIO()
    writer = ParquetObjectWriter(out, headers_view(), "snappy")
    writer.write(wrap(headers, "headers"))
    writer.close()
    assert read_parquet(out.getvalue()).read().to_pylist() == [
        {"headers": [{"key": "h", "value": "1"}]}, {"headers": []}]
    _, _, _, records = read_container(write_avro(HEADERS_SCHEMA, headers))
    assert records == [[{"key": "h", "value": "1"}], []]


def test_avro_unions_are_written_as_avro_unions():
    """A Connect union (what AvroData reads an Avro union of several types as) is an Avro union again in an
    AvroFormat object, each value in its member's own branch: an int32 member stays an int next to a long."""
    from connectors.converters._avro_connect import to_connect_schema

    schema = to_connect_schema({"type": "record", "name": "Shape", "namespace": "t", "fields": [
        {"name": "n", "type": ["int", "long", "string"]},
        {"name": "any", "type": ["null", {"type": "record", "name": "Circle", "fields": [
            {"name": "r", "type": "double"}]}, {"type": "fixed", "name": "Two", "size": 2},
            {"type": "array", "items": "int"}]}]})
    rows = [{"n": {"int": 1, "long": None, "string": None}, "any": {"Circle": {"r": 1.5}, "Two": None, "array": None}},
            {"n": {"int": None, "long": 2, "string": None}, "any": None},
            {"n": {"int": None, "long": None, "string": "three"}, "any": {"Circle": None, "Two": b"ab", "array": None}},
            {"n": {"int": 4, "long": None, "string": None}, "any": {"Circle": None, "Two": None, "array": [1, 2]}}]
    data = write_avro(schema, spark_arrow(schema, rows))
    written = json.loads(read_container(data)[0]["avro.schema"])
    assert [f["type"] for f in written["fields"]][0] == ["int", "long", "string"]
    assert [b if isinstance(b, str) else b["type"] for b in written["fields"][1]["type"]] == [
        "null", "record", "fixed", "array"]
    reader = fastavro.reader(io.BytesIO(data))
    assert list(reader) == [{"n": 1, "any": {"r": 1.5}}, {"n": 2, "any": None}, {"n": "three", "any": b"ab"},
                            {"n": 4, "any": [1, 2]}]
    # ParquetFormat: parquet-avro's group for a union, its non-null branches as member0, member1, ...
    out = io.BytesIO()
    writer = ParquetObjectWriter(out, schema, "none")
    writer.write(spark_arrow(schema, rows))
    writer.close()
    table = pq.read_table(io.BytesIO(out.getvalue()))
    assert [f.name for f in table.schema.field("n").type] == ["member0", "member1", "member2"]
    assert table.column("n").to_pylist()[:2] == [{"member0": 1, "member1": None, "member2": None},
                                                 {"member0": None, "member1": 2, "member2": None}]
    assert table.column("any").to_pylist()[3] == {"member0": None, "member1": None, "member2": [1, 2]}
    # each value in its member's branch: int 1 in branch 0, long 2 in branch 1 (not the int one), "three" in 2
    only_n = S.struct("t.N", ("n", schema.field("n").schema))
    data = write_avro(only_n, spark_arrow(only_n, [{"n": r["n"]} for r in rows]))
    assert b"\x00\x02" + b"\x02\x04" + b"\x04\x0athree" + b"\x00\x08" in data
