"""JDBC URLs and the databases behind them: MySQL/MariaDB, PostgreSQL and SQLite.

A connector config names its database the way Confluent's JDBC connector does, with a JDBC URL. The
same URL gives three things here: the SQLAlchemy URL used for discovery and watermark queries, the
URL and driver class of Spark's JDBC reader (Debian's driver jars), and the dialect's SQL details
(identifier quoting, Confluent's dialect name). Credentials come from `connection.user` /
`connection.password` or from the URL's own `user`/`password` parameters, as JDBC drivers take them;
`redact` hides a URL's password wherever a URL is shown.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar
from urllib.parse import parse_qsl, unquote, urlsplit

from ingest.config.configdef import redact_url
from ingest.errors import ConfigError, Problem


FETCH_SIZE = 10_000
_SQLITE_TS = "strftime('%Y-%m-%d %H:%M:%f', {})"


@dataclass(frozen=True)
class Dialect:
    """What differs between the databases a JDBC source reads. Each database is a subclass; the rest of the
    connector asks its dialect, never which database it is."""

    name: str
    """Confluent's dialect name (`dialect.name`)."""
    schemes: tuple[str, ...]
    quote: str
    spark_driver: str
    sqlalchemy_driver: str
    system_schemas: frozenset[str] = frozenset()
    """Namespaces never listed unless a pattern names them."""

    namespace: ClassVar[str | None] = "schema"
    """What holds its tables: a `catalog` (MySQL's databases), a `schema`, or nothing (one file)."""
    local_file: ClassVar[bool] = False
    """The database is a file on this machine (the URL's path), not a server."""
    temporal_as_text: ClassVar[bool] = False
    """Spark's JDBC reader cannot type its date and time columns: they are read as text and parsed."""
    ordered_reads: ClassVar[bool] = False
    """A read ordered by the key gives each Spark partition its rows in that order (no sort needed)."""
    nullable_timestamps: ClassVar[bool] = False
    """Its driver reports timestamp columns nullable whatever they are: validate.non.null does not check them."""
    epoch_kinds: ClassVar[Mapping[str, str]] = {}
    """Column types read as epoch numbers and made dates or timestamps in Spark (their zero dates survive)."""
    utc_now_sql: ClassVar[str] = "SELECT (now() AT TIME ZONE 'UTC')"
    """The database's clock, in UTC (as Confluent's connector asks the database for now)."""

    def owner(self, catalog: str | None, schema: str | None) -> str | None:
        """The name SQLAlchemy's inspector takes as a table's `schema`."""
        return catalog if self.namespace == "catalog" else schema

    def lists_table(self, name: str) -> bool:
        """Whether a table discovery finds is the user's (not the database's own)."""
        return True

    def column_name(self, reflected: str) -> str:
        """A column name as the database holds it, from the name SQLAlchemy reflected."""
        return reflected

    def own_jdbc_type(self, name: str, type_: Any, column: Mapping[str, Any], text: str) -> tuple[str, dict] | None:
        """The JDBC type its driver reports for a column of SQLAlchemy type `type_` (class name `name`, SQL `text`),
        with the column facts it changes; None where the generic mapping holds (connectors/jdbc/schemas.py)."""
        return None

    def compared_timestamp(self, sql: str) -> str:
        """A timestamp expression (a column or a bound parameter) as it is compared in a WHERE clause."""
        return sql

    def timestamp_literal(self, text: str) -> str:
        """A timestamp 'YYYY-MM-DD HH:MM:SS.ffffff' as a SQL literal."""
        return f"TIMESTAMP'{text}'"

    def reader_options(self) -> dict[str, str]:
        """Spark's JDBC reader options: rows streamed in fetches (the drivers otherwise hold a whole result)."""
        return {"fetchsize": str(FETCH_SIZE)}

    def sqlalchemy_query(self) -> dict[str, str]:
        return {}

    def isolation_levels(self) -> frozenset[str]:
        """The isolation levels its JDBC driver supports (`DatabaseMetaData.supportsTransactionIsolationLevel`)."""
        return frozenset({"READ UNCOMMITTED", "READ COMMITTED", "REPEATABLE READ", "SERIALIZABLE"})

    def isolation_options(self, level: str, engine) -> dict[str, str]:
        """Spark's JDBC reader options (over `reader_options`) that give each of its connections the isolation
        `level` (READ COMMITTED, ...): a connection property, or a statement run before the read. `engine`: the
        plan's connection pool (its server's version)."""
        return {}

    def spark_scheme(self, scheme: str) -> str:
        return scheme


