"""Benchmark of the Kafka topic backend (not a test): lakeconnect against what a Spark user would run
instead, Spark's own Kafka connector and a plain Spark job writing through s3a, on the same records in
the same Spark process.

    PYTHONPATH=. .venv/bin/python tests/bench/bench_kafka.py [--records 500000] [--partitions 64] [--reps 3]
        [--flush-size 1000] [--warmup 100000] [--warmup-rounds 3] [--append-only]

It needs Spark's Kafka connector and hadoop-aws in .jars/bench/ (`bash tests/services/fetch_jars.sh
--bench`), the Kafka broker named by --bootstrap and the S3 server named by --endpoint, or else by
.services/services.env (`make services-up`), and makes a lake in a temporary directory. Every topic it
writes is new (`lc-bench-<what>-<random>`, --partitions partitions, made through the admin API) and is
deleted at the end, as are the consumer groups of its sink runs; every bucket is new (`lc-bench-kafka-...`)
and is emptied and removed once counted. The batch markers topic of exactly-once appends is created when
the broker lacks it, and kept. It prints:

1. source -> Kafka: --records records as a source hands them to the runtime (seq, key = b"customer-<id %
   10000>", value = JsonConverter JSON with its schema, ~460 bytes), cached in Spark, into a fresh topic
   each: `KafkaTopic.append` with the idempotent producer (`exactly.once.source.support=disabled`) and
   exactly-once (each Spark task produces in a transaction of its own, with a marker in
   `connect-batch-markers`); against Spark's writer `df.select("key", "value").write.format("kafka")` of
   the same DataFrame (`kafka.enable.idempotence=true`, `kafka.acks=all`, the Kafka client's other
   defaults). Both put a record where Kafka's Java partitioner does (murmur2 of the key); the bench checks
   the idempotent topics have the same counts per partition. Spark's writer has no transactions, so the
   exactly-once append is compared with the same idempotent writer: its ratio is the price of the
   transactions. Goals: idempotent >= 0.8x Spark's writer, exactly-once >= 0.7x. Spark's writer sends
   each task's rows as they come, so a partition's records arrive in no particular order; lakeconnect
   sends each partition's records in `seq` order, from one task, which takes a shuffle and a sort. A
   third baseline prices that: Spark's writer handed the records as a Spark user would arrange them for
   the same order (a `partition` column of murmur2, `repartitionById`, `sortWithinPartitions`);
2. Kafka -> Spark: the exactly-once topic of the last rep read back, read_committed, its values' lengths
   summed: lakeconnect's range reader (`KafkaTopic.read(ranges)`, ingest/topics/kafka_read.py) against
   Spark's reader (`spark.read.format("kafka")` with startingOffsets/endingOffsets);
3. Kafka -> S3: the S3 sink (tasks.max 1, flush.size --flush-size, JsonConverter with schemas,
   DefaultPartitioner) run through the Worker on that topic, JsonFormat and ParquetFormat, a fresh
   connector (so a fresh consumer group `connect-<name>`) and bucket each time; against a plain Spark job
   reading the same ranges with Spark's reader, parsing the values with `from_json`, and writing the same
   fields under `partition=<p>/`, at most flush.size records an object, with `write.json` / `write.parquet`
   to `s3a://` (committers: tests/bench/spark_baseline.py). The sink writes only full objects (a
   partition's records after its last full object wait for the next batch, as in Kafka Connect), the
   plain job writes them all: both read every record, and records/s counts the records read. Goal >= 0.8x.

A warm-up (min(--records, --warmup) records) runs every step of both sides untimed (code generation,
Python workers, the connectors' classes, first connections), step 1 --warmup-rounds times: with one
round, Spark's writer got faster rep after rep for about six reps of 300,000 records (3.2 s down to
1.5 s) while the append did not, which flattered the first reps' ratios. Then --reps reps, the sides' order rotated
each rep; the median and the best are shown, and ratios of medians. For the last rep it also prints the
Spark stages each step ran (tasks, wall time, the tasks' run and CPU time, shuffle bytes), from Spark's
status store: where each side's time went. The machine's other load (the broker,
the S3 server and whatever else runs) shows in every figure: compare figures of one run.
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

from ingest.topics.numbering import partition_choice
from tests.bench.bench_jdbc import read_env, rss_mib
from tests.bench.s3util import remove_buckets
from tests.bench.spark_baseline import (
    envelope_fields,
    kafka_read,
    kafka_write,
    objects,
    purchase_value,
    session_settings,
    write_records,
)

SERVICES_ENV = Path(__file__).resolve().parents[2] / ".services" / "services.env"
MARKERS_TOPIC = "connect-batch-markers"
WARMUP_RECORDS = 100_000
JSON_CONVERTER = "org.apache.kafka.connect.json.JsonConverter"
BYTES_CONVERTER = "org.apache.kafka.connect.converters.ByteArrayConverter"
FORMATS = {"json": "io.confluent.connect.s3.format.json.JsonFormat",
           "parquet": "io.confluent.connect.s3.format.parquet.ParquetFormat"}


class Topics:
    """Topics made through the admin API, deleted at the end; and the sink runs' consumer groups."""

    def __init__(self, bootstrap: str, partitions: int):
        from confluent_kafka.admin import AdminClient

        from ingest.topics.kafka import KafkaClients

        self.bootstrap = bootstrap
        self.admin = AdminClient({"bootstrap.servers": bootstrap})
        self.clients = KafkaClients.from_configs({"kafka.bootstrap.servers": bootstrap})
        self.partitions = partitions
        self.made: list[str] = []
        self.groups: list[str] = []

    def create(self, what: str) -> str:
        from confluent_kafka.admin import NewTopic

        name = f"lc-bench-{what}-{uuid.uuid4().hex[:10]}"
        self.made.append(name)
        # The AdminClient (self.admin) stays referenced until the future resolves.
        self.admin.create_topics([NewTopic(name, self.partitions, 1)], request_timeout=30)[name].result(60)
        from ingest.topics.kafka import KafkaTopic

        # The controller answers before the brokers list the topic: wait as the backend's own create does.
        KafkaTopic(self.clients, name).await_listed()
        return name

    def delete(self, names: list[str]) -> None:
        names = [n for n in names if n in self.made]
        if names:
            for name, future in self.admin.delete_topics(names, request_timeout=60).items():
                try:
                    future.result(60)
                    self.made.remove(name)
                except Exception as e:  # noqa: BLE001 -- best effort; said, not hidden
                    print(f"could not delete topic {name}: {e}")

    def close(self) -> None:
        self.delete(list(self.made))
        if self.groups:
            for name, future in self.admin.delete_consumer_groups(self.groups, request_timeout=60).items():
                try:
                    future.result(60)
                except Exception as e:  # noqa: BLE001
                    print(f"could not delete consumer group {name}: {e}")


