"""MySQL/MariaDB column types as Debezium's MySQL connector maps them (2.3 defaults: decimal.handling.mode
precise, time.precision.mode adaptive_time_microseconds, bigint.unsigned.handling.mode long,
binary.handling.mode bytes; and the other modes `Column.with_modes` sets).

Both ways a row reaches a topic, the binlog decoder (Python, on executors) and a snapshot query (SQL,
in the database), first give every column as one canonical text; one Spark expression per column then
turns that text into Debezium's value. So a snapshot row and a binlog row of the same data are the same
record. The canonical texts:

    integers      decimal digits (BIGINT UNSIGNED wrapped into a signed long, as Debezium's long mode)
    FLOAT/DOUBLE  Python's repr / MySQL's CAST AS CHAR
    DECIMAL       the plain decimal
    DATE          days since the epoch            DATETIME(p)  epoch millis (p<=3) or micros, as UTC
    TIME          microseconds                    TIMESTAMP    epoch micros (Spark prints the ISO text)
    YEAR          the year                        strings      the text itself
    binary, BLOB  hex                             BIT(1) 0/1, BIT(n) hex of the little-endian bytes
    ENUM          the label                       SET          the labels in declared order, comma separated
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field, replace
from decimal import Decimal, InvalidOperation
from typing import Any

from ingest.records import schema as S

# Column type codes of the binlog's table map (MySQL's enum_field_types).
TINY, SHORT, LONG, FLOAT, DOUBLE, NULL, TIMESTAMP, LONGLONG, INT24, DATE, TIME, DATETIME, YEAR, NEWDATE, \
    VARCHAR, BIT, TIMESTAMP2, DATETIME2, TIME2 = range(1, 20)
JSON, NEWDECIMAL, ENUM, SET, TINY_BLOB, MEDIUM_BLOB, LONG_BLOB, BLOB, VAR_STRING, STRING, GEOMETRY = \
    245, 246, 247, 248, 249, 250, 251, 252, 253, 254, 255
DECIMAL_OLD = 0

_TYPE_NAMES = {
    TINY: "tinyint", SHORT: "smallint", INT24: "mediumint", LONG: "int", LONGLONG: "bigint", FLOAT: "float",
    DOUBLE: "double", DECIMAL_OLD: "decimal", NEWDECIMAL: "decimal", DATE: "date", NEWDATE: "date",
    TIME: "time", TIME2: "time", DATETIME: "datetime", DATETIME2: "datetime", TIMESTAMP: "timestamp",
    TIMESTAMP2: "timestamp", YEAR: "year", VARCHAR: "varchar", VAR_STRING: "varchar", STRING: "char",
    TINY_BLOB: "blob", MEDIUM_BLOB: "blob", LONG_BLOB: "blob", BLOB: "blob", JSON: "json", ENUM: "enum",
    SET: "set", BIT: "bit", GEOMETRY: "geometry",
}
# information_schema.COLUMNS.DATA_TYPE -> the same family names
_INFO_NAMES = {
    "tinyint": "tinyint", "smallint": "smallint", "mediumint": "mediumint", "int": "int", "integer": "int",
    "bigint": "bigint", "float": "float", "double": "double", "real": "double", "decimal": "decimal",
    "numeric": "decimal", "date": "date", "time": "time", "datetime": "datetime", "timestamp": "timestamp",
    "year": "year", "char": "char", "varchar": "varchar", "tinytext": "text", "text": "text",
    "mediumtext": "text", "longtext": "text", "binary": "binary", "varbinary": "binary", "tinyblob": "blob",
    "blob": "blob", "mediumblob": "blob", "longblob": "blob", "json": "json", "enum": "enum", "set": "set",
    "bit": "bit", "bool": "tinyint", "boolean": "tinyint",
    # spatial types: the server's internal value (SRID, then WKB), as the binlog carries it
    "geometry": "geometry", "point": "geometry", "linestring": "geometry", "polygon": "geometry",
    "multipoint": "geometry", "multilinestring": "geometry", "multipolygon": "geometry",
    "geometrycollection": "geometry",
}


@dataclass(frozen=True)
class Column:
    """One captured column as the connector sees it, whichever way it learnt it (table map or catalog)."""

    name: str
    family: str  # tinyint ... set, see _TYPE_NAMES
    unsigned: bool = False
    nullable: bool = True
    binary: bool = False  # a string type of the binary charset: bytes
    precision: int | None = None  # DECIMAL
    scale: int | None = None  # DECIMAL
    fsp: int = 0  # DATETIME/TIMESTAMP/TIME fractional digits
    bits: int = 0  # BIT(n)
    labels: tuple[str, ...] = ()  # ENUM/SET
    # What only the catalog knows (a binlog table map has none of it), so left out of equality: a table map's
    # column is the catalog's column. `with_catalog` copies them over.
    default: str | None = field(default=None, compare=False)  # the DEFAULT's canonical text
    length: int = field(default=0, compare=False)  # BINARY(n): n (the binlog drops trailing zero bytes)
    subtype: str = field(default="", compare=False)  # POINT: "point"; FLOAT(M,D): "scaled" (DOUBLE to Debezium)
    char_length: int = field(default=0, compare=False)  # CHAR/VARCHAR/TEXT: the declared length in characters
    # The connector's decimal.handling.mode, binary.handling.mode, bigint.unsigned.handling.mode and
    # time.precision.mode (`with_modes`): how the value is represented, not what the column is; never stored
    # with a layout.
    decimal_mode: str = field(default="precise", compare=False)
    binary_mode: str = field(default="bytes", compare=False)
    bigint_mode: str = field(default="long", compare=False)  # bigint.unsigned.handling.mode
    time_mode: str = field(default="adaptive_time_microseconds", compare=False)  # time.precision.mode

    def to_json(self) -> list:
        return [self.name, self.family, self.unsigned, self.nullable, self.binary, self.precision, self.scale,
                self.fsp, self.bits, list(self.labels), self.default, self.length, self.subtype, self.char_length]

    @classmethod
    def from_json(cls, v: list) -> Column:
        more = (v[10], int(v[11]), v[12]) if len(v) > 10 else (None, 0, "")
        more += (int(v[13]),) if len(v) > 13 else (0,)
        return cls(v[0], v[1], bool(v[2]), bool(v[3]), bool(v[4]), v[5], v[6], int(v[7]), int(v[8]), tuple(v[9]),
                   *more)

    def with_catalog(self, other: Column | None) -> Column:
        """This column with the catalog's default, length and subtype, when `other` (the catalog's column
        of that name) is still of the same kind."""
        if other is None or other.name != self.name or other.family != self.family:
            return self
        return replace(self, default=other.default, length=other.length, subtype=other.subtype,
                       char_length=other.char_length)

    def with_modes(self, decimal_mode: str, binary_mode: str, bigint_mode: str = "long",
                   time_mode: str = "adaptive_time_microseconds") -> Column:
        if (decimal_mode, binary_mode, bigint_mode, time_mode) == (self.decimal_mode, self.binary_mode,
                                                                   self.bigint_mode, self.time_mode):
            return self
        return replace(self, decimal_mode=decimal_mode, binary_mode=binary_mode, bigint_mode=bigint_mode,
                       time_mode=time_mode)

    @property
    def _connect_time(self) -> bool:
        """A DATE, TIME or DATETIME that time.precision.mode=connect writes as Kafka Connect's Date, Time
        or Timestamp (JdbcValueConverters.schemaBuilder; TIMESTAMP and YEAR keep their Debezium types)."""
        return self.time_mode == "connect" and self.family in ("date", "time", "datetime")

    @property
    def _precise_unsigned(self) -> bool:
        """A BIGINT UNSIGNED that bigint.unsigned.handling.mode=precise writes as a Decimal of scale 0."""
        return self.family == "bigint" and self.unsigned and self.bigint_mode == "precise"

    @property
    def _encoded_binary(self) -> bool:
        """A binary column that binary.handling.mode writes as a string (base64, base64-url-safe, hex)."""
        return self.binary_mode != "bytes" and (self.family in ("blob", "binary") or self.binary)

    # --- Debezium's schema ----------------------------------------------------------------------

    def connect_schema(self) -> S.ConnectSchema:
        """Debezium's schema of the column, with its DEFAULT (JsonConverter then writes the default for a null,
        as Debezium's records show)."""
        schema = self._base_schema()
        value = self.connect_default()
        return schema.with_default(value) if value is not None else schema

    def _base_schema(self) -> S.ConnectSchema:
        opt = self.nullable
        f = self.family
        if f in ("tinyint", "smallint"):
            t = "int32" if f == "smallint" and self.unsigned else "int16"
            return S.ConnectSchema(t, opt)
        if f == "mediumint":
            return S.ConnectSchema("int32", opt)
        if f == "int":
            return S.ConnectSchema("int64" if self.unsigned else "int32", opt)
        if f == "bigint":
            if self._precise_unsigned:  # Debezium's Decimal.builder(0): no precision parameter
                return S.ConnectSchema("bytes", opt, S.DECIMAL, 1, parameters=(("scale", "0"),))
            return S.ConnectSchema("int64", opt)
        if f == "float":
            return S.ConnectSchema("float64" if self.subtype == "scaled" else "float32", opt)
        if f == "double":
            return S.ConnectSchema("float64", opt)
        if f == "decimal":
            if self.decimal_mode == "double":
                return S.ConnectSchema("float64", opt)
            if self.decimal_mode == "string":
                return S.ConnectSchema("string", opt)
            params = (("scale", str(self.scale or 0)), ("connect.decimal.precision", str(self.precision or 10)))
            return S.ConnectSchema("bytes", opt, S.DECIMAL, 1, parameters=params)
        if self._connect_time:
            return {"date": S.date, "time": S.time, "datetime": S.timestamp}[f](opt)
        if f == "date":
            return S.ConnectSchema("int32", opt, "io.debezium.time.Date", 1)
        if f == "datetime":
            name = "io.debezium.time.Timestamp" if self.fsp <= 3 else "io.debezium.time.MicroTimestamp"
            return S.ConnectSchema("int64", opt, name, 1)
        if f == "timestamp":
            return S.ConnectSchema("string", opt, "io.debezium.time.ZonedTimestamp", 1)
        if f == "time":
            return S.ConnectSchema("int64", opt, "io.debezium.time.MicroTime", 1)
        if f == "year":
            return S.ConnectSchema("int32", opt, "io.debezium.time.Year", 1)
        if f == "json":
            return S.ConnectSchema("string", opt, "io.debezium.data.Json", 1)
        if f == "enum":
            return S.ConnectSchema("string", opt, "io.debezium.data.Enum", 1,
                                   parameters=(("allowed", ",".join(self.labels)),))
        if f == "set":
            return S.ConnectSchema("string", opt, "io.debezium.data.EnumSet", 1,
                                   parameters=(("allowed", ",".join(self.labels)),))
        if f == "bit":
            if self.bits <= 1:
                return S.ConnectSchema("boolean", opt)
            return S.ConnectSchema("bytes", opt, "io.debezium.data.Bits", 1, parameters=(("length", str(self.bits)),))
        if f == "geometry":
            return replace(POINT_SCHEMA if self.subtype == "point" else GEOMETRY_SCHEMA, optional=opt)
        if f in ("blob", "binary") or self.binary:
            return S.ConnectSchema("string" if self._encoded_binary else "bytes", opt)
        return S.ConnectSchema("string", opt)

    def connect_default(self) -> Any:
        """The default as the Connect value its schema carries (spark_value's mirror, for one text)."""
        t = self.default
        if t is None:
            return None
        schema = self._base_schema()
        f = self.family
        if f == "timestamp":
            # a schema default: Debezium prints it without the column's width (trailing zeros dropped)
            return zoned(_EPOCH + dt.timedelta(microseconds=int(t)))
        if self._connect_time and f == "time":  # none outside 00:00..24:00, as for a value
            micros = int(t)
            return micros // 1000 if 0 <= micros <= _DAY_MICROS else None
        if self._connect_time and f == "datetime" and self.fsp > 3:  # the canonical text is in micros
            return int(t) // 1000
        if f == "bit" and self.bits <= 1:
            return t == "1"
        if self._precise_unsigned:
            return Decimal(int(t) % (1 << 64))
        if schema.name == S.DECIMAL:
            return Decimal(t)
        if self._encoded_binary:
            return _encode(bytes.fromhex(t.ljust(2 * self.length, "0")), self.binary_mode)
        if schema.type == "bytes":
            return bytes.fromhex(t.ljust(2 * self.length, "0"))
        if schema.type == "string":
            return t
        if schema.type in ("float32", "float64"):
            return float(t)
        if schema.type == "struct":
            return None
        return int(t)

    @property
    def as_bytes(self) -> bool:
        return self.family in ("blob", "binary", "geometry") or (self.binary and self.family in ("char", "varchar",
                                                                                                   "text"))

    # --- canonical text, from the binlog decoder's Python values ---------------------------------

    def text(self, v: Any) -> str | None:
        if v is None:
            return None
        f = self.family
        if f in ("tinyint", "smallint", "mediumint", "int", "year"):
            return str(int(v))
        if f == "bigint":
            v = int(v)
            return str(v - (1 << 64) if v >= 1 << 63 else v)
        if f in ("float", "double"):
            return repr(float(v))
        if f == "decimal":
            return format(v, "f")
        if f == "date":
            return str((v - _EPOCH_DATE).days) if isinstance(v, dt.date) else None
        if f == "datetime":
            if not isinstance(v, dt.datetime):
                return None
            micros = _micros(v)
            return str(micros // 1000 if self.fsp <= 3 else micros)
        if f == "timestamp":
            return str(_micros(v)) if isinstance(v, dt.datetime) else None
        if f == "time":
            micros = (v.days * 86400 + v.seconds) * 1_000_000 + v.microseconds
            if micros < 0 and micros % 1_000_000:
                # python-mysql-replication reads a negative TIME's fraction as if it were positive (MySQL
                # stores the whole value in two's complement): -(S + F) where the value is -(S + 1 - F).
                whole, frac = divmod(-micros, 1_000_000)
                micros = -(whole * 1_000_000 + (1_000_000 - frac))
            return str(micros)
        if f == "set":
            chosen = set(v) if not isinstance(v, str) else set(filter(None, v.split(",")))
            return ",".join(label for label in self.labels if label in chosen)
        if f == "bit":
            bits = v if isinstance(v, str) else format(int(v), "b")
            n = int(bits or "0", 2)
            if self.bits <= 1:
                return "1" if n else "0"
            return n.to_bytes((self.bits + 7) // 8, "little").hex()
        if f == "json":
            if isinstance(v, (bytes, bytearray)):
                return v.decode("utf-8", "replace")
            if not isinstance(v, str):
                import json
                return json.dumps(_json_ready(v), separators=(",", ":"))
            return v
        if self.as_bytes:
            return bytes(v).hex() if isinstance(v, (bytes, bytearray)) else str(v).encode("utf-8").hex()
        if isinstance(v, (bytes, bytearray)):
            return bytes(v).decode("utf-8", "replace")
        return str(v)

    def default_text(self, expression: str | None) -> str | None:
        """The canonical text of a DEFAULT as `default_expression` gives it; None when Debezium keeps none."""
        if expression is None or self.family == "geometry":
            return None
        f, e = self.family, expression.strip()
        try:
            if f == "time":
                m = re.fullmatch(r"(-)?(\d+):(\d\d):(\d\d)(?:\.(\d{1,6}))?", e)
                if not m:
                    return None
                micros = ((int(m[2]) * 60 + int(m[3])) * 60 + int(m[4])) * 1_000_000 + int((m[5] or "").ljust(6, "0"))
                return str(-micros if m[1] else micros)
            value: Any = e
            if f in _INTEGERS or f == "year":
                value = int(Decimal(e))
            elif f in ("float", "double"):
                value = float(e)
            elif f == "decimal":
                value = Decimal(e)
            elif f == "date":
                value = dt.date.fromisoformat(e)
            elif f in ("datetime", "timestamp"):
                value = dt.datetime.fromisoformat(e)
            elif self.as_bytes:
                value = e.encode("utf-8")
        except (ValueError, InvalidOperation):  # a zero date, an expression: Debezium has no default either
            return None
        return self.text(value)

    # --- canonical text, computed by the database in a snapshot query -----------------------------

    def sql_text(self, quoted: str) -> str:
        f = self.family
        if f == "bigint" and self.unsigned:
            return f"CAST(CAST({quoted} AS SIGNED) AS CHAR)"
        if f in ("tinyint", "smallint", "mediumint", "int", "bigint", "year", "decimal", "float", "double"):
            return f"CAST({quoted} AS CHAR)"
        if f == "date":
            return f"CAST(DATEDIFF({quoted}, '1970-01-01') AS CHAR)"
        if f == "datetime":
            micros = f"TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', {quoted})"
            return f"CAST(FLOOR({micros} / 1000) AS CHAR)" if self.fsp <= 3 else f"CAST({micros} AS CHAR)"
        if f == "timestamp":  # UNIX_TIMESTAMP does not depend on the session's time zone
            return f"CAST(CAST(UNIX_TIMESTAMP({quoted}) * 1000000 AS SIGNED) AS CHAR)"
        if f == "time":
            return f"CAST(CAST(TIME_TO_SEC({quoted}) * 1000000 AS SIGNED) AS CHAR)"
        if f == "bit":
            if self.bits <= 1:
                return f"CAST({quoted} + 0 AS CHAR)"
            n = (self.bits + 7) // 8
            return f"LOWER(HEX(REVERSE(UNHEX(LPAD(HEX({quoted}), {2 * n}, '0')))))"
        if self.as_bytes:
            return f"LOWER(HEX({quoted}))"
        # TEXT too: MariaDB's JSON is a LONGTEXT that JSON_ARRAY would embed as JSON, not as the text stored
        return f"CAST({quoted} AS CHAR)" if f in ("enum", "set", "text") else quoted

    # --- canonical text -> Debezium value, in Spark ---------------------------------------------

    def spark_value(self, text):
        from pyspark.sql import functions as F

        schema = self.connect_schema()
        f = self.family
        if f == "timestamp":
            if self.fsp > 0:  # the column's digits, zeros kept (see `zoned`)
                return F.date_format(F.timestamp_micros(text.cast("long")),
                                     "yyyy-MM-dd'T'HH:mm:ss." + "S" * min(self.fsp, 6) + "'Z'")
            printed = F.date_format(F.timestamp_micros(text.cast("long")), "yyyy-MM-dd'T'HH:mm:ss.SSSSSS'Z'")
            return _trim_zoned(printed)
        if f == "bit" and self.bits <= 1:
            return text == F.lit("1")
        if self._connect_time:
            return _connect_time_value(text, f, self.fsp)
        if f == "geometry":
            return _geometry(text, self.subtype == "point")
        if f == "float" and self.subtype == "scaled":  # Debezium widens the FLOAT it read to a double
            return text.cast("float").cast("double")
        if self._precise_unsigned:  # the canonical text is the long mode's wrapped value: unwrap it
            wrapped = text.cast("decimal(20,0)")
            return F.when(wrapped < 0, wrapped + F.lit(str(1 << 64)).cast("decimal(20,0)")).otherwise(wrapped) \
                .cast(schema.to_spark_type())
        if self._encoded_binary:
            raw = F.unhex(F.rpad(text, 2 * self.length, "0")) if f == "binary" and self.length else F.unhex(text)
            return _spark_encode(raw, self.binary_mode)
        if f == "binary" and self.length:
            return F.unhex(F.rpad(text, 2 * self.length, "0"))
        if schema.type == "bytes" and schema.name != S.DECIMAL:
            return F.unhex(text)
        if schema.type == "string":
            return text
        return text.cast(schema.to_spark_type())


def _connect_time_value(text, family: str, fsp: int):
    """time.precision.mode=connect: a DATE's days as a Spark date; a DATETIME as a timestamp of its epoch
    millis, a finer fraction cut off towards the past (Debezium's Timestamp.toEpochMillis, via
    Instant.toEpochMilli); a TIME as its millis of the day, the fraction beyond millis cut off
    (Duration.toMillis), null outside 00:00:00..24:00:00 inclusive, as Debezium's Time.toMilliOfDay refuses
    a negative or longer TIME in this mode and its converter then gives null."""
    from pyspark.sql import functions as F

    if family == "date":
        return F.date_from_unix_date(text.cast("int"))
    n = text.cast("long")
    if family == "datetime":
        if fsp <= 3:  # the canonical text is already in millis
            return F.timestamp_millis(n)
        whole = (n - F.pmod(n, F.lit(1000))).cast("decimal(20,0)")  # exact: a double has 53 bits
        return F.timestamp_millis((whole / 1000).cast("long"))
    return F.when((n >= 0) & (n <= _DAY_MICROS), (n / 1000).cast("int"))


def _encode(data: bytes, mode: str) -> str:
    """binary.handling.mode's text of `data`, as Debezium writes it."""
    import base64

    if mode == "base64":
        return base64.b64encode(data).decode("ascii")
    if mode == "base64-url-safe":
        return base64.urlsafe_b64encode(data).decode("ascii")
    return data.hex()


def _spark_encode(data, mode: str):
    from pyspark.sql import functions as F

    if mode == "base64":
        return F.base64(data)
    if mode == "base64-url-safe":
        return F.translate(F.base64(data), "+/", "-_")
    return F.lower(F.hex(data))


def _le_hex(text, start: int, size: int):
    """The `size` bytes at hex position `start` (1-based) of `text`, most significant first."""
    from pyspark.sql import functions as F

    return F.concat(*[F.substring(text, start + 2 * i, 2) for i in reversed(range(size))])


def _geometry(text, point: bool):
    """Debezium's Geometry (wkb, srid) or Point (x, y, wkb, srid) struct of the server's spatial value, whose
    hex is the SRID (4 bytes, little-endian), then the WKB (for a point: order, type, x, y as doubles)."""
    from pyspark.sql import functions as F

    srid = F.conv(_le_hex(text, 1, 4), 16, 10).cast("int")
    fields = [F.unhex(F.substring(text, 9, 1 << 30)).alias("wkb"), F.when(srid != 0, srid).alias("srid")]
    if point:
        def double(start: int):  # the 8 bytes' IEEE bits, as Double.longBitsToDouble reads them
            bits = F.conv(_le_hex(text, start, 8), 16, -10).cast("long")
            return F.reflect(F.lit("java.lang.Double"), F.lit("longBitsToDouble"), bits).cast("double")
        fields = [double(19).alias("x"), double(35).alias("y")] + fields
    return F.when(text.isNotNull(), F.struct(*fields))


GEOMETRY_SCHEMA = S.struct("io.debezium.data.geometry.Geometry", ("wkb", S.ConnectSchema("bytes")),
                           ("srid", S.ConnectSchema("int32", True)), optional=True, version=1, doc="Geometry")
POINT_SCHEMA = S.struct("io.debezium.data.geometry.Point", ("x", S.ConnectSchema("float64")),
                        ("y", S.ConnectSchema("float64")), ("wkb", S.ConnectSchema("bytes", True)),
                        ("srid", S.ConnectSchema("int32", True)), optional=True, version=1, doc="Geometry (POINT)")

_INTEGERS = ("tinyint", "smallint", "mediumint", "int", "bigint")
_EPOCH_DATE = dt.date(1970, 1, 1)
_EPOCH = dt.datetime(1970, 1, 1)
_DAY_MICROS = 86_400_000_000


def _micros(v: dt.datetime) -> int:
    d = v.replace(tzinfo=None) - _EPOCH
    return (d.days * 86400 + d.seconds) * 1_000_000 + d.microseconds


def zoned(v: dt.datetime, fsp: int = 0) -> str:
    """Debezium's ZonedTimestamp text: ISO-8601 in UTC; the fraction with the column's `fsp` digits (zeros
    kept, as Debezium's `ZonedTimestamp.toIsoString` prints a value of a column with a fractional width),
    or, with `fsp` 0 (a column without one, or a schema default), without trailing zeros."""
    text = v.strftime("%Y-%m-%dT%H:%M:%S")
    if fsp > 0:
        text += "." + f"{v.microsecond:06d}"[:fsp]
    elif v.microsecond:
        text += ("." + f"{v.microsecond:06d}").rstrip("0")
    return text + "Z"


def _trim_zoned(text):
    """Six fraction digits printed; drop trailing zeros (and a bare dot) as `zoned` does."""
    from pyspark.sql import functions as F

    return F.regexp_replace(F.regexp_replace(text, r"0+Z$", "Z"), r"\.Z$", "Z")


def _json_ready(v: Any) -> Any:
    if isinstance(v, dict):
        return {(k.decode() if isinstance(k, bytes) else k): _json_ready(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_json_ready(x) for x in v]
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    return v


def from_table_map(event) -> tuple[list[Column], list[int]]:
    """Columns and primary-key positions of a binlog TABLE_MAP event written with binlog_row_metadata=FULL."""
    meta = event.optional_metadata
    nulls = event.null_bitmask
    cols = []
    enums = iter(meta.set_enum_str_value_list or [])
    sets = iter(meta.set_str_value_list or [])
    for i, c in enumerate(event.columns):
        family = _TYPE_NAMES.get(c.type, "varchar")
        charset = getattr(c, "character_set_name", None)
        binary = charset == "binary"
        if family == "blob" and not binary:
            family = "text"
        if family in ("char", "varchar") and binary:
            family = "binary"
        labels: tuple[str, ...] = ()
        if family == "enum":
            labels = tuple(_s(x) for x in next(enums, []))
        elif family == "set":
            labels = tuple(_s(x) for x in next(sets, []))
        nullable = bool(nulls[i // 8] & (1 << (i % 8))) if nulls else True
        unsigned = family in _INTEGERS and bool(getattr(c, "unsigned", False))
        cols.append(Column(c.name, family, unsigned, nullable, binary,
                           getattr(c, "precision", None), getattr(c, "decimals", None),
                           int(getattr(c, "fsp", 0) or 0), int(getattr(c, "bits", 0) or 0), labels))
    pk = list(meta.simple_primary_key_list or []) or sorted((meta.primary_keys_with_prefix or {}).keys())
    return cols, pk


def from_catalog(row: dict, mariadb: bool = True) -> Column:
    """A column from information_schema.COLUMNS (DATA_TYPE, COLUMN_TYPE, IS_NULLABLE, COLUMN_DEFAULT, ...);
    `mariadb`: MariaDB quotes string defaults in COLUMN_DEFAULT, MySQL does not."""
    data_type = str(row["DATA_TYPE"]).lower()
    column_type = str(row["COLUMN_TYPE"]).lower()
    family = _INFO_NAMES.get(data_type, "varchar")
    binary = family in ("binary", "blob")
    labels: tuple[str, ...] = ()
    if family in ("enum", "set"):  # labels keep their case: cut them from the original text
        original = str(row["COLUMN_TYPE"])
        labels = tuple(_unquote_labels(original[original.index("(") + 1:original.rindex(")")]))
    bits = 0
    if family == "bit":
        bits = int(row.get("NUMERIC_PRECISION") or 1)
    column = Column(str(row["COLUMN_NAME"]), family, "unsigned" in column_type, row["IS_NULLABLE"] == "YES", binary,
                    _int(row.get("NUMERIC_PRECISION")) if family == "decimal" else None,
                    _int(row.get("NUMERIC_SCALE")) if family == "decimal" else None,
                    _int(row.get("DATETIME_PRECISION")) or 0, bits, labels)
    subtype = ("point" if data_type == "point" else "scaled" if re.fullmatch(r"float\(\d+,\d+\).*", column_type)
               else "")
    length = int(row.get("CHARACTER_OCTET_LENGTH") or 0) if column_type.startswith("binary(") else 0
    char_length = (_int(row.get("CHARACTER_MAXIMUM_LENGTH")) or 0) if family in ("char", "varchar", "text") else 0
    column = replace(column, subtype=subtype, length=length, char_length=char_length)
    expression = default_expression(row.get("COLUMN_DEFAULT"), str(row.get("EXTRA") or ""), mariadb)
    return replace(column, default=column.default_text(expression))


_EPOCH_TEXT = "1970-01-01 00:00:00"


def default_expression(text: str | None, extra: str, mariadb: bool) -> str | None:
    """COLUMN_DEFAULT as Debezium's DefaultValueParserListener gives the DEFAULT clause SHOW CREATE TABLE prints."""
    if text is None:
        return None
    text = str(text)
    now = re.fullmatch(r"(?i)(current_timestamp|now)\s*(\(\s*\d*\s*\))?", text.strip())
    if not mariadb:  # MySQL: literals unquoted, expressions marked DEFAULT_GENERATED
        if "default_generated" in extra.lower():
            return _EPOCH_TEXT if now else None
        return text
    if text == "NULL":
        return None
    if len(text) >= 2 and text[0] == text[-1] == "'":
        return text[1:-1]  # the quotes only, as Debezium (a doubled quote stays doubled)
    if re.fullmatch(r"(?i)b'[01]*'", text):
        return text[2:-1]
    if now:
        return _EPOCH_TEXT
    if re.fullmatch(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?", text):
        return text
    return None  # an expression: Debezium keeps no default for it


def _int(v: Any) -> int | None:
    return None if v is None else int(v)


def _s(x: Any) -> str:
    return x.decode("utf-8") if isinstance(x, (bytes, bytearray)) else str(x)


def _unquote_labels(inner: str) -> list[str]:
    """'a','b''c' -> [a, b'c]"""
    out, cur, i, quoted = [], [], 0, False
    while i < len(inner):
        ch = inner[i]
        if quoted:
            if ch == "'" and i + 1 < len(inner) and inner[i + 1] == "'":
                cur.append("'")
                i += 1
            elif ch == "'":
                quoted = False
            else:
                cur.append(ch)
        elif ch == "'":
            quoted = True
        elif ch == ",":
            out.append("".join(cur))
            cur = []
        i += 1
    out.append("".join(cur))
    return out
