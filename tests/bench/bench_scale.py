"""Benchmark of lakeconnect at scale (not a test): a topic after a year of small batches, an offsets table
with a long history, a JDBC source over many tables.

    PYTHONPATH=. .venv/bin/python tests/bench/bench_scale.py [--commits 10000] [--offset-rows 1000000]
        [--tables 1000] [--skip topic,offsets,jdbc]

Everything lives in a temporary directory, removed at the end. It prints:

1. topic: a topic of 4 partitions after --commits small batches of 10 records (~9,000 a year for an hourly
   connector), each its own Delta commit and file, written with delta-rs as an append's commit is (write
   time, per commit, is printed). Then: the time to plan a read of it (`TopicTable.describe`: every
   partition's start and end offsets from the add actions), the time of one more batch through
   `TopicTable.append` (Spark), whole and its Delta commit alone (the part that grows with the table),
   the table's bytes on disk against the live data files' bytes. Then the same after
   `Maintainer` with compact, checkpoint and vacuum (what `lakeconnect maintenance run` does; no time
   travel kept: log and vacuum windows of 0). Goals after maintenance: plan < 1 s, commit < 200 ms,
   storage < 1.2x the live data.
2. offsets: an offsets table holding --offset-rows rows of history (one sink connector, 100 partitions,
   each committed --offset-rows / 100 times; 1,000 rows a commit) and 1,000 other connectors' rows: the time of `OffsetStore.committed(connector)`, the lookup every
   batch makes (goal < 100 ms), before and after maintenance's history compaction.
3. jdbc: a SQLite database of --tables tables (id INTEGER PRIMARY KEY, name TEXT; 3 rows each) and a
   `mode=incrementing` JDBC source over all of them, planned through the CLI with
   `LAKECONNECT_CRASH_AT=plan` (the process ends right after the plan step), against the same for one
   table: the plan's time (goal < 10 s) and the overhead per table.
4. cdc: a MySQL CDC connector over --cdc-tables tables of 3 rows in the private MariaDB of the test
   services (`make services-up` first): the snapshot batch and a binlog batch with an update in every
   table, each through the CLI, with its step timings.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def _live_bytes(uri: str) -> int:
    from deltalake import DeltaTable

    import pyarrow as pa

    return sum(pa.table(DeltaTable(uri).get_add_actions(flatten=True)).column("size_bytes").to_pylist())


def _one_job(stderr: str) -> str:
    """The run log's "N of M topics written together (...)", if it says so."""
    found = re.search(r"(\d+ of \d+ topics written together \([^)]*\))", stderr)
    return f"; {found.group(1)}" if found else ""


def _batch(cli: list[str], connector: str, what: str, tables: int) -> None:
    """Run one batch of `connector` in its own process; print its records, topics, time and steps."""
    t = time.perf_counter()
    r = subprocess.run(cli + ["run", connector, "--json"], capture_output=True, text=True, cwd=REPO)
    took = time.perf_counter() - t
    if r.returncode != 0:
        raise RuntimeError(f"the {what} failed: {r.stderr[-2000:]}")
    report = json.loads(r.stdout.strip().splitlines()[-1])
    steps = {k: round(v) for k, v in (report.get("timings_ms") or {}).items()}
    print(f"  {what}: {report.get('records', 0)} records into {len(report.get('topics') or [])} topics in {took:.1f} s "
          f"({took / tables * 1000:.0f} ms per table); steps (ms) {json.dumps(steps)}{_one_job(r.stderr)}", flush=True)


def _timed(call, reps: int = 3) -> tuple[float, object]:
    best, result = None, None
    for _ in range(reps):
        t = time.perf_counter()
        result = call()
        took = time.perf_counter() - t
        best = took if best is None else min(best, took)
    return best, result


