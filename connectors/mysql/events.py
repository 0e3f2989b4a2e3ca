"""Debezium's change events, built in Spark from decoded rows (binlog or snapshot) of one table layout.

A layout is a table's columns and key as one table map (or the catalog, for a snapshot) gives them. Its
rows arrive in one shape whichever way they were read (`ROW_COLUMNS`): the column values as canonical
texts (`types.py`), the operation and where the change happened. Each row becomes one or more records:

    op c, r      one create (c) or read (r) event
    op u         one update event; when the key changed: a delete of the old key, its tombstone, and a
                 create of the new key (Debezium's primary-key update)
    op d         a delete event, then a tombstone (when `tombstones.on.delete`)
    op t         a truncate event (TRUNCATE TABLE, unless `skipped.operations` has t): no key, no before or after

Record `seq` = row seq * 4 + the record's place among its row's records, so the records keep binlog order.
Keys, envelopes and the `source` block are Debezium 2.3's for MySQL (names, field order, optionality).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from pyspark.sql import Column as SparkColumn
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from connectors.mysql.types import Column, default_expression, from_catalog
from connectors.transforms.headers import header_array, header_text
from ingest.jvm import batch_constant
from ingest.records import HEADERS, KEY, PARTITION, SEQ, TIMESTAMP, TOPIC, VALUE, RecordBatch
from ingest.records import schema as S
from ingest.records.java import hashmap_bucket, hashmap_capacity

SOURCE_VERSION = "2.3.4.Final"
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

READ, CREATE, UPDATE, DELETE, TOMBSTONE, TRUNCATE = range(6)
_OP_LETTER = {READ: "r", CREATE: "c", UPDATE: "u", DELETE: "d", TRUNCATE: "t"}


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
    skipped: frozenset[str] = frozenset()  # skipped.operations: c, u, d
    decimal_mode: str = "precise"  # decimal.handling.mode
    binary_mode: str = "bytes"  # binary.handling.mode
    bigint_mode: str = "long"  # bigint.unsigned.handling.mode
    time_mode: str = "adaptive_time_microseconds"  # time.precision.mode
    comments: bool = False  # include.schema.comments: column comments as field docs
    propagate: tuple[re.Pattern, ...] = ()  # column.propagate.source.type: <db>.<table>.<column>
    propagate_types: tuple[re.Pattern, ...] = ()  # datatype.propagate.source.type: <db>.<table>.<type name>
    # (db, table) -> {lower-case column name: (its kind, its SourceColumn)} as the server's catalog has them
    # now (`catalog_lookup`); asked only when comments or source types are wanted.
    catalog: Callable[[str, str], dict] | None = field(default=None, compare=False)

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
        layout = replace(layout, columns=tuple(c.with_modes(shaping.decimal_mode, shaping.binary_mode,
                                                            shaping.bigint_mode, shaping.time_mode)
                                               for c in layout.columns))
        self.layout = layout
        self.shaping = shaping
        self.sources = _source_columns(layout, shaping)
        self.topic = shaping.topic(layout.db, layout.table)
        self.key_positions = shaping.key_of(layout)
        self.kept = [i for i, c in enumerate(layout.columns) if shaping.keeps(layout.db, layout.table, c.name)]
        row = S.struct(f"{self.topic}.Value", *[(layout.columns[i].name, self._value_schema(i)) for i in self.kept],
                       optional=True)
        self.row_schema = row
        # A primary key's columns are NOT NULL; message.key.columns may name nullable ones, whose key fields
        # Debezium keeps optional.
        chosen = self.key_positions != layout.pk
        self.key_schema = (S.struct(f"{self.topic}.Key", *[
            (layout.columns[i].name, self._schema(i) if chosen else _required(self._schema(i)))
            for i in self.key_positions])
            if self.key_positions else None)
        self.value_schema = S.struct(
            f"{self.topic}.Envelope", ("before", row), ("after", row), ("source", SOURCE_SCHEMA),
            ("op", S.STRING_SCHEMA), ("ts_ms", S.OPTIONAL_INT64_SCHEMA), ("transaction", TRANSACTION_SCHEMA),
            version=1)

    def _rules(self, i: int) -> list[tuple[str, object]]:
        """The column mapper Debezium's ColumnMappers.mapperFor picks: the first rule matching the column, in
        the order ColumnMappers.create defines them (truncate, mask, column.propagate.source.type,
        datatype.propagate.source.type, then hash): one at most."""
        name = f"{self.layout.db}.{self.layout.table}.{self.layout.columns[i].name}"
        type_name = f"{self.layout.db}.{self.layout.table}.{self.sources[i].type_name}"  # fullyQualifiedColumnDatatype
        order = {"truncate": 0, "mask": 1, "hash": 4}
        found = [(order[kind], kind, arg) for kind, arg, patterns in self.shaping.rules
                 if any(p.fullmatch(name) for p in patterns)]
        if any(p.fullmatch(name) for p in self.shaping.propagate):
            found.append((2, "propagate", None))
        if any(p.fullmatch(type_name) for p in self.shaping.propagate_types):
            found.append((3, "propagate", None))
        if not found:
            return []
        first = min(found, key=lambda r: r[0])  # stable: among rules of a kind, the configuration's order
        return [(first[1], first[2])]

    def _schema(self, i: int) -> S.ConnectSchema:
        """The column's schema, with the column's comment as its doc when include.schema.comments
        (TableSchemaBuilder.addField, for key and value fields alike)."""
        schema = self.layout.columns[i].connect_schema()
        comment = self.sources[i].comment
        return replace(schema, doc=comment) if self.shaping.comments and comment is not None else schema

    def _value_schema(self, i: int) -> S.ConnectSchema:
        """The column's schema; a column rule adds the parameters Debezium's column mapper adds after the
        type's own (the schema keeps its default, unmasked, as Debezium's does)."""
        schema = self._schema(i)
        for kind, arg in self._rules(i):
            if kind == "propagate":
                added = self.sources[i].parameters(self.shaping.comments)
            elif schema.type != "string":
                continue
            else:
                added = (("masked", "true"),) if kind in ("mask", "hash") else (("truncateLength", str(arg)),)
            schema = replace(schema, parameters=schema.parameters + added)
        return schema

    def _value(self, i: int, texts: SparkColumn) -> SparkColumn:
        column = self.layout.columns[i]
        value = column.spark_value(texts[i])
        if column.connect_schema().type != "string":
            return value
        for kind, arg in self._rules(i):  # Debezium's column.truncate/mask/hash, for string columns
            if kind == "truncate":
                value = F.substring(value, 1, int(arg))
            elif kind == "mask":  # a null too: Debezium's MaskingValueConverter masks whatever it gets
                value = F.lit("*" * int(arg))
            elif kind == "hash":
                algorithm, salt, _v2 = arg
                salted = F.concat(F.lit(salt), value)
                value = (F.md5(salted) if algorithm == "MD5" else F.sha1(salted) if algorithm == "SHA1"
                         else F.sha2(salted, int(algorithm[3:])))
                if column.char_length:  # Debezium shortens the hash to the column's length
                    value = F.substring(value, 1, column.char_length)
        return value

    def _row(self, texts: SparkColumn) -> SparkColumn:
        fields = [self._value(i, texts).alias(self.layout.columns[i].name) for i in self.kept]
        return F.when(texts.isNotNull(), F.struct(*fields))

    def _key(self, texts: SparkColumn) -> SparkColumn:
        return F.struct(*[self.layout.columns[i].spark_value(texts[i]).alias(self.layout.columns[i].name)
                          for i in self.key_positions])

    def _codes(self) -> tuple[SparkColumn, SparkColumn]:
        """(whether a row event changes its key, the codes of the records it makes: a delete its DELETE and
        TOMBSTONE (when enabled), a key change those and a CREATE, any other event one record)."""
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
                 .when(F.col("op") == "t", F.array(F.lit(TRUNCATE)))
                 .when(F.col("op") == "d", F.array(*gone))
                 .when(key_changed, F.array(*gone, F.lit(CREATE)))
                 .otherwise(F.array(F.lit(UPDATE))))
        # skipped.operations drops records, as Debezium's dispatcher does: a key change's delete (with its
        # tombstone) and create each by their own letter.
        dropped = [code for letter, codes_ in (("c", (CREATE,)), ("u", (UPDATE,)), ("d", (DELETE, TOMBSTONE)),
                                               ("t", (TRUNCATE,)))
                   if letter in self.shaping.skipped for code in codes_]
        if dropped:
            codes = F.filter(codes, lambda c: ~c.isin(*dropped))
        return key_changed, codes

    def counted(self) -> SparkColumn:
        """How many events of Debezium's transaction metadata a row event makes: its records but tombstones."""
        _, codes = self._codes()
        return F.size(F.filter(codes, lambda c: c != TOMBSTONE))

    @staticmethod
    def _transaction(columns: Sequence[str]) -> SparkColumn:
        """Debezium's `transaction` block (provide.transaction.metadata): the transaction's id, the event's
        place among the transaction's events and among its table's, counting from 1. Rows with `tx` carry how
        many events of their transaction (`tx_base`) and of its table (`tx_table_base`) come before them;
        `__sub` is the record's place among the row event's own records (none before a tombstone counts)."""
        block = TRANSACTION_SCHEMA.to_spark_type()
        if "tx" not in columns:
            return F.lit(None).cast(block)
        before = F.size(F.filter(F.slice(F.col("__codes"), 1, F.col("__sub")), lambda c: c != TOMBSTONE))
        return F.when(F.col("tx").isNotNull() & (F.col("__code") != TOMBSTONE), F.struct(
            F.col("tx").alias("id"), (F.col("tx_base") + before + 1).alias("total_order"),
            (F.col("tx_table_base") + before + 1).alias("data_collection_order")))

    def counts(self, rows: DataFrame, partitions: int) -> list[int]:
        """The records `records` makes of `rows` in each of its `partitions` Spark partitions
        (`RecordBatch.counts`): a pass over the row events' ops and keys only, no envelope built."""
        _, codes = self._codes()
        found = dict(rows.groupBy(F.spark_partition_id().alias("p")).agg(F.sum(F.size(codes))).collect())
        return [int(found.get(p) or 0) for p in range(partitions)]

    def records(self, rows: DataFrame, ts_ms: int, prefix_name: str) -> RecordBatch:
        """`rows` (ROW_COLUMNS) as records; `ts_ms` is the events' processing time (the batch's plan time)."""
        before, after = F.col("before"), F.col("after")
        key_changed, codes = self._codes()
        exploded = rows.select("*", codes.alias("__codes")).select(
            "*", F.posexplode("__codes").alias("__sub", "__code"))
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
            source.alias("source"), op.alias("op"), batch_constant(F.lit(ts_ms).cast("long")).alias("ts_ms"),
            self._transaction(rows.columns).alias("transaction"))
        value = F.when(code != TOMBSTONE, envelope)
        if self.key_schema is not None:  # a truncate event has none (Debezium's key schema is null for it)
            key = (F.when(code.isin(DELETE, TOMBSTONE), self._key(before))
                   .when(code != TRUNCATE, self._key(after)))
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
            batch_constant(F.timestamp_millis(F.lit(ts_ms))).alias(TIMESTAMP), (F.col("seq") * 4 + F.col("__sub")).alias(SEQ))
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
    # Debezium's Predicates.includes: each regular expression matches the whole name, ignoring case
    propagate = tuple(re.compile(p.strip(), flags) for p in config["column.propagate.source.type"] or [] if p.strip())
    propagate_types = tuple(re.compile(p.strip(), flags) for p in config["datatype.propagate.source.type"] or []
                            if p.strip())
    comments = bool(config["include.schema.comments"])
    return Shaping(
        prefix=config[C.TOPIC_PREFIX],
        tombstones=bool(config[C.TOMBSTONES_ON_DELETE]),
        with_query=bool(config[C.INCLUDE_QUERY]),
        key_columns=tuple((re.compile(p.pattern, flags), tuple(cols)) for p, cols in C.key_columns(config)),
        column_include=tuple(re.compile(p.strip(), flags) for p in config[C.COLUMN_INCLUDE] or []),
        column_exclude=tuple(re.compile(p.strip(), flags) for p in config[C.COLUMN_EXCLUDE] or []),
        rules=tuple((kind, arg, tuple(patterns)) for kind, arg, patterns in C.column_rules(config)),
        skipped=C.skipped_operations(config),
        decimal_mode=config["decimal.handling.mode"].strip().lower(),
        binary_mode=config["binary.handling.mode"].strip().lower(),
        bigint_mode=config["bigint.unsigned.handling.mode"].strip().lower(),
        time_mode=config["time.precision.mode"].strip().lower(),
        comments=comments,
        propagate=propagate,
        propagate_types=propagate_types,
        catalog=catalog_lookup(config) if propagate or propagate_types or comments else None,
    )


