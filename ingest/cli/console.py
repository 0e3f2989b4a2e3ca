"""Kafka's console tools' `--property` settings: the line reader of kafka-console-producer
(org.apache.kafka.tools.LineMessageReader) and the record formatter of kafka-console-consumer
(org.apache.kafka.tools.consumer.DefaultMessageFormatter), as Kafka 4.1 has them.

Both tools ignore a property they do not know; here one is refused (exit 2), naming the known ones. A boolean
is `true` or `false` (Kafka reads anything but `true` as false; a typo here is an error instead).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from ingest.config.configdef import ConfigDef, Type
from ingest.errors import ConfigError, DataError, Problem

PARSE_KEY, KEY_SEPARATOR, PARSE_HEADERS = "parse.key", "key.separator", "parse.headers"
HEADERS_DELIMITER, HEADERS_SEPARATOR = "headers.delimiter", "headers.separator"
HEADERS_KEY_SEPARATOR = "headers.key.separator"
NULL_MARKER, IGNORE_ERROR = "null.marker", "ignore.error"

PRINT_TIMESTAMP, PRINT_PARTITION, PRINT_OFFSET = "print.timestamp", "print.partition", "print.offset"
PRINT_DELIVERY, PRINT_EPOCH, PRINT_HEADERS = "print.delivery", "print.epoch", "print.headers"
PRINT_KEY, PRINT_VALUE = "print.key", "print.value"
LINE_SEPARATOR, NULL_LITERAL = "line.separator", "null.literal"
TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")  # a record without one (NoTimestampType) prints NO_TIMESTAMP
"""ingest.topics.layout's CREATE_TIME and LOG_APPEND_TIME, Kafka's names (this module is imported by the CLI's
parser, which must not import Arrow: a test checks that they are the same)."""

READER_PROPERTIES = (
    ConfigDef()
    .define(PARSE_KEY, Type.BOOLEAN, False, doc="Each line holds a key before key.separator.")
    .define(KEY_SEPARATOR, Type.STRING, "\t", doc="Between the key and the value (a tab by default).")
    .define(PARSE_HEADERS, Type.BOOLEAN, False,
            doc="Each line starts with headers (h1:v1,h2:v2) before headers.delimiter.")
    .define(HEADERS_DELIMITER, Type.STRING, "\t", doc="Between the headers and the key or value (a tab by default).")
    .define(HEADERS_SEPARATOR, Type.STRING, ",",
            doc="Between two headers; a regular expression, as Kafka's (Java's) String.split reads it.")
    .define(HEADERS_KEY_SEPARATOR, Type.STRING, ":", doc="Between a header's key and its value.")
    .define(NULL_MARKER, Type.STRING, None,
            doc="A key, value or header value equal to it is null (a tombstone when the value is); headers "
                "equal to it are none. Not set by default.")
    .define(IGNORE_ERROR, Type.BOOLEAN, False,
            doc="A line without the key separator (or headers delimiter) is taken whole as the value (or key "
                "and value), and a header without headers.key.separator is a key with a null value, instead "
                "of an error.")
)

FORMATTER_PROPERTIES = (
    ConfigDef()
    .define(PRINT_TIMESTAMP, Type.BOOLEAN, False, doc="Print CreateTime:<ms> (or LogAppendTime:<ms>) first.")
    .define(PRINT_PARTITION, Type.BOOLEAN, False, doc="Print Partition:<n>.")
    .define(PRINT_OFFSET, Type.BOOLEAN, False, doc="Print Offset:<n>.")
    .define(PRINT_DELIVERY, Type.BOOLEAN, False,
            doc="Print Delivery:NOT_PRESENT (a share group's delivery count; a console consumer has none).")
    .define(PRINT_EPOCH, Type.BOOLEAN, False,
            doc="Print Epoch:NOT_PRESENT (kafka-console-consumer never prints the leader epoch it read).")
    .define(PRINT_HEADERS, Type.BOOLEAN, False, doc="Print the headers, k1:v1,k2:v2, or NO_HEADERS.")
    .define(PRINT_KEY, Type.BOOLEAN, False, doc="Print the key.")
    .define(PRINT_VALUE, Type.BOOLEAN, True, doc="Print the value, then line.separator.")
    .define(KEY_SEPARATOR, Type.STRING, "\t", doc="Between two printed fields (a tab by default).")
    .define(LINE_SEPARATOR, Type.STRING, "\n", doc="After the value (a newline by default).")
    .define(HEADERS_SEPARATOR, Type.STRING, ",", doc="Between two printed headers.")
    .define(NULL_LITERAL, Type.STRING, "null", doc="Printed for a null key, value or header value.")
)


def _unescape(value: str) -> str:
    """`\\t`, `\\n`, `\\uXXXX` … as the characters they name (a shell passes `\\t` as two characters); other
    characters, accented ones too, as they are."""
    if "\\" not in value:
        return value
    return value.encode("latin-1", "backslashreplace").decode("unicode_escape")


def tool_properties(definition: ConfigDef, pairs: Sequence[str] | None, tool: str) -> dict[str, Any]:
    """The typed `--property NAME=VALUE` settings of `tool`, every problem at once; an unknown name is refused."""
    raw: dict[str, str] = {}
    problems = []
    for pair in pairs or []:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            problems.append(Problem("--property", f"expected NAME=VALUE, got '{pair}'"))
            continue
        try:
            raw[name.strip()] = _unescape(value)
        except UnicodeDecodeError as e:
            problems.append(Problem(f"--property {name.strip()}", f"a backslash escape that names no character "
                                                                  f"({e.reason}); write a backslash as \\\\"))
    unknown = [n for n in raw if n not in definition]
    if unknown:
        what = "an unknown property" if len(unknown) == 1 else "unknown properties"
        problems.append(Problem(f"--property {', '.join(unknown)}", f"{what} of {tool} (Kafka's would ignore it "
                                f"silently); the known ones are {', '.join(definition.keys)}"))
    values, invalid = definition.validate({k: v for k, v in raw.items() if k in definition}, strict=False)
    problems += [Problem(f"--property {p.key}", p.message) for p in invalid]
    if problems:
        raise ConfigError(problems)
    return values


def read_lines(stream: TextIO) -> Iterator[str]:
    """The lines of `stream` as Java's BufferedReader.readLine splits them: at \\n, \\r\\n or a lone \\r."""
    for raw in stream:
        if raw.endswith("\n"):
            raw = raw[:-1]
        if raw.endswith("\r"):
            raw = raw[:-1]
        yield from raw.split("\r")


