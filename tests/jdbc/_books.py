"""Shared by the JDBC source tests: the book's kafka_books table on MariaDB and PostgreSQL, connectors
created through the CLI, and two scenarios every database runs the same way:

- a connector killed after each step of its second batch in turn, compared with a run that never
  crashed (`check_crash_at_every_step`);
- table and column names that carry quotes and SQL, and tracking-column settings that try to
  (`ODD_*`, `INJECTION`).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ingest.runtime.faults import SOURCE_STEPS
from tests.conftest import cli, cli_here, run_here, write_worker
from tests.crash_kit import kill_at_each_step
from tests.runtime.helpers import topic_commits, topic_rows

# The book's DDL and rows (ch. 5), with the book's timestamp value made explicit.
MARIADB_BOOKS = """
CREATE TABLE kafka_books (
    id          INT unsigned NOT NULL AUTO_INCREMENT,
    title       VARCHAR(150) NOT NULL,
    subtitle    VARCHAR(150) NOT NULL,
    published   DATE NOT NULL,
    timestamp   DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP,
    PRIMARY KEY  (id)
)
"""
POSTGRES_BOOKS = """
CREATE TABLE kafka_books (
    id          SERIAL PRIMARY KEY,
    title       VARCHAR(150) NOT NULL,
    subtitle    VARCHAR(150) NOT NULL,
    published   DATE NOT NULL,
    timestamp   TIMESTAMP NOT NULL DEFAULT now()
)
"""
ROWS = ("INSERT INTO kafka_books (title, subtitle, published, timestamp) VALUES "
        "('Kafka Connect', 'Build and Run Data Pipelines', '2023-10-01', '2022-06-26 09:04:50'), "
        "('Kafka The Definitive Guide', 'Real-time Data and Stream Processing at Scale', '2017-07-07', "
        "'2022-06-26 09:04:50')")


def create_books(engine, kind: str) -> None:
    """(Re)create the book's table with its two rows, ids from 1 again."""
    with engine.begin() as c:
        c.exec_driver_sql("DROP TABLE IF EXISTS kafka_books")
        c.exec_driver_sql(MARIADB_BOOKS if kind == "mariadb" else POSTGRES_BOOKS)
        c.exec_driver_sql(ROWS)


def execute(engine, *statements: str) -> None:
    with engine.begin() as c:
        for statement in statements:
            c.exec_driver_sql(statement)


def create_connector(base: Path, database, name: str, config: dict) -> Path:
    """A JSON-converter connector on the `database` fixture's database, its lake under `base`; the worker file."""
    kind, jdbc, _, schema, services = database
    (base / "lake").mkdir(parents=True)
    worker = write_worker(base / "worker.properties", base / "lake",
                          **{"value.converter": "org.apache.kafka.connect.json.JsonConverter"})
    creds = {"connection.user": "root", "connection.password": ""} if kind == "mariadb" else {
        "connection.user": services.get("LAKECONNECT_TEST_POSTGRES_USER", ""),
        "connection.password": services.get("LAKECONNECT_TEST_POSTGRES_PASSWORD", "")}
    extra = {"schema.pattern": schema} if schema else {}
    f = base / f"{name}.json"
    f.write_text(json.dumps({"name": name, "config": {
        "connector.class": "io.confluent.connect.jdbc.JdbcSourceConnector", "tasks.max": "1",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter", "value.converter.schemas.enable": "true",
        "connection.url": jdbc, **creds, "table.whitelist": "kafka_books", **extra, **config}}))
    r = cli_here("connectors", "create", str(f), worker=worker)
    assert r.returncode == 0, r.stderr
    return worker


def consume(worker: Path, topic: str) -> list[dict]:
    r = cli_here("topics", "consume", topic, "--from-beginning", worker=worker)
    assert r.returncode == 0, r.stderr
    return [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]


def offsets(worker: Path, name: str) -> list[dict]:
    r = cli_here("offsets", "list", name, worker=worker)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["offsets"]


def run(worker: Path, name: str, **env: str):
    """A run that is not killed: in this process, unless it needs environment variables of its own."""
    r = cli("run", name, worker=worker, env=env) if env else cli_here("run", name, worker=worker)
    assert r.returncode == 0, r.stderr
    return r


def payloads(lake: Path, topic: str) -> list[dict]:
    """The JSON payloads of a topic, in offset order (straight from its Delta table)."""
    return [json.loads(row[3])["payload"] for row in topic_rows(lake, topic)]


# --- a crash after every step of a batch ---------------------------------------------------------------

