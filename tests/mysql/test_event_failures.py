"""event.processing.failure.handling.mode, as Debezium's MySQL connector has it: a binlog row event the
connector cannot deserialize fails the batch (fail, the default: a message naming the event's position and
table, the mysqlbinlog command to see it and the key; nothing emitted, no offset moved), or is left out with a
warning saying the same (warn) or silently (skip, and ignore, its older name), the batch's other events
written as usual.

A healthy server writes no event its decoder cannot read, so the failure is injected: with
LAKECONNECT_UNREADABLE_ROWS=<db>.<table> the decoder (on the executors, reading the real binlog of the
private MariaDB) fails on that table's row events as on an undeserializable one."""

from __future__ import annotations

import json

import pytest

from ingest.runtime.faults import UNREADABLE_ENV
from tests.conftest import cli, cli_here
from tests.mysql._cdc import Db, connector_config, create, offsets, payloads, run

DB = "lc_cdc_unreadable"


@pytest.fixture
def db(services):
    db = Db(services).fresh(DB)
    db("CREATE TABLE good (id INT PRIMARY KEY, v VARCHAR(20))", "CREATE TABLE bad (id INT PRIMARY KEY)")
    yield db
    db(f"DROP DATABASE IF EXISTS {DB}")
    db.close()


def test_an_unreadable_row_event_fails_the_batch_or_is_left_out_as_the_mode_says(tmp_path, services, db,
                                                                                   monkeypatch):
    modes = {"fail": None, "warn": "warn", "skip": "skip"}  # (ignore is skip's older name: the same code)
    worker = None
    for i, (name, mode) in enumerate(modes.items()):
        config = connector_config(services, **{
            "topic.prefix": name, "database.include.list": DB, "table.include.list": f"{DB}.(good|bad)",
            "database.server.id": str(10600 + 20 * i),
            **({"event.processing.failure.handling.mode": mode} if mode else {})})
        worker = create(tmp_path, name, config)
        run(worker, name)  # the (empty) snapshot
    db("INSERT INTO good VALUES (1, 'before')", "INSERT INTO bad VALUES (1)", "INSERT INTO good VALUES (2, 'after')")
    unreadable = {UNREADABLE_ENV: f"{DB}.bad"}

    at = offsets(worker, "fail")
    r = cli("run", "fail", worker=worker, env=unreadable)
    out = r.stdout + r.stderr
    assert r.returncode != 0, out
    assert f"({DB}.bad) cannot be read" in out and "mysqlbinlog --start-position=" in out, out
    assert "event.processing.failure.handling.mode=warn or skip" in out and "Traceback" not in out, out
    assert offsets(worker, "fail") == at
    assert not (tmp_path / "lake" / "topics" / f"fail.{DB}.good").exists() or not payloads(
        tmp_path / "lake", f"fail.{DB}.good")

    monkeypatch.setenv(UNREADABLE_ENV, f"{DB}.bad")  # the runs that succeed run in this process
    for name in ("warn", "skip"):
        r = cli_here("run", name, worker=worker)
        out = r.stdout + r.stderr
        assert r.returncode == 0, out
        warned = f"({DB}.bad) cannot be read" in out and "left out (event.processing.failure.handling.mode=warn)" in out \
            and "mysqlbinlog --start-position=" in out
        assert warned == (name == "warn"), out
        good = [v["after"] for _, v in payloads(tmp_path / "lake", f"{name}.{DB}.good") if v]
        assert good == [{"id": 1, "v": "before"}, {"id": 2, "v": "after"}], good
        bad = tmp_path / "lake" / "topics" / f"{name}.{DB}.bad"
        assert not bad.exists() or not payloads(tmp_path / "lake", f"{name}.{DB}.bad")

    # the event is readable again: fail reads the same range now, every row once
    monkeypatch.delenv(UNREADABLE_ENV)
    run(worker, "fail")
    assert [v["after"]["id"] for _, v in payloads(tmp_path / "lake", f"fail.{DB}.bad") if v] == [1]
    assert len(payloads(tmp_path / "lake", f"fail.{DB}.good")) == 2
    assert json.dumps(offsets(worker, "fail")) != json.dumps(at)
