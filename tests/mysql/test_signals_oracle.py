"""Incremental snapshots with filters, against the real Debezium in the real Kafka Connect.

Two pairs, each a Debezium connector in its Kafka Connect worker (tests/mysql/connect_oracle.py) and the
lakeconnect connector given the same JSON: Debezium 2.3.4's MySQL connector, and 3.5.0's MariaDB connector.
Both sides take no data at first (`snapshot.mode`), then get the same signals: an `execute-snapshot` row in
the pair's signalling table (2.3.4 reads only the single `additional-condition`, for every table of the signal;
3.5.0 only `additional-conditions`, per table), then one on the kafka channel (one signal topic for both
pairs, each signal keyed by its connector's `topic.prefix`). The rows each snapshot reads must be Debezium's,
in its order; against 2.3.4, every record of every topic must be the same, the signalling table's topic too
(but for the watermark rows, each side's own), once the wall-clock and snapshot-position fields are set
aside (the oracle's `comparable_pair`).

The filters hold no `OR`: Debezium ANDs a filter bare after its chunk bounds, so `a OR b` reads b's rows in
every chunk, where lakeconnect puts it in parentheses (docs/connectors/mysql-cdc.md, "Deliberate differences").
"""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.mysql._cdc import Db, connector_config, create, run
from tests.mysql.connect_oracle import ConnectWorker, jars_present, read_topic, topics
from tests.mysql.test_debezium_oracle import differences, kafka_records, lake_records, lake_topics

DB = "dbz_sig_oracle"
NAME = "signals-oracle"


def _reads(records: list[tuple]) -> list[int]:
    return [json.loads(r[2])["payload"]["id"] for r in records
            if r[3] and json.loads(r[3])["payload"]["op"] == "r"]


def _ids(db: Db, table: str, where: str) -> list[int]:
    cur = db.conn.cursor()
    cur.execute(f"SELECT id FROM {DB}.{table} WHERE {where} ORDER BY id")
    return [r[0] for r in cur.fetchall()]


@dataclass(eq=False)
class Pair:
    """One Debezium connector and the lakeconnect connector given the same JSON: its topic prefix, signalling
    table and replica ids (each reads the binlog as a replica of its own: one id would have the server drop the
    other's connection)."""

    flavour: str
    prefix: str
    signals: str
    server_id: str
    lake_server_id: str
    connect: ConnectWorker | None = None
    worker: Path | None = None

    def config(self, services, bootstrap: str, signal_topic: str) -> dict[str, str]:
        return connector_config(services, **{
            "topic.prefix": self.prefix, "database.include.list": DB, "table.include.list": f"{DB}.t,{DB}.u",
            "database.ssl.mode": "disabled", "snapshot.mode": "no_data" if self.flavour == "debezium3" else
            "schema_only", "signal.data.collection": f"{DB}.{self.signals}", "incremental.snapshot.chunk.size": "4",
            "signal.enabled.channels": "source,kafka", "signal.kafka.topic": signal_topic,
            "signal.kafka.bootstrap.servers": bootstrap,
            "schema.history.internal.kafka.bootstrap.servers": bootstrap,
            "schema.history.internal.kafka.topic": f"{self.prefix}-history",
            "topic.creation.default.replication.factor": "1", "topic.creation.default.partitions": "1"})

    def theirs(self, bootstrap: str) -> dict[str, list[tuple]]:
        return {t: kafka_records(read_topic(bootstrap, t)) for t in topics(bootstrap, self.prefix)}

    def ours(self) -> dict[str, list[tuple]]:
        lake = self.worker.parent / "lake"
        return {t: lake_records(lake, t) for t in lake_topics(lake, self.prefix)}

    def signal(self, db: Db, sid: str, data: dict) -> None:
        db.conn.cursor().execute(f"INSERT INTO {DB}.{self.signals} VALUES (%s, 'execute-snapshot', %s)",
                                 (sid, json.dumps({"type": "incremental", **data})))

    def wait(self, bootstrap: str, what: str, want: dict[str, list[int]], timeout: float = 300) -> None:
        def done() -> bool:
            found = self.theirs(bootstrap)
            return all(_reads(found.get(f"{self.prefix}.{DB}.{t}", [])) == ids for t, ids in want.items())
        self.connect.wait_for(NAME, done, what, timeout)

    def run(self, times: int) -> None:
        for _ in range(times):
            run(self.worker, self.prefix)


def _signal_rows(records: list[tuple]) -> list[tuple[str, str]]:
    return [(json.loads(r[3])["payload"]["after"]["id"], json.loads(r[3])["payload"]["after"]["type"])
            for r in records if r[3]]


