"""Benchmark of single message transforms (not a test): a source batch of rows like the JDBC source's
(a struct value with a Date and a Timestamp) through a chain of five transforms, converted by
JsonConverter and appended to a topic table, against the same batch with no transform, in the same run.

    .venv/bin/python tests/bench/bench_transforms.py [--rows 1000000] [--reps 3]

The chain is the book's: ValueToKey(id) -> ExtractField$Key(id) -> TimestampConverter$Value(published
-> yyyy-MM-dd string) -> ReplaceField$Value(renames source:origin) -> InsertField$Value(static field).
Prints records/s of each and the ratio (goal: the chain costs at most 1.5x the run without it), after one
untimed-for-the-ratio first run of each (Spark compiles a plan's generated code on its first run).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

CHAIN = {
    "transforms": "valueToKey,extractField,timestampConverter,replaceSource,addOrigin",
    "transforms.valueToKey.type": "org.apache.kafka.connect.transforms.ValueToKey",
    "transforms.valueToKey.fields": "id",
    "transforms.extractField.type": "org.apache.kafka.connect.transforms.ExtractField$Key",
    "transforms.extractField.field": "id",
    "transforms.timestampConverter.type": "org.apache.kafka.connect.transforms.TimestampConverter$Value",
    "transforms.timestampConverter.field": "published",
    "transforms.timestampConverter.format": "yyyy-MM-dd",
    "transforms.timestampConverter.target.type": "string",
    "transforms.replaceSource.type": "org.apache.kafka.connect.transforms.ReplaceField$Value",
    "transforms.replaceSource.renames": "source:origin",
    "transforms.addOrigin.type": "org.apache.kafka.connect.transforms.InsertField$Value",
    "transforms.addOrigin.static.field": "pipeline",
    "transforms.addOrigin.static.value": "bench",
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--each", action="store_true", help="also time each transform of the chain alone")
    args = ap.parse_args()

    from pyspark.sql import functions as F

    from ingest.config.connector import validate_connector
    from ingest.config.worker import load_worker
    from ingest.records import RecordBatch
    from ingest.records.schema import (
        OPTIONAL_TIMESTAMP_SCHEMA, STRING_SCHEMA, date, struct,
    )
    from ingest.records.schema import INT64_SCHEMA
    from ingest.registry import default_registry
    from ingest.runtime.pipeline import Pipeline, union_all
    from ingest.spark import get_spark
    from ingest.topics import TopicTable

    tmp = Path(tempfile.mkdtemp(prefix="lakeconnect-bench-transforms-"))
    spark = get_spark({"spark.master": "local[*]", "spark.driver.memory": "2g", "spark.sql.shuffle.partitions": "4"})
    worker = load_worker(None, {"lake.root": str(tmp), "file.connectors.enable": "true"})
    value_schema = struct("kafka_books", ("id", INT64_SCHEMA), ("title", STRING_SCHEMA), ("source", STRING_SCHEMA),
                          ("published", date()), ("timestamp", OPTIONAL_TIMESTAMP_SCHEMA))
    rows = (spark.range(args.rows)
            .select(F.lit("books").alias("topic"), F.lit(None).cast("int").alias("partition"),
                    F.lit(None).cast("void").alias("key"),
                    F.struct(F.col("id"), F.concat(F.lit("title "), F.col("id").cast("string")).alias("title"),
                             F.lit("jdbc").alias("source"), F.date_add(F.lit("2020-01-01").cast("date"),
                                                                       (F.col("id") % 1000).cast("int")).alias("published"),
                             F.timestamp_millis(F.lit(1656234290000) + F.col("id")).alias("timestamp")).alias("value"),
                    F.lit(None).cast("array<struct<key:string,value:string>>").alias("headers"),
                    F.current_timestamp().alias("timestamp"), F.col("id").alias("seq")))
    rows = rows.cache()
    rows.count()

    def pipeline(extra: dict) -> Pipeline:
        setup = validate_connector({"name": "bench", "connector.class": "FileStreamSource", "file": "/dev/null",
                                    "topic": "books", "key.converter": "org.apache.kafka.connect.json.JsonConverter",
                                    "value.converter": "org.apache.kafka.connect.json.JsonConverter", **extra},
                                   worker, default_registry())
        return Pipeline.build(setup)

    def run(p: Pipeline, name: str, version: int) -> float:
        t = time.perf_counter()
        batches = p.transform([RecordBatch(rows, None, value_schema, topics=("books",))])
        frames = [p.serialise(b).drop("topic") for b in batches]
        table = TopicTable(str(tmp), name)
        table.create(4, if_not_exists=True)
        table.append(union_all(frames), app_id="bench", version=version)
        return time.perf_counter() - t

    plain, chained = pipeline({}), pipeline(CHAIN)
    # The first run of each compiles its generated code (once per Spark process): timed apart, so that the
    # reps compare steady state with steady state.
    cold = {"none": run(plain, "warmup-plain", 1), "chain": run(chained, "warmup-chained", 1)}
    times: dict[str, list[float]] = {"none": [], "chain": []}
    for rep in range(args.reps):  # interleaved, so both see the same machine
        times["none"].append(run(plain, "plain", rep + 1))
        times["chain"].append(run(chained, "chained", rep + 1))
    if args.each:
        labels = CHAIN["transforms"].split(",")
        for i, label in enumerate(labels):
            one = {k: v for k, v in CHAIN.items() if k.startswith(f"transforms.{label}.")}
            if label == "extractField":  # needs the key ValueToKey makes
                one.update({k: v for k, v in CHAIN.items() if k.startswith("transforms.valueToKey.")})
                one["transforms"] = "valueToKey,extractField"
            else:
                one["transforms"] = label
            took = statistics.median(run(pipeline(one), f"each-{label}", rep + 1) for rep in range(args.reps))
            print(f"  {one['transforms']:<28} {took:6.2f} s")
    base, chain = statistics.median(times["none"]), statistics.median(times["chain"])
    print(f"rows: {args.rows:,}  reps: {args.reps}")
    print(f"no transform:     {base:6.2f} s  {args.rows / base:12,.0f} records/s")
    print(f"five transforms:  {chain:6.2f} s  {args.rows / chain:12,.0f} records/s")
    print(f"ratio chain / none: {chain / base:.2f}x (goal <= 1.5x)")
    print(f"first run of each (code generation included): none {cold['none']:.2f} s, chain {cold['chain']:.2f} s")
    sample = TopicTable(str(tmp), "chained").read({p: (0, 1) for p in range(4)}).limit(1).collect()
    if sample:
        print("a record:", bytes(sample[0]["key"]).decode(), bytes(sample[0]["value"]).decode()[-160:])


if __name__ == "__main__":
    main()
