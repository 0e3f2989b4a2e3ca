"""Benchmark of the JDBC source connector on MariaDB (not a test): a bulk copy against a plain Spark JDBC
read of the same table, an incremental poll after new rows arrive, and driver memory as the data grows.

    .venv/bin/python tests/bench/bench_jdbc.py [--rows 1000000] [--reps 2] [--new 10000] [--grow 0] [--kafka]

It creates its own database (`lc_bench_<random>`) on the MariaDB named by --mariadb-url/--jdbc-url, or
else by .services/services.env (`make services-up`), seeds a table of --rows rows (BIGINT AUTO_INCREMENT
`id`, VARCHAR, INT, DECIMAL(10,2), DATE, DATETIME NOT NULL) and a small one, and drops the database at
the end. In one Spark process it prints:

- baseline: `spark.read.format("jdbc")` of the table in ranges of `id` (one per core) -> Parquet;
- bulk: batches of a `mode=bulk` connector (JsonConverter values with schemas) run through the Worker;
  bulk mode copies the whole table in every batch. Records/s of both, and the ratio lakeconnect /
  baseline (goal >= 0.8). Both are run once untimed first (driver loading, code generation; the
  connector's first batch also creates its topic and registers its schema), then --reps times
  interleaved; the best and the median are shown;
- incremental: a `mode=incrementing` connector's first batch (the whole table), then the batch that
  picks up --new inserted rows, end to end (plan, read, convert, write, commit; goal < 10 s), then a
  batch that finds nothing new;
- with --kafka: the topics on the Kafka broker (idempotent producer, --topic-partitions partitions), and
  the baseline Spark's JDBC reader into Spark's Kafka writer (each row `to_json`, no key, no schema
  envelope: what a Spark user would write; the connector's JsonConverter values carry their schema, so
  they are larger). Topics it makes are deleted at the end;
- memory: the driver's Python RSS and the JVM's heap in use after a full GC (in local mode the JVM is
  the executor too), and the heap's peak during the batch (the sum of the heap pools' peaks), after a
  bulk batch of the small table and after one of the big table (and of a table --grow times larger, if
  asked), so one sees whether memory follows the data.

The machine's other load shows in every figure: run it on a quiet machine, and compare figures of one run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
import uuid
from pathlib import Path

SERVICES_ENV = Path(__file__).resolve().parents[2] / ".services" / "services.env"
TABLE = "bench_rows"
SMALL_TABLE = "bench_small"
GROWN_TABLE = "bench_grown"
CHUNK = 100_000
DDL = """
CREATE TABLE `{table}` (
    id          BIGINT NOT NULL AUTO_INCREMENT,
    name        VARCHAR(100) NOT NULL,
    email       VARCHAR(150),
    quantity    INT NOT NULL,
    price       DECIMAL(10,2) NOT NULL,
    born        DATE,
    updated_at  DATETIME NOT NULL,
    PRIMARY KEY (id)
) ENGINE=InnoDB
"""


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def machine_cpu_s() -> float:
    """CPU seconds the whole machine has spent busy since boot, all cores and processes together (/proc/stat):
    the difference over a step is what the step cost the machine, the services' processes included."""
    with open("/proc/stat") as f:
        fields = [int(v) for v in f.readline().split()[1:]]
    user, nice, system, _idle, _iowait, irq, softirq = fields[:7]
    steal = fields[7] if len(fields) > 7 else 0
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def timed_cpu(fn) -> tuple[float, float, object]:
    """(wall seconds, machine CPU seconds, result) of `fn()`."""
    t, c = time.perf_counter(), machine_cpu_s()
    result = fn()
    return time.perf_counter() - t, machine_cpu_s() - c, result


def floor_ratio(base_s: float, base_cpu: float, extra_cpu: float, cores: int) -> tuple[float, float]:
    """The best ratio any implementation can reach when it must do the baseline's work plus work that costs
    `extra_cpu` CPU seconds on a machine of `cores` cores: it cannot take less than all that CPU time spread
    over every core, nor less than the baseline. (floor seconds, baseline / floor)."""
    floor = max(base_s, (base_cpu + extra_cpu) / cores)
    return floor, base_s / floor


def jvm_heap_mib(spark) -> tuple[float, float]:
    """(heap in use after a full GC, the sum of the heap pools' peaks since the last call) in MiB."""
    jvm = spark._jvm
    jvm.java.lang.System.gc()
    runtime = jvm.java.lang.Runtime.getRuntime()
    used = (runtime.totalMemory() - runtime.freeMemory()) / 2**20
    peak = 0.0
    for pool in jvm.java.lang.management.ManagementFactory.getMemoryPoolMXBeans():
        if pool.getType().name() == "HEAP":
            peak += pool.getPeakUsage().getUsed() / 2**20
            pool.resetPeakUsage()
    return used, peak