def java_split(pattern: re.Pattern, text: str) -> list[str]:
    """Java's String.split(regex): no leading empty piece for a zero-width match at the start, trailing empty
    pieces dropped, the text itself when nothing matches."""
    pieces, index = [], 0
    for m in pattern.finditer(text):
        if index == 0 and m.start() == 0 and m.end() == 0:
            continue
        pieces.append(text[index:m.start()])
        index = m.end()
    if index == 0:
        return [text]
    pieces.append(text[index:])
    while pieces and pieces[-1] == "":
        pieces.pop()
    return pieces


@dataclass(frozen=True)
class ProducedLine:
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]] | None
    """None when parse.headers is off or the headers were the null marker (Kafka adds none)."""


class LineReader:
    """kafka-console-producer's LineMessageReader: one record per line, `[headers<delim>][key<sep>]value`."""

    def __init__(self, props: Mapping[str, Any]):
        self.parse_key: bool = props[PARSE_KEY]
        self.key_separator: str = props[KEY_SEPARATOR]
        self.parse_headers: bool = props[PARSE_HEADERS]
        self.headers_delimiter: str = props[HEADERS_DELIMITER]
        self.headers_separator: str = props[HEADERS_SEPARATOR]
        self.headers_key_separator: str = props[HEADERS_KEY_SEPARATOR]
        self.null_marker: str | None = props[NULL_MARKER]
        self.ignore_error: bool = props[IGNORE_ERROR]
        problems = []
        # Kafka's own checks (LineMessageReader.configure), in its order and words
        must_differ = [(HEADERS_DELIMITER, HEADERS_SEPARATOR), (HEADERS_DELIMITER, HEADERS_KEY_SEPARATOR),
                       (HEADERS_SEPARATOR, HEADERS_KEY_SEPARATOR), (NULL_MARKER, KEY_SEPARATOR),
                       (NULL_MARKER, HEADERS_SEPARATOR), (NULL_MARKER, HEADERS_DELIMITER),
                       (NULL_MARKER, HEADERS_KEY_SEPARATOR)]
        for a, b in must_differ:
            va, vb = props[a], props[b]
            if va == vb:
                problems.append(Problem(f"--property {a}", f"{a} and {b} may not be equal ({va!r}); give one "
                                                          "of them another value"))
        try:
            self._headers_pattern = re.compile(self.headers_separator)
        except re.error as e:
            problems.append(Problem(f"--property {HEADERS_SEPARATOR}", f"not a valid regular expression: {e}"))
        if problems:
            raise ConfigError(problems)

    def _demarcated(self, enabled: bool, line: str, start: int, demarcation: str, name: str,
                    number: int) -> str | None:
        if not enabled:
            return None
        index = line.find(demarcation, start)
        if index == -1:
            if self.ignore_error:
                return None
            raise DataError(f"No {name} found on line number {number}: '{_shown(line)}'")
        return line[start:index]

    def _null(self, text: str | None) -> bytes | None:
        return None if text is None or text == self.null_marker else text.encode()

    def parse(self, line: str, number: int) -> ProducedLine:
        """The record of `line` (1-based line `number`); DataError, in Kafka's words, when it is malformed."""
        headers = self._demarcated(self.parse_headers, line, 0, self.headers_delimiter, "headers delimiter", number)
        header_end = 0 if headers is None else len(headers) + len(self.headers_delimiter)
        key = self._demarcated(self.parse_key, line, header_end, self.key_separator, "key separator", number)
        key_end = 0 if key is None else len(key) + len(self.key_separator)
        value = line[header_end + key_end:]
        parsed = None
        if headers is not None and headers != self.null_marker:
            parsed = [self._header(pair, number) for pair in java_split(self._headers_pattern, headers)]
        return ProducedLine(self._null(key), self._null(value), parsed)

    def _header(self, pair: str, number: int) -> tuple[str, bytes | None]:
        i = pair.find(self.headers_key_separator)
        if i == -1:
            if self.ignore_error:
                return pair, None
            raise DataError(f"No header key separator found in pair '{_shown(pair)}' on line number {number}")
        key = pair[:i]
        if key == self.null_marker:
            raise DataError(f"Header keys should not be equal to the null marker '{self.null_marker}' as they "
                            f"can't be null (line number {number})")
        return key, self._null(pair[i + len(self.headers_key_separator):])


