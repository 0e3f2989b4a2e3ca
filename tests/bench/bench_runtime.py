"""Benchmark of the batch runtime (not a test): a FileStream source batch end to end, the cost of a
batch that finds nothing new, state commits, and driver memory as the data grows.

    .venv/bin/python tests/bench/bench_runtime.py [--lines 1000000] [--grow 10]

Prints records/s of a full batch (plan -> read -> convert -> dense-offset topic append -> offsets) and
the ratio to a plain Spark job over the same file in the same run (`spark.read.text` -> Parquet), the
median time of an empty batch after Spark is up (goal < 2 s), median state commit times (goal
< 200 ms), and the driver's RSS after the first batch and after a batch `--grow` times larger.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def write_lines(path: Path, start: int, count: int) -> None:
    with open(path, "a") as f:
        for i in range(start, start + count, 100_000):
            n = min(100_000, start + count - i)
            f.write("".join(f"record {j:012d} of the benchmark, some padding text\n" for j in range(i, i + n)))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--grow", type=int, default=10, help="the second batch is this many times larger (0 = skip)")
    ap.add_argument("--empty-runs", type=int, default=5)
    args = ap.parse_args()

    from ingest.config.worker import load_worker
    from ingest.runtime.worker import Worker

    tmp = Path(tempfile.mkdtemp(prefix="lakeconnect-bench-"))
    source = tmp / "input.txt"
    write_lines(source, 0, args.lines)
    worker = Worker(load_worker(None, {"lake.root": str(tmp / "lake"), "file.connectors.enable": "true",
                                       "spark.master": "local[*]", "spark.driver.memory": "2g"}))
    t = time.perf_counter()
    spark = worker.spark()
    spark.range(1).count()
    print(f"spark start: {time.perf_counter() - t:.1f} s")

    # Baseline: Spark alone reading the same file and writing Parquet, in the same run.
    times = []
    for i in range(2):
        t = time.perf_counter()
        spark.read.text(str(source)).write.mode("overwrite").parquet(str(tmp / f"baseline-{i}"))
        times.append(time.perf_counter() - t)
    baseline = min(times)

    worker.create("bench", {"name": "bench", "connector.class": "FileStreamSource", "file": str(source),
                            "topic": "bench-lines", "topic.creation.default.partitions": "4"})
    t = time.perf_counter()
    report = worker.run("bench")[0]
    first = time.perf_counter() - t
    rss_first = rss_mib()
    print(f"batch of {report.records:,} lines: {first:.2f} s = {report.records / first:,.0f} records/s; "
          f"plain Spark text->Parquet {baseline:.2f} s = {args.lines / baseline:,.0f} lines/s; "
          f"ratio {baseline / first:.2f}x")
    print(f"  steps (ms): {json.dumps(report.timings_ms)}")

    empties = []
    for _ in range(args.empty_runs):
        t = time.perf_counter()
        r = worker.run("bench")[0]
        assert r.outcome == "EMPTY"
        empties.append(time.perf_counter() - t)
    print(f"empty batch: median {statistics.median(empties) * 1000:.0f} ms (max {max(empties) * 1000:.0f} ms)")

    stores = worker.stores
    commits = {"offsets": [], "runs": [], "status": []}
    for i in range(20):
        t = time.perf_counter()
        stores.offsets.commit("bench-state", {'{"p":1}': {"position": i}}, task=0, batch_id=i + 1, app_id="b:0")
        commits["offsets"].append(time.perf_counter() - t)
        t = time.perf_counter()
        stores.runs.record("bench-state", 0, i + 1, "COMMITTED", plan={"ranges": []})
        commits["runs"].append(time.perf_counter() - t)
        t = time.perf_counter()
        stores.status.set("bench-state", 0, "RUNNING" if i % 2 else "FAILED")
        commits["status"].append(time.perf_counter() - t)
    print("state commits (median / max ms): " + ", ".join(
        f"{k} {statistics.median(v) * 1000:.0f}/{max(v) * 1000:.0f}" for k, v in commits.items()))

    if args.grow:
        more = args.lines * args.grow
        write_lines(source, args.lines, more)
        t = time.perf_counter()
        report = worker.run("bench")[0]
        elapsed = time.perf_counter() - t
        print(f"batch of {report.records:,} lines: {elapsed:.2f} s = {report.records / elapsed:,.0f} records/s")
        print(f"driver RSS: {rss_first:.0f} MiB after {args.lines:,} lines, {rss_mib():.0f} MiB after "
              f"{more:,} more (Python process; the data never passes through it)")
    os.system(f"rm -rf {tmp}")


if __name__ == "__main__":
    main()