SECOND_BATCH = (
    "INSERT INTO kafka_books (title, subtitle, published, timestamp) VALUES "
    "('Book 3', 's3', '2020-01-03', '2022-07-01 00:00:00'), ('Book 4', 's4', '2020-01-04', '2022-07-01 00:00:01'), "
    "('Book 5', 's5', '2020-01-05', '2022-07-01 00:00:02')",
    # Sets the timestamp itself (MariaDB's ON UPDATE would take the clock), forward past the new rows'.
    "UPDATE kafka_books SET title = 'Kafka Connect, 2nd edition', timestamp = '2022-07-02 00:00:00' WHERE id = 1",
)
LATE_BOOK = ("INSERT INTO kafka_books (title, subtitle, published, timestamp) VALUES "
             "('Late book', 's6', '2020-01-06', '2022-08-01 00:00:00')")
"""Inserted while the second batch is interrupted: past its planned high-water mark (id 5, 2022-07-02),
so only the third batch reads it."""

TITLES = {1: "Kafka Connect", 2: "Kafka The Definitive Guide", 3: "Book 3", 4: "Book 4", 5: "Book 5",
          6: "Late book"}
SECOND_EDITION = (1, "Kafka Connect, 2nd edition")


def _books(*ids: int) -> list[tuple[int, str]]:
    return [(i, TITLES[i]) for i in ids]


_LATE_MS = int(dt.datetime(2022, 8, 1, tzinfo=dt.timezone.utc).timestamp() * 1000)
BULK_POLLED = "lakeconnect.bulk.polled.ms"


@dataclass(frozen=True)
class CrashMode:
    """One mode's settings, and what its three batches must give."""

    config: dict[str, str]
    books: list[tuple[int, str]]
    """(id, title) of every record of the three batches, in topic order."""
    offset: dict[str, int] | None
    """The connector's offset after the third batch (None: bulk's poll time)."""
    third: int
    """Records of the third batch."""
    late_after: str
    """The step after whose crash LATE_BOOK is inserted: right after the plan for the incremental modes;
    a bulk batch has no range (it copies the table as it is when written), so after its write."""


CRASH_MODES = {
    "bulk": CrashMode({"mode": "bulk", "poll.interval.ms": "0"},
                      _books(1, 2) + [SECOND_EDITION] + _books(2, 3, 4, 5) + [SECOND_EDITION] + _books(2, 3, 4, 5, 6),
                      None, 6, "write"),
    "incrementing": CrashMode({"mode": "incrementing", "incrementing.column.name": "id"},
                              _books(1, 2, 3, 4, 5, 6), {"incrementing": 6}, 1, "plan"),
    "timestamp": CrashMode({"mode": "timestamp", "timestamp.column.name": "timestamp"},
                           _books(1, 2, 3, 4, 5) + [SECOND_EDITION] + _books(6),
                           {"timestamp": _LATE_MS, "timestamp_nanos": 0}, 1, "plan"),
    "timestamp+incrementing": CrashMode({"mode": "timestamp+incrementing", "incrementing.column.name": "id",
                                         "timestamp.column.name": "timestamp"},
                                        _books(1, 2, 3, 4, 5) + [SECOND_EDITION] + _books(6),
                                        {"incrementing": 6, "timestamp": _LATE_MS, "timestamp_nanos": 0}, 1,
                                        "plan"),
}
CRASH_CONNECTOR = "c"
CRASH_TOPIC = "c-kafka_books"


@dataclass(frozen=True)
class Books:
    """A connector named CRASH_CONNECTOR on a fresh kafka_books table, with its own lake."""

    lake: Path
    worker: Path
    sql: Callable[[Sequence[str]], None]


def _state(books: Books) -> tuple[list[tuple], list[dict], int]:
    found = offsets(books.worker, CRASH_CONNECTOR)
    for entry in found:  # bulk: the poll time differs between two runs; its presence does not
        if BULK_POLLED in entry["offset"]:
            assert isinstance(entry["offset"][BULK_POLLED], int), entry
            entry["offset"][BULK_POLLED] = "<poll time>"
    return topic_rows(books.lake, CRASH_TOPIC), found, topic_commits(books.lake, CRASH_TOPIC)