def bench_topic(base: Path, commits: int) -> None:
    import pyarrow as pa
    from deltalake import DeltaTable, write_deltalake

    from ingest.spark import get_spark
    from ingest.topics import TOPIC_SCHEMA, TopicTable

    lake = base / "lake"
    topic = TopicTable(str(lake), "hourly")
    topic.create(4)
    ends = [0, 0, 0, 0]
    start = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    t0 = time.perf_counter()
    rng = random.Random(7)  # values that do not compress away, as real records' do not
    for c in range(commits):
        rows = []
        for i in range(10):
            p = (c + i) % 4
            rows.append({"partition": p, "offset": ends[p], "timestamp": start + dt.timedelta(hours=c),
                         "timestamp_type": "CreateTime", "key": f"k{i}".encode(), "value": rng.randbytes(100),
                         "headers": [], "key_schema_id": None, "value_schema_id": None})
            ends[p] += 1
        write_deltalake(topic.uri, pa.Table.from_pylist(rows, schema=TOPIC_SCHEMA), mode="append")
        if (c + 1) % 1000 == 0:
            print(f"  {c + 1} commits written ({(time.perf_counter() - t0) / (c + 1) * 1000:.1f} ms each)",
                  flush=True)
    spark = get_spark({"spark.master": "local[2]", "spark.sql.shuffle.partitions": "4"})

    def measure(label: str, version: int) -> None:
        plan, d = _timed(topic.describe)
        assert sum(d.end_offsets.values()) == sum(ends), (d.end_offsets, ends)
        batch = spark.range(0, 10, 1, 1).selectExpr("cast(concat('k', cast(id as string)) as binary) as key",
                                                    "cast('x' as binary) as value", "id as seq")
        warm = topic.append(batch, app_id="warm", version=version)  # Spark's first job of the kind: untimed
        for p, part in warm.partitions.items():
            ends[p] += part.count
        took, commits = [], []
        import ingest.delta.write as write_module

        real_commit = write_module.commit_files

        def timed_commit(*args, **kw):  # the Delta commit of the batch's files, inside the append
            t = time.perf_counter()
            try:
                return real_commit(*args, **kw)
            finally:
                commits.append(time.perf_counter() - t)

        write_module.commit_files = timed_commit
        try:
            for r in range(3):
                t = time.perf_counter()
                res = topic.append(batch, app_id="bench", version=version * 10 + r)
                took.append(time.perf_counter() - t)
                for p, part in res.partitions.items():
                    ends[p] += part.count
        finally:
            write_module.commit_files = real_commit
        files = pa.table(DeltaTable(topic.uri).get_add_actions(flatten=True)).num_rows
        on_disk, live = _size(Path(topic.uri)), _live_bytes(topic.uri)
        print(f"  {label}: {files} files, table version {DeltaTable(topic.uri).version()}; plan a read "
              f"(describe) {plan * 1000:.0f} ms (best of 3); a 10-record batch's Delta commit {min(commits) * 1000:.0f} ms "
              f"best, {statistics.median(commits) * 1000:.0f} ms median, the whole append with its Spark jobs "
              f"{min(took) * 1000:.0f} ms best, {statistics.median(took) * 1000:.0f} ms median; storage {on_disk / 1e6:.1f} MB on disk "
              f"for {live / 1e6:.1f} MB of live files ({on_disk / live:.2f}x)", flush=True)

    measure("before maintenance", 1)
    t = time.perf_counter()
    # What `lakeconnect maintenance run` does, with no time travel kept (log and vacuum windows of 0: no
    # batch is in flight here).
    from ingest.maintenance import CHECKPOINT, COMPACT, VACUUM, Maintainer, Settings, Target

    settings = Settings(operations=(COMPACT, CHECKPOINT, VACUUM), vacuum_retention_hours=0, log_retention_hours=0,
                        allow_short_vacuum=True)
    report = Maintainer(str(lake), None, settings).maintain(Target("topic", "hourly", topic.uri))
    assert report.error is None, report.error
    print(f"  maintenance: {time.perf_counter() - t:.1f} s ({json.dumps(report.done, sort_keys=True)}); right after "
          f"it: {report.stored_bytes / 1e6:.2f} MB on disk for {report.live_bytes / 1e6:.2f} MB of live files "
          f"({report.stored_bytes / report.live_bytes:.2f}x)", flush=True)
    measure("after maintenance", 2)


