"""DDL in the binlog: events before and after an ALTER (in one batch) carry the columns of their moment;
schema change events and the schema history table record each DDL once; heartbeats move the offsets on
when only uncaptured tables changed."""

from __future__ import annotations

import json

import pytest
from deltalake import DeltaTable

from ingest.runtime.faults import CRASH_ENV, CRASH_EXIT
from tests.conftest import cli
from tests.mysql._cdc import Db, connector_config, create, offsets, payloads, records, run

DB = "lc_cdc_ddl"
TOPIC = f"ddl.{DB}.t"


@pytest.fixture
def db(services):
    db = Db(services).fresh(DB)
    db("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20))", "CREATE TABLE other (id INT PRIMARY KEY)")
    yield db
    db(f"DROP DATABASE IF EXISTS {DB}")
    db.close()


def test_alters_in_one_batch_schema_changes_history_and_heartbeats(tmp_path, services, db):
    worker = create(tmp_path, "cdc", connector_config(services, **{
        "topic.prefix": "ddl", "database.include.list": DB, "table.include.list": f"{DB}.t",
        "snapshot.mode": "schema_only", "include.schema.changes": "true", "heartbeat.interval.ms": "1000"}))
    run(worker, "cdc")  # schema_only: from the binlog's end, no rows
    lake = tmp_path / "lake"
    db("INSERT INTO t VALUES (1, 'a')",
       "ALTER TABLE t ADD COLUMN n INT NOT NULL DEFAULT 7",
       "INSERT INTO t VALUES (2, 'b', 8)",
       "ALTER TABLE t CHANGE COLUMN v title VARCHAR(40), DROP COLUMN n",
       "UPDATE t SET title = 'bb' WHERE id = 2")
    # Killed after the write: the resumed batch records the history and the events once.
    r = cli("run", "cdc", worker=worker, env={CRASH_ENV: "write"})
    assert r.returncode == CRASH_EXIT, r.stderr
    run(worker, "cdc")

    events = [v for _, v in payloads(lake, TOPIC)]
    assert [(e["op"], e["after"]) for e in events] == [
        ("c", {"id": 1, "v": "a"}), ("c", {"id": 2, "v": "b", "n": 8}), ("u", {"id": 2, "title": "bb"})]
    assert events[2]["before"] == {"id": 2, "title": "b"}
    schemas = [json.loads(v)["schema"]["fields"][1]["fields"] for _, v in records(lake, TOPIC)]
    assert [[f["field"] for f in s] for s in schemas] == [["id", "v"], ["id", "v", "n"], ["id", "title"]]

    changes = [(k["databaseName"], v["ddl"], v["tableChanges"]) for k, v in payloads(lake, "ddl")]
    assert [c[1].split()[0:2] for c in changes] == [["ALTER", "TABLE"], ["ALTER", "TABLE"]]
    assert changes[0][0] == DB and changes[0][2] == [{"type": "ALTER", "id": f"{DB}.t"}]
    history = DeltaTable(str(lake / "_connect" / "mysql" / "cdc" / "schema-history")).to_pyarrow_table().to_pylist()
    assert [h["ddl"] for h in history] == [c[1] for c in changes]
    assert all(h["file"] and h["pos"] > 0 for h in history)

    # Only an uncaptured table changes: the offset still moves on, with a heartbeat.
    before = offsets(worker, "cdc")[0]["offset"]
    db("INSERT INTO other VALUES (1)")
    run(worker, "cdc")
    after = offsets(worker, "cdc")[0]["offset"]
    assert (after["file"], after["pos"]) > (before["file"], before["pos"])
    beats = payloads(lake, "__debezium-heartbeat.ddl")
    assert len(beats) == 2 and beats[-1][0] == {"serverName": "ddl"} and beats[-1][1]["ts_ms"] > 0
    assert len(records(lake, TOPIC)) == 3
