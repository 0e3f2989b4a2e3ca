"""The server side of CDC: what the server says about its binlog, and decoding a range of it on executors.

Decoding is a Python DataSource: each input partition is one segment of the batch's binlog range (a
file, or the part of a file the range covers), read over its own replica connection with a server id of
its own (`database.server.id` + 1 + segment), so closed binlog files decode in parallel. A segment yields
Arrow batches of at most `max.batch.size` events in one generic shape (`DECODED`): every column value as
the canonical text of `types.py`, and, once per table-map layout the segment meets, a `tablemap` row
carrying the columns as JSON. Nothing of a batch passes through the driver.

Two traps of python-mysql-replication 1.0 (DESIGN §5) are avoided here: a start by file and position
never sets `is_mariadb` (which makes the library ignore both), and a start by GTID on MariaDB sends a
COM_BINLOG_DUMP of the right length (the library's declares one byte too few; on a large binlog the
server drops the connection and the library re-reads from the same GTID forever).

A snapshot's consistent read is snapshot_source.py's data source; what is read from the server's catalog
(table structures, the columns' fingerprint, a snapshot's statements) is catalog.py.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import struct
from collections.abc import Container, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from connectors.mysql import ddl, gtid, rowcodec, tls
from connectors.mysql.config import TableFilter
from connectors.mysql.types import Column, from_table_map

FORMAT = "lakeconnect_mysql_binlog"
SECRET_OPTION = "connection.secret.options"
"""Connection settings travel as one option whose name matches spark.redaction.regex (hidden in plans,
the UI and logs)."""

DECODED = ("seq long, kind string, db string, tbl string, tm string, op string, before array<string>, "
           "after array<string>, ts_sec long, file string, pos long, row int, server_id long, gtid string, "
           "thread long, query string, tx string")
"""kind: row, tablemap, ddl; with transactions (provide.transaction.metadata) also txbegin and txend, and `tx`
the transaction's id on those and on its rows (`transaction_id`)."""
MAX_SEGMENT_IDS = 16
"""Server ids the parallel decoders take after database.server.id (one per binlog file, in turn)."""
SEGMENT_BITS = 40
"""seq = segment << SEGMENT_BITS | event number within the segment: binlog order across segments."""


@dataclass(frozen=True)
class Position:
    file: str
    pos: int

    def __lt__(self, other: Position) -> bool:
        return (_file_number(self.file), self.pos) < (_file_number(other.file), other.pos)

    def __le__(self, other: Position) -> bool:
        return self == other or self < other


def _file_number(name: str) -> int:
    suffix = name.rsplit(".", 1)[-1]
    return int(suffix) if suffix.isdigit() else 0


@dataclass
class Segment(InputPartition):
    index: int
    file: str
    start: int  # position of the first event to read (4 = the file's start)
    end: int | None  # read events that end at or before this position; None = to the end of the file


def segments(binlogs: list[tuple[str, int]], start: Position, end: Position) -> list[Segment]:
    """The segments of the range (start, end]: one per binlog file it touches."""
    names = [name for name, _ in binlogs]
    if start.file not in names:
        raise LookupError(start.file)
    out: list[Segment] = []
    for name in names[names.index(start.file):]:
        if _file_number(name) > _file_number(end.file):
            break
        s = start.pos if name == start.file else 4
        e = end.pos if name == end.file else None
        if e is not None and e <= s:
            continue
        out.append(Segment(len(out), name, s, e))
    return out


class BinlogDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> str:
        return DECODED

    def reader(self, schema) -> DataSourceReader:
        return BinlogReader(self.options)


