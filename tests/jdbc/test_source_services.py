"""The JDBC source on the project's private MariaDB (the book's MySQL example, unchanged) and on
PostgreSQL, through the CLI. Each test gets its own database (MariaDB) or schema (PostgreSQL): the
`database` fixture (tests/jdbc/conftest.py)."""

from __future__ import annotations

import json

from tests.conftest import cli, cli_here
from tests.jdbc._books import consume, create_connector

BOOK_BULK_SCHEMA = {  # the book's bulk output, field for field
    "type": "struct", "fields": [
        {"type": "int64", "optional": False, "field": "id"},
        {"type": "string", "optional": False, "field": "title"},
        {"type": "string", "optional": False, "field": "subtitle"},
        {"type": "int32", "optional": False, "name": "org.apache.kafka.connect.data.Date", "version": 1,
         "field": "published"},
        {"type": "int64", "optional": True, "name": "org.apache.kafka.connect.data.Timestamp", "version": 1,
         "field": "timestamp"}],
    "optional": False, "name": "kafka_books"}


def test_book_bulk(tmp_path, database):
    kind = database[0]
    worker = create_connector(tmp_path, database, "mysql-source-bulk",
                              {"topic.prefix": "mysql-bulk-", "mode": "bulk"})
    r = cli("run", "mysql-source-bulk", worker=worker)
    assert r.returncode == 0, r.stderr
    events = consume(worker, "mysql-bulk-kafka_books")
    assert [e["payload"] for e in events] == [
        {"id": 1, "title": "Kafka Connect", "subtitle": "Build and Run Data Pipelines", "published": 19631,
         "timestamp": 1656234290000},
        {"id": 2, "title": "Kafka The Definitive Guide", "subtitle": "Real-time Data and Stream Processing at Scale",
         "published": 17354, "timestamp": 1656234290000}]
    if kind == "mariadb":
        assert events[0]["schema"] == BOOK_BULK_SCHEMA
    else:  # SERIAL is a 32-bit integer; TIMESTAMP NOT NULL is required
        fields = events[0]["schema"]["fields"]
        assert fields[0] == {"type": "int32", "optional": False, "field": "id"}
        assert fields[4]["optional"] is False


def test_book_timestamp_incrementing(tmp_path, database):
    kind, _, engine, _, _ = database
    worker = create_connector(tmp_path, database, "mysql-source-inc", {
        "topic.prefix": "mysql-inc-", "mode": "timestamp+incrementing", "incrementing.column.name": "id",
        "timestamp.column.name": "timestamp",
        "transforms": "timestampConverter",
        "transforms.timestampConverter.type": "org.apache.kafka.connect.transforms.TimestampConverter$Value",
        "transforms.timestampConverter.field": "published",
        "transforms.timestampConverter.format": "yyyy-MM-dd",
        "transforms.timestampConverter.target.type": "string"})
    assert cli("run", "mysql-source-inc", worker=worker).returncode == 0
    with engine.begin() as c:
        c.exec_driver_sql("INSERT INTO kafka_books (title, subtitle, published, timestamp) VALUES "
                          "('Mastering Kafka Streams', 'Building real-time data systems by example', '2021-02-26', "
                          "'2022-06-26 10:09:02')")
        c.exec_driver_sql("UPDATE kafka_books SET published = '2022-09-23', timestamp = '2022-06-26 10:45:53' "
                          "WHERE id = 2")
    r = cli_here("run", "mysql-source-inc", worker=worker)
    assert r.returncode == 0, r.stderr
    events = consume(worker, "mysql-inc-kafka_books")
    assert [(e["payload"]["id"], e["payload"]["published"], e["payload"]["timestamp"]) for e in events] == [
        (1, "2023-10-01", 1656234290000), (2, "2017-07-07", 1656234290000),
        (3, "2021-02-26", 1656238142000), (2, "2022-09-23", 1656240353000)]
    if kind == "mariadb":  # the book's inc-mode schema: published a string, the tracked timestamp required
        assert events[-1]["schema"]["fields"][3] == {"type": "string", "optional": False, "field": "published"}
        assert events[-1]["schema"]["fields"][4] == {
            "type": "int64", "optional": False, "name": "org.apache.kafka.connect.data.Timestamp", "version": 1,
            "field": "timestamp"}
    offsets = json.loads(cli_here("offsets", "list", "mysql-source-inc", worker=worker).stdout)["offsets"]
    table = "kafka_books" if kind == "postgres" else None
    assert offsets[0]["offset"] == {"incrementing": 2, "timestamp": 1656240353000, "timestamp_nanos": 0}
    assert offsets[0]["partition"]["protocol"] == "1"
    assert offsets[0]["partition"]["table"].endswith(table or ".kafka_books")


