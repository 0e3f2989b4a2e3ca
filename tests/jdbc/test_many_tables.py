"""A JDBC source over many tables on a real SQLite file: one Spark job writes every table's topic (see
ingest/topics/many.py), each topic committed exactly once, a crash after the write or before it changing
nothing, and each topic's offsets following its rows as appends one at a time would number them."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from ingest.runtime.runner import MANY_TOPICS
from ingest.topics import TopicTable, list_topics
from tests.conftest import cli_here, write_worker
from tests.crash_kit import kill_at_each_step

TABLES = MANY_TOPICS + 2


def _setup(base: Path) -> tuple[Path, Path]:
    base.mkdir()
    db = base / "many.db"
    with sqlite3.connect(db) as con:
        for t in range(TABLES):
            con.execute(f"CREATE TABLE t{t:02d} (id INTEGER PRIMARY KEY, name TEXT)")
            # table t has t+1 rows (t00: one row), inserted out of id order
            con.executemany(f"INSERT INTO t{t:02d} VALUES (?, ?)", [(i, f"t{t}-{i}") for i in reversed(range(1, t + 2))])
    worker = write_worker(base / "worker.properties", base / "lake",
                          **{"value.converter": "org.apache.kafka.connect.json.JsonConverter",
                             "value.converter.schemas.enable": "false"})
    (base / "c.json").write_text(json.dumps({
        "name": "many", "connector.class": "io.confluent.connect.jdbc.JdbcSourceConnector", "tasks.max": "1",
        "connection.url": f"jdbc:sqlite:{db}", "mode": "incrementing", "incrementing.column.name": "id",
        "topic.prefix": "db-"}))
    made = cli_here("connectors", "create", str(base / "c.json"), worker=worker)
    assert made.returncode == 0, made.stderr
    return db, worker


def _run(worker: Path, crash: str | None = None) -> str:
    """A run's log: a CLI process when killed, else in this process (tests/conftest.py `run_here`)."""
    if crash:
        return kill_at_each_step(worker, "many", [crash])[crash]
    r = cli_here("run", "many", worker=worker)
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stderr


def _topics(lake: Path) -> dict[str, list[tuple[int, int, str]]]:
    out = {}
    for name in list_topics(str(lake)):
        rows = TopicTable(str(lake), name).read().orderBy("partition", "offset").collect()
        out[name] = [(r.partition, r.offset, json.loads(r.value)["name"]) for r in rows]
    return out


def _insert(db: Path) -> None:
    with sqlite3.connect(db) as con:
        for t in range(0, TABLES, 3):  # a second batch touches some of the tables
            con.execute(f"INSERT INTO t{t:02d} VALUES (100, 't{t}-100')")


@pytest.mark.parametrize("crash", ["convert", "write"])
def test_a_batch_over_many_tables_is_the_same_after_a_crash(tmp_path, crash):
    db, worker = _setup(tmp_path / "clean")
    assert f"{TABLES} of {TABLES} topics written together (1 Spark jobs" in _run(worker)
    expected = {f"db-t{t:02d}": [(0, i - 1, f"t{t}-{i}") for i in range(1, t + 2)] for t in range(TABLES)}
    assert _topics(tmp_path / "clean" / "lake") == expected  # offsets in id order, from 0, in every topic
    _insert(db)
    assert "topics written together" not in _run(worker)  # 4 topics: appended one by one
    for t in range(0, TABLES, 3):
        expected[f"db-t{t:02d}"].append((0, t + 1, f"t{t}-100"))
    assert _topics(tmp_path / "clean" / "lake") == expected

    db, worker = _setup(tmp_path / "crashed")
    _run(worker, crash)
    _run(worker)  # resumes the planned batch
    _insert(db)
    _run(worker, crash)
    _run(worker)
    assert _topics(tmp_path / "crashed" / "lake") == expected
    status = json.loads(cli_here("connectors", "status", "many", "--runs", "5", worker=worker).stdout)
    assert [r["batch_id"] for r in status["runs"] if r["state"] == "COMMITTED"][-2:] == [1, 2]