class BinlogReader(DataSourceReader):
    def __init__(self, options: Mapping[str, str]):
        self.connection = json.loads(options[SECRET_OPTION])
        self.server_id = int(options["server_id"])
        self.segments = [Segment(*s) for s in json.loads(options["segments"])]
        self.tables = TableFilter.from_json(json.loads(options["tables"]))
        self.chunk = int(options.get("chunk", "2048"))
        self.with_query = options.get("query", "false") == "true"
        self.transactions = options.get("transactions", "false") == "true"
        self.on_failure = options.get("on_failure", "fail")
        self.unreadable = options.get("unreadable") or None
        # The schema history's model where each segment starts (ddl.py): {"models": [...], "of": {index: i}}
        self.models = json.loads(options.get("models", "null")) or {"models": [], "of": {}}

    def partitions(self) -> list[Segment]:
        return self.segments

    def read(self, segment: Segment) -> Iterator[Any]:
        import pyarrow as pa

        schema = _arrow_schema()

        def batch(records: list[tuple]) -> pa.RecordBatch:  # the records' fields, column by column
            return pa.RecordBatch.from_arrays([pa.array(values, type=f.type) for f, values in
                                               zip(schema, zip(*records))], schema=schema)

        records: list[tuple] = []
        which = self.models["of"].get(str(segment.index))
        model = self.models["models"][which] if which is not None else None
        for record in decode(self.connection, self.server_id + 1 + segment.index % MAX_SEGMENT_IDS, segment,
                             self.tables, self.with_query, model, self.transactions, self.on_failure,
                             self.unreadable):
            records.append(record)
            if len(records) >= self.chunk:
                yield batch(records)
                records = []
        if records:
            yield batch(records)


def _arrow_schema():
    import pyarrow as pa

    s, i64, i32 = pa.string(), pa.int64(), pa.int32()
    return pa.schema([("seq", i64), ("kind", s), ("db", s), ("tbl", s), ("tm", s), ("op", s),
                      ("before", pa.list_(s)), ("after", pa.list_(s)), ("ts_sec", i64), ("file", s), ("pos", i64),
                      ("row", i32), ("server_id", i64), ("gtid", s), ("thread", i64), ("query", s), ("tx", s)])


def layout_id(db: str, table: str, columns_json: str) -> str:
    """One table's one column layout. The table is part of it: tables of the same columns (common, e.g.
    `id INT PRIMARY KEY, name VARCHAR(20)`) must not share an id, or their rows would be told apart by
    layout alone and go to one table's topic."""
    return hashlib.sha1(json.dumps([db, table, columns_json]).encode()).hexdigest()[:16]


