"""Ad-hoc incremental snapshots through the signalling table, on the private MariaDB: chunks by primary
key read in parallel Spark tasks, concurrent changes (between batches and while a chunk is read) never
contradicted, pause/resume/stop, malformed signals refused with a clear warning, and a chunk batch killed
after every step giving the same events as a connector that never crashed."""

from __future__ import annotations

import json
import logging

import pytest

from ingest.runtime.faults import SOURCE_STEPS
from tests.conftest import cli
from tests.crash_kit import kill_at_each_step
from tests.mysql._cdc import Db, connector_config, create, offsets, payloads, run

DB = "lc_cdc_inc"
TOPIC = f"inc.{DB}.t"
SIGNALS = f"{DB}.debezium_signal"


@pytest.fixture
def db(services):
    db = Db(services).fresh(DB)
    db("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20))",
       "INSERT INTO t SELECT seq, CONCAT('v', seq) FROM seq_1_to_40",
       "CREATE TABLE nokey (v INT)",
       "CREATE TABLE debezium_signal (id VARCHAR(42) PRIMARY KEY, type VARCHAR(32) NOT NULL, data VARCHAR(2048))")
    yield db
    db(f"DROP DATABASE IF EXISTS {DB}")
    db.close()


def _config(services, **extra):
    return connector_config(services, **{
        "topic.prefix": "inc", "database.include.list": DB, "table.include.list": f"{DB}.t,{DB}.nokey",
        "snapshot.mode": "schema_only", "signal.data.collection": SIGNALS, "incremental.snapshot.chunk.size": "5",
        "lakeconnect.incremental.snapshot.chunks.per.batch": "2", **extra})


def _signal(db, sid: str, kind: str, data: str | None) -> None:
    db.conn.cursor().execute(f"INSERT INTO {SIGNALS} VALUES (%s, %s, %s)", (sid, kind, data))


def _replay(lake) -> dict[int, str]:
    """The table as a consumer applying the topic in order sees it."""
    rows: dict[int, str] = {}
    for key, value in payloads(lake, TOPIC):
        if value is None:
            continue
        if value["op"] == "d":
            rows.pop(key["id"], None)
        else:
            rows[key["id"]] = value["after"]["v"]
    return rows


def _table(db) -> dict[int, str]:
    cur = db.conn.cursor()
    cur.execute(f"SELECT id, v FROM {DB}.t")
    return dict(cur.fetchall())