@dataclass(frozen=True)
class SourceColumn:
    """A column as Debezium's own table model has it (its DDL parser's reading of SHOW CREATE TABLE): the
    type name (upper case, with UNSIGNED/ZEROFILL), length and scale as `_column` gives them for
    tableChanges, and the comment as the statement spells it (only its quotes taken off)."""

    type_name: str
    length: int | None = None
    scale: int | None = None
    comment: str | None = None

    def parameters(self, comments: bool) -> tuple[tuple[str, str], ...]:
        """PropagateSourceTypeToSchemaParameter.alterFieldSchema's parameters, in its order (the comment only
        when the model has one: include.schema.comments)."""
        out = [("__debezium.source.column.type", self.type_name.upper())]
        if self.length is not None:
            out.append(("__debezium.source.column.length", str(self.length)))
        if self.scale is not None:
            out.append(("__debezium.source.column.scale", str(self.scale)))
        if comments and self.comment:
            out.append(("__debezium.source.column.comment", self.comment))
        return tuple(out)


def catalog_lookup(config) -> Callable[[str, str], dict[str, tuple[Column, SourceColumn]]]:
    """A function giving a table's columns as the catalog has them now: {name: (kind, SourceColumn)}. A binlog
    table map has neither type texts nor comments, so a table's are read when its events are built (as its
    defaults are: see the oracle's "defaults before a later DDL")."""
    def lookup(db: str, table: str) -> dict[str, tuple[Column, SourceColumn]]:
        from connectors.mysql import binlog
        from connectors.mysql import config as C

        conn = binlog.connect(C.connection_settings(config))
        try:
            cur = conn.cursor()
            mariadb = binlog.is_mariadb(cur)
            cur.execute("SELECT * FROM information_schema.COLUMNS WHERE TABLE_SCHEMA=%s AND TABLE_NAME=%s "
                        "ORDER BY ORDINAL_POSITION", (db, table))
            names = [d[0] for d in cur.description]
            rows = [dict(zip(names, r)) for r in cur.fetchall()]
        finally:
            conn.close()
        out = {}
        for row in rows:
            described = _catalog_column(row, None, mariadb)
            out[str(row["COLUMN_NAME"]).lower()] = (from_catalog(row, mariadb), SourceColumn(
                described["typeName"], described["length"], described["scale"],
                _shown_comment(row.get("COLUMN_COMMENT"))))
        return out
    return lookup