def decode(connection: Mapping[str, Any], server_id: int, segment: Segment, tables: Container[tuple[str, str]],
           with_query: bool, model: str | None = None, transactions: bool = False, on_failure: str = "fail",
           broken: str | None = None) -> Iterator[tuple]:
    """The events of one segment as DECODED tuples, in binlog order; row events of the `tables` only.

    `model`: the schema history's model (ddl.Schema as JSON) where the segment starts. The segment advances
    its own copy through the DDL statements it meets, and a table map takes its columns from it (`columns_of`),
    so rows decode whatever `binlog_row_metadata` the server writes.

    `transactions`: each transaction's start (txbegin) and commit (txend) too, of every transaction the
    segment has (of any database, as Debezium's transaction topic has them), and its id on its rows.

    `on_failure` (event.processing.failure.handling.mode): a row event whose rows cannot be deserialized
    fails the segment (fail), or is left out, leaving a `skipped` row (its position, table and error as
    `query`) for the driver's warning (warn) or none (skip, ignore). `broken`: a `db.table` whose row
    events are treated as such (fault injection, faults.UNREADABLE_ENV)."""
    from pymysqlreplication import BinLogStreamReader
    from pymysqlreplication.event import (
        MariadbAnnotateRowsEvent, MariadbGtidEvent, QueryEvent, RotateEvent, RowsQueryLogEvent, XidEvent,
    )
    from pymysqlreplication.row_event import DeleteRowsEvent, TableMapEvent, UpdateRowsEvent, WriteRowsEvent

    # The library warns on every connection to a server whose binlog_row_metadata is not FULL: the schema
    # history gives the columns then, and the warning would repeat in every executor's log for nothing.
    logging.getLogger("pymysqlreplication").setLevel(logging.ERROR)
    schema = ddl.Schema.from_json(model) if model else None
    unreadable: dict[tuple[str, str], str] = {}  # table -> why its columns are unknown from that statement on

    events = [TableMapEvent, WriteRowsEvent, UpdateRowsEvent, DeleteRowsEvent, QueryEvent, XidEvent, RotateEvent,
              MariadbGtidEvent, MariadbAnnotateRowsEvent, RowsQueryLogEvent]
    try:
        from pymysqlreplication.event import GtidEvent
        events.append(GtidEvent)
    except ImportError:  # pragma: no cover
        pass
    stream = BinLogStreamReader(
        connection_settings=tls.pymysql_kwargs(connection), server_id=server_id, log_file=segment.file,
        log_pos=segment.start,
        resume_stream=True, blocking=False, only_events=events, freeze_schema=True,
        annotate_rows_event=with_query, only_schemas=_schemas(tables),
        report_slave=REPLICA_NAME)  # listed in SHOW SLAVE HOSTS: another reader with our id is then seen
    # The library reads a table map's column names, charsets and signedness only when the server's setting is
    # FULL now; a binlog written at FULL before the server went back to its default (a restart) carries them
    # too, and a table map without them is read as before.
    stream._BinLogStreamReader__optional_meta_data = True
    base = segment.index << SEGMENT_BITS
    n = 0
    gtid = None
    thread = None
    query = None
    tx = None  # the open transaction's id (transactions only)
    layouts: dict[int, tuple[str, list, Any]] = {}  # table id -> (layout id, columns, fast row decoder or None)
    decoders: dict[tuple, Any] = {}  # row format -> its fast row decoder (rowcodec.py), None where it has none
    seen: set[str] = set()
    try:
        for event in stream:
            start = event.packet.log_pos - event.packet.event_size if event.packet.log_pos else 0
            if isinstance(event, RotateEvent):
                if stream.log_file != segment.file:
                    break  # the segment is one file
                continue
            if segment.end is not None and event.packet.log_pos and event.packet.log_pos > segment.end:
                break
            if isinstance(event, MariadbGtidEvent):
                gtid, thread, query, tx = event.gtid, None, None, None
                if transactions and not event.flags & MARIADB_GTID_STANDALONE:
                    # MariaDB's GTID event begins the transaction (no BEGIN follows it)
                    tx = transaction_id(None, segment.file, start)
                    yield _transaction_row(base | n, "txbegin", event, segment.file, start, gtid, tx)
                    n += 1
                continue
            if type(event).__name__ == "GtidEvent":
                gtid, thread, query, tx = getattr(event, "gtid", None), None, None, None
                continue
            if isinstance(event, (MariadbAnnotateRowsEvent, RowsQueryLogEvent)):
                query = getattr(event, "sql_statement", None) or getattr(event, "query", None)
                continue
            if isinstance(event, XidEvent):
                query = None
                if tx is not None:
                    yield _transaction_row(base | n, "txend", event, segment.file, start, gtid, tx)
                    n, tx = n + 1, None
                continue
            if isinstance(event, QueryEvent):
                text = event.query if isinstance(event.query, str) else event.query.decode("utf-8", "replace")
                thread = getattr(event, "slave_proxy_id", None)
                word = text.strip().upper()
                if word == "BEGIN" and transactions and tx is None:  # MySQL's BEGIN, after its GTID event
                    tx = transaction_id(gtid, segment.file, start)
                    yield _transaction_row(base | n, "txbegin", event, segment.file, start, gtid, tx)
                    n += 1
                elif word == "COMMIT" and tx is not None:  # a transaction of non-transactional tables
                    yield _transaction_row(base | n, "txend", event, segment.file, start, gtid, tx)
                    n, tx = n + 1, None
                if word in ("BEGIN", "COMMIT"):
                    continue
                db = event.schema.decode() if isinstance(event.schema, bytes) else (event.schema or "")
                if schema is not None and DDL.match(text):
                    advance(schema, text, db, f"{segment.file}:{start}", unreadable)
                yield (base | n, "ddl", db, None, None, None, None, None, event.timestamp, segment.file, start, 0,
                       event.packet.server_id, gtid, thread, text, None)
                n += 1
                continue
            if isinstance(event, TableMapEvent):
                if (event.schema, event.table) not in tables:
                    continue
                found = columns_of(event, schema, unreadable)
                text = json.dumps(found, separators=(",", ":"))
                lid = layout_id(event.schema, event.table, text)
                if "error" in found:  # its rows cannot be read: the driver stops the batch with the message
                    yield (base | n, "tablemap", event.schema, event.table, lid, None, None, None, event.timestamp,
                           segment.file, start, 0, event.packet.server_id, gtid, thread, text, None)
                    n += 1
                    continue
                columns = [Column.from_json(c) for c in found["columns"]]
                # rowcodec's functions are looked up at each use (tests wrap them to see which are taken)
                form = rowcodec.row_format(event.columns, lid)
                if form not in decoders:
                    decoders[form] = rowcodec.compile_row(event.columns, columns)
                layouts[event.table_id] = (lid, columns, decoders[form])
                if lid not in seen:
                    seen.add(lid)
                    yield (base | n, "tablemap", event.schema, event.table, lid, None, None, None, event.timestamp,
                           segment.file, start, 0, event.packet.server_id, gtid, thread, text, None)
                    n += 1
                continue
            if (event.schema, event.table) not in tables or event.table_id not in layouts:
                continue
            lid, columns, fast = layouts[event.table_id]
            op = "c" if isinstance(event, WriteRowsEvent) else "u" if isinstance(event, UpdateRowsEvent) else "d"
            q = query if with_query else None
            try:  # a row event's rows are deserialized here, all of them before the first is yielded
                if broken == f"{event.schema}.{event.table}":
                    raise ValueError("cannot deserialize the row event (fault injection)")
                images = rowcodec.decode_rows(event, fast, op == "u") if fast is not None else None
                rows = event.rows if images is None else None
            except Exception as e:  # noqa: BLE001 (Debezium's event.processing.failure.handling.mode)
                if on_failure == "fail":
                    raise EventUnreadable(
                        f"the binlog event at {segment.file}:{start} ({event.schema}.{event.table}) cannot be read "
                        f"({type(e).__name__}: {e}). See it with mysqlbinlog --start-position={start} --verbose "
                        f"{segment.file}; event.processing.failure.handling.mode=warn or skip leaves such events "
                        "out") from e
                if on_failure == "warn":
                    yield (base | n, "skipped", event.schema, event.table, lid, op, None, None, event.timestamp,
                           segment.file, start, 0, event.packet.server_id, gtid, thread,
                           f"{type(e).__name__}: {e}"[:500], tx)
                    n += 1
                continue
            if images is not None:
                for i, (first, second) in enumerate(images):
                    before, after = (None, first) if op == "c" else (first, second) if op == "u" else (first, None)
                    yield (base | n, "row", event.schema, event.table, lid, op, before, after, event.timestamp,
                           segment.file, start, i, event.packet.server_id, gtid, thread, q, tx)
                    n += 1
                continue
            names = [c.name for c in columns]
            for i, row in enumerate(rows):
                if op == "u":
                    before = _texts(columns, names, row["before_values"], row.get("before_none_sources"))
                    after = _texts(columns, names, row["after_values"], row.get("after_none_sources"))
                elif op == "c":
                    before, after = None, _texts(columns, names, row["values"], row.get("none_sources"))
                else:
                    before, after = _texts(columns, names, row["values"], row.get("none_sources")), None
                yield (base | n, "row", event.schema, event.table, lid, op, before, after, event.timestamp,
                       segment.file, start, i, event.packet.server_id, gtid, thread, q, tx)
                n += 1
    finally:
        stream.close()


