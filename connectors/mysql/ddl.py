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
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from connectors.mysql.types import Column

_EPOCH_TEXT = "1970-01-01 00:00:00"


class Unreadable(ValueError):
    """A DDL statement on a tracked table this model cannot read (the message names the table, not the text);
    `table` is the table it changes, where known."""

    def __init__(self, message: str, table: tuple[str, str] | None = None):
        super().__init__(message)
        self.table = table


# --- tokens ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Tok:
    kind: str  # word, ident (back-quoted), str, num, op
    text: str

    @property
    def up(self) -> str:
        return self.text.upper() if self.kind == "word" else ""


_TOKEN = re.compile(r"""
    (?P<ws>\s+|--[ \t][^\n]*|--$|\#[^\n]*)
  | (?P<cmt>/\*(?![!M]).*?\*/)
  | (?P<exec>/\*M?!\d{0,6})
  | (?P<end>\*/)
  | (?P<ident>`(?:[^`]|``)*`)
  | (?P<str>[nN]?'(?:[^'\\]|\\.|'')*'|"(?:[^"\\]|\\.|"")*")
  | (?P<bits>[bB]'[01]*'|[xX]'[0-9a-fA-F]*'|0x[0-9a-fA-F]+)
  | (?P<num>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?(?![A-Za-z_$]))
  | (?P<word>[A-Za-z0-9_$\u0080-\uffff@]+)
  | (?P<op>.)
""", re.S | re.X)


def tokens(sql: str) -> list[Tok]:
    """The statement's tokens; comments dropped, executable comments (/*!50100 ... */) read as code."""
    out: list[Tok] = []
    for m in _TOKEN.finditer(sql):
        kind = m.lastgroup
        if kind in ("ws", "cmt", "exec", "end"):
            continue
        text = m.group()
        if kind == "ident":
            out.append(Tok("ident", text[1:-1].replace("``", "`")))
        elif kind == "str":
            body = text[1:] if text[0] in "nN" else text
            out.append(Tok("str", body[1:-1]))  # only the quotes, as Debezium's parser unquotes
        elif kind == "bits":
            out.append(Tok("bits", text))
        else:
            out.append(Tok(kind, text))
    return out


class _Reader:
    def __init__(self, toks: list[Tok]):
        self.t, self.i = toks, 0

    def peek(self, k: int = 0) -> Tok | None:
        return self.t[self.i + k] if self.i + k < len(self.t) else None

    def up(self, k: int = 0) -> str:
        tok = self.peek(k)
        return tok.up if tok else ""

    def at(self, *words: str) -> bool:
        return all(self.up(k) == w for k, w in enumerate(words))

    def take(self, *words: str) -> bool:
        if self.at(*words):
            self.i += len(words)
            return True
        return False

    def op(self, ch: str) -> bool:
        tok = self.peek()
        if tok is not None and tok.kind == "op" and tok.text == ch:
            self.i += 1
            return True
        return False

    def is_op(self, ch: str) -> bool:
        tok = self.peek()
        return tok is not None and tok.kind == "op" and tok.text == ch

    def next(self) -> Tok:
        tok = self.peek()
        if tok is None:
            raise Unreadable("the statement ends early")
        self.i += 1
        return tok

    def name(self) -> str:
        tok = self.next()
        if tok.kind not in ("word", "ident", "str"):
            raise Unreadable("a name was expected")
        return tok.text

    def qualified(self, db: str | None) -> tuple[str | None, str]:
        first = self.name()
        if self.op("."):
            return first, self.name()
        return db, first

    def skip_group(self) -> list[Tok]:
        """The tokens of a parenthesised group starting here (the parentheses excluded)."""
        if not self.op("("):
            raise Unreadable("'(' was expected")
        depth, start = 1, self.i
        while depth:
            tok = self.next()
            if tok.kind == "op" and tok.text == "(":
                depth += 1
            elif tok.kind == "op" and tok.text == ")":
                depth -= 1
        return self.t[start:self.i - 1]

    def done(self) -> bool:
        return self.i >= len(self.t) or self.is_op(";")


# --- column types ---------------------------------------------------------------------------------------

