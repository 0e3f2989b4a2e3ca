"""Where a CDC batch starts again, on the private MariaDB: across binlog files and a server restart, by
GTID when the saved file is gone, and after `PURGE BINARY LOGS` (FAILED naming the fix; a new snapshot
with snapshot.mode=when_needed). Each change reaches the topic exactly once."""

from __future__ import annotations

import json
import subprocess
import time

import pymysql
import pytest

from tests.conftest import REPO, cli, cli_here
from tests.mysql._cdc import Db, connector_config, create, offsets, payloads, purge_binlog_through, records, run

DB = "lc_cdc_resume"
TOPIC = f"resume.{DB}.t"


@pytest.fixture
def db(services):
    db = Db(services).fresh(DB)
    db("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20))", "INSERT INTO t VALUES (1, 'a'), (2, 'b')")
    yield db
    try:
        Db(services)(f"DROP DATABASE IF EXISTS {DB}")
    except pymysql.MySQLError:
        pass
    db.close()


def _config(services, **extra):
    return connector_config(services, **{"topic.prefix": "resume", "database.include.list": DB,
                                          "table.include.list": f"{DB}.t", **extra})


def _changes(lake) -> list[tuple]:
    return [(k["id"], v["op"], (v["after"] or {}).get("v")) if v else (k["id"], None, None)
            for k, v in payloads(lake, TOPIC)]


def test_batches_span_binlog_files_and_a_server_restart(tmp_path, services, db):
    worker = create(tmp_path, "cdc", _config(services))
    run(worker, "cdc")
    db("INSERT INTO t VALUES (3, 'c')", "FLUSH BINARY LOGS", "UPDATE t SET v = 'bb' WHERE id = 2",
       "FLUSH BINARY LOGS", "DELETE FROM t WHERE id = 1")
    run(worker, "cdc")  # one batch over three binlog files, decoded in parallel
    assert _changes(tmp_path / "lake") == [(1, "r", "a"), (2, "r", "b"), (3, "c", "c"), (2, "u", "bb"),
                                           (1, "d", None), (1, None, None)]
    before = offsets(worker, "cdc")

    db("INSERT INTO t VALUES (4, 'd')")
    db("SHUTDOWN")  # the server goes away between batches
    db.close()
    time.sleep(1)
    r = cli("run", "cdc", worker=worker)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "cannot connect to 127.0.0.1" in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert offsets(worker, "cdc") == before
    up = subprocess.run(["bash", "tests/services/up.sh"], cwd=REPO, capture_output=True, text=True, timeout=180)
    assert up.returncode == 0, up.stdout + up.stderr
    db.conn = pymysql.connect(**db.settings, autocommit=True)
    db("INSERT INTO t VALUES (5, 'e')")  # in the binlog file the restarted server opened
    assert cli_here("connectors", "restart", "cdc", worker=worker).returncode == 0
    run(worker, "cdc")
    assert _changes(tmp_path / "lake")[6:] == [(4, "c", "d"), (5, "c", "e")]


def test_resume_by_gtid_when_the_saved_file_is_gone(tmp_path, services, db):
    """The offset names a binlog file this server does not have (a fail-over to a replica, a rebuilt
    server): the batch starts from the offset's GTID position, found on the server's own binlog."""
    worker = create(tmp_path, "cdc", _config(services))
    run(worker, "cdc")
    db("INSERT INTO t VALUES (3, 'c')", "UPDATE t SET v = 'bb' WHERE id = 2")
    saved = offsets(worker, "cdc")[0]
    assert saved["offset"]["gtids"], saved
    assert cli_here("connectors", "stop", "cdc", worker=worker).returncode == 0
    body = tmp_path / "offsets.json"
    body.write_text(json.dumps({"offsets": [{"partition": saved["partition"],
                                             "offset": {**saved["offset"], "file": "elsewhere-bin.000042"}}]}))
    assert cli_here("offsets", "alter", "cdc", str(body), worker=worker).returncode == 0
    assert cli_here("connectors", "resume", "cdc", worker=worker).returncode == 0
    r = run(worker, "cdc")
    assert "resuming from GTID position" in r.stderr, r.stderr
    assert _changes(tmp_path / "lake") == [(1, "r", "a"), (2, "r", "b"), (3, "c", "c"), (2, "u", "bb")]


def test_a_purged_binlog_fails_clearly_then_when_needed_takes_a_new_snapshot(tmp_path, services, db):
    worker = create(tmp_path, "cdc", _config(services))
    run(worker, "cdc")
    before = offsets(worker, "cdc")
    # The change after the offset goes into a file that is then purged.
    purge_binlog_through(db, "INSERT INTO t VALUES (3, 'c')")

    r = cli("run", "cdc", worker=worker)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "has been purged" in r.stderr and "snapshot.mode=when_needed" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
    status = json.loads(cli_here("connectors", "status", "cdc", worker=worker).stdout)
    assert status["tasks"][0]["state"] == "FAILED" and "purged" in status["tasks"][0]["trace"]
    assert offsets(worker, "cdc") == before and len(records(tmp_path / "lake", TOPIC)) == 2

    config = tmp_path / "when_needed.json"
    config.write_text(json.dumps({"name": "cdc", "config": _config(services, **{"snapshot.mode": "when_needed"})}))
    r = cli_here("connectors", "update", str(config), worker=worker)
    assert r.returncode == 0, r.stderr
    assert cli_here("connectors", "restart", "cdc", worker=worker).returncode == 0
    run(worker, "cdc")
    assert _changes(tmp_path / "lake") == [(1, "r", "a"), (2, "r", "b"), (1, "r", "a"), (2, "r", "b"), (3, "r", "c")]
    assert offsets(worker, "cdc")[0]["offset"]["snapshot"] is True