class EventUnreadable(Exception):
    """A binlog row event the decoder cannot deserialize (event.processing.failure.handling.mode=fail)."""


MARIADB_GTID_STANDALONE = 1
"""FL_STANDALONE of MariaDB's GTID event: a statement outside any transaction (DDL)."""


def transaction_id(gtid: str | None, file: str, pos: int) -> str:
    """Debezium's transaction id on MySQL: the transaction's GTID where the server has GTIDs (MySQL's; Debezium
    2.3 reads no MariaDB GTID), else where it begins, as `file=<binlog file>,pos=<position>`."""
    if gtid and ":" in gtid:
        return gtid
    return f"file={file},pos={pos}"


def _transaction_row(seq: int, kind: str, event, file: str, start: int, gtid: str | None, tx: str) -> tuple:
    return (seq, kind, None, None, None, None, None, None, event.timestamp, file, start, 0, event.packet.server_id,
            gtid, None, None, tx)


DDL = re.compile(r"(?is)^\s*(/\*.*?\*/\s*)*(CREATE|ALTER|DROP|RENAME)\s")
"""Statements that may change a table's columns (TRUNCATE does not)."""


def advance(schema, text: str, db: str, where: str, unreadable: dict) -> None:
    """The model after one statement; a table the statement changes in a way the model cannot read is
    dropped from it and its reason kept in `unreadable` (its rows then need the binlog's own names)."""
    try:
        for key in schema.apply(text, db or None):
            unreadable.pop(key, None)
    except ddl.Unreadable as e:
        if e.table is not None:
            schema.tables.pop(e.table, None)
            unreadable[e.table] = f"the DDL statement at {where} could not be read ({e})"