_INT_NAMES = {"TINYINT": "tinyint", "INT1": "tinyint", "BOOL": "tinyint", "BOOLEAN": "tinyint",
              "SMALLINT": "smallint", "INT2": "smallint", "MEDIUMINT": "mediumint", "INT3": "mediumint",
              "MIDDLEINT": "mediumint", "INT": "int", "INTEGER": "int", "INT4": "int", "BIGINT": "bigint",
              "INT8": "bigint"}
_TEXTS = {"TINYTEXT": 255, "TEXT": 65535, "MEDIUMTEXT": 16777215, "LONGTEXT": 4294967295}
_BLOBS = {"TINYBLOB", "BLOB", "MEDIUMBLOB", "LONGBLOB"}
_SPATIAL = {"GEOMETRY", "POINT", "LINESTRING", "POLYGON", "MULTIPOINT", "MULTILINESTRING", "MULTIPOLYGON",
            "GEOMETRYCOLLECTION", "GEOMCOLLECTION"}
_MAX_BYTES = {"utf8mb4": 4, "utf8mb3": 3, "utf8": 3, "ucs2": 2, "utf16": 4, "utf16le": 4, "utf32": 4, "ujis": 3,
              "sjis": 2, "big5": 2, "euckr": 2, "gb2312": 2, "gbk": 2, "gb18030": 4, "cp932": 2, "eucjpms": 3}


@dataclass
class Definition:
    """A column definition as written: the Column the catalog would show, whether it is (inline) the
    primary key, and its explicit charset (None: the table's)."""

    column: Column
    inline_pk: bool = False
    charset: str | None = None
    collate: str | None = None
    charset_bound: bool = False  # a text type (its charset is the table's unless given)
    text_m: int = 0  # TEXT(M): M, the characters the column must hold


def _charset_of_collation(name: str) -> str:
    return name.split("_", 1)[0].lower()


def _words_until_stop(r: _Reader) -> None:
    while not r.done() and not r.is_op(",") and not r.is_op(")"):
        if r.is_op("("):
            r.skip_group()
        else:
            r.next()


def _one_number(group: list[Tok]) -> int | None:
    nums = [t for t in group if t.kind == "num"]
    return int(float(nums[0].text)) if nums else None


def _numbers(group: list[Tok]) -> list[int]:
    return [int(float(t.text)) for t in group if t.kind == "num"]


def _labels(group: list[Tok]) -> tuple[str, ...]:
    """ENUM/SET labels as the catalog gives them: a doubled quote is one quote."""
    return tuple(t.text.replace("''", "'") for t in group if t.kind == "str")


