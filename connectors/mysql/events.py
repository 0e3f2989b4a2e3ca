"""Debezium's change events, built in Spark from decoded rows (binlog or snapshot) of one table layout.

A layout is a table's columns and key as one table map (or the catalog, for a snapshot) gives them. Its
rows arrive in one shape whichever way they were read (`ROW_COLUMNS`): the column values as canonical
texts (`types.py`), the operation and where the change happened. Each row becomes one or more records:

    op c, r      one create (c) or read (r) event
    op u         one update event; when the key changed: a delete of the old key, its tombstone, and a
                 create of the new key (Debezium's primary-key update)
    op d         a delete event, then a tombstone (when `tombstones.on.delete`)

Record `seq` = row seq * 4 + the record's place among its row's records, so the records keep binlog order.
Keys, envelopes and the `source` block are Debezium 2.3's for MySQL (names, field order, optionality).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from pyspark.sql import Column as SparkColumn
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from connectors.mysql.types import Column
from connectors.transforms.headers import header_array, header_text
from ingest.records import HEADERS, KEY, PARTITION, SEQ, TIMESTAMP, TOPIC, VALUE, RecordBatch
from ingest.records import schema as S

SOURCE_VERSION = "2.3.0.Final"
"""source.version: the Debezium release whose event format these events follow."""
SNAPSHOT_ENUM = S.ConnectSchema("string", True, "io.debezium.data.Enum", 1,
                                parameters=(("allowed", "true,last,false,incremental"),), default="false")
SOURCE_SCHEMA = S.struct(
    "io.debezium.connector.mysql.Source",
    ("version", S.STRING_SCHEMA), ("connector", S.STRING_SCHEMA), ("name", S.STRING_SCHEMA),
    ("ts_ms", S.INT64_SCHEMA), ("snapshot", SNAPSHOT_ENUM), ("db", S.STRING_SCHEMA),
    ("sequence", S.OPTIONAL_STRING_SCHEMA), ("table", S.OPTIONAL_STRING_SCHEMA), ("server_id", S.INT64_SCHEMA),
    ("gtid", S.OPTIONAL_STRING_SCHEMA), ("file", S.STRING_SCHEMA), ("pos", S.INT64_SCHEMA),
    ("row", S.INT32_SCHEMA), ("thread", S.OPTIONAL_INT64_SCHEMA), ("query", S.OPTIONAL_STRING_SCHEMA))
TRANSACTION_SCHEMA = S.struct("event.block", ("id", S.STRING_SCHEMA), ("total_order", S.INT64_SCHEMA),
                              ("data_collection_order", S.INT64_SCHEMA), optional=True, version=1)

ROW_COLUMNS = ("seq", "op", "before", "after", "src_ts_ms", "snap", "file", "pos", "row", "server_id", "gtid",
               "thread", "query")
"""What `TableEvents.records` reads: seq long, op string (c/u/d/r), before/after array<string>, src_ts_ms
long, snap string (true/last for snapshot rows, null otherwise), file string, pos long, row int,
server_id long, gtid string, thread long, query string."""

READ, CREATE, UPDATE, DELETE, TOMBSTONE = range(5)
_OP_LETTER = {READ: "r", CREATE: "c", UPDATE: "u", DELETE: "d"}


@dataclass(frozen=True)
class Layout:
    """A table's columns and primary key (positions) as one table map or the catalog gives them."""

    db: str
    table: str
    columns: tuple[Column, ...]
    pk: tuple[int, ...]

    def to_json(self) -> str:
        return json.dumps({"columns": [c.to_json() for c in self.columns], "pk": list(self.pk)},
                          separators=(",", ":"))

    @classmethod
    def from_json(cls, db: str, table: str, text: str) -> Layout:
        d = json.loads(text)
        return cls(db, table, tuple(Column.from_json(c) for c in d["columns"]), tuple(d["pk"]))


