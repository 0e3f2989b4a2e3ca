"""Confluent's JDBC source keys beyond the book's: `timestamp.granularity`, `transaction.isolation.mode`,
`query.retry.attempts`, `table.poll.interval.ms` and `db.timezone`, each as kafka-connect-jdbc 10.x does it
(JdbcSourceConnectorConfig, DateTimeUtils, GenericDatabaseDialect.setConnectionIsolationMode,
JdbcSourceTask's retries, TableMonitorThread). SQLite where the database does not matter; MariaDB and
PostgreSQL (the `database` fixture) where it does."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from connectors.jdbc import discovery
from tests.conftest import cli_here, write_worker
from tests.jdbc._books import consume, create_connector, execute, offsets

GRANULARITY_TABLE = """
CREATE TABLE events (id INTEGER PRIMARY KEY, at DATETIME NOT NULL, note VARCHAR(20));
INSERT INTO events VALUES (1, '2022-06-26 09:04:50.123456', 'a'), (2, '2022-06-26 09:04:51', 'b');
"""


def _sqlite(tmp_path: Path, script: str) -> tuple[Path, Path]:
    (tmp_path / "lake").mkdir()
    db = tmp_path / "inventory.db"
    con = sqlite3.connect(db)
    con.executescript(script)
    con.close()
    worker = write_worker(tmp_path / "worker.properties", tmp_path / "lake",
                          **{"value.converter": "org.apache.kafka.connect.json.JsonConverter"})
    return db, worker


def _create(tmp_path: Path, worker: Path, name: str, config: dict) -> "object":
    f = tmp_path / f"{name}.json"
    f.write_text(json.dumps({"name": name, "config": {
        "connector.class": "io.confluent.connect.jdbc.JdbcSourceConnector", "tasks.max": "1",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter", "value.converter.schemas.enable": "true",
        **config}}))
    return cli_here("connectors", "create", str(f), worker=worker)


def _run(worker: Path, name: str):
    return cli_here("run", name, worker=worker)


# --- timestamp.granularity ---------------------------------------------------------------------------------


def test_timestamp_granularity_shapes_timestamp_fields_not_offsets(tmp_path):
    """Each granularity gives the TIMESTAMP column's field Confluent's schema and value (DateTimeUtils: nanos
    since the epoch as int64 or text, or the ISO date-time in db.timezone); the offsets stay Confluent's
    {timestamp: ms, timestamp_nanos: ns} whatever the granularity."""
    db, worker = _sqlite(tmp_path, GRANULARITY_TABLE)
    expected = {
        "connect_logical": ({"type": "int64", "optional": False, "name": "org.apache.kafka.connect.data.Timestamp",
                             "version": 1, "field": "at"}, [1656248690123, 1656248691000]),
        "nanos_long": ({"type": "int64", "optional": False, "field": "at"},
                       [1656248690123456000, 1656248691000000000]),
        "nanos_string": ({"type": "string", "optional": False, "field": "at"},
                         ["1656248690123456000", "1656248691000000000"]),
        "nanos_iso_datetime_string": ({"type": "string", "optional": False, "field": "at"},
                                      ["2022-06-26T09:04:50.123456000", "2022-06-26T09:04:51.000000000"]),
        "micros_long": ({"type": "int64", "optional": False, "field": "at"}, [1656248690123456, 1656248691000000]),
        "micros_iso_datetime_string": ({"type": "string", "optional": False, "field": "at"},
                                       ["2022-06-26T09:04:50.123456", "2022-06-26T09:04:51.000000"]),
    }
    for granularity, (field, values) in expected.items():
        name = f"g-{granularity}"
        assert _create(tmp_path, worker, name, {
            "connection.url": f"jdbc:sqlite:{db}", "mode": "timestamp+incrementing", "incrementing.column.name": "id",
            "timestamp.column.name": "at", "topic.prefix": f"{granularity}-", "db.timezone": "America/New_York",
            # Confluent's validator takes the names upper case too
            "timestamp.granularity": granularity.upper() if granularity == "nanos_long" else granularity,
        }).returncode == 0
        r = _run(worker, name)
        assert r.returncode == 0, r.stderr
        events = consume(worker, f"{granularity}-events")
        assert events[0]["schema"]["fields"][1] == field, granularity
        assert [e["payload"]["at"] for e in events] == values, granularity
        assert [e["payload"]["note"] for e in events] == ["a", "b"]
        # 09:04:51 in New York is 13:04:51 UTC: the offset is the instant, as with connect_logical
        assert offsets(worker, name)[0]["offset"] == {"incrementing": 2, "timestamp": 1656248691000,
                                                      "timestamp_nanos": 0}, granularity


def test_timestamp_granularity_in_query_mode(tmp_path, database):
    """A query's TIMESTAMP column takes the granularity too (Confluent maps the result's columns alike)."""
    schema = database[3]
    table = f"{schema}.kafka_books" if schema else "kafka_books"
    worker = create_connector(tmp_path, database, "q", {
        "mode": "incrementing", "incrementing.column.name": "id", "table.whitelist": "", "schema.pattern": "",
        "query": f"SELECT id, timestamp FROM {table}", "topic.prefix": "q-books",
        "timestamp.granularity": "nanos_string"})
    r = _run(worker, "q")
    assert r.returncode == 0, r.stderr
    events = consume(worker, "q-books")
    assert [e["payload"]["timestamp"] for e in events] == ["1656234290000000000"] * 2
    # (a query's columns are optional here: the drivers report their nullability unknown)
    assert events[0]["schema"]["fields"][1] == {"type": "string", "optional": True, "field": "timestamp"}


def test_unknown_values_are_refused_naming_the_key(tmp_path):
    """A granularity Confluent does not know, or SQL Server's snapshot isolation on another database: exit 2 with
    the key and what it takes, nothing stored; the validate endpoint reports the same error on the key."""
    from ingest.config.worker import load_worker
    from ingest.rest.app import ConnectApi
    from ingest.runtime.worker import Worker

    db, worker = _sqlite(tmp_path, GRANULARITY_TABLE)
    base = {"connection.url": f"jdbc:sqlite:{db}", "mode": "bulk", "topic.prefix": "x-"}
    r = _create(tmp_path, worker, "bad-g", {**base, "timestamp.granularity": "millis_long"})
    assert r.returncode == 2, r.stderr
    assert "timestamp.granularity" in r.stderr and "millis_long" in r.stderr and "nanos_iso_datetime_string" in r.stderr
    assert "Traceback" not in r.stderr
    r = _create(tmp_path, worker, "bad-i", {**base, "transaction.isolation.mode": "SQL_SERVER_SNAPSHOT"})
    assert r.returncode == 2, r.stderr
    assert "transaction.isolation.mode" in r.stderr and "Sql Server Dialect" in r.stderr
    assert json.loads(cli_here("connectors", "list", "--json", worker=worker).stdout) == []

    api = ConnectApi(Worker(load_worker(str(worker))))
    plugin = "io.confluent.connect.jdbc.JdbcSourceConnector"
    body = json.dumps({**base, "connector.class": plugin, "name": "v", "timestamp.granularity": "millis_long",
                       "transaction.isolation.mode": "SQL_SERVER_SNAPSHOT"}).encode()
    answer = api.validate(plugin=plugin, body=body)
    errors = {c["value"]["name"]: c["value"]["errors"] for c in answer.body["configs"] if c["value"]["errors"]}
    assert answer.body["error_count"] >= 1 and "timestamp.granularity" in errors, errors
    assert any("millis_long" in e for e in errors["timestamp.granularity"])


# --- table.poll.interval.ms --------------------------------------------------------------------------------


def test_new_tables_are_found_after_table_poll_interval(tmp_path):
    """In a process that runs the connector again and again (a worker), a table created in between is copied
    only once `table.poll.interval.ms` has passed since the tables were looked up; with 0, at the next run."""
    db, worker = _sqlite(tmp_path, "CREATE TABLE a (id INTEGER PRIMARY KEY, v TEXT); INSERT INTO a VALUES (1, 'x');")
    common = {"connection.url": f"jdbc:sqlite:{db}", "mode": "incrementing"}
    assert _create(tmp_path, worker, "every-minute", {**common, "topic.prefix": "m-"}).returncode == 0
    assert _create(tmp_path, worker, "every-run", {**common, "topic.prefix": "r-",
                                                   "table.poll.interval.ms": "0"}).returncode == 0
    for name in ("every-minute", "every-run"):
        assert _run(worker, name).returncode == 0
    con = sqlite3.connect(db)
    con.executescript("CREATE TABLE b (id INTEGER PRIMARY KEY, v TEXT); INSERT INTO b VALUES (1, 'y');")
    con.close()

    assert _run(worker, "every-minute").returncode == 0
    assert _run(worker, "every-run").returncode == 0
    assert [e["payload"]["v"] for e in consume(worker, "r-b")] == ["y"]
    topics = cli_here("topics", "list", worker=worker).stdout
    assert "m-a" in topics and "m-b" not in topics  # the minute since the last look has not passed

    # A minute passes: the list the first look made is that old now.
    for key, (at, tables) in list(discovery._TABLE_LISTS.items()):
        discovery._TABLE_LISTS[key] = (at - 61, tables)
    assert _run(worker, "every-minute").returncode == 0
    assert [e["payload"]["v"] for e in consume(worker, "m-b")] == ["y"]


def test_a_table_dropped_within_the_interval_is_looked_up_again(tmp_path):
    db, worker = _sqlite(tmp_path, "CREATE TABLE a (id INTEGER PRIMARY KEY, v TEXT); INSERT INTO a VALUES (1, 'x');"
                                   "CREATE TABLE b (id INTEGER PRIMARY KEY, v TEXT); INSERT INTO b VALUES (1, 'y');")
    assert _create(tmp_path, worker, "c", {"connection.url": f"jdbc:sqlite:{db}", "mode": "incrementing",
                                           "topic.prefix": "c-"}).returncode == 0
    assert _run(worker, "c").returncode == 0
    con = sqlite3.connect(db)
    con.executescript("DROP TABLE b; INSERT INTO a VALUES (2, 'z');")
    con.close()
    r = _run(worker, "c")
    assert r.returncode == 75, r.stderr  # retriable: the next run looks again
    assert "table b does not exist any more" in r.stderr
    assert _run(worker, "c").returncode == 0
    assert [e["payload"]["v"] for e in consume(worker, "c-a")] == ["x", "z"]


# --- transaction.isolation.mode ----------------------------------------------------------------------------

LEVEL_QUERY = {
    # The session's level: as the row's id (read by the plan's MAX query: the offset) and as text (read by Spark).
    "mariadb": "SELECT CAST(CASE @@tx_isolation WHEN 'READ-UNCOMMITTED' THEN 1 WHEN 'READ-COMMITTED' THEN 2 "
               "WHEN 'REPEATABLE-READ' THEN 3 WHEN 'SERIALIZABLE' THEN 4 END AS SIGNED) AS id, "
               "@@tx_isolation AS level",
    "postgres": "SELECT CASE current_setting('transaction_isolation') WHEN 'read uncommitted' THEN 1 "
                "WHEN 'read committed' THEN 2 WHEN 'repeatable read' THEN 3 WHEN 'serializable' THEN 4 END AS id, "
                "current_setting('transaction_isolation') AS level",
}
LEVELS = {"mariadb": {"DEFAULT": (3, "REPEATABLE-READ"), "READ_UNCOMMITTED": (1, "READ-UNCOMMITTED"),
                      "SERIALIZABLE": (4, "SERIALIZABLE")},
          "postgres": {"DEFAULT": (2, "read committed"), "READ_UNCOMMITTED": (1, "read uncommitted"),
                       "SERIALIZABLE": (4, "serializable")}}


def test_transaction_isolation_mode_applies_to_plan_and_read(tmp_path, database):
    """Both the plan's connection (the offset: the level as the plan's MAX query saw it) and Spark's reading
    connections (the record: the level as the read saw it) run at the configured level."""
    kind = database[0]
    worker = None
    for mode, (number, text) in LEVELS[kind].items():
        config = {"topic.prefix": f"iso-{mode}", "mode": "incrementing", "incrementing.column.name": "id",
                  "table.whitelist": "", "schema.pattern": "", "query": LEVEL_QUERY[kind],
                  "transaction.isolation.mode": mode.lower() if mode == "SERIALIZABLE" else mode}
        if worker is None:
            worker = create_connector(tmp_path, database, f"iso-{mode}", config)
        else:
            creds = json.loads((tmp_path / "iso-DEFAULT.json").read_text())["config"]
            assert _create(tmp_path, worker, f"iso-{mode}", {**creds, **config}).returncode == 0
        r = _run(worker, f"iso-{mode}")
        assert r.returncode == 0, r.stderr
        assert [e["payload"] for e in consume(worker, f"iso-{mode}")] == [{"id": number, "level": text}], mode
        assert offsets(worker, f"iso-{mode}")[0]["offset"] == {"incrementing": number}, mode


# --- db.timezone -------------------------------------------------------------------------------------------


def test_db_timezone_reads_datetimes_in_that_zone(tmp_path, database):
    """The book's DATETIME (MariaDB) / TIMESTAMP (PostgreSQL) '2022-06-26 09:04:50' is 09:04:50 UTC by default and
    13:04:50 UTC with db.timezone=America/New_York; the timestamp offsets and the next batch's bounds follow."""
    kind, _, engine, _, _ = database
    worker = create_connector(tmp_path, database, "utc", {"topic.prefix": "utc-", "mode": "timestamp",
                                                          "timestamp.column.name": "timestamp"})
    creds = json.loads((tmp_path / "utc.json").read_text())["config"]
    assert _create(tmp_path, worker, "ny", {**creds, "topic.prefix": "ny-",
                                            "db.timezone": "America/New_York"}).returncode == 0
    for name in ("utc", "ny"):
        r = _run(worker, name)
        assert r.returncode == 0, r.stderr
    assert [e["payload"]["timestamp"] for e in consume(worker, "utc-kafka_books")] == [1656234290000] * 2
    assert [e["payload"]["timestamp"] for e in consume(worker, "ny-kafka_books")] == [1656248690000] * 2
    assert offsets(worker, "ny")[0]["offset"] == {"timestamp": 1656248690000, "timestamp_nanos": 0}

    execute(engine, "INSERT INTO kafka_books (title, subtitle, published, timestamp) VALUES "
                    "('Mastering Kafka Streams', 'Building real-time data systems by example', '2021-02-26', "
                    "'2022-06-26 10:09:02')")
    for name in ("utc", "ny"):
        assert _run(worker, name).returncode == 0
    assert [e["payload"]["timestamp"] for e in consume(worker, "ny-kafka_books")][2:] == [1656252542000]
    assert [e["payload"]["timestamp"] for e in consume(worker, "utc-kafka_books")][2:] == [1656238142000]


