"""The schema history's model: every tracked table's columns and key, advanced by the DDL the binlog carries.

Debezium knows a table's columns from its own history (the snapshot's schema reads, then each DDL
statement of the binlog), not from the binlog's row metadata: MySQL 8 writes only types by default
(`binlog_row_metadata=MINIMAL`), MariaDB nothing more (`NO_LOG`), MySQL 5.7 and MariaDB before 10.5 have no
such setting. This module is that history's model, the same on the driver (which keeps it, batch to batch,
in the connector's `schema-model` table) and on executors (which advance a copy through the DDL of the
binlog file they decode, and decode each row image with the columns in effect where it was written).

`Schema.apply` understands the statements that change a table's columns or key, as MySQL and MariaDB
write them to the binlog: CREATE TABLE (columns, or LIKE), ALTER TABLE (ADD, DROP, MODIFY, CHANGE, RENAME
COLUMN, ALTER COLUMN ... DEFAULT, ADD/DROP PRIMARY KEY, RENAME TO, CONVERT TO CHARACTER SET, the table's
default charset; other clauses change no column), RENAME TABLE, DROP TABLE, and the databases' CREATE,
ALTER and DROP. A column definition becomes the `types.Column` the server's catalog gives for it
(`types.from_catalog`; tests compare both on a corpus of tables). A statement on a tracked table that it
cannot read raises `Unreadable`: guessing would decode rows with the wrong columns.

How the statements are spelled (tokens, column definitions, shared clauses) is read in ddl_syntax.py;
the model as the catalog has it now (the snapshot's schema read) comes from catalog.read_catalog.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace

from connectors.mysql.ddl_syntax import (
    Definition,
    Reader,
    Unreadable,
    column_charset,
    column_definition,
    create_item,
    db_charset,
    default_value,
    sized,
    table_charset,
    tokens,
    words_until_stop,
)
from connectors.mysql.types import Column

# --- the model ------------------------------------------------------------------------------------------

@dataclass
class Table:
    columns: list[Column]
    pk: list[str]  # the primary key's column names, in key order
    charset: str | None  # the table's default charset
    charsets: list[str | None] = field(default_factory=list)  # each column's charset (None: not a text column)

    def to_json(self) -> dict:
        return {"columns": [c.to_json() for c in self.columns], "pk": self.pk, "charset": self.charset,
                "charsets": self.charsets}

    @classmethod
    def from_json(cls, d: dict) -> Table:
        return cls([Column.from_json(c) for c in d["columns"]], list(d["pk"]), d.get("charset"),
                   list(d.get("charsets") or [None] * len(d["columns"])))

    def pk_positions(self) -> tuple[int, ...]:
        names = [c.name.lower() for c in self.columns]
        return tuple(names.index(n.lower()) for n in self.pk if n.lower() in names)

    def index(self, name: str) -> int:
        names = [c.name.lower() for c in self.columns]
        if name.lower() not in names:
            raise Unreadable(f"no column {name}")
        return names.index(name.lower())


@dataclass
class Schema:
    """The tracked tables by (database, table), the databases' default charsets, and what the server's
    defaults are (its charset; MariaDB or MySQL, which reads JSON and defaults differently)."""

    tables: dict[tuple[str, str], Table] = field(default_factory=dict)
    databases: dict[str, str | None] = field(default_factory=dict)
    server_charset: str | None = None
    mariadb: bool = True

    def to_json(self) -> str:
        return json.dumps({"tables": [[db, t, v.to_json()] for (db, t), v in sorted(self.tables.items())],
                           "databases": self.databases, "server_charset": self.server_charset,
                           "mariadb": self.mariadb}, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> Schema:
        d = json.loads(text)
        return cls({(db, t): Table.from_json(v) for db, t, v in d["tables"]}, dict(d.get("databases") or {}),
                   d.get("server_charset"), bool(d.get("mariadb", True)))

    def copy(self) -> Schema:
        return Schema.from_json(self.to_json())

    def restricted(self, keep) -> Schema:
        """Only the tables `keep(db, table)` says; the rest as it is."""
        return Schema({k: v for k, v in self.tables.items() if keep(*k)}, dict(self.databases), self.server_charset,
                      self.mariadb)

    # -- statements

    def apply(self, statement: str, db: str | None) -> set[tuple[str, str]]:
        """Advance the model by one statement run with `db` as the current database; the tables it changed
        (created, altered, renamed from or to, dropped). A statement that changes no table is ignored; one
        that cannot be read raises Unreadable (nothing else: a statement never stops the decoding)."""
        try:
            return self._apply(Reader(tokens(statement)), db)
        except Unreadable:
            raise
        except Exception as e:  # noqa: BLE001 - a reading this model did not foresee
            raise Unreadable(f"the statement could not be read ({type(e).__name__})") from None

    def _apply(self, r: Reader, db: str | None) -> set[tuple[str, str]]:
        if r.take("CREATE"):
            r.take("OR", "REPLACE")
            if r.at("TEMPORARY"):
                return set()  # not written to a ROW binlog's tables (and not captured)
            if r.take("TABLE"):
                return self._create(r, db)
            if r.take("DATABASE") or r.take("SCHEMA"):
                r.take("IF", "NOT", "EXISTS")
                name = r.name()
                charset = db_charset(r)
                if name not in self.databases or charset is not None:
                    self.databases[name] = charset or self.server_charset
                return set()
            return set()
        if r.take("ALTER"):
            r.take("ONLINE")
            r.take("IGNORE")
            if r.take("TABLE"):
                return self._alter(r, db)
            if r.take("DATABASE") or r.take("SCHEMA"):
                name = db if r.up() in ("DEFAULT", "CHARACTER", "CHARSET", "COLLATE") else r.name()
                charset = db_charset(r)
                if name is not None and charset is not None:
                    self.databases[name] = charset
            return set()
        if r.take("DROP"):
            r.take("TEMPORARY")
            if r.take("TABLE") or r.take("TABLES"):
                r.take("IF", "EXISTS")
                changed = set()
                while True:
                    key = self._key(r.qualified(db))
                    if key in self.tables:
                        del self.tables[key]
                        changed.add(key)
                    if not r.op(","):
                        break
                return changed
            if r.take("DATABASE") or r.take("SCHEMA"):
                r.take("IF", "EXISTS")
                name = r.name()
                gone = {k for k in self.tables if k[0] == name}
                for k in gone:
                    del self.tables[k]
                self.databases.pop(name, None)
                return gone
            return set()
        if r.take("RENAME"):
            if not (r.take("TABLE") or r.take("TABLES")):
                return set()
            changed = set()
            while True:
                old = self._key(r.qualified(db))
                if not r.take("TO"):
                    raise Unreadable("RENAME TABLE without TO")
                new = self._key(r.qualified(db))
                if old in self.tables:
                    self.tables[new] = self.tables.pop(old)
                    changed |= {old, new}
                if not r.op(","):
                    break
            return changed
        return set()

    def _key(self, name: tuple[str | None, str]) -> tuple[str, str]:
        db, table = name
        if db is None:
            raise Unreadable(f"table {table} is named without a database, and the statement has none")
        return db, table

    def _charset_for(self, db: str) -> str | None:
        return self.databases.get(db) or self.server_charset

    def _create(self, r: Reader, db: str | None) -> set[tuple[str, str]]:
        if_not = r.take("IF", "NOT", "EXISTS")
        key = self._key(r.qualified(db))
        try:
            return self._create_table(r, db, key, if_not)
        except Exception as e:  # noqa: BLE001 - Unreadable, or a reading not foreseen: the table is unknown
            self.tables.pop(key, None)
            raise Unreadable(str(e) if isinstance(e, Unreadable) else f"could not be read ({type(e).__name__})",
                             getattr(e, "table", None) or key) from None

    def _create_table(self, r: Reader, db: str | None, key: tuple[str, str], if_not: bool) -> set[tuple[str, str]]:
        if if_not and key in self.tables:
            return set()
        if r.take("LIKE") or (r.is_op("(") and r.up(1) == "LIKE"):
            paren = r.op("(")
            if paren:
                r.take("LIKE")
            source = self._key(r.qualified(db))
            if source not in self.tables:
                return self._forget(key, f"table {key[0]}.{key[1]} is created LIKE {source[0]}.{source[1]}, "
                                         "which the schema history does not know")
            self.tables[key] = Table.from_json(self.tables[source].to_json())
            return {key}
        if not r.is_op("("):
            # CREATE TABLE ... SELECT without a column list: the binlog of a ROW server has the columns
            return self._forget(key, f"table {key[0]}.{key[1]} is created without a column list")
        r.op("(")
        definitions: list[Definition] = []
        pk: list[str] = []
        while True:
            got = create_item(r, self.mariadb)
            if isinstance(got, Definition):
                definitions.append(got)
                if got.inline_pk:
                    pk = [got.column.name]
            elif got is not None:
                pk = got
            if r.op(","):
                continue
            if not r.op(")"):
                raise Unreadable(f"table {key[0]}.{key[1]}: ',' or ')' was expected")
            break
        charset = table_charset(r) or self._charset_for(key[0])
        table = Table([], [], charset)
        for d in definitions:
            self._insert(table, d, len(table.columns))
        table.pk = pk
        _pk_not_null(table)
        self.tables[key] = table
        return {key}

    def _forget(self, key: tuple[str, str], why: str) -> set[tuple[str, str]]:
        self.tables.pop(key, None)
        raise Unreadable(why, key)

    def _alter(self, r: Reader, db: str | None) -> set[tuple[str, str]]:
        r.take("IF", "EXISTS")
        key = self._key(r.qualified(db))
        if key not in self.tables:
            return set()
        try:
            return self._alter_table(r, key)
        except Exception as e:  # noqa: BLE001 - Unreadable, or a reading not foreseen
            why = str(e) if isinstance(e, Unreadable) else f"could not be read ({type(e).__name__})"
            raise Unreadable(f"table {key[0]}.{key[1]}: {why}", key) from None

    def _alter_table(self, r: Reader, key: tuple[str, str]) -> set[tuple[str, str]]:
        table = Table.from_json(self.tables[key].to_json())
        new_key = key
        where = f"table {key[0]}.{key[1]}"
        while not r.done():
            if r.take("ADD"):
                if r.take("COLUMN"):
                    self._add_columns(r, table, where, r.take("IF", "NOT", "EXISTS"))
                elif r.up() in ("PRIMARY", "CONSTRAINT", "UNIQUE", "INDEX", "KEY", "FULLTEXT", "SPATIAL",
                                "FOREIGN", "CHECK", "PERIOD", "SYSTEM", "PARTITION"):
                    got = create_item(r, self.mariadb)
                    if isinstance(got, list):
                        table.pk = got
                        _pk_not_null(table)
                else:
                    self._add_columns(r, table, where, r.take("IF", "NOT", "EXISTS"))
            elif r.take("DROP"):
                if r.take("PRIMARY", "KEY"):
                    table.pk = []
                elif r.up() in ("INDEX", "KEY", "FOREIGN", "CONSTRAINT", "CHECK", "PARTITION", "SYSTEM", "PERIOD"):
                    words_until_stop(r)
                else:
                    r.take("COLUMN")
                    if_exists = r.take("IF", "EXISTS")
                    name = r.name()
                    try:
                        i = table.index(name)
                    except Unreadable:
                        if if_exists:
                            continue
                        raise Unreadable(f"{where}: DROP of column {name}, which it does not have") from None
                    del table.columns[i]
                    del table.charsets[i]
                    table.pk = [p for p in table.pk if p.lower() != name.lower()]
                    r.take("RESTRICT") or r.take("CASCADE")
            elif r.take("MODIFY"):
                r.take("COLUMN")
                r.take("IF", "EXISTS")
                name = r.name()
                self._replace_column(r, table, name, name, where)
            elif r.take("CHANGE"):
                r.take("COLUMN")
                r.take("IF", "EXISTS")
                old = r.name()
                self._replace_column(r, table, old, r.name(), where)
            elif r.take("RENAME", "COLUMN"):
                old = r.name()
                r.take("TO")
                new = r.name()
                i = table.index(old)
                table.columns[i] = replace(table.columns[i], name=new)
                table.pk = [new if p.lower() == old.lower() else p for p in table.pk]
            elif r.take("RENAME", "INDEX") or r.take("RENAME", "KEY"):
                words_until_stop(r)
            elif r.take("RENAME"):
                r.take("TO") or r.take("AS")
                new_key = self._key(r.qualified(key[0]))
            elif r.take("ALTER"):
                r.take("COLUMN")
                name = r.name()
                i = table.index(name)
                c = table.columns[i]
                if r.take("SET", "DEFAULT"):
                    table.columns[i] = replace(c, default=c.default_text(default_value(r, self.mariadb)))
                elif r.take("DROP", "DEFAULT"):
                    table.columns[i] = replace(c, default=None)
                else:
                    words_until_stop(r)  # SET VISIBLE / INVISIBLE
            elif r.take("CONVERT", "TO"):
                r.take("CHARACTER", "SET") or r.take("CHARSET")
                charset = r.name().lower()
                if charset == "default":
                    charset = self._charset_for(new_key[0]) or charset
                words_until_stop(r)
                table.charset = charset
                table.charsets = [charset if cs not in (None, "binary") else cs for cs in table.charsets]
            elif r.up() in ("DEFAULT", "CHARACTER", "CHARSET", "COLLATE"):
                charset = table_charset(r)
                if charset:
                    table.charset = charset
            else:
                words_until_stop(r)  # ENGINE=, AUTO_INCREMENT=, indexes, partitions, ALGORITHM=, LOCK=, ...
            if not r.op(","):
                if not r.done():
                    words_until_stop(r)
                    if not r.op(","):
                        break
        del self.tables[key]
        self.tables[new_key] = table
        return {key, new_key}

    def _add_columns(self, r: Reader, table: Table, where: str, if_not_exists: bool = False) -> None:
        if r.op("("):
            while True:
                got = create_item(r, self.mariadb)
                if isinstance(got, Definition):
                    self._insert(table, got, len(table.columns))
                    if got.inline_pk:
                        table.pk = [got.column.name]
                elif got is not None:
                    table.pk = got
                if not r.op(","):
                    break
            if not r.op(")"):
                raise Unreadable(f"{where}: ')' was expected")
            return
        name = r.name()
        d = column_definition(r, name, self.mariadb)
        at = _position(r, table)
        if if_not_exists and name.lower() in (c.name.lower() for c in table.columns):
            return
        self._insert(table, d, at)
        if d.inline_pk:
            table.pk = [d.column.name]
        _pk_not_null(table)

    def _insert(self, table: Table, d: Definition, at: int) -> None:
        charset = column_charset(d, table.charset)
        table.columns.insert(at, sized(d, charset))
        table.charsets.insert(at, charset)

    def _replace_column(self, r: Reader, table: Table, old: str, new: str, where: str) -> None:
        i = table.index(old)
        d = column_definition(r, new, self.mariadb)
        del table.columns[i]
        del table.charsets[i]
        at = _position(r, table, i)
        self._insert(table, d, at)
        table.pk = [new if p.lower() == old.lower() else p for p in table.pk]
        if d.inline_pk:
            table.pk = [new]
        _pk_not_null(table)


def _position(r: Reader, table: Table, default: int | None = None) -> int:
    if r.take("FIRST"):
        return 0
    if r.take("AFTER"):
        return table.index(r.name()) + 1
    return len(table.columns) if default is None else default


def _pk_not_null(table: Table) -> None:
    for name in table.pk:
        i = table.index(name)
        table.columns[i] = replace(table.columns[i], nullable=False)

