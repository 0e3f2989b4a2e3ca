"""Benchmark of the Spark -> Delta bridge against Spark's own Parquet writer.

    .venv/bin/python tests/bench/bench_bridge.py [--rows N] [--reps R] [--partitions P]

Builds an N-row x 5-column DataFrame (int, long, double, string, timestamp; cached and counted
before timing), then times, R times each, interleaved: (a) `df.write.parquet` and (b)
`write_dataframe` to a new Delta table with each engine ("arrow": pyarrow writers in Python tasks;
"spark": Spark's native writer, delta-rs commit). Also times a retried (already committed) write and a one-row state commit through
`append_arrow`, and reports the driver's memory (the driver must not grow with the data).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time

import pyarrow as pa

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))

from ingest.delta import FileOptions, append_arrow, read_table, write_dataframe  # noqa: E402
from ingest.spark import get_spark  # noqa: E402


def rss_mib(pid: int | str = "self") -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def tree_cpu_s(root: int | None) -> float:
    """CPU seconds used so far by this process plus `root` (the driver JVM) and its descendants
    (Python workers): unlike wall time, barely moved by other load on the machine."""
    total = time.process_time()
    if root is None:
        return total
    tick = os.sysconf("SC_CLK_TCK")
    procs = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            procs[int(entry)] = (int(fields[1]), sum(int(x) for x in fields[11:15]) / tick)
    stack = [root]
    while stack:
        pid = stack.pop()
        total += procs.get(pid, (0, 0.0))[1]
        stack.extend(child for child, (parent, _) in procs.items() if parent == pid)
    return total


def jvm_pid(spark) -> int | None:
    try:
        return int(spark.sparkContext._jvm.ProcessHandle.current().pid())
    except Exception:  # a remote cluster has no local driver JVM to measure
        return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--warmup", type=int, default=1, help="untimed rounds first (JIT, Python workers)")
    ap.add_argument("--arrow-batch", type=int, default=None, help="spark.sql.execution.arrow.maxRecordsPerBatch")
    ap.add_argument("--driver-memory", default="3g", help="spark.driver.memory (the cached input lives there)")
    ap.add_argument("--engines", default="arrow,spark", help="write_dataframe engines to time")
    ap.add_argument("--dir", default=None, help="scratch directory (default: a new temp dir)")
    args = ap.parse_args()

    scratch = args.dir or tempfile.mkdtemp(prefix="bench_bridge_")
    os.makedirs(scratch, exist_ok=True)
    settings = {"spark.driver.memory": args.driver_memory}
    if args.arrow_batch:
        settings["spark.sql.execution.arrow.maxRecordsPerBatch"] = str(args.arrow_batch)
    spark = get_spark(settings)
    sc = spark.sparkContext
    print(f"spark {spark.version}, master {sc.master}, cores {os.cpu_count()}, "
          f"arrow batch {spark.conf.get('spark.sql.execution.arrow.maxRecordsPerBatch')}, scratch {scratch}")

    df = spark.range(0, args.rows, 1, args.partitions).selectExpr(
        "cast(id % 100000 as int) as i",
        "id * 7 as l",
        "cast(id as double) * 0.5 as d",
        "concat('customer-', cast(id as string)) as s",
        "timestamp_micros(1700000000000000 + id * 1000) as ts",
    ).cache()
    n = df.count()
    print(f"rows {n:,} in {df.rdd.getNumPartitions()} partitions (cached)")
    rss_before = rss_mib()

    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    jpid = jvm_pid(spark)
    spark_cpu: list[float] = []
    bridge_cpu: dict[str, list[float]] = {e: [] for e in engines}
    spark_times: list[float] = []
    bridge_times: dict[str, list[float]] = {e: [] for e in engines}
    last = ""
    for rep in range(-args.warmup, args.reps):
        label = f"rep {rep}" if rep >= 0 else "warm-up"
        out = os.path.join(scratch, f"spark_{rep}")
        c, t = tree_cpu_s(jpid), time.perf_counter()
        df.write.mode("overwrite").parquet(out)
        spark_s, spark_c = time.perf_counter() - t, tree_cpu_s(jpid) - c
        shutil.rmtree(out, ignore_errors=True)
        line = f"  {label}: spark.write.parquet {spark_s:.2f}s (cpu {spark_c:.1f}s)"
        if rep >= 0:
            spark_times.append(spark_s)
            spark_cpu.append(spark_c)
        for engine in engines:
            if last:
                shutil.rmtree(last, ignore_errors=True)
            last = os.path.join(scratch, f"delta_{engine}_{rep}")
            c, t = tree_cpu_s(jpid), time.perf_counter()
            result = write_dataframe(df, last, app_id="bench", version=1, files=FileOptions(engine=engine))
            bridge_s, bridge_c = time.perf_counter() - t, tree_cpu_s(jpid) - c
            assert result is not None and result.num_records == n, result
            if rep >= 0:
                bridge_times[engine].append(bridge_s)
                bridge_cpu[engine].append(bridge_c)
            line += (f"   write_dataframe[{engine}] {bridge_s:.2f}s (cpu {bridge_c:.1f}s; "
                     f"{result.num_files} files, {result.num_bytes / 2**20:.1f} MiB)")
        print(line)

    assert read_table(spark, last).count() == n
    s_med = statistics.median(spark_times)
    print(f"spark  df.write.parquet        : median {n / s_med:,.0f} rows/s  best {n / min(spark_times):,.0f} rows/s")
    for engine, times in bridge_times.items():
        b_med = statistics.median(times)
        paired = statistics.median(s / b for s, b in zip(spark_times, times))
        cpu_ratio = statistics.median(spark_cpu) / statistics.median(bridge_cpu[engine])
        print(f"bridge write_dataframe[{engine:5}]: median {n / b_med:,.0f} rows/s  best {n / min(times):,.0f} rows/s  "
              f"ratio bridge/spark: median {s_med / b_med:.2f}x, paired reps {paired:.2f}x, "
              f"by CPU time {cpu_ratio:.2f}x  (goal >= 0.8x)")

    noop = []
    for _ in range(5):
        t = time.perf_counter()
        assert write_dataframe(df, last, app_id="bench", version=1) is None
        noop.append(time.perf_counter() - t)
    print(f"retried (already committed) write_dataframe: median {statistics.median(noop) * 1000:.1f} ms")

    state = os.path.join(scratch, "state")
    small = []
    for v in range(20):
        row = pa.table({"connector": ["bench"], "partition": ['{"table":"t"}'], "offset": [f'{{"id":{v}}}']})
        t = time.perf_counter()
        append_arrow(state, row, app_id="bench-state", version=v)
        small.append(time.perf_counter() - t)
    print(f"append_arrow one-row state commit: median {statistics.median(small[1:]) * 1000:.1f} ms, "
          f"first (creates table) {small[0] * 1000:.1f} ms  (goal < 200 ms)")

    jvm = f", driver JVM RSS {rss_mib(jpid):.0f} MiB" if jpid else ""
    print(f"driver python RSS: {rss_before:.0f} MiB after caching, {rss_mib():.0f} MiB at end, "
          f"peak {peak_rss_mib():.0f} MiB, for {n:,} rows{jvm}")
    if not args.dir:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