def read_env(path: Path) -> dict[str, str]:
    env = {}
    if path.exists():
        for line in path.read_text().splitlines():
            key, sep, value = line.strip().partition("=")
            if sep and not key.startswith("#"):
                env[key.strip()] = value.strip().strip("'\"")
    return env


def with_database(jdbc_url: str, database: str) -> str:
    """`jdbc_url` pointing at `database` instead of its own (its parameters kept)."""
    base, sep, query = jdbc_url.partition("?")
    return f"{base.rsplit('/', 1)[0]}/{database}" + (sep + query if sep else "")


def insert_rows(conn, table: str, first_id: int, count: int) -> None:
    """Rows with ids first_id .. first_id + count - 1, made by the server (a cross join of digits)."""
    for start in range(first_id, first_id + count, CHUNK):
        n = min(CHUNK, first_id + count - start)
        conn.exec_driver_sql(f"""
            INSERT INTO `{table}` (id, name, email, quantity, price, born, updated_at)
            SELECT n, CONCAT('customer ', n), IF(MOD(n, 10) = 0, NULL, CONCAT('customer', n, '@example.com')),
                   MOD(n, 1000), MOD(n, 100000) / 100, DATE_ADD('1950-01-01', INTERVAL MOD(n, 20000) DAY),
                   DATE_ADD('2024-01-01 00:00:00', INTERVAL n SECOND)
            FROM (SELECT {start} + a.d * 1000 + b.d AS n FROM bench_digits a CROSS JOIN bench_digits b
                  WHERE a.d * 1000 + b.d < {n}) s""")


