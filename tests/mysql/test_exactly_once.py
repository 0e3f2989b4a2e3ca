"""The CDC source killed after every step of a snapshot batch and of a binlog batch, each later run
resuming the batch and killed one step further on, compared with a connector that never crashed reading
the same server: the same records at the same offsets, the same committed offsets, the same commits."""

from __future__ import annotations

import json

import pytest
from deltalake import DeltaTable

from ingest.runtime.faults import SOURCE_STEPS
from tests.crash_kit import kill_at_each_step
from tests.mysql._cdc import (
    BOOK_ROWS, BOOK_TABLE, Db, comparable, comparable_offsets, connector_config, create, records,
    run,
)
from tests.runtime.helpers import topic_commits

DB = "lc_cdc_crash"
BOOKS = f"crash.{DB}.kafka_books"
AUTHORS = f"crash.{DB}.authors"
TRANSACTIONS, SCHEMA_CHANGES = "crash.transaction", "crash"
CHANGES = (
    "INSERT INTO kafka_books (title, subtitle, published) VALUES ('Book 3', 's3', '2020-01-03'), "
    "('Book 4', 's4', '2020-01-04')",
    "UPDATE kafka_books SET published = '2022-09-23' WHERE id = 2",
    "UPDATE kafka_books SET id = 20 WHERE id = 3",  # a key change: delete, tombstone, create
    "DELETE FROM kafka_books WHERE id = 1",
    "INSERT INTO authors VALUES (2, 'Gwen')",
    "INSERT INTO untracked VALUES (1)",
)
LATE = ("INSERT INTO kafka_books (title, subtitle, published) VALUES ('Late', 's', '2020-02-02')",)


@pytest.fixture
def db(services):
    db = Db(services).fresh(DB)
    db(BOOK_TABLE, BOOK_ROWS, "CREATE TABLE authors (id INT PRIMARY KEY, name VARCHAR(40))",
       "INSERT INTO authors VALUES (1, 'Mickael')", "CREATE TABLE untracked (id INT PRIMARY KEY)")
    yield db
    db(f"DROP DATABASE IF EXISTS {DB}")
    db.close()


def test_a_long_running_worker_killed_at_every_step_of_a_binlog_batch(tmp_path, services, db):
    """The binlog batch, killed after each step in a `lakeconnect worker` running the batch a delegating
    `lakeconnect run` asked of it; the snapshot before and the run after in this process."""
    config = connector_config(services, **{"topic.prefix": "crash", "database.include.list": DB,
                                            "table.include.list": f"{DB}.kafka_books,{DB}.authors"})
    clean = create(tmp_path / "clean", "cdc", config)
    crashed = create(tmp_path / "crashed", "cdc", {**config, "database.server.id": "10002"})
    run(clean, "cdc")
    run(crashed, "cdc")
    db(*CHANGES)
    run(clean, "cdc")
    kill_at_each_step(crashed, "cdc", SOURCE_STEPS, batch=2, through_worker=True)
    run(crashed, "cdc")
    for topic in (BOOKS, AUTHORS):
        assert comparable(tmp_path / "crashed" / "lake", topic) == comparable(tmp_path / "clean" / "lake", topic)
        assert topic_commits(tmp_path / "crashed" / "lake", topic) == topic_commits(tmp_path / "clean" / "lake", topic)
    assert comparable_offsets(crashed, "cdc") == comparable_offsets(clean, "cdc")


def test_killed_at_every_step_of_a_snapshot_and_a_binlog_batch(tmp_path, services, db):
    # with Debezium's transaction topic and blocks, and the snapshot's schema change events
    config = connector_config(services, **{"topic.prefix": "crash", "database.include.list": DB,
                                            "table.include.list": f"{DB}.kafka_books,{DB}.authors",
                                            "provide.transaction.metadata": "true", "include.schema.changes": "true"})
    clean = create(tmp_path / "clean", "cdc", config)
    crashed = create(tmp_path / "crashed", "cdc", {**config, "database.server.id": "10001"})

    run(clean, "cdc")  # the snapshot
    kill_at_each_step(crashed, "cdc", SOURCE_STEPS, batch=1)
    db(*CHANGES)
    run(clean, "cdc")
    # Changes made after the crashed run planned its batch belong to the next batch.
    kill_at_each_step(crashed, "cdc", SOURCE_STEPS, batch=2, between=lambda: db(*LATE))
    run(clean, "cdc")
    r = run(crashed, "cdc")
    # the late row, and its transaction's BEGIN and END
    assert "batch 3 committed 3 records" in r.stdout + r.stderr, r.stdout + r.stderr

    for topic in (BOOKS, AUTHORS, TRANSACTIONS, SCHEMA_CHANGES):
        expected = comparable(tmp_path / "clean" / "lake", topic)
        assert comparable(tmp_path / "crashed" / "lake", topic) == expected
        assert topic_commits(tmp_path / "crashed" / "lake", topic) == topic_commits(tmp_path / "clean" / "lake", topic)
    assert comparable_offsets(crashed, "cdc") == comparable_offsets(clean, "cdc")
    # 2 snapshot rows; c, c, u, d+tombstone+c (key change), d+tombstone; then the late c.
    ops = [None if v is None else json.loads(v)["payload"]["op"]
           for _, v in records(tmp_path / "crashed" / "lake", BOOKS)]
    assert ops == ["r", "r", "c", "c", "u", "d", None, "c", "d", None, "c"]
    # Debezium's headers on the key change: the delete and its tombstone name the new key, the create the old.
    rows = DeltaTable(str(tmp_path / "crashed" / "lake" / "topics" / BOOKS)).to_pyarrow_table(
        columns=["offset", "headers"]).to_pylist()
    text = lambda v: v if isinstance(v, str) else bytes(v).decode()  # noqa: E731
    named = [[(e["key"], text(e["value"])) for e in r["headers"] or []] for r in sorted(rows, key=lambda r: r["offset"])]
    assert named[5:8] == [[("__debezium.newkey", '{"id":20}')]] * 2 + [[("__debezium.oldkey", '{"id":3}')]], named
    assert not any(named[:5] + named[8:]), named
    assert len(records(tmp_path / "crashed" / "lake", AUTHORS)) == 2
    # the snapshot's DDL: the server's charset, a DROP TABLE of each of the database's three tables, the
    # database's DROP, CREATE and USE, a CREATE TABLE of each
    ddl = [json.loads(v)["payload"]["ddl"] for _, v in records(tmp_path / "crashed" / "lake", SCHEMA_CHANGES)]
    assert len(ddl) == 1 + 3 + 3 + 3 and ddl[4] == f"DROP DATABASE IF EXISTS `{DB}`", ddl
    # a BEGIN and an END of each of the seven transactions; the key change's two events in the sixth's count
    marks = [json.loads(v)["payload"] for _, v in records(tmp_path / "crashed" / "lake", TRANSACTIONS)]
    assert [m["status"] for m in marks] == ["BEGIN", "END"] * 7, marks
    assert [m["event_count"] for m in marks[1::2]] == [2, 1, 2, 1, 1, 0, 1], marks
