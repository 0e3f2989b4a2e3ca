"""What the connector reads from the server's catalog (information_schema and SHOW statements): the
captured tables and their layouts, a table's structure as Debezium describes it, the schema history's
model as the catalog has it now, the columns' fingerprint (a DDL racing a snapshot changes it), the
statements a snapshot's schema change events carry, and the source types and comments events take.

A module of its own so that imports go one way: it uses binlog.py's connection helpers and structure.py's
descriptions, and is used by events.py (`catalog_lookup`), snapshot_source.py (`snapshot_ddl`,
`fingerprint`, in the snapshot's transaction) and the task's modules, none of which it imports.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable

from connectors.mysql import config as C
from connectors.mysql.binlog import connect, is_mariadb, quote
from connectors.mysql.ddl import Schema, Table
from connectors.mysql.structure import (
    Layout,
    SourceColumn,
    Structure,
    catalog_column,
    catalog_structure,
    table_changes_json,
)
from connectors.mysql.types import Column, from_catalog


# --- the captured tables ----------------------------------------------------------------------------------

def captured_tables(cur, table_filter: C.TableFilter) -> list[tuple[str, str]]:
    """The base tables `table_filter` captures, by database and name."""
    cur.execute("SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES WHERE TABLE_TYPE='BASE TABLE' "
                "ORDER BY TABLE_SCHEMA, TABLE_NAME")
    return [(str(db), str(t)) for db, t in cur.fetchall() if (str(db), str(t)) in table_filter]


def captured_database(table_filter: C.TableFilter, db: str | None) -> bool:
    """Whether `db` is one of the captured databases (database lists only)."""
    if not db or db.lower() in C.SYSTEM_DATABASES:
        return False
    din, dout = table_filter._din, table_filter._dout
    if din:
        return any(p.fullmatch(db) for p in din)
    return not any(p.fullmatch(db) for p in dout)


def table_layout(cur, db: str, table: str) -> Layout:
    """The table's columns and primary key as the catalog has them now."""
    columns = _columns(cur, db, table)
    cur.execute("SELECT COLUMN_NAME FROM information_schema.KEY_COLUMN_USAGE WHERE TABLE_SCHEMA=%s AND "
                "TABLE_NAME=%s AND CONSTRAINT_NAME='PRIMARY' ORDER BY ORDINAL_POSITION", (db, table))
    by_name = [c.name for c in columns]
    pk = tuple(by_name.index(str(r[0])) for r in cur.fetchall())
    return Layout(db, table, columns, pk)


def _columns(cur, db: str, table: str) -> tuple[Column, ...]:
    mariadb = is_mariadb(cur)
    cur.execute("SELECT * FROM information_schema.COLUMNS WHERE TABLE_SCHEMA=%s AND TABLE_NAME=%s "
                "ORDER BY ORDINAL_POSITION", (db, table))
    names = [d[0] for d in cur.description]
    return tuple(from_catalog(dict(zip(names, r)), mariadb) for r in cur.fetchall())


# --- the schema history's model, and the columns' fingerprint ---------------------------------------------

def read_catalog(cur, tables: Iterable[tuple[str, str]], mariadb: bool) -> Schema:
    """The tables' entries as the server's catalog has them now (the snapshot's schema read), with the
    databases' and the server's default charsets."""
    cur.execute("SELECT @@character_set_server")
    schema = Schema(server_charset=str(cur.fetchone()[0]).lower(), mariadb=mariadb)
    wanted = sorted(set(tables))
    for db in sorted({db for db, _ in wanted}):
        cur.execute("SELECT DEFAULT_CHARACTER_SET_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME=%s", (db,))
        row = cur.fetchone()
        schema.databases[db] = str(row[0]).lower() if row and row[0] else schema.server_charset
    for db, table in wanted:
        cur.execute("SELECT c.CHARACTER_SET_NAME FROM information_schema.TABLES t JOIN information_schema.COLLATIONS c "
                    "ON c.COLLATION_NAME = t.TABLE_COLLATION WHERE t.TABLE_SCHEMA=%s AND t.TABLE_NAME=%s", (db, table))
        row = cur.fetchone()
        charset = str(row[0]).lower() if row and row[0] else schema.databases.get(db)
        cur.execute("SELECT * FROM information_schema.COLUMNS WHERE TABLE_SCHEMA=%s AND TABLE_NAME=%s "
                    "ORDER BY ORDINAL_POSITION", (db, table))
        names = [d[0] for d in cur.description]
        rows = [dict(zip(names, r)) for r in cur.fetchall()]
        if not rows:
            continue
        columns = [from_catalog(row, mariadb) for row in rows]
        charsets = [str(row["CHARACTER_SET_NAME"]).lower() if row.get("CHARACTER_SET_NAME")
                    else "binary" if c.binary else None for row, c in zip(rows, columns)]
        cur.execute("SELECT COLUMN_NAME FROM information_schema.KEY_COLUMN_USAGE WHERE TABLE_SCHEMA=%s AND "
                    "TABLE_NAME=%s AND CONSTRAINT_NAME='PRIMARY' ORDER BY ORDINAL_POSITION", (db, table))
        pk = [str(r[0]) for r in cur.fetchall()]
        schema.tables[(db, table)] = Table(columns, pk, charset, charsets)
    return schema


