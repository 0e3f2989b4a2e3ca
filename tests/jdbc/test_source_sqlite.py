"""The JDBC source on a real SQLite file, through the CLI as a user runs it: the book's bulk and
timestamp+incrementing walk-through, the incrementing mode, a crash after every step of a batch
compared with a run that never crashed (in every mode), and names that carry SQL."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from tests.conftest import cli, cli_here, write_worker
from tests.jdbc._books import (
    CRASH_MODES,
    CRASH_CONNECTOR, INJECTING_CONFIGS, ODD_CONFIG, Books, check_crash_at_every_step, check_odd_copy, check_refused,
    consume, create_odd_table, odd_names, offsets, run,
)

# The book's table (ch. 5), in SQLite; the timestamp is the one the book prints (1656234290000).
BOOKS = """
CREATE TABLE kafka_books (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    title VARCHAR(150) NOT NULL,
    subtitle VARCHAR(150) NOT NULL,
    published DATE NOT NULL,
    timestamp DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP
);
INSERT INTO kafka_books (title, subtitle, published, timestamp) VALUES
  ('Kafka Connect', 'Build and Run Data Pipelines', '2023-10-01', '2022-06-26 09:04:50'),
  ('Kafka The Definitive Guide', 'Real-time Data and Stream Processing at Scale', '2017-07-07', '2022-06-26 09:04:50');