def columns_of(event, schema, unreadable: Mapping) -> dict:
    """A table map's layout: {"columns", "pk", "from"}, or {"error"} when its rows cannot be read.

    The schema history's model gives the columns when it has the table and agrees with the table map's
    column types; the library's columns then get the names, signedness, charsets and ENUM/SET labels the
    binlog may not carry. Where the table map has FULL metadata, its columns win (taking from the model
    what only a catalog knows: defaults, BINARY lengths, POINT, FLOAT(M,D), character lengths) and a
    disagreement is noted ("note") for the driver's log."""
    key = (event.schema, event.table)
    entry = schema.tables.get(key) if schema is not None else None
    full = bool(event.optional_metadata.column_name_list)
    agrees = entry is not None and _matches(entry.columns, event.columns)
    if full:
        columns, pk = from_table_map(event)
        note = None
        if entry is not None:
            by_name = {c.name.lower(): c for c in entry.columns}
            if not agrees or not all(map(_same, columns, entry.columns)) or len(columns) != len(entry.columns):
                note = "the schema history's columns differ from the binlog's own (binlog_row_metadata=FULL)"
            columns = [c.with_catalog(by_name.get(c.name.lower())) for c in columns]
        elif schema is not None:
            note = "the schema history does not have this table; its columns come from the binlog"
        out = {"columns": [c.to_json() for c in columns], "pk": pk, "from": "binlog"}
        if note:
            out["note"] = note
        return out
    if agrees:
        for lib, c, charset in zip(event.columns, entry.columns, entry.charsets):
            lib.name, lib.unsigned = c.name, c.unsigned
            lib.character_set_name = charset
            if c.family == "enum":
                lib.enum_values = [""] + list(c.labels)
            elif c.family == "set":
                lib.set_values = list(c.labels)
        return {"columns": [c.to_json() for c in entry.columns], "pk": list(entry.pk_positions()), "from": "history"}
    where = f"{event.schema}.{event.table}"
    if key in unreadable:
        why = unreadable[key]
    elif schema is None:
        why = "the connector has no schema history for it"
    elif entry is None:
        why = "the schema history does not have the table"
    else:
        why = (f"the schema history's {len(entry.columns)} columns do not match the {len(event.columns)} the "
               "binlog has for it")
    return {"error": f"the binlog's rows of {where} cannot be read: {why}, and the server does not write the "
                     "column names into the binlog (binlog_row_metadata is not FULL)",
            "recoverable": entry is None and key not in unreadable}


