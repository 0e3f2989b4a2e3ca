"""Check and timings of the dlt baseline, tests/bench/dlt_baseline.py (not a test): every figure is the wall
time of the whole command `.venv-dlt/bin/python tests/bench/dlt_baseline.py ...`, one process per run.

    .venv-dlt/bin/python tests/bench/dlt_check.py              # the check (SQLite; MariaDB too when it runs)
    .venv-dlt/bin/python tests/bench/dlt_check.py --timings    # the figures: [--rows 100000] [--bulk-rows 1000000]
                                                               #   [--reps 3] [--mariadb-backends pyarrow,...]

It runs in `.venv-dlt` (`bash tests/services/setup.sh --bench`): it reads the Delta tables with that venv's
`deltalake`. MariaDB is the one of .services/services.env (`make services-up`), or --mariadb-url; when none
answers, the MariaDB part is skipped, said so. On it this script makes a database of its own
(`dlt_bench_<random>`, dropped at the end) and writes its rows with `sql_log_bin=0`: the test services'
MariaDB serves the CDC tests, whose batches read the binlog to its end. Its files go under --workdir
(default /tmp/dltbench), removed at the end unless --keep. The tables have bench_jdbc.py's columns (BIGINT
`id` key, VARCHAR, INT, DECIMAL(10,2), DATE, DATETIME), its rows made by the database itself.

The check, for each backend: a table of 1,000 rows, an incremental run (cursor `id`) that loads all of them,
10 rows inserted, a run that must load those 10 and no more (the Delta table: ids 1..1,010, each once), and
a run that finds nothing new; on MariaDB also connectorx's bulk copy (`--write-disposition replace`) twice,
which must leave 1,010 rows, not 2,020. Exit 1 on any mismatch.

--timings: a table of --rows rows on SQLite and on MariaDB, each backend's pipeline loading it first (the
first run), then --reps rounds of: a poll that finds nothing new, 10 new rows, 10,000 new rows (each round
inserts once, then runs every backend's pipeline, so each finds the same rows). Then a --bulk-rows table on
MariaDB copied whole (`replace`, no cursor) --reps times by each of --bulk-backends (`connectorx:2` is
connectorx reading 2 ranges of `id` at once). Printed per case: the median wall time, every run's wall time,
the CPU seconds (user + system) and peak RSS of the process (from wait4), and the rows it loaded.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.bench.bench_jdbc import DDL as MARIADB_DDL, read_env  # noqa: E402 (stdlib only: loads in .venv-dlt)
PYTHON = ROOT / ".venv-dlt" / "bin" / "python"
BASELINE = ROOT / "tests" / "bench" / "dlt_baseline.py"
SERVICES_ENV = ROOT / ".services" / "services.env"
BACKENDS = ("pyarrow", "sqlalchemy", "connectorx")
TABLE = "bench_rows"
BULK_TABLE = "bench_bulk"
CHUNK = 100_000
# SQLite: INTEGER PRIMARY KEY is the row id, as a SQLite user would declare the key.
SQLITE_DDL = """
CREATE TABLE "{table}" (
    id          INTEGER PRIMARY KEY,
    name        VARCHAR(100) NOT NULL,
    email       VARCHAR(150),
    quantity    INT NOT NULL,
    price       DECIMAL(10,2) NOT NULL,
    born        DATE,
    updated_at  DATETIME NOT NULL
)
"""


class SqliteSource:
    """A SQLite file under the work directory."""

    kind = "sqlite"

    def __init__(self, workdir: Path) -> None:
        self.path = workdir / "source.db"
        self.url = f"sqlite:///{self.path}"

    def create(self, table: str, rows: int) -> None:
        with sqlite3.connect(self.path) as conn:
            conn.execute(SQLITE_DDL.format(table=table))
        self.insert(table, rows)

    def insert(self, table: str, count: int) -> None:
        with sqlite3.connect(self.path) as conn:
            first = (conn.execute(f'SELECT MAX(id) FROM "{table}"').fetchone()[0] or 0) + 1
            conn.execute(f"""
                WITH RECURSIVE s(n) AS (SELECT {first} UNION ALL SELECT n + 1 FROM s WHERE n < {first + count - 1})
                INSERT INTO "{table}" (id, name, email, quantity, price, born, updated_at)
                SELECT n, 'customer ' || n, CASE WHEN n % 10 = 0 THEN NULL ELSE 'customer' || n || '@example.com' END,
                       n % 1000, (n % 100000) / 100.0, date('1950-01-01', '+' || (n % 20000) || ' days'),
                       datetime('2024-01-01 00:00:00', '+' || n || ' seconds')
                FROM s""")

    def drop(self) -> None:
        self.path.unlink(missing_ok=True)


class MariadbSource:
    """A database of its own on a MariaDB server; rows written without binlog events."""

    kind = "mariadb"

    def __init__(self, admin_url: str) -> None:
        import sqlalchemy as sa

        self.database = f"dlt_bench_{uuid.uuid4().hex[:10]}"
        url = sa.engine.make_url(admin_url)
        # init_command: every connection of this script skips the binlog (the CDC tests read it to its end).
        self.admin = sa.create_engine(url, connect_args={"init_command": "SET SESSION sql_log_bin = 0"})
        with self.admin.begin() as conn:
            conn.exec_driver_sql(f"CREATE DATABASE `{self.database}`")
        self.engine = sa.create_engine(url.set(database=self.database),
                                       connect_args={"init_command": "SET SESSION sql_log_bin = 0"})
        self.url = url.set(database=self.database).render_as_string(hide_password=False)

    def create(self, table: str, rows: int) -> None:
        with self.engine.begin() as conn:
            conn.exec_driver_sql(MARIADB_DDL.format(table=table))
        self.insert(table, rows)

    def insert(self, table: str, count: int) -> None:
        with self.engine.begin() as conn:
            first = (conn.exec_driver_sql(f"SELECT MAX(id) FROM `{table}`").scalar() or 0) + 1
            for start in range(first, first + count, CHUNK):
                end = min(start + CHUNK, first + count) - 1
                conn.exec_driver_sql(f"""
                    INSERT INTO `{table}` (id, name, email, quantity, price, born, updated_at)
                    SELECT seq, CONCAT('customer ', seq),
                           IF(MOD(seq, 10) = 0, NULL, CONCAT('customer', seq, '@example.com')),
                           MOD(seq, 1000), MOD(seq, 100000) / 100, DATE_ADD('1950-01-01', INTERVAL MOD(seq, 20000) DAY),
                           DATE_ADD('2024-01-01 00:00:00', INTERVAL seq SECOND)
                    FROM seq_{start}_to_{end}""")

    def drop(self) -> None:
        with self.admin.begin() as conn:
            conn.exec_driver_sql(f"DROP DATABASE IF EXISTS `{self.database}`")
        self.engine.dispose()
        self.admin.dispose()


@dataclass
class Run:
    """One process of the baseline, as the driver saw it."""

    command: list[str]
    wall_s: float
    cpu_s: float
    rss_mib: float
    report: dict = field(default_factory=dict)

    @property
    def rows(self) -> int:
        return self.report["rows"]


class Baseline:
    """Runs dlt_baseline.py for one pipeline (one source table, one Delta table) in processes of its own."""

    def __init__(self, source, table: str, workdir: Path, name: str, backend: str, *extra: str) -> None:
        self.source, self.table, self.backend = source, table, backend
        self.dest = workdir / name / "lake"
        self.args = ["--source", source.url, "--table", table, "--dest", str(self.dest),
                     "--pipelines-dir", str(workdir / name / "pipelines"), "--pipeline-name", name,
                     "--backend", backend, *extra]

    @property
    def command(self) -> list[str]:
        """The timed command, run from the repository's root."""
        return [str(PYTHON.relative_to(ROOT)), str(BASELINE.relative_to(ROOT)), *self.args]

    def run(self) -> Run:
        command = self.command
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            start = time.perf_counter()
            proc = subprocess.Popen(command, cwd=ROOT, stdout=out, stderr=err)
            _, status, usage = os.wait4(proc.pid, 0)  # wait4: this process's own CPU time and peak RSS
            wall = time.perf_counter() - start
            proc.returncode = os.waitstatus_to_exitcode(status)
            out.seek(0), err.seek(0)
            stdout, stderr = out.read().decode(), err.read().decode()
        if proc.returncode != 0:
            raise SystemExit(f"exit {proc.returncode}: {shlex.join(command)}\n{stdout[-3000:]}{stderr[-3000:]}")
        report = json.loads(stdout.strip().splitlines()[-1])
        return Run(command, wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, report)

    def delta_ids(self) -> list[int]:
        from deltalake import DeltaTable

        # use_threads=False: pyarrow's scan threads can abort the process at exit (apache/arrow#34314).
        table = DeltaTable(str(self.dest / "bench" / self.table)).to_pyarrow_dataset()
        return sorted(table.to_table(columns=["id"], use_threads=False).column("id").to_pylist())