def column_definition(r: _Reader, name: str, mariadb: bool) -> Definition:
    """`name type attributes...` (the name already read) up to the next ',' or ')' of the list."""
    word = r.next()
    t = word.text.upper()
    family, unsigned, binary, precision, scale, fsp, bits = "varchar", False, False, None, None, 0, 0
    labels: tuple[str, ...] = ()
    subtype, length, char_length = "", 0, 0
    charset: str | None = None
    collate: str | None = None
    bound = False
    nullable: bool | None = None
    pk = False
    serial = False
    args: list[Tok] | None = None

    def group() -> list[Tok] | None:
        return r.skip_group() if r.is_op("(") else None

    if t in ("NATIONAL",):
        t = r.next().text.upper()
        charset = "utf8mb3"
    if t in ("CHARACTER", "CHAR") and r.at("VARYING"):
        r.next()
        t = "VARCHAR"
    if t == "LONG":  # LONG VARCHAR, LONG VARBINARY, LONG
        if r.at("VARBINARY"):
            r.next()
            t = "MEDIUMBLOB"
        else:
            r.take("VARCHAR")
            t = "MEDIUMTEXT"
    if t == "DOUBLE":
        r.take("PRECISION")
    if t in _INT_NAMES:
        family = _INT_NAMES[t]
        group()
    elif t == "SERIAL":
        family, unsigned, serial = "bigint", True, True
    elif t in ("DECIMAL", "DEC", "NUMERIC", "FIXED", "NUMBER"):
        family = "decimal"
        nums = _numbers(group() or [])
        precision, scale = (nums[0] if nums else 10), (nums[1] if len(nums) > 1 else 0)
    elif t in ("FLOAT", "DOUBLE", "REAL", "FLOAT4", "FLOAT8"):
        family = "double" if t in ("DOUBLE", "REAL", "FLOAT8") else "float"
        nums = _numbers(group() or [])
        if family == "float" and len(nums) == 1 and nums[0] > 24:
            family = "double"
        if family == "float" and len(nums) == 2:
            subtype = "scaled"
    elif t == "BIT":
        family = "bit"
        bits = _one_number(group() or []) or 1
    elif t in ("DATE",):
        family = "date"
    elif t in ("TIME", "DATETIME", "TIMESTAMP"):
        family = t.lower()
        fsp = _one_number(group() or []) or 0
    elif t == "YEAR":
        family = "year"
        group()
    elif t in ("CHAR", "CHARACTER", "NCHAR", "VARCHAR", "VARCHAR2", "NVARCHAR", "VARCHARACTER"):
        family = "char" if t in ("CHAR", "CHARACTER", "NCHAR") else "varchar"
        char_length = _one_number(group() or []) or (1 if family == "char" else 0)
        bound = True
        if t.startswith("N"):
            charset = "utf8mb3"
    elif t in ("BINARY", "VARBINARY"):
        family, binary = "binary", True
        n = _one_number(group() or [])
        n = n if n is not None else 1 if t == "BINARY" else 0
        length = n if t == "BINARY" else 0
    elif t in _TEXTS:
        family, char_length, bound = "text", _TEXTS[t], True
        g = group()
        if g is not None and t == "TEXT":
            args = g  # TEXT(M): the smallest text type for M characters, once the charset is known
    elif t in _BLOBS:
        family, binary = "blob", True
        group()  # BLOB(M): the smallest blob type for M bytes; the family stays blob
    elif t == "JSON":
        if mariadb:  # MariaDB: an alias of LONGTEXT with a utf8mb4_bin collation
            family, char_length, bound, charset, collate = "text", _TEXTS["LONGTEXT"], True, "utf8mb4", "utf8mb4_bin"
        else:
            family = "json"
    elif t in ("ENUM", "SET"):
        family = t.lower()
        labels = _labels(group() or [])
        bound = True
    elif t in _SPATIAL:
        family = "geometry"
        subtype = "point" if t == "POINT" else ""
    else:
        raise Unreadable(f"column {name} has a type this connector's schema history does not know ({_shown(word)})")

    # attributes
    default_expr: str | None = None
    has_default = False
    while not r.done() and not r.is_op(",") and not r.is_op(")"):
        if r.take("UNSIGNED") or r.take("ZEROFILL"):
            if family in ("tinyint", "smallint", "mediumint", "int", "bigint", "decimal", "float", "double"):
                unsigned = True
        elif r.take("SIGNED"):
            pass
        elif r.take("NOT", "NULL"):
            nullable = False
        elif r.take("NULL"):
            nullable = True
        elif r.take("BINARY"):  # CHAR(n) BINARY: the charset's binary collation
            pass
        elif r.take("ASCII"):
            charset = "latin1"
        elif r.take("UNICODE"):
            charset = "ucs2"
        elif r.take("BYTE"):
            if family in ("char", "varchar"):
                length = char_length if family == "char" else 0
                family, binary, bound, char_length = "binary", True, False, 0
        elif (option := _charset_option(r)) is not None:
            if option[0] == "charset":
                charset = option[1]
            else:
                collate = option[1]
        elif r.take("DEFAULT"):
            has_default = True
            default_expr = _default(r, mariadb)
        elif r.take("ON", "UPDATE"):
            _value_tokens(r)
        elif r.take("AUTO_INCREMENT"):
            pass
        elif r.take("PRIMARY", "KEY") or r.take("KEY"):
            pk = True
        elif r.take("UNIQUE"):
            r.take("KEY")
        elif r.take("COMMENT"):
            r.next()
        elif r.take("GENERATED", "ALWAYS", "AS") or r.take("AS"):
            r.skip_group()
        elif r.take("VIRTUAL") or r.take("STORED") or r.take("PERSISTENT"):
            pass
        elif r.take("INVISIBLE") or r.take("VISIBLE") or r.take("COMPRESSED"):
            if r.op("="):
                r.next()
        elif r.take("COLUMN_FORMAT") or r.take("STORAGE") or r.take("SRID"):
            r.next()
        elif r.take("CHECK"):
            r.skip_group()
        elif r.take("CONSTRAINT"):
            if not r.at("CHECK"):
                r.name()
        elif r.take("REFERENCES"):
            r.qualified(None)
            if r.is_op("("):
                r.skip_group()
            while r.up() in ("MATCH", "ON") and not r.at("ON", "UPDATE", "CURRENT_TIMESTAMP"):
                r.next()
                r.next()
                if r.up() in ("NULL", "ACTION", "DEFAULT"):
                    r.next()
        elif r.up() in ("FIRST", "AFTER"):
            break
        elif r.take("WITH", "SYSTEM", "VERSIONING") or r.take("WITHOUT", "SYSTEM", "VERSIONING"):
            pass
        else:
            raise Unreadable(f"column {name}: an attribute this connector's schema history does not know "
                             f"({_shown(r.next())})")
    if charset == "binary" and family in ("char", "varchar", "text"):
        family, binary, bound = ("binary" if family != "text" else "blob"), True, False
        length = char_length if t in ("CHAR", "CHARACTER", "NCHAR") else 0
        char_length = 0
    if serial:
        nullable = False
    if pk:
        nullable = False
    if family == "timestamp" and nullable is None and not mariadb:
        nullable = True
    expression = default_expr if has_default else None
    column = Column(name, family, unsigned, True if nullable is None else nullable, binary, precision, scale,
                    fsp if family in ("time", "datetime", "timestamp") else 0, bits, labels,
                    None, length, subtype, char_length)
    column = replace(column, default=column.default_text(expression))
    return Definition(column, pk, charset if bound else ("binary" if binary else None), collate, bound,
                      (_one_number(args) or 0) if args is not None else 0)


