"""Reading MySQL's DDL text for the schema history's model (ddl.py): tokens, a reader over them, a column
definition as the `types.Column` the server's catalog would show for it, and the clauses the model's
statements share (charsets, key lists, CREATE TABLE items, DEFAULT values).

Kept apart from the model so that ddl.py reads as what each statement does to the tables, and this module
as how MySQL and MariaDB spell it. A text this reader does not understand raises `Unreadable`: the model
then forgets the table rather than guess its columns.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from connectors.mysql.types import Column

_EPOCH_TEXT = "1970-01-01 00:00:00"


class Unreadable(ValueError):
    """A DDL statement on a tracked table this model cannot read (the message names the table, not the text);
    `table` is the table it changes, where known."""

    def __init__(self, message: str, table: tuple[str, str] | None = None):
        super().__init__(message)
        self.table = table


# --- tokens -----------------------------------------------------------------------------------------------

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


class Reader:
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


# --- column types -----------------------------------------------------------------------------------------

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


def words_until_stop(r: Reader) -> None:
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


def column_definition(r: Reader, name: str, mariadb: bool) -> Definition:
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
            default_expr = default_value(r, mariadb)
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


def _value_tokens(r: Reader) -> list[Tok]:
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


def default_value(r: Reader, mariadb: bool) -> str | None:
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


# --- a definition in its table, and the clauses the statements share --------------------------------------

def column_charset(d: Definition, table_default: str | None) -> str | None:
    if not d.charset_bound:
        return d.charset  # binary types: "binary"; others: None
    if d.charset:
        return d.charset
    if d.collate:
        return _charset_of_collation(d.collate)
    return table_default


def sized(d: Definition, charset: str | None) -> Column:
    """The column; for TEXT(M), the smallest text type that holds M characters of the column's charset."""
    if not d.text_m:
        return d.column
    need = d.text_m * _MAX_BYTES.get(charset or "", 1)
    size = next(n for n in sorted(_TEXTS.values()) if need <= n or n == _TEXTS["LONGTEXT"])
    return replace(d.column, char_length=size)


def _charset_option(r: Reader) -> tuple[str, str] | None:
    """("charset", name) or ("collate", name) where a CHARACTER SET, CHARSET or COLLATE clause starts."""
    if r.take("CHARACTER", "SET") or r.take("CHARSET") or r.take("CHAR", "SET"):
        kind = "charset"
    elif r.take("COLLATE"):
        kind = "collate"
    else:
        return None
    r.op("=")
    return kind, r.name().lower()


def db_charset(r: Reader) -> str | None:
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


def table_charset(r: Reader) -> str | None:
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


def create_item(r: Reader, mariadb: bool) -> Definition | list[str] | None:
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
        words_until_stop(r)
        return names
    # These words are reserved (a column of such a name is back-quoted), but for PERIOD (MariaDB's PERIOD FOR)
    if r.up() in ("INDEX", "KEY", "UNIQUE", "FULLTEXT", "SPATIAL", "FOREIGN", "CHECK") or r.at("PERIOD", "FOR"):
        words_until_stop(r)
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