def _shown_comment(text) -> str | None:
    """A COMMENT as Debezium's parser keeps it: the literal SHOW CREATE TABLE prints (a quote doubled; a
    backslash, newline, carriage return or NUL escaped with a backslash), without its quotes; none when empty."""
    if not text:
        return None
    escapes = {"'": "''", "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\0": "\\0"}
    return "".join(escapes.get(ch, ch) for ch in str(text))


def _source_columns(layout: Layout, shaping: Shaping) -> tuple[SourceColumn, ...]:
    """Each column's SourceColumn: the catalog's when it has a column of that name and kind, else what the
    layout tells (the type `layout_structure` describes, no comment)."""
    wanted = shaping.catalog is not None and (shaping.comments or shaping.propagate or shaping.propagate_types)
    found = shaping.catalog(layout.db, layout.table) if wanted else {}
    out = []
    for i, c in enumerate(layout.columns):
        kind, source = found.get(c.name.lower(), (None, None))
        if source is None or not _same_kind(c, kind):
            described = _layout_column(c, i + 1, None)
            source = SourceColumn(described["typeName"], described["length"], described["scale"])
        out.append(source)
    return tuple(out)


# --- schema change events and heartbeats ---------------------------------------------------------------

SCHEMA_CHANGE_KEY = S.struct("io.debezium.connector.mysql.SchemaChangeKey", ("databaseName", S.STRING_SCHEMA),
                             version=1)
# Debezium 2.3's ConnectTableChangeSerializer: a change's `table` is the table's structure after the change.
COLUMN_SCHEMA = S.struct(
    "io.debezium.connector.schema.Column",
    ("name", S.STRING_SCHEMA), ("jdbcType", S.INT32_SCHEMA), ("nativeType", S.OPTIONAL_INT32_SCHEMA),
    ("typeName", S.STRING_SCHEMA), ("typeExpression", S.OPTIONAL_STRING_SCHEMA),
    ("charsetName", S.OPTIONAL_STRING_SCHEMA), ("length", S.OPTIONAL_INT32_SCHEMA),
    ("scale", S.OPTIONAL_INT32_SCHEMA), ("position", S.INT32_SCHEMA), ("optional", S.OPTIONAL_BOOLEAN_SCHEMA),
    ("autoIncremented", S.OPTIONAL_BOOLEAN_SCHEMA), ("generated", S.OPTIONAL_BOOLEAN_SCHEMA),
    ("comment", S.OPTIONAL_STRING_SCHEMA), ("defaultValueExpression", S.OPTIONAL_STRING_SCHEMA),
    ("enumValues", S.array(S.STRING_SCHEMA, optional=True)), version=1)
