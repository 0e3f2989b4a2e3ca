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
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, unquote, urlsplit

from ingest.config.configdef import redact_url
from ingest.errors import ConfigError, Problem


@dataclass(frozen=True)
class Dialect:
    name: str
    """Confluent's dialect name (`dialect.name`)."""
    schemes: tuple[str, ...]
    quote: str
    spark_driver: str
    sqlalchemy_driver: str


MYSQL = Dialect("MySqlDatabaseDialect", ("mysql", "mariadb"), "`", "org.mariadb.jdbc.Driver", "mysql+pymysql")
POSTGRES = Dialect("PostgreSqlDatabaseDialect", ("postgresql",), '"', "org.postgresql.Driver", "postgresql+psycopg")
SQLITE = Dialect("SqliteDatabaseDialect", ("sqlite",), '"', "org.sqlite.JDBC", "sqlite")
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

        if self.dialect is SQLITE:
            return URL.create("sqlite", database=self.database)
        user, password = self.credentials(user, password)
        query = {}
        if self.dialect is MYSQL:
            query["charset"] = "utf8mb4"
        return URL.create(self.dialect.sqlalchemy_driver, username=user or None, password=password or None,
                          host=self.host, port=self.port, database=self.database or None, query=query)

    def spark_url(self) -> str:
        """The URL Spark's JDBC reader gets (credentials travel as reader options, never in the URL)."""
        if self.dialect is SQLITE:
            return f"jdbc:sqlite:{self.database}"
        keep = {k: v for k, v in self.params.items() if k.lower() not in ("user", "password")}
        # jdbc:mysql: for both: Spark picks its MySQL dialect (backquoted names) by that prefix, and
        # Debian's MariaDB Connector/J 2.x accepts it.
        scheme = "mysql" if self.dialect is MYSQL else self.scheme
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
    if dialect is SQLITE:
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