"""

TIMESTAMP_CONVERTER = {
    "transforms": "timestampConverter",
    "transforms.timestampConverter.type": "org.apache.kafka.connect.transforms.TimestampConverter$Value",
    "transforms.timestampConverter.field": "published",
    "transforms.timestampConverter.format": "yyyy-MM-dd",
    "transforms.timestampConverter.target.type": "string",
}


def _setup(tmp_path: Path, name: str, config: dict, tag: str = "run"):
    base = tmp_path / tag
    (base / "lake").mkdir(parents=True)
    db = base / "inventory.db"
    con = sqlite3.connect(db)
    con.executescript(BOOKS)
    con.close()
    worker = write_worker(base / "worker.properties", base / "lake",
                          **{"value.converter": "org.apache.kafka.connect.json.JsonConverter"})
    _create(base, worker, db, name, config)
    return base, db, worker


def _create(base: Path, worker: Path, db: Path, name: str, config: dict) -> None:
    f = base / f"{name}.json"
    f.write_text(json.dumps({"name": name, "config": {
        "connector.class": "io.confluent.connect.jdbc.JdbcSourceConnector", "tasks.max": "1",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter", "value.converter.schemas.enable": "true",
        "connection.url": f"jdbc:sqlite:{db}", "table.whitelist": "kafka_books", **config}}))
    r = cli_here("connectors", "create", str(f), worker=worker)
    assert r.returncode == 0, r.stderr


def _sql(db: Path, statements: str) -> None:
    con = sqlite3.connect(db)
    con.executescript(statements)
    con.close()


def test_book_bulk_copy(tmp_path):
    _, _, worker = _setup(tmp_path, "sqlite-source-bulk", {"topic.prefix": "sqlite-bulk-", "mode": "bulk",
                                                           "poll.interval.ms": "3600000"})
    r = cli("run", "sqlite-source-bulk", worker=worker)
    assert r.returncode == 0, r.stderr
    events = consume(worker, "sqlite-bulk-kafka_books")
    assert [e["payload"] for e in events] == [
        {"id": 1, "title": "Kafka Connect", "subtitle": "Build and Run Data Pipelines", "published": 19631,
         "timestamp": 1656234290000},
        {"id": 2, "title": "Kafka The Definitive Guide", "subtitle": "Real-time Data and Stream Processing at Scale",
         "published": 17354, "timestamp": 1656234290000}]
    schema = events[0]["schema"]
    assert schema["name"] == "kafka_books" and [f["field"] for f in schema["fields"]] == [
        "id", "title", "subtitle", "published", "timestamp"]
    assert schema["fields"][3] == {"type": "int32", "optional": False, "name": "org.apache.kafka.connect.data.Date",
                                   "version": 1, "field": "published"}
    # Within poll.interval.ms (an hour here) nothing is copied again; a later run copies the whole table.
    r = cli_here("run", "sqlite-source-bulk", worker=worker)
    assert r.returncode == 0 and "nothing new" in r.stdout + r.stderr
    assert offsets(worker, "sqlite-source-bulk")[0]["partition"] == {"protocol": "1", "table": "kafka_books"}


def test_book_timestamp_incrementing_walkthrough(tmp_path):
    _, db, worker = _setup(tmp_path, "sqlite-source-inc", {
        "topic.prefix": "sqlite-inc-", "mode": "timestamp+incrementing", "incrementing.column.name": "id",
        "timestamp.column.name": "timestamp", **TIMESTAMP_CONVERTER})
    assert cli("run", "sqlite-source-inc", worker=worker).returncode == 0
    _sql(db, "INSERT INTO kafka_books (title, subtitle, published, timestamp) VALUES ('Mastering Kafka Streams', "
             "'Building real-time data systems by example', '2021-02-26', '2022-06-26 10:09:02');"
             "UPDATE kafka_books SET published = '2022-09-23', timestamp = '2022-06-26 10:45:53' WHERE id = 2;")
    r = cli_here("run", "sqlite-source-inc", "--until-caught-up", worker=worker)
    assert r.returncode == 0, r.stderr
    events = consume(worker, "sqlite-inc-kafka_books")
    assert [(e["payload"]["id"], e["payload"]["published"], e["payload"]["timestamp"]) for e in events] == [
        (1, "2023-10-01", 1656234290000), (2, "2017-07-07", 1656234290000),
        (3, "2021-02-26", 1656238142000), (2, "2022-09-23", 1656240353000)]  # the book's figures
    assert events[-1]["schema"]["fields"][3] == {"type": "string", "optional": False, "field": "published"}
    assert offsets(worker, "sqlite-source-inc") == [{
        "partition": {"protocol": "1", "table": "kafka_books"},
        "offset": {"incrementing": 2, "timestamp": 1656240353000, "timestamp_nanos": 0}}]
    r = cli_here("run", "sqlite-source-inc", worker=worker)
    assert r.returncode == 0 and "nothing new" in r.stdout + r.stderr


def test_incrementing_mode_reads_each_new_row_once(tmp_path):
    _, db, worker = _setup(tmp_path, "inc", {"topic.prefix": "inc-", "mode": "incrementing"})
    assert cli_here("run", "inc", worker=worker).returncode == 0
    _sql(db, "INSERT INTO kafka_books (title, subtitle, published) VALUES ('a', 'b', '2020-01-01');"
             "UPDATE kafka_books SET title = 'changed' WHERE id = 1;")  # an update is not a new id
    assert cli_here("run", "inc", worker=worker).returncode == 0
    events = consume(worker, "inc-kafka_books")
    assert [(e["payload"]["id"], e["payload"]["title"]) for e in events] == [
        (1, "Kafka Connect"), (2, "Kafka The Definitive Guide"), (3, "a")]
    assert offsets(worker, "inc")[0]["offset"] == {"incrementing": 3}


def test_nullable_tracking_column_is_refused_with_the_key(tmp_path):
    _, db, worker = _setup(tmp_path, "nul", {"topic.prefix": "nul-", "mode": "timestamp",
                                              "timestamp.column.name": "updated"})
    _sql(db, "ALTER TABLE kafka_books ADD COLUMN updated DATETIME;")
    r = cli("run", "nul", worker=worker)
    assert r.returncode == 2, r.stderr
    assert "timestamp.column.name" in r.stderr and "nullable" in r.stderr and "validate.non.null" in r.stderr


@pytest.mark.parametrize("mode", [m for m in CRASH_MODES if m != "timestamp+incrementing"])
def test_crash_at_every_step_of_a_batch(tmp_path, mode):
    """Each mode, killed after each step in turn (tests/jdbc/_books.py): cheaper than one test per
    step, as each run resumes the batch the previous one left. timestamp+incrementing is killed on
    MariaDB (test_source_crash_services.py)."""
    def start(tag: str, config: dict[str, str]) -> Books:
        base, db, worker = _setup(tmp_path, CRASH_CONNECTOR, config, tag)
        return Books(base / "lake", worker, lambda statements: _sql(db, ";".join(statements)))

    check_crash_at_every_step(start, mode)


def test_crash_of_a_long_running_worker_at_every_step_of_a_batch(tmp_path):
    """The same kills in incrementing mode, of a `lakeconnect worker` running the batch a delegating
    `lakeconnect run` asked of it."""
    def start(tag: str, config: dict[str, str]) -> Books:
        base, db, worker = _setup(tmp_path, CRASH_CONNECTOR, config, tag)
        return Books(base / "lake", worker, lambda statements: _sql(db, ";".join(statements)))

    check_crash_at_every_step(start, "incrementing", through_worker=True)


def test_names_with_quotes_and_sql_are_copied_and_settings_with_sql_refused(tmp_path):
    table, ident, _, _ = odd_names('"')
    base, db, worker = _setup(tmp_path, "odd", {**ODD_CONFIG, "table.whitelist": table,
                                                 "incrementing.column.name": ident})
    create_odd_table(lambda statements: _sql(db, ";".join(statements)), '"', "INTEGER")

    def check_tables() -> None:
        con = sqlite3.connect(db)
        try:
            assert {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")} >= {
                "kafka_books", table}
            assert con.execute("SELECT count(*) FROM kafka_books").fetchone() == (2,)
        finally:
            con.close()

    for name, config, key in INJECTING_CONFIGS:
        _create(base, worker, db, name, {"topic.prefix": "bad-", **config})
        check_refused(cli("run", name, worker=worker), key)
    check_tables()

    run(worker, "odd")
    check_odd_copy(base / "lake", '"')
    check_tables()


def test_unreachable_database_fails_the_task_after_the_attempts(tmp_path):
    base = tmp_path / "down"
    (base / "lake").mkdir(parents=True)
    worker = write_worker(base / "worker.properties", base / "lake")
    f = base / "down.json"
    f.write_text(json.dumps({"name": "down", "connector.class": "JdbcSource", "mode": "bulk", "topic.prefix": "d-",
                             "connection.url": "jdbc:mysql://127.0.0.1:1/inventory?password=pw-in-url",
                             "connection.user": "app", "connection.password": "pw-in-config",
                             "connection.attempts": "2", "connection.backoff.ms": "100"}))
    assert cli_here("connectors", "create", str(f), worker=worker).returncode == 0
    r = cli("run", "down", worker=worker)
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert "cannot connect to jdbc:mysql://127.0.0.1:1/inventory?password=[hidden] after 2 attempt(s)" in r.stderr
    status = cli_here("connectors", "status", "down", worker=worker)
    assert "FAILED" in status.stdout and "after 2 attempt(s)" in status.stdout
    for text in (r.stdout, r.stderr, status.stdout):
        assert "pw-in-url" not in text and "pw-in-config" not in text


def test_query_mode_incrementing(tmp_path):
    """A custom query goes to the topic named by topic.prefix, in an unnamed struct; its incremental
    criteria wrap it as a subquery (colons and all)."""
    query = "SELECT id, upper(title) AS title, published, 'a:b' AS tag FROM kafka_books"
    _, db, worker = _setup(tmp_path, "q", {"topic.prefix": "books-query", "mode": "incrementing",
                                            "incrementing.column.name": "id", "query": query,
                                            "table.whitelist": ""})
    assert cli("run", "q", worker=worker).returncode == 0
    _sql(db, "INSERT INTO kafka_books (title, subtitle, published) VALUES ('new', 'x', '2020-01-01');")
    r = cli_here("run", "q", worker=worker)
    assert r.returncode == 0, r.stderr
    events = consume(worker, "books-query")
    assert [(e["payload"]["id"], e["payload"]["title"], e["payload"]["published"], e["payload"]["tag"])
            for e in events] == [(1, "KAFKA CONNECT", 19631, "a:b"), (2, "KAFKA THE DEFINITIVE GUIDE", 17354, "a:b"),
                                 (3, "NEW", 18262, "a:b")]
    assert "name" not in events[0]["schema"]
    assert offsets(worker, "q") == [{"partition": {"query": "query"}, "offset": {"incrementing": 3}}]


@pytest.mark.parametrize("query", [
    "SELECT id, title FROM kafka_books WHERE title NOT LIKE 'skip%'",
    "SELECT * FROM (SELECT id, title FROM kafka_books WHERE title NOT LIKE 'skip%') AS q",  # the form Confluent needs
])
def test_an_incremental_query_may_have_its_own_where(tmp_path, query):
    """The task reads the query as a subquery and puts its own criteria outside it, so a WHERE in the query is
    the query's own (Confluent's connector appends its WHERE to the text, so there it must be wrapped)."""
    _, db, worker = _setup(tmp_path, "w", {"topic.prefix": "books-where", "mode": "incrementing",
                                            "incrementing.column.name": "id", "query": query, "table.whitelist": ""})
    _sql(db, "INSERT INTO kafka_books (title, subtitle, published) VALUES ('skip me', 'x', '2020-01-01');"
             "INSERT INTO kafka_books (title, subtitle, published) VALUES ('keep me', 'x', '2020-01-01');")
    r = cli_here("run", "w", worker=worker)
    assert r.returncode == 0, r.stderr
    assert [(e["payload"]["id"], e["payload"]["title"]) for e in consume(worker, "books-where")] == [
        (1, "Kafka Connect"), (2, "Kafka The Definitive Guide"), (4, "keep me")]
    assert offsets(worker, "w") == [{"partition": {"query": "query"}, "offset": {"incrementing": 4}}]


def test_a_large_batch_is_read_in_parallel_key_ranges(tmp_path, spark):
    """50k new rows in incrementing mode: Spark reads them in one range of the key per core, and every
    row arrives once, in key order (seq)."""
    import logging

    from connectors.jdbc.source import JdbcSourceConnector
    from ingest.api import TaskContext
    from ingest.config.configdef import Config

    db = tmp_path / "big.db"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE big (id INTEGER PRIMARY KEY AUTOINCREMENT, v TEXT NOT NULL)")
    con.executemany("INSERT INTO big (v) VALUES (?)", [(f"v{i}",) for i in range(50_000)])
    con.commit()
    con.close()
    raw = {"connector.class": "JdbcSource", "connection.url": f"jdbc:sqlite:{db}", "mode": "incrementing",
           "topic.prefix": "p-"}
    definition = JdbcSourceConnector.config_def()
    values, problems = definition.validate(raw, strict=False)
    assert not problems
    connector = JdbcSourceConnector(Config(definition, values, raw))
    task_raw = {**raw, **connector.task_configs(1)[0]}
    task = JdbcSourceConnector.task_class(Config(definition, values, task_raw), TaskContext(
        "big", 0, None, lambda: spark, logging.LoggerAdapter(logging.getLogger("t"), {}), str(tmp_path)))
    try:
        plan = task.plan({})
        assert [r.end for r in plan.ranges] == [{"incrementing": 50_000}]
        batch = task.read(plan)[0]
        df = batch.df
        assert df.rdd.getNumPartitions() == spark.sparkContext.defaultParallelism >= 2
        stats = df.selectExpr("count(*) AS n", "count(DISTINCT seq) AS d", "min(seq) AS lo", "max(seq) AS hi").first()
        assert (stats.n, stats.d, stats.lo, stats.hi) == (50_000, 50_000, 1, 50_000)
        # The database counts every range but the last, so the topic needs no pass of its own to number them.
        from pyspark.sql import functions as F

        per_range = [r["n"] for r in df.groupBy(F.spark_partition_id().alias("p")).agg(F.count("*").alias("n"))
                     .orderBy("p").collect()]
        assert batch.counts is not None and tuple(batch.counts()) == (*per_range[:-1], None)
    finally:
        task.close()


def test_a_query_the_database_refuses_names_the_key(tmp_path):
    _, _, worker = _setup(tmp_path, "badq", {"topic.prefix": "bq", "mode": "bulk", "table.whitelist": "",
                                              "query": "SELEC id FROM kafka_books"})
    r = cli("run", "badq", worker=worker)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "query: the database refused the query" in r.stderr and "syntax error" in r.stderr
