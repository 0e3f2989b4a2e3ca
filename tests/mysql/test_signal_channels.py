"""execute-snapshot's filters and the kafka signal channel, on the private MariaDB and the test bed's Kafka
broker: `additional-conditions` (per table) and the older `additional-condition` (every table) snapshot only
the matching rows, kept in the offset while the table is read; a filter that could leave the chunk query is
refused by name; `surrogate-key` orders the chunks; a signal sent to the kafka channel is applied once, by a
run that never crashed and by one killed after every step of the batch that reads it.

The rows expected here are those of the filter's SELECT on the same server; tests/mysql/test_signals_oracle.py
sends filtered signals through both channels to the real Debezium 2.3.4 and 3.5.0 and compares their records."""

from __future__ import annotations

import json
import logging

import pytest

from ingest.runtime.faults import SOURCE_STEPS
from tests.conftest import cli
from tests.crash_kit import kill_at_each_step
from tests.mysql._cdc import Db, connector_config, create, offsets, payloads, run

DB = "lc_cdc_sigch"
SIGNALS = f"{DB}.debezium_signal"


@pytest.fixture
def db(services):
    db = Db(services).fresh(DB)
    db("CREATE TABLE t (id INT PRIMARY KEY, color VARCHAR(10), v VARCHAR(20))",
       "INSERT INTO t SELECT seq, ELT(1 + seq % 3, 'blue', 'red', 'green'), CONCAT('v', seq) FROM seq_1_to_40",
       "CREATE TABLE u (id INT PRIMARY KEY, color VARCHAR(10), rank_desc INT UNIQUE)",
       "INSERT INTO u SELECT seq, ELT(1 + seq % 2, 'blue', 'red'), 100 - seq FROM seq_1_to_12",
       "CREATE TABLE debezium_signal (id VARCHAR(42) PRIMARY KEY, type VARCHAR(32) NOT NULL, data VARCHAR(2048))")
    yield db
    db(f"DROP DATABASE IF EXISTS {DB}")
    db.close()


def _config(services, prefix: str, **extra):
    return connector_config(services, **{
        "topic.prefix": prefix, "database.include.list": DB, "table.include.list": f"{DB}.t,{DB}.u",
        "snapshot.mode": "schema_only", "signal.data.collection": SIGNALS, "incremental.snapshot.chunk.size": "4",
        "lakeconnect.incremental.snapshot.chunks.per.batch": "2", **extra})


def _signal(db, sid: str, data: dict) -> None:
    db.conn.cursor().execute(f"INSERT INTO {SIGNALS} VALUES (%s, 'execute-snapshot', %s)",
                             (sid, json.dumps({"type": "incremental", **data})))


def _reads(lake, prefix: str, table: str) -> list[int]:
    """The keys of a table's `r` events in topic order; none when nothing was ever written for the table."""
    topic = f"{prefix}.{DB}.{table}"
    if not (lake / "topics" / topic).exists():
        return []
    return [k["id"] for k, v in payloads(lake, topic) if v and v["op"] == "r"]


def _ids(db, table: str, where: str) -> list[int]:
    cur = db.conn.cursor()
    cur.execute(f"SELECT id FROM {DB}.{table} WHERE {where} ORDER BY id")
    return [r[0] for r in cur.fetchall()]


def _until_caught_up(worker, name: str) -> None:
    r = cli("run", "--until-caught-up", name, worker=worker)
    assert r.returncode == 0, r.stderr


