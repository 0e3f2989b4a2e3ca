"""Confluent's JDBC source connector (`io.confluent.connect.jdbc.JdbcSourceConnector`): the connector side.

The connector validates the configuration, finds the tables (or takes the one query) and spreads them
over `tasks.max` tasks as Confluent does: contiguous groups of the sorted table list, one task for a
query. Each task config carries its tables as JSON under `tables`, as Confluent's task config does.
"""

from __future__ import annotations

import json

from connectors.jdbc import config as C
from connectors.jdbc.dialects import SQLITE, parse_jdbc_url
from connectors.jdbc.discovery import TableId, connect, find_tables, group_tables, release
from ingest.api import SourceConnector
from ingest.config.configdef import ConfigDef
from ingest.errors import ConfigError, LakeConnectError, Problem

TASK_TABLES = "tables"
"""The task config key holding a task's tables (JSON list of [catalog, schema, name])."""


class JdbcSourceConnector(SourceConnector):
    """Copies tables (or a query's rows) from a relational database into topics."""

    aliases = ("io.confluent.connect.jdbc.JdbcSourceConnector", "JdbcSource")

    def __init__(self, config):
        super().__init__(config)
        _hide_url_password(config)

    @classmethod
    def config_def(cls) -> ConfigDef:
        return C.jdbc_source_config_def()

    def validate(self) -> list[str]:
        messages = [str(p) for p in C.check(dict(self.config))]
        try:
            url = parse_jdbc_url(self.config[C.CONNECTION_URL])
        except ConfigError as e:
            return messages + [str(p) for p in e.problems]
        dialect_name = self.config[C.DIALECT_NAME]
        if dialect_name and dialect_name != url.dialect.name:
            messages.append(f"{C.DIALECT_NAME}: {dialect_name} does not read {url.scheme} URLs "
                            f"(the URL's dialect is {url.dialect.name})")
        return messages

    def paths(self) -> list[tuple[str, str]]:
        try:
            url = parse_jdbc_url(self.config[C.CONNECTION_URL])
        except ConfigError:
            return []
        return [(C.CONNECTION_URL, url.database)] if url.dialect is SQLITE and url.database else []

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        if (self.config[C.QUERY] or "").strip():
            return [{TASK_TABLES: "[]"}]
        tables = self.tables()
        if not tables:
            where = (f"matching {C.TABLE_WHITELIST}={','.join(C.tables_included(self.config))}"
                     if C.tables_included(self.config) else "in the database")
            raise ConfigError([Problem(C.TABLE_WHITELIST if C.tables_included(self.config) else C.CONNECTION_URL,
                                       f"no table {where} (table.types={','.join(self.config[C.TABLE_TYPES])}); "
                                       "check the names and the connection's database")])
        return [{TASK_TABLES: json.dumps([t.to_json() for t in group])} for group in group_tables(tables, max_tasks)]

    def tables(self) -> list[TableId]:
        url = parse_jdbc_url(self.config[C.CONNECTION_URL])
        engine = connect(url, self.config[C.CONNECTION_USER], self.config.secret(C.CONNECTION_PASSWORD),
                         self.config[C.CONNECTION_ATTEMPTS], self.config[C.CONNECTION_BACKOFF_MS])
        try:
            return find_tables(engine, url.dialect, catalog_pattern=self.config[C.CATALOG_PATTERN],
                               schema_pattern=self.config[C.SCHEMA_PATTERN], table_types=self.config[C.TABLE_TYPES],
                               include=C.tables_included(self.config), exclude=C.tables_excluded(self.config))
        finally:
            release(engine)


def task_tables(config) -> list[TableId]:
    raw = config.originals.get(TASK_TABLES, "[]")
    try:
        return [TableId.from_json(t) for t in json.loads(raw)]
    except (ValueError, TypeError, IndexError) as e:
        raise LakeConnectError(f"task config '{TASK_TABLES}' is not a JSON list of tables: {e}") from None


def _hide_url_password(config) -> None:
    """A password written into the URL (`?password=...`) is hidden wherever text is scrubbed: config
    reprs, logs, errors, status traces."""
    from ingest.runtime import secrets

    try:
        url = parse_jdbc_url(config[C.CONNECTION_URL])
    except ConfigError:
        return
    secrets.register([url.params.get("password")])


from connectors.jdbc.task import JdbcSourceTask  # noqa: E402  (the task module uses task_tables above)

JdbcSourceConnector.task_class = JdbcSourceTask
