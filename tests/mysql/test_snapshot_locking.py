"""Snapshots as Debezium takes them on MySQL, forced on the private MariaDB with
lakeconnect.snapshot.position=binlog_status: each snapshot.locking.mode (minimal, extended, none) and the
table read locks taken where the global read lock is refused (RDS and Aurora refuse it; here a session
holding a write lock on another table makes it time out, as a long write does in production).

For each: the statements the server received, in order (its general log); writes made while the snapshot
runs are each in the snapshot or in the stream after it, once; killed after every step of the snapshot
batch, the connector writes what one that never crashed writes, and no lock outlives a killed run."""

from __future__ import annotations

import threading

import pymysql
import pytest

from connectors.mysql import binlog, catalog
from ingest.runtime.faults import SOURCE_STEPS
from tests.crash_kit import kill_at_each_step
from tests.mysql._cdc import (
    Db, comparable, comparable_offsets, connector_config, create, payloads, purge_binlog_through,
    run,
)
from tests.runtime.helpers import topic_commits

DB = "lc_locking"
OTHER = "lc_locking_other"
TOPIC = f"locks.{DB}.t"
MODES = ("minimal", "extended", "none", "table-locks")


@pytest.fixture
def db(services):
    db = Db(services)
    purge_binlog_through(db)
    db(f"DROP DATABASE IF EXISTS {OTHER}", f"CREATE DATABASE {OTHER}", f"CREATE TABLE {OTHER}.busy (id INT)")
    db.fresh(DB)
    db("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20))", "INSERT INTO t VALUES (1, 'a'), (2, 'b')")
    yield db
    Db(services)(f"DROP DATABASE IF EXISTS {DB}", f"DROP DATABASE IF EXISTS {OTHER}")
    db.close()


@pytest.fixture
def blocker(services):
    """A session holding a write lock on a table the connector does not capture: FLUSH TABLES WITH READ LOCK
    waits for it, times out (snapshot.lock.timeout.ms), and the snapshot takes table read locks instead."""
    held = []

    def hold() -> None:
        conn = pymysql.connect(**Db(services).settings, autocommit=True)
        conn.cursor().execute(f"LOCK TABLES {OTHER}.busy WRITE")
        held.append(conn)

    yield hold
    for conn in held:
        conn.close()


def _config(services, mode: str, server_id: str = "10000") -> dict[str, str]:
    return connector_config(services, **{
        "topic.prefix": "locks", "database.include.list": DB, "table.include.list": f"{DB}.t",
        "database.server.id": server_id, "lakeconnect.snapshot.position": "binlog_status",
        "snapshot.locking.mode": "minimal" if mode == "table-locks" else mode, "snapshot.lock.timeout.ms": "1000"})


def _no_lock_left(services, other: bool = True) -> None:
    """A write to the captured table (and to the other one, unless the blocker holds it) goes through at
    once: no lock of a killed run remains."""
    conn = pymysql.connect(**Db(services).settings, autocommit=True)
    try:
        cur = conn.cursor()
        cur.execute("SET SESSION lock_wait_timeout=2")
        cur.execute("SET SESSION innodb_lock_wait_timeout=2")
        cur.execute(f"UPDATE {DB}.t SET v = v WHERE id = 1")
        if other:
            cur.execute(f"INSERT INTO {OTHER}.busy VALUES (1)")
    finally:
        conn.close()


@pytest.mark.parametrize("mode", MODES)
def test_each_locking_mode_killed_at_every_step_of_the_snapshot(tmp_path, services, db, blocker, mode):
    if mode == "table-locks":
        blocker()
    clean = create(tmp_path / "clean", "cdc", _config(services, mode))
    crashed = create(tmp_path / "crashed", "cdc", _config(services, mode, server_id="20000"))
    r = run(clean, "cdc")
    expected = {"minimal": "locks: global read lock, held ", "extended": "locks: global read lock, held until the rows",
                "none": "locks: none", "table-locks": "locks: read locks on 1 tables (global read lock refused: "
                                                      "Lock wait timeout exceeded"}[mode]
    assert expected in r.stderr, r.stderr
    seen = kill_at_each_step(crashed, "cdc", SOURCE_STEPS, batch=1, between=lambda: db("INSERT INTO t VALUES (3, 'late')"),
                           after_each=lambda step: _no_lock_left(services, other=mode != "table-locks"))
    assert expected in seen["plan"], seen["plan"]
    a, b = tmp_path / "clean" / "lake", tmp_path / "crashed" / "lake"
    assert comparable(b, TOPIC) == comparable(a, TOPIC)
    assert topic_commits(b, TOPIC) == topic_commits(a, TOPIC)
    assert comparable_offsets(crashed, "cdc") == comparable_offsets(clean, "cdc")
    assert [(k["id"], v["op"]) for k, v in payloads(b, TOPIC)] == [(1, "r"), (2, "r")]

    run(clean, "cdc")  # the stream after the snapshot: the late row and the probes, the same on both
    run(crashed, "cdc")
    assert comparable(b, TOPIC) == comparable(a, TOPIC)
    assert (3, "c") in [(k["id"], v["op"]) for k, v in payloads(b, TOPIC)]


STATEMENTS = ("FLUSH", "UNLOCK", "START TRANSACTION", "SET TRANSACTION", "SHOW MASTER STATUS", "SELECT JSON_ARRAY",
              "COMMIT")