def seed(engine, table: str, rows: int) -> float:
    t = time.perf_counter()
    with engine.begin() as conn:
        conn.exec_driver_sql(DDL.format(table=table))
        insert_rows(conn, table, 1, rows)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--small-rows", type=int, default=100_000, help="rows of the small table (memory baseline)")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--new", type=int, default=10_000, help="rows inserted before the incremental batch")
    ap.add_argument("--grow", type=int, default=0, help="also copy a table this many times larger (0 = skip)")
    ap.add_argument("--topic-partitions", type=int, default=1,
                    help="topic.creation.default.partitions of the connectors (1 is the connector's default)")
    ap.add_argument("--kafka", action="store_true",
                    help="topics on the Kafka broker of .services/services.env (idempotent producer), and a "
                         "baseline of Spark's JDBC reader into Spark's Kafka writer (needs .jars/bench/)")
    ap.add_argument("--mariadb-url", help="SQLAlchemy URL of the server (default: .services/services.env)")
    ap.add_argument("--jdbc-url", help="JDBC URL of the same server (default: .services/services.env)")
    args = ap.parse_args()

    import sqlalchemy as sa

    from connectors.jdbc.dialects import parse_jdbc_url
    from ingest.config.worker import load_worker
    from ingest.runtime.worker import Worker

    env = read_env(SERVICES_ENV)
    admin_url = args.mariadb_url or env.get("LAKECONNECT_TEST_MARIADB_URL")
    server_jdbc = args.jdbc_url or env.get("LAKECONNECT_TEST_MARIADB_JDBC")
    if not admin_url or not server_jdbc:
        raise SystemExit(f"no MariaDB: pass --mariadb-url and --jdbc-url, or start the services ({SERVICES_ENV})")
    database = f"lc_bench_{uuid.uuid4().hex[:10]}"
    jdbc_url = with_database(server_jdbc, database)
    admin = sa.create_engine(admin_url)
    tmp = Path(tempfile.mkdtemp(prefix="lakeconnect-bench-jdbc-"))
    with admin.begin() as conn:
        conn.exec_driver_sql(f"CREATE DATABASE `{database}`")
    engine = sa.create_engine(sa.engine.make_url(admin_url).set(database=database))
    figures: dict[str, str] = {}
    topics = None  # the broker's bench topics (--kafka), deleted at the end
    try:
        print(f"database: {jdbc_url}")
        with engine.begin() as conn:
            conn.exec_driver_sql("CREATE TABLE bench_digits (d INT PRIMARY KEY)")
            conn.exec_driver_sql("INSERT INTO bench_digits VALUES " + ",".join(f"({i})" for i in range(1000)))
        took = seed(engine, TABLE, args.rows)
        seed(engine, SMALL_TABLE, args.small_rows)
        print(f"seeded {args.rows:,} + {args.small_rows:,} rows in {took:.1f} s (+ the small table)")

        backend: dict[str, str] = {}
        if args.kafka:
            from tests.bench.bench_kafka import Topics
            from tests.bench.spark_baseline import bench_jars

            bootstrap = env.get("LAKECONNECT_TEST_KAFKA_BOOTSTRAP")
            if not bootstrap:
                raise SystemExit(f"--kafka: no broker in {SERVICES_ENV}; start the services (make services-up)")
            backend = {"topic.backend": "kafka", "kafka.bootstrap.servers": bootstrap,
                       "exactly.once.source.support": "disabled", "spark.jars": ",".join(bench_jars())}
            topics = Topics(bootstrap, args.topic_partitions)
        worker = Worker(load_worker(None, {"lake.root": str(tmp / "lake"), "spark.master": "local[*]",
                                           "spark.driver.memory": "2g", **backend}))
        t = time.perf_counter()
        spark = worker.spark()
        spark.range(1).count()
        parallelism = spark.sparkContext.defaultParallelism
        print(f"spark start: {time.perf_counter() - t:.1f} s (default parallelism {parallelism})")

        connectors = iter(range(1, 1_000_000))

        def run_connector(table: str, mode: str, **extra: str):
            """Create a connector over `table` and run one batch: (name, report, seconds)."""
            name = f"bench-{mode}-{next(connectors)}"
            worker.create(name, {
                "name": name, "connector.class": "io.confluent.connect.jdbc.JdbcSourceConnector",
                "tasks.max": "1", "connection.url": jdbc_url, "connection.user": "root", "connection.password": "",
                "mode": mode, "table.whitelist": table, "topic.prefix": f"{name}-",
                "value.converter": "org.apache.kafka.connect.json.JsonConverter",
                "value.converter.schemas.enable": "true",
                "topic.creation.default.partitions": str(args.topic_partitions), **extra})
            if topics is not None:
                topics.made.append(f"{name}-{table}")
            return name, *run_batch(name)

        def run_batch(name: str):
            t = time.perf_counter()
            reports = worker.run(name)
            elapsed = time.perf_counter() - t
            assert len(reports) == 1, reports
            return reports[0], elapsed

        def memory(label: str) -> str:
            heap, peak = jvm_heap_mib(spark)
            line = f"RSS {rss_mib():.0f} MiB, JVM heap used {heap:.0f} MiB (peak during the batch {peak:.0f} MiB)"
            print(f"memory after {label}: {line}")
            return line

        jvm_heap_mib(spark)  # resets the peaks: the next reading covers the small batch alone
        _, report, took = run_connector(SMALL_TABLE, "bulk")
        assert report.records == args.small_rows, report
        print(f"bulk batch of the small table: {report.records:,} records in {took:.2f} s (first connector run)")
        figures[f"memory after {args.small_rows:,} rows"] = memory(f"a bulk batch of {args.small_rows:,} rows")

        # a. Spark alone: the same table in ranges of `id`, one per core, written as Parquet.
        url = parse_jdbc_url(jdbc_url)
        with engine.connect() as conn:
            lower, upper = conn.exec_driver_sql(f"SELECT MIN(id), MAX(id) FROM `{TABLE}`").first()

        def baseline(rep: int) -> float:
            topic = topics.create("jdbc") if topics is not None else None  # made before the clock starts
            t = time.perf_counter()
            rows = (spark.read.format("jdbc").option("url", url.spark_url()).option("driver", url.dialect.spark_driver)
                    .option("dbtable", f"`{TABLE}`").option("user", "root")
                    .option("partitionColumn", "id").option("lowerBound", str(lower)).option("upperBound", str(upper))
                    .option("numPartitions", str(parallelism))
                    .option("sessionInitStatement", "SET time_zone = '+00:00'")
                    .load())
            if topic is None:
                rows.write.mode("overwrite").parquet(str(tmp / f"baseline-{rep}"))
            else:  # what a Spark user writes: each row as JSON (no schema envelope), no key
                from pyspark.sql import functions as F

                from tests.bench.spark_baseline import kafka_write

                kafka_write(rows.select(F.lit(None).cast("binary").alias("key"),
                                        F.to_json(F.struct(*rows.columns)).alias("value")), topics.bootstrap, topic)
            took = time.perf_counter() - t
            if topic is not None:
                topics.delete([topic])
            return took

        # b. lakeconnect: a bulk connector, a fresh one (and topic) each time, so each batch is a full copy.
        # One connector: bulk mode copies the whole table in every poll (here every batch: poll.interval.ms 1).
        # Its first batch (untimed, below) also creates the topic and registers the value schema; the timed ones
        # are the batches a scheduled bulk connector runs from then on.
        bulk_name = None

        def bulk() -> tuple[float, dict]:
            nonlocal bulk_name
            if bulk_name is None:
                bulk_name, report, took = run_connector(TABLE, "bulk", **{"poll.interval.ms": "1"})
            else:
                report, took = run_batch(bulk_name)
            assert report.outcome == "COMMITTED" and report.records == args.rows, report
            return took, report.timings_ms

        cold_base = baseline(0)
        cold_bulk, _ = bulk()
        print(f"first runs (untimed for the ratio): baseline {cold_base:.2f} s, bulk {cold_bulk:.2f} s")
        base_times, bulk_times, bulk_steps = [], [], []
        for rep in range(args.reps):  # interleaved, so both see the same machine
            jvm_heap_mib(spark)  # a full GC and a fresh peak before each, so the last bulk batch has its own peak
            base_times.append(baseline(rep + 1))
            jvm_heap_mib(spark)
            took, steps = bulk()
            bulk_times.append(took)
            bulk_steps.append(steps)
            print(f"  rep {rep + 1}: baseline {base_times[-1]:.2f} s, bulk {took:.2f} s  steps (ms) {json.dumps(steps)}")
        base_best, bulk_best = min(base_times), min(bulk_times)
        base_med, bulk_med = statistics.median(base_times), statistics.median(bulk_times)
        figures["baseline (Spark JDBC -> Kafka writer)" if args.kafka else "baseline (Spark JDBC -> Parquet)"] = (f"best {base_best:.2f} s = {args.rows / base_best:,.0f} rows/s, "
                                                       f"median {base_med:.2f} s = {args.rows / base_med:,.0f} rows/s")
        figures["lakeconnect bulk batch"] = (f"best {bulk_best:.2f} s = {args.rows / bulk_best:,.0f} records/s, "
                                             f"median {bulk_med:.2f} s = {args.rows / bulk_med:,.0f} records/s")
        figures["ratio lakeconnect / baseline"] = (f"{base_best / bulk_best:.2f} (best), {base_med / bulk_med:.2f} "
                                                   "(median); goal >= 0.8")
        figures["bulk steps of the best rep (ms)"] = json.dumps(bulk_steps[bulk_times.index(bulk_best)])
        for key in list(figures)[1:]:
            print(f"{key}: {figures[key]}")
        figures[f"memory after {args.rows:,} rows"] = memory(f"a bulk batch of {args.rows:,} rows")

        if args.grow > 1:
            grown = args.rows * args.grow
            took = seed(engine, GROWN_TABLE, grown)
            print(f"seeded {grown:,} rows in {took:.1f} s")
            jvm_heap_mib(spark)
            _, report, took = run_connector(GROWN_TABLE, "bulk")
            figures[f"bulk batch of {grown:,} rows"] = f"{took:.2f} s = {report.records / took:,.0f} records/s"
            print(f"bulk batch of {grown:,} rows: {figures[f'bulk batch of {grown:,} rows']}")
            figures[f"memory after {grown:,} rows"] = memory(f"a bulk batch of {grown:,} rows")

        # c. Incremental: the whole table first, then the batch that finds --new rows, then nothing new.
        name, report, took = run_connector(TABLE, "incrementing", **{"incrementing.column.name": "id"})
        assert report.records == args.rows, report
        figures["incrementing, first batch"] = (f"{took:.2f} s = {report.records / took:,.0f} records/s  "
                                                f"steps (ms) {json.dumps(report.timings_ms)}")
        print(f"incrementing, first batch: {figures['incrementing, first batch']}")
        with engine.begin() as conn:
            insert_rows(conn, TABLE, upper + 1, args.new)
        report, took = run_batch(name)
        assert report.outcome == "COMMITTED" and report.records == args.new, report
        figures[f"incrementing, batch of {args.new:,} new rows"] = (
            f"{took:.2f} s end to end (goal < 10 s)  steps (ms) {json.dumps(report.timings_ms)}")
        print(f"incrementing, next batch: {figures[f'incrementing, batch of {args.new:,} new rows']}")
        report, took = run_batch(name)
        assert report.outcome == "EMPTY", report
        figures["incrementing, batch with nothing new"] = f"{took:.2f} s"
        print(f"incrementing, nothing new: {took:.2f} s")

        print()
        print(f"summary (rows: {args.rows:,}, reps: {args.reps}, cores: {os.cpu_count()}, "
              f"parallelism: {parallelism}, topic partitions: {args.topic_partitions})")
        for key, value in figures.items():
            print(f"  {key}: {value}")
    finally:
        if topics is not None:
            topics.close()
        engine.dispose()
        with admin.begin() as conn:
            conn.exec_driver_sql(f"DROP DATABASE IF EXISTS `{database}`")
        admin.dispose()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