@dataclass(frozen=True)
class MySqlDialect(Dialect):
    namespace: ClassVar[str | None] = "catalog"
    ordered_reads: ClassVar[bool] = True
    nullable_timestamps: ClassVar[bool] = True
    epoch_kinds: ClassVar[Mapping[str, str]] = {"DATE": "date", "DATETIME": "timestamp", "TIMESTAMP": "timestamp"}
    utc_now_sql: ClassVar[str] = "SELECT UTC_TIMESTAMP(6)"

    def column_name(self, reflected: str) -> str:
        # SQLAlchemy reads names out of SHOW CREATE TABLE and leaves a backtick in a name doubled;
        # information_schema (and the driver) have it once.
        return reflected.replace("``", "`")

    def own_jdbc_type(self, name: str, type_: Any, column: Mapping[str, Any], text: str) -> tuple[str, dict] | None:
        display = getattr(type_, "display_width", None)
        if name == "BIT":
            return ("BIT" if (getattr(type_, "length", None) or 1) == 1 else "BINARY"), {}
        if name == "TINYINT" and display == 1:
            return "BIT", {}
        if name in ("TINYINT", "SMALLINT", "BIGINT"):
            return name, {}
        if name in ("INTEGER", "MEDIUMINT", "INT"):
            return "INTEGER", {}
        if name == "FLOAT":
            return "REAL", {}
        if name in ("DOUBLE", "REAL"):
            return "DOUBLE", {}
        if name in ("DECIMAL", "NUMERIC"):
            return "DECIMAL", {}
        if name in ("DATETIME", "TIMESTAMP"):
            return "TIMESTAMP", {"nullable": True}  # Connector/J reports both nullable
        if name == "YEAR":
            return "DATE", {}
        return None

    def reader_options(self) -> dict[str, str]:
        return {**super().reader_options(), "sessionInitStatement": "SET time_zone = '+00:00'"}

    def isolation_options(self, level: str, engine) -> dict[str, str]:
        # One statement (the driver runs no more without allowMultiQueries). The variable's name: MySQL
        # 5.7.20+ and MariaDB 11.1+ have transaction_isolation, older MariaDB only tx_isolation (gone in MySQL 8).
        version = engine.dialect.server_version_info or ()
        modern = version >= (11, 1) if engine.dialect.is_mariadb else version >= (5, 7, 20)
        variable = "transaction_isolation" if modern else "tx_isolation"
        return {"sessionInitStatement": f"SET time_zone = '+00:00', SESSION {variable} = '{level.replace(' ', '-')}'"}

    def sqlalchemy_query(self) -> dict[str, str]:
        return {"charset": "utf8mb4"}

    def spark_scheme(self, scheme: str) -> str:
        # jdbc:mysql: for both: Spark picks its MySQL dialect (backquoted names) by that prefix, and
        # Debian's MariaDB Connector/J 2.x accepts it.
        return "mysql"