def bench_offsets(base: Path, rows: int) -> None:
    from ingest.state.stores import OffsetStore, state_uri

    store = OffsetStore(state_uri(str(base / "lake"), "connect-offsets"))
    start = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    t = time.perf_counter()
    written, commits, batch = 0, 0, 0
    while written < rows:  # 10 batches' rows (100 partitions each) per append: 1,000 rows a commit
        chunk = []
        for _ in range(10):
            batch += 1
            chunk += [{"connector": "connect-big", "partition": json.dumps({"kafka_partition": p, "kafka_topic": "t"}),
                       "offset": json.dumps({"kafka_offset": batch * 10}), "task": 0, "batch_id": batch,
                       "written_at": start + dt.timedelta(seconds=batch)} for p in range(100)]
        store.append(chunk)
        written, commits = written + len(chunk), commits + 1
        if commits % 100 == 0:
            print(f"  {written:,} rows written ({time.perf_counter() - t:.0f} s)", flush=True)
    store.append([{"connector": f"connect-other-{c}", "partition": json.dumps({"kafka_partition": 0, "kafka_topic": "t"}),
                   "offset": json.dumps({"kafka_offset": 1}), "task": 0, "batch_id": 1, "written_at": start}
                  for c in range(1000)])
    took, found = _timed(lambda: store.committed("connect-big"), reps=5)
    assert len(found) == 100 and {e.offset["kafka_offset"] for e in found.values()} == {batch * 10}, found
    print(f"  offsets table: {written + 1000:,} rows in {commits + 1} commits; the latest offsets of one "
          f"connector (100 partitions): {took * 1000:.0f} ms (best of 5)", flush=True)
    # Maintenance's history compaction: rows of the last 168 h kept, of older ones the newest per key.
    from ingest.maintenance import HISTORY, Maintainer, Settings, Target

    t = time.perf_counter()
    report = Maintainer(str(base / "lake"), None, Settings(operations=(HISTORY,)),
                        now=(start + dt.timedelta(seconds=batch)).timestamp() + 30 * 24 * 3600).maintain(
        Target("state", "connect-offsets", store.uri))
    assert report.error is None, report.error
    took, after = _timed(lambda: OffsetStore(store.uri).committed("connect-big"), reps=5)
    assert {p: e.offset for p, e in after.items()} == {p: e.offset for p, e in found.items()}
    print(f"  history maintenance: {time.perf_counter() - t:.1f} s ({json.dumps(report.done[HISTORY])}); the same "
          f"lookup after it: {took * 1000:.0f} ms (best of 5)", flush=True)


def bench_jdbc(base: Path, tables: int) -> None:
    db = base / "many.db"
    with sqlite3.connect(db) as c:
        for i in range(tables):
            c.execute(f"CREATE TABLE t{i:04d} (id INTEGER PRIMARY KEY, name TEXT)")
            c.executemany(f"INSERT INTO t{i:04d} (name) VALUES (?)", [("a",), ("b",), ("c",)])
    lake = base / "jdbc-lake"
    worker = base / "worker.properties"
    worker.write_text(f"lake.root={lake}\nlake.allowed.paths={base}\nspark.master=local[2]\n"
                      "spark.sql.shuffle.partitions=4\n"
                      "key.converter=org.apache.kafka.connect.storage.StringConverter\n"
                      "value.converter=org.apache.kafka.connect.json.JsonConverter\n")

    def plan(name: str, whitelist: str | None) -> float:
        config = {"name": name, "connector.class": "io.confluent.connect.jdbc.JdbcSourceConnector",
                  "tasks.max": "1", "connection.url": f"jdbc:sqlite:{db}", "mode": "incrementing",
                  "incrementing.column.name": "id", "topic.prefix": f"{name}-"}
        if whitelist:
            config["table.whitelist"] = whitelist
        path = base / f"{name}.json"
        path.write_text(json.dumps(config))
        cli = [sys.executable, "-m", "ingest", "--worker", str(worker)]
        made = subprocess.run(cli + ["connectors", "create", str(path)], capture_output=True, text=True, cwd=REPO)
        if made.returncode != 0:
            raise RuntimeError(f"creating {name} failed: {made.stderr[-2000:]}")
        t = time.perf_counter()
        r = subprocess.run(cli + ["run", name], capture_output=True, text=True, cwd=REPO,
                           env={**os.environ, "LAKECONNECT_CRASH_AT": "plan"})
        took = time.perf_counter() - t
        if r.returncode != 137:
            raise RuntimeError(f"planning {name} ended with {r.returncode}: {r.stderr[-2000:]}")
        return took

    one = min(plan(f"one{i}", "t0000") for i in range(2))
    many = plan("many", None)
    print(f"  JDBC source: the process up to the end of the plan step: 1 table {one:.1f} s, {tables} tables "
          f"{many:.1f} s; plan of {tables} tables {many - one:.1f} s over one table's, "
          f"{(many - one) / max(1, tables - 1) * 1000:.1f} ms per table", flush=True)
    cli = [sys.executable, "-m", "ingest", "--worker", str(worker)]
    for what in ("JDBC first batch (every table's rows)", "JDBC second batch (nothing new)"):
        _batch(cli, "many", what, tables)


