"""Debezium's own throughput next to the MySQL CDC source's, on the same binlog (not a test; prints only).

    .venv/bin/python tests/bench/bench_debezium.py [--events 100000] [--snapshot-rows 200000] [--port 3317]

On the private MariaDB of .services/services.env (`--port`: another of its instances) and the test bed's
Kafka broker, with the jars tests/services/fetch_jars.sh fetched:

- snapshot: a --snapshot-rows table, read by Debezium 2.3.4 (Kafka Connect 3.5 standalone, JsonConverter
  with schemas, into the broker) from the connector's start until its topic holds every row, and by one
  lakeconnect batch (into its Delta topic): rows/s of each;
- binlog: --events inserted while Debezium's connector is paused and after lakeconnect's (snapshot.mode
  schema_only) has taken the binlog's end; then Debezium resumes and lakeconnect runs one batch over the
  same range: events/s of each, Debezium's from its resume until its topic holds every event.

The Connect worker's start is printed apart; neither side's number includes its JVM start.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from tests.bench.bench_mysql import DDL, SERVICES_ENV, insert, read_env  # noqa: E402
from tests.mysql.connect_oracle import ConnectWorker  # noqa: E402


def high_watermark(bootstrap: str, topic: str) -> int:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-debezium"})
    try:
        if topic not in c.list_topics(topic, timeout=10).topics or \
                c.list_topics(topic, timeout=10).topics[topic].error is not None:
            return 0
        return c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1]
    finally:
        c.close()


def wait_count(bootstrap: str, topic: str, n: int, timeout: float = 1800) -> float:
    """Seconds until `topic` holds `n` records."""
    t0 = time.perf_counter()
    while high_watermark(bootstrap, topic) < n:
        if time.perf_counter() - t0 > timeout:
            raise TimeoutError(f"{topic}: fewer than {n} records after {timeout}s")
        time.sleep(0.2)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=100_000)
    ap.add_argument("--snapshot-rows", type=int, default=200_000)
    ap.add_argument("--port", type=int, default=None, help="MariaDB port (default: services.env's first)")
    args = ap.parse_args()

    import pymysql

    from ingest.config.worker import load_worker
    from ingest.runtime.worker import Worker

    env = read_env(SERVICES_ENV)
    bootstrap = env["LAKECONNECT_TEST_KAFKA_BOOTSTRAP"]
    settings = dict(host=env["LAKECONNECT_TEST_MARIADB_HOST"],
                    port=args.port or int(env["LAKECONNECT_TEST_MARIADB_PORT"]),
                    user=env["LAKECONNECT_TEST_MARIADB_USER"], password=env["LAKECONNECT_TEST_MARIADB_PASSWORD"])
    db = f"lc_bench_dbz_{uuid.uuid4().hex[:8]}"
    conn = pymysql.connect(**settings, autocommit=True)
    cur = conn.cursor()
    cur.execute(f"CREATE DATABASE {db}")
    cur.execute(f"USE {db}")  # the sequence engine's seq_1_to_N tables resolve in the current database
    tmp = Path(tempfile.mkdtemp(prefix="lc-bench-dbz-"))
    connect = ConnectWorker("debezium23", bootstrap, tmp / "connect")
    try:
        cur.execute(DDL.format(t=f"{db}.snap"))
        cur.execute(DDL.format(t=f"{db}.events"))
        insert(cur, f"{db}.snap", 1, args.snapshot_rows)
        connect.start()
        print(f"Kafka Connect (Debezium 2.3.4) start: {connect.started_s:.1f} s")
        worker = Worker(load_worker(None, {"lake.root": str(tmp / "lake"), "spark.master": "local[*]",
                                           "spark.driver.memory": "2g"}))
        worker.spark().range(1).count()
        run_id = uuid.uuid4().hex[:6]

        def config(name: str, table: str, mode: str, server_id: int) -> dict[str, str]:
            return {"connector.class": "io.debezium.connector.mysql.MySqlConnector", "tasks.max": "1",
                    "database.hostname": settings["host"], "database.port": str(settings["port"]),
                    "database.user": settings["user"], "database.password": settings["password"],
                    "database.server.id": str(server_id), "database.ssl.mode": "disabled", "topic.prefix": name,
                    "database.include.list": db, "table.include.list": f"{db}.{table}", "snapshot.mode": mode,
                    "include.schema.changes": "false", "schema.history.internal.kafka.bootstrap.servers": bootstrap,
                    "schema.history.internal.kafka.topic": f"{name}-history",
                    "topic.creation.default.replication.factor": "1", "topic.creation.default.partitions": "1",
                    "key.converter": "org.apache.kafka.connect.json.JsonConverter",
                    "value.converter": "org.apache.kafka.connect.json.JsonConverter"}

        def ours(name: str, cfg: dict[str, str]) -> tuple[int, float]:
            worker.create(name, {"name": name, **cfg})
            t = time.perf_counter()
            report = worker.run(name)[0]
            return report.records, time.perf_counter() - t

        # Snapshot.
        name = f"dbz-snap-{run_id}"
        t = time.perf_counter()
        connect.put(name, config(name, "snap", "initial", 41000))
        wait_count(bootstrap, f"{name}.{db}.snap", args.snapshot_rows)
        took = time.perf_counter() - t
        n, took_ours = ours(f"lc-snap-{run_id}", config(f"lc-snap-{run_id}", "snap", "initial", 42000))
        print(f"snapshot rows/s: Debezium {args.snapshot_rows / took:,.0f} ({args.snapshot_rows:,} in {took:.1f} s); "
              f"lakeconnect {n / took_ours:,.0f} ({n:,} in {took_ours:.1f} s)")

        # Binlog: the same range for both.
        name = f"dbz-cdc-{run_id}"
        connect.put(name, config(name, "events", "schema_only", 43000))
        connect.wait_for(name, lambda: connect.status(name).get("tasks", [{}])[0].get("state") == "RUNNING",
                         "a running task")
        time.sleep(3)  # its binlog client connected
        connect.pause(name)
        lc = f"lc-cdc-{run_id}"
        ours(lc, config(lc, "events", "schema_only", 44000))  # takes the binlog's end
        insert(cur, f"{db}.events", 1, args.events)
        connect.resume(name)
        took = wait_count(bootstrap, f"{name}.{db}.events", args.events)
        t = time.perf_counter()
        report = worker.run(lc)[0]
        took_ours = time.perf_counter() - t
        print(f"binlog events/s: Debezium {args.events / took:,.0f} ({args.events:,} in {took:.1f} s); "
              f"lakeconnect {report.records / took_ours:,.0f} ({report.records:,} in {took_ours:.1f} s)")
    finally:
        connect.stop()
        cur.execute(f"DROP DATABASE IF EXISTS {db}")
        conn.close()
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