TABLE_SCHEMA = S.struct(
    "io.debezium.connector.schema.Table", ("defaultCharsetName", S.OPTIONAL_STRING_SCHEMA),
    ("primaryKeyColumnNames", S.array(S.STRING_SCHEMA, optional=True)), ("columns", S.array(COLUMN_SCHEMA)),
    ("comment", S.OPTIONAL_STRING_SCHEMA), version=1)
TABLE_CHANGE = S.struct("io.debezium.connector.schema.Change", ("type", S.STRING_SCHEMA), ("id", S.STRING_SCHEMA),
                        ("table", TABLE_SCHEMA), version=1)
SCHEMA_CHANGE_VALUE = S.struct(
    "io.debezium.connector.mysql.SchemaChangeValue", ("source", SOURCE_SCHEMA), ("ts_ms", S.INT64_SCHEMA),
    ("databaseName", S.OPTIONAL_STRING_SCHEMA), ("schemaName", S.OPTIONAL_STRING_SCHEMA),
    ("ddl", S.OPTIONAL_STRING_SCHEMA), ("tableChanges", S.array(TABLE_CHANGE)), version=1)
HEARTBEAT_KEY = S.struct("io.debezium.connector.common.ServerNameKey", ("serverName", S.STRING_SCHEMA))
HEARTBEAT_VALUE = S.struct("io.debezium.connector.common.Heartbeat", ("ts_ms", S.INT64_SCHEMA))


def schema_changes(ddl: DataFrame, prefix: str, ts_ms: int) -> RecordBatch:
    """Debezium's schema change events (topic `<topic.prefix>`, keyed by database) of the decoded DDL rows.
    Each row's `table_changes` is its `tableChanges` as JSON text (`table_changes_json`, made on the driver
    by the task: a few items per statement); a row without one has none."""
    changes_type = S.array(TABLE_CHANGE).to_spark_type()
    empty = F.array().cast(changes_type)
    change = (F.coalesce(F.from_json(F.col("table_changes"), changes_type), empty)
              if "table_changes" in ddl.columns else empty)
    # A snapshot's statements (snap, src_ts_ms) are the snapshot's; `tbl` is each statement's table.
    snapshot = "snap" in ddl.columns
    source = F.struct(
        F.lit(SOURCE_VERSION).alias("version"), F.lit("mysql").alias("connector"), F.lit(prefix).alias("name"),
        (F.col("src_ts_ms") if snapshot else F.col("ts_sec") * 1000).alias("ts_ms"),
        (F.col("snap") if snapshot else F.lit("false")).alias("snapshot"), F.col("db").alias("db"),
        F.lit(None).cast("string").alias("sequence"),
        F.col("tbl").alias("table"),
        F.col("server_id").alias("server_id"), F.col("gtid").alias("gtid"), F.col("file").alias("file"),
        F.col("pos").alias("pos"), F.lit(0).alias("row"),
        # null, as Debezium's: it takes the thread from a transaction's BEGIN, which a DDL statement has none of
        F.lit(None).cast("long").alias("thread"),
        F.lit(None).cast("string").alias("query"))
    value = F.struct(source.alias("source"), batch_constant(F.lit(ts_ms).cast("long")).alias("ts_ms"), F.col("db").alias("databaseName"),
                     F.lit(None).cast("string").alias("schemaName"), F.col("query").alias("ddl"),
                     change.alias("tableChanges"))
    df = ddl.select(
        F.lit(prefix).alias(TOPIC), F.lit(None).cast("int").alias(PARTITION),
        F.struct(F.coalesce(F.col("db"), F.lit("")).alias("databaseName")).alias(KEY), value.alias(VALUE),
        F.lit(None).cast(_HEADERS).alias(HEADERS), batch_constant(F.timestamp_millis(F.lit(ts_ms))).alias(TIMESTAMP),
        (F.col("seq") * 4).alias(SEQ))
    return RecordBatch(df, SCHEMA_CHANGE_KEY, SCHEMA_CHANGE_VALUE, topics=(prefix,))


# --- tableChanges: what a DDL statement changed, and each table's structure as Debezium describes it ------
#
# Debezium (2.3, MySQL) builds `tableChanges` from its DDL parser's model of each table:
#   CREATE TABLE                     CREATE, the new table
#   ALTER TABLE (RENAME TO n too)    ALTER, the table after it (named n after a rename)
#   RENAME TABLE a TO b, ...         ALTER, table b (one per pair)
#   DROP TABLE                       nothing: the table has left the model when the event is made, and 2.3's
#                                    Change schema has no optional `table`, so the list is empty
#   TRUNCATE, views, databases, CREATE/DROP INDEX, anything else: nothing
# (CREATE UNIQUE INDEX on a table without a primary key is an ALTER in Debezium; here it has nothing.)
# Debezium emits one event per table a statement changes; here a statement is one event listing them all.
#
# A column is described the way Debezium's parser describes it from the text of its type, as the server
# prints it (SHOW CREATE TABLE, information_schema.COLUMNS.COLUMN_TYPE):
#   jdbcType        java.sql.Types of the type name: TINYINT/SMALLINT 5 (SMALLINT), MEDIUMINT/INT/YEAR 4,
#                   BIGINT -5, FLOAT 6, DOUBLE 8, DECIMAL 3, BIT -7, DATE 91, TIME 92, DATETIME 93,
#                   TIMESTAMP 2014, CHAR/ENUM/SET 1, VARCHAR/*TEXT 12, BINARY -2, VARBINARY -3, *BLOB 2004,
#                   JSON and spatial types 1111 (OTHER)
#   typeName        the type's name upper case with SIGNED/UNSIGNED/ZEROFILL ("INT UNSIGNED"); typeExpression
#                   the same text; nativeType null
#   length, scale   the numbers in the parentheses (int(11): 11; decimal(10,2): 10 and 2; datetime(3): 3), none
#                   without them; ENUM 1, SET 2n-1 (n options)
#   charsetName     character types (CHAR, VARCHAR, ENUM, SET, TEXT): the column's charset, else the table's
#   optional        nullable; primary key columns are not
#   autoIncremented, generated   both AUTO_INCREMENT (Debezium marks an auto-increment column generated)
#   defaultValueExpression       the DEFAULT literal without its quotes ('x' -> x, b'1' -> 1, 7 -> 7),
#                   CURRENT_TIMESTAMP -> 1970-01-01 00:00:00, none for NULL and for expressions
#   enumValues      ENUM/SET options as written, quotes included ('a'), as Debezium keeps them
#   comment         null (Debezium's include.schema.comments is off by default), for the table too
# primaryKeyColumnNames: the primary key, else the first unique index (whose columns Debezium then makes
# required); defaultCharsetName: the table's charset.
#
# Where this differs from Debezium: Debezium parses the statement as written, so a streamed `n INT` has no
# length and `BOOL` is BOOLEAN; here the type is as the server keeps it (MariaDB: int(11), tinyint(1)), as
# Debezium sees it after a snapshot or restart reads SHOW CREATE TABLE.

