"""Shared by the CDC tests: a database on the private MariaDB, a connector made with the CLI, runs (the killed
ones CLI processes, the others in the test's process), topic reads."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pymysql
import pytest

from connectors.mysql import binlog
from tests.conftest import cli_here, write_worker
from tests.runtime.helpers import topic_rows

BOOK_TABLE = """CREATE TABLE kafka_books (
    id          INT unsigned NOT NULL AUTO_INCREMENT,
    title       VARCHAR(150) NOT NULL,
    subtitle    VARCHAR(150) NOT NULL,
    published   DATE NOT NULL,
    PRIMARY KEY (id))"""
BOOK_ROWS = """INSERT INTO kafka_books (title, subtitle, published) VALUES
      ('Kafka Connect', 'Build and Run Data Pipelines', '2023-10-01'),
      ('Kafka The Definitive Guide',
       'Real-time Data and Stream Processing at Scale', '2017-07-07')"""


@pytest.fixture
def inventory(services):
    """The book's `inventory` database with kafka_books and its two rows, dropped afterwards."""
    db = Db(services).fresh("inventory")
    db(BOOK_TABLE, BOOK_ROWS)
    yield db
    db("DROP DATABASE IF EXISTS inventory")
    db.close()


def settings(services) -> dict:
    return dict(host=services["LAKECONNECT_TEST_MARIADB_HOST"], port=int(services["LAKECONNECT_TEST_MARIADB_PORT"]),
                user=services["LAKECONNECT_TEST_MARIADB_USER"], password=services["LAKECONNECT_TEST_MARIADB_PASSWORD"])


class Db:
    """A connection to the private MariaDB, autocommit, running statements as given."""

    def __init__(self, services, database: str | None = None):
        self.settings = settings(services)
        self.conn = pymysql.connect(**self.settings, autocommit=True)
        self.database = database

    def __call__(self, *statements: str) -> None:
        cur = self.conn.cursor()
        if self.database:
            cur.execute(f"USE `{self.database}`")
        for s in statements:
            cur.execute(s)

    def fresh(self, database: str) -> Db:
        self(f"DROP DATABASE IF EXISTS `{database}`", f"CREATE DATABASE `{database}`")
        self.database = database
        return self

    def close(self) -> None:
        self.conn.close()


def connector_config(services, **extra: str) -> dict[str, str]:
    """The book's mysql-debezium.json, with the private server's address and credentials."""
    s = settings(services)
    return {
        "connector.class": "io.debezium.connector.mysql.MySqlConnector",
        "tasks.max": "1",
        "key.converter": "org.apache.kafka.connect.json.JsonConverter",
        "key.converter.schemas.enable": "true",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "true",
        "database.hostname": s["host"],
        "database.port": str(s["port"]),
        "database.user": s["user"],
        "database.password": s["password"],
        "database.server.id": "10000",
        "topic.prefix": "dbserver1",
        "database.include.list": "inventory",
        "table.include.list": "inventory.kafka_books",
        "schema.history.internal.kafka.bootstrap.servers": "localhost:9092",
        "schema.history.internal.kafka.topic": "dbhistory.inventory",
        "include.schema.changes": "false",
        **extra,
    }


def create(base: Path, name: str, config: dict[str, str], **worker_extra: str) -> Path:
    """The connector `name` in a new lake under `base`; returns the worker file. Its trust and key stores'
    directories are allowed paths of the worker."""
    stores = [str(Path(config[k]).parent) for k in ("database.ssl.truststore", "database.ssl.keystore")
              if config.get(k)]
    if stores:
        worker_extra.setdefault("lake.allowed.paths", ",".join(sorted(set(stores))))
    (base / "lake").mkdir(parents=True, exist_ok=True)
    worker = write_worker(base / "worker.properties", base / "lake", **worker_extra)
    f = base / f"{name}.json"
    f.write_text(json.dumps({"name": name, "config": config}))
    r = cli_here("connectors", "create", str(f), worker=worker)
    assert r.returncode == 0, r.stderr
    return worker


def run(worker: Path, name: str):
    """A run that is not killed: in this process (tests/conftest.py `run_here` says why); its output."""
    r = cli_here("--debug", "run", name, worker=worker)
    assert r.returncode == 0, r.stdout + r.stderr
    return r


def records(lake: Path, topic: str) -> list[tuple[bytes | None, bytes | None]]:
    """(key, value) bytes of a topic in offset order (one partition, or sorted by partition then offset)."""
    return [(row[2], row[3]) for row in topic_rows(lake, topic)]


def payloads(lake: Path, topic: str) -> list[tuple[dict | None, dict | None]]:
    out = []
    for key, value in records(lake, topic):
        out.append((json.loads(key)["payload"] if key is not None else None,
                    json.loads(value)["payload"] if value is not None else None))
    return out


def offsets(worker: Path, name: str) -> list[dict]:
    r = cli_here("offsets", "list", name, worker=worker)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["offsets"]


def comparable(lake: Path, topic: str) -> list[tuple]:
    """A topic's records with the times a run takes from its clock left out (the events' processing time,
    and a snapshot's time): what two runs over the same binlog must agree on byte for byte otherwise."""
    out = []
    for partition, offset, key, value, headers in topic_rows(lake, topic):
        if value is not None:
            v = json.loads(value)
            payload = v.get("payload") or {}
            payload.pop("ts_ms", None)
            if payload.get("op") == "r" or ("ddl" in payload and payload["source"]["snapshot"] == "true"):
                payload["source"].pop("ts_ms", None)
            value = json.dumps(v, sort_keys=True)
        out.append((partition, offset, key, value, headers))
    return out


def comparable_offsets(worker: Path, name: str) -> list[dict]:
    found = offsets(worker, name)
    for entry in found:
        assert isinstance(entry["offset"].pop("ts_sec"), int)
    return found


def purge_binlog_through(db, *changes: str) -> list[str]:
    """Make `changes` in a binlog file of their own, then flush and purge until the server no longer has
    that file (MariaDB keeps a file while InnoDB may still need it for crash recovery); the files left."""
    cur = db.conn.cursor()
    db("FLUSH BINARY LOGS", *changes)
    changed_in = binlog.master_position(cur).file
    for _ in range(40):
        db("FLUSH BINARY LOGS")
        db(f"PURGE BINARY LOGS TO '{binlog.master_position(cur).file}'")
        kept = [name for name, _ in binlog.binary_logs(cur)]
        if changed_in not in kept:
            _settled(cur)
            return kept
        time.sleep(0.25)
    pytest.fail(f"MariaDB kept {changed_in} through 40 purges")


def _settled(cur) -> None:
    """Wait for the newest binlog file's own checkpoint event. After a flush MariaDB writes a
    Binlog_checkpoint into the new file once the old file's transactions are durable, some milliseconds
    later: until then the binlog's end moves (by 45 bytes) with no change made, and two connectors
    snapshotting either side of it save different positions."""
    newest = binlog.master_position(cur).file
    for _ in range(200):
        cur.execute(f"SHOW BINLOG EVENTS IN '{newest}'")
        if any(row[2] == "Binlog_checkpoint" and str(row[5]) == newest for row in cur.fetchall()):
            return
        time.sleep(0.05)
    pytest.fail(f"MariaDB wrote no checkpoint event into {newest} in 10 s")
