"""How the connector and Debezium describe a table, without asking the server.

`Layout`: a table's columns and key as one table map (or the catalog, for a snapshot) gives them, the
unit decoded rows and events are made by (events.py). Debezium's `tableChanges` (schema change events):
which tables a DDL statement creates, alters or drops (`ddl_targets`, and `truncated` for TRUNCATE), and
each table's structure as Debezium describes it (`Structure`, from the catalog's rows or a table map), with
each column's source type (`SourceColumn`, for column.propagate.source.type and include.schema.comments).

Plain data and text, no connection and no Spark: catalog.py reads the rows these are made from, and both
it and events.py use them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from connectors.mysql.types import Column, default_expression, from_catalog


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
        column = catalog_column(row, charset, mariadb)
        if column["name"] in pk:
            column["optional"] = False
        out.append(column)
        kinds[column["name"]] = from_catalog(row, mariadb)
    return Structure({"defaultCharsetName": charset, "primaryKeyColumnNames": pk, "columns": out, "comment": None},
                     kinds)


def catalog_column(row: dict, table_charset: str | None, mariadb: bool) -> dict:
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
        if known is not None and same_kind(c, known):
            column = dict(next(x for x in reference.table["columns"] if x["name"] == c.name))
            column["position"] = i + 1
        else:
            column = layout_column(c, i + 1, charset)
        if c.name in pk:
            column["optional"] = False
        out.append(column)
    return {"defaultCharsetName": charset, "primaryKeyColumnNames": pk, "columns": out, "comment": None}


def layout_column(c: Column, position: int, charset: str | None) -> dict:
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


def same_kind(a: Column, b: Column) -> bool:
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
