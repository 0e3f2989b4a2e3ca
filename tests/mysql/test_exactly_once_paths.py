"""Exactly-once on the CDC source's other ways of starting a batch, which tests/mysql/test_exactly_once.py
(a first snapshot, then the binlog from a saved position) does not take: resuming by GTID when the saved
binlog file is gone, a new snapshot (snapshot.mode=when_needed) after the saved file was purged, the
first batch of snapshot.mode=no_data (the binlog's end, no rows) and the stream after it, and the first
batch of snapshot.mode=never (the binlog from its oldest file).

Each time one connector is killed after every step of the batch under test, each later run resuming the
batch and killed one step further on, and compared with a connector that never crashed and read the same
server: the same records at the same offsets, the same topic commits, the same committed offsets. A
change made after the crashed run planned its batch must not be in that batch (the clean connector's
batch was planned before it too)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pymysql
import pytest

from ingest.runtime.faults import SOURCE_STEPS
from tests.conftest import cli_here
from tests.crash_kit import kill_at_each_step
from tests.mysql._cdc import (
    Db, comparable, comparable_offsets, connector_config, create, offsets, payloads,
    purge_binlog_through, run,
)
from tests.runtime.helpers import topic_commits

DB = "lc_cdc_paths"
CRASHED_SERVER_ID = "20000"  # the clean connector's readers take 10000 to 10017: no overlap


def _purged(services) -> Db:
    """A connection to the server, whose binlog files so far are purged. Its oldest file would be what
    earlier tests left on this server (tens of MB after the type tests), read by every run of a
    snapshot.mode=never connector and scanned by a resume by GTID. The CDC tests of a pytest worker run
    one after another on a server of their own."""
    db = Db(services)
    purge_binlog_through(db)
    return db


@pytest.fixture
def db(services):
    db = _purged(services).fresh(DB)
    db("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20))", "INSERT INTO t VALUES (1, 'a'), (2, 'b')")
    yield db
    try:
        Db(services)(f"DROP DATABASE IF EXISTS {DB}")
    except pymysql.MySQLError:
        pass
    db.close()


@pytest.fixture
def fresh_db(services):
    """A database no earlier run used: snapshot.mode=never reads the whole binlog."""
    name = f"lc_cdc_paths_{uuid.uuid4().hex[:8]}"
    db = _purged(services).fresh(name)
    db("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20))", "INSERT INTO t VALUES (1, 'a'), (2, 'b')")
    yield db
    db(f"DROP DATABASE IF EXISTS {name}")
    db.close()


def _config(services, database: str, crashed: bool = False, **extra: str) -> dict[str, str]:
    config = connector_config(services, **{"topic.prefix": "paths", "database.include.list": database,
                                            "table.include.list": f"{database}.t", **extra})
    return {**config, "database.server.id": CRASHED_SERVER_ID} if crashed else config


def _pair(tmp_path: Path, services, database: str, **extra: str) -> tuple[Path, Path]:
    """The clean and the crashed connector: the same config but for database.server.id, separate lakes."""
    clean = create(tmp_path / "clean", "cdc", _config(services, database, **extra))
    crashed = create(tmp_path / "crashed", "cdc", _config(services, database, crashed=True, **extra))
    return clean, crashed


def _changes(lake: Path, topic: str) -> list[tuple]:
    return [(k["id"], v["op"], (v["after"] or {}).get("v")) if v else (k["id"], None, None)
            for k, v in payloads(lake, topic)]


def _same(tmp_path: Path, clean: Path, crashed: Path, topic: str) -> None:
    a, b = tmp_path / "clean" / "lake", tmp_path / "crashed" / "lake"
    assert comparable(b, topic) == comparable(a, topic)
    assert topic_commits(b, topic) == topic_commits(a, topic)
    assert comparable_offsets(crashed, "cdc") == comparable_offsets(clean, "cdc")


def test_resume_by_gtid_when_the_saved_file_is_gone(tmp_path, services, db):
    # A first batch of snapshot.mode=no_data saves a binlog position (file, pos and GTIDs) as a snapshot
    # does, without starting Spark: the batch under test is the next one, whatever the first was.
    clean, crashed = _pair(tmp_path, services, DB, **{"snapshot.mode": "no_data"})
    topic = f"paths.{DB}.t"
    run(clean, "cdc")
    run(crashed, "cdc")
    db("INSERT INTO t VALUES (3, 'c')", "UPDATE t SET v = 'bb' WHERE id = 2")
    assert comparable_offsets(crashed, "cdc") == comparable_offsets(clean, "cdc")
    saved = offsets(clean, "cdc")[0]
    assert saved["offset"]["gtids"], saved
    # Both connectors get the same offset, naming a binlog file this server does not have.
    body = tmp_path / "offsets.json"
    body.write_text(json.dumps({"offsets": [{"partition": saved["partition"],
                                             "offset": {**saved["offset"], "file": "elsewhere-bin.000042"}}]}))
    for worker in (clean, crashed):
        assert cli_here("connectors", "stop", "cdc", worker=worker).returncode == 0
        r = cli_here("offsets", "alter", "cdc", str(body), worker=worker)
        assert r.returncode == 0, r.stderr
        assert cli_here("connectors", "resume", "cdc", worker=worker).returncode == 0

    r = run(clean, "cdc")
    assert "resuming from GTID position" in r.stderr, r.stderr
    seen = kill_at_each_step(crashed, "cdc", SOURCE_STEPS, batch=2, between=lambda: db("INSERT INTO t VALUES (4, 'late')"))
    assert "resuming from GTID position" in seen["plan"], seen["plan"]

    _same(tmp_path, clean, crashed, topic)
    assert _changes(tmp_path / "crashed" / "lake", topic) == [(3, "c", "c"), (2, "u", "bb")]
    assert not str(offsets(crashed, "cdc")[0]["offset"]["file"]).startswith("elsewhere")


def test_when_needed_snapshot_after_the_saved_file_was_purged(tmp_path, services, db):
    clean, crashed = _pair(tmp_path, services, DB, **{"snapshot.mode": "when_needed"})
    topic = f"paths.{DB}.t"
    run(clean, "cdc")  # both offsets point into the file about to be purged
    run(crashed, "cdc")
    # The change after the offsets goes into a file that is then purged, with the offsets' own file.
    kept = purge_binlog_through(db, "INSERT INTO t VALUES (3, 'c')")
    for worker in (clean, crashed):
        assert offsets(worker, "cdc")[0]["offset"]["file"] not in kept

    r = run(clean, "cdc")
    assert "has been purged: taking a new snapshot" in r.stderr, r.stderr
    seen = kill_at_each_step(crashed, "cdc", SOURCE_STEPS, batch=2, between=lambda: db("INSERT INTO t VALUES (4, 'late')"))
    assert "has been purged: taking a new snapshot" in seen["plan"], seen["plan"]

    _same(tmp_path, clean, crashed, topic)
    assert _changes(tmp_path / "crashed" / "lake", topic) == [(1, "r", "a"), (2, "r", "b"), (1, "r", "a"),
                                                              (2, "r", "b"), (3, "r", "c")]
    assert offsets(crashed, "cdc")[0]["offset"]["snapshot"] is True


def test_no_data_first_batch_then_the_stream(tmp_path, services, db):
    clean, crashed = _pair(tmp_path, services, DB, **{"snapshot.mode": "no_data"})
    topic = f"paths.{DB}.t"
    run(clean, "cdc")  # the binlog's end, no rows
    kill_at_each_step(crashed, "cdc", SOURCE_STEPS, batch=1, between=lambda: db("INSERT INTO t VALUES (3, 'c')"))
    for side in ("clean", "crashed"):
        assert not (tmp_path / side / "lake" / "topics" / topic).exists()
    assert comparable_offsets(crashed, "cdc") == comparable_offsets(clean, "cdc")

    db("UPDATE t SET v = 'aa' WHERE id = 1", "DELETE FROM t WHERE id = 2")
    run(clean, "cdc")
    kill_at_each_step(crashed, "cdc", SOURCE_STEPS, batch=2, between=lambda: db("INSERT INTO t VALUES (4, 'late')"))

    _same(tmp_path, clean, crashed, topic)
    # The insert made after batch 1 was planned is in batch 2; the late one in neither.
    assert _changes(tmp_path / "crashed" / "lake", topic) == [(3, "c", "c"), (1, "u", "aa"), (2, "d", None),
                                                              (2, None, None)]


def test_never_first_batch_reads_the_binlog_from_its_oldest_file(tmp_path, services, fresh_db):
    clean, crashed = _pair(tmp_path, services, fresh_db.database, **{"snapshot.mode": "never"})
    topic = f"paths.{fresh_db.database}.t"
    run(clean, "cdc")
    kill_at_each_step(crashed, "cdc", SOURCE_STEPS, batch=1, between=lambda: fresh_db("INSERT INTO t VALUES (3, 'late')"))

    _same(tmp_path, clean, crashed, topic)
    assert _changes(tmp_path / "crashed" / "lake", topic) == [(1, "c", "a"), (2, "c", "b")]


def test_initial_only_takes_the_snapshot_and_then_nothing(tmp_path, services, db):
    clean, crashed = _pair(tmp_path, services, DB, **{"snapshot.mode": "initial_only"})
    topic = f"paths.{DB}.t"
    run(clean, "cdc")
    # The snapshot is pinned when its batch is planned: a row inserted after that is in neither snapshot.
    kill_at_each_step(crashed, "cdc", SOURCE_STEPS, batch=1, between=lambda: db("INSERT INTO t VALUES (3, 'late')"))

    _same(tmp_path, clean, crashed, topic)
    assert _changes(tmp_path / "crashed" / "lake", topic) == [(1, "r", "a"), (2, "r", "b")]
    before = comparable_offsets(crashed, "cdc")
    db("UPDATE t SET v = 'aa' WHERE id = 1")
    run(crashed, "cdc")  # initial_only: no stream after the snapshot
    assert _changes(tmp_path / "crashed" / "lake", topic) == [(1, "r", "a"), (2, "r", "b")]
    assert comparable_offsets(crashed, "cdc") == before


def test_recovery_resumes_the_stream_from_the_offsets(tmp_path, services, db):
    """A connector switched to snapshot.mode=recovery (schema_only_recovery) after its snapshot: the next
    batch reads the binlog from the saved position, killed at every step."""
    clean, crashed = _pair(tmp_path, services, DB)
    topic = f"paths.{DB}.t"
    run(clean, "cdc")
    run(crashed, "cdc")
    for worker, crashed_side in ((clean, False), (crashed, True)):
        body = tmp_path / "recovery.json"
        body.write_text(json.dumps({"name": "cdc", "config": _config(services, DB, crashed=crashed_side,
                                                                     **{"snapshot.mode": "recovery"})}))
        r = cli_here("connectors", "update", str(body), worker=worker)
        assert r.returncode == 0, r.stderr
    db("INSERT INTO t VALUES (3, 'c')", "DELETE FROM t WHERE id = 1")
    run(clean, "cdc")
    kill_at_each_step(crashed, "cdc", SOURCE_STEPS, batch=2, between=lambda: db("INSERT INTO t VALUES (4, 'late')"))

    _same(tmp_path, clean, crashed, topic)
    assert _changes(tmp_path / "crashed" / "lake", topic) == [(1, "r", "a"), (2, "r", "b"), (3, "c", "c"),
                                                              (1, "d", None), (1, None, None)]
