"""Confluent's AvroFormat (`io.confluent.connect.s3.format.avro.AvroFormat`) for one object at a time.

This module holds the key `avro.codec` and its values (Avro's `CodecFactory` names), and `AvroWriter`:
an Avro object container file (the bytes of one `.avro` object) written from slices of a Spark column
handed over as Arrow arrays, block by block as Avro's `DataFileWriter` cuts them, with Avro's long
encoding (`write_long`, `read_long`) that compaction and the Avro converter also use. The other two parts,
each Confluent's, have modules of their own: the Avro schema of a Connect schema
(connectors/storage/avro_schema.py) and the Avro datums of Arrow values (connectors/storage/avro_datums.py).

The writer is reproducible: its sync marker comes from a seed (the object key), so writing the same
records under the same key gives the same bytes, which makes a re-run after a crash upload the same object.
Schemaless values cannot be written: a schema of None is a `DataError` (see `AvroWriter`).
"""

from __future__ import annotations

import bz2
import hashlib
import io
import lzma
import struct
import zlib
from typing import BinaryIO

import fastavro
import pyarrow as pa

from connectors.storage.avro_datums import as_plain_array, avro_datums, check_values
from connectors.storage.avro_schema import avro_schema
from ingest.config.configdef import ConfigDef, Importance, Type, ValidString
from ingest.errors import ConfigError, Problem
from ingest.records.schema import ConnectSchema, dumps

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
