"""Kafka's `org.apache.kafka.connect.storage.SimpleHeaderConverter`: header values as UTF-8 strings.

Kafka writes `Values.convertToString(schema, value)` in UTF-8 and, reading, guesses a typed value from
the string (`Values.parseString`). lakeconnect's record layout holds header values as strings, so a
string header is written as its UTF-8 bytes and read back as the same string; the typed guess is left
to whatever consumes the header (a string "true" stays "true").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyspark.sql import Column

from connectors.converters._common import map_header_values, parse_settings, utf8_bytes, utf8_text
from ingest.api import HeaderConverter


class SimpleHeaderConverter(HeaderConverter):
    """Header values as UTF-8 strings, both ways (the default `header.converter`)."""

    aliases = ("org.apache.kafka.connect.storage.SimpleHeaderConverter",)

    def __init__(self, configs: Mapping[str, Any] | None = None):
        super().__init__(configs or {})
        parse_settings(type(self), self.configs)

    def from_connect_header(self, headers: Column) -> Column:
        return map_header_values(headers, utf8_bytes)

    def to_connect_header(self, headers: Column) -> Column:
        return map_header_values(headers, utf8_text)
