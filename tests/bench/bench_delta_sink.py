"""Benchmark of the Delta table sink (not a test): a topic of --records records (~200 bytes of JSON each,
JsonConverter with schemas) into a Delta table, appended and merged by key, against plain baselines.

    PYTHONPATH=. .venv/bin/python tests/bench/bench_delta_sink.py [--records 1000000] [--partitions 2]

In one Spark process, with a lake in a temporary directory, it prints:

- insert: `insert.mode=insert` of the topic into a new table (rows with their Kafka coordinates),
  records/s; baseline: the same work written by hand in Spark (read the topic's Parquet files, parse
  the values with `from_json`, write Parquet), and the ratio sink / baseline;
- upsert, load: `insert.mode=upsert` (`pk.mode=record_value`, `pk.fields=id`) of the topic, whose
  records hold --records / 2 distinct ids (each id twice: the later record wins), into a new table;
- upsert, update: the same records produced again and merged into that table: every key matches, so
  the MERGE rewrites every file of the table;
- upsert baseline: the update written by hand in Spark (read the new records' topic files, parse them,
  keep the latest record per id with a window, anti-join the table's rows with their ids, write the
  union as Parquet; no Delta commit), and the ratio sink / baseline;
- for scale: delta-rs `DeltaTable.merge` (update when matched, insert otherwise) of the --records / 2
  final rows, already parsed and deduplicated in Arrow, into a table holding those keys (one process,
  no JSON parsing, no deduplication);
- memory: the driver's RSS after the batches (the driver never holds the records).

Both modes run once untimed first on a small topic (code generation).
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from tests.bench.bench_jdbc import rss_mib

FIELDS = (("id", "int64"), ("customer", "string"), ("email", "string"), ("quantity", "int32"),
          ("amount", "double"), ("note", "string"))
SCHEMA = ('{"type":"struct","name":"purchase","fields":['
          + ",".join(f'{{"type":"{t}","optional":{"false" if n == "id" else "true"},"field":"{n}"}}'
                     for n, t in FIELDS) + "]}")
DDL = "id long, customer string, email string, quantity int, amount double, note string"
NOTE = "a note of some length, to make the record about two hundred bytes"


def seed_topic(spark, lake: str, topic: str, records: int, partitions: int, version: int = 1) -> None:
    """`records` JsonConverter records; ids 0 .. records/2 - 1, each twice, a key's records in one partition."""
    from pyspark.sql import functions as F

    from ingest.topics import TopicTable

    table = TopicTable(lake, topic)
    table.create(partitions, if_not_exists=True)
    distinct = max(1, records // 2)
    ident = (F.col("seq") % distinct)
    df = spark.range(records).select(F.col("id").alias("seq")).select(
        F.col("seq"), F.lit(None).cast("binary").alias("key"), (ident % partitions).cast("int").alias("partition"),
        F.concat(F.lit('{"schema":' + SCHEMA + ',"payload":{"id":'), ident.cast("string"),
                 F.lit(',"customer":"customer '), F.col("seq").cast("string"),
                 F.lit('","email":"customer'), ident.cast("string"),
                 F.lit('@example.com","quantity":'), (F.col("seq") % 1000).cast("string"),
                 F.lit(',"amount":'), ((F.col("seq") % 100000) / 100).cast("string"),
                 F.lit(f',"note":"{NOTE}"}}}}')).cast("binary").alias("value"))
    table.append(df, app_id=f"bench-seed-{topic}", version=version)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--partitions", type=int, default=2)
    args = ap.parse_args()

    import pyarrow as pa
    from deltalake import DeltaTable, write_deltalake
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    from ingest.config.worker import load_worker
    from ingest.delta import read_table
    from ingest.runtime.worker import Worker

    tmp = Path(tempfile.mkdtemp(prefix="lakeconnect-bench-delta-"))
    figures: dict[str, str] = {}
    try:
        worker = Worker(load_worker(None, {"lake.root": str(tmp / "lake"), "spark.master": "local[*]",
                                           "spark.driver.memory": "2g"}))
        spark = worker.spark()
        cores = spark.sparkContext.defaultParallelism
        t = time.perf_counter()
        seed_topic(spark, worker.lake_root, "purchases", args.records, args.partitions)
        seed_topic(spark, worker.lake_root, "warmup", 10_000, args.partitions)
        print(f"topic: {args.records:,} records in {args.partitions} partitions, written in "
              f"{time.perf_counter() - t:.1f} s")

        def sink(name: str, topic: str, **config: str) -> float:
            worker.create(name, {"name": name, "connector.class": "DeltaTableSink", "topics": topic,
                                 "value.converter": "org.apache.kafka.connect.json.JsonConverter",
                                 "table.name.format": f"{name}_${{topic}}", **config})
            t = time.perf_counter()
            reports = worker.run(name)
            took = time.perf_counter() - t
            assert reports and reports[0].outcome == "COMMITTED", reports
            steps[name] = reports[0].timings_ms
            return took

        steps: dict[str, dict] = {}
        upsert = {"insert.mode": "upsert", "pk.mode": "record_value", "pk.fields": "id"}
        sink("warm_insert", "warmup")
        sink("warm_upsert", "warmup", **upsert)
        seed_topic(spark, worker.lake_root, "warmup", 10_000, args.partitions, version=2)
        worker.run("warm_upsert")

        took = sink("insert", "purchases")
        rows = DeltaTable(f"{worker.lake_root}/tables/insert_purchases").count()
        assert rows == args.records, rows
        figures["insert"] = f"{took:.2f} s = {args.records / took:,.0f} records/s"

        t = time.perf_counter()
        topic = read_table(spark, f"{worker.lake_root}/topics/purchases", columns=["value"])
        parsed = topic.select(F.from_json(F.col("value").cast("string"), f"payload struct<{DDL}>").alias("r"))
        parsed.select("r.payload.*").write.parquet(str(tmp / "baseline-insert"))
        base = time.perf_counter() - t
        figures["insert baseline (Spark: read topic files, from_json, write Parquet)"] = (
            f"{base:.2f} s = {args.records / base:,.0f} records/s")
        figures["ratio insert / baseline"] = f"{base / took:.2f}"
        print(f"  insert: {took:.2f} s; baseline {base:.2f} s; RSS {rss_mib():.0f} MiB")

        load = sink("upsert", "purchases", **upsert)
        distinct = max(1, args.records // 2)
        table = f"{worker.lake_root}/tables/upsert_purchases"
        assert DeltaTable(table).count() == distinct
        figures["upsert, load (new table)"] = f"{load:.2f} s = {args.records / load:,.0f} records/s"
        seed_topic(spark, worker.lake_root, "again", args.records, args.partitions)  # the baseline's input
        t = time.perf_counter()
        new = read_table(spark, f"{worker.lake_root}/topics/again", columns=["partition", "offset", "value"])
        new = new.select("partition", "offset", F.from_json(F.col("value").cast("string"),
                                                            f"payload struct<{DDL}>").alias("r"))
        new = new.select("partition", "offset", "r.payload.*")
        latest = (new.withColumn("rank", F.row_number().over(Window.partitionBy("id").orderBy(
            F.col("partition").desc(), F.col("offset").desc()))).filter("rank = 1").drop("rank", "partition", "offset"))
        kept = read_table(spark, table).join(latest.select("id"), "id", "left_anti")
        kept.unionByName(latest).write.parquet(str(tmp / "baseline-upsert"))
        base_update = time.perf_counter() - t
        seed_topic(spark, worker.lake_root, "purchases", args.records, args.partitions, version=2)
        t = time.perf_counter()
        reports = worker.run("upsert")
        update = time.perf_counter() - t
        steps["upsert update"] = reports[0].timings_ms
        assert DeltaTable(table).count() == distinct
        figures["upsert, update (every key matched)"] = f"{update:.2f} s = {args.records / update:,.0f} records/s"
        figures["upsert baseline (Spark: read topic files, from_json, window, anti-join, write Parquet)"] = (
            f"{base_update:.2f} s = {args.records / base_update:,.0f} records/s")
        figures["ratio upsert update / baseline"] = f"{base_update / update:.2f}"
        print(f"  upsert: load {load:.2f} s, update {update:.2f} s; RSS {rss_mib():.0f} MiB")

        ids = pa.array(range(distinct), pa.int64())
        final = pa.table({"id": ids, "customer": pa.array([f"customer {i + distinct}" for i in range(distinct)]),
                          "email": pa.array([f"customer{i}@example.com" for i in range(distinct)]),
                          "quantity": pa.array([(i + distinct) % 1000 for i in range(distinct)], pa.int32()),
                          "amount": pa.array([((i + distinct) % 100000) / 100 for i in range(distinct)]),
                          "note": pa.array([NOTE] * distinct)})
        target = str(tmp / "baseline-merge")
        write_deltalake(target, final)
        t = time.perf_counter()
        (DeltaTable(target).merge(final, "t.id = s.id", source_alias="s", target_alias="t")
         .when_matched_update_all().when_not_matched_insert_all().execute())
        merge = time.perf_counter() - t
        figures["for scale: delta-rs DeltaTable.merge of the final rows, in Arrow"] = (
            f"{merge:.2f} s = {distinct / merge:,.0f} rows/s")
        figures["memory"] = f"driver RSS {rss_mib():.0f} MiB"
        print()
        print(f"summary (records: {args.records:,}, partitions: {args.partitions}, cores: {cores})")
        for key, value in figures.items():
            print(f"  {key}: {value}")
        print("  steps of the sink's runs (ms):")
        for key, value in steps.items():
            if not key.startswith("warm"):
                print(f"    {key}: {value}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