def bench_cdc(base: Path, tables: int) -> None:
    """A MySQL CDC connector over `tables` tables of the test services' private MariaDB (`make
    services-up`): the snapshot batch, then a binlog batch with one update in every table."""
    import pymysql

    env = dict(line.split("=", 1) for line in (REPO / ".services" / "services.env").read_text().splitlines()
               if "=" in line and not line.startswith("#"))
    host, port = env["LAKECONNECT_TEST_MARIADB_HOST"], int(env["LAKECONNECT_TEST_MARIADB_PORT"])
    user, password = env["LAKECONNECT_TEST_MARIADB_USER"], env["LAKECONNECT_TEST_MARIADB_PASSWORD"]
    conn = pymysql.connect(host=host, port=port, user=user, password=password, autocommit=True)
    cur = conn.cursor()
    cur.execute("DROP DATABASE IF EXISTS bench_scale_cdc")
    cur.execute("CREATE DATABASE bench_scale_cdc")
    cur.execute("USE bench_scale_cdc")
    for i in range(tables):
        cur.execute(f"CREATE TABLE t{i:04d} (id INT PRIMARY KEY, name VARCHAR(20))")
        cur.execute(f"INSERT INTO t{i:04d} VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    lake = base / "cdc-lake"
    worker = base / "cdc-worker.properties"
    worker.write_text(f"lake.root={lake}\nlake.allowed.paths={base}\nspark.master=local[2]\n"
                      "spark.sql.shuffle.partitions=4\n"
                      "key.converter=org.apache.kafka.connect.json.JsonConverter\n"
                      "value.converter=org.apache.kafka.connect.json.JsonConverter\n")
    config = {"name": "cdc", "connector.class": "io.debezium.connector.mysql.MySqlConnector",
              "database.hostname": host, "database.port": str(port), "database.user": user,
              "database.password": password, "database.server.id": "10077", "topic.prefix": "scale",
              "database.include.list": "bench_scale_cdc", "include.schema.changes": "false"}
    path = base / "cdc.json"
    path.write_text(json.dumps(config))
    cli = [sys.executable, "-m", "ingest", "--worker", str(worker)]
    made = subprocess.run(cli + ["connectors", "create", str(path)], capture_output=True, text=True, cwd=REPO)
    if made.returncode != 0:
        raise RuntimeError(f"creating the CDC connector failed: {made.stderr[-2000:]}")

    try:
        _batch(cli, "cdc", "snapshot batch", tables)
        for i in range(tables):
            cur.execute(f"UPDATE t{i:04d} SET name = 'z' WHERE id = 1")
        _batch(cli, "cdc", "binlog batch, an update in every table", tables)
    finally:
        cur.execute("DROP DATABASE IF EXISTS bench_scale_cdc")
        conn.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--commits", type=int, default=10_000)
    ap.add_argument("--offset-rows", type=int, default=1_000_000)
    ap.add_argument("--tables", type=int, default=1000)
    ap.add_argument("--cdc-tables", type=int, default=1000)
    ap.add_argument("--skip", default="", help="comma-separated parts to leave out: topic, offsets, jdbc, cdc")
    args = ap.parse_args()
    skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    base = Path(tempfile.mkdtemp(prefix="lc-bench-scale-"))
    try:
        if "topic" not in skip:
            print(f"1. a topic after {args.commits:,} small commits", flush=True)
            bench_topic(base, args.commits)
        if "offsets" not in skip:
            print(f"2. an offsets table with {args.offset_rows:,} rows of history", flush=True)
            bench_offsets(base, args.offset_rows)
        if "jdbc" not in skip:
            print(f"3. a JDBC source over {args.tables:,} tables", flush=True)
            bench_jdbc(base, args.tables)
        if "cdc" not in skip:
            print(f"4. a MySQL CDC source over {args.cdc_tables:,} tables", flush=True)
            bench_cdc(base, args.cdc_tables)
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