def test_additional_conditions_snapshot_only_the_matching_rows(tmp_path, services, db):
    worker = create(tmp_path, "sig", _config(services, "sig"))
    lake = tmp_path / "lake"
    run(worker, "sig")  # schema_only: nothing yet
    # An OR in the filter: bare after the chunk bounds (Debezium's `bounds AND a OR b`) it would read id 2 in
    # every chunk; in parentheses each row comes once.
    _signal(db, "cond-1", {"data-collections": [f"{DB}.t", f"{DB}.u"], "additional-conditions": [
        {"data-collection": f"{DB}.T", "filter": "color = 'blue' OR id = 2"}]})
    _signal(db, "evil-1", {"data-collections": [f"{DB}.u"],
                           "additional-conditions": [{"data-collection": f"{DB}.u", "filter": "1=1; DELETE FROM u"}]})
    run(worker, "sig")  # reads the signals
    r = run(worker, "sig")  # applies them: the first chunks of t
    assert ("signal 'evil-1' (execute-snapshot): the filter for 'lc_cdc_sigch.u' contains ';'; a filter is one SQL "
            "condition, without statement separators or comments (the row was ignored)") in r.stderr, r.stderr
    current = offsets(worker, "sig")[0]["offset"]["incremental_snapshot"]["current"]
    assert current["id"] == f"{DB}.t" and current["filter"] == "color = 'blue' OR id = 2"  # a resumed batch's
    _until_caught_up(worker, "sig")
    assert _reads(lake, "sig", "t") == _ids(db, "t", "color = 'blue' OR id = 2")
    assert len(_reads(lake, "sig", "t")) == 14
    assert _reads(lake, "sig", "u") == list(range(1, 13))  # no condition for u: every row, once
    cur = db.conn.cursor()
    cur.execute(f"SELECT COUNT(*) FROM {DB}.u")
    assert cur.fetchone()[0] == 12  # the refused filter ran nowhere

    # Debezium 2.0/2.1's single additional-condition: every table of the signal, over additional-conditions.
    _signal(db, "cond-2", {"data-collections": [f"{DB}.t", f"{DB}.u"], "additional-condition": "color = 'red'",
                           "additional-conditions": [{"data-collection": f"{DB}.t", "filter": "id = 1"}]})
    _until_caught_up(worker, "sig")
    assert _reads(lake, "sig", "t")[14:] == _ids(db, "t", "color = 'red'")
    assert _reads(lake, "sig", "u")[12:] == _ids(db, "u", "color = 'red'") == list(range(1, 13, 2))
    assert "incremental_snapshot" not in offsets(worker, "sig")[0]["offset"]

    # surrogate-key: chunks read in the order of another column (rank_desc falls as id rises).
    _signal(db, "surrogate-1", {"data-collections": [f"{DB}.u"], "surrogate-key": "rank_desc",
                                "additional-conditions": [{"data-collection": f"{DB}.u", "filter": "id > 2"}]})
    _until_caught_up(worker, "sig")
    reads = _reads(lake, "sig", "u")[18:]
    assert sorted(reads) == list(range(3, 13))
    assert set(reads[:4]) == {12, 11, 10, 9}  # the first chunk: the 4 lowest rank_desc (by id: 3 to 6)


def test_a_filter_the_server_refuses_skips_the_table_with_a_warning(tmp_path, services, db):
    worker = create(tmp_path, "sig", _config(services, "sig"))
    run(worker, "sig")
    _signal(db, "typo-1", {"data-collections": [f"{DB}.t", f"{DB}.u"],
                           "additional-conditions": [{"data-collection": f"{DB}.t", "filter": "colour = 'blue'"}]})
    run(worker, "sig")
    r = run(worker, "sig")
    assert f"incremental snapshot of {DB}.t: its additional condition (colour = 'blue') cannot be run" in r.stderr
    _until_caught_up(worker, "sig")
    assert not (tmp_path / "lake" / "topics" / f"sig.{DB}.t").exists()  # nothing was ever written for t
    assert _reads(tmp_path / "lake", "sig", "u") == list(range(1, 13))


def _produce(bootstrap: str, topic: str, *records: tuple[str, dict | str]) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap})
    for key, value in records:
        producer.produce(topic, key=key.encode(), value=value if isinstance(value, str) else json.dumps(value),
                         partition=0)
    assert producer.flush(30) == 0