# table map type codes (the library's, ENUM/SET already resolved from their real type) of each family
_CODES = {"tinyint": {1}, "smallint": {2}, "mediumint": {9}, "int": {3}, "bigint": {8}, "float": {4}, "double": {5},
          "decimal": {0, 246}, "date": {10, 14}, "time": {11, 19}, "datetime": {12, 18}, "timestamp": {7, 17},
          "year": {13}, "char": {254}, "varchar": {15, 253}, "binary": {254, 15, 253}, "text": {252},
          "blob": {252}, "json": {245}, "enum": {247}, "set": {248}, "bit": {16}, "geometry": {255}}


def _same(a: Column, b: Column) -> bool:
    """One column as the binlog's FULL metadata and as the model describe it (the binlog marks only integers
    UNSIGNED, and names keep the case of whoever wrote them last)."""
    ints = ("tinyint", "smallint", "mediumint", "int", "bigint")
    return (a.name.lower(), a.family, a.nullable, a.binary, a.precision, a.scale, a.fsp, a.bits, a.labels,
            a.unsigned and a.family in ints) == (b.name.lower(), b.family, b.nullable, b.binary, b.precision,
                                                  b.scale, b.fsp, b.bits, b.labels, b.unsigned and b.family in ints)


def _matches(columns, lib_columns) -> bool:
    """Whether the model's columns are the table map's: as many, each of a type the binlog writes it with
    (and, where the table map says, the same DECIMAL precision and scale, fractional digits, BIT width)."""
    if len(columns) != len(lib_columns):
        return False
    for c, lib in zip(columns, lib_columns):
        if lib.type not in _CODES.get(c.family, ()):
            return False
        if c.family == "decimal" and lib.type == 246 and (c.precision, c.scale) != (lib.precision, lib.decimals):
            return False
        if c.family in ("time", "datetime", "timestamp") and lib.type in (17, 18, 19) and c.fsp != lib.fsp:
            return False
        if c.family == "bit" and c.bits != lib.bits:
            return False
    return True


def _schemas(tables) -> list[str] | None:
    """The databases a table filter can match, when it names them plainly (lets the library skip the rest)."""
    if isinstance(tables, (set, frozenset)):
        return sorted({db for db, _ in tables}) or None
    spec = getattr(tables, "spec", None)
    if not spec or not spec[0] or any(re.escape(p) != p for p in spec[0]):
        return None
    extra = [spec[4].split(".")[0]] if spec[4] else []
    return sorted(set(spec[0]) | set(extra))


# The library reads an empty SET as None, and says so in the row's none_sources: Debezium writes "".
_EMPTY_SET = "empty set"


def _texts(columns, names, values: Mapping[str, Any], none_sources: Mapping[str, str] | None = None
           ) -> list[str | None]:
    empty = {n for n, why in (none_sources or {}).items() if why == _EMPTY_SET}
    return ["" if name in empty and values.get(name) is None else c.text(values.get(name))
            for c, name in zip(columns, names)]


# --- the server's facts, on the driver ---------------------------------------------------------------


def connect(settings: Mapping[str, Any]):
    import pymysql

    return pymysql.connect(**tls.pymysql_kwargs(settings), autocommit=True)


def variables(cur, names: list[str]) -> dict[str, str]:
    cur.execute("SHOW GLOBAL VARIABLES WHERE Variable_name IN (" + ",".join(["%s"] * len(names)) + ")", names)
    return {str(k).lower(): str(v) for k, v in cur.fetchall()}


def is_mariadb(cur) -> bool:
    cur.execute("SELECT VERSION()")
    return "mariadb" in str(cur.fetchone()[0]).lower()


def master_position(cur) -> Position:
    return binlog_status(cur)[0]


