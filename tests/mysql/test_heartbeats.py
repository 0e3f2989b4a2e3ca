"""Heartbeats as Debezium writes them: one once `heartbeat.interval.ms` has passed since the last, whether
the binlog moved or not, never one per batch regardless; a killed heartbeat batch writes its heartbeat once."""

from __future__ import annotations

import json
import time

import pytest

from connectors.mysql.config import HEARTBEAT_AT
from tests.conftest import cli_here
from tests.crash_kit import kill_at_each_step
from tests.mysql._cdc import Db, connector_config, create, offsets, payloads, run

DB = "lc_cdc_beats"
BEATS = "__debezium-heartbeat.beats"


@pytest.fixture
def db(services):
    db = Db(services).fresh(DB)
    db("CREATE TABLE t (id INT PRIMARY KEY)", "CREATE TABLE other (id INT PRIMARY KEY)")
    yield db
    db(f"DROP DATABASE IF EXISTS {DB}")
    db.close()


def _connector(tmp_path, services, interval_ms: int):
    return create(tmp_path, "beats", connector_config(services, **{
        "topic.prefix": "beats", "database.include.list": DB, "table.include.list": f"{DB}.t",
        "snapshot.mode": "no_data", "heartbeat.interval.ms": str(interval_ms), "database.server.id": "10007"}))


def _committed(worker) -> int:
    status = json.loads(cli_here("connectors", "status", "beats", "--runs", "50", worker=worker).stdout)
    return sum(1 for r in status["runs"] if r["state"] == "COMMITTED")


def test_a_long_interval_gives_one_heartbeat_over_many_batches(tmp_path, services, db):
    worker = _connector(tmp_path / "long", services, 3_600_000)
    run(worker, "beats")  # no_data: from the binlog's end
    lake = tmp_path / "long" / "lake"
    for i in range(3):
        db(f"INSERT INTO t VALUES ({i})")
        run(worker, "beats")
    beats = payloads(lake, BEATS)
    assert len(beats) == 1 and beats[0][0] == {"serverName": "beats"}
    first = offsets(worker, "beats")[0]["offset"]
    assert first[HEARTBEAT_AT] == beats[0][1]["ts_ms"]  # carried on by the batches after it
    assert len(payloads(lake, f"beats.{DB}.t")) == 3
    batches = _committed(worker)
    run(worker, "beats")  # within the interval and nothing new: no batch at all
    assert _committed(worker) == batches == 4 and len(payloads(lake, BEATS)) == 1


def test_an_idle_binlog_still_beats_once_the_interval_has_passed(tmp_path, services, db):
    worker = _connector(tmp_path / "idle", services, 1000)
    lake = tmp_path / "idle" / "lake"
    run(worker, "beats")
    db("INSERT INTO other VALUES (1)")  # only an uncaptured table: the offset moves, with a heartbeat
    run(worker, "beats")
    moved = offsets(worker, "beats")[0]["offset"]
    assert len(payloads(lake, BEATS)) == 1
    time.sleep(1.2)
    # Nothing in the binlog since: a heartbeat batch, at the same position. Killed after its write, the
    # run after it commits that heartbeat once.
    kill_at_each_step(worker, "beats", ["write"])
    run(worker, "beats")
    beats = payloads(lake, BEATS)
    idle = offsets(worker, "beats")[0]["offset"]
    assert len(beats) == 2 and beats[1][1]["ts_ms"] > beats[0][1]["ts_ms"]
    assert (idle["file"], idle["pos"]) == (moved["file"], moved["pos"])
    assert idle[HEARTBEAT_AT] == beats[1][1]["ts_ms"]
