"""Database columns to Connect schemas, as Confluent's JDBC source maps them.

Confluent maps a column by the JDBC type its driver reports (GenericDatabaseDialect.addFieldToSchema).
The drivers' reports are reproduced here from SQLAlchemy's view of the column:

- MySQL/MariaDB (Connector/J): TINYINT(1) and BIT(1) are BIT (boolean); an UNSIGNED integer moves up one
  size (INT UNSIGNED is int64, as the book's `id` shows); FLOAT is REAL (float32); DECIMAL and NUMERIC are
  both DECIMAL, which `numeric.mapping` never changes; DATETIME and TIMESTAMP are reported nullable.
- PostgreSQL: `numeric` is NUMERIC, which `numeric.mapping` maps (`best_fit`: integers by precision,
  a positive scale to float64); `real` is float32; text-like, uuid and json types are strings.
- SQLite (xerial): declared types by name; INTEGER is a 32-bit INTEGER to the driver.

A column no rule maps is left out of the record, with a warning, as Confluent does.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from connectors.jdbc.dialects import Dialect
from ingest.records.schema import ConnectSchema, Field, _primitive, date, decimal, struct, time, timestamp

log = logging.getLogger(__name__)

NUMERIC_MAPPINGS = ("none", "precision_only", "best_fit", "best_fit_eager_double")


@dataclass(frozen=True)
class Column:
    """A column as the JDBC driver would describe it."""

    name: str
    jdbc_type: str
    """BIT, TINYINT, SMALLINT, INTEGER, BIGINT, REAL, DOUBLE, NUMERIC, DECIMAL, CHAR, BINARY, DATE, TIME,
    TIMESTAMP, or OTHER (not mapped)."""
    nullable: bool
    unsigned: bool = False
    precision: int = 0
    scale: int = 0
    autoincrement: bool = False
    sql_type: str = ""


def timestamp_schema(granularity: str, optional: bool) -> ConnectSchema:
    """A TIMESTAMP column's schema under `timestamp.granularity` (Confluent's TimestampGranularity.schemaFunction)."""
    if granularity.endswith("_long"):
        return _primitive("int64", optional)
    if granularity.endswith("_string"):
        return _primitive("string", optional)
    return timestamp(optional)


def column_schema(column: Column, numeric_mapping: str, optional: bool | None = None,
                  granularity: str = "connect_logical") -> ConnectSchema | None:
    """The Connect schema of `column` (None: not mapped). `optional` overrides the column's nullability."""
    opt = column.nullable if optional is None else optional
    t, p, s = column.jdbc_type, column.precision, column.scale
    if t == "BIT":
        return _primitive("boolean", opt)
    if t == "TINYINT":
        return _primitive("int16" if column.unsigned else "int8", opt)
    if t == "SMALLINT":
        return _primitive("int32" if column.unsigned else "int16", opt)
    if t == "INTEGER":
        return _primitive("int64" if column.unsigned else "int32", opt)
    if t == "BIGINT":
        return _primitive("int64", opt)
    if t == "REAL":
        return _primitive("float32", opt)
    if t == "DOUBLE":
        return _primitive("float64", opt)
    if t == "NUMERIC":
        mapped = _numeric(p, s, numeric_mapping, opt)
        if mapped is not None:
            return mapped
        return decimal(max(s, 0), p or None, opt)
    if t == "DECIMAL":
        return decimal(max(s, 0), p or None, opt)
    if t == "CHAR":
        return _primitive("string", opt)
    if t == "BINARY":
        return _primitive("bytes", opt)
    if t == "DATE":
        return date(opt)
    if t == "TIME":
        return time(opt)
    if t == "TIMESTAMP":
        return timestamp_schema(granularity, opt)
    return None