def test_incremental_snapshot_with_concurrent_changes_pause_stop_and_crashes(tmp_path, services, db):
    clean = create(tmp_path / "clean", "inc", _config(services))
    crashed = create(tmp_path / "crashed", "inc", _config(services, **{"database.server.id": "10001"}))
    for worker in (clean, crashed):
        run(worker, "inc")  # schema_only: nothing yet
    _signal(db, "bad-1", "execute-snapshot", "{not json")
    _signal(db, "bad-2", "explode", None)
    _signal(db, "snap-1", "execute-snapshot", json.dumps({"data-collections": [f"{DB}.nokey", f"{DB}.t"],
                                                          "type": "incremental"}))
    for worker in (clean, crashed):
        run(worker, "inc")  # reads the signals
    r = run(clean, "inc")  # the first chunks; the malformed signals are refused, each by name
    assert "signal 'bad-1' (execute-snapshot): data is not JSON" in r.stderr, r.stderr
    assert "signal 'bad-2': unknown type 'explode'" in r.stderr
    assert f"table {DB}.nokey has no primary key" in r.stderr
    run(crashed, "inc")
    assert sorted(_replay(tmp_path / "clean" / "lake")) == list(range(1, 11))  # 2 chunks of 5

    db("UPDATE t SET v = 'changed' WHERE id = 30", "DELETE FROM t WHERE id = 35", "INSERT INTO t VALUES (41, 'new')")
    run(clean, "inc")
    kill_at_each_step(crashed, "inc", SOURCE_STEPS)  # the second chunk batch, killed after each step in turn
    _signal(db, "pause-1", "pause-snapshot", None)
    for worker in (clean, crashed):
        run(worker, "inc")  # reads the pause signal (and the batch the crashed one finished)
        run(worker, "inc")  # paused: no chunk
    assert offsets(clean, "inc")[0]["offset"]["incremental_snapshot"]["paused"] is True
    paused = _replay(tmp_path / "clean" / "lake")
    _signal(db, "resume-1", "resume-snapshot", None)
    for worker in (clean, crashed):
        r = cli("run", "--until-caught-up", "inc", worker=worker)
        assert r.returncode == 0, r.stderr
    for lake in (tmp_path / "clean" / "lake", tmp_path / "crashed" / "lake"):
        assert _replay(lake) == _table(db)
        reads = [k["id"] for k, v in payloads(lake, TOPIC) if v and v["op"] == "r"]
        assert sorted(reads) == [i for i in range(1, 41) if i != 35]  # each row once; 41 came as a create
        assert all(v["source"]["snapshot"] == "incremental" for k, v in payloads(lake, TOPIC) if v and v["op"] == "r")
    assert len(paused) < 39
    events = lambda lake: [(k, v and (v["op"], v["after"])) for k, v in payloads(lake, TOPIC)]  # noqa: E731
    assert events(tmp_path / "crashed" / "lake") == events(tmp_path / "clean" / "lake")
    assert "incremental_snapshot" not in offsets(clean, "inc")[0]["offset"]

    # stop-snapshot: a started snapshot ends without reading the rest.
    _signal(db, "snap-2", "execute-snapshot", json.dumps({"data-collections": [f"{DB}.t"]}))
    run(clean, "inc")
    _signal(db, "stop-1", "stop-snapshot", json.dumps({"data-collections": [f"{DB}.t"], "type": "incremental"}))
    before = len(payloads(tmp_path / "clean" / "lake", TOPIC))
    run(clean, "inc")  # the first chunks of snap-2, and the stop signal read
    run(clean, "inc")  # stopped
    run(clean, "inc")
    assert len(payloads(tmp_path / "clean" / "lake", TOPIC)) == before + 10
    assert "incremental_snapshot" not in offsets(clean, "inc")[0]["offset"]


def test_a_change_made_while_a_chunk_is_read_wins_over_the_chunk(tmp_path, spark, services, db, monkeypatch):
    """The watermark window: a row updated after the window opened but before the chunk read finished is
    dropped from the chunk; its change event, in the same batch, carries the newer row."""
    from connectors.mysql import incremental_snapshot
    from connectors.mysql.source import MySqlConnector
    from ingest.api import TaskContext
    from ingest.config.configdef import Config

    raw = _config(services)
    definition = MySqlConnector.config_def()
    values, problems = definition.validate(raw, strict=False)
    assert not problems
    task = MySqlConnector.task_class(Config(definition, values, raw), TaskContext(
        "inc", 0, None, lambda: spark, logging.LoggerAdapter(logging.getLogger("t"), {}), str(tmp_path)))
    try:
        first = task.plan({})
        _signal(db, "snap-1", "execute-snapshot", json.dumps({"data-collections": [f"{DB}.t"]}))
        signal_plan = task.plan({'{"server":"inc"}': first.ranges[0].end})
        task.read(signal_plan)  # records the signal for the next plan
        stage = incremental_snapshot.stage_chunks

        def racing(task, layout, ranges, path, where=None):
            db("UPDATE t SET v = 'raced' WHERE id = 3")  # after the window opened, before the chunk is read
            stage(task, layout, ranges, path, where)

        monkeypatch.setattr(incremental_snapshot, "stage_chunks", racing)
        plan = task.plan({'{"server":"inc"}': signal_plan.ranges[0].end})
        assert plan.details["incremental"]["chunks"] == 2
        rows = []
        for batch in task.read(plan):
            rows += [(r["seq"], r["key"]["id"], r["value"]["op"], r["value"]["after"]["v"])
                     for r in batch.df.select("seq", "key", "value").collect() if batch.topics == (TOPIC,)]
        rows.sort()
        assert [(k, op, v) for _, k, op, v in rows if k == 3] == [(3, "u", "raced")]
        assert sorted(k for _, k, op, _ in rows if op == "r") == [i for i in range(1, 11) if i != 3]
        assert rows[0][2] == "u"  # the binlog's events first, then the chunk rows
    finally:
        task.close()