def test_filtered_incremental_snapshots_are_debeziums(services, kafka_bootstrap, tmp_path):
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    for flavour in ("debezium23", "debezium3"):
        missing = jars_present(flavour)
        if missing:
            pytest.fail(missing, pytrace=False)
    stamp = int(time.time())
    signal_topic = f"sigoracle{stamp}-signal"
    v2 = Pair("debezium23", f"sigoracle{stamp}", "signal_v2", "10400", "10410")
    v3 = Pair("debezium3", f"sigoracle{stamp}v3", "signal_v3", "10420", "10430")
    db = Db(services).fresh(DB)
    db("CREATE TABLE t (id INT PRIMARY KEY, color VARCHAR(10), v VARCHAR(20))",
       "INSERT INTO t SELECT seq, ELT(1 + seq % 3, 'blue', 'red', 'green'), CONCAT('v', seq) FROM seq_1_to_30",
       "CREATE TABLE u (id INT PRIMARY KEY, color VARCHAR(10))",
       "INSERT INTO u SELECT seq, ELT(1 + seq % 2, 'blue', 'red') FROM seq_1_to_12",
       *(f"CREATE TABLE {p.signals} (id VARCHAR(42) PRIMARY KEY, type VARCHAR(32) NOT NULL, data VARCHAR(2048))"
         for p in (v2, v3)))
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    for f in admin.create_topics([NewTopic(signal_topic, num_partitions=1, replication_factor=1)]).values():
        f.result(30)  # the signal topic exists before either side reads it
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    pairs = (v2, v3)
    try:
        with ThreadPoolExecutor(2) as pool:
            started = [pool.submit(ConnectWorker(p.flavour, kafka_bootstrap, tmp_path / p.flavour).start)
                       for p in pairs]
            for p in pairs:  # lakeconnect first: its schema_only snapshot, then the binlog from there
                config = p.config(services, kafka_bootstrap, signal_topic)
                p.worker = create(tmp_path / p.prefix, p.prefix, {**config, "database.server.id": p.lake_server_id})
                p.run(1)
            for p, f in zip(pairs, started):
                p.connect = f.result()
                p.connect.put(NAME, {**p.config(services, kafka_bootstrap, signal_topic),
                                     "database.server.id": p.server_id})
        # Both sides stream before the signals: an insert each must write, once Debezium reads the binlog (a row
        # inserted before its snapshot took the binlog position is in neither snapshot nor stream).
        for p in pairs:
            p.connect.wait_for(NAME, lambda: "Keepalive thread is running" in p.connect.log.read_text(), "streaming",
                               120)
        db(f"INSERT INTO {DB}.u VALUES (100, 'blue')")
        for p in pairs:
            p.connect.wait_for(NAME, lambda: f"{p.prefix}.{DB}.u" in topics(kafka_bootstrap, p.prefix), "the insert",
                               300)

        # 1: the source channel. Debezium 2.3.4 reads only the single `additional-condition` (every table of
        # the signal); 3.5 only `additional-conditions` (per table).
        v2.signal(db, "sig-1", {"data-collections": [f"{DB}.t", f"{DB}.u"], "additional-condition": "color = 'blue'"})
        v3.signal(db, "sig-1", {"data-collections": [f"{DB}.t", f"{DB}.u"], "additional-conditions": [
            {"data-collection": f"{DB}.t", "filter": "color = 'blue'"}]})
        blue_t, blue_u, all_u = _ids(db, "t", "color = 'blue'"), _ids(db, "u", "color = 'blue'"), _ids(db, "u", "1")
        want = {v2: {"t": blue_t, "u": blue_u}, v3: {"t": blue_t, "u": all_u}}
        # 2: the kafka channel, one topic for both, each signal keyed by its connector's topic.prefix.
        older = {v2: {"additional-condition": "id > 6"},
                 v3: {"additional-conditions": [{"data-collection": f"{DB}.u", "filter": "id > 6"}]}}
        failures: list[str] = []
        for step in ("source", "kafka"):
            for p in pairs:
                if step == "kafka":
                    producer.produce(signal_topic, key=p.prefix.encode(), value=json.dumps({
                        "type": "execute-snapshot",
                        "data": {"type": "incremental", "data-collections": [f"{DB}.u"], **older[p]}}).encode())
                    want[p] = {"t": want[p]["t"], "u": want[p]["u"] + _ids(db, "u", "id > 6")}
            producer.flush(30)
            for p in pairs:
                p.wait(kafka_bootstrap, f"the {step} channel's snapshot", want[p])
                p.run(4)
                ours = p.ours()
                found = {t: _reads(ours.get(f"{p.prefix}.{DB}.{t}", [])) for t in want[p]}
                if found != want[p]:
                    failures.append(f"{p.flavour} {step}: lakeconnect read {found}, Debezium {want[p]}")

        theirs, ours = v2.theirs(kafka_bootstrap), v2.ours()
        # The signalling table's topic: Debezium writes its rows as it does a captured table's. The watermark
        # rows each side inserts are its own (Debezium: a pair per chunk; lakeconnect: a pair per batch, each
        # with a random id); the signal's row must be the same record.
        signals = f"{v2.prefix}.{DB}.{v2.signals}"
        for side in (theirs, ours):
            side[signals] = [r for r in side.get(signals, [])
                             if r[3] and not json.loads(r[3])["payload"]["after"]["type"].startswith("snapshot-window")]
        assert [i for i, _ in _signal_rows(theirs[signals])] == ["sig-1"]
        n = sum(len(v) for v in theirs.values())
        print(f"compared {n} Debezium 2.3 records on {len(theirs)} topics")
        failures += differences(theirs, ours)
        assert not failures, "\n".join(failures[:40])
    finally:
        for p in pairs:
            if p.connect:
                p.connect.stop()
        db(f"DROP DATABASE IF EXISTS {DB}")
        db.close()