# --- query.retry.attempts ----------------------------------------------------------------------------------


@pytest.fixture
def flaky_view(database):
    """PostgreSQL: a view whose queries fail with a serialization failure (SQLSTATE 40001, which a retry may
    pass) until a sequence, which no rollback resets, has counted `lc_fails.n` calls."""
    kind, _, engine, schema, _ = database
    assert kind == "postgres"
    execute(engine,
            "CREATE SEQUENCE lc_calls", "CREATE TABLE lc_fails (n INT NOT NULL)", "INSERT INTO lc_fails VALUES (0)",
            f"CREATE FUNCTION lc_flaky() RETURNS BOOLEAN VOLATILE AS $$ BEGIN IF nextval('{schema}.lc_calls') <= "
            f"(SELECT n FROM {schema}.lc_fails) THEN RAISE EXCEPTION 'could not serialize access' USING ERRCODE = "
            "'40001'; END IF; RETURN TRUE; END $$ LANGUAGE plpgsql",
            f"CREATE VIEW books_v AS SELECT b.* FROM {schema}.kafka_books b WHERE {schema}.lc_flaky()")

    def fail(times: int) -> None:
        execute(engine, "ALTER SEQUENCE lc_calls RESTART", f"UPDATE lc_fails SET n = {times}")

    return fail