JDBC_TYPES = {
    "BIT": -7, "TINYINT": -6, "SMALLINT": 5, "INTEGER": 4, "BIGINT": -5, "FLOAT": 6, "REAL": 7, "DOUBLE": 8,
    "NUMERIC": 2, "DECIMAL": 3, "CHAR": 1, "VARCHAR": 12, "LONGVARCHAR": -1, "DATE": 91, "TIME": 92,
    "TIMESTAMP": 93, "BINARY": -2, "VARBINARY": -3, "LONGVARBINARY": -4, "OTHER": 1111, "BLOB": 2004,
    "CLOB": 2005, "BOOLEAN": 16, "NCHAR": -15, "NVARCHAR": -9, "LONGNVARCHAR": -16, "NCLOB": 2011,
    "TIMESTAMP_WITH_TIMEZONE": 2014,
}
"""java.sql.Types."""
_MYSQL_JDBC = {  # MySqlAntlrDdlParser's data type entries
    "tinyint": "SMALLINT", "int1": "SMALLINT", "smallint": "SMALLINT", "int2": "SMALLINT", "mediumint": "INTEGER",
    "int3": "INTEGER", "middleint": "INTEGER", "int": "INTEGER", "integer": "INTEGER", "int4": "INTEGER",
    "bigint": "BIGINT", "int8": "BIGINT", "serial": "BIGINT", "real": "REAL", "double": "DOUBLE",
    "double precision": "DOUBLE", "float8": "DOUBLE", "float": "FLOAT", "float4": "FLOAT", "decimal": "DECIMAL",
    "dec": "DECIMAL", "fixed": "DECIMAL", "numeric": "NUMERIC", "bit": "BIT", "time": "TIME",
    "timestamp": "TIMESTAMP_WITH_TIMEZONE", "datetime": "TIMESTAMP", "binary": "BINARY", "varbinary": "VARBINARY",
    "blob": "BLOB", "tinyblob": "BLOB", "mediumblob": "BLOB", "longblob": "BLOB", "year": "INTEGER", "date": "DATE",
    "bool": "BOOLEAN", "boolean": "BOOLEAN", "char": "CHAR", "character": "CHAR", "varchar": "VARCHAR",
    "tinytext": "VARCHAR", "text": "VARCHAR", "mediumtext": "VARCHAR", "longtext": "VARCHAR", "nchar": "NCHAR",
    "nvarchar": "NVARCHAR", "enum": "CHAR", "set": "CHAR",
}
_CHARSET_JDBC = {JDBC_TYPES[t] for t in ("CHAR", "VARCHAR", "LONGVARCHAR", "CLOB", "NCHAR", "NVARCHAR",
                                          "LONGNVARCHAR", "NCLOB")}
"""Column.typeUsesCharset (DATALINK and SQLXML never come from MySQL)."""
_DEFAULT_DIMENSIONS = {"decimal": (10, 0), "dec": (10, 0), "fixed": (10, 0), "numeric": (10, 0)}
_NAME = r"(?:`(?:[^`]|``)+`|[\w$]+)"
_QUALIFIED = rf"({_NAME})(?:\s*\.\s*({_NAME}))?"


def table_id(db: str, table: str) -> str:
    """Debezium's TableId.toDoubleQuotedString for MySQL (the database is the catalog): "db"."t"."""
    return ".".join('"' + part.replace('"', '""') + '"' for part in (db, table) if part)


@dataclass(frozen=True)
class DdlTargets:
    """What one DDL statement does to tables: `changes` are (type, db, table) items of its tableChanges (the
    table named as it is after the statement); `touched` the tables whose structure (or existence) changes."""

    changes: tuple[tuple[str, str, str], ...] = ()
    touched: tuple[tuple[str, str], ...] = ()