def mariadb_url(args: argparse.Namespace) -> str | None:
    """The MariaDB to use, if one answers: --mariadb-url, else the test services'."""
    import sqlalchemy as sa

    url = args.mariadb_url or read_env(SERVICES_ENV).get("LAKECONNECT_TEST_MARIADB_URL")
    if not url:
        print(f"MariaDB: none (no --mariadb-url, no {SERVICES_ENV.relative_to(ROOT)}): skipped")
        return None
    parsed = sa.engine.make_url(url)
    try:
        socket.create_connection((parsed.host or "127.0.0.1", parsed.port or 3306), timeout=2).close()
    except OSError as exc:
        print(f"MariaDB: {parsed.host}:{parsed.port} does not answer ({exc}): skipped")
        return None
    return url


def expect(what: str, got, wanted) -> bool:
    ok = got == wanted
    print(f"  {'ok  ' if ok else 'FAIL'} {what}: {brief(got)}" + ("" if ok else f" (wanted {brief(wanted)})"))
    return ok


def brief(value) -> str:
    if isinstance(value, list) and len(value) > 6:
        return f"{len(value):,} values, {len(set(value)):,} distinct, {value[0]!r}..{value[-1]!r}"
    return repr(value)


def check(source, workdir: Path, backends: list[str]) -> bool:
    """1,000 rows, then 10 more: each backend's incremental pipeline loads 1,000, then 10, then nothing."""
    source.create(TABLE, 1000)
    pipelines = [Baseline(source, TABLE, workdir, f"check_{source.kind}_{b}", b, "--incremental", "id")
                 for b in backends]
    ok = True
    for p in pipelines:
        ok &= expect(f"{source.kind} {p.backend}: first run loaded", p.run().rows, 1000)
    source.insert(TABLE, 10)
    for p in pipelines:
        ok &= expect(f"{source.kind} {p.backend}: run after 10 inserts loaded", p.run().rows, 10)
        ok &= expect(f"{source.kind} {p.backend}: a run finding nothing new loaded", p.run().rows, 0)
        ok &= expect(f"{source.kind} {p.backend}: Delta table ids are 1..1010, each once", p.delta_ids(),
                     list(range(1, 1011)))
    if source.kind == "mariadb":
        bulk = Baseline(source, TABLE, workdir, "check_mariadb_bulk", "connectorx", "--write-disposition", "replace")
        ok &= expect("mariadb connectorx replace: first run loaded", bulk.run().rows, 1010)
        ok &= expect("mariadb connectorx replace: second run loaded", bulk.run().rows, 1010)
        ok &= expect("mariadb connectorx replace: Delta table ids", bulk.delta_ids(), list(range(1, 1011)))
    return ok