def records_frame(spark, records: int):
    """The records as a source hands them to the runtime: seq, key, value (JsonConverter JSON)."""
    from pyspark.sql import functions as F

    return spark.range(records).select(
        F.col("id").alias("seq"),
        F.concat(F.lit("customer-"), (F.col("id") % 10000).cast("string")).cast("binary").alias("key"),
        purchase_value(F.col("id")).alias("value"))


class Stages:
    """Spark's stages since the last call, from the status store (the UI is off): where a step's time went."""

    def __init__(self, spark):
        self.spark, self.seen = spark, -1
        self.since()

    def since(self) -> list[str]:
        gw = self.spark.sparkContext._gateway
        found = self.spark.sparkContext._jsc.sc().statusStore().stageList(
            None, False, False, gw.new_array(gw.jvm.double, 0), None)
        lines = []
        for i in range(found.size()):
            s = found.apply(i)
            if s.stageId() <= self.seen:
                continue
            sub, end = s.submissionTime(), s.completionTime()
            wall = (end.get().getTime() - sub.get().getTime()) / 1000 if sub.isDefined() and end.isDefined() else 0
            lines.append(f"stage {s.stageId()}: {s.numTasks()} tasks, {wall:.2f} s, tasks' run {s.executorRunTime() / 1000:.2f}"
                         f" s (JVM CPU {s.executorCpuTime() / 1e9:.2f} s), shuffle read {s.shuffleReadBytes() / 1e6:.0f} MB,"
                         f" write {s.shuffleWriteBytes() / 1e6:.0f} MB")
        self.seen = max([self.seen] + [found.apply(i).stageId() for i in range(found.size())])
        return sorted(lines, key=lambda line: int(line.split()[1].rstrip(":")))


