"""Bad input to the CDC source gets a clear message naming what is wrong and the fix, a non-zero exit,
nothing emitted and no offset committed; the password never shows."""

from __future__ import annotations

import json

import pytest

from tests.conftest import cli, cli_here
from tests.mysql._cdc import Db, connector_config, create, write_worker

DB = "lc_cdc_bad"
SECRET = "s3cret-Pa55"


@pytest.fixture
def db(services):
    db = Db(services).fresh(DB)
    db("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20))", "INSERT INTO t VALUES (1, 'a')")
    db("DROP USER IF EXISTS 'lc_weak'@'%'", f"CREATE USER 'lc_weak'@'%' IDENTIFIED BY '{SECRET}'",
       f"GRANT SELECT ON {DB}.* TO 'lc_weak'@'%'")
    yield db
    db(f"DROP DATABASE IF EXISTS {DB}", "DROP USER IF EXISTS 'lc_weak'@'%'")
    db.close()


def _config(services, **extra):
    return connector_config(services, **{"topic.prefix": "bad", "database.include.list": DB,
                                          "table.include.list": f"{DB}.t", **extra})


def _nothing_done(worker, name: str, lake) -> None:
    r = cli("offsets", "list", name, worker=worker)
    assert json.loads(r.stdout)["offsets"] == []
    assert not (lake / "topics" / f"bad.{DB}.t").exists()


def test_missing_grants_are_named_with_the_fix_and_the_password_never_shows(tmp_path, services, db):
    worker = create(tmp_path, "weak", _config(services, **{"database.user": "lc_weak", "database.password": SECRET}))
    r = cli("run", "weak", worker=worker)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "the user lacks SHOW DATABASES, REPLICATION SLAVE, REPLICATION CLIENT" in r.stderr, r.stderr
    assert "GRANT SELECT, SHOW DATABASES, REPLICATION SLAVE, REPLICATION CLIENT ON *.*" in r.stderr
    assert "with RELOAD and LOCK TABLES for snapshots that lock" in r.stderr
    assert "Traceback" not in r.stderr
    status = cli("connectors", "status", "weak", worker=worker).stdout
    assert json.loads(status)["tasks"][0]["state"] == "FAILED"
    _nothing_done(worker, "weak", tmp_path / "lake")

    wrong = create(tmp_path / "wrong", "wrong", _config(services, **{"database.user": "lc_weak",
                                                                      "database.password": SECRET + "x"}))
    r = cli("run", "wrong", worker=wrong)
    assert r.returncode == 1 and "cannot connect to 127.0.0.1" in r.stderr and "Access denied" in r.stderr, r.stderr
    for text in (r.stdout + r.stderr, cli("connectors", "status", "wrong", worker=wrong).stdout,
                 cli("connectors", "get", "wrong", worker=wrong).stdout):
        assert SECRET not in text


def test_a_locking_snapshot_without_reload_names_the_grants_and_none_needs_them(tmp_path, services, db):
    """The user has what streaming needs but neither RELOAD nor LOCK TABLES: Debezium's locking snapshot
    (minimal, forced on MariaDB) can take neither the global nor the table read locks, and says which grants
    to give or to take no lock; snapshot.locking.mode=none needs neither."""
    db("GRANT SHOW DATABASES, REPLICATION SLAVE, BINLOG MONITOR ON *.* TO 'lc_weak'@'%'")
    user = {"database.user": "lc_weak", "database.password": SECRET, "lakeconnect.snapshot.position": "binlog_status"}
    worker = create(tmp_path, "locks", _config(services, **user))
    r = cli_here("run", "locks", worker=worker)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "snapshot.locking.mode=minimal could take neither the global read lock (Access denied" in r.stderr
    assert "Grant the connector's user RELOAD and LOCK TABLES (GRANT RELOAD, LOCK TABLES ON *.* TO ...)" in r.stderr
    assert "or set snapshot.locking.mode=none; nothing was emitted or committed" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and SECRET not in r.stdout + r.stderr
    _nothing_done(worker, "locks", tmp_path / "lake")

    none = create(tmp_path / "none", "none", _config(services, **user, **{"snapshot.locking.mode": "none"}))
    r = cli_here("run", "none", worker=none)
    assert r.returncode == 0 and "locks: none" in r.stderr, r.stdout + r.stderr


def test_configuration_mistakes_are_refused_before_anything_runs(tmp_path, services, db):
    (tmp_path / "lake").mkdir()
    worker = write_worker(tmp_path / "worker.properties", tmp_path / "lake")
    f = tmp_path / "bad.json"
    f.write_text(json.dumps({"name": "bad", "config": _config(services, **{"database.server.id": "zero"})}))
    r = cli("connectors", "create", str(f), worker=worker)
    assert r.returncode == 2 and "database.server.id: expected an integer, got 'zero'" in r.stderr, r.stderr
    f.write_text(json.dumps({"name": "bad", "config": _config(services, **{
        "snapshot.mode": "sometimes", "message.key.columns": "nonsense"})}))
    r = cli("connectors", "create", str(f), worker=worker)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "snapshot.mode: unknown snapshot mode 'sometimes'" in r.stderr, r.stderr
    assert "message.key.columns: 'nonsense' is not <database>.<table>:<column>" in r.stderr

    worker = create(tmp_path / "keys", "keys", _config(services, **{"message.key.columns": f"{DB}.t:nope"}))
    r = cli("run", "keys", worker=worker)
    assert r.returncode == 1, r.stdout + r.stderr
    assert f"message.key.columns names nope, which table {DB}.t does not have (columns: id, v)" in r.stderr
    _nothing_done(worker, "keys", tmp_path / "keys" / "lake")


def test_a_server_id_another_replica_uses_is_refused(tmp_path, services, db):
    """Two binlog readers with one server id make the server drop one of them, again and again: refused
    before reading, naming the replica that has the id."""
    import threading

    from pymysqlreplication import BinLogStreamReader

    from connectors.mysql import binlog
    from tests.mysql._cdc import settings

    cur = db.conn.cursor()
    here = binlog.master_position(cur)
    other = BinLogStreamReader(connection_settings=settings(services), server_id=10003, log_file=here.file,
                               log_pos=here.pos, resume_stream=True, blocking=True, report_slave="other-replica")
    reader = threading.Thread(target=lambda: next(iter(other), None), daemon=True)
    reader.start()
    try:
        for _ in range(50):
            cur.execute("SHOW SLAVE HOSTS")
            if any(int(r[0]) == 10003 for r in cur.fetchall()):
                break
            __import__("time").sleep(0.1)
        worker = create(tmp_path, "dup", _config(services, **{"database.server.id": "10000"}))
        r = cli("run", "dup", worker=worker)
        assert r.returncode == 1, r.stdout + r.stderr
        assert "database.server.id=10000 is taken (replica other-replica:0 has server id 10003)" in r.stderr, r.stderr
        _nothing_done(worker, "dup", tmp_path / "lake")
    finally:
        db("INSERT INTO t VALUES (2, 'wake the reader')")
        reader.join(5)
        other.close()