def show(label: str, runs: list[Run]) -> None:
    walls = [r.wall_s for r in runs]
    print(f"  {label:<44} {statistics.median(walls):6.2f} s median ({', '.join(f'{w:.2f}' for w in walls)}); "
          f"CPU {statistics.median(r.cpu_s for r in runs):.2f} s, RSS {max(r.rss_mib for r in runs):.0f} MiB, "
          f"rows {sorted({r.rows for r in runs})}")


def backends_of(source, args: argparse.Namespace) -> list[str]:
    return args.sqlite_backends if source.kind == "sqlite" else args.mariadb_backends


def timings(source, workdir: Path, args: argparse.Namespace) -> None:
    t = time.perf_counter()
    source.create(TABLE, args.rows)
    print(f"{source.kind}: {args.rows:,} rows seeded in {time.perf_counter() - t:.1f} s")
    pipelines = [Baseline(source, TABLE, workdir, f"inc_{source.kind}_{b}", b, "--incremental", "id")
                 for b in backends_of(source, args)]
    print(f"  command: {shlex.join(pipelines[0].command)}")
    for p in pipelines:
        show(f"{p.backend}: first run, {args.rows:,} rows", [p.run()])
    results: dict[tuple[str, int], list[Run]] = {}
    for _ in range(args.reps):
        for new in (0, 10, 10_000):
            if new:
                source.insert(TABLE, new)
            for p in pipelines:
                results.setdefault((p.backend, new), []).append(p.run())
    for new in (0, 10, 10_000):
        for p in pipelines:
            show(f"{p.backend}: {'poll, nothing new' if not new else f'{new:,} new rows'}", results[(p.backend, new)])