@pytest.mark.parametrize("database", ["postgres"], indirect=True)
def test_query_retry_attempts(tmp_path, database, flaky_view):
    """A plan query failing with a transient error: by default (-1) the run ends retriable (exit 75) and the next
    run passes; with query.retry.attempts=3 it is tried again in the run and passes; with 1, a second failure
    fails the task (exit 1, FAILED), as Confluent's "Failed to Query table after retries"."""
    view = {"table.whitelist": "books_v", "table.types": "VIEW", "mode": "incrementing",
            "incrementing.column.name": "id", "validate.non.null": "false", "connection.backoff.ms": "50"}
    worker = create_connector(tmp_path, database, "forever", {**view, "topic.prefix": "forever-"})
    flaky_view(1)
    r = _run(worker, "forever")
    assert r.returncode == 75, r.stderr
    assert "could not serialize access" in r.stderr and "query.retry.attempts=-1" in r.stderr
    assert _run(worker, "forever").returncode == 0
    assert [e["payload"]["id"] for e in consume(worker, "forever-books_v")] == [1, 2]

    creds = json.loads((tmp_path / "forever.json").read_text())["config"]
    assert _create(tmp_path, worker, "three", {**creds, **view, "topic.prefix": "three-",
                                               "query.retry.attempts": "3"}).returncode == 0
    flaky_view(2)
    r = _run(worker, "three")
    assert r.returncode == 0, r.stderr
    assert "attempting retry 2 of 3" in r.stderr
    assert [e["payload"]["id"] for e in consume(worker, "three-books_v")] == [1, 2]

    assert _create(tmp_path, worker, "one", {**creds, **view, "topic.prefix": "one-",
                                             "query.retry.attempts": "1"}).returncode == 0
    flaky_view(5)
    r = _run(worker, "one")
    assert r.returncode == 1, r.stderr
    assert "after 1 retries (query.retry.attempts=1)" in r.stderr and "Traceback" not in r.stderr
    status = json.loads(cli_here("connectors", "status", "one", worker=worker).stdout)
    assert status["tasks"][0]["state"] == "FAILED" and "after 1 retries" in status["tasks"][0]["trace"]