def test_refused_login_is_a_clear_error_without_the_password(tmp_path, database):
    worker = create_connector(tmp_path, database, "bad", {
        "topic.prefix": "b-", "mode": "bulk", "connection.attempts": "1", "connection.user": "nobody_lc",
        "connection.password": "Sup3rS3cret"})
    r = cli("run", "bad", worker=worker)
    assert r.returncode == 2, r.stderr
    assert "Sup3rS3cret" not in r.stdout + r.stderr and "Traceback" not in r.stderr
    assert "connection.user" in r.stderr and "refused the login" in r.stderr
    status = cli_here("connectors", "status", "bad", worker=worker)
    assert "Sup3rS3cret" not in status.stdout + status.stderr


def test_query_mode_timestamp_incrementing(tmp_path, database):
    kind, _, engine, schema, _ = database
    table = f"{schema}.kafka_books" if schema else "kafka_books"
    worker = create_connector(tmp_path, database, "q", {
        "topic.prefix": "books-q", "mode": "timestamp+incrementing", "incrementing.column.name": "id",
        "timestamp.column.name": "timestamp", "table.whitelist": "", "schema.pattern": "",
        "query": f"SELECT id, title, timestamp FROM {table}"})
    assert cli("run", "q", worker=worker).returncode == 0
    with engine.begin() as c:
        c.exec_driver_sql("UPDATE kafka_books SET title = 'Kafka Connect (2nd)', timestamp = '2022-06-27 00:00:00' "
                          "WHERE id = 1")
    r = cli_here("run", "q", worker=worker)
    assert r.returncode == 0, r.stderr
    events = consume(worker, "books-q")
    assert [(e["payload"]["id"], e["payload"]["title"]) for e in events] == [
        (1, "Kafka Connect"), (2, "Kafka The Definitive Guide"), (1, "Kafka Connect (2nd)")]
    assert "name" not in events[0]["schema"]
    offsets = json.loads(cli_here("offsets", "list", "q", worker=worker).stdout)["offsets"]
    assert offsets == [{"partition": {"query": "query"},
                        "offset": {"incrementing": 1, "timestamp": 1656288000000, "timestamp_nanos": 0}}]


def test_a_row_the_database_fails_to_read_fails_the_batch_clearly(tmp_path, database):
    """A query that fails on one row fails inside Spark's read, after the batch was planned: the run
    exits 1 with the database's own message and what was read, not a bare Java error; the task is FAILED
    with that reason; nothing reaches the topic; once the row is fixed the next run copies every row."""
    kind, _, engine, schema, _ = database
    with engine.begin() as c:
        if kind == "mariadb":
            c.exec_driver_sql("CREATE FUNCTION lc_check(i BIGINT, t VARCHAR(150)) RETURNS BIGINT DETERMINISTIC "
                              "BEGIN IF t = 'broken' THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = "
                              "'row is broken'; END IF; RETURN i; END")
        else:
            c.exec_driver_sql("CREATE FUNCTION lc_check(i BIGINT, t VARCHAR) RETURNS BIGINT AS $$ BEGIN "
                              "IF t = 'broken' THEN RAISE EXCEPTION 'row is broken'; END IF; RETURN i; END $$ "
                              "LANGUAGE plpgsql")
        c.exec_driver_sql("UPDATE kafka_books SET subtitle = 'broken' WHERE id = 2")
    prefix = f"{schema}." if schema else ""
    worker = create_connector(tmp_path, database, "check", {
        "topic.prefix": "checked", "mode": "bulk", "table.whitelist": "", "schema.pattern": "",
        "query": f"SELECT id, title, {prefix}lc_check(id, subtitle) AS checked FROM {prefix}kafka_books"})
    r = cli("run", "check", worker=worker)
    assert r.returncode == 1, r.stderr
    assert "row is broken" in r.stderr and "reading the query from jdbc:" in r.stderr, r.stderr
    assert "Nothing of this batch was committed" in r.stderr
    assert "unexpected failure" not in r.stderr and "Traceback" not in r.stderr
    status = json.loads(cli_here("connectors", "status", "check", worker=worker).stdout)
    assert status["tasks"][0]["state"] == "FAILED" and "row is broken" in status["tasks"][0]["trace"]
    assert cli_here("topics", "describe", "checked", worker=worker).returncode != 0 or consume(worker, "checked") == []
    with engine.begin() as c:
        c.exec_driver_sql("UPDATE kafka_books SET subtitle = 'fixed' WHERE id = 2")
    assert cli_here("connectors", "restart", "check", worker=worker).returncode == 0
    r = cli("run", "check", worker=worker)
    assert r.returncode == 0, r.stderr
    assert [e["payload"]["id"] for e in consume(worker, "checked")] == [1, 2]