def ddl_targets(query: str | None, db: str | None) -> DdlTargets:
    """The tables a DDL statement (as the binlog has it, run in database `db`) creates, alters or drops."""
    text = re.sub(r"(?s)^\s*(?:/\*.*?\*/\s*)*", "", query or "")

    def name(m, i: int = 1) -> tuple[str, str] | None:
        first, second = _unquote(m.group(i)), m.group(i + 1)
        if second is not None:
            return first, _unquote(second)
        return (db, first) if db else None

    m = re.match(rf"(?is)CREATE\s+(?:OR\s+REPLACE\s+)?(?:TEMPORARY\s+)?TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?{_QUALIFIED}",
                 text)
    if m:
        t = name(m)
        return DdlTargets((("CREATE", *t),), (t,)) if t else DdlTargets()
    m = re.match(rf"(?is)ALTER\s+(?:ONLINE\s+|IGNORE\s+)*TABLE\s+(?:IF\s+EXISTS\s+)?{_QUALIFIED}", text)
    if m:
        t = name(m)
        if not t:
            return DdlTargets()
        r = re.search(rf"(?is)\bRENAME\s+(?:TO\s+|AS\s+)?(?!(?:COLUMN|INDEX|KEY)\b){_QUALIFIED}", text[m.end():])
        new = name(r) if r else None
        return DdlTargets((("ALTER", *(new or t)),), (t, new) if new else (t,))
    m = re.match(r"(?is)RENAME\s+TABLES?\s+(?:IF\s+EXISTS\s+)?", text)
    if m:
        changes, touched = [], []
        pair = rf"(?is){_QUALIFIED}\s+(?:WAIT\s+\d+\s+|NOWAIT\s+)?TO\s+{_QUALIFIED}"
        for p in re.finditer(pair, text[m.end():]):
            old, new = name(p, 1), name(p, 3)
            if old and new:
                changes.append(("ALTER", *new))
                touched += [old, new]
        return DdlTargets(tuple(changes), tuple(touched))
    m = re.match(r"(?is)DROP\s+(?:TEMPORARY\s+)?TABLES?\s+(?:IF\s+EXISTS\s+)?", text)
    if m:
        touched, pos, one = [], m.end(), re.compile(rf"(?is)\s*{_QUALIFIED}\s*(,?)")
        while (p := one.match(text, pos)) is not None:  # a, b, `c`.`d` /* generated by server */
            t = name(p)
            if t:
                touched.append(t)
            if not p.group(3):
                break
            pos = p.end()
        return DdlTargets((), tuple(touched))
    return DdlTargets()


def statement_table(query: str | None, db: str | None) -> str | None:
    """The table a schema change event's source names (Debezium's `source.table`): the table the statement
    creates, alters (as named after it), renames to, drops or truncates; the first where it names several,
    whose events Debezium writes one per table. None for a statement on no table."""
    targets = ddl_targets(query, db)
    if targets.changes:
        return targets.changes[0][2]
    if targets.touched:
        return targets.touched[0][1]
    emptied = truncated(query, db)
    return emptied[1] if emptied else None


def event_ddl(query: str, db: str | None) -> str:
    """A schema change event's `ddl`: the statement, but a DROP TABLE of one table as Debezium's parser
    writes it back (`DROP TABLE [IF EXISTS] `db`.`t``: qualified, without the server's comment)."""
    m = re.match(r"(?is)\s*(?:/\*.*?\*/\s*)*DROP\s+(TEMPORARY\s+)?TABLES?\s+(IF\s+EXISTS\s+)?", query or "")
    targets = ddl_targets(query, db)
    if not m or len(targets.touched) != 1:
        return query
    d, t = targets.touched[0]
    quoted = ".".join("`" + part.replace("`", "``") + "`" for part in (d, t))
    return f"DROP {'TEMPORARY ' if m.group(1) else ''}TABLE {'IF EXISTS ' if m.group(2) else ''}{quoted}"


def truncated(query: str | None, db: str | None) -> tuple[str, str] | None:
    """The table a TRUNCATE statement (run in database `db`) empties; None for any other statement."""
    m = re.match(rf"(?is)\s*(?:/\*.*?\*/\s*)*TRUNCATE\s+(?:TABLE\s+)?{_QUALIFIED}", query or "")
    if not m:
        return None
    first, second = _unquote(m.group(1)), m.group(2)
    return (first, _unquote(second)) if second is not None else ((db, first) if db else None)


def _unquote(part: str) -> str:
    return part[1:-1].replace("``", "`") if part.startswith("`") else part


@dataclass(frozen=True)
class Structure:
    """A table's structure in Debezium's `io.debezium.connector.schema.Table` shape (`table`, as JSON-ready
    dicts), and each column's kind as the connector's decoder sees it (to match it with a table map)."""

    table: dict
    kinds: dict[str, Column] = field(default_factory=dict)


def read_structure(cur, db: str, table: str, mariadb: bool) -> Structure | None:
    """A table's structure from information_schema (TABLES, COLUMNS, STATISTICS); None when it is
    not there (dropped or renamed since) or is not a table."""
    cur.execute("SELECT t.TABLE_TYPE, t.TABLE_COLLATION, c.CHARACTER_SET_NAME FROM information_schema.TABLES t "
                "LEFT JOIN information_schema.COLLATIONS c ON c.COLLATION_NAME = t.TABLE_COLLATION "
                "WHERE t.TABLE_SCHEMA=%s AND t.TABLE_NAME=%s", (db, table))
    found = cur.fetchone()
    if found is None or str(found[0]) not in ("BASE TABLE", "SYSTEM VERSIONED"):
        return None
    charset = found[2] or (str(found[1]).split("_")[0] if found[1] else None)
    cur.execute("SELECT * FROM information_schema.COLUMNS WHERE TABLE_SCHEMA=%s AND TABLE_NAME=%s "
                "ORDER BY ORDINAL_POSITION", (db, table))
    names = [d[0] for d in cur.description]
    columns = [dict(zip(names, r)) for r in cur.fetchall()]
    cur.execute("SELECT INDEX_NAME, NON_UNIQUE, SEQ_IN_INDEX, COLUMN_NAME FROM information_schema.STATISTICS "
                "WHERE TABLE_SCHEMA=%s AND TABLE_NAME=%s", (db, table))
    indexes = [dict(zip(("INDEX_NAME", "NON_UNIQUE", "SEQ_IN_INDEX", "COLUMN_NAME"), r)) for r in cur.fetchall()]
    if not columns:
        return None
    return catalog_structure(columns, indexes, str(charset) if charset else None, mariadb)


