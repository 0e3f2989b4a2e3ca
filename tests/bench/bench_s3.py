"""Benchmark of the S3 sink connector (not a test): a topic of --records records (~460 bytes each:
JsonConverter JSON with its schema, ~185 bytes of payload) written to the S3 server as JSON objects
and as Parquet objects, against a plain boto3 upload of the same bytes in the same number of objects.

    PYTHONPATH=. .venv/bin/python tests/bench/bench_s3.py [--records 1000000] [--partitions 2] [--flush-size 100000]

It uses the S3 server named by --endpoint, or else by .services/services.env (`make services-up`),
with buckets of its own (removed at the end), and a lake in a temporary directory. In one Spark process it prints:

- the topic: --records records in --partitions partitions, values JsonConverter with schemas (a struct
  of 6 fields), written straight into the topic table;
- JSON: a sink batch with JsonFormat (DefaultPartitioner, flush.size --flush-size), records/s and MB/s;
- Parquet: the same with ParquetFormat;
- bytes: ByteArrayConverter values written with ByteArrayFormat (no parsing: the sink's own cost);
- baseline: each sink's objects (JSON, Parquet, bytes) uploaded again with boto3 `put_object`, as many
  objects, by as many threads as Spark has cores (the sink's parallelism), MB/s; the ratio of each sink to
  the upload of its own objects (goal >= 0.8 for JSON and Parquet);
- memory: the driver's RSS and the JVM heap (peak during the batch) after each batch; the executors'
  Python workers hold at most one part (`s3.part.size`) per open object;
- the floor: what no sink that reads the topic can beat. Reading the topic's values alone (Spark sums their
  lengths: no decoding, no encoding, no upload) costs the machine CPU seconds, and so does the baseline's
  upload (boto3 and the S3 server, which share the machine's cores: /proc/stat, all processes). A sink
  does both, so it takes at least their CPU seconds spread over every core; baseline / that time is the
  best ratio possible on this machine, whatever the sink's code. /proc/stat counts every process, so the
  floor means something only on a machine that runs nothing else meanwhile.

Both sinks run once untimed first (code generation, first connections); the figures are the best of --reps.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
import uuid
from pathlib import Path

from tests.bench.bench_jdbc import floor_ratio, jvm_heap_mib, read_env, rss_mib, timed_cpu
from tests.bench.s3util import remove_buckets, upload_again

SERVICES_ENV = Path(__file__).resolve().parents[2] / ".services" / "services.env"
SCHEMA = ('{"type":"struct","name":"purchase","fields":[{"type":"int64","field":"id"},'
          '{"type":"string","field":"customer"},{"type":"string","field":"email"},'
          '{"type":"int32","field":"quantity"},{"type":"double","field":"amount"},'
          '{"type":"string","field":"note"}]}')


def seed_topic(spark, lake: str, records: int, partitions: int) -> None:
    """The topic `purchases`, written as a source would (JsonConverter bytes with the schema envelope)."""
    from pyspark.sql import functions as F

    from ingest.topics import TopicTable

    table = TopicTable(lake, "purchases")
    table.create(partitions, if_not_exists=True)
    df = spark.range(records).select(
        F.col("id").alias("seq"),
        F.lit(None).cast("binary").alias("key"),
        F.col("id").cast("int").__mod__(partitions).alias("partition"),
        F.concat(F.lit('{"schema":' + SCHEMA + ',"payload":{"id":'), F.col("id").cast("string"),
                 F.lit(',"customer":"customer '), F.col("id").cast("string"),
                 F.lit('","email":"customer'), F.col("id").cast("string"),
                 F.lit('@example.com","quantity":'), (F.col("id") % 1000).cast("string"),
                 F.lit(',"amount":'), ((F.col("id") % 100000) / 100).cast("string"),
                 F.lit(',"note":"'), F.lit("a note of some length, to make the record about two hundred bytes"),
                 F.lit('"}}')).cast("binary").alias("value"))
    table.append(df, app_id="bench-seed", version=1)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--partitions", type=int, default=2)
    ap.add_argument("--flush-size", type=int, default=100_000)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--endpoint", help="S3 endpoint URL (default: .services/services.env)")
    args = ap.parse_args()

    import boto3

    from ingest.config.worker import load_worker
    from ingest.runtime.worker import Worker

    endpoint = args.endpoint or read_env(SERVICES_ENV).get("LAKECONNECT_TEST_S3_ENDPOINT")
    if not endpoint:
        raise SystemExit(f"no S3 server: pass --endpoint, or start the services ({SERVICES_ENV})")
    for key, value in (("AWS_ACCESS_KEY_ID", "testing"), ("AWS_SECRET_ACCESS_KEY", "testing"),
                       ("AWS_DEFAULT_REGION", "us-east-1")):
        os.environ.setdefault(key, value)
    client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
    tmp = Path(tempfile.mkdtemp(prefix="lakeconnect-bench-s3-"))
    figures: dict[str, str] = {}
    buckets: list[str] = []  # made by this run, removed at its end
    try:
        worker = Worker(load_worker(None, {"lake.root": str(tmp / "lake"), "spark.master": "local[*]",
                                           "spark.driver.memory": "2g"}))
        spark = worker.spark()
        cores = spark.sparkContext.defaultParallelism
        t = time.perf_counter()
        seed_topic(spark, worker.lake_root, args.records, args.partitions)
        print(f"topic: {args.records:,} records in {args.partitions} partitions, written in "
              f"{time.perf_counter() - t:.1f} s")
        runs = iter(range(1, 1000))

        converters = {"JsonFormat": "org.apache.kafka.connect.json.JsonConverter",
                      "ParquetFormat": "org.apache.kafka.connect.json.JsonConverter",
                      "ByteArrayFormat": "org.apache.kafka.connect.converters.ByteArrayConverter"}

        def sink(fmt: str) -> tuple[float, str, int, int]:
            """A fresh connector and bucket; (seconds, bucket, objects, bytes)."""
            bucket = f"lc-bench-{uuid.uuid4().hex[:10]}"
            client.create_bucket(Bucket=bucket)
            buckets.append(bucket)
            name = f"bench-{fmt.lower()}-{next(runs)}"
            worker.create(name, {
                "name": name, "connector.class": "io.confluent.connect.s3.S3SinkConnector", "topics": "purchases",
                "value.converter": converters[fmt],
                "s3.bucket.name": bucket, "store.url": endpoint, "format.class": fmt,
                "flush.size": str(args.flush_size), "tasks.max": "1"})
            jvm_heap_mib(spark)
            t = time.perf_counter()
            reports = worker.run(name)
            took = time.perf_counter() - t
            assert reports and reports[0].outcome == "COMMITTED", reports
            listed = [o for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket)
                      for o in page.get("Contents", [])]
            return took, bucket, len(listed), sum(o["Size"] for o in listed)

        def baseline(bucket: str) -> tuple[float, float]:
            """The sink's objects uploaded again with plain boto3, as many objects, `cores` at a time: (seconds,
            the machine's CPU seconds)."""
            return upload_again(client, bucket, cores, "lc-bench-base", buckets)

        def read_alone() -> tuple[float, float]:
            """The topic's values read by Spark and their lengths summed: (seconds, the machine's CPU seconds)."""
            from pyspark.sql import functions as F

            from ingest.topics import TopicTable

            frame = TopicTable(worker.lake_root, "purchases").read().select(F.sum(F.length("value")))
            took, cpu, _ = timed_cpu(frame.collect)
            return took, cpu

        for fmt in converters:
            sink(fmt)  # untimed: first connections, code generation
        results: dict[str, list] = {fmt: [] for fmt in converters}
        base_times, parquet_base_times, bytes_base_times, reads = [], [], [], []
        read_alone()  # untimed
        for _ in range(args.reps):
            for fmt in results:
                results[fmt].append(sink(fmt))
                heap, peak = jvm_heap_mib(spark)
                print(f"  {fmt}: {results[fmt][-1][0]:.2f} s, {results[fmt][-1][2]} objects, "
                      f"{results[fmt][-1][3] / 2**20:.0f} MiB; RSS {rss_mib():.0f} MiB, heap peak {peak:.0f} MiB")
            base_times.append(baseline(results["JsonFormat"][-1][1]))
            parquet_base_times.append(baseline(results["ParquetFormat"][-1][1]))
            bytes_base_times.append(baseline(results["ByteArrayFormat"][-1][1]))
            reads.append(read_alone())
            print(f"  baseline boto3 upload: {base_times[-1][0]:.2f} s (JSON objects, {base_times[-1][1]:.1f} CPU-s), "
                  f"{parquet_base_times[-1][0]:.2f} s (Parquet objects, {parquet_base_times[-1][1]:.1f} CPU-s), "
                  f"{bytes_base_times[-1][0]:.2f} s (bytes objects, {bytes_base_times[-1][1]:.1f} CPU-s); "
                  f"the topic's values read alone: {reads[-1][0]:.2f} s ({reads[-1][1]:.1f} CPU-s)")
        json_best = min(results["JsonFormat"])
        parquet_best = min(results["ParquetFormat"])
        base_best, base_cpu = min(base_times)
        read_best, read_cpu = min(reads)
        mib = json_best[3] / 2**20
        figures["JSON sink"] = (f"{json_best[0]:.2f} s = {args.records / json_best[0]:,.0f} records/s, "
                                f"{mib / json_best[0]:.1f} MiB/s ({json_best[2]} objects, {mib:.0f} MiB)")
        figures["Parquet sink"] = (f"{parquet_best[0]:.2f} s = {args.records / parquet_best[0]:,.0f} records/s, "
                                   f"{parquet_best[3] / 2**20 / parquet_best[0]:.1f} MiB/s ({parquet_best[2]} objects, "
                                   f"{parquet_best[3] / 2**20:.0f} MiB)")
        figures["baseline (boto3 put_object of the JSON objects)"] = (
            f"{base_best:.2f} s = {mib / base_best:.1f} MiB/s; the machine busy {base_cpu / base_best:.1f} of {os.cpu_count()} "
            f"cores ({base_cpu:.1f} CPU-s, the S3 server's included)")
        floor, best_possible = floor_ratio(base_best, base_cpu, read_cpu, os.cpu_count())
        figures["floor: the topic's values read alone (Spark, no decoding, encoding or upload)"] = (
            f"{read_best:.2f} s, {read_cpu:.1f} CPU-s; with the upload's CPU over {os.cpu_count()} cores a sink "
            f"takes at least {floor:.2f} s: the best ratio possible here is {best_possible:.2f}")
        figures["ratio JSON sink / baseline"] = f"{base_best / json_best[0]:.2f} (goal >= 0.8)"
        parquet_base, parquet_base_cpu = min(parquet_base_times)
        figures["baseline (boto3 put_object of the Parquet objects)"] = f"{parquet_base:.2f} s"
        figures["ratio Parquet sink / its baseline"] = f"{parquet_base / parquet_best[0]:.2f} (goal >= 0.8)"
        _, parquet_possible = floor_ratio(parquet_base, parquet_base_cpu, read_cpu, os.cpu_count())
        figures["floor for the Parquet sink"] = f"the best ratio possible here is {parquet_possible:.2f}"
        bytes_best, (bytes_base, bytes_base_cpu) = min(results["ByteArrayFormat"]), min(bytes_base_times)
        bmib = bytes_best[3] / 2**20
        figures["bytes sink (no parsing)"] = (f"{bytes_best[0]:.2f} s = {args.records / bytes_best[0]:,.0f} records/s, "
                                              f"{bmib / bytes_best[0]:.1f} MiB/s ({bytes_best[2]} objects, {bmib:.0f} MiB)")
        figures["baseline (boto3 put_object of the bytes objects)"] = f"{bytes_base:.2f} s = {bmib / bytes_base:.1f} MiB/s"
        figures["ratio bytes sink / baseline"] = f"{bytes_base / bytes_best[0]:.2f}"
        _, bytes_possible = floor_ratio(bytes_base, bytes_base_cpu, read_cpu, os.cpu_count())
        figures["floor for the bytes sink"] = f"the best ratio possible here is {bytes_possible:.2f}"
        figures["memory"] = f"driver RSS {rss_mib():.0f} MiB"
        print()
        print(f"summary (records: {args.records:,}, partitions: {args.partitions}, cores: {cores})")
        for key, value in figures.items():
            print(f"  {key}: {value}")
    finally:
        remove_buckets(client, buckets)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