def test_a_connection_lost_during_the_read_is_retriable(tmp_path, database):
    """The database drops the reading connection (killed here, as a failover or a network cut would): the run
    exits 75 (EX_TEMPFAIL), which the DAG retries, not 1, with the driver's reason; nothing is committed; the
    next run copies every row."""
    import threading
    import time

    kind, _, engine, schema, _ = database
    prefix = f"{schema}." if schema else ""
    with engine.begin() as c:  # a second a row: the read is still running when it is killed
        if kind == "mariadb":
            c.exec_driver_sql("CREATE FUNCTION lc_slow(i BIGINT) RETURNS BIGINT NOT DETERMINISTIC NO SQL "
                              "BEGIN DO SLEEP(1); RETURN i; END")
        else:
            c.exec_driver_sql("CREATE FUNCTION lc_slow(i BIGINT) RETURNS BIGINT AS $$ BEGIN PERFORM pg_sleep(1); "
                              "RETURN i; END $$ LANGUAGE plpgsql VOLATILE")
    worker = create_connector(tmp_path, database, "lost", {
        "topic.prefix": "lost", "mode": "bulk", "table.whitelist": "", "schema.pattern": "",
        "query": f"SELECT id, title, {prefix}lc_slow(id) AS lc_slow_marker FROM {prefix}kafka_books"})
    killed = threading.Event()

    def kill() -> None:  # the connection reading the query's rows, as soon as it runs
        deadline = time.monotonic() + 120
        while not killed.is_set() and time.monotonic() < deadline:
            with engine.begin() as c:
                if kind == "mariadb":  # the function's statement is what the processlist shows
                    ids = [r[0] for r in c.exec_driver_sql(
                        "SELECT id FROM information_schema.processlist WHERE info = 'DO SLEEP(1)' "
                        "AND db = DATABASE()")]
                    for i in ids:
                        c.exec_driver_sql(f"KILL CONNECTION {int(i)}")
                else:
                    ids = [r[0] for r in c.exec_driver_sql(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE "
                        "'%%lc_slow_marker%%' AND query NOT LIKE '%%pg_stat_activity%%' AND query NOT LIKE "
                        "'%%1 = 0%%' AND state = 'active' AND application_name = 'PostgreSQL JDBC Driver'")]
            if ids:
                killed.set()
                return
            time.sleep(0.1)

    killer = threading.Thread(target=kill)
    killer.start()
    r = cli("run", "lost", worker=worker)
    killed.set()
    killer.join()
    assert r.returncode == 75, (r.returncode, r.stderr)
    assert "Traceback" not in r.stderr and "unexpected failure" not in r.stderr
    assert "may pass when tried again" in r.stderr or "retriable" in r.stderr.lower(), r.stderr
    assert cli_here("topics", "describe", "lost", worker=worker).returncode != 0 or consume(worker, "lost") == []
    r = cli("run", "lost", worker=worker)
    assert r.returncode == 0, r.stderr
    assert [e["payload"]["id"] for e in consume(worker, "lost")] == [1, 2]


def test_dates_and_times_before_and_after_the_epoch(tmp_path, database):
    """DATE, DATETIME and TIMESTAMP values come out as the book's Date (epoch days) and Timestamp (epoch
    millis) whichever way the connector reads them (MariaDB's as numbers since the epoch, for speed)."""
    import datetime as dt

    kind, _, engine, _, _ = database
    moment = "DATETIME(3)" if kind == "mariadb" else "TIMESTAMP(3)"
    stamp = "TIMESTAMP NULL" if kind == "mariadb" else "TIMESTAMP"
    rows = [(1, "1969-12-31", "1965-03-04 05:06:07.890", "2030-05-06 07:08:09"),
            (2, "2038-01-19", "2999-12-31 23:59:59.999", "1970-01-01 00:00:01"),
            (3, "1900-01-01", "1970-01-01 00:00:00.001", None),
            (4, None, None, None)]
    with engine.begin() as c:
        c.exec_driver_sql(f"CREATE TABLE temporal (id INT PRIMARY KEY, d DATE NULL, m {moment} NULL, s {stamp})")
        for r in rows:
            c.exec_driver_sql("INSERT INTO temporal VALUES ({}, {}, {}, {})".format(
                r[0], *("NULL" if v is None else f"'{v}'" for v in r[1:])))
    worker = create_connector(tmp_path, database, "temporal-bulk", {
        "topic.prefix": "t-", "mode": "bulk", "table.whitelist": "temporal"})
    r = cli("run", "temporal-bulk", worker=worker)
    assert r.returncode == 0, r.stderr
    events = consume(worker, "t-temporal")

    def days(v):
        return None if v is None else (dt.date.fromisoformat(v) - dt.date(1970, 1, 1)).days

    def millis(v):
        if v is None:
            return None
        return (dt.datetime.fromisoformat(v) - dt.datetime(1970, 1, 1)) // dt.timedelta(milliseconds=1)

    assert sorted((e["payload"] for e in events), key=lambda p: p["id"]) == [
        {"id": i, "d": days(d), "m": millis(m), "s": millis(s)} for i, d, m, s in rows]
    logical = {f["field"]: f.get("name") for f in events[0]["schema"]["fields"]}
    assert logical == {"id": None, "d": "org.apache.kafka.connect.data.Date",
                       "m": "org.apache.kafka.connect.data.Timestamp", "s": "org.apache.kafka.connect.data.Timestamp"}
