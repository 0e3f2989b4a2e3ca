"""The JDBC source's two opt-in extras, on SQLite, the project's private MariaDB and PostgreSQL: late
rows (`lakeconnect.late.rows.window.ms`: a row committed late with a timestamp older than the last
offset is still caught, and nothing is emitted twice) and delete detection (`lakeconnect.detect.deletes`:
a delete record and a tombstone for each deleted key). Both are killed at every step of a batch in turn
and compared with a run that never crashed. The killed runs are CLI processes; the others are made in
this process (tests/conftest.py `run_here`)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
import sqlalchemy as sa

from ingest.runtime.faults import SOURCE_STEPS
from tests.conftest import cli_here, run_here, write_worker
from tests.crash_kit import kill_at_each_step
from tests.runtime.helpers import topic_commits, topic_rows

DDL = {
    "sqlite": "CREATE TABLE items (id INTEGER PRIMARY KEY AUTOINCREMENT, name VARCHAR(50) NOT NULL, "
              "updated DATETIME NOT NULL)",
    "mariadb": "CREATE TABLE items (id INT NOT NULL AUTO_INCREMENT PRIMARY KEY, name VARCHAR(50) NOT NULL, "
               "updated DATETIME(3) NOT NULL)",
    "postgres": "CREATE TABLE items (id SERIAL PRIMARY KEY, name VARCHAR(50) NOT NULL, updated TIMESTAMP NOT NULL)",
}
FIRST = "INSERT INTO items (name, updated) VALUES ('a', '2022-06-26 09:00:00'), ('b', '2022-06-26 09:00:00')"
SECOND = "INSERT INTO items (name, updated) VALUES ('c', '2022-06-26 10:00:00')"
# A transaction that began before 'c' commits after it: its row is older than the offset (10:00), inside
# the one-hour window. 'e' is older than the window: out of reach, as documented. 'a' changes, 'b' goes.
THIRD = ["INSERT INTO items (name, updated) VALUES ('d', '2022-06-26 09:30:00')",
         "INSERT INTO items (name, updated) VALUES ('e', '2022-06-26 08:00:00')",
         "UPDATE items SET name = 'a2', updated = '2022-06-26 10:30:00' WHERE name = 'a'",
         "DELETE FROM items WHERE name = 'b'"]
CONFIG = {"topic.prefix": "x-", "mode": "timestamp+incrementing", "incrementing.column.name": "id",
          "timestamp.column.name": "updated", "lakeconnect.late.rows.window.ms": "3600000",
          "lakeconnect.detect.deletes": "true",
          # A transform that needs a field delete records lack stays off them by their header.
          "transforms": "ts", "transforms.ts.type": "org.apache.kafka.connect.transforms.TimestampConverter$Value",
          "transforms.ts.field": "updated", "transforms.ts.format": "yyyy-MM-dd HH:mm:ss",
          "transforms.ts.target.type": "string", "transforms.ts.predicate": "deleted", "transforms.ts.negate": "true",
          "predicates": "deleted",
          "predicates.deleted.type": "org.apache.kafka.connect.transforms.predicates.HasHeaderKey",
          "predicates.deleted.name": "__deleted"}
TOPIC = "x-items"


class Database:
    """A fresh database (MariaDB), schema (PostgreSQL) or file (SQLite) holding the `items` table."""

    def __init__(self, kind: str, tmp_path: Path, services: dict | None):
        self.kind, self.schema, self.admin = kind, None, None
        self.name = f"lc_extras_{uuid.uuid4().hex[:10]}"
        if kind == "sqlite":
            path = tmp_path / f"{self.name}.db"
            self.jdbc, self.engine, self.creds = f"jdbc:sqlite:{path}", sa.create_engine(f"sqlite:///{path}"), {}
        elif kind == "mariadb":
            self.admin = sa.create_engine(services["LAKECONNECT_TEST_MARIADB_URL"])
            with self.admin.begin() as c:
                c.exec_driver_sql(f"CREATE DATABASE {self.name}")
            self.jdbc = services["LAKECONNECT_TEST_MARIADB_JDBC"].rsplit("/", 1)[0] + f"/{self.name}"
            self.engine = sa.create_engine(services["LAKECONNECT_TEST_MARIADB_URL"].rsplit("/", 1)[0] + f"/{self.name}")
            self.creds = {"connection.user": "root", "connection.password": ""}
        else:
            self.admin = sa.create_engine(services["LAKECONNECT_TEST_POSTGRES_URL"])
            with self.admin.begin() as c:
                c.exec_driver_sql(f"CREATE SCHEMA {self.name}")
            self.jdbc, self.schema = services["LAKECONNECT_TEST_POSTGRES_JDBC"], self.name
            self.engine = sa.create_engine(services["LAKECONNECT_TEST_POSTGRES_URL"],
                                           connect_args={"options": f"-csearch_path={self.name}"})
            self.creds = {"connection.user": services.get("LAKECONNECT_TEST_POSTGRES_USER", ""),
                          "connection.password": services.get("LAKECONNECT_TEST_POSTGRES_PASSWORD", "")}
        self.sql(DDL[kind], FIRST)

    def sql(self, *statements: str) -> None:
        with self.engine.begin() as c:
            for s in statements:
                c.exec_driver_sql(s)

    def drop(self) -> None:
        self.engine.dispose()
        if self.admin is not None:
            with self.admin.begin() as c:
                c.exec_driver_sql(f"DROP DATABASE {self.name}" if self.kind == "mariadb"
                                  else f"DROP SCHEMA {self.name} CASCADE")
            self.admin.dispose()

    def connector(self, base: Path, name: str, config: dict) -> Path:
        """A lake and worker under `base` with connector `name` created through the CLI."""
        (base / "lake").mkdir(parents=True)
        worker = write_worker(base / "worker.properties", base / "lake",
                              **{"key.converter": "org.apache.kafka.connect.json.JsonConverter",
                                 "value.converter": "org.apache.kafka.connect.json.JsonConverter"})
        f = base / f"{name}.json"
        f.write_text(json.dumps({"name": name, "config": {
            "connector.class": "io.confluent.connect.jdbc.JdbcSourceConnector", "connection.url": self.jdbc,
            **self.creds, "table.whitelist": "items", **({"schema.pattern": self.schema} if self.schema else {}),
            **config}}))
        r = cli_here("connectors", "create", str(f), worker=worker)
        assert r.returncode == 0, r.stderr
        return worker


@pytest.fixture(params=["sqlite", "mariadb", "postgres"])
def make_db(request, tmp_path):
    services = None if request.param == "sqlite" else request.getfixturevalue("services")
    made = []

    def make(tag: str) -> Database:
        made.append(Database(request.param, tmp_path / tag, services) if request.param != "sqlite"
                     else Database("sqlite", _mkdir(tmp_path / tag), None))
        return made[-1]

    yield make
    for db in made:
        db.drop()


def _mkdir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def _run(worker: Path, name: str = "x", crash: str | None = None) -> None:
    if crash is None:
        run_here(worker, name)
        return
    kill_at_each_step(worker, name, [crash])


def _events(lake: Path) -> list[tuple]:
    """(key payload, value payload) of each record of the topic (one partition), in offset order, read
    from the topic's table as a consumer would see the JsonConverter bytes."""
    def payload(data):
        return data and json.loads(data)["payload"]

    return [(payload(key), payload(value)) for _, _, key, value, _ in topic_rows(lake, TOPIC)]


