"""Benchmark of the S3 sink connector (not a test): a topic table of --records records written to the S3
server as JSON, Parquet and raw bytes objects, against a plain Spark job writing the same records from
the same topic table with the same partitioning through s3a, in the same Spark process.

    PYTHONPATH=. .venv/bin/python tests/bench/bench_s3.py [--records 500000] [--partitions 2]
        [--flush-size 50000] [--reps 3] [--formats json,parquet,bytes]

It needs hadoop-aws in .jars/bench/ (`bash tests/services/fetch_jars.sh --bench`) and the S3 server named
by --endpoint, or else by .services/services.env (`make services-up`); it makes a lake in a temporary
directory, and buckets of its own (`lc-bench-...`), each emptied and removed once counted. It prints:

- the topic: --records records in --partitions partitions of a Delta topic table, values JsonConverter
  JSON with the schema envelope (a struct of 6 fields, ~460 bytes), partition = id % --partitions;
- for each format, the S3 sink (a fresh connector and bucket each time; DefaultPartitioner, flush.size
  --flush-size, tasks.max 1) against the plain Spark job: `TopicTable.read()`, then
  - JSON: the values parsed with `from_json` (the payload's fields), `write.json`;
  - Parquet: the same, `write.parquet`;
  - bytes (ByteArrayConverter + ByteArrayFormat, no parsing): the values as text, `write.text`;
  each `partitionBy("partition")` (the sink's `partition=<p>/`) with maxRecordsPerFile = flush.size, to
  `s3a://` (committers: tests/bench/spark_baseline.py). With the default sizes every partition's records
  fill whole objects, so both write every record. records/s, MiB/s of objects, the ratio sink / plain job
  (goal >= 0.8 for JSON and Parquet).

Every step runs once untimed first (code generation, Python workers, s3a's classes, first connections);
then --reps reps, the two sides' order alternating; medians (and the best) are shown. The machine's other
load shows in every figure (the S3 server shares the cores): compare figures of one run.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

from tests.bench.bench_jdbc import read_env, rss_mib
from tests.bench.s3util import remove_buckets
from tests.bench.spark_baseline import envelope_fields, objects, purchase_value, session_settings, write_records

SERVICES_ENV = Path(__file__).resolve().parents[2] / ".services" / "services.env"
TOPIC = "purchases"
JSON_CONVERTER = "org.apache.kafka.connect.json.JsonConverter"
BYTES_CONVERTER = "org.apache.kafka.connect.converters.ByteArrayConverter"
FORMATS = {  # name: (value.converter, format.class, the plain job's writer)
    "json": (JSON_CONVERTER, "JsonFormat", "json"),
    "parquet": (JSON_CONVERTER, "ParquetFormat", "parquet"),
    "bytes": (BYTES_CONVERTER, "ByteArrayFormat", "text"),
}


def seed_topic(spark, lake: str, records: int, partitions: int) -> None:
    """The topic `purchases`, written as a source would (JsonConverter bytes with the schema envelope)."""
    from pyspark.sql import functions as F

    from ingest.topics import TopicTable

    table = TopicTable(lake, TOPIC)
    table.create(partitions, if_not_exists=True)
    df = spark.range(records).select(
        F.col("id").alias("seq"), F.lit(None).cast("binary").alias("key"),
        F.col("id").cast("int").__mod__(partitions).alias("partition"), purchase_value(F.col("id")).alias("value"))
    table.append(df, app_id="bench-seed", version=1)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=500_000)
    ap.add_argument("--partitions", type=int, default=2)
    ap.add_argument("--flush-size", type=int, default=50_000,
                    help="the sink's flush.size and the plain job's maxRecordsPerFile")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--endpoint", help="S3 endpoint URL (default: .services/services.env)")
    ap.add_argument("--formats", default=",".join(FORMATS),
                    help=f"comma-separated, of {', '.join(FORMATS)} (default: all)")
    args = ap.parse_args()
    chosen = [f.strip() for f in args.formats.split(",") if f.strip()]
    unknown = [f for f in chosen if f not in FORMATS]
    if unknown or not chosen:
        raise SystemExit(f"--formats: unknown {unknown}; choose from {', '.join(FORMATS)}")
    print("command: " + " ".join([os.path.relpath(sys.argv[0])] + sys.argv[1:]))

    endpoint = args.endpoint or read_env(SERVICES_ENV).get("LAKECONNECT_TEST_S3_ENDPOINT")
    if not endpoint:
        raise SystemExit(f"no S3 server: pass --endpoint, or start the services ({SERVICES_ENV})")
    baseline_settings = session_settings(endpoint)  # exits first when the baseline jars are missing

    import boto3
    from pyspark.sql import functions as F

    from ingest.config.worker import load_worker
    from ingest.runtime.worker import Worker
    from ingest.topics import TopicTable

    for key, value in (("AWS_ACCESS_KEY_ID", "testing"), ("AWS_SECRET_ACCESS_KEY", "testing"),
                       ("AWS_DEFAULT_REGION", "us-east-1")):
        os.environ.setdefault(key, value)
    client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
    tmp = Path(tempfile.mkdtemp(prefix="lakeconnect-bench-s3-"))
    buckets: list[str] = []  # made by this run, removed once counted or at its end
    try:
        worker = Worker(load_worker(None, {"lake.root": str(tmp / "lake"), "spark.master": "local[*]",
                                           "spark.driver.memory": "2g", **baseline_settings}))
        spark = worker.spark()
        cores = spark.sparkContext.defaultParallelism
        t = time.perf_counter()
        seed_topic(spark, worker.lake_root, args.records, args.partitions)
        print(f"topic: {args.records:,} records in {args.partitions} partitions, written in "
              f"{time.perf_counter() - t:.1f} s; {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
        runs = iter(range(1, 1000))

        def new_bucket() -> str:
            bucket = f"lc-bench-{uuid.uuid4().hex[:10]}"
            client.create_bucket(Bucket=bucket)
            buckets.append(bucket)
            return bucket

        def done_with(bucket: str) -> tuple[int, int]:
            found = objects(client, bucket)
            remove_buckets(client, [bucket])  # moto keeps objects in memory
            buckets.remove(bucket)
            return found

        def sink(fmt: str) -> tuple[float, int, int]:
            """A fresh connector and bucket: (seconds, objects, bytes)."""
            bucket = new_bucket()
            converter, format_class, _ = FORMATS[fmt]
            name = f"bench-{fmt}-{next(runs)}"
            worker.create(name, {
                "name": name, "connector.class": "io.confluent.connect.s3.S3SinkConnector", "topics": TOPIC,
                "value.converter": converter, "s3.bucket.name": bucket, "store.url": endpoint,
                "format.class": format_class, "flush.size": str(args.flush_size), "tasks.max": "1"})
            t = time.perf_counter()
            reports = worker.run(name)
            took = time.perf_counter() - t
            assert reports and reports[0].outcome == "COMMITTED", reports
            written = worker.status(name, runs=1)["runs"][0]["records_written"]
            assert written == args.records, (written, args.records, "flush.size must divide each partition's records")
            return (took, *done_with(bucket))

        def plain_job(fmt: str) -> tuple[float, int, int]:
            """The topic table read by Spark and written through s3a: (seconds, objects, bytes)."""
            bucket = new_bucket()
            writer = FORMATS[fmt][2]
            t = time.perf_counter()
            records = TopicTable(worker.lake_root, TOPIC).read()
            records = (records.select("partition", F.col("value").cast("string").alias("value")) if writer == "text"
                       else envelope_fields(records))
            write_records(records, writer, f"s3a://{bucket}/topics/{TOPIC}", args.flush_size)
            return (time.perf_counter() - t, *done_with(bucket))

        t = time.perf_counter()
        for fmt in chosen:  # untimed: code generation, Python workers, first connections
            sink(fmt)
            plain_job(fmt)
        print(f"warm-up (every step once): {time.perf_counter() - t:.1f} s")
        results: dict[str, dict[str, list]] = {fmt: {"sink": [], "plain": []} for fmt in chosen}
        for rep in range(args.reps):
            line = []
            for fmt in chosen:
                for side in (("sink", "plain") if rep % 2 == 0 else ("plain", "sink")):
                    r = (sink if side == "sink" else plain_job)(fmt)
                    results[fmt][side].append(r)
                    line.append(f"{fmt} {side} {r[0]:.2f} s ({r[1]} objects, {r[2] / 2**20:.0f} MiB)")
            print(f"  rep {rep + 1}: " + ", ".join(line) + f"; RSS {rss_mib():.0f} MiB, load average "
                  f"{os.getloadavg()[0]:.1f}")

        def rate(rs: list) -> str:
            secs = [r[0] for r in rs]
            med = statistics.median(secs)
            mib = rs[0][2] / 2**20
            return (f"median {med:.2f} s = {args.records / med:,.0f} records/s, {mib / med:.1f} MiB/s "
                    f"(best {min(secs):.2f} s); {rs[0][1]} objects, {mib:.0f} MiB")

        print()
        print(f"summary (records: {args.records:,}, partitions: {args.partitions}, flush.size {args.flush_size}, "
              f"reps: {args.reps}, cores: {os.cpu_count()}, parallelism: {cores}, load average at the end "
              f"{os.getloadavg()[0]:.1f}; ratios are the sink's records/s over the plain job's, medians)")
        for fmt in chosen:
            _, format_class, writer = FORMATS[fmt]
            sink_s = statistics.median(r[0] for r in results[fmt]["sink"])
            plain_s = statistics.median(r[0] for r in results[fmt]["plain"])
            goal = "" if fmt == "bytes" else f"; goal >= 0.8x: {'met' if plain_s / sink_s >= 0.8 else 'NOT met'}"
            print(f"  {fmt}: sink ({format_class}) {rate(results[fmt]['sink'])}")
            print(f"  {fmt}: plain Spark job (write.{writer} to s3a) {rate(results[fmt]['plain'])}")
            print(f"  {fmt}: ratio sink / plain job {plain_s / sink_s:.2f}x{goal}")
        print(f"  memory: driver RSS {rss_mib():.0f} MiB")
    finally:
        remove_buckets(client, buckets)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
