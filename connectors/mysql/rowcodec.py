"""A fast path for the binlog's row images: each table's rows decoded straight into canonical texts.

python-mysql-replication decodes a row column by column through a generic reader (a method call, a
bitmap test and a type dispatch per value), then `types.Column.text` turns each Python value into the
canonical text (types.py). For a table map whose columns are all of the common types below, this
module writes one Python function that reads a whole row image from the event's bytes with the
offsets and conversions of that table fixed in its code: the same texts, 3-4x faster (50k rows of a
6-column table: 0.32-0.41 s, against 1.16-1.19 s for the library's loop alone).

The texts are the library's values passed through `Column.text`, by construction (each reader below
is the library's, with the text conversion folded in); `tests/mysql` checks that both ways agree on
every supported type, NULLs, zero dates, negative decimals and multibyte text. Anything else — other
types (TIME, ENUM, SET, BIT, JSON, GEOMETRY, binary strings, pre-5.6 temporal types), partial
images (`binlog_row_image` other than FULL), MySQL's partial JSON updates — is left to the library,
per event: `decode_rows` returns None and the caller reads `event.rows`. The event's packet is only
read, never advanced, so that fallback is always possible, also when a fast read fails.
"""

from __future__ import annotations

import codecs
import datetime as dt
import struct
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import Any

from connectors.mysql import types as T

RowDecoder = Callable[[bytes, int], tuple[list, int]]
PARTIAL_UPDATE_ROWS_EVENT = 39
_EPOCH_ORDINAL = dt.date(1970, 1, 1).toordinal()
_DIG2BYTES = (0, 1, 1, 2, 2, 3, 3, 4, 4, 4)
# (size, signed format, unsigned format); BIGINT UNSIGNED is read signed: Debezium's long mode wraps it
_INTS = {T.TINY: (1, "b", "B"), T.SHORT: (2, "h", "H"), T.LONG: (4, "i", "I"), T.LONGLONG: (8, "q", "q")}


def _decimal_reader(precision: int, scale: int) -> tuple[int, Callable[[bytes, int], str]]:
    """(size in bytes, a reader of the text) of a DECIMAL(precision, scale): the library's
    __read_new_decimal, whose text is then `format(Decimal, "f")`."""
    integral = precision - scale
    uncomp_int, comp_int = divmod(integral, 9)
    uncomp_frac, comp_frac = divmod(scale, 9)
    size = _DIG2BYTES[comp_int] + 4 * uncomp_int + 4 * uncomp_frac + _DIG2BYTES[comp_frac]

    def read(d: bytes, p: int) -> str:
        raw = bytearray(d[p:p + size])
        negative = not raw[0] & 0x80
        raw[0] ^= 0x80
        if negative:
            raw = bytearray(b ^ 0xFF for b in raw)
        out, i = ["-" if negative else ""], 0
        n = _DIG2BYTES[comp_int]
        if n:
            out.append(str(int.from_bytes(raw[i:i + n], "big")))
            i += n
        for _ in range(uncomp_int):
            out.append(f"{int.from_bytes(raw[i:i + 4], 'big'):09d}")
            i += 4
        out.append(".")
        for _ in range(uncomp_frac):
            out.append(f"{int.from_bytes(raw[i:i + 4], 'big'):09d}")
            i += 4
        n = _DIG2BYTES[comp_frac]
        if n:
            out.append(f"{int.from_bytes(raw[i:i + n], 'big'):0{comp_frac}d}")
        return format(Decimal("".join(out)), "f")

    return size, read


def _fsp_code(fsp: int, var: str, at: str) -> tuple[list[str], int]:
    """Lines that set `var` to the microseconds of a fractional part at `at`, and its size (__read_fsp)."""
    size = (fsp + 1) // 2
    if not size:
        return [f"{var} = 0"], 0
    lines = [f"{var} = int.from_bytes(d[{at}:{at} + {size}], 'big')"]
    if fsp % 2:
        lines.append(f"{var} = {var} // 10")
    lines.append(f"{var} *= {10 ** (6 - fsp)}")
    return lines, size