def _offsets(worker: Path, name: str = "x") -> list[dict]:
    """The connector's offsets without the key snapshot (the batch's clock time, different each run)."""
    offsets = json.loads(cli_here("offsets", "list", name, worker=worker).stdout)["offsets"]
    return [{k: v for k, v in o["offset"].items() if k != "lakeconnect.keys.snapshot"} for o in offsets]


def _first_two_batches(db: Database, worker: Path) -> None:
    _run(worker)
    db.sql(SECOND)
    _run(worker)
    db.sql(*THIRD)


def _clean_run(tmp_path: Path, make_db) -> tuple:
    """Four batches that never crash; checks what they give and returns (topic rows, offsets)."""
    clean = make_db("clean")
    worker = clean.connector(tmp_path / "clean", "x", CONFIG)
    _first_two_batches(clean, worker)
    _run(worker)
    _run(worker)  # nothing new: the window is checked again and yields nothing
    events = _events(tmp_path / "clean" / "lake")
    names = [(v or {}).get("name") for _, v in events]
    # a, b; c; then d (late, 09:30) and a2 (10:30) in timestamp order; b's delete record and tombstone.
    assert names == ["a", "b", "c", "d", "a2", None, None], events
    assert events[5] == ({"id": 2}, {"id": 2, "__deleted": True})
    assert events[6] == ({"id": 2}, None)
    assert [k for k, _ in events[:5]] == [{"id": 1}, {"id": 2}, {"id": 3}, {"id": 4}, {"id": 1}]
    assert events[3][1]["updated"] == "2022-06-26 09:30:00"
    headers = [json.loads(row[4]) for row in topic_rows(tmp_path / "clean" / "lake", TOPIC)]
    assert headers[:5] == [[]] * 5 and headers[5] == headers[6] != []
    assert "__deleted" in json.dumps(headers[5])
    assert _offsets(worker) == [{"incrementing": 1, "timestamp": 1656239400000, "timestamp_nanos": 0}]
    return topic_rows(tmp_path / "clean" / "lake", TOPIC), _offsets(worker)


@pytest.mark.parametrize("make_db", ["mariadb", "postgres"], indirect=True)
def test_late_rows_and_deletes(tmp_path, make_db):
    _clean_run(tmp_path, make_db)


@pytest.mark.parametrize("make_db", ["sqlite"], indirect=True)
def test_late_rows_and_deletes_exactly_once_through_crashes(tmp_path, make_db):
    """Killed after every step of the batch that catches the late row and the delete, each run resuming
    what the previous one left: the same records and offsets as the clean run. On SQLite only: the
    resume is the runtime's and the extras' SQL is the same on every database, which
    test_late_rows_and_deletes runs on MariaDB and PostgreSQL and test_source_crash_services kills on
    both (about 7 minutes of CI saved)."""
    expected = _clean_run(tmp_path, make_db)
    crashed = make_db("crashed")
    worker = crashed.connector(tmp_path / "crashed", "x", CONFIG)
    _first_two_batches(crashed, worker)
    for step in SOURCE_STEPS:  # the same batch, resumed and killed again after each step in turn
        _run(worker, crash=step)
    _run(worker)  # the batch after: nothing new
    assert (topic_rows(tmp_path / "crashed" / "lake", TOPIC), _offsets(worker)) == expected
    assert topic_commits(tmp_path / "crashed" / "lake", TOPIC) == topic_commits(tmp_path / "clean" / "lake", TOPIC)


@pytest.mark.parametrize("make_db", ["sqlite"], indirect=True)
def test_without_the_window_a_late_row_is_lost(tmp_path, make_db):
    """The control: Confluent's behaviour, which the window exists to fix."""
    db = make_db("plain")
    worker = db.connector(tmp_path / "plain", "x", {k: v for k, v in CONFIG.items()
                                                    if not k.startswith(("lakeconnect.", "transforms", "predicates"))})
    _first_two_batches(db, worker)
    _run(worker)
    names = [v["name"] for _, v in _events(tmp_path / "plain" / "lake")]
    assert names == ["a", "b", "c", "a2"]