def catalog_structure(columns: Sequence[dict], indexes: Sequence[dict], charset: str | None,
                      mariadb: bool = True) -> Structure:
    """A table's structure from its information_schema rows: `columns` (COLUMNS, by ORDINAL_POSITION),
    `indexes` (STATISTICS: INDEX_NAME, NON_UNIQUE, SEQ_IN_INDEX, COLUMN_NAME, in the server's order) and
    its default `charset`. `mariadb`: MariaDB quotes string defaults in COLUMN_DEFAULT, MySQL does not."""
    names = [str(c["COLUMN_NAME"]) for c in columns]
    keys: dict[str, list[tuple[int, str]]] = {}
    unique: dict[str, bool] = {}
    for r in indexes:
        index = str(r["INDEX_NAME"])
        unique.setdefault(index, int(r["NON_UNIQUE"]) == 0)
        keys.setdefault(index, []).append((int(r["SEQ_IN_INDEX"]), str(r["COLUMN_NAME"]) if r["COLUMN_NAME"] else ""))
    pk: list[str] = []
    if "PRIMARY" in keys:
        pk = [c for _, c in sorted(keys["PRIMARY"])]
    else:  # Debezium takes the first unique key (SHOW CREATE TABLE lists them first) of known columns
        for index, parts in keys.items():
            cols = [c for _, c in sorted(parts)]
            if unique[index] and all(c in names for c in cols):
                pk = cols
                break
    out, kinds = [], {}
    for row in columns:
        column = _catalog_column(row, charset, mariadb)
        if column["name"] in pk:
            column["optional"] = False
        out.append(column)
        kinds[column["name"]] = from_catalog(row, mariadb)
    return Structure({"defaultCharsetName": charset, "primaryKeyColumnNames": pk, "columns": out, "comment": None},
                     kinds)


def _catalog_column(row: dict, table_charset: str | None, mariadb: bool) -> dict:
    text = str(row["COLUMN_TYPE"])
    m = re.match(r"(?is)^\s*([a-z][a-z0-9_ ]*?)\s*(?:\((.*)\))?((?:\s+(?:signed|unsigned|zerofill))*)\s*$", text)
    base, args, suffix = (m.group(1).lower(), m.group(2), m.group(3).lower().split()) if m else (text.lower(), None, [])
    extra = str(row.get("EXTRA") or "")
    labels = _option_texts(args) if base in ("enum", "set") and args is not None else None
    dims = [] if args is None or labels is not None else [a.strip() for a in args.split(",")]
    return _column(str(row["COLUMN_NAME"]), int(row["ORDINAL_POSITION"]), base, dims, labels, suffix,
                   row["IS_NULLABLE"] == "YES", row.get("CHARACTER_SET_NAME"), table_charset,
                   default_expression(row.get("COLUMN_DEFAULT"), extra, mariadb), "auto_increment" in extra.lower())


def _column(name: str, position: int, base: str, dims: list[str], labels: list[str] | None, suffix: list[str],
            nullable: bool, charset: str | None, table_charset: str | None, default: str | None,
            auto: bool) -> dict:
    jdbc = JDBC_TYPES[_MYSQL_JDBC.get(base, "OTHER")]
    type_name = " ".join([base.upper()] + [t.upper() for t in ("signed", "unsigned", "zerofill") if t in suffix])
    length = scale = None
    if base == "enum":
        length = 1
    elif base == "set":
        length = max(0, 2 * len(labels or []) - 1)
    elif dims and dims[0].isdigit():
        length = int(dims[0])
        if len(dims) > 1 and dims[1].isdigit():
            scale = int(dims[1])
    elif base in _DEFAULT_DIMENSIONS:
        length, scale = _DEFAULT_DIMENSIONS[base]
    return {
        "name": name, "jdbcType": jdbc, "nativeType": None, "typeName": type_name, "typeExpression": type_name,
        "charsetName": (charset or table_charset) if jdbc in _CHARSET_JDBC else None, "length": length,
        "scale": scale, "position": position, "optional": nullable, "autoIncremented": auto, "generated": auto,
        "comment": None, "defaultValueExpression": default, "enumValues": labels or None,
    }


def _option_texts(inner: str) -> list[str]:
    """'a','b''c' -> ["'a'", "'b''c'"]: each option's literal as written (Debezium keeps the quotes)."""
    return re.findall(r"'(?:[^'\\]|''|\\.)*'", inner)


_FAMILY_TYPES = {"binary": "varbinary"}
"""Decoder families whose type name differs (a table map does not tell BINARY from VARBINARY)."""


def layout_structure(layout: Layout, charset: str | None, reference: Structure | None = None) -> dict:
    """A table's structure from a binlog table map (names, types, nullability, key, ENUM/SET options).
    A table map has no character lengths, integer display widths, defaults, AUTO_INCREMENT or per-column
    charsets: a column found in `reference` (the table's structure from the catalog) under the same name
    with the same kind is taken from there; the others have no length and the table's charset."""
    pk = [layout.columns[i].name for i in layout.pk]
    out = []
    for i, c in enumerate(layout.columns):
        known = reference.kinds.get(c.name) if reference is not None else None
        if known is not None and _same_kind(c, known):
            column = dict(next(x for x in reference.table["columns"] if x["name"] == c.name))
            column["position"] = i + 1
        else:
            column = _layout_column(c, i + 1, charset)
        if c.name in pk:
            column["optional"] = False
        out.append(column)
    return {"defaultCharsetName": charset, "primaryKeyColumnNames": pk, "columns": out, "comment": None}