def _shown(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[:limit] + f"… ({len(text)} characters)"


@dataclass(frozen=True)
class ConsumedRecord:
    partition: int
    offset: int
    timestamp: int | None
    timestamp_type: str | None
    key: bytes | None
    value: bytes | None
    headers: Sequence[tuple[str, bytes | None]] | None


class RecordFormatter:
    """kafka-console-consumer's DefaultMessageFormatter: the bytes it writes for one record."""

    def __init__(self, props: Mapping[str, Any]):
        self.props = props
        self.sep = props[KEY_SEPARATOR].encode()
        self.line_sep = props[LINE_SEPARATOR].encode()
        self.headers_sep = props[HEADERS_SEPARATOR].encode()
        self.null = props[NULL_LITERAL].encode()

    def _or_null(self, b: bytes | None) -> bytes:
        return self.null if b is None else bytes(b)

    def format(self, r: ConsumedRecord) -> bytes:
        p = self.props
        # Kafka's writeSeparator: each printed field is followed by key.separator when a later one is printed,
        # else by line.separator; a record with no field printed writes nothing at all.
        fields: list[bytes] = []
        if p[PRINT_TIMESTAMP]:
            fields.append(f"{r.timestamp_type}:{r.timestamp}".encode()
                          if r.timestamp_type in TIMESTAMP_TYPES and r.timestamp is not None else b"NO_TIMESTAMP")
        if p[PRINT_PARTITION]:
            fields.append(f"Partition:{r.partition}".encode())
        if p[PRINT_OFFSET]:
            fields.append(f"Offset:{r.offset}".encode())
        if p[PRINT_DELIVERY]:
            fields.append(b"Delivery:NOT_PRESENT")
        if p[PRINT_EPOCH]:
            fields.append(b"Epoch:NOT_PRESENT")
        if p[PRINT_HEADERS]:
            fields.append(self.headers_sep.join(k.encode() + b":" + self._or_null(v) for k, v in r.headers)
                          if r.headers else b"NO_HEADERS")
        if p[PRINT_KEY]:
            fields.append(self._or_null(r.key))
        if p[PRINT_VALUE]:
            fields.append(self._or_null(r.value))
        return self.sep.join(fields) + self.line_sep if fields else b""


def write_all(stream: TextIO, chunks: Iterable[bytes]) -> None:
    """Bytes to stdout as they are (a value need not be UTF-8); to a text-only stream decoded."""
    binary = getattr(stream, "buffer", None)
    stream.flush()
    for c in chunks:
        if binary is not None:
            binary.write(c)
        else:
            stream.write(c.decode("utf-8", errors="replace"))
    (binary or stream).flush()