def test_a_kafka_signal_is_applied_once_even_by_a_run_killed_after_every_step(tmp_path, services, db, kafka):
    topic = kafka.unique_topic("sig-signals")
    kafka.create_topic(topic, 1)
    extra = {"signal.enabled.channels": "source,kafka", "signal.kafka.topic": topic,
             "signal.kafka.bootstrap.servers": kafka.bootstrap}
    clean = create(tmp_path / "clean", "kfk", _config(services, "kfk", **extra))
    crashed = create(tmp_path / "crashed", "kfk", _config(services, "kfk", **{**extra, "database.server.id": "10001"}))
    for worker in (clean, crashed):
        run(worker, "kfk")  # schema_only: nothing yet
    snapshot = {"data-collections": [f"{DB}.t"], "type": "incremental",
                "additional-conditions": [{"data-collection": f"{DB}.t", "filter": "color <> 'green'"}]}
    _produce(kafka.bootstrap, topic,
             ("other-connector", {"id": "not-ours", "type": "execute-snapshot",
                                  "data": {"data-collections": [f"{DB}.u"]}}),
             ("kfk", "{not json"),
             ("kfk", {"id": "k-1", "type": "execute-snapshot", "data": snapshot}))
    r = run(clean, "kfk")  # the plan reads the signal and the first chunks at once
    assert "kafka signal at offset 1: the value is not JSON" in r.stderr, r.stderr
    assert "signal 'k-1' (execute-snapshot) applied" in r.stderr
    assert offsets(clean, "kfk")[0]["offset"]["lakeconnect.signals.kafka"] == 3
    kill_at_each_step(crashed, "kfk", SOURCE_STEPS)  # that same batch, killed after each step in turn
    for worker in (clean, crashed):
        _until_caught_up(worker, "kfk")
    expected = _ids(db, "t", "color <> 'green'")
    for base in ("clean", "crashed"):
        lake = tmp_path / base / "lake"
        assert _reads(lake, "kfk", "t") == expected, base  # each matching row once: the signal applied once
        assert _reads(lake, "kfk", "u") == [], base  # another connector's signal is not ours
    events = lambda base: [(k, v and (v["op"], v["after"])) for k, v in  # noqa: E731
                           payloads(tmp_path / base / "lake", f"kfk.{DB}.t")]
    assert events("crashed") == events("clean")
    assert offsets(crashed, "kfk")[0]["offset"]["lakeconnect.signals.kafka"] == 3

    # A later signal is read from the position in the offsets: the earlier ones are not applied again.
    _produce(kafka.bootstrap, topic, ("kfk", {"id": "k-2", "type": "execute-snapshot",
                                              "data": {"data-collections": [f"{DB}.u"]}}))
    _until_caught_up(clean, "kfk")
    assert _reads(tmp_path / "clean" / "lake", "kfk", "t") == expected
    assert _reads(tmp_path / "clean" / "lake", "kfk", "u") == list(range(1, 13))
    assert offsets(clean, "kfk")[0]["offset"]["lakeconnect.signals.kafka"] == 4


def test_a_plan_reads_at_most_max_signals_and_the_next_goes_on_from_there(kafka, monkeypatch):
    """However many records the signal topic holds, a plan reads MAX_SIGNALS of them (bounded memory); the
    position it returns is after the last it read, so the next plan reads the rest, none twice."""
    from connectors.mysql import config as C
    from connectors.mysql import kafka_signals

    class Config(dict):
        originals = property(lambda self: dict(self))

    topic = kafka.unique_topic("sig-bounded")
    kafka.create_topic(topic, 1)
    _produce(kafka.bootstrap, topic, *[("kb", {"id": f"s-{i}", "type": "pause-snapshot", "data": {}})
                                       for i in range(5)])
    config = Config({C.SIGNAL_KAFKA_TOPIC: topic, C.SIGNAL_KAFKA_BOOTSTRAP: kafka.bootstrap,
                     C.SIGNAL_KAFKA_GROUP: "kafka-signal", C.TOPIC_PREFIX: "kb"})
    monkeypatch.setattr(kafka_signals, "MAX_SIGNALS", 2)
    log = logging.getLogger("test")
    seen, position = [], 0
    for expected in (2, 4, 5, 5):
        rows, position = kafka_signals.read_signals(config, position, log)
        seen += [sid for sid, _, _ in rows]
        assert position == expected
    assert seen == [f"s-{i}" for i in range(5)]
