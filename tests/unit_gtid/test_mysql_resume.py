"""The CDC task's MySQL GTID paths, which need a MySQL server: none can run here (Debian ships MariaDB only,
whose GTIDs are another kind), so the server is a FAKE cursor answering the few statements these paths
send, and the replica connection that finds where a GTID set continues is replaced by a recorder. What is
real: the task's decisions (resume where, snapshot again, or fail) from gtid.py's Debezium rules, and the
Spark filter of gtid.source.includes/excludes on real Spark."""

from __future__ import annotations

import logging

import pytest

from connectors.mysql import binlog
from connectors.mysql import config as C
from connectors.mysql.binlog import Position
from connectors.mysql.stream import gtid_dml_filter
from connectors.mysql.task import MySqlSourceTask
from ingest.api import TaskContext
from ingest.errors import FatalError

A = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
B = "a1b2c3d4-0000-1111-2222-333344445555"


class FakeMySql:
    """A FAKE MySQL 8.0 cursor: its binlog files, server id, executed and purged GTID sets."""

    def __init__(self, files, server_id, executed, purged):
        self.files, self.server_id, self.executed, self.purged = files, server_id, executed, purged
        self.result = []

    def execute(self, sql, args=None):
        sql = " ".join(sql.split())
        if sql == "SHOW BINARY LOGS":
            self.result = [(f, 1000) for f in self.files]
        elif sql == "SELECT VERSION()":
            self.result = [("8.0.36",)]
        elif sql == "SELECT @@server_id":
            self.result = [(self.server_id,)]
        elif sql == "SELECT @@GLOBAL.gtid_executed, @@GLOBAL.gtid_purged":
            self.result = [(self.executed, self.purged)]
        elif sql == "SHOW MASTER STATUS":
            self.result = [(self.files[-1], 777, "", "", self.executed.replace(",", ",\n"))]
        else:
            raise AssertionError(f"unexpected statement {sql}")

    def fetchone(self):
        return self.result[0] if self.result else None

    def fetchall(self):
        return list(self.result)


def _task(tmp_path, **extra):
    raw = {"database.hostname": "127.0.0.1", "database.user": "u", "database.server.id": "5400",
           "topic.prefix": "p", **extra}
    config = C.mysql_config_def().parse(raw)
    context = TaskContext("c", 0, None, lambda: None, logging.LoggerAdapter(logging.getLogger("t"), {}),
                          str(tmp_path))
    return MySqlSourceTask(config, context)


@pytest.fixture
def located(monkeypatch):
    calls = []

    def locate(settings, server_id, gtids, mariadb=True):
        calls.append((gtids, mariadb))
        return Position("mysql-bin.000009", 4242)

    monkeypatch.setattr(binlog, "locate_gtid", locate)
    return calls


def test_same_server_and_file_resumes_by_position(tmp_path, located):
    cur = FakeMySql(["mysql-bin.000003"], 1, f"{A}:1-50", "")
    offset = {"file": "mysql-bin.000003", "pos": 400, "gtids": f"{A}:1-40", "server_id": 1}
    assert _task(tmp_path)._resume_position(cur, offset) == Position("mysql-bin.000003", 400)
    assert located == []


def test_a_purged_file_or_another_server_resumes_after_the_gtid_set(tmp_path, located):
    offset = {"file": "mysql-bin.000003", "pos": 400, "gtids": f"{A}:1-40", "server_id": 1}
    purged_file = FakeMySql(["mysql-bin.000008", "mysql-bin.000009"], 1, f"{A}:1-50", f"{A}:1-30")
    assert _task(tmp_path)._resume_position(purged_file, offset) == Position("mysql-bin.000009", 4242)
    # A failover: a replica with the same GTIDs (and its own, B) whose files have the same names.
    replica = FakeMySql(["mysql-bin.000003"], 2, f"{A}:1-50,{B}:1-7", f"{A}:1-10")
    assert _task(tmp_path)._resume_position(replica, offset) == Position("mysql-bin.000009", 4242)
    # Debezium's filterGtidSet: the purged set, each source the offset knows replaced by the offset's.
    assert located == [(f"{A}:1-40", False), (f"{A}:1-40", False)]
    # The replica's own transactions, purged before the connector read them: Debezium's rule says no.
    lost = FakeMySql(["mysql-bin.000003"], 2, f"{A}:1-50,{B}:1-7", f"{B}:1-2")
    with pytest.raises(FatalError, match=f"it has purged transactions the connector has not read \\({B}:1-2\\)"):
        _task(tmp_path)._resume_position(lost, offset)


