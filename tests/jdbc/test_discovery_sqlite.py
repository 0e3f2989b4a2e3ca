"""Finding tables and mapping their columns, on a real SQLite file (MariaDB and PostgreSQL: see
test_discovery_services.py)."""

from __future__ import annotations

import sqlite3

import pytest

from connectors.jdbc.dialects import SQLITE, parse_jdbc_url
from connectors.jdbc.discovery import TableId, connect, find_tables, group_tables
from connectors.jdbc.schemas import describe_columns, value_schema
from ingest.errors import ConfigError

BOOKS_DDL = '''
CREATE TABLE kafka_books (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    title VARCHAR(150) NOT NULL,
    subtitle VARCHAR(150) NOT NULL,
    published DATE NOT NULL,
    timestamp DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP
);
CREATE TABLE authors (id INTEGER PRIMARY KEY, name TEXT, score REAL, rating NUMERIC(4, 1), photo BLOB,
                      active BOOLEAN, born DATE, big BIGINT, qty NUMERIC(6, 0));
CREATE TABLE "odd ""name""" (id INTEGER PRIMARY KEY);
CREATE VIEW recent_books AS SELECT * FROM kafka_books;
'''


@pytest.fixture
def db(tmp_path):
    path = tmp_path / "inventory.db"
    con = sqlite3.connect(path)
    con.executescript(BOOKS_DDL)
    con.close()
    url = parse_jdbc_url(f"jdbc:sqlite:{path}")
    engine = connect(url, None, None)
    yield url, engine
    engine.dispose()


def _find(engine, **kw):
    args = dict(catalog_pattern=None, schema_pattern=None, table_types=["TABLE"], include=[], exclude=[])
    args.update(kw)
    return find_tables(engine, SQLITE, **args)


def test_tables_views_and_lists(db):
    _, engine = db
    assert [t.name for t in _find(engine)] == ["authors", "kafka_books", 'odd "name"']
    assert [t.name for t in _find(engine, table_types=["TABLE", "VIEW"])] == [
        "authors", "kafka_books", 'odd "name"', "recent_books"]
    assert [t.name for t in _find(engine, include=["kafka_books"])] == ["kafka_books"]
    assert [t.name for t in _find(engine, exclude=["kafka_books", "authors"])] == ['odd "name"']
    assert _find(engine, include=["nope"]) == []
    assert TableId(None, None, "kafka_books").unquoted() == "kafka_books"
    assert TableId(None, None, 'odd "name"').sql(SQLITE) == '"odd ""name"""'


def test_book_table_schema(db):
    import sqlalchemy as sa

    _, engine = db
    columns = describe_columns(SQLITE, sa.inspect(engine).get_columns("kafka_books"))
    schema, kept = value_schema("kafka_books", columns, "none")
    assert [c.name for c in kept] == ["id", "title", "subtitle", "published", "timestamp"]
    assert schema.to_json() == {
        "type": "struct", "optional": False, "name": "kafka_books", "fields": [
            {"type": "int32", "optional": False, "field": "id"},  # the rowid: never null
            {"type": "string", "optional": False, "field": "title"},
            {"type": "string", "optional": False, "field": "subtitle"},
            {"type": "int32", "optional": False, "name": "org.apache.kafka.connect.data.Date", "version": 1,
             "field": "published"},
            {"type": "int64", "optional": False, "name": "org.apache.kafka.connect.data.Timestamp", "version": 1,
             "field": "timestamp"}]}
    assert columns[0].autoincrement


@pytest.mark.parametrize("mapping,rating,qty", [
    ("none", {"type": "bytes", "name": "org.apache.kafka.connect.data.Decimal"}, {"type": "bytes"}),
    ("precision_only", {"type": "bytes"}, {"type": "int32"}),
    ("best_fit", {"type": "double"}, {"type": "int32"}),
])
def test_numeric_mapping(db, mapping, rating, qty):
    import sqlalchemy as sa

    _, engine = db
    columns = describe_columns(SQLITE, sa.inspect(engine).get_columns("authors"))
    fields = {f["field"]: f for f in value_schema("authors", columns, mapping)[0].to_json()["fields"]}
    assert rating.items() <= fields["rating"].items()
    assert qty.items() <= fields["qty"].items()
    assert fields["score"]["type"] == "float" and fields["photo"]["type"] == "bytes"
    assert fields["active"]["type"] == "boolean" and fields["big"]["type"] == "int64"
    if mapping == "none":
        assert fields["rating"]["parameters"] == {"scale": "1", "connect.decimal.precision": "4"}


def test_missing_sqlite_file_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        connect(parse_jdbc_url(f"jdbc:sqlite:{tmp_path}/missing.db"), None, None)


def test_tables_spread_over_tasks_as_kafka_groups_partitions():
    assert group_tables(list("abcde"), 2) == [["a", "b", "c"], ["d", "e"]]
    assert group_tables(list("ab"), 5) == [["a"], ["b"]]
    assert group_tables([], 3) == []