@dataclass(frozen=True)
class PostgresDialect(Dialect):
    def own_jdbc_type(self, name: str, type_: Any, column: Mapping[str, Any], text: str) -> tuple[str, dict] | None:
        if name in ("NUMERIC", "DECIMAL"):
            return "NUMERIC", {}
        if name == "REAL":
            return "REAL", {}
        if name in ("DOUBLE_PRECISION", "FLOAT", "DOUBLE"):
            return "DOUBLE", {}
        if name in ("UUID", "JSON", "JSONB", "INET", "CIDR", "ENUM", "CITEXT"):
            return "CHAR", {}
        return None

    def timestamp_literal(self, text: str) -> str:
        return f"TIMESTAMP '{text}'"

    def isolation_options(self, level: str, engine) -> dict[str, str]:
        # The session's default, set when the connection starts (pgjdbc's `options` property): a statement run
        # before the read would come too late, inside the transaction Spark's reader has begun (autocommit off).
        return {"options": "-c default_transaction_isolation=" + level.lower().replace(" ", "\\ ")}


@dataclass(frozen=True)
class SqliteDialect(Dialect):
    namespace: ClassVar[str | None] = None
    local_file: ClassVar[bool] = True
    temporal_as_text: ClassVar[bool] = True
    ordered_reads: ClassVar[bool] = True
    utc_now_sql: ClassVar[str] = "SELECT strftime('%Y-%m-%d %H:%M:%f', 'now')"

    def lists_table(self, name: str) -> bool:
        return not name.startswith("sqlite_")

    def own_jdbc_type(self, name: str, type_: Any, column: Mapping[str, Any], text: str) -> tuple[str, dict] | None:
        if column.get("primary_key") and text.upper() == "INTEGER":
            # INTEGER PRIMARY KEY is the rowid: never null, assigned by SQLite when not given.
            return "INTEGER", {"nullable": False, "autoincrement": True}
        return None

    def isolation_levels(self) -> frozenset[str]:
        return frozenset({"SERIALIZABLE"})  # xerial's driver: SQLite's own (and only) level

    def compared_timestamp(self, sql: str) -> str:
        return _SQLITE_TS.format(sql)  # SQLite compares timestamps as text: both sides normalised

    def timestamp_literal(self, text: str) -> str:
        return f"'{text[:-3]}'"  # SQLite compares text: 'YYYY-MM-DD HH:MM:SS.SSS'

    def reader_options(self) -> dict[str, str]:
        return {}  # one file, read whole: no fetches


MYSQL = MySqlDialect("MySqlDatabaseDialect", ("mysql", "mariadb"), "`", "org.mariadb.jdbc.Driver", "mysql+pymysql",
                     frozenset({"information_schema", "mysql", "performance_schema", "sys"}))
POSTGRES = PostgresDialect("PostgreSqlDatabaseDialect", ("postgresql",), '"', "org.postgresql.Driver",
                           "postgresql+psycopg", frozenset({"pg_catalog", "information_schema", "pg_toast"}))
SQLITE = SqliteDialect("SqliteDatabaseDialect", ("sqlite",), '"', "org.sqlite.JDBC", "sqlite")
DIALECTS = (MYSQL, POSTGRES, SQLITE)
SUPPORTED_URLS = "jdbc:mysql://, jdbc:mariadb://, jdbc:postgresql://, jdbc:sqlite:"