def binlog_status(cur) -> tuple[Position, str | None]:
    """The binlog's end and, on MySQL, the GTID set executed up to it, read together (one SHOW MASTER STATUS,
    SHOW BINARY LOG STATUS from MySQL 8.4); MariaDB's has no GTID column."""
    cur.execute("SELECT VERSION()")
    cur.execute(binlog_status_statement(str(cur.fetchone()[0])))
    row = cur.fetchone()
    if not row:
        raise LookupError("binary logging is off")
    gtids = "".join(str(row[4]).split()) if len(row) > 4 and row[4] else None
    if gtids:
        try:
            gtids = str(gtid.GtidSet.parse(gtids))  # as Debezium prints a set
        except ValueError:
            pass  # (MySQL 8.4's tagged GTIDs: kept as the server wrote them)
    return Position(str(row[0]), int(row[1])), gtids or None


def binlog_status_statement(version: str) -> str:
    """The statement giving the binlog's end: MySQL 8.4 renamed SHOW MASTER STATUS (MariaDB keeps it)."""
    if "mariadb" in version.lower():
        return "SHOW MASTER STATUS"
    found = re.match(r"(\d+)\.(\d+)", version)
    return "SHOW BINARY LOG STATUS" if found and (int(found[1]), int(found[2])) >= (8, 4) else "SHOW MASTER STATUS"


def binary_logs(cur) -> list[tuple[str, int]]:
    cur.execute("SHOW BINARY LOGS")
    return [(str(r[0]), int(r[1])) for r in cur.fetchall()]


def gtid_at(cur, pos: Position, mariadb: bool) -> str | None:
    """The GTID set (MariaDB's GTID position) of the transactions up to `pos`."""
    if not mariadb:
        cur.execute("SELECT @@GLOBAL.gtid_executed")
        row = cur.fetchone()
        return (str(row[0]) or None) if row else None
    cur.execute("SELECT BINLOG_GTID_POS(%s, %s)", (pos.file, pos.pos))
    row = cur.fetchone()
    return (str(row[0]) if row and row[0] is not None else None) or None


def locate_gtid(settings: Mapping[str, Any], server_id: int, gtids: str, mariadb: bool = True) -> Position | None:
    """Where the binlog continues after the GTID position `gtids` (MariaDB's, or a MySQL GTID set): a short
    replica connection that starts from it; the server names the file (a fake ROTATE), then sends the next
    transaction, whose GTID event starts at the position wanted. None when no transaction follows yet."""
    if mariadb:
        stream = _MariadbGtidStream(connection_settings=tls.pymysql_kwargs(settings), server_id=server_id,
                                    auto_position=gtids, is_mariadb=True, blocking=False, resume_stream=True)
        wanted = "MariadbGtidEvent"
    else:
        from pymysqlreplication import BinLogStreamReader

        stream = BinLogStreamReader(connection_settings=tls.pymysql_kwargs(settings), server_id=server_id,
                                    auto_position=gtids, blocking=False, resume_stream=True)
        wanted = "GtidEvent"
    file = None
    try:
        for event in stream:
            name = type(event).__name__
            if name == "RotateEvent":
                file = event.next_binlog
            elif name == wanted and file is not None and event.packet.log_pos:
                return Position(file, event.packet.log_pos - event.packet.event_size)
    finally:
        stream.close()
    return None


def _gtid_stream_class():
    from pymysqlreplication import BinLogStreamReader

    class MariadbGtidStream(BinLogStreamReader):
        def _BinLogStreamReader__set_mariadb_settings(self):
            # As the library's, with the packet length right: 1 command byte + 4 pos + 2 flags + 4 server id.
            cur = self._stream_connection.cursor()
            cur.execute("SET @slave_connect_state = %s", (self.auto_position,))
            cur.execute("SET @slave_gtid_strict_mode=1")
            cur.execute("SET @slave_gtid_ignore_duplicates=0")
            cur.close()
            from pymysql.constants.COMMAND import COM_BINLOG_DUMP

            payload = bytes([COM_BINLOG_DUMP]) + struct.pack("<I", 4) + struct.pack("<H", 0x01) + \
                struct.pack("<I", self._BinLogStreamReader__server_id)
            return struct.pack("<i", len(payload))[:3] + b"\x00" + payload

    return MariadbGtidStream