def _shown(tok: Tok) -> str:
    """A token as an error may show it: a keyword, never a literal (a statement's values stay out of logs)."""
    return tok.text[:40] if tok.kind == "word" else "a quoted value"


def _value_tokens(r: _Reader) -> list[Tok]:
    """A DEFAULT's or ON UPDATE's value: one literal, a signed number, a function call or a group."""
    if r.is_op("("):
        return [Tok("op", "(")] + r.skip_group()
    out = []
    if r.is_op("-") or r.is_op("+"):
        out.append(r.next())
    tok = r.next()
    out.append(tok)
    if tok.kind == "word" and r.is_op("("):
        out += r.skip_group()
    return out


def _default(r: _Reader, mariadb: bool) -> str | None:
    """The DEFAULT clause as `types.default_expression` gives it from the catalog (None: no default Debezium
    keeps)."""
    toks = _value_tokens(r)
    first = toks[0]
    if first.kind == "op" and first.text == "(":
        inner = toks[1:]
        if len(inner) == 1 and inner[0].kind in ("str", "num"):
            return inner[0].text
        return None  # an expression
    if first.kind == "op" and first.text in "+-" and len(toks) == 2 and toks[1].kind == "num":
        return ("-" if first.text == "-" else "") + toks[1].text
    if first.kind == "str":
        return first.text
    if first.kind == "num":
        return first.text
    if first.kind == "bits":
        text = first.text
        if text[0] in "bB":
            return text[2:-1]
        return None
    word = first.up
    if word == "NULL":
        return None
    if word in ("TRUE", "FALSE"):
        return "1" if word == "TRUE" else "0"
    if word in ("CURRENT_TIMESTAMP", "NOW", "LOCALTIME", "LOCALTIMESTAMP"):
        return _EPOCH_TEXT
    return None


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
            return self._apply(_Reader(tokens(statement)), db)
        except Unreadable:
            raise
        except Exception as e:  # noqa: BLE001 - a reading this model did not foresee
            raise Unreadable(f"the statement could not be read ({type(e).__name__})") from None

    def _apply(self, r: _Reader, db: str | None) -> set[tuple[str, str]]:
        if r.take("CREATE"):
            r.take("OR", "REPLACE")
            if r.at("TEMPORARY"):
                return set()  # not written to a ROW binlog's tables (and not captured)
            if r.take("TABLE"):
                return self._create(r, db)
            if r.take("DATABASE") or r.take("SCHEMA"):
                r.take("IF", "NOT", "EXISTS")
                name = r.name()
                charset = _db_charset(r)
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
                charset = _db_charset(r)
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

    def _create(self, r: _Reader, db: str | None) -> set[tuple[str, str]]:
        if_not = r.take("IF", "NOT", "EXISTS")
        key = self._key(r.qualified(db))
        try:
            return self._create_table(r, db, key, if_not)
        except Exception as e:  # noqa: BLE001 - Unreadable, or a reading not foreseen: the table is unknown
            self.tables.pop(key, None)
            raise Unreadable(str(e) if isinstance(e, Unreadable) else f"could not be read ({type(e).__name__})",
                             getattr(e, "table", None) or key) from None

    def _create_table(self, r: _Reader, db: str | None, key: tuple[str, str], if_not: bool) -> set[tuple[str, str]]:
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
            got = _create_item(r, self.mariadb)
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
        charset = _table_charset(r) or self._charset_for(key[0])
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

    def _alter(self, r: _Reader, db: str | None) -> set[tuple[str, str]]:
        r.take("IF", "EXISTS")
        key = self._key(r.qualified(db))
        if key not in self.tables:
            return set()
        try:
            return self._alter_table(r, key)
        except Exception as e:  # noqa: BLE001 - Unreadable, or a reading not foreseen
            why = str(e) if isinstance(e, Unreadable) else f"could not be read ({type(e).__name__})"
            raise Unreadable(f"table {key[0]}.{key[1]}: {why}", key) from None

    def _alter_table(self, r: _Reader, key: tuple[str, str]) -> set[tuple[str, str]]:
        table = Table.from_json(self.tables[key].to_json())
        new_key = key
        where = f"table {key[0]}.{key[1]}"
        while not r.done():
            if r.take("ADD"):
                if r.take("COLUMN"):
                    self._add_columns(r, table, where, r.take("IF", "NOT", "EXISTS"))
                elif r.up() in ("PRIMARY", "CONSTRAINT", "UNIQUE", "INDEX", "KEY", "FULLTEXT", "SPATIAL",
                                "FOREIGN", "CHECK", "PERIOD", "SYSTEM", "PARTITION"):
                    got = _create_item(r, self.mariadb)
                    if isinstance(got, list):
                        table.pk = got
                        _pk_not_null(table)
                else:
                    self._add_columns(r, table, where, r.take("IF", "NOT", "EXISTS"))
            elif r.take("DROP"):
                if r.take("PRIMARY", "KEY"):
                    table.pk = []
                elif r.up() in ("INDEX", "KEY", "FOREIGN", "CONSTRAINT", "CHECK", "PARTITION", "SYSTEM", "PERIOD"):
                    _words_until_stop(r)
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
                _words_until_stop(r)
            elif r.take("RENAME"):
                r.take("TO") or r.take("AS")
                new_key = self._key(r.qualified(key[0]))
            elif r.take("ALTER"):
                r.take("COLUMN")
                name = r.name()
                i = table.index(name)
                c = table.columns[i]
                if r.take("SET", "DEFAULT"):
                    table.columns[i] = replace(c, default=c.default_text(_default(r, self.mariadb)))
                elif r.take("DROP", "DEFAULT"):
                    table.columns[i] = replace(c, default=None)
                else:
                    _words_until_stop(r)  # SET VISIBLE / INVISIBLE
            elif r.take("CONVERT", "TO"):
                r.take("CHARACTER", "SET") or r.take("CHARSET")
                charset = r.name().lower()
                if charset == "default":
                    charset = self._charset_for(new_key[0]) or charset
                _words_until_stop(r)
                table.charset = charset
                table.charsets = [charset if cs not in (None, "binary") else cs for cs in table.charsets]
            elif r.up() in ("DEFAULT", "CHARACTER", "CHARSET", "COLLATE"):
                charset = _table_charset(r)
                if charset:
                    table.charset = charset
            else:
                _words_until_stop(r)  # ENGINE=, AUTO_INCREMENT=, indexes, partitions, ALGORITHM=, LOCK=, ...
            if not r.op(","):
                if not r.done():
                    _words_until_stop(r)
                    if not r.op(","):
                        break
        del self.tables[key]
        self.tables[new_key] = table
        return {key, new_key}

    def _add_columns(self, r: _Reader, table: Table, where: str, if_not_exists: bool = False) -> None:
        if r.op("("):
            while True:
                got = _create_item(r, self.mariadb)
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
        charset = _column_charset(d, table.charset)
        table.columns.insert(at, _sized(d, charset))
        table.charsets.insert(at, charset)

    def _replace_column(self, r: _Reader, table: Table, old: str, new: str, where: str) -> None:
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


