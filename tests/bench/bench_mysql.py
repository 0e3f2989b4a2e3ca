"""Benchmark of the MySQL CDC source on the private MariaDB (not a test).

    .venv/bin/python tests/bench/bench_mysql.py [--events 200000] [--files 4] [--snapshot-rows 1000000] [--reps 2]
        [--row-metadata NO_LOG,FULL]

It creates its own database (`lc_bench_cdc_<random>`) on the MariaDB of .services/services.env
(`make services-up`) and drops it at the end. In one Spark process it prints:

- binlog: --events row events (bulk INSERTs into a 6-column table, spread over --files binlog files by
  FLUSH BINARY LOGS) turned into topic records by one connector batch (decode on executors, Debezium
  envelopes, JsonConverter with schemas, topic write, commit), against the baseline: a plain
  python-mysql-replication loop reading the same range (`freeze_schema`, row events only, every row's
  values touched) in this process. Events/s of both, the ratio (goal >= 1.0), best and median of --reps;
  once per --row-metadata the server writes the events with (NO_LOG: MariaDB's default, the columns come
  from the connector's schema history; FULL: the binlog names them too), in turns within each rep;
- snapshot: an initial snapshot of a --snapshot-rows table into its topic: rows/s;
- memory: the driver's Python RSS after the smaller and the larger batch (the data never passes through
  the driver, so it should not follow the data).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import uuid
from pathlib import Path

SERVICES_ENV = Path(__file__).resolve().parents[2] / ".services" / "services.env"
DDL = """CREATE TABLE {t} (id BIGINT NOT NULL, name VARCHAR(100) NOT NULL, quantity INT NOT NULL,
price DECIMAL(10,2) NOT NULL, born DATE, updated_at DATETIME NOT NULL, PRIMARY KEY (id)) ENGINE=InnoDB"""


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def read_env(path: Path) -> dict[str, str]:
    out = {}
    for line in path.read_text().splitlines():
        if "=" in line and not line.startswith("#"):
            k, v = line.split("=", 1)
            out[k.strip()] = v.strip()
    return out


def insert(cur, table: str, first: int, count: int) -> None:
    step = 50_000
    for lo in range(first, first + count, step):
        hi = min(lo + step, first + count) - 1
        cur.execute(f"INSERT INTO {table} SELECT seq, CONCAT('name-', seq), seq % 1000, (seq % 10000) / 100, "
                    f"DATE_ADD('2000-01-01', INTERVAL seq % 9000 DAY), "
                    f"DATE_ADD('2020-01-01', INTERVAL seq SECOND) FROM seq_{lo}_to_{hi}")


def baseline(settings: dict, start, end, server_id: int) -> tuple[int, float]:
    """python-mysql-replication alone over (start, end]: row events, values touched."""
    from pymysqlreplication import BinLogStreamReader
    from pymysqlreplication.row_event import DeleteRowsEvent, UpdateRowsEvent, WriteRowsEvent

    from connectors.mysql.binlog import Position

    t = time.perf_counter()
    stream = BinLogStreamReader(connection_settings=settings, server_id=server_id, log_file=start.file,
                                log_pos=start.pos, resume_stream=True, blocking=False, freeze_schema=True,
                                only_events=[WriteRowsEvent, UpdateRowsEvent, DeleteRowsEvent])
    n = 0
    try:
        for event in stream:
            if Position(stream.log_file, event.packet.log_pos) > end:
                break
            for row in event.rows:
                n += len(row["values"]) and 1
    finally:
        stream.close()
    return n, time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=200_000)
    ap.add_argument("--files", type=int, default=4)
    ap.add_argument("--snapshot-rows", type=int, default=1_000_000)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--row-metadata", default="NO_LOG,FULL",
                    help="binlog_row_metadata values to measure, comma separated (the server's is restored)")
    args = ap.parse_args()
    metadata = [m.strip().upper() for m in args.row_metadata.split(",") if m.strip()]

    import pymysql

    from connectors.mysql import binlog
    from ingest.config.worker import load_worker
    from ingest.runtime.worker import Worker

    env = read_env(SERVICES_ENV)
    settings = dict(host=env["LAKECONNECT_TEST_MARIADB_HOST"], port=int(env["LAKECONNECT_TEST_MARIADB_PORT"]),
                    user=env["LAKECONNECT_TEST_MARIADB_USER"], password=env["LAKECONNECT_TEST_MARIADB_PASSWORD"])
    db = f"lc_bench_cdc_{uuid.uuid4().hex[:8]}"
    conn = pymysql.connect(**settings, autocommit=True)
    cur = conn.cursor()
    cur.execute(f"CREATE DATABASE {db}")
    cur.execute(f"USE {db}")  # the sequence engine's seq_1_to_N tables resolve in the current database
    tmp = Path(tempfile.mkdtemp(prefix="lc-bench-cdc-"))
    try:
        cur.execute(DDL.format(t=f"{db}.events"))
        cur.execute(DDL.format(t=f"{db}.snap"))
        worker = Worker(load_worker(None, {"lake.root": str(tmp / "lake"), "spark.master": "local[*]",
                                           "spark.driver.memory": "2g"}))
        t = time.perf_counter()
        spark = worker.spark()
        spark.range(1).count()
        print(f"spark start: {time.perf_counter() - t:.1f} s (default parallelism "
              f"{spark.sparkContext.defaultParallelism})")
        ids = iter(range(1, 1_000_000))

        def connector(table: str, mode: str) -> str:
            name = f"bench-cdc-{next(ids)}"
            worker.create(name, {
                "name": name, "connector.class": "io.debezium.connector.mysql.MySqlConnector",
                "database.hostname": settings["host"], "database.port": str(settings["port"]),
                "database.user": settings["user"], "database.password": settings["password"],
                "database.server.id": str(20000 + next(ids) * 16), "topic.prefix": name,
                "database.include.list": db, "table.include.list": f"{db}.{table}", "snapshot.mode": mode,
                "include.schema.changes": "false",
                "key.converter": "org.apache.kafka.connect.json.JsonConverter",
                "value.converter": "org.apache.kafka.connect.json.JsonConverter"})
            return name

        def batch(name: str):
            t = time.perf_counter()
            reports = worker.run(name)
            return reports[0], time.perf_counter() - t

        cur.execute("SELECT @@GLOBAL.binlog_row_metadata")
        server_metadata = cur.fetchone()[0]
        ours = {m: [] for m in metadata}
        base = {m: [] for m in metadata}
        first = 0
        try:
            for rep in range(args.reps + 1):  # the first round is untimed: loading, code generation
                for meta in (metadata if rep % 2 else metadata[::-1]):  # each first in turn: no order effect
                    cur.execute(f"SET GLOBAL binlog_row_metadata={meta}")
                    name = connector("events", "schema_only")
                    batch(name)  # from the binlog's end
                    start = binlog.master_position(cur)
                    per_file = args.events // args.files
                    for f in range(args.files):
                        insert(cur, f"{db}.events", first + 1, per_file)
                        first += per_file
                        if f < args.files - 1:
                            cur.execute("FLUSH BINARY LOGS")
                    end = binlog.master_position(cur)
                    n, took_base = baseline(settings, start, end, 30000 + rep)
                    report, took = batch(name)
                    assert report.records == per_file * args.files, report
                    if rep == 0:
                        print(f"warm-up ({meta}): {report.records:,} events in {took:.2f} s; baseline "
                              f"{took_base:.2f} s")
                        continue
                    ours[meta].append(report.records / took)
                    base[meta].append(n / took_base)
                    print(f"  steps (ms): {report.timings_ms}")
                    print(f"binlog rep {rep} ({meta}): lakeconnect {report.records:,} events in {took:.2f} s "
                          f"({report.records / took:,.0f}/s); python-mysql-replication loop {n:,} in "
                          f"{took_base:.2f} s ({n / took_base:,.0f}/s); ratio {took_base / took:.2f}")
        finally:
            cur.execute(f"SET GLOBAL binlog_row_metadata={server_metadata}")
        for meta in metadata:
            o, b = ours[meta], base[meta]
            print(f"binlog events/s ({meta}): lakeconnect best {max(o):,.0f} median {statistics.median(o):,.0f}; "
                  f"baseline best {max(b):,.0f} median {statistics.median(b):,.0f}; ratio best "
                  f"{max(x / y for x, y in zip(o, b)):.2f} median {statistics.median(x / y for x, y in zip(o, b)):.2f}"
                  f" (goal >= 1.0)")
        if len(metadata) > 1:
            m0 = statistics.median(ours[metadata[0]])
            print(" ".join(f"{metadata[0]}/{m} {m0 / statistics.median(ours[m]):.2f}" for m in metadata[1:])
                  + f" (lakeconnect's median events/s; goal: {metadata[0]} no slower)")
        print(f"memory after the binlog batches: driver RSS {rss_mib():.0f} MiB")

        insert(cur, f"{db}.snap", 1, args.snapshot_rows)
        name = connector("snap", "initial")
        report, took = batch(name)
        assert report.records == args.snapshot_rows, report
        print(f"  steps (ms): {report.timings_ms}")
        print(f"snapshot: {report.records:,} rows in {took:.2f} s ({report.records / took:,.0f} rows/s), "
              f"driver RSS {rss_mib():.0f} MiB")
    finally:
        cur.execute(f"DROP DATABASE IF EXISTS {db}")
        conn.close()
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