def test_purged_transactions_the_connector_has_not_read_fail_or_snapshot_again(tmp_path, located):
    offset = {"file": "mysql-bin.000003", "pos": 400, "gtids": f"{A}:1-40", "server_id": 1}
    cur = FakeMySql(["mysql-bin.000008"], 1, f"{A}:1-90", f"{A}:1-60")
    with pytest.raises(FatalError) as e:
        _task(tmp_path)._resume_position(cur, offset)
    assert f"it has purged transactions the connector has not read ({A}:41-60)" in str(e.value)
    assert "snapshot.mode=when_needed" in str(e.value)
    assert _task(tmp_path, **{"snapshot.mode": "when_needed"})._resume_position(cur, offset) is None
    # Excluded sources' purged transactions do not matter (gtid.source.excludes).
    cur = FakeMySql(["mysql-bin.000008"], 1, f"{A}:1-90,{B}:1-9", f"{A}:1-40,{B}:1-9")
    assert _task(tmp_path, **{"gtid.source.excludes": B[:8] + ".*"})._resume_position(cur, offset) == \
        Position("mysql-bin.000009", 4242)
    with pytest.raises(FatalError, match=r"purged transactions the connector has not read \(" + B):
        _task(tmp_path)._resume_position(cur, offset)
    assert located == [(f"{A}:1-40,{B}:1-9", False)]


def test_the_offset_gtid_set_comes_with_the_position_from_one_status_statement():
    cur = FakeMySql(["mysql-bin.000004"], 1, f"{B}:1-3:5,{A.upper()}:1-50", "")  # as the server prints it
    assert binlog.binlog_status(cur) == (Position("mysql-bin.000004", 777), f"{A}:1-50,{B}:1-3:5-5")


def test_includes_and_excludes_filter_row_changes_by_gtid_source(spark):
    rows = spark.createDataFrame(
        [(1, f"{A}:5"), (2, f"{B.upper()}:7"), (3, "0-1-5"), (4, None)], "id int, gtid string")

    def kept(**config):
        full = {C.GTID_INCLUDE: [], C.GTID_EXCLUDE: [], **config}
        return sorted(r[0] for r in rows.filter(gtid_dml_filter(full)).collect())

    assert kept() == [1, 2, 3, 4]
    assert kept(**{C.GTID_INCLUDE: [A]}) == [1, 3, 4]  # MariaDB GTIDs and none: not filtered, as Debezium
    assert kept(**{C.GTID_INCLUDE: [B.lower()[:8] + ".*"]}) == [2, 3, 4]  # case ignored
    assert kept(**{C.GTID_EXCLUDE: [A, "nothing"]}) == [2, 3, 4]
    assert kept(**{C.GTID_INCLUDE: [A[:8]]}) == [3, 4]  # the whole uuid must match


def test_both_lists_or_a_bad_pattern_are_configuration_errors():
    def problems(**raw):
        config, _ = C.mysql_config_def().validate({"database.hostname": "h", "database.user": "u",
                                                   "database.server.id": "1", "topic.prefix": "p", **raw})
        return [(p.key, p.message) for p in C.check(C.mysql_config_def().parse(config))]

    assert problems(**{"gtid.source.includes": A, "gtid.source.excludes": B}) == [
        ("gtid.source.excludes", "Cannot specify GTID excludes when includes are provided. Keep one of "
                                 "gtid.source.includes and gtid.source.excludes.")]
    found = problems(**{"gtid.source.excludes": "(unclosed"})
    assert len(found) == 1 and found[0][0] == "gtid.source.excludes" and "'(unclosed'" in found[0][1], found
