"""ByteArrayFormat: record values written as they are, separated by `format.bytearray.separator`."""

from __future__ import annotations

from ingest.api import Format
from ingest.config.configdef import ConfigDef, Type


class ByteArrayFormat(Format):
    """Values as raw bytes, one after another, with a separator (default: a line separator)."""

    aliases = ("io.confluent.connect.s3.format.bytearray.ByteArrayFormat",)
    extension = ".bin"

    @classmethod
    def config_def(cls) -> ConfigDef:
        return (ConfigDef()
                .define("format.bytearray.extension", Type.STRING, ".bin", doc="Output file extension.")
                .define("format.bytearray.separator", Type.STRING, None,
                        doc="Separator between records; defaults to the line separator."))

    def write(self, records, out) -> None:
        sep = self.config["format.bytearray.separator"]
        separator = b"\n" if sep is None else sep.encode("utf-8")
        for value in records:
            if value is not None:
                out.write(bytes(value))
                out.write(separator)
