"""Connecting to the database, and finding the tables a JDBC source copies.

Tables are found as Confluent's connector finds them (`DatabaseDialect.tableIds`): every table (and,
with `table.types`, view) under `catalog.pattern` / `schema.pattern`, then narrowed by the include or
exclude list, whose entries name a table by its name or its qualified name. Connections are retried
`connection.attempts` times, `connection.backoff.ms` apart; a database that stays unreachable is a
RetriableError whose message never holds the password.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from connectors.jdbc.dialects import Dialect, JdbcUrl, qualified, redact
from ingest.errors import ConfigError, LakeConnectError, Problem, RetriableError

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

log = logging.getLogger(__name__)


@dataclass(frozen=True, order=True)
class TableId:
    """A table as Confluent's TableId: catalog (MySQL's database), schema (PostgreSQL's), name."""

    catalog: str | None
    schema: str | None
    name: str

    def unquoted(self) -> str:
        """Confluent's fully qualified name without quotes: the `table` of its source partitions."""
        return ".".join(p for p in (self.catalog, self.schema, self.name) if p)

    def sql(self, dialect: Dialect, quote_mode: str = "ALWAYS") -> str:
        return qualified([self.catalog, self.schema, self.name], dialect, quote_mode)

    def to_json(self) -> list[str | None]:
        return [self.catalog, self.schema, self.name]

    @classmethod
    def from_json(cls, value: list[str | None]) -> TableId:
        return cls(value[0], value[1], value[2])


_POOLS: OrderedDict[str, Engine] = OrderedDict()
"""The process's connection pools (SQLAlchemy engines) by database and login, newest last. Kafka Connect's
JDBC source keeps its connection between polls; so does a process here that runs batch after batch (a
notebook, the REST server, a benchmark). Each new MySQL/MariaDB connection builds a TLS context (18 ms,
two per batch before)."""
_POOLS_KEPT = 8
_pools_lock = threading.Lock()


def connect(url: JdbcUrl, user: str | None, password: str | None, attempts: int = 3, backoff_ms: int = 10000,
            sleep=time.sleep) -> Engine:
    """An SQLAlchemy engine whose connection succeeded, after up to `attempts` tries: the process's pool for
    that database and login (see `_POOLS`), or a new one. Give it back with `release`."""
    import sqlalchemy as sa

    if url.dialect.local_file:
        import os

        if not os.path.exists(url.database or ""):
            raise ConfigError([Problem("connection.url", f"the SQLite database file {url.database} does not "
                                                         "exist; check the path")])
        engine, key = sa.create_engine(url.sqlalchemy_url()), None
    else:
        address = url.sqlalchemy_url(user, password)
        key = hashlib.sha256(address.render_as_string(hide_password=False).encode()).hexdigest()
        with _pools_lock:
            engine = _POOLS.get(key)
        if engine is None:
            engine = sa.create_engine(address, pool_pre_ping=True, pool_size=2, max_overflow=2)
    last = None
    for attempt in range(1, attempts + 1):
        try:
            with engine.connect() as conn:
                conn.exec_driver_sql("SELECT 1")
            if key is not None:
                _keep(key, engine)
            return engine
        except sa.exc.DBAPIError as e:
            last = _reason(e, password or url.params.get("password"))
            if _is_auth_failure(e):
                _forget(key, engine)
                raise ConfigError([Problem("connection.user", f"the database at {redact(url.url)} refused the "
                                                              f"login: {last}; check connection.user and "
                                                              "connection.password")]) from None
            log.warning("connection attempt %d of %d to %s failed: %s", attempt, attempts, redact(url.url), last)
            if attempt < attempts:
                sleep(backoff_ms / 1000)
    _forget(key, engine)
    raise RetriableError(f"cannot connect to {redact(url.url)} after {attempts} attempt(s) "
                         f"(connection.attempts): {last}")


def release(engine: Engine) -> None:
    """Done with an engine from `connect`: a kept pool stays open for the next batch, any other is closed."""
    with _pools_lock:
        kept = any(e is engine for e in _POOLS.values())
    if not kept:
        engine.dispose()


def _keep(key: str, engine: Engine) -> None:
    with _pools_lock:
        _POOLS[key] = engine
        _POOLS.move_to_end(key)
        evicted = [_POOLS.popitem(last=False)[1] for _ in range(len(_POOLS) - _POOLS_KEPT)]
    for old in evicted:
        old.dispose()


def _forget(key: str | None, engine: Engine) -> None:
    with _pools_lock:
        if key is not None and _POOLS.get(key) is engine:
            del _POOLS[key]
    engine.dispose()


def _reason(e: Exception, password: str | None) -> str:
    text = str(getattr(e, "orig", None) or e).splitlines()[0]
    if password:
        text = text.replace(password, "[hidden]")
    return text


def _is_auth_failure(e: Exception) -> bool:
    text = str(getattr(e, "orig", None) or e).lower()
    if "role \"" in text and "does not exist" in text:  # PostgreSQL: no such user
        return True
    return any(s in text for s in ("access denied", "password authentication failed", "authentication failed"))


def find_tables(engine: Engine, dialect: Dialect, *, catalog_pattern: str | None, schema_pattern: str | None,
                table_types: list[str], include: list[str], exclude: list[str]) -> list[TableId]:
    """The tables to copy, in a stable order."""
    import sqlalchemy as sa

    inspector = sa.inspect(engine)
    types = {t.upper() for t in table_types}
    found: list[TableId] = []
    for catalog, schema in _namespaces(engine, inspector, dialect, catalog_pattern, schema_pattern):
        owner = dialect.owner(catalog, schema)
        names = []
        if "TABLE" in types:
            names += inspector.get_table_names(schema=owner)
        if "VIEW" in types:
            names += inspector.get_view_names(schema=owner)
        found += [TableId(catalog, schema, n) for n in names if dialect.lists_table(n)]
    found = sorted(set(found))
    if include:
        found = [t for t in found if _listed(t, include)]
    elif exclude:
        found = [t for t in found if not _listed(t, exclude)]
    return found


_TABLE_LISTS: OrderedDict[str, tuple[float, list[TableId]]] = OrderedDict()
"""The tables each connector config found last in this process, and when (time.monotonic()): Confluent's
connector looks for new or removed tables every `table.poll.interval.ms`, in a thread beside its tasks; a process
that runs batch after batch (a worker, a notebook) looks again only once that long has passed."""
_TABLE_LISTS_KEPT = 64


def find_tables_every(interval_ms: int, key: str, find: Callable[[], list[TableId]],
                      clock: Callable[[], float] = time.monotonic) -> list[TableId]:
    """`find()`'s tables, or those it gave under `key` less than `interval_ms` ago in this process."""
    now = clock()
    with _pools_lock:
        found = _TABLE_LISTS.get(key)
    if found is not None and (now - found[0]) * 1000 < interval_ms:
        return list(found[1])
    tables = find()
    with _pools_lock:
        _TABLE_LISTS[key] = (now, list(tables))
        _TABLE_LISTS.move_to_end(key)
        while len(_TABLE_LISTS) > _TABLE_LISTS_KEPT:
            _TABLE_LISTS.popitem(last=False)
    return tables


def forget_table_lists() -> None:
    """A table listed is gone: every connector of this process looks its tables up again at its next run."""
    with _pools_lock:
        _TABLE_LISTS.clear()


def _namespaces(engine, inspector, dialect: Dialect, catalog_pattern: str | None,
                schema_pattern: str | None) -> list[tuple[str | None, str | None]]:
    if dialect.namespace is None:
        return [(None, None)]
    if dialect.namespace == "catalog":
        if catalog_pattern:
            names = [s for s in inspector.get_schema_names() if _like(s, catalog_pattern)]
        else:
            with engine.connect() as conn:
                current = conn.exec_driver_sql("SELECT DATABASE()").scalar()
            if current is None:
                raise ConfigError([Problem("connection.url", "names no database; add it to the URL "
                                                             "(jdbc:mysql://host:port/<database>) or set "
                                                             "catalog.pattern")])
            names = [current]
        return [(n, None) for n in names if n not in dialect.system_schemas or catalog_pattern]
    schemas = [s for s in inspector.get_schema_names()
               if (_like(s, schema_pattern) if schema_pattern else s not in dialect.system_schemas)]
    return [(None, s) for s in schemas]


def _like(value: str, pattern: str) -> bool:
    """SQL LIKE, as JDBC's metadata patterns: % any run, _ one character."""
    glob = pattern.replace("[", "[[]").replace("*", "[*]").replace("?", "[?]").replace("%", "*").replace("_", "?")
    return fnmatch.fnmatchcase(value, glob)


def _listed(table: TableId, entries: list[str]) -> bool:
    names = {table.name, table.unquoted()}
    if table.schema:
        names.add(f"{table.schema}.{table.name}")
    if table.catalog:
        names.add(f"{table.catalog}.{table.name}")
    return any(e.strip().strip('`"') in names for e in entries)


def group_tables(tables: list[Any], max_tasks: int) -> list[list[Any]]:
    """Kafka's ConnectorUtils.groupPartitions: contiguous groups, the first ones one larger."""
    groups = min(len(tables), max_tasks)
    if groups == 0:
        return []
    per, extra = divmod(len(tables), groups)
    out, start = [], 0
    for i in range(groups):
        size = per + (1 if i < extra else 0)
        out.append(tables[start:start + size])
        start += size
    return out


TASK_TABLES = "tables"
"""The task config key holding a task's tables (JSON list of [catalog, schema, name])."""


def task_tables(config) -> list[TableId]:
    raw = config.originals.get(TASK_TABLES, "[]")
    try:
        return [TableId.from_json(t) for t in json.loads(raw)]
    except (ValueError, TypeError, IndexError) as e:
        raise LakeConnectError(f"task config '{TASK_TABLES}' is not a JSON list of tables: {e}") from None