def median_best(seconds: list[float], records: int) -> str:
    med, best = statistics.median(seconds), min(seconds)
    return f"median {med:.2f} s = {records / med:,.0f} records/s (best {best:.2f} s = {records / best:,.0f}/s)"


def ratio(ours: list[float], theirs: list[float], goal: float | None) -> str:
    r = statistics.median(theirs) / statistics.median(ours)
    best = min(theirs) / min(ours)
    return f"{r:.2f}x (best/best {best:.2f}x)" + (f"; goal >= {goal}x: {'met' if r >= goal else 'NOT met'}"
                                                  if goal else "")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=500_000)
    ap.add_argument("--partitions", type=int, default=64, help="partitions of every topic it creates")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--flush-size", type=int, default=1000,
                    help="the S3 sink's flush.size, and the plain job's maxRecordsPerFile")
    ap.add_argument("--warmup", type=int, default=WARMUP_RECORDS, help="records of the untimed warm-up (at most "
                    "--records)")
    ap.add_argument("--warmup-rounds", type=int, default=3, help="untimed rounds of step 1 before its reps: "
                    "Spark's writer runs in the JVM, whose compiler needs a few to reach its steady speed")
    ap.add_argument("--append-only", action="store_true", help="step 1 only (source -> Kafka)")
    ap.add_argument("--bootstrap", help="Kafka bootstrap servers (default: .services/services.env)")
    ap.add_argument("--endpoint", help="S3 endpoint URL (default: same)")
    args = ap.parse_args()
    print("command: " + " ".join([os.path.relpath(sys.argv[0])] + sys.argv[1:]))

    env = read_env(SERVICES_ENV)
    bootstrap = args.bootstrap or env.get("LAKECONNECT_TEST_KAFKA_BOOTSTRAP")
    endpoint = args.endpoint or env.get("LAKECONNECT_TEST_S3_ENDPOINT")
    if not bootstrap or not endpoint:
        raise SystemExit(f"no Kafka broker or S3 server: pass --bootstrap and --endpoint, or start the services "
                         f"({SERVICES_ENV})")
    baseline_settings = session_settings(endpoint)  # exits first when the baseline jars are missing

    import boto3
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    from ingest.config.worker import load_worker
    from ingest.runtime.worker import Worker
    from ingest.topics.kafka import BatchMarkers, KafkaClients, KafkaTopic
    from ingest.topics.kafka_read import watermarks

    for key, value in (("AWS_ACCESS_KEY_ID", "testing"), ("AWS_SECRET_ACCESS_KEY", "testing"),
                       ("AWS_DEFAULT_REGION", "us-east-1")):
        os.environ.setdefault(key, value)
    s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
    tmp = Path(tempfile.mkdtemp(prefix="lakeconnect-bench-kafka-"))
    topics = Topics(bootstrap, args.partitions)
    buckets: list[str] = []
    figures: dict[str, str] = {}
    try:
        worker = Worker(load_worker(None, {
            "lake.root": str(tmp / "lake"), "spark.master": "local[*]", "spark.driver.memory": "2g",
            "topic.backend": "kafka", "kafka.bootstrap.servers": bootstrap, **baseline_settings}))
        t = time.perf_counter()
        spark = worker.spark()
        spark.range(1).count()
        cores = spark.sparkContext.defaultParallelism
        print(f"spark start: {time.perf_counter() - t:.1f} s (default parallelism {cores}, {os.cpu_count()} "
              f"cores, load average {os.getloadavg()[0]:.1f}); broker {bootstrap}, S3 {endpoint}")
        eos = KafkaClients.from_configs(worker.config.originals)
        plain = KafkaClients.from_configs({**worker.config.originals, "exactly.once.source.support": "disabled"})
        assert eos.transactions is not None and plain.transactions is None
        BatchMarkers(eos, MARKERS_TOPIC).ensure()
        runs = iter(range(1, 1_000_000))
        stages, profile = Stages(spark), {}

        def ranges_of(topic: str) -> dict[int, tuple[int, int]]:
            return watermarks(topic, eos.consumer, timeout=30)  # read_committed: ends at the last stable offset

        def counts(topic: str) -> list[int]:
            return [hi - lo for _, (lo, hi) in sorted(ranges_of(topic).items())]

        # --- 1. source -> Kafka ------------------------------------------------------------------------

        def append(clients, label: str, df, records: int) -> tuple[float, str]:
            topic = topics.create(label)
            t = time.perf_counter()
            result = KafkaTopic(clients, topic).append(df, app_id=f"bench-{label}-{next(runs)}", version=1)
            took = time.perf_counter() - t
            assert result.count == records, (result.count, records)
            return took, topic

        def spark_writer(df, records: int) -> tuple[float, str]:
            topic = topics.create("spark")
            t = time.perf_counter()
            kafka_write(df, bootstrap, topic)
            took = time.perf_counter() - t
            assert sum(counts(topic)) == records, (counts(topic), records)
            return took, topic

        def spark_writer_ordered(df, records: int) -> tuple[float, str]:
            """Spark's writer handed the records in the order lakeconnect produces them: each Kafka partition's
            records in one task, in `seq` order, as a Spark user would arrange it (partition column computed
            with Kafka's murmur2, the same split into tasks, sorted within them)."""
            topic = topics.create("spark-ordered")
            types = {f.name: f.dataType for f in df.schema.fields}
            t = time.perf_counter()
            ordered = (df.select(partition_choice(types, args.partitions, 1, topic).alias("partition"), "seq", "key",
                                 "value")
                       .repartitionById(min(args.partitions, cores), "partition")
                       .sortWithinPartitions("partition", "seq"))
            kafka_write(ordered.select("key", "value", "partition"), bootstrap, topic)
            took = time.perf_counter() - t
            assert sum(counts(topic)) == records, (counts(topic), records)
            return took, topic

        steps1 = {"spark": spark_writer, "spark ordered": spark_writer_ordered,
                  "idempotent": lambda df, n: append(plain, "idem", df, n),
                  "exactly-once": lambda df, n: append(eos, "eos", df, n)}

        def frame(records: int):
            df = records_frame(spark, records).persist(StorageLevel.MEMORY_ONLY)
            size = df.select(F.sum(F.length("value")).alias("v"), F.sum(F.length("key")).alias("k")).first()
            return df, size["v"], size["k"]

        warm = min(args.records, args.warmup)
        t = time.perf_counter()
        df, warm_bytes, _ = frame(warm)
        warm_topics: dict[str, str] = {}
        for round_ in range(max(args.warmup_rounds, 1)):
            if round_:
                topics.delete([t for name, t in warm_topics.items() if name != "exactly-once"])
            warm_topics = {name: step(df, warm)[1] for name, step in steps1.items()}
        assert counts(warm_topics["spark"]) == counts(warm_topics["idempotent"]), "partition placement differs"
        df.unpersist()
        print(f"warm-up of step 1 ({args.warmup_rounds} x {warm:,} records): {time.perf_counter() - t:.1f} s")

        df, value_bytes, key_bytes = frame(args.records)
        print(f"records: {args.records:,} cached in Spark, {(value_bytes + key_bytes) / 1e6:.0f} MB of keys and "
              f"values; RSS {rss_mib():.0f} MiB")
        print(f"1. source -> Kafka ({args.partitions} partitions per topic)")
        times1: dict[str, list[float]] = {name: [] for name in steps1}
        source_topic = None
        for rep in range(args.reps):
            order = list(steps1)[rep % len(steps1):] + list(steps1)[:rep % len(steps1)]
            made = {}
            for name in order:
                stages.since()
                took, made[name] = steps1[name](df, args.records)
                times1[name].append(took)
                if rep == args.reps - 1:
                    profile[name] = stages.since()
            same = counts(made["spark"]) == counts(made["idempotent"]) == counts(made["spark ordered"])
            assert same, "Spark's writer and lakeconnect put records in different partitions"
            if source_topic:
                topics.delete([source_topic])
            source_topic = made.pop("exactly-once")  # read back in steps 2 and 3
            topics.delete(list(made.values()))
            print(f"  rep {rep + 1} ({', '.join(order)}): " + ", ".join(
                f"{name} {times1[name][-1]:.2f} s" for name in steps1) + f"; load average {os.getloadavg()[0]:.1f}")
        df.unpersist()
        n = args.records
        figures["1. Spark's writer, format(\"kafka\") (idempotent, acks=all)"] = median_best(times1["spark"], n)
        figures["1. Spark's writer on the records in lakeconnect's order (repartitionById, sorted by seq)"] = (
            median_best(times1["spark ordered"], n))
        figures["1. lakeconnect append, idempotent"] = median_best(times1["idempotent"], n)
        figures["1. lakeconnect append, exactly-once (transactions)"] = median_best(times1["exactly-once"], n)
        figures["1. ratio idempotent / Spark's writer"] = ratio(times1["idempotent"], times1["spark"], 0.8)
        figures["1. ratio Spark's writer ordered / Spark's writer: the price of per-partition order"] = ratio(
            times1["spark ordered"], times1["spark"], None)
        figures["1. ratio idempotent / Spark's writer ordered as lakeconnect"] = ratio(
            times1["idempotent"], times1["spark ordered"], None)
        figures["1. ratio exactly-once / Spark's writer (which has no transactions)"] = ratio(
            times1["exactly-once"], times1["spark"], 0.7)

        def report() -> None:
            figures["memory"] = f"driver RSS {rss_mib():.0f} MiB"
            print()
            print(f"summary (records: {args.records:,}, partitions: {args.partitions}, reps: {args.reps}, "
                  f"cores: {os.cpu_count()}, parallelism: {cores}, load average at the end "
                  f"{os.getloadavg()[0]:.1f}; ratios are lakeconnect's records/s over the baseline's, medians)")
            for key, value in figures.items():
                print(f"  {key}: {value}")
            print("Spark stages of each step in the last rep (the status store):")
            for name, lines in profile.items():
                print(f"  {name}: " + ("; ".join(lines) or "no stage"))

        if args.append_only:
            report()
            return

        # --- 2. Kafka -> Spark: the readers --------------------------------------------------------------

        def ours_read(topic: str) -> float:
            ranges = ranges_of(topic)
            t = time.perf_counter()
            got = KafkaTopic(eos, topic).read(ranges).select(F.sum(F.length("value"))).first()[0]
            took = time.perf_counter() - t
            assert got == expected_bytes[topic], (got, expected_bytes[topic])
            return took

        def spark_read(topic: str) -> float:
            ranges = ranges_of(topic)
            t = time.perf_counter()
            got = kafka_read(spark, bootstrap, topic, ranges).select(F.sum(F.length("value"))).first()[0]
            took = time.perf_counter() - t
            assert got == expected_bytes[topic], (got, expected_bytes[topic])
            return took

        # --- 3. Kafka -> S3 -----------------------------------------------------------------------------

        def new_bucket() -> str:
            bucket = f"lc-bench-kafka-{uuid.uuid4().hex[:10]}"
            s3.create_bucket(Bucket=bucket)
            buckets.append(bucket)
            return bucket

        def done_with(bucket: str) -> tuple[int, int]:
            found = objects(s3, bucket)
            remove_buckets(s3, [bucket])  # moto keeps objects in memory
            buckets.remove(bucket)
            return found

        def sink(fmt: str, topic: str) -> tuple[float, int, int]:
            """lakeconnect's S3 sink: (seconds, objects, records in objects)."""
            bucket = new_bucket()
            name = f"bk-{fmt}-{uuid.uuid4().hex[:8]}"  # short: "connect-<name>" within 32 characters
            topics.groups.append(f"connect-{name}")
            worker.create(name, {
                "name": name, "connector.class": "io.confluent.connect.s3.S3SinkConnector", "topics": topic,
                "key.converter": BYTES_CONVERTER, "value.converter": JSON_CONVERTER,
                "s3.bucket.name": bucket, "store.url": endpoint, "format.class": FORMATS[fmt],
                "flush.size": str(args.flush_size), "tasks.max": "1"})
            t = time.perf_counter()
            reports = worker.run(name)
            took = time.perf_counter() - t
            assert len(reports) == 1 and reports[0].outcome == "COMMITTED", reports
            written = worker.status(name, runs=1)["runs"][0]["records_written"]
            return took, done_with(bucket)[0], written

        def plain_job(fmt: str, topic: str) -> tuple[float, int, int]:
            """Spark's reader, from_json, write.json / write.parquet via s3a: (seconds, objects, records)."""
            bucket = new_bucket()
            ranges = ranges_of(topic)
            t = time.perf_counter()
            write_records(envelope_fields(kafka_read(spark, bootstrap, topic, ranges)), fmt,
                          f"s3a://{bucket}/topics/{topic}", args.flush_size)
            took = time.perf_counter() - t
            return took, done_with(bucket)[0], records_of[topic]  # offsets count transaction markers too

        steps2 = {"read ours": ours_read, "read spark": spark_read}
        for fmt in FORMATS:
            steps2[f"{fmt} sink"] = lambda topic, fmt=fmt: sink(fmt, topic)
            steps2[f"{fmt} plain"] = lambda topic, fmt=fmt: plain_job(fmt, topic)

        expected_bytes = {warm_topics["exactly-once"]: warm_bytes, source_topic: value_bytes}
        records_of = {warm_topics["exactly-once"]: warm, source_topic: args.records}
        t = time.perf_counter()
        for step in steps2.values():
            step(warm_topics["exactly-once"])
        topics.delete(list(warm_topics.values()))
        print(f"warm-up of steps 2 and 3 ({warm:,} records): {time.perf_counter() - t:.1f} s")
        print(f"2./3. Kafka -> Spark, Kafka -> S3 (topic {source_topic}, read_committed; flush.size "
              f"{args.flush_size}, tasks.max 1)")
        times2: dict[str, list[float]] = {name: [] for name in steps2}
        details: dict[str, tuple[int, int]] = {}
        pairs = [("read ours", "read spark")] + [(f"{f} sink", f"{f} plain") for f in FORMATS]
        for rep in range(args.reps):
            line = []
            for ours, theirs in pairs:
                for name in ((ours, theirs) if rep % 2 == 0 else (theirs, ours)):
                    stages.since()
                    result = steps2[name](source_topic)
                    if rep == args.reps - 1:
                        profile[name] = stages.since()
                    took = result if isinstance(result, float) else result[0]
                    if not isinstance(result, float):
                        details[name] = result[1:]
                    times2[name].append(took)
                    line.append(f"{name} {took:.2f} s" + ("" if isinstance(result, float) else
                                                         f" ({result[1]} objects, {result[2]:,} records)"))
            print(f"  rep {rep + 1}: " + ", ".join(line) + f"; load average {os.getloadavg()[0]:.1f}")
        figures["2. Spark's reader, format(\"kafka\"), sum of value lengths"] = median_best(times2["read spark"], n)
        figures["2. lakeconnect's range reader, KafkaTopic.read(ranges), the same"] = median_best(
            times2["read ours"], n)
        figures["2. ratio reader / Spark's reader"] = ratio(times2["read ours"], times2["read spark"], None)
        for fmt in FORMATS:
            sink_objects, sink_records = details[f"{fmt} sink"]
            plain_objects, plain_records = details[f"{fmt} plain"]
            figures[f"3. plain Spark job, {fmt} (Spark's reader, from_json, write.{fmt} to s3a)"] = (
                median_best(times2[f"{fmt} plain"], n) + f"; {plain_records:,} records in {plain_objects} objects")
            figures[f"3. lakeconnect S3 sink, {FORMATS[fmt].rsplit('.', 1)[1]} (records read)"] = (
                median_best(times2[f"{fmt} sink"], n) + f"; {sink_records:,} records in {sink_objects} objects")
            figures[f"3. ratio {fmt} sink / plain Spark job"] = ratio(times2[f"{fmt} sink"], times2[f"{fmt} plain"],
                                                                      0.8)
        report()
    finally:
        remove_buckets(s3, buckets)  # ours only: made by this run
        topics.close()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