RR = "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ"
FTWRL = "FLUSH TABLES WITH READ LOCK"
BEGIN = "START TRANSACTION WITH CONSISTENT SNAPSHOT"
SEQUENCES = {
    "minimal": [FTWRL, RR, BEGIN, "SHOW MASTER STATUS", "UNLOCK TABLES", "SELECT JSON_ARRAY", "COMMIT"],
    "extended": [FTWRL, RR, BEGIN, "SHOW MASTER STATUS", "SELECT JSON_ARRAY", "UNLOCK TABLES", "COMMIT"],
    "none": ["SHOW MASTER STATUS", RR, BEGIN, "SELECT JSON_ARRAY", "COMMIT"],
    "table-locks": [FTWRL, f"FLUSH TABLES `{DB}`.`t` WITH READ LOCK", "SHOW MASTER STATUS", "SELECT JSON_ARRAY",
                    "UNLOCK TABLES", "COMMIT"],
}


def _snapshot_statements(cur) -> list[str]:
    """The snapshot connection's statements from the general log, in the order the server received them
    (the rows' SELECTs as "SELECT JSON_ARRAY")."""
    cur.execute("SELECT thread_id, CONVERT(argument USING utf8mb4) FROM mysql.general_log "
                "WHERE command_type = 'Query'")
    rows = [(int(t), str(a).strip()) for t, a in cur.fetchall()]
    threads = {t for t, a in rows if a.startswith("SELECT JSON_ARRAY")}
    assert len(threads) == 1, rows
    return ["SELECT JSON_ARRAY" if a.startswith("SELECT JSON_ARRAY") else a for t, a in rows
            if t in threads and a.upper().startswith(STATEMENTS)]


@pytest.mark.parametrize("mode", ("auto",) + MODES)
def test_writes_during_the_snapshot_are_in_it_or_after_it_once(tmp_path, services, db, blocker, mode):
    """A writer inserts rows the whole time the snapshot runs: each row is a snapshot read or a create
    event after it, exactly once (none: at least once; Debezium reads the position before the transaction
    opens, so a row committed between them is in both). With the general log on, the statements of the
    snapshot's connection are Debezium's, in its order."""
    if mode == "table-locks":
        blocker()
    db("INSERT INTO t SELECT seq, 'x' FROM seq_3_to_5000")
    config = _config(services, mode)
    if mode == "auto":
        config.pop("lakeconnect.snapshot.position")
        config["snapshot.locking.mode"] = "minimal"
    worker = create(tmp_path, "cdc", config)
    log = Db(services)
    log("SET GLOBAL log_output = 'TABLE'", "TRUNCATE TABLE mysql.general_log", "SET GLOBAL general_log = ON")
    stop = threading.Event()
    written = []

    def write() -> None:
        w = Db(services, DB)
        n = 10_000
        while not stop.wait(0.005):  # about 150 rows a second, before, during and after the snapshot
            w(f"INSERT INTO t VALUES ({n}, 'w')")
            written.append(n)
            n += 1
        w.close()

    writer = threading.Thread(target=write)
    writer.start()
    try:
        r = run(worker, "cdc")
    finally:
        stop.set()
        writer.join()
        log("SET GLOBAL general_log = OFF")
    statements = _snapshot_statements(log.conn.cursor())
    log.close()
    if mode == "auto":
        assert "locks: none (the transaction's binlog_snapshot_file)" in r.stderr, r.stderr
        assert statements == [BEGIN, "SELECT JSON_ARRAY", "COMMIT"], statements
    else:
        assert statements == SEQUENCES[mode], statements
    run(worker, "cdc")
    events = [(k["id"], v["op"]) for k, v in payloads(tmp_path / "lake", TOPIC) if v is not None]
    ids = [i for i, _ in events]
    print(f"{len(written)} rows written during the run")
    assert written and set(ids) == {1, 2, *range(3, 5001), *written}
    if mode != "none":
        assert len(ids) == len(set(ids)), [i for i in set(ids) if ids.count(i) > 1][:10]
    assert [i for i, op in events if op == "c"] == sorted(i for i, op in events if op == "c")


def test_binlog_status_statement_by_server_version():
    assert binlog.binlog_status_statement("8.0.36") == "SHOW MASTER STATUS"
    assert binlog.binlog_status_statement("5.7.44-log") == "SHOW MASTER STATUS"
    assert binlog.binlog_status_statement("8.4.3") == "SHOW BINARY LOG STATUS"
    assert binlog.binlog_status_statement("9.1.0-commercial") == "SHOW BINARY LOG STATUS"
    assert binlog.binlog_status_statement("11.4.2-MariaDB-log") == "SHOW MASTER STATUS"


def test_the_fingerprint_changes_with_a_column_and_not_otherwise(services, db):
    cur = db.conn.cursor()
    first = catalog.fingerprint(cur, [(DB, "t")])
    db("INSERT INTO t VALUES (9, 'z')")
    assert catalog.fingerprint(cur, [(DB, "t")]) == first
    db("ALTER TABLE t MODIFY v VARCHAR(30)")
    assert catalog.fingerprint(cur, [(DB, "t")]) != first
    assert catalog.fingerprint(cur, []) != first