def bulk_timings(source, workdir: Path, args: argparse.Namespace) -> None:
    t = time.perf_counter()
    source.create(BULK_TABLE, args.bulk_rows)
    print(f"{source.kind}: {args.bulk_rows:,} rows seeded in {time.perf_counter() - t:.1f} s (bulk table)")
    pipelines = []
    for spec in args.bulk_backends:
        backend, _, parts = spec.partition(":")
        extra = ["--write-disposition", "replace"] + (["--cx-partitions", parts] if parts else [])
        pipelines.append((spec, Baseline(source, BULK_TABLE, workdir, f"bulk_{backend}{parts}", backend, *extra)))
    results: dict[str, list[Run]] = {}
    for _ in range(args.reps):
        for spec, p in pipelines:
            results.setdefault(spec, []).append(p.run())
    for spec, p in pipelines:
        print(f"  command: {shlex.join(p.command)}")
        show(f"{spec}: bulk copy, replace, {args.bulk_rows:,} rows", results[spec])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--timings", action="store_true", help="measure instead of checking")
    ap.add_argument("--rows", type=int, default=100_000, help="--timings: rows of the incremental tables")
    ap.add_argument("--bulk-rows", type=int, default=1_000_000, help="--timings: rows of the MariaDB bulk table")
    ap.add_argument("--reps", type=int, default=3)
    # connectorx on SQLite: it takes a column's type from the first row it reads, and SQLite stores a DECIMAL
    # that is whole (10.00) as an INTEGER, the others as REAL: "Invalid column type Real" when both come.
    ap.add_argument("--sqlite-backends", default="pyarrow,sqlalchemy",
                    help="backends of the incremental pipelines on SQLite (default: no connectorx)")
    ap.add_argument("--mariadb-backends", default=",".join(BACKENDS),
                    help="backends of the incremental pipelines on MariaDB")
    ap.add_argument("--bulk-backends", default="connectorx,connectorx:2,pyarrow",
                    help="--timings: backends of the bulk copy (0 or none: skip it)")
    ap.add_argument("--skip", default="", help="sqlite and/or mariadb, comma-separated")
    ap.add_argument("--mariadb-url", help="SQLAlchemy URL of a MariaDB server (default: .services/services.env)")
    ap.add_argument("--workdir", default="/tmp/dltbench")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    args = ap.parse_args()
    args.sqlite_backends = [b for b in args.sqlite_backends.split(",") if b]
    args.mariadb_backends = [b for b in args.mariadb_backends.split(",") if b]
    args.bulk_backends = [b for b in args.bulk_backends.split(",") if b not in ("", "0", "none")]
    skip = set(args.skip.split(","))
    if not PYTHON.exists():
        raise SystemExit(f"{PYTHON} missing: run `bash tests/services/setup.sh --bench` first")

    Path(args.workdir).mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix="run-", dir=args.workdir))
    ok = True
    if args.timings:  # the machine's other load shows in every figure
        print(f"load average at the start: {Path('/proc/loadavg').read_text().split()[:3]}")
    try:
        sources = []
        if "sqlite" not in skip:
            sources.append(SqliteSource(workdir))
        if "mariadb" not in skip and (url := mariadb_url(args)):
            sources.append(MariadbSource(url))
            print(f"MariaDB: database {sources[-1].database} on {sources[-1].engine.url}")  # password hidden
        try:
            for source in sources:
                if args.timings:
                    timings(source, workdir, args)
                    if source.kind == "mariadb" and args.bulk_backends:
                        bulk_timings(source, workdir, args)
                else:
                    ok &= check(source, workdir, backends_of(source, args))
        finally:
            for source in sources:
                source.drop()
    finally:
        if args.keep:
            print(f"kept: {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    if args.timings:
        print(f"load average at the end: {Path('/proc/loadavg').read_text().split()[:3]}")
    else:
        print("check: " + ("all ok" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