@dataclass(frozen=True)
class Shaping:
    """What the connector's configuration does to every table's events."""

    prefix: str
    tombstones: bool = True
    with_query: bool = False
    key_columns: tuple[tuple[re.Pattern, tuple[str, ...]], ...] = ()
    column_include: tuple[re.Pattern, ...] = ()
    column_exclude: tuple[re.Pattern, ...] = ()
    rules: tuple[tuple[str, object, tuple[re.Pattern, ...]], ...] = field(default=())

    def topic(self, db: str, table: str) -> str:
        return f"{self.prefix}.{db}.{table}"

    def keeps(self, db: str, table: str, column: str) -> bool:
        name = f"{db}.{table}.{column}"
        if self.column_include:
            return any(p.fullmatch(name) for p in self.column_include)
        return not any(p.fullmatch(name) for p in self.column_exclude)

    def key_of(self, layout: Layout) -> tuple[int, ...]:
        """The key columns' positions: `message.key.columns` for this table, else the primary key."""
        names = [c.name for c in layout.columns]
        for pattern, columns in self.key_columns:
            if pattern.fullmatch(f"{layout.db}.{layout.table}"):
                missing = [c for c in columns if c not in names]
                if missing:
                    raise KeyError(f"message.key.columns names {', '.join(missing)}, which table "
                                   f"{layout.db}.{layout.table} does not have (columns: {', '.join(names)})")
                return tuple(names.index(c) for c in columns)
        return layout.pk


class TableEvents:
    """Turns the decoded rows of one layout into Debezium's records for its topic."""

    def __init__(self, layout: Layout, shaping: Shaping):
        self.layout = layout
        self.shaping = shaping
        self.topic = shaping.topic(layout.db, layout.table)
        self.key_positions = shaping.key_of(layout)
        self.kept = [i for i, c in enumerate(layout.columns) if shaping.keeps(layout.db, layout.table, c.name)]
        row = S.struct(f"{self.topic}.Value", *[(layout.columns[i].name, self._value_schema(i)) for i in self.kept],
                       optional=True)
        self.row_schema = row
        self.key_schema = (S.struct(f"{self.topic}.Key", *[
            (layout.columns[i].name, _required(layout.columns[i].connect_schema())) for i in self.key_positions])
            if self.key_positions else None)
        self.value_schema = S.struct(
            f"{self.topic}.Envelope", ("before", row), ("after", row), ("source", SOURCE_SCHEMA),
            ("op", S.STRING_SCHEMA), ("ts_ms", S.OPTIONAL_INT64_SCHEMA), ("transaction", TRANSACTION_SCHEMA),
            version=1)

    def _rules(self, i: int) -> list[tuple[str, object]]:
        name = f"{self.layout.db}.{self.layout.table}.{self.layout.columns[i].name}"
        return [(kind, arg) for kind, arg, patterns in self.shaping.rules if any(p.fullmatch(name) for p in patterns)]

    def _value_schema(self, i: int) -> S.ConnectSchema:
        schema = self.layout.columns[i].connect_schema()
        if any(kind in ("mask", "hash") for kind, _ in self._rules(i)) and schema.type == "string":
            return S.ConnectSchema("string", schema.optional)
        return schema

    def _value(self, i: int, texts: SparkColumn) -> SparkColumn:
        column = self.layout.columns[i]
        value = column.spark_value(texts[i])
        if column.connect_schema().type != "string":
            return value
        for kind, arg in self._rules(i):  # Debezium's column.truncate/mask/hash, for string columns
            if kind == "truncate":
                value = F.substring(value, 1, int(arg))
            elif kind == "mask":
                value = F.when(value.isNotNull(), F.lit("*" * int(arg)))
            elif kind == "hash":
                algorithm, salt, _v2 = arg
                salted = F.concat(F.lit(salt), value)
                value = (F.md5(salted) if algorithm == "MD5" else F.sha1(salted) if algorithm == "SHA1"
                         else F.sha2(salted, int(algorithm[3:])))
        return value

    def _row(self, texts: SparkColumn) -> SparkColumn:
        fields = [self._value(i, texts).alias(self.layout.columns[i].name) for i in self.kept]
        return F.when(texts.isNotNull(), F.struct(*fields))

    def _key(self, texts: SparkColumn) -> SparkColumn:
        return F.struct(*[self.layout.columns[i].spark_value(texts[i]).alias(self.layout.columns[i].name)
                          for i in self.key_positions])

    def records(self, rows: DataFrame, ts_ms: int, prefix_name: str) -> RecordBatch:
        """`rows` (ROW_COLUMNS) as records; `ts_ms` is the events' processing time (the batch's plan time)."""
        before, after = F.col("before"), F.col("after")
        if self.key_positions:
            old = F.array(*[before[i] for i in self.key_positions])
            new = F.array(*[after[i] for i in self.key_positions])
            key_changed = (F.col("op") == "u") & ~old.eqNullSafe(new)
        else:
            key_changed = F.lit(False)
        gone = [F.lit(DELETE)] + ([F.lit(TOMBSTONE)] if self.shaping.tombstones else [])
        codes = (F.when(F.col("op") == "r", F.array(F.lit(READ)))
                 .when(F.col("op") == "c", F.array(F.lit(CREATE)))
                 .when(F.col("op") == "d", F.array(*gone))
                 .when(key_changed, F.array(*gone, F.lit(CREATE)))
                 .otherwise(F.array(F.lit(UPDATE))))
        exploded = rows.select("*", F.posexplode(codes).alias("__sub", "__code"))
        code = F.col("__code")
        source = F.struct(
            F.lit(SOURCE_VERSION).alias("version"), F.lit("mysql").alias("connector"),
            F.lit(prefix_name).alias("name"), F.col("src_ts_ms").alias("ts_ms"),
            F.coalesce(F.col("snap"), F.lit("false")).alias("snapshot"), F.lit(self.layout.db).alias("db"),
            F.lit(None).cast("string").alias("sequence"), F.lit(self.layout.table).alias("table"),
            F.col("server_id").alias("server_id"), F.col("gtid").alias("gtid"), F.col("file").alias("file"),
            F.col("pos").alias("pos"), F.col("row").alias("row"), F.col("thread").alias("thread"),
            (F.col("query") if self.shaping.with_query else F.lit(None).cast("string")).alias("query"))
        op = F.create_map(*[x for k, v in _OP_LETTER.items() for x in (F.lit(k), F.lit(v))])[code]
        envelope = F.struct(
            F.when(code.isin(UPDATE, DELETE), self._row(before)).alias("before"),
            F.when(code.isin(READ, CREATE, UPDATE), self._row(after)).alias("after"),
            source.alias("source"), op.alias("op"), F.lit(ts_ms).cast("long").alias("ts_ms"),
            F.lit(None).cast(TRANSACTION_SCHEMA.to_spark_type()).alias("transaction"))
        value = F.when(code != TOMBSTONE, envelope)
        if self.key_schema is not None:
            key = F.when(code.isin(DELETE, TOMBSTONE), self._key(before)).otherwise(self._key(after))
        else:
            key = F.lit(None).cast("void")
        headers = F.lit(None).cast(_HEADERS)
        if self.key_schema is not None:
            # Debezium's headers on a key change: the delete (and its tombstone) names the new key, the create
            # the old one, each as SimpleHeaderConverter writes a struct.
            key_type = self.key_schema.to_spark_type()
            headers = (F.when(key_changed & code.isin(DELETE, TOMBSTONE), header_array(
                           [(NEWKEY_HEADER, header_text(self._key(after), key_type, self.key_schema))]))
                       .when(key_changed & (code == CREATE), header_array(
                           [(OLDKEY_HEADER, header_text(self._key(before), key_type, self.key_schema))])))
        df = exploded.select(
            F.lit(self.topic).alias(TOPIC), F.lit(None).cast("int").alias(PARTITION), key.alias(KEY),
            value.alias(VALUE), headers.cast(_HEADERS).alias(HEADERS),
            F.timestamp_millis(F.lit(ts_ms)).alias(TIMESTAMP), (F.col("seq") * 4 + F.col("__sub")).alias(SEQ))
        return RecordBatch(df, self.key_schema, self.value_schema, topics=(self.topic,))