def _position(r: _Reader, table: Table, default: int | None = None) -> int:
    if r.take("FIRST"):
        return 0
    if r.take("AFTER"):
        return table.index(r.name()) + 1
    return len(table.columns) if default is None else default


def _pk_not_null(table: Table) -> None:
    for name in table.pk:
        i = table.index(name)
        table.columns[i] = replace(table.columns[i], nullable=False)


def _column_charset(d: Definition, table_charset: str | None) -> str | None:
    if not d.charset_bound:
        return d.charset  # binary types: "binary"; others: None
    if d.charset:
        return d.charset
    if d.collate:
        return _charset_of_collation(d.collate)
    return table_charset


def _sized(d: Definition, charset: str | None) -> Column:
    """The column; for TEXT(M), the smallest text type that holds M characters of the column's charset."""
    if not d.text_m:
        return d.column
    need = d.text_m * _MAX_BYTES.get(charset or "", 1)
    size = next(n for n in sorted(_TEXTS.values()) if need <= n or n == _TEXTS["LONGTEXT"])
    return replace(d.column, char_length=size)


def _charset_option(r: _Reader) -> tuple[str, str] | None:
    """("charset", name) or ("collate", name) where a CHARACTER SET, CHARSET or COLLATE clause starts."""
    if r.take("CHARACTER", "SET") or r.take("CHARSET") or r.take("CHAR", "SET"):
        kind = "charset"
    elif r.take("COLLATE"):
        kind = "collate"
    else:
        return None
    r.op("=")
    return kind, r.name().lower()


