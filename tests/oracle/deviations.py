"""Where lakeconnect knowingly differs from Kafka's classes, and why. The oracle tests consult this list: a
case whose id matches an entry's pattern is compared on everything but the entry's aspect. Keep it short;
docs/transforms.md's "Fidelity: Kafka's transforms and converters" lists the same entries."""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase


@dataclass(frozen=True)
class Deviation:
    pattern: str
    """fnmatch pattern of the case ids it covers."""
    aspect: str
    """What is compared differently: an aspect not compared at all (topic, partition, timestamp, key, value,
    headers, error, offset, output), or `json` (bytes compared as parsed JSON: key order, escapes aside) or
    `null-value` (a null key or value written as no bytes matches whatever Kafka's JsonConverter wrote)."""
    what: str
    why: str


DEVIATIONS: tuple[Deviation, ...] = (
    Deviation(
        "*", "null-value",
        "A null key or value is written as no bytes (a tombstone) whatever its schema. Kafka's JsonConverter "
        "writes an envelope with a null payload (`null` without schemas, the schema's default with "
        "replace.null.with.default), and refuses a null under a required schema.",
        "A batch shares one schema, so a null cannot carry 'no schema' as Kafka's records do; lakeconnect keeps "
        "the meaning a null value has in a topic (a tombstone), which compaction, the sinks and the CDC and JDBC "
        "deletes rely on."),
    Deviation(
        "*schemaless*", "json",
        "Schemaless maps are written with their keys in sorted order (Spark's VARIANT); Kafka writes a "
        "java.util.HashMap's iteration order, which follows the keys' hash codes. The JSON objects are equal.",
        "A VARIANT keeps its keys sorted; no consumer may depend on a HashMap's order."),
    Deviation(
        "filesource/unicode", "offset",
        "FileStreamSource positions count bytes; Kafka's count the UTF-16 chars of the decoded text.",
        "A byte position lets a batch seek and read its range in parallel chunks; a char count cannot be sought "
        "and differs from the file's size for any non-ASCII text."),
    Deviation("filesource/invalid-utf8", "offset", "As filesource/unicode.", "As filesource/unicode."),
    Deviation(
        "filesink/schemaless-map", "output",
        "FileStreamSink prints a schemaless map in java.util.HashMap order; keys that share a bucket print in "
        "the order they were read, which lakeconnect's VARIANT (keys sorted) no longer knows.",
        "As *schemaless*: a VARIANT keeps its keys sorted."),
    Deviation(
        "JsonConverter/all-types/*", "json",
        "A character outside Unicode's BMP (an emoji) in a JSON string: Kafka's Jackson 2.19 writes it as a "
        "\\uD83D\\uDE00 surrogate-pair escape, lakeconnect as its UTF-8 bytes. The strings are equal.",
        "Both are the same JSON string; Spark's JSON writer has no such escape, and a per-row UDF to add one "
        "would cost every record for no reader's benefit."),
    Deviation("JsonConverter/string", "json", "As JsonConverter/all-types/*.", "As JsonConverter/all-types/*."),
    Deviation(
        "header/JsonConverter/*", "headers",
        "Header values are strings in lakeconnect: InsertHeader's parsed literal and HeaderFrom's fields reach "
        "a JsonConverter or StringConverter header converter as text, where Kafka's carry their Connect type "
        "(an int8 42, an array [1,2]) and are written typed. With SimpleHeaderConverter (the default) the "
        "bytes are the same.",
        "A batch's headers are one array<struct<key string, value string>> column; typed header values would "
        "need a schema per header per record."),
    Deviation("header/StringConverter/*", "headers", "As header/JsonConverter/*.", "As header/JsonConverter/*."),
    Deviation(
        "StringConverter/bytes,decimal", "error",
        "StringConverter refuses to write bytes (the batch fails with a message naming the column and the "
        "converters to use); Kafka writes Java's Object.toString of the byte array, `[B@5735626c`.",
        "Kafka's text is an object identity that differs on every run and cannot be read back: no one can rely "
        "on it, and writing it would lose the data silently."),
    Deviation(
        "StringConverter/schemaless", "error",
        "StringConverter refuses schemaless values (the batch fails, naming the column); Kafka writes each "
        "value's Java toString (`2.5`, `[1, a]`, `{k=v}` in HashMap order).",
        "Schemaless values reach a StringConverter only after a JSON read; lakeconnect keeps them as VARIANT, "
        "whose text is JSON, not Java's toString, and a silent change of format is worse than a clear refusal."),
    Deviation(
        "TimestampConverter/*target.type=Timestamp*/schemaless", "error",
        "A schemaless value whose field TimestampConverter turned into a Date, Time or Timestamp is written by "
        "JsonConverter with that field as text (`2022-06-26 09:04:50+00:00`); Kafka's JsonConverter cannot "
        "write a java.util.Date without a schema and fails the record (`Java class class java.util.Date does "
        "not have corresponding schema type`).",
        "Kafka's chain can never deliver such a record, so no Kafka pipeline depends on the failure; checking "
        "every schemaless value's type for a date would cost each record of every schemaless JSON write."),
    Deviation("TimestampConverter/*target.type=Date*/schemaless", "error", "As above.", "As above."),
    Deviation("TimestampConverter/whole-schemaless/->Date", "error", "As above.", "As above."),
    Deviation("TimestampConverter/whole-schemaless/->Time", "error", "As above.", "As above."),
    Deviation("TimestampConverter/whole-schemaless/->Timestamp", "error", "As above.", "As above."),
)


def ignored_aspects(case_id: str) -> set[str]:
    return {d.aspect for d in DEVIATIONS if fnmatchcase(case_id, d.pattern)}
