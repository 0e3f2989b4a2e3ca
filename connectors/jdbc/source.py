"""Confluent's JDBC source connector (`io.confluent.connect.jdbc.JdbcSourceConnector`): the connector side.

The connector validates the configuration, finds the tables (or takes the one query) and spreads them
over `tasks.max` tasks as Confluent does: contiguous groups of the sorted table list, one task for a
query. Each task config carries its tables as JSON under `tables`, as Confluent's task config does.
"""

from __future__ import annotations

import functools
import hashlib
import json

from connectors.jdbc import config as C
from connectors.jdbc.dialects import parse_jdbc_url
from connectors.jdbc.discovery import (TASK_TABLES, TableId, connect, find_tables, find_tables_every, group_tables,
                                      release)
from connectors.jdbc.task import JdbcSourceTask
from ingest.api import SourceConnector
from ingest.config.configdef import ConfigDef
from ingest.errors import ConfigError, Problem


class JdbcSourceConnector(SourceConnector):
    """Copies tables (or a query's rows) from a relational database into topics."""

    aliases = ("io.confluent.connect.jdbc.JdbcSourceConnector", "JdbcSource")
    settings_class = C.JdbcSourceSettings

    def __init__(self, config):
        super().__init__(config)
        _hide_url_password(self.settings.url)

    @functools.cached_property
    def settings(self) -> C.JdbcSourceSettings:
        return C.JdbcSourceSettings.from_config(self.config)

    @classmethod
    def config_def(cls) -> ConfigDef:
        return C.jdbc_source_config_def()

    def validate(self) -> list[str]:
        messages = [str(p) for p in C.check(dict(self.config))]
        try:
            url = parse_jdbc_url(self.settings.url)
        except ConfigError as e:
            return messages + [str(p) for p in e.problems]
        dialect_name = self.settings.dialect_name
        if dialect_name and dialect_name != url.dialect.name:
            messages.append(f"{C.DIALECT_NAME}: {dialect_name} does not read {url.scheme} URLs "
                            f"(the URL's dialect is {url.dialect.name})")
        return messages

    def paths(self) -> list[tuple[str, str]]:
        try:
            url = parse_jdbc_url(self.settings.url)
        except ConfigError:
            return []
        return [(C.CONNECTION_URL, url.database)] if url.dialect.local_file and url.database else []

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        if self.settings.query:
            return [{TASK_TABLES: "[]"}]
        tables = self.tables()
        if not tables:
            where = (f"matching {C.TABLE_WHITELIST}={','.join(C.tables_included(self.config))}"
                     if C.tables_included(self.config) else "in the database")
            raise ConfigError([Problem(C.TABLE_WHITELIST if C.tables_included(self.config) else C.CONNECTION_URL,
                                       f"no table {where} (table.types={','.join(self.settings.table_types)}); "
                                       "check the names and the connection's database")])
        return [{TASK_TABLES: json.dumps([t.to_json() for t in group])} for group in group_tables(tables, max_tasks)]

    def tables(self) -> list[TableId]:
        """The tables to copy: looked up at a process's first run, then again once `table.poll.interval.ms` has
        passed (a worker's runs in between copy the tables found before)."""
        s = self.settings
        url = parse_jdbc_url(s.url)
        include, exclude = C.tables_included(self.config), C.tables_excluded(self.config)

        def find() -> list[TableId]:
            engine = connect(url, s.user, s.plain_password, s.attempts, s.backoff_ms)
            try:
                return find_tables(engine, url.dialect, catalog_pattern=s.catalog_pattern,
                                   schema_pattern=s.schema_pattern, table_types=list(s.table_types),
                                   include=include, exclude=exclude)
            finally:
                release(engine)

        # The list depends on these only; the URL may hold a password, so the key is a digest.
        what = json.dumps([s.url, s.user, s.catalog_pattern, s.schema_pattern, list(s.table_types), include, exclude])
        return find_tables_every(s.table_poll_interval_ms, hashlib.sha256(what.encode()).hexdigest(), find)


def _hide_url_password(jdbc_url: str) -> None:
    """A password written into the URL (`?password=...`) is hidden wherever text is scrubbed: config
    reprs, logs, errors, status traces."""
    from ingest.config import secrets

    try:
        url = parse_jdbc_url(jdbc_url)
    except ConfigError:
        return
    secrets.register([url.params.get("password")])


JdbcSourceConnector.task_class = JdbcSourceTask