def _db_charset(r: _Reader) -> str | None:
    charset = None
    while not r.done():
        r.take("DEFAULT")
        option = _charset_option(r)
        if option is None:
            r.next()
        elif option[0] == "charset":
            charset = option[1]
        else:
            charset = charset or _charset_of_collation(option[1])
    return charset


def _table_charset(r: _Reader) -> str | None:
    """The table options' default charset (DEFAULT CHARSET=x, CHARACTER SET x, COLLATE=y), if any; reads
    to the end of the options."""
    charset = collate = None
    while not r.done() and not r.is_op(","):
        if r.take("DEFAULT"):
            continue
        option = _charset_option(r)
        if option is not None:
            if option[0] == "charset":
                charset = option[1]
            else:
                collate = option[1]
        elif r.is_op("("):
            r.skip_group()
        else:
            r.next()
    if charset == "default":
        charset = None
    return charset or (_charset_of_collation(collate) if collate else None)


def _create_item(r: _Reader, mariadb: bool) -> Definition | list[str] | None:
    """One item of a CREATE TABLE list: a column (its Definition), the primary key (its column names), or
    None (an index, a constraint, a period)."""
    if r.take("CONSTRAINT"):
        if r.up() not in ("PRIMARY", "UNIQUE", "FOREIGN", "CHECK"):
            r.name()
    if r.take("PRIMARY", "KEY"):
        while r.up() in ("USING",):
            r.next()
            r.next()
        names = [_key_part(part) for part in _split(r.skip_group())]
        _words_until_stop(r)
        return names
    # These words are reserved (a column of such a name is back-quoted), but for PERIOD (MariaDB's PERIOD FOR)
    if r.up() in ("INDEX", "KEY", "UNIQUE", "FULLTEXT", "SPATIAL", "FOREIGN", "CHECK") or r.at("PERIOD", "FOR"):
        _words_until_stop(r)
        return None
    name = r.name()
    return column_definition(r, name, mariadb)


def _split(group: list[Tok]) -> list[list[Tok]]:
    parts, cur, depth = [], [], 0
    for tok in group:
        if tok.kind == "op" and tok.text == "(":
            depth += 1
        elif tok.kind == "op" and tok.text == ")":
            depth -= 1
        if depth == 0 and tok.kind == "op" and tok.text == ",":
            parts.append(cur)
            cur = []
        else:
            cur.append(tok)
    if cur:
        parts.append(cur)
    return parts


def _key_part(part: list[Tok]) -> str:
    if not part or part[0].kind not in ("word", "ident"):
        raise Unreadable("a key part that is not a column")
    return part[0].text


# --- the model from the server's catalog ----------------------------------------------------------------

def read_catalog(cur, tables: Iterable[tuple[str, str]], mariadb: bool) -> Schema:
    """The tables' entries as the server's catalog has them now (the snapshot's schema read), with the
    databases' and the server's default charsets."""
    from connectors.mysql.types import from_catalog

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
