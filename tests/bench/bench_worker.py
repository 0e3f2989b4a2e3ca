"""Benchmark of the long-running worker (not a test): each figure is the whole command a scheduler runs,
`lakeconnect run` sending its run to a warm `lakeconnect worker`, against dlt's whole command on the same
rows, in the same run.

    .venv/bin/python tests/bench/bench_worker.py [--polls] [--bulk 1000000] [--fleet 100 --minutes 5]
                                                 [--soak 10000] [--reps 3]

dlt runs in its own virtualenv (`bash tests/services/setup.sh --bench` makes `.venv-dlt`) as
tests/bench/dlt_baseline.py, one process per run. MariaDB comes from .services/services.env (`make
services-up`); the benchmark makes its own database (`lc_wbench_<random>`) and drops it at the end.

- `--polls`: a table of 100,000 rows on SQLite and on MariaDB, copied once by both (untimed); then, --reps
  times each: a poll that finds nothing new, one after 10 new rows, one after 10,000 new rows. The
  lakeconnect connector is the JDBC source in incrementing mode (JSON values with schemas, a Delta topic);
  dlt's is `sql_table` with `dlt.sources.incremental("id")` (pyarrow backend) into a Delta table. The
  median wall time of each command, and dlt / lakeconnect (goal >= 2). For context, one poll of each kind by
  `lakeconnect run` without a worker (a process and a Spark JVM of its own).
- `--bulk N`: a MariaDB table of N rows (bench_jdbc's columns) copied whole: the JDBC source in bulk mode
  into a topic, against dlt's connectorx backend into a Delta table (replace), --reps times interleaved
  after one untimed run each; best and median, and dlt / lakeconnect (goal >= 1.5 at 1M, >= 2 at 10M). Then
  the floor: connectorx reading the table alone into Arrow, nothing written (no copy can take less).
- `--fleet N --minutes M`: N JDBC source connectors (a SQLite table each) on one worker, each polled once a
  minute for M minutes, the polls spread evenly over the minute and sent as Airflow's tasks send them (the
  same HTTP client, in this process); a tenth of the tables get 10 new rows each minute. Run latency
  p50/p95/max, and the CPU the worker and its JVM used, as a share of the machine's cores.
- `--soak N`: N runs of one connector (3 new rows every 50th run), the worker's /health (process memory,
  threads, open files; the JVM's heap after a full GC, threads and listener queues) after 100 runs and at
  the end, each taken after 11 s idle (the Delta runtime's idle threads end after 10 s).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.bench.bench_jdbc import DDL, SERVICES_ENV, insert_rows, read_env, with_database  # noqa: E402

PYTHON = str(ROOT / ".venv" / "bin" / "python")
DLT_PYTHON = str(ROOT / ".venv-dlt" / "bin" / "python")
DLT_SCRIPT = str(ROOT / "tests" / "bench" / "dlt_baseline.py")
POLL_ROWS = 100_000


class Bench:
    """A worker file, a worker process and the lake under one temporary directory."""

    def __init__(self, root: Path, **worker_extra: str):
        self.root = root
        self.lake = root / "lake"
        self.worker_file = root / "worker.properties"
        settings = {"lake.root": str(self.lake), "lake.allowed.paths": str(root),
                    "key.converter": "org.apache.kafka.connect.json.JsonConverter",
                    "value.converter": "org.apache.kafka.connect.json.JsonConverter", **worker_extra}
        self.worker_file.write_text("".join(f"{k}={v}\n" for k, v in settings.items()))
        self.proc: subprocess.Popen | None = None
        self.url = ""

    def lakeconnect(self, *args: str, worker: bool = True) -> tuple[float, subprocess.CompletedProcess]:
        env = {k: v for k, v in os.environ.items() if k != "LAKECONNECT_WORKER_URL"}
        if worker:
            env["LAKECONNECT_WORKER_URL"] = self.url
        started = time.perf_counter()
        done = subprocess.run([PYTHON, "-m", "ingest", "--worker", str(self.worker_file), *args], cwd=ROOT, env=env,
                              capture_output=True, text=True)
        took = time.perf_counter() - started
        if done.returncode != 0:
            raise SystemExit(f"lakeconnect {' '.join(args)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
        return took, done

    def create(self, name: str, config: dict[str, str]) -> None:
        path = self.root / f"{name}.json"
        path.write_text(json.dumps({"name": name, "config": config}))
        self.lakeconnect("connectors", "create", str(path), worker=False)

    def start(self) -> None:
        log = open(self.root / "worker.log", "w")
        self.proc = subprocess.Popen([PYTHON, "-m", "ingest", "--worker", str(self.worker_file), "worker", "--listen",
                                      "http://127.0.0.1:0"], cwd=ROOT, stdout=subprocess.PIPE, stderr=log, text=True)
        line = self.proc.stdout.readline()
        self.url = re.search(r"listening on (\S+) ", line).group(1)
        deadline = time.monotonic() + 300
        while "Spark session ready" not in (self.root / "worker.log").read_text():
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise SystemExit(f"the worker did not get ready:\n{(self.root / 'worker.log').read_text()[-3000:]}")
            time.sleep(0.5)

    def health(self) -> dict:
        with urllib.request.urlopen(f"{self.url}/health", timeout=60) as r:
            return json.loads(r.read())["worker"]

    def cpu_s(self) -> float:
        """CPU seconds the worker process and its children (the Spark JVM, Python workers) have used."""
        return _tree_cpu_s(self.proc.pid)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(120)


def _tree_cpu_s(pid: int) -> float:
    total = 0.0
    tick = os.sysconf("SC_CLK_TCK")
    todo = [pid]
    while todo:
        p = todo.pop()
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick
            children = Path(f"/proc/{p}/task/{p}/children").read_text().split()
            todo += [int(c) for c in children]
        except OSError:
            continue
    return total


def _jvm_pid(pid: int) -> int | None:
    try:
        for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split():
            if b"java" in Path(f"/proc/{child}/cmdline").read_bytes():
                return int(child)
    except OSError:
        pass
    return None


def dlt(source: str, table: str, dest: Path, *args: str) -> float:
    if not Path(DLT_PYTHON).exists():
        raise SystemExit("no .venv-dlt: run `bash tests/services/setup.sh --bench` first")
    started = time.perf_counter()
    done = subprocess.run([DLT_PYTHON, DLT_SCRIPT, "--source", source, "--table", table, "--dest", str(dest / "dest"),
                           "--pipelines-dir", str(dest / "pipelines"), *args], capture_output=True, text=True)
    took = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"dlt failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return took


def _jdbc_source(url: str, table: str, prefix: str, mode: str = "incrementing") -> dict[str, str]:
    config = {"connector.class": "io.confluent.connect.jdbc.JdbcSourceConnector", "connection.url": url,
              "mode": mode, "table.whitelist": table, "topic.prefix": prefix, "tasks.max": "1"}
    if mode == "incrementing":
        config["incrementing.column.name"] = "id"
    return config


# --- polls ------------------------------------------------------------------------------------------------


def polls(bench: Bench, mariadb: tuple | None, reps: int) -> None:
    sqlite_path = bench.root / "poll.db"
    con = sqlite3.connect(sqlite_path)
    con.execute("CREATE TABLE rows_ (id INTEGER PRIMARY KEY, name TEXT, quantity INTEGER, price REAL, updated TEXT)")
    con.commit()

    def sqlite_add(first: int, n: int) -> None:
        with sqlite3.connect(sqlite_path) as c:
            c.executemany("INSERT INTO rows_ VALUES (?, ?, ?, ?, ?)",
                          [(i, f"customer {i}", i % 1000, (i % 100000) / 100, "2024-01-01 00:00:00")
                           for i in range(first, first + n)])

    databases = [("sqlite", f"jdbc:sqlite:{sqlite_path}", f"sqlite:///{sqlite_path}", "rows_", sqlite_add)]
    if mariadb is not None:
        engine, jdbc, url = mariadb
        with engine.begin() as c:
            c.exec_driver_sql(DDL.format(table="poll_rows"))

        def mariadb_add(first: int, n: int) -> None:
            with engine.begin() as c:
                insert_rows(c, "poll_rows", first, n)

        databases.append(("mariadb", jdbc, url, "poll_rows", mariadb_add))
    print(f"\npolls: the whole command, median of {reps} (lakeconnect through the worker; dlt incremental, pyarrow)")
    print(f"{'database':9} {'poll':18} {'lakeconnect':>12} {'dlt':>8} {'dlt/lc':>7}  {'lc, no worker':>14}")
    for kind, jdbc, url, table, add in databases:
        add(1, POLL_ROWS)
        bench.create(f"poll-{kind}", _jdbc_source(jdbc, table, f"{kind}-"))
        out = bench.root / f"dlt-{kind}"
        bench.lakeconnect("run", f"poll-{kind}")
        dlt(url, table, out, "--incremental", "id")
        next_id = POLL_ROWS + 1
        for label, n in (("nothing new", 0), ("10 new rows", 10), ("10,000 new rows", 10_000)):
            ours, theirs = [], []
            for _ in range(reps):
                if n:
                    add(next_id, n)
                    next_id += n
                took, done = bench.lakeconnect("run", f"poll-{kind}", "--json")
                assert sum(json.loads(line)["records"] for line in done.stdout.splitlines()) == n, done.stdout
                ours.append(took)
                theirs.append(dlt(url, table, out, "--incremental", "id"))
            if n:
                add(next_id, n)
                next_id += n
            alone, _ = bench.lakeconnect("run", f"poll-{kind}", worker=False)
            dlt(url, table, out, "--incremental", "id")
            a, b = statistics.median(ours), statistics.median(theirs)
            print(f"{kind:9} {label:18} {a:11.2f}s {b:7.2f}s {b / a:6.1f}x  {alone:13.2f}s", flush=True)


# --- bulk -------------------------------------------------------------------------------------------------


def bulk(bench: Bench, mariadb: tuple, rows: int, reps: int) -> None:
    engine, jdbc, url = mariadb
    table = f"bulk_{rows}"
    started = time.perf_counter()
    with engine.begin() as c:
        c.exec_driver_sql(DDL.format(table=table))
        insert_rows(c, table, 1, rows)
    print(f"\nbulk: {rows:,} MariaDB rows seeded in {time.perf_counter() - started:.0f} s")
    bench.create(f"bulk-{rows}", _jdbc_source(jdbc, table, "bulk-", mode="bulk"))
    out = bench.root / f"dlt-bulk-{rows}"
    ours, theirs = [], []
    for rep in range(reps + 1):
        took, done = bench.lakeconnect("run", f"bulk-{rows}", "--json")
        assert json.loads(done.stdout)["records"] == rows, done.stdout
        theirs_took = dlt(url, table, out, "--backend", "connectorx", "--write-disposition", "replace")
        if rep:  # the first of each is untimed: the topic and the schema made, the code compiled
            ours.append(took)
            theirs.append(theirs_took)
        print(f"  rep {rep}: lakeconnect {took:.2f} s, dlt {theirs_took:.2f} s{' (untimed)' if not rep else ''}",
              flush=True)
    for label, pick in (("best", min), ("median", statistics.median)):
        a, b = pick(ours), pick(theirs)
        print(f"  {label}: lakeconnect {a:.2f} s ({rows / a:,.0f} rows/s), dlt {b:.2f} s: dlt/lakeconnect {b / a:.2f}x")
    floor = read_floor(url, table)
    goal = statistics.median(theirs) / 2
    reads = ", ".join(f"{took:.2f} s ({parts} at once)" for parts, took in floor)
    print(f"  floor: connectorx reading the rows alone into Arrow, nothing written, in ranges: {reads}; "
          f"2x dlt's median leaves {goal:.2f} s for the whole run")


READ_FLOOR = """
import sys, time
import connectorx as cx
url, table, parts = sys.argv[1], sys.argv[2], int(sys.argv[3])
started = time.perf_counter()
extra = {"partition_on": "id", "partition_num": parts} if parts > 1 else {}
rows = cx.read_sql(url, f"SELECT * FROM {table}", return_type="arrow", **extra).num_rows
print(rows, time.perf_counter() - started)
"""


def read_floor(url: str, table: str) -> list[tuple[int, float]]:
    """The fastest read of the table there is here, and nothing else: connectorx (Rust, straight into Arrow)
    in dlt's virtualenv, one range and two at once, the best of two each. No copy of the table can take
    less than its read."""
    cx_url = url.replace("mysql+pymysql://", "mysql://", 1)
    out = []
    for parts in (1, 2):
        took = []
        for _ in range(2):
            done = subprocess.run([DLT_PYTHON, "-c", READ_FLOOR, cx_url, table, str(parts)], capture_output=True,
                                  text=True, check=True)
            took.append(float(done.stdout.split()[1]))
        out.append((parts, min(took)))
    return out


# --- fleet ------------------------------------------------------------------------------------------------


def fleet(bench: Bench, n: int, minutes: float) -> None:
    from ingest.cli.delegate import run_remote

    names = []
    for i in range(n):
        path = bench.root / f"fleet-{i}.db"
        with sqlite3.connect(path) as c:
            c.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)")
            c.executemany("INSERT INTO t VALUES (?, ?)", [(j, f"v{j}") for j in range(1, 101)])
        bench.create(f"fleet-{i}", _jdbc_source(f"jdbc:sqlite:{path}", "t", f"fleet{i}-"))
        names.append((f"fleet-{i}", path))
    print(f"\nfleet: {n} connectors, each polled once a minute for {minutes:g} minutes", flush=True)
    for name, _ in names:  # each connector's first batch (its topic made), before the clock starts
        run_remote(bench.url, name, on_log=lambda line: None, on_result=lambda r, s: None)
    latencies: list[float] = []
    failures: list[str] = []
    lock = threading.Lock()
    period = 60.0 / n
    cpu_before, wall_before = bench.cpu_s(), time.perf_counter()
    threads = []

    def poll(name: str) -> None:
        started = time.perf_counter()
        result = run_remote(bench.url, name, on_log=lambda line: None, on_result=lambda r, s: None)
        with lock:
            latencies.append(time.perf_counter() - started)
            if result.exit_code:
                failures.append(f"{name}: {result.error}")

    total = int(minutes * n)
    for k in range(total):
        due = wall_before + k * period
        time.sleep(max(0.0, due - time.perf_counter()))
        name, path = names[k % n]
        if (k // n + k % n) % 10 == 0:  # a tenth of the tables get new rows each minute
            with sqlite3.connect(path) as c:
                last = c.execute("SELECT MAX(id) FROM t").fetchone()[0]
                c.executemany("INSERT INTO t VALUES (?, ?)", [(last + j, "new") for j in range(1, 11)])
        t = threading.Thread(target=poll, args=(name,))
        t.start()
        threads.append(t)
    for t in threads:
        t.join()
    wall = time.perf_counter() - wall_before
    cpu = bench.cpu_s() - cpu_before
    latencies.sort()
    cores = os.cpu_count() or 1
    print(f"  {len(latencies)} runs in {wall:.0f} s, {len(failures)} failed{': ' + failures[0] if failures else ''}")
    p50, p95 = latencies[len(latencies) // 2], latencies[int(len(latencies) * 0.95)]
    print(f"  run latency p50 {p50:.3f} s, p95 {p95:.3f} s, max {latencies[-1]:.3f} s")
    print(f"  CPU of the worker and its JVM: {cpu:.0f} s over {wall:.0f} s = {100 * cpu / wall / cores:.0f}% of "
          f"{cores} cores")


# --- soak -------------------------------------------------------------------------------------------------


def soak(bench: Bench, runs: int) -> None:
    from ingest.cli.delegate import run_remote

    path = bench.root / "soak.db"
    with sqlite3.connect(path) as c:
        c.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)")
    bench.create("soak", _jdbc_source(f"jdbc:sqlite:{path}", "t", "soak-"))
    jvm = _jvm_pid(bench.proc.pid)
    print(f"\nsoak: {runs:,} runs of one connector (3 new rows every 50th)", flush=True)

    def sample(label: str) -> None:
        time.sleep(11)
        if jvm is not None:
            subprocess.run(["jcmd", str(jvm), "GC.run"], capture_output=True)
        h = bench.health()
        p, j = h["process"], h.get("jvm", {})
        print(f"  {label:>14}: RSS {p['rss_bytes'] / 2**20:.0f} MiB (Arrow's pool {p['arrow_bytes'] / 2**20:.1f}), "
              f"threads {p['threads']}, open files "
              f"{p['open_files']}; JVM heap {j.get('heap_used_bytes', 0) / 2**20:.0f} MiB after a full GC, "
              f"threads {j.get('threads')}, listener queues {j.get('listener_queues')}", flush=True)

    started = time.perf_counter()
    for i in range(runs):
        if i % 50 == 0:
            with sqlite3.connect(path) as c:
                last = c.execute("SELECT COALESCE(MAX(id), 0) FROM t").fetchone()[0]
                c.executemany("INSERT INTO t VALUES (?, ?)", [(last + j, "x") for j in range(1, 4)])
        result = run_remote(bench.url, "soak", on_log=lambda line: None, on_result=lambda r, s: None)
        if result.exit_code:
            raise SystemExit(f"run {i} failed: {result.error}")
        if i + 1 == 100:
            sample("after 100 runs")
        elif (i + 1) % max(1, runs // 5) == 0 or i + 1 == runs:
            sample(f"after {i + 1:,} runs")
    print(f"  {runs:,} runs in {time.perf_counter() - started:.0f} s (samples' 11 s pauses included)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--polls", action="store_true")
    ap.add_argument("--bulk", type=int, nargs="*", metavar="ROWS", help="rows of each bulk table (1000000 ...)")
    ap.add_argument("--fleet", type=int, default=0, metavar="CONNECTORS")
    ap.add_argument("--minutes", type=float, default=5)
    ap.add_argument("--soak", type=int, default=0, metavar="RUNS")
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="lc-wbench-"))
    bench = Bench(root, **({"worker.runs.max": "8"} if args.fleet else {}))
    mariadb = None
    engine = admin = database = None
    if args.polls or args.bulk:
        import sqlalchemy as sa

        env = read_env(SERVICES_ENV)
        if not env.get("LAKECONNECT_TEST_MARIADB_URL"):
            raise SystemExit(f"no MariaDB: start the services ({SERVICES_ENV})")
        database = f"lc_wbench_{uuid.uuid4().hex[:8]}"
        admin = sa.create_engine(env["LAKECONNECT_TEST_MARIADB_URL"])
        with admin.begin() as c:
            c.exec_driver_sql(f"CREATE DATABASE {database}")
        url = env["LAKECONNECT_TEST_MARIADB_URL"].rsplit("/", 1)[0] + f"/{database}"
        engine = sa.create_engine(url)
        with engine.begin() as c:
            c.exec_driver_sql("CREATE TABLE bench_digits (d INT PRIMARY KEY)")
            c.exec_driver_sql("INSERT INTO bench_digits VALUES " + ",".join(f"({i})" for i in range(1000)))
        mariadb = (engine, with_database(env["LAKECONNECT_TEST_MARIADB_JDBC"], database), url)
    try:
        started = time.perf_counter()
        bench.start()
        print(f"worker at {bench.url}, ready in {time.perf_counter() - started:.1f} s (Spark session started and "
              f"warmed); {os.cpu_count()} cores", flush=True)
        if args.polls:
            polls(bench, mariadb, args.reps)
        for rows in args.bulk or []:
            bulk(bench, mariadb, rows, args.reps)
        if args.fleet:
            fleet(bench, args.fleet, args.minutes)
        if args.soak:
            soak(bench, args.soak)
    finally:
        bench.stop()
        if admin is not None:
            with admin.begin() as c:
                c.exec_driver_sql(f"DROP DATABASE IF EXISTS {database}")
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