@dataclass(frozen=True)
class JdbcUrl:
    """A parsed JDBC URL. `database` is the file path for SQLite."""

    url: str
    dialect: Dialect
    scheme: str
    host: str | None = None
    port: int | None = None
    database: str | None = None
    params: dict[str, str] = field(default_factory=dict)

    def __repr__(self) -> str:
        return f"JdbcUrl({redact(self.url)!r})"

    def credentials(self, user: str | None, password: str | None) -> tuple[str | None, str | None]:
        """connection.user/password, else the URL's `user`/`password` parameters (the driver's rule)."""
        return (user if user else self.params.get("user"), password if password else self.params.get("password"))

    def sqlalchemy_url(self, user: str | None = None, password: str | None = None):
        from sqlalchemy.engine import URL

        if self.dialect.local_file:
            return URL.create(self.dialect.sqlalchemy_driver, database=self.database)
        user, password = self.credentials(user, password)
        return URL.create(self.dialect.sqlalchemy_driver, username=user or None, password=password or None,
                          host=self.host, port=self.port, database=self.database or None,
                          query=self.dialect.sqlalchemy_query())

    def spark_url(self) -> str:
        """The URL Spark's JDBC reader gets (credentials travel as reader options, never in the URL)."""
        if self.dialect.local_file:
            return f"jdbc:{self.scheme}:{self.database}"
        keep = {k: v for k, v in self.params.items() if k.lower() not in ("user", "password")}
        scheme = self.dialect.spark_scheme(self.scheme)
        host = self.host or "localhost"
        port = f":{self.port}" if self.port else ""
        query = "?" + "&".join(f"{k}={v}" for k, v in keep.items()) if keep else ""
        return f"jdbc:{scheme}://{host}{port}/{self.database or ''}{query}"


_SCHEME = re.compile(r"^jdbc:([a-z0-9]+):(.*)$", re.IGNORECASE | re.DOTALL)


def parse_jdbc_url(url: str, key: str = "connection.url") -> JdbcUrl:
    """Parse `url`; a ConfigError naming `key` when it is not a URL of a supported database."""
    m = _SCHEME.match((url or "").strip())
    if not m:
        raise _bad(key, f"'{redact(url)}' is not a JDBC URL; expected one of {SUPPORTED_URLS}")
    scheme, rest = m.group(1).lower(), m.group(2)
    dialect = next((d for d in DIALECTS if scheme in d.schemes), None)
    if dialect is None:
        raise _bad(key, f"no dialect for 'jdbc:{scheme}:' URLs; lakeconnect reads {SUPPORTED_URLS}")
    if dialect.local_file:
        path, _, query = rest.partition("?")
        if not path or path == ":memory:":
            raise _bad(key, "a SQLite URL needs a database file, e.g. jdbc:sqlite:/data/inventory.db "
                              "(an in-memory database is not shared with Spark's readers)")
        return JdbcUrl(url, dialect, scheme, database=path, params=dict(parse_qsl(query)))
    if not rest.startswith("//"):
        raise _bad(key, f"'{redact(url)}' has no host; expected jdbc:{scheme}://host[:port]/database")
    parts = urlsplit("x:" + rest)
    host = parts.hostname
    try:
        port = parts.port
    except ValueError:
        raise _bad(key, f"'{redact(url)}' has an invalid port") from None
    params = {k: v for k, v in parse_qsl(parts.query, keep_blank_values=True)}
    if parts.username:  # jdbc:postgresql://user:secret@host/db is not JDBC, but some write it
        params.setdefault("user", unquote(parts.username))
        if parts.password:
            params.setdefault("password", unquote(parts.password))
    database = unquote(parts.path.lstrip("/")) or None
    return JdbcUrl(url, dialect, scheme, host=host, port=port, database=database, params=params)


def redact(url: str | None) -> str:
    """`url` with any password in it replaced by `[hidden]`."""
    return redact_url(url)


def quote_identifier(name: str, dialect: Dialect, mode: str = "ALWAYS") -> str:
    """An identifier as SQL text: quoted (the quote character doubled inside) unless `mode` is NEVER.

    With NEVER a name that is not a plain identifier is refused, so it can never carry SQL."""
    if mode.upper() == "NEVER":
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_$]*", name):
            raise _bad("quote.sql.identifiers", f"NEVER cannot be used with the identifier {name!r}: it is not "
                                                "a plain SQL name; use ALWAYS")
        return name
    q = dialect.quote
    return q + name.replace(q, q + q) + q


def qualified(parts: list[str | None], dialect: Dialect, mode: str = "ALWAYS") -> str:
    return ".".join(quote_identifier(p, dialect, mode) for p in parts if p)


def _bad(key: str, message: str) -> ConfigError:
    return ConfigError([Problem(key, message)])