def _layout_column(c: Column, position: int, charset: str | None) -> dict:
    """A column's structure from what a table map tells of it (`layout_structure`)."""
    base = _FAMILY_TYPES.get(c.family, c.family)
    dims: list[str] = []
    if c.family == "decimal":
        dims = [str(c.precision or 10), str(c.scale or 0)]
    elif c.family in ("datetime", "timestamp", "time") and c.fsp:
        dims = [str(c.fsp)]
    elif c.family == "bit":
        dims = [str(c.bits or 1)]
    labels = (["'" + x.replace("'", "''") + "'" for x in c.labels] if c.family in ("enum", "set") else None)
    return _column(c.name, position, base, dims, labels, ["unsigned"] if c.unsigned else [], c.nullable,
                   None, charset, None, False)


def _same_kind(a: Column, b: Column) -> bool:
    """Whether a table map's column and a catalog column are the same type (as far as a table map tells)."""
    if (a.family, a.nullable, a.binary, tuple(a.labels)) != (b.family, b.nullable, b.binary, tuple(b.labels)):
        return False
    if a.family in ("tinyint", "smallint", "mediumint", "int", "bigint") and a.unsigned != b.unsigned:
        return False
    if a.family == "decimal":
        return (a.precision, a.scale) == (b.precision, b.scale)
    if a.family in ("datetime", "timestamp", "time"):
        return (a.fsp or 0) == (b.fsp or 0)
    if a.family == "bit":
        return (a.bits or 1) == (b.bits or 1)
    return True


def table_changes_json(items: Sequence[tuple[str, str, str, dict]]) -> str:
    """`tableChanges` as JSON text: (type, db, table, structure) items."""
    return json.dumps([{"type": kind, "id": table_id(db, table), "table": structure}
                       for kind, db, table, structure in items], separators=(",", ":"))


TRANSACTION_KEY = S.struct("io.debezium.connector.common.TransactionMetadataKey", ("id", S.STRING_SCHEMA),
                           version=1)
TRANSACTION_COUNT = S.struct("event.collection", ("data_collection", S.STRING_SCHEMA),
                             ("event_count", S.INT64_SCHEMA), optional=True, version=1)
TRANSACTION_VALUE = S.struct(
    "io.debezium.connector.common.TransactionMetadataValue", ("status", S.STRING_SCHEMA), ("id", S.STRING_SCHEMA),
    ("event_count", S.OPTIONAL_INT64_SCHEMA), ("data_collections", S.array(TRANSACTION_COUNT, optional=True)),
    ("ts_ms", S.INT64_SCHEMA), version=1)


def transaction_records(marks: DataFrame, counts: DataFrame, topic: str, ts_ms: int) -> RecordBatch:
    """Debezium's transaction topic: a BEGIN and an END record of every transaction of the range (`marks`:
    the decoded txbegin and txend rows), each END with how many events the transaction made, in all and by
    table (`counts`: tx, data_collection, n, first, a row per table of the transaction that made events, `first`
    the seq of its first). The tables are listed as Debezium 2.3's HashMap iterates them (`java_hash_order`)."""
    item = TRANSACTION_COUNT.to_spark_type()
    listed = counts.groupBy("tx").agg(
        F.sum("n").alias("event_count"),
        java_hash_order(F.collect_list(F.struct("first", "data_collection", "n"))).alias("data_collections"))
    ends = marks.join(listed, "tx", "left")
    end = F.col("kind") == "txend"
    value = F.struct(
        F.when(end, F.lit("END")).otherwise(F.lit("BEGIN")).alias("status"), F.col("tx").alias("id"),
        F.when(end, F.coalesce(F.col("event_count"), F.lit(0))).cast("long").alias("event_count"),
        F.when(end, F.coalesce(F.col("data_collections"), F.array().cast(f"array<{item.simpleString()}>")))
        .alias("data_collections"),
        (F.col("ts_sec") * 1000).alias("ts_ms"))
    df = ends.select(
        F.lit(topic).alias(TOPIC), F.lit(None).cast("int").alias(PARTITION),
        F.struct(F.col("tx").alias("id")).alias(KEY),
        value.alias(VALUE), F.lit(None).cast(_HEADERS).alias(HEADERS),
        batch_constant(F.timestamp_millis(F.lit(ts_ms))).alias(TIMESTAMP), (F.col("seq") * 4).alias(SEQ))
    return RecordBatch(df, TRANSACTION_KEY, TRANSACTION_VALUE, topics=(topic,))


def java_hash_order(items: SparkColumn) -> SparkColumn:
    """(first, data_collection, n) structs as {data_collection, event_count} in the order Java's HashMap<String,
    Long> iterates them after inserting them by `first`: by bucket (String.hashCode, spread as HashMap.hash,
    masked by the table size: 16, doubled while more than 3/4 full), then in insertion order. (A bucket of 8 or
    more would become a tree: not modelled.) Spark expressions only (`ingest.records.java`)."""
    capacity = hashmap_capacity(F.size(items))
    keyed = F.transform(items, lambda x: F.struct(
        hashmap_bucket(x["data_collection"], capacity).alias("bucket"), x["first"].alias("first"),
        x["data_collection"].alias("data_collection"), x["n"].alias("event_count")))
    return F.transform(F.array_sort(keyed), lambda x: F.struct(
        x["data_collection"].alias("data_collection"), x["event_count"].cast("long").alias("event_count")))


def heartbeat(spark, topic: str, prefix: str, ts_ms: int) -> RecordBatch:
    """One heartbeat record (Debezium's `ServerNameKey` and `Heartbeat`): the batch's offset moved on."""
    df = spark.range(1).select(
        F.lit(topic).alias(TOPIC), F.lit(None).cast("int").alias(PARTITION),
        F.struct(F.lit(prefix).alias("serverName")).alias(KEY),
        F.struct(batch_constant(F.lit(ts_ms).cast("long")).alias("ts_ms")).alias(VALUE), F.lit(None).cast(_HEADERS).alias(HEADERS),
        batch_constant(F.timestamp_millis(F.lit(ts_ms))).alias(TIMESTAMP), F.lit(0).cast("long").alias(SEQ))
    return RecordBatch(df, HEARTBEAT_KEY, HEARTBEAT_VALUE, topics=(topic,))