FINGERPRINT_SQL = ("SELECT TABLE_SCHEMA, TABLE_NAME, ORDINAL_POSITION, COLUMN_NAME, COLUMN_TYPE, IS_NULLABLE, "
                   "COLUMN_KEY, CHARACTER_SET_NAME, COLUMN_DEFAULT FROM information_schema.COLUMNS WHERE ")


def fingerprint(cur, tables: list[tuple[str, str]]) -> str:
    """A digest of the columns of `tables` as the catalog has them now: equal digests, same columns."""
    digest = hashlib.sha256()
    if tables:
        cur.execute(FINGERPRINT_SQL + " OR ".join(["(TABLE_SCHEMA=%s AND TABLE_NAME=%s)"] * len(tables))
                    + " ORDER BY 1, 2, 3", [v for pair in tables for v in pair])
        for row in cur.fetchall():
            digest.update(json.dumps([None if v is None else str(v) for v in row]).encode())
    return digest.hexdigest()


# --- Debezium's descriptions: tableChanges, snapshot statements, source types -----------------------------

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


def snapshot_ddl(cur, databases: list[str]) -> list[list[str | None]]:
    """The schema change events Debezium's snapshot emits (2.3, MySQL connector), as [db, table, statement,
    tableChanges JSON]: the server's character set, then DROP TABLE IF EXISTS of every table of the captured
    `databases`, then per database DROP DATABASE IF EXISTS, CREATE DATABASE with its charset and collation,
    USE, and the CREATE TABLE the server shows for each of its tables (with its structure, `tableChanges`)."""
    cur.execute("SELECT @@character_set_server, @@collation_server")
    charset, collation = cur.fetchone()
    out: list[list[str | None]] = [["", None, f"SET character_set_server={charset}, collation_server={collation}",
                                    None]]
    mariadb = is_mariadb(cur)
    tables: dict[str, list[str]] = {}
    for db in sorted(databases):
        cur.execute(f"SHOW FULL TABLES IN {quote(db)} WHERE Table_type = 'BASE TABLE'")
        tables[db] = sorted(str(r[0]) for r in cur.fetchall())
        out += [[db, t, f"DROP TABLE IF EXISTS {quote(db)}.{quote(t)}", None] for t in tables[db]]
    for db in sorted(databases):
        cur.execute("SELECT DEFAULT_CHARACTER_SET_NAME, DEFAULT_COLLATION_NAME FROM information_schema.SCHEMATA "
                    "WHERE SCHEMA_NAME = %s", (db,))
        found = cur.fetchone()
        locale = f" CHARSET {found[0]} COLLATE {found[1]}" if found and found[0] else ""
        out += [[db, None, f"DROP DATABASE IF EXISTS {quote(db)}", None],
                [db, None, f"CREATE DATABASE {quote(db)}{locale}", None], [db, None, f"USE {quote(db)}", None]]
        for t in tables[db]:
            cur.execute(f"SHOW CREATE TABLE {quote(db)}.{quote(t)}")
            text = str(cur.fetchone()[1])
            structure = read_structure(cur, db, t, mariadb)
            changes = table_changes_json([("CREATE", db, t, structure.table)]) if structure is not None else "[]"
            out.append([db, t, text, changes])
    return out


def catalog_lookup(config) -> Callable[[str, str], dict[str, tuple[Column, SourceColumn]]]:
    """A function giving a table's columns as the catalog has them now: {name: (kind, SourceColumn)}. A binlog
    table map has neither type texts nor comments, so a table's are read when its events are built (as its
    defaults are: see the oracle's "defaults before a later DDL")."""
    def lookup(db: str, table: str) -> dict[str, tuple[Column, SourceColumn]]:
        conn = connect(C.connection_settings(config))
        try:
            cur = conn.cursor()
            mariadb = is_mariadb(cur)
            cur.execute("SELECT * FROM information_schema.COLUMNS WHERE TABLE_SCHEMA=%s AND TABLE_NAME=%s "
                        "ORDER BY ORDINAL_POSITION", (db, table))
            names = [d[0] for d in cur.description]
            rows = [dict(zip(names, r)) for r in cur.fetchall()]
        finally:
            conn.close()
        out = {}
        for row in rows:
            described = catalog_column(row, None, mariadb)
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