def _numeric(precision: int, scale: int, mapping: str, optional: bool) -> ConnectSchema | None:
    def integer() -> ConnectSchema:
        size = "int64" if precision > 9 else "int32" if precision > 4 else "int16" if precision > 2 else "int8"
        return _primitive(size, optional)

    if mapping == "precision_only":
        if scale == 0 and 0 < precision <= 18:
            return integer()
    elif mapping == "best_fit":
        if 0 < precision <= 18:
            if -84 <= scale < 1:
                return integer()
            if scale > 0:
                return _primitive("float64", optional)
    elif mapping == "best_fit_eager_double":
        if -84 <= scale < 1:
            if 0 < precision <= 18:
                return integer()
        elif scale > 0:
            return _primitive("float64", optional)
    return None


def value_schema(name: str | None, columns: list[Column], numeric_mapping: str,
                 required: frozenset[str] = frozenset(),
                 granularity: str = "connect_logical") -> tuple[ConnectSchema, list[Column]]:
    """The record value's struct schema (named after the table; unnamed for a query) and the columns it
    holds. Columns in `required` are not optional (the tracked columns of the incremental modes)."""
    fields: list[Field] = []
    kept: list[Column] = []
    for c in columns:
        schema = column_schema(c, numeric_mapping, optional=False if c.name in required else None,
                               granularity=granularity)
        if schema is None:
            log.warning("JDBC type %s (%s) of column %r is not supported; the column is left out of records "
                        "(as Confluent's connector does)", c.jdbc_type, c.sql_type, c.name)
            continue
        fields.append(Field(c.name, len(fields), schema))
        kept.append(c)
    return struct(name, *fields), kept


def describe_columns(dialect: Dialect, columns: list[dict]) -> list[Column]:
    """Columns from SQLAlchemy's inspector (`get_columns`) as the dialect's JDBC driver reports them."""
    return [_describe(dialect, c) for c in columns]


def column_name(dialect: Dialect, reflected: str) -> str:
    """A column name as the database holds it. SQLAlchemy's MySQL dialect reads names out of SHOW CREATE
    TABLE and leaves a backtick in a name doubled; information_schema (and the driver) have it once."""
    return dialect.column_name(reflected)


def _describe(dialect: Dialect, c: dict) -> Column:
    from sqlalchemy import types as sa

    type_ = c["type"]
    name = type(type_).__name__.upper()
    text = _type_text(type_)
    nullable = bool(c.get("nullable", True))
    auto = c.get("autoincrement") is True
    unsigned = bool(getattr(type_, "unsigned", False))
    precision = getattr(type_, "precision", None) or 0
    scale = getattr(type_, "scale", None) or 0

    def col(jdbc: str, **kw) -> Column:
        args = dict(name=column_name(dialect, c["name"]), jdbc_type=jdbc, nullable=nullable, unsigned=unsigned, precision=precision,
                    scale=scale, autoincrement=auto, sql_type=text)
        args.update(kw)
        return Column(**args)

    own = dialect.own_jdbc_type(name, type_, c, text)
    if own is not None:
        return col(own[0], **own[1])
    if isinstance(type_, sa.Boolean):
        return col("BIT")
    if isinstance(type_, sa.Float):  # not a Numeric in SQLAlchemy 2
        return col("REAL" if name == "REAL" else "DOUBLE")
    if isinstance(type_, sa.BigInteger):
        return col("BIGINT")
    if isinstance(type_, sa.SmallInteger):
        return col("SMALLINT")
    if isinstance(type_, sa.Integer):
        return col("INTEGER")
    if isinstance(type_, sa.Numeric):
        return col("NUMERIC")
    if isinstance(type_, (sa.String, sa.Enum)):
        return col("CHAR")
    if isinstance(type_, (sa.LargeBinary, sa._Binary)):
        return col("BINARY")
    if isinstance(type_, sa.DateTime):
        return col("TIMESTAMP")
    if isinstance(type_, sa.Date):
        return col("DATE")
    if isinstance(type_, sa.Time):
        return col("TIME")
    return col("OTHER")


def _type_text(type_) -> str:
    try:
        return str(type_)
    except Exception:  # noqa: BLE001 - some types cannot render without a dialect
        return type(type_).__name__
