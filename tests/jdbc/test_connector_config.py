"""The JDBC source connector's configuration and task split, with the book's configs (SQLite here)."""

from __future__ import annotations

import json
import sqlite3

import pytest

from connectors.jdbc.discovery import task_tables
from connectors.jdbc.source import JdbcSourceConnector
from ingest.config.configdef import Config
from ingest.errors import ConfigError

BOOK_BULK = {
    "connector.class": "io.confluent.connect.jdbc.JdbcSourceConnector",
    "tasks.max": "1",
    "value.converter": "org.apache.kafka.connect.json.JsonConverter",
    "value.converter.schemas.enable": "true",
    "connection.user": "<USER>",
    "connection.password": "<PASSWORD>",
    "topic.prefix": "mysql-bulk-",
    "mode": "bulk",
    "table.whitelist": "kafka_books",
}


def connector(raw):
    definition = JdbcSourceConnector.config_def()
    values, problems = definition.validate(raw, strict=False)
    if problems:
        raise ConfigError(problems)
    return JdbcSourceConnector(Config(definition, values, dict(raw)))


@pytest.fixture
def url(tmp_path):
    path = tmp_path / "inventory.db"
    con = sqlite3.connect(path)
    con.executescript("CREATE TABLE kafka_books (id INTEGER PRIMARY KEY, title TEXT);"
                      "CREATE TABLE a (id INTEGER PRIMARY KEY); CREATE TABLE b (id INTEGER PRIMARY KEY);")
    con.close()
    return f"jdbc:sqlite:{path}"


def test_book_bulk_config_is_accepted_and_gives_one_task(url):
    c = connector({**BOOK_BULK, "connection.url": url})
    assert c.validate() == []
    configs = c.task_configs(1)
    assert len(configs) == 1 and [t.name for t in task_tables(Config(c.config.definition, {}, configs[0]))] == [
        "kafka_books"]


def test_tables_spread_over_tasks(url):
    c = connector({**BOOK_BULK, "connection.url": url, "table.whitelist": ""})
    groups = [[t[2] for t in json.loads(tc["tables"])] for tc in c.task_configs(2)]
    assert groups == [["a", "b"], ["kafka_books"]]
    assert len(c.task_configs(10)) == 3


def test_query_mode_is_one_task(url):
    c = connector({**BOOK_BULK, "connection.url": url, "table.whitelist": "", "query": "SELECT * FROM a"})
    assert c.validate() == [] and c.task_configs(4) == [{"tables": "[]"}]


@pytest.mark.parametrize("changes,key,text", [
    ({"mode": ""}, "mode", "is required"),
    ({"table.blacklist": "a"}, "table.whitelist", "cannot be set together"),
    ({"mode": "timestamp+incrementing", "incrementing.column.name": "id"}, "timestamp.column.name", "required"),
    ({"dialect.name": "PostgreSqlDatabaseDialect"}, "dialect.name", "does not read sqlite URLs"),
    ({"query": "SELECT 1"}, "query", "cannot be combined"),
])
def test_bad_combinations_name_their_key(url, changes, key, text):
    problems = connector({**BOOK_BULK, "connection.url": url, **changes}).validate()
    assert any(p.startswith(f"{key}: ") and text in p for p in problems), problems


def test_an_incremental_query_may_have_its_own_where(url):
    """Confluent's connector appends its WHERE to the query's text; here the query is read as a subquery."""
    changes = {"mode": "timestamp", "table.whitelist": "", "query": "SELECT * FROM a WHERE id > 3",
               "timestamp.column.name": "ts"}
    assert connector({**BOOK_BULK, "connection.url": url, **changes}).validate() == []


def test_single_key_errors():
    with pytest.raises(ConfigError) as e:
        connector({**BOOK_BULK, "connection.url": "jdbc:sqlite:/x.db", "mode": "sometimes",
                   "numeric.mapping": "exact"})
    text = str(e.value)
    assert "mode" in text and "sometimes" in text and "numeric.mapping" in text


def test_no_matching_table_names_the_list(url):
    c = connector({**BOOK_BULK, "connection.url": url, "table.whitelist": "kafka_bookz"})
    with pytest.raises(ConfigError, match="table.whitelist: no table matching table.whitelist=kafka_bookz"):
        c.task_configs(1)


def test_password_never_in_repr_or_errors(url):
    c = connector({**BOOK_BULK, "connection.url": url + "?password=hunter2", "connection.password": "hunter3"})
    assert "hunter3" not in repr(c.config) and "hunter2" not in repr(c.config)
    assert "hunter2" not in " ".join(c.validate())
