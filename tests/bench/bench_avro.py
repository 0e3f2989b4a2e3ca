"""Benchmark of the AvroConverter (not a test): a JDBC bulk copy of a MariaDB table with AvroConverter values
against the same copy with JsonConverter values (schemas enabled), in one Spark process.

    PYTHONPATH=. .venv/bin/python tests/bench/bench_avro.py [--rows 1000000] [--reps 3]

It seeds a table as tests/bench/bench_jdbc.py does (its own `lc_bench_<random>` database on the services'
MariaDB, dropped at the end), serves the lake's Schema Registry from a REST server in this process, and runs a
`mode=bulk` connector of each converter once untimed (the first batch creates the topic and registers the
schema), then --reps times interleaved. It prints records/s of both, the ratio Avro / JSON (goal >= 0.9), how
many registry calls each Avro batch made after the first (goal: none for a known schema), and the topics' sizes.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import time
import uuid
from pathlib import Path

from tests.bench.bench_jdbc import SERVICES_ENV, read_env, seed, with_database


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()

    import sqlalchemy as sa

    from connectors.converters import _registry_client
    from ingest.config.worker import load_worker
    from ingest.rest.app import ConnectApi
    from ingest.rest.server import RestServer
    from ingest.runtime.worker import Worker

    env = read_env(SERVICES_ENV)
    admin_url, server_jdbc = env.get("LAKECONNECT_TEST_MARIADB_URL"), env.get("LAKECONNECT_TEST_MARIADB_JDBC")
    if not admin_url or not server_jdbc:
        raise SystemExit(f"no MariaDB: start the services ({SERVICES_ENV})")
    database = f"lc_bench_{uuid.uuid4().hex[:10]}"
    jdbc_url = with_database(server_jdbc, database)
    admin = sa.create_engine(admin_url)
    with admin.begin() as conn:
        conn.exec_driver_sql(f"CREATE DATABASE `{database}`")
    tmp = Path(tempfile.mkdtemp(prefix="lakeconnect-bench-avro-"))
    try:
        engine = sa.create_engine(sa.engine.make_url(admin_url).set(database=database))
        with engine.begin() as conn:
            conn.exec_driver_sql("CREATE TABLE bench_digits (d INT PRIMARY KEY)")
            conn.exec_driver_sql("INSERT INTO bench_digits VALUES " + ",".join(f"({i})" for i in range(1000)))
        took = seed(engine, "bench_rows", args.rows)
        print(f"seeded {args.rows:,} rows in {took:.1f} s")
        worker = Worker(load_worker(None, {"lake.root": str(tmp / "lake"), "spark.master": "local[*]",
                                           "spark.driver.memory": "2g"}))
        server = RestServer(ConnectApi(worker), "http://127.0.0.1:0")
        threading.Thread(target=server.serve_forever, daemon=True).start()
        registry = server.url + "/registry"
        converters = {
            "json": {"value.converter": "org.apache.kafka.connect.json.JsonConverter",
                     "value.converter.schemas.enable": "true"},
            "avro": {"value.converter": "io.confluent.connect.avro.AvroConverter",
                     "value.converter.schema.registry.url": registry},
        }
        calls = {"n": 0}
        original = _registry_client.RegistryClient._call

        def counted(self, *a, **k):
            calls["n"] += 1
            return original(self, *a, **k)

        _registry_client.RegistryClient._call = counted
        for kind, settings in converters.items():
            worker.create(f"bench-{kind}", {
                "name": f"bench-{kind}", "connector.class": "io.confluent.connect.jdbc.JdbcSourceConnector",
                "tasks.max": "1", "connection.url": jdbc_url, "connection.user": "root", "connection.password": "",
                "mode": "bulk", "poll.interval.ms": "1", "table.whitelist": "bench_rows",
                "topic.prefix": f"bench-{kind}-", **settings})
        times: dict[str, list[float]] = {"json": [], "avro": []}
        for rep in range(args.reps + 1):
            for kind in converters:
                before = calls["n"]
                t = time.perf_counter()
                [report] = worker.run(f"bench-{kind}")
                elapsed = time.perf_counter() - t
                assert report.records == args.rows, report
                label = "warm-up" if rep == 0 else f"rep {rep}"
                extra = f", {calls['n'] - before} registry calls" if kind == "avro" else ""
                print(f"{label} {kind}: {args.rows:,} records in {elapsed:.2f} s ({args.rows / elapsed:,.0f}/s){extra}")
                if rep:
                    times[kind].append(elapsed)
        med = {k: statistics.median(v) for k, v in times.items()}
        best = {k: min(v) for k, v in times.items()}
        print(f"records/s median: avro {args.rows / med['avro']:,.0f}, json {args.rows / med['json']:,.0f}; "
              f"ratio avro/json median {med['json'] / med['avro']:.2f}, best {best['json'] / best['avro']:.2f} "
              "(goal >= 0.9)")
        for kind in converters:
            topic = tmp / "lake" / "topics" / f"bench-{kind}-bench_rows"
            size = sum(p.stat().st_size for p in topic.rglob("*.parquet"))
            print(f"topic bench-{kind}-bench_rows: {size / 2**20:,.1f} MiB of Parquet ({args.reps + 1} batches)")
        server.shutdown()
    finally:
        with admin.begin() as conn:
            conn.exec_driver_sql(f"DROP DATABASE IF EXISTS `{database}`")
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