def _MariadbGtidStream(**kwargs):  # noqa: N802 (a class made on first use: the library loads lazily)
    return _gtid_stream_class()(**kwargs)


REPLICA_NAME = "lakeconnect"


def replica_conflicts(cur, server_id: int, span: int) -> list[str]:
    """Replicas of this server (and the server itself) using a server id this connector's readers take
    (`server_id` up to `server_id + span`)."""
    out = []
    cur.execute("SELECT @@server_id")
    own = int(cur.fetchone()[0])
    if server_id <= own <= server_id + span:
        out.append(f"the server itself has server_id {own}")
    try:
        cur.execute("SHOW SLAVE HOSTS")
        for row in cur.fetchall():
            sid = int(row[0])
            if server_id <= sid <= server_id + span:
                out.append(f"replica {row[1] or '?'}:{row[2]} has server id {sid}")
    except Exception:  # noqa: BLE001 - without the privilege to list replicas, nothing to check
        pass
    return out


REQUIRED_GRANTS = ("SELECT", "SHOW DATABASES", "REPLICATION SLAVE", "REPLICATION CLIENT")
"""What every batch needs. A snapshot that locks (snapshot.locking.mode minimal or extended on MySQL) also
needs RELOAD, and LOCK TABLES where the global lock is refused: its lock statement names them."""


def server_problems(cur) -> list[str]:
    """What keeps this server from being captured, each with the fix; empty when it can be. As Debezium: the
    binlog on, in ROW format with FULL row images; any binlog_row_metadata (the schema history knows the
    columns; FULL metadata, where the server writes it, is a cross-check)."""
    problems = []
    found = variables(cur, ["log_bin", "binlog_format", "binlog_row_image"])
    if found.get("log_bin", "OFF").upper() != "ON":
        problems.append("binary logging is off (log_bin=OFF): start the server with log_bin (and binlog_format=ROW, "
                        "binlog_row_image=FULL)")
        return problems
    for name, wanted in (("binlog_format", "ROW"), ("binlog_row_image", "FULL")):
        value = found.get(name)
        if value is not None and value.upper() != wanted:
            problems.append(f"{name} is {value}, change events need {wanted}: "
                            f"SET GLOBAL {name}='{wanted}' (and in the server's configuration)")
    missing = missing_grants(cur)
    if missing:
        problems.append(f"the user lacks {', '.join(missing)}: GRANT {', '.join(REQUIRED_GRANTS)} ON *.* TO the "
                        "connector's user (MariaDB 10.5+ calls REPLICATION CLIENT 'BINLOG MONITOR'), with RELOAD "
                        "and LOCK TABLES for snapshots that lock")
    return problems


def missing_grants(cur) -> list[str]:
    cur.execute("SHOW GRANTS")
    text = " ".join(str(r[0]).upper() for r in cur.fetchall())
    if "ALL PRIVILEGES ON *.*" in text:
        return []
    global_grants = " ".join(g.split(" ON *.*")[0] for g in text.split("GRANT ")[1:] if " ON *.*" in g)
    have = {g.strip() for g in global_grants.split(",")}
    aliases = {"REPLICATION CLIENT": {"REPLICATION CLIENT", "BINLOG MONITOR"},
               "REPLICATION SLAVE": {"REPLICATION SLAVE", "REPLICATION REPLICA"}}
    # SELECT on the captured databases (not on *.*) is enough for snapshots.
    any_select = any("SELECT" in {p.strip() for p in g.split(" ON ")[0].split(",")} or g.startswith("ALL PRIVILEGES")
                     for g in text.split("GRANT ")[1:])
    return [g for g in REQUIRED_GRANTS if not (aliases.get(g, {g}) & have) and not (g == "SELECT" and any_select)]


def quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"
