"""The snapshot modes not covered elsewhere: `never` reads the binlog from its oldest file (no snapshot),
`initial_only` takes the snapshot and then nothing more, `no_data` (schema_only) starts at the binlog's
end, and `recovery` (schema_only_recovery) resumes from its offsets."""

from __future__ import annotations

import uuid

import pytest

from tests.mysql._cdc import Db, connector_config, create, payloads, run


@pytest.fixture
def db(services):
    name = f"lc_cdc_modes_{uuid.uuid4().hex[:8]}"  # `never` reads the whole binlog: a name no earlier run used
    db = Db(services).fresh(name)
    db("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20))", "INSERT INTO t VALUES (1, 'a'), (2, 'b')")
    yield db
    db(f"DROP DATABASE IF EXISTS {name}")
    db.close()


@pytest.mark.parametrize(("mode", "first", "later"), [
    ("never", [(1, "c"), (2, "c")], [(3, "c")]),
    ("initial_only", [(1, "r"), (2, "r")], []),
    ("no_data", [], [(3, "c")]),
    ("recovery", [], [(3, "c")]),
])
def test_snapshot_modes(tmp_path, services, db, mode, first, later):
    topic = f"modes.{db.database}.t"
    worker = create(tmp_path, "cdc", connector_config(services, **{
        "topic.prefix": "modes", "database.include.list": db.database, "table.include.list": f"{db.database}.t",
        "snapshot.mode": mode}))
    run(worker, "cdc")
    lake = tmp_path / "lake"
    seen = lambda: [(k["id"], v["op"]) for k, v in payloads(lake, topic)] if (lake / "topics" / topic).exists() \
        else []  # noqa: E731
    assert seen() == first
    db("INSERT INTO t VALUES (3, 'c')")
    run(worker, "cdc")
    assert seen() == first + later


def test_tables_with_the_same_columns_keep_their_own_topics(tmp_path, services, db):
    """Row events are told apart by table, not by column layout: two tables of identical columns changed
    in one batch each get their own events (their rows once all went to the first table's topic)."""
    db("CREATE TABLE u (id INT PRIMARY KEY, v VARCHAR(20))", "INSERT INTO u VALUES (1, 'x')")
    worker = create(tmp_path, "cdc", connector_config(services, **{
        "topic.prefix": "same", "database.include.list": db.database, "table.include.list": ""}))
    run(worker, "cdc")
    db("UPDATE t SET v = 'changed' WHERE id = 2", "UPDATE u SET v = 'changed' WHERE id = 1",
       "INSERT INTO u VALUES (5, 'new')")
    run(worker, "cdc")
    lake = tmp_path / "lake"
    got = {table: [(k["id"], v["op"], v["source"]["table"], v["after"]["v"]) for k, v in
                   payloads(lake, f"same.{db.database}.{table}")] for table in ("t", "u")}
    assert got == {"t": [(1, "r", "t", "a"), (2, "r", "t", "b"), (2, "u", "t", "changed")],
                   "u": [(1, "r", "u", "x"), (1, "u", "u", "changed"), (5, "c", "u", "new")]}


@pytest.mark.parametrize(("skipped", "expected"), [
    ("u,t", [(3, "c"), (2, "d"), (2, None), (20, "c"), (3, "d"), (3, None)]),
    ("c,d,t", [(1, "u")]),  # a key change is a delete, its tombstone and a create: all skipped here
])
def test_skipped_operations_drop_records_as_debeziums_dispatcher_does(tmp_path, services, db, skipped, expected):
    topic = f"skip.{db.database}.t"
    worker = create(tmp_path, "cdc", connector_config(services, **{
        "topic.prefix": "skip", "database.include.list": db.database, "table.include.list": f"{db.database}.t",
        "skipped.operations": skipped}))
    run(worker, "cdc")
    db("INSERT INTO t VALUES (3, 'c')", "UPDATE t SET v = 'A' WHERE id = 1", "UPDATE t SET id = 20 WHERE id = 2",
       "DELETE FROM t WHERE id = 3")
    run(worker, "cdc")
    got = [(k["id"], v["op"] if v else None) for k, v in payloads(tmp_path / "lake", topic)]
    assert got == [(1, "r"), (2, "r")] + expected