_HEADERS = "array<struct<key:string,value:string>>"
NEWKEY_HEADER = "__debezium.newkey"
OLDKEY_HEADER = "__debezium.oldkey"


def _required(schema: S.ConnectSchema) -> S.ConnectSchema:
    from dataclasses import replace

    return replace(schema, optional=False)


def shaping_of(config) -> Shaping:
    from connectors.mysql import config as C

    flags = re.IGNORECASE
    return Shaping(
        prefix=config[C.TOPIC_PREFIX],
        tombstones=bool(config[C.TOMBSTONES_ON_DELETE]),
        with_query=bool(config[C.INCLUDE_QUERY]),
        key_columns=tuple((re.compile(p.pattern, flags), tuple(cols)) for p, cols in C.key_columns(config)),
        column_include=tuple(re.compile(p.strip(), flags) for p in config[C.COLUMN_INCLUDE] or []),
        column_exclude=tuple(re.compile(p.strip(), flags) for p in config[C.COLUMN_EXCLUDE] or []),
        rules=tuple((kind, arg, tuple(patterns)) for kind, arg, patterns in C.column_rules(config)),
    )


def union_rows(frames: Sequence[DataFrame]) -> DataFrame:
    out = frames[0]
    for f in frames[1:]:
        out = out.unionByName(f)
    return out


# --- schema change events and heartbeats ---------------------------------------------------------------