def compile_row(lib_columns: Sequence[Any], columns: Sequence[T.Column]) -> RowDecoder | None:
    """The decoder of one full row image of a table, or None when a column's type is not one this
    module reads (the library then reads the table's rows)."""
    n = len(lib_columns)
    if n == 0 or n != len(columns):
        return None
    env: dict[str, Any] = {"unpack_from": struct.unpack_from, "date": dt.date, "EPOCH": _EPOCH_ORDINAL}
    body = ["def row(d, p):", f"    nb = d[p:p + {(n + 7) // 8}]", f"    p += {(n + 7) // 8}"]
    names = []
    for j, (lc, c) in enumerate(zip(lib_columns, columns)):
        t, v = lc.type, f"t{j}"
        names.append(v)
        code: list[str]
        if t in _INTS and c.family in ("tinyint", "smallint", "int", "bigint"):
            size, signed, unsigned = _INTS[t]
            code = [f"{v} = str(unpack_from('<{unsigned if c.unsigned else signed}', d, p)[0])", f"p += {size}"]
        elif t == T.INT24 and c.family == "mediumint":
            code = [f"{v} = int.from_bytes(d[p:p + 3], 'little', signed={not c.unsigned})", f"{v} = str({v})",
                    "p += 3"]
        elif t == T.YEAR and c.family == "year":
            code = [f"{v} = str(d[p] + 1900)", "p += 1"]
        elif t == T.FLOAT and c.family == "float":
            code = [f"{v} = repr(unpack_from('<f', d, p)[0])", "p += 4"]
        elif t == T.DOUBLE and c.family == "double":
            code = [f"{v} = repr(unpack_from('<d', d, p)[0])", "p += 8"]
        elif t == T.NEWDECIMAL and c.family == "decimal":
            size, reader = _decimal_reader(lc.precision, lc.decimals)
            env[f"dec{j}"] = reader
            code = [f"{v} = dec{j}(d, p)", f"p += {size}"]
        elif t == T.DATE and c.family == "date":
            code = ["x = int.from_bytes(d[p:p + 3], 'little')", "p += 3",
                    "y, m, dd = (x >> 9) & 0x7FFF, (x >> 5) & 0xF, x & 0x1F",
                    f"{v} = None if not (y and m and dd) else str(date(y, m, dd).toordinal() - EPOCH)"]
        elif t == T.DATETIME2 and c.family == "datetime":
            frac, fsize = _fsp_code(lc.fsp, "f", "p + 5")
            code = ["x = int.from_bytes(d[p:p + 5], 'big')", *frac, f"p += {5 + fsize}",
                    "ym, dd, h, mi, s = (x >> 22) & 0x1FFFF, (x >> 17) & 0x1F, (x >> 12) & 0x1F, (x >> 6) & 0x3F, "
                    "x & 0x3F",
                    "y, m = ym // 13, ym % 13",
                    f"{v} = None",
                    "if y and m and dd and h < 24 and mi < 60 and s < 60:",
                    "    try:",
                    f"        {v} = ((date(y, m, dd).toordinal() - EPOCH) * 86400 + h * 3600 + mi * 60 + s) "
                    "* 1000000 + f",
                    "    except ValueError:",
                    "        pass",
                    "    else:",
                    f"        {v} = str({v} // 1000)" if c.fsp <= 3 else f"        {v} = str({v})"]
        elif t == T.TIMESTAMP2 and c.family == "timestamp":
            frac, fsize = _fsp_code(lc.fsp, "f", "p + 4")
            code = ["x = unpack_from('>i', d, p)[0]", *frac, f"p += {4 + fsize}", f"{v} = str(x * 1000000 + f)"]
        elif t in (T.VARCHAR, T.STRING, T.BLOB) and c.family in ("char", "varchar", "text") and not c.as_bytes:
            encoding = _encoding(getattr(lc, "character_set_name", None))
            if encoding is None:
                return None
            width = lc.length_size if t == T.BLOB else (2 if lc.max_length > 255 else 1)
            code = [f"x = int.from_bytes(d[p:p + {width}], 'little')", f"p += {width}",
                    f"{v} = d[p:p + x].decode({encoding!r})", "p += x"]
        else:
            return None
        body.append(f"    if nb[{j >> 3}] & {1 << (j & 7)}:")
        body.append(f"        {v} = None")
        body.append("    else:")
        body += ["        " + line for line in code]
    body.append(f"    return [{', '.join(names)}], p")
    exec(compile("\n".join(body), f"<row decoder of {n} columns>", "exec"), env)  # noqa: S102 (our own code)
    return env["row"]


def row_format(lib_columns: Sequence[Any], layout: str) -> tuple:
    """What a compiled decoder depends on: the layout, and the table map's own widths and charsets, which
    the layout does not hold (a VARCHAR(200) widened to VARCHAR(300) gets a two-byte length)."""
    return layout, tuple((c.type, getattr(c, "max_length", None), getattr(c, "length_size", None),
                          getattr(c, "character_set_name", None), getattr(c, "precision", None),
                          getattr(c, "decimals", None), getattr(c, "fsp", None)) for c in lib_columns)


def _encoding(charset: str | None) -> str | None:
    """The Python codec the library decodes a column of this MySQL charset with; None when it would not
    decode it (no charset known, or one Python lacks: the library then keeps the bytes)."""
    if charset is None:
        return None
    from pymysql.charset import charset_by_name

    found = charset_by_name(charset)
    encoding = found.encoding if found else charset
    try:
        return codecs.lookup(encoding).name
    except LookupError:
        return None


def decode_rows(event, row: RowDecoder, update: bool) -> list[tuple[list | None, list | None]] | None:
    """The (before, after) texts of every row of a rows event (before None for an insert, after None for
    a delete), or None when the event is not one the decoder reads whole: the library reads it then."""
    wrapper = getattr(event, "packet", None)
    packet = getattr(wrapper, "packet", None)
    data, start = getattr(packet, "_data", None), getattr(packet, "_position", None)
    if not isinstance(data, (bytes, bytearray)) or start is None or not getattr(event, "complete", True):
        return None
    if event.event_type == PARTIAL_UPDATE_ROWS_EVENT or getattr(wrapper, "_BinLogPacketWrapper__data_buffer", b""):
        return None
    n = event.number_of_columns
    full = _full_bitmap(n)
    if bytes(event.columns_present_bitmap) != full or (update and bytes(event.columns_present_bitmap2) != full):
        return None
    end = start + event.event_size - wrapper.read_bytes
    out, p = [], start
    try:
        while p < end:
            first, p = row(data, p)
            if update:
                second, p = row(data, p)
                out.append((first, second))
            else:
                out.append((first, None))
    except (ValueError, IndexError, struct.error, UnicodeDecodeError):
        return None  # the library reads it, and says what is wrong if something is
    return out if p == end else None


def _full_bitmap(n: int) -> bytes:
    whole, rest = divmod(n, 8)
    return b"\xff" * whole + (bytes([(1 << rest) - 1]) if rest else b"")