def check_crash_at_every_step(start: Callable[[str, dict[str, str]], Books], mode: str, *,
                              through_worker: bool = False) -> None:
    """Three batches (the book's rows; SECOND_BATCH; LATE_BOOK) in a run that never crashed, then the same
    on a fresh table and lake with the second batch killed after each step in turn (every later run
    resumes it and is killed one step further on) and a last clean run: the same records with the
    same offsets, the same connector offsets and the same number of topic commits. The killed runs are CLI
    processes; the others are made in this process (tests/conftest.py `run_here`).

    `start(tag, config)` makes the fresh table and the connector (CRASH_CONNECTOR, config on top of
    CrashMode.config). `through_worker`: the killed processes are long-running workers (tests/crash_kit.py)."""
    spec = CRASH_MODES[mode]
    config = {"topic.prefix": CRASH_TOPIC.removesuffix("kafka_books"), **spec.config}

    clean = start("clean", config)
    run_here(clean.worker, CRASH_CONNECTOR)
    clean.sql(SECOND_BATCH)
    run_here(clean.worker, CRASH_CONNECTOR)
    clean.sql([LATE_BOOK])
    run_here(clean.worker, CRASH_CONNECTOR)
    expected = _state(clean)
    assert [(p["id"], p["title"]) for p in payloads(clean.lake, CRASH_TOPIC)] == spec.books
    assert [r[1] for r in expected[0]] == list(range(len(spec.books)))  # topic offsets 0..n-1, one partition
    assert [e["offset"] for e in expected[1]] == [spec.offset or {BULK_POLLED: "<poll time>"}]
    assert expected[2] == 3

    crashed = start("crashed", config)
    run_here(crashed.worker, CRASH_CONNECTOR)
    crashed.sql(SECOND_BATCH)
    kill_at_each_step(crashed.worker, CRASH_CONNECTOR, SOURCE_STEPS, batch=2, through_worker=through_worker,
                      after_each=lambda step: crashed.sql([LATE_BOOK]) if step == spec.late_after else None)
    (report,) = run_here(crashed.worker, CRASH_CONNECTOR)
    assert (report.batch_id, report.records) == (3, spec.third), report.summary()
    assert _state(crashed) == expected


# --- names that carry SQL ------------------------------------------------------------------------------

INJECTION = "id; DROP TABLE kafka_books"
"""A tracking-column setting that tries to inject SQL: refused, as a column the table does not have."""
INJECTING_CONFIGS = (
    ("bad-inc", {"mode": "incrementing", "incrementing.column.name": INJECTION}, "incrementing.column.name"),
    ("bad-ts", {"mode": "timestamp", "timestamp.column.name": INJECTION}, "timestamp.column.name"),
)
"""(connector, config, the key its error must name) on kafka_books."""


def odd_names(quote: str) -> tuple[str, str, str, str]:
    """(table, id, title, published) names holding the dialect's identifier quote, a semicolon and SQL."""
    return (f"books{quote}; DROP TABLE kafka_books; --", f"id{quote}; DROP TABLE kafka_books; --",
            f"title's {quote}name{quote}", f"published{quote} --")


ODD_TITLES = ("O'Reilly \"quoted\"; DROP TABLE kafka_books; --", "`back`ticks`")


def create_odd_table(sql: Callable[[Sequence[str]], None], quote: str, id_type: str) -> None:
    """The odd table, created legitimately with quoted identifiers, with two rows (ids 1 and 2)."""
    table, ident, title, published = (quote + n.replace(quote, quote * 2) + quote for n in odd_names(quote))
    sql([f"CREATE TABLE {table} ({ident} {id_type} PRIMARY KEY, {title} VARCHAR(100) NOT NULL, "
         f"{published} DATE NOT NULL)",
         f"INSERT INTO {table} ({ident}, {title}, {published}) VALUES "
         f"(1, {_literal(ODD_TITLES[0])}, '2020-01-02'), (2, {_literal(ODD_TITLES[1])}, '2021-03-04')"])


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


ODD_CONFIG = {"mode": "incrementing", "topic.prefix": "odd-",
              "transforms": "route", "transforms.route.type": "org.apache.kafka.connect.transforms.RegexRouter",
              "transforms.route.regex": "odd-.*", "transforms.route.replacement": "odd-books"}
"""Copies the odd table (name it in table.whitelist, its id in incrementing.column.name) to topic
odd-books: a topic name cannot hold the table's quotes and spaces."""


def check_odd_copy(lake: Path, quote: str) -> None:
    _, ident, title, published = odd_names(quote)
    assert payloads(lake, "odd-books") == [{ident: 1, title: ODD_TITLES[0], published: 18263},
                                           {ident: 2, title: ODD_TITLES[1], published: 18690}]


def check_refused(r, key: str) -> None:
    """An injection attempt is a config error naming its key (exit 2), not a crash."""
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr
    assert key in r.stderr and INJECTION in r.stderr, r.stderr
