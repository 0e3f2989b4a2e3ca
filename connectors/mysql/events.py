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

What a table is (`Layout`, Debezium's descriptions for tableChanges) is structure.py; what is read from the
server's catalog for the events (source types and comments: `catalog_lookup`) is catalog.py.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from pyspark.sql import Column as SparkColumn
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from connectors.mysql import config as C
from connectors.mysql.catalog import catalog_lookup
from connectors.mysql.structure import Layout, SourceColumn, layout_column, same_kind
from connectors.transforms.headers import header_array, header_text
from ingest.errors import FatalError
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
            batch_constant(F.timestamp_millis(F.lit(ts_ms))).alias(TIMESTAMP),
            (F.col("seq") * 4 + F.col("__sub")).alias(SEQ))
        return RecordBatch(df, self.key_schema, self.value_schema, topics=(self.topic,))


_HEADERS = "array<struct<key:string,value:string>>"
NEWKEY_HEADER = "__debezium.newkey"
OLDKEY_HEADER = "__debezium.oldkey"


def _required(schema: S.ConnectSchema) -> S.ConnectSchema:
    return replace(schema, optional=False)


def shaping_of(config) -> Shaping:
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


def _source_columns(layout: Layout, shaping: Shaping) -> tuple[SourceColumn, ...]:
    """Each column's SourceColumn: the catalog's when it has a column of that name and kind, else what the
    layout tells (the type `layout_structure` describes, no comment)."""
    wanted = shaping.catalog is not None and (shaping.comments or shaping.propagate or shaping.propagate_types)
    found = shaping.catalog(layout.db, layout.table) if wanted else {}
    out = []
    for i, c in enumerate(layout.columns):
        kind, source = found.get(c.name.lower(), (None, None))
        if source is None or not same_kind(c, kind):
            described = layout_column(c, i + 1, None)
            source = SourceColumn(described["typeName"], described["length"], described["scale"])
        out.append(source)
    return tuple(out)

MAX_DECIMAL_DIGITS = 38  # Spark's DecimalType; MySQL's DECIMAL goes to 65


def table_events(layout: Layout, shaping: Shaping) -> TableEvents:
    """The events of one layout's rows; a FatalError (nothing emitted) where the configuration or the
    columns keep them from being made: message.key.columns naming a column the table lacks, or a DECIMAL
    wider than Spark's decimals."""
    try:
        events = TableEvents(layout, shaping)
    except KeyError as e:
        raise FatalError(str(e.args[0])) from None
    wide = [f"{c.name} DECIMAL({c.precision},{c.scale})" for c in (layout.columns[i] for i in events.kept)
            if c.family == "decimal" and (c.precision or 0) > MAX_DECIMAL_DIGITS]
    if wide:
        raise FatalError(f"{layout.db}.{layout.table} has {', '.join(wide)}: more than {MAX_DECIMAL_DIGITS} "
                         "digits, which this connector's records (Spark decimals) cannot hold, where Debezium "
                         f"writes them. Leave the column out ({C.COLUMN_EXCLUDE}) or narrow it")
    return events


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
    value = F.struct(source.alias("source"), batch_constant(F.lit(ts_ms).cast("long")).alias("ts_ms"),
                     F.col("db").alias("databaseName"),
                     F.lit(None).cast("string").alias("schemaName"), F.col("query").alias("ddl"),
                     change.alias("tableChanges"))
    df = ddl.select(
        F.lit(prefix).alias(TOPIC), F.lit(None).cast("int").alias(PARTITION),
        F.struct(F.coalesce(F.col("db"), F.lit("")).alias("databaseName")).alias(KEY), value.alias(VALUE),
        F.lit(None).cast(_HEADERS).alias(HEADERS), batch_constant(F.timestamp_millis(F.lit(ts_ms))).alias(TIMESTAMP),
        (F.col("seq") * 4).alias(SEQ))
    return RecordBatch(df, SCHEMA_CHANGE_KEY, SCHEMA_CHANGE_VALUE, topics=(prefix,))


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
        F.struct(batch_constant(F.lit(ts_ms).cast("long")).alias("ts_ms")).alias(VALUE),
        F.lit(None).cast(_HEADERS).alias(HEADERS),
        batch_constant(F.timestamp_millis(F.lit(ts_ms))).alias(TIMESTAMP), F.lit(0).cast("long").alias(SEQ))
    return RecordBatch(df, HEARTBEAT_KEY, HEARTBEAT_VALUE, topics=(topic,))