SCHEMA_CHANGE_KEY = S.struct("io.debezium.connector.mysql.SchemaChangeKey", ("databaseName", S.STRING_SCHEMA))
TABLE_CHANGE = S.struct("io.debezium.connector.schema.Change", ("type", S.STRING_SCHEMA), ("id", S.STRING_SCHEMA))
SCHEMA_CHANGE_VALUE = S.struct(
    "io.debezium.connector.mysql.SchemaChangeValue", ("source", SOURCE_SCHEMA), ("ts_ms", S.INT64_SCHEMA),
    ("databaseName", S.OPTIONAL_STRING_SCHEMA), ("schemaName", S.OPTIONAL_STRING_SCHEMA),
    ("ddl", S.OPTIONAL_STRING_SCHEMA), ("tableChanges", S.array(TABLE_CHANGE)))
HEARTBEAT_KEY = S.struct("io.debezium.connector.common.ServerNameKey", ("serverName", S.STRING_SCHEMA))
HEARTBEAT_VALUE = S.struct("io.debezium.connector.common.Heartbeat", ("ts_ms", S.INT64_SCHEMA))


def schema_changes(ddl: DataFrame, prefix: str, ts_ms: int) -> RecordBatch:
    """Debezium's schema change events (topic `<topic.prefix>`, keyed by database) of the decoded DDL rows.
    `tableChanges` names each statement's kind only: the columns a change leaves are carried by the
    change events themselves (each binlog table map holds the table's columns)."""
    kind = F.upper(F.regexp_extract(F.col("query"), r"(?is)^\s*(?:/\*.*?\*/\s*)*(CREATE|ALTER|DROP|RENAME|TRUNCATE)", 1))
    table = F.regexp_extract(F.col("query"), r"(?is)\b(?:TABLE|VIEW)\s+(?:IF\s+(?:NOT\s+)?EXISTS\s+)?`?([\w$]+)`?", 1)
    change = F.when(table != "", F.array(F.struct(kind.alias("type"), F.concat_ws(".", F.col("db"), table).alias("id")))) \
        .otherwise(F.array().cast("array<struct<type:string,id:string>>"))
    source = F.struct(
        F.lit(SOURCE_VERSION).alias("version"), F.lit("mysql").alias("connector"), F.lit(prefix).alias("name"),
        (F.col("ts_sec") * 1000).alias("ts_ms"), F.lit("false").alias("snapshot"), F.col("db").alias("db"),
        F.lit(None).cast("string").alias("sequence"), F.lit(None).cast("string").alias("table"),
        F.col("server_id").alias("server_id"), F.col("gtid").alias("gtid"), F.col("file").alias("file"),
        F.col("pos").alias("pos"), F.lit(0).alias("row"), F.col("thread").alias("thread"),
        F.lit(None).cast("string").alias("query"))
    value = F.struct(source.alias("source"), F.lit(ts_ms).cast("long").alias("ts_ms"), F.col("db").alias("databaseName"),
                     F.lit(None).cast("string").alias("schemaName"), F.col("query").alias("ddl"),
                     change.alias("tableChanges"))
    df = ddl.select(
        F.lit(prefix).alias(TOPIC), F.lit(None).cast("int").alias(PARTITION),
        F.struct(F.coalesce(F.col("db"), F.lit("")).alias("databaseName")).alias(KEY), value.alias(VALUE),
        F.lit(None).cast(_HEADERS).alias(HEADERS), F.timestamp_millis(F.lit(ts_ms)).alias(TIMESTAMP),
        (F.col("seq") * 4).alias(SEQ))
    return RecordBatch(df, SCHEMA_CHANGE_KEY, SCHEMA_CHANGE_VALUE, topics=(prefix,))


def heartbeat(spark, topic: str, prefix: str, ts_ms: int) -> RecordBatch:
    """One heartbeat record (Debezium's `ServerNameKey` and `Heartbeat`): the batch's offset moved on."""
    df = spark.range(1).select(
        F.lit(topic).alias(TOPIC), F.lit(None).cast("int").alias(PARTITION),
        F.struct(F.lit(prefix).alias("serverName")).alias(KEY),
        F.struct(F.lit(ts_ms).cast("long").alias("ts_ms")).alias(VALUE), F.lit(None).cast(_HEADERS).alias(HEADERS),
        F.timestamp_millis(F.lit(ts_ms)).alias(TIMESTAMP), F.lit(0).cast("long").alias(SEQ))
    return RecordBatch(df, HEARTBEAT_KEY, HEARTBEAT_VALUE, topics=(topic,))
