"""Benchmark of the Kafka topic backend (not a test): a source's batch of --records records (~200 bytes of
JSON each) produced into a Kafka topic, and the S3 sink reading that topic back, each against a bare
confluent-kafka loop in the driver moving the same messages in the same run.

    PYTHONPATH=. .venv/bin/python tests/bench/bench_kafka.py [--records 1000000] [--partitions 64] [--reps 2]
        [--flush-size 1000] [--breakdown]

It uses the Kafka cluster named by --bootstrap (its topic control server: --control) and the S3 server
named by --endpoint, or else by .services/services.env (`make services-up`), with a lake in a temporary
directory. Every topic it writes is new, with a unique name (`lc-bench-...`, --partitions partitions,
made through the control server: the test cluster caps a partition near 5 MiB, so 1M records need many);
every bucket is new too (`lc-bench-kafka-...`) and is emptied and removed at the end. It deletes nothing
else. In one Spark process (local[*]) it prints:

- source -> Kafka: the records as a source hands them to the runtime (columns seq, key = b"customer-<id %
  10000>", value = JSON bytes; no partition, so Kafka's murmur2 of the key picks it), cached in Spark, then
  `KafkaTopic.append` into a fresh topic, with exactly-once (the default: each Spark task produces in a
  transaction of its own, with a marker in `connect-batch-markers`) and with
  `exactly.once.source.support=disabled` (the idempotent producer alone); records/s and MB/s (key + value
  bytes). Baseline: the same key and value bytes, taken out of the same DataFrame into Python lists before
  the clock starts, produced by one Producer in the driver (the same settings: enable.idempotence=true,
  acks=all, librdkafka's linger and batch defaults; `partitioner=murmur2_random`, Kafka's Java
  partitioner, with `partition` unset, so the records land where lakeconnect puts them; no delivery
  callback, poll(0) every 10,000 messages) into another fresh topic: produce + flush. The ratio
  lakeconnect / baseline (goal >= 0.8) for each mode;
- Kafka -> S3: the S3 sink (tasks.max 1, flush.size --flush-size) run through the Worker on the
  exactly-once topic of the last rep, a fresh connector (`bk-<kind>-<random>`, hence a fresh consumer group
  `connect-<name>`) and bucket each time: bytes (ByteArrayConverter + ByteArrayFormat, a pass-through) and
  JSON (JsonConverter schemas.enable=false + JsonFormat); records/s of the records read, how many of them
  closed objects hold (the run's records_written: a topic partition's records after its last full object
  stay for the next batch, as in Kafka Connect, so flush.size must stay below a partition's ~records /
  partitions records or nothing is written), the batch's steps. Baseline: one Consumer in the driver
  (read_committed, as the sink's), every partition assigned from its log start, consume(num_messages=10000,
  timeout 0.1 s) until every partition's position reached its end offset (or it reported EOF), the
  values' lengths summed; the ratio sink / baseline. And the reader alone: `KafkaTopic.read(ranges)
  .count()` against the same loop (the ratio isolates the reader's cost);
- the floors: what no implementation on Spark can beat on this machine. Each baseline's CPU seconds are
  read for the whole machine (/proc/stat: the test cluster's brokers and the S3 server share the cores).
  Step 1: the records handed from Spark's cache to a Python function that only counts them (no partition
  choice, no ordering, no producing) costs CPU seconds that the bare producer never spends. Step 2: the
  sink's objects uploaded again with boto3 alone (`cores` threads) cost CPU seconds that the bare consumer
  never spends. An implementation does the baseline's work and that too, so it takes at least their CPU
  seconds spread over every core; baseline / that time is the best ratio possible here. /proc/stat counts
  every process, so the floors mean something only on a machine that runs nothing else meanwhile;
- memory: the driver's RSS and the JVM heap (in use after a full GC; the sum of the heap pools' peaks
  during the step) after each step. The baseline's messages (Python bytes in the driver) are part of the
  RSS after step 1.

With --breakdown it also splits step 1 (the same Spark plan as `append` ending in a Python function that
only counts rows; that function also converting each Arrow batch to Python with `to_pydict` and walking
the rows as `_Producing` does; and also producing them, without delivery callbacks or transactions, into
a fresh topic) and step 2's reader (`read_range` over the same chunks in the driver, without Spark).

A warm-up (min(--records, 100,000) records: code generation, Python workers, first connections) runs
everything once untimed; then --reps reps, interleaved; the best and the median are shown. The machine's
other load shows in every figure (the test cluster and the S3 server share the cores): compare figures
of one run.
"""

from __future__ import annotations

import argparse
import gc
import os
import shutil
import socket
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from tests.bench.bench_jdbc import floor_ratio, jvm_heap_mib, machine_cpu_s, read_env, rss_mib, timed_cpu
from tests.bench.s3util import remove_buckets, upload_again

SERVICES_ENV = Path(__file__).resolve().parents[2] / ".services" / "services.env"
MARKERS_TOPIC = "connect-batch-markers"
WARMUP_RECORDS = 100_000
CONSUME_BATCH = 10_000
CONSUME_WAIT = 0.1  # consume() returns at once when it fills its batch; this bounds the wait at the end
POLL_EVERY = 10_000
BYTES = "org.apache.kafka.connect.converters.ByteArrayConverter"
JSON = "org.apache.kafka.connect.json.JsonConverter"
SINKS = {  # name: (value.converter, format.class)
    "bytes": (BYTES, "io.confluent.connect.s3.format.bytearray.ByteArrayFormat"),
    "json": (JSON, "io.confluent.connect.s3.format.json.JsonFormat"),
}


def create_topic(control: str, prefix: str, partitions: int) -> str:
    """A new topic named `<prefix>-<random>`, made by the test cluster's control server."""
    name = f"{prefix}-{uuid.uuid4().hex[:12]}"
    host, _, port = control.rpartition(":")
    with socket.create_connection((host, int(port)), timeout=30) as conn:
        conn.sendall(f"create {name} {partitions}\n".encode())
        answer = conn.makefile("rb").readline().decode().strip()
    if answer != "ok":
        raise RuntimeError(f"creating topic {name} with {partitions} partitions: control server said {answer!r}")
    return name


def records_frame(spark, records: int):
    """The records as a source hands them to the runtime: seq, key, value (about 200 bytes of JSON)."""
    from pyspark.sql import functions as F

    i = F.col("id").cast("string")
    return spark.range(records).select(
        F.col("id").alias("seq"),
        F.concat(F.lit("customer-"), (F.col("id") % 10000).cast("string")).cast("binary").alias("key"),
        F.concat(F.lit('{"id":'), i, F.lit(',"customer":"customer '), i,
                 F.lit('","email":"customer'), i, F.lit('@example.com","quantity":'),
                 (F.col("id") % 1000).cast("string"), F.lit(',"amount":'),
                 ((F.col("id") % 100000) / 100).cast("string"),
                 F.lit(',"note":"a note of some length, to make the record about two hundred bytes"}'),
                 ).cast("binary").alias("value"))


def end_offsets(settings: dict, topic: str) -> dict[int, tuple[int, int]]:
    from ingest.topics.kafka_read import watermarks

    return watermarks(topic, settings, timeout=30)


def bare_produce(settings: dict, topic: str, keys: list, values: list) -> float:
    """One Producer in the driver: produce every message (partitioner murmur2_random), then flush."""
    from confluent_kafka import Producer

    producer = Producer({**settings, "partitioner": "murmur2_random"})
    produce, poll = producer.produce, producer.poll
    n = len(keys)
    t = time.perf_counter()
    for start in range(0, n, POLL_EVERY):
        for k, v in zip(keys[start:start + POLL_EVERY], values[start:start + POLL_EVERY]):
            while True:
                try:
                    produce(topic, v, k)
                    break
                except BufferError:  # the local queue is full: let deliveries drain it
                    poll(0.1)
        poll(0)
    left = producer.flush(120)
    took = time.perf_counter() - t
    if left:
        raise RuntimeError(f"baseline producer: {left} messages not delivered")
    return took


def bare_consume(settings: dict, topic: str) -> tuple[float, int, int]:
    """One Consumer in the driver, every partition assigned from its log start, consumed until each
    partition's position reached its end offset (or it reported EOF): (seconds, records, value bytes)."""
    from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

    marks = end_offsets(settings, topic)
    consumer = Consumer({**settings, "group.id": f"lc-bench-{uuid.uuid4().hex[:12]}", "enable.auto.commit": False,
                         "enable.partition.eof": True, "auto.offset.reset": "error"})
    pending = {p for p, (lo, hi) in marks.items() if hi > lo}
    records = size = 0
    try:
        t = time.perf_counter()
        consumer.assign([TopicPartition(topic, p, marks[p][0]) for p in sorted(pending)])
        while pending:
            for msg in consumer.consume(num_messages=CONSUME_BATCH, timeout=CONSUME_WAIT):
                err = msg.error()
                if err is None:
                    records += 1
                    size += len(msg.value())
                elif err.code() == KafkaError._PARTITION_EOF:
                    pending.discard(msg.partition())
                else:
                    raise KafkaException(err)
            # A transactional topic ends in a commit marker, which is never delivered: the position says
            # the partition is done before an EOF does (one fetch.wait.max.ms later).
            for tp in consumer.position([TopicPartition(topic, p) for p in pending]):
                if tp.offset >= marks[tp.partition][1]:
                    pending.discard(tp.partition)
        took = time.perf_counter() - t
    finally:
        consumer.close()
    return took, records, size


# --- the breakdown of `append` (--breakdown): the same plan, ending in less work --------------------------

def _plan(df, partitions: int, tasks: int):
    """`KafkaTopic.append`'s plan for records without timestamp and headers (ingest/topics/kafka.py)."""
    from pyspark.sql import functions as F

    from ingest.topics.table import (
        HEADERS,
        KEY,
        PARTITION,
        SEQ,
        TIMESTAMP,
        VALUE,
        partition_choice,
    )

    types = {f.name: f.dataType for f in df.schema.fields}
    return df.select(
        partition_choice(types, partitions, 1, "bench").alias(PARTITION), F.col(SEQ).cast("long").alias(SEQ),
        F.col(KEY).cast("binary").alias(KEY), F.col(VALUE).cast("binary").alias(VALUE),
        F.unix_millis(F.lit(None).cast("timestamp")).alias(TIMESTAMP), F.array().alias(HEADERS),
    ).repartition(tasks, PARTITION).sortWithinPartitions(PARTITION, SEQ)


class _CountOnly:
    def __call__(self, batches):
        import pyarrow as pa

        yield pa.RecordBatch.from_pydict({"n": [sum(b.num_rows for b in batches)]})


class _ToPython:
    """to_pydict and the row loop of `_Producing`, without producing."""

    def __call__(self, batches):
        import pyarrow as pa

        n = 0
        for records in batches:
            cols = records.to_pydict()
            for p, k, v, ts, hs in zip(cols["partition"], cols["key"], cols["value"], cols["timestamp"],
                                       cols["headers"]):
                n += 1
                headers = [(h["key"], h["value"]) for h in hs] if hs else None  # noqa: F841
        yield pa.RecordBatch.from_pydict({"n": [n]})


class _ProduceBare:
    """The same, also producing each record to its partition: no delivery callback, no transaction."""

    def __init__(self, topic: str, settings: dict):
        self.topic, self.settings = topic, dict(settings)

    def __call__(self, batches):
        import pyarrow as pa
        from confluent_kafka import Producer

        producer = Producer(self.settings)
        produce, poll = producer.produce, producer.poll
        n = 0
        for records in batches:
            cols = records.to_pydict()
            for p, k, v, ts, hs in zip(cols["partition"], cols["key"], cols["value"], cols["timestamp"],
                                       cols["headers"]):
                n += 1
                headers = [(h["key"], h["value"]) for h in hs] if hs else None
                while True:
                    try:
                        produce(self.topic, v, k, partition=p, timestamp=ts or 0, headers=headers)
                        break
                    except BufferError:
                        poll(0.1)
            poll(0)
        if producer.flush(120):
            raise RuntimeError("breakdown producer: messages not delivered")
        yield pa.RecordBatch.from_pydict({"n": [n]})


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--partitions", type=int, default=64, help="partitions of every topic it creates")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--flush-size", type=int, default=1000,
                    help="the S3 sink's flush.size (below a partition's record count, or no object closes)")
    ap.add_argument("--breakdown", action="store_true", help="also split step 1 and the reader into parts")
    ap.add_argument("--bootstrap", help="Kafka bootstrap servers (default: .services/services.env)")
    ap.add_argument("--control", help="HOST:PORT of the test cluster's topic control server (default: same)")
    ap.add_argument("--endpoint", help="S3 endpoint URL (default: same)")
    args = ap.parse_args()

    import boto3
    from pyspark import StorageLevel

    from ingest.config.worker import load_worker
    from ingest.runtime.worker import Worker
    from ingest.topics.kafka import KafkaClients, KafkaTopic

    env = read_env(SERVICES_ENV)
    bootstrap = args.bootstrap or env.get("LAKECONNECT_TEST_KAFKA_BOOTSTRAP")
    control = args.control or env.get("LAKECONNECT_TEST_KAFKA_CONTROL")
    endpoint = args.endpoint or env.get("LAKECONNECT_TEST_S3_ENDPOINT")
    if not bootstrap or not control or not endpoint:
        raise SystemExit(f"no Kafka cluster or S3 server: pass --bootstrap, --control and --endpoint, or start "
                         f"the services ({SERVICES_ENV})")
    for key, value in (("AWS_ACCESS_KEY_ID", "testing"), ("AWS_SECRET_ACCESS_KEY", "testing"),
                       ("AWS_DEFAULT_REGION", "us-east-1")):
        os.environ.setdefault(key, value)
    s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
    tmp = Path(tempfile.mkdtemp(prefix="lakeconnect-bench-kafka-"))
    buckets: list[str] = []
    figures: dict[str, str] = {}
    try:
        worker = Worker(load_worker(None, {
            "lake.root": str(tmp / "lake"), "spark.master": "local[*]", "spark.driver.memory": "2g",
            "topic.backend": "kafka", "kafka.bootstrap.servers": bootstrap}))
        t = time.perf_counter()
        spark = worker.spark()
        spark.range(1).count()
        cores = spark.sparkContext.defaultParallelism
        print(f"spark start: {time.perf_counter() - t:.1f} s (default parallelism {cores}); cluster {bootstrap}")
        eos = KafkaClients.from_configs(worker.config.originals)
        plain = KafkaClients.from_configs({**worker.config.originals, "exactly.once.source.support": "disabled"})
        assert eos.transactions is not None and plain.transactions is None
        if MARKERS_TOPIC not in set(_topics(eos)):
            raise SystemExit(f"the cluster has no topic {MARKERS_TOPIC} (the batch markers of exactly-once "
                             "appends); start the services with it")
        runs = iter(range(1, 1_000_000))

        def memory(label: str) -> str:
            heap, peak = jvm_heap_mib(spark)
            line = f"RSS {rss_mib():.0f} MiB, JVM heap used {heap:.0f} MiB (peak during the step {peak:.0f} MiB)"
            print(f"  memory after {label}: {line}")
            return line

        # --- 1. source -> Kafka -------------------------------------------------------------------------

        def frame(records: int):
            df = records_frame(spark, records).persist(StorageLevel.MEMORY_ONLY)
            df.count()
            table = df.select("key", "value").toArrow()
            keys, values = table.column("key").to_pylist(), table.column("value").to_pylist()
            del table
            return df, keys, values, sum(map(len, keys)) + sum(map(len, values))

        def append(clients, df, records: int, label: str) -> tuple[float, str, int]:
            topic = create_topic(control, f"lc-bench-{label}", args.partitions)
            jvm_heap_mib(spark)
            t = time.perf_counter()
            result = KafkaTopic(clients, topic).append(df, app_id=f"bench-{label}-{next(runs)}", version=1)
            took = time.perf_counter() - t
            assert result.count == records, (result.count, records)
            return took, topic, result.bytes

        def handoff(df) -> tuple[float, float]:
            """The records' keys and values handed from Spark's cache to a Python function that counts them:
            (seconds, the machine's CPU seconds)."""
            frame = df.select("key", "value").mapInArrow(_CountOnly(), "n long").groupBy().sum("n")
            took, cpu, rows = timed_cpu(frame.collect)
            assert rows[0][0] == args.records, rows
            return took, cpu

        def baseline_produce(keys, values) -> tuple[float, str]:
            topic = create_topic(control, "lc-bench-bare", args.partitions)
            took = bare_produce(dict(plain.producer), topic, keys, values)
            got = sum(hi - lo for lo, hi in end_offsets(dict(plain.consumer), topic).values())
            assert got == len(keys), (got, len(keys))
            return took, topic

        warm = min(args.records, WARMUP_RECORDS)
        df, keys, values, _ = frame(warm)
        t = time.perf_counter()
        _, warm_topic, _ = append(eos, df, warm, "eos")
        append(plain, df, warm, "plain")
        baseline_produce(keys, values)
        df.unpersist()
        del keys, values
        print(f"warm-up ({warm:,} records, every step of 1): {time.perf_counter() - t:.1f} s")

        df, keys, values, size = frame(args.records)
        mb = size / 1e6
        print(f"records: {args.records:,} in Spark (cached) and in the driver, {mb:.0f} MB of keys and values; "
              f"RSS {rss_mib():.0f} MiB")
        print(f"1. source -> Kafka ({args.partitions} partitions per topic)")
        times: dict[str, list[float]] = {"eos": [], "plain": [], "bare": []}
        bare_cpu, handoffs = [], []
        source_topic = None
        handoff(df)  # untimed
        for rep in range(args.reps):
            c = machine_cpu_s()
            took, topic = baseline_produce(keys, values)
            times["bare"].append(took)
            bare_cpu.append(machine_cpu_s() - c)
            handoffs.append(handoff(df))
            took, source_topic, written = append(eos, df, args.records, "eos")
            times["eos"].append(took)
            assert written == size, (written, size)
            took, _, _ = append(plain, df, args.records, "plain")
            times["plain"].append(took)
            print(f"  rep {rep + 1}: bare producer {times['bare'][-1]:.2f} s ({bare_cpu[-1]:.1f} CPU-s), append "
                  f"exactly-once {times['eos'][-1]:.2f} s, append idempotent only {times['plain'][-1]:.2f} s; "
                  f"the hand-off alone {handoffs[-1][0]:.2f} s ({handoffs[-1][1]:.1f} CPU-s)")
        figures["memory after step 1"] = memory("step 1")

        def rate(seconds: float, megabytes: float | None = mb) -> str:
            mbs = f", {megabytes / seconds:.1f} MB/s" if megabytes is not None else ""
            return f"{seconds:.2f} s = {args.records / seconds:,.0f} records/s{mbs}"

        def best_median(label: str, values_s: list[float], megabytes: float | None = mb) -> None:
            figures[label] = (f"best {rate(min(values_s), megabytes)}; median "
                              f"{rate(statistics.median(values_s), megabytes)}")

        best_median("1. baseline: bare Producer in the driver (murmur2_random, idempotent, acks=all)", times["bare"])
        best_median("1. append, exactly-once (transactions)", times["eos"])
        best_median("1. append, idempotent only (exactly.once.source.support=disabled)", times["plain"])
        for mode, label in (("eos", "exactly-once"), ("plain", "idempotent only")):
            figures[f"1. ratio append {label} / baseline"] = (
                f"{min(times['bare']) / min(times[mode]):.2f} (best), "
                f"{statistics.median(times['bare']) / statistics.median(times[mode]):.2f} (median); goal >= 0.8")
        best_bare = min(range(args.reps), key=lambda i: times["bare"][i])
        handoff_s, handoff_cpu = min(handoffs)
        floor, possible = floor_ratio(times["bare"][best_bare], bare_cpu[best_bare], handoff_cpu, os.cpu_count())
        figures["1. floor"] = (
            f"the bare producer keeps the machine busy {bare_cpu[best_bare] / times['bare'][best_bare]:.1f} of "
            f"{os.cpu_count()} cores ({bare_cpu[best_bare]:.1f} CPU-s); handing the records from Spark to Python "
            f"alone takes {handoff_s:.2f} s, {handoff_cpu:.1f} CPU-s; so an append takes at least {floor:.2f} s: "
            f"the best ratio possible here is {possible:.2f}")

        if args.breakdown:
            parts: dict[str, list[float]] = {"spark": [], "python": [], "produce": []}
            tasks = min(args.partitions, cores)
            for rep in range(args.reps + 1):  # the first is a warm-up
                t = time.perf_counter()
                n = _plan(df, args.partitions, tasks).mapInArrow(_CountOnly(), "n long").groupBy().sum("n").collect()
                spark_s = time.perf_counter() - t
                t = time.perf_counter()
                n2 = _plan(df, args.partitions, tasks).mapInArrow(_ToPython(), "n long").groupBy().sum("n").collect()
                python_s = time.perf_counter() - t
                topic = create_topic(control, "lc-bench-parts", args.partitions)
                t = time.perf_counter()
                n3 = (_plan(df, args.partitions, tasks).mapInArrow(_ProduceBare(topic, dict(plain.producer)), "n long")
                      .groupBy().sum("n").collect())
                produce_s = time.perf_counter() - t
                assert n[0][0] == n2[0][0] == n3[0][0] == args.records, (n, n2, n3)
                if rep:
                    parts["spark"].append(spark_s)
                    parts["python"].append(python_s)
                    parts["produce"].append(produce_s)
            figures["1. breakdown: append's Spark plan, rows counted in Python"] = f"{min(parts['spark']):.2f} s (best)"
            figures["1. breakdown: + to_pydict and the row loop"] = f"{min(parts['python']):.2f} s (best)"
            figures["1. breakdown: + produce (no delivery callback, no transaction)"] = f"{min(parts['produce']):.2f} s (best)"
            print("  breakdown (best of reps): Spark plan {:.2f} s, + Python rows {:.2f} s, + produce {:.2f} s".format(
                min(parts["spark"]), min(parts["python"]), min(parts["produce"])))

        df.unpersist()
        del keys, values
        gc.collect()

        # --- 2. Kafka -> S3 ----------------------------------------------------------------------------

        def sink(kind: str, topic: str) -> tuple[float, int, int, int, dict]:
            """A fresh connector and bucket: (seconds, records read, records in objects, objects, steps)."""
            bucket = f"lc-bench-kafka-{uuid.uuid4().hex[:10]}"
            s3.create_bucket(Bucket=bucket)
            buckets.append(bucket)
            name = f"bk-{kind}-{uuid.uuid4().hex[:8]}"  # short: "connect-<name>" within 32 characters
            converter, fmt = SINKS[kind]
            worker.create(name, {
                "name": name, "connector.class": "io.confluent.connect.s3.S3SinkConnector", "topics": topic,
                "key.converter": BYTES, "value.converter": converter, "value.converter.schemas.enable": "false",
                "s3.bucket.name": bucket, "store.url": endpoint, "format.class": fmt,
                "flush.size": str(args.flush_size), "tasks.max": "1"})
            jvm_heap_mib(spark)
            t = time.perf_counter()
            reports = worker.run(name)
            took = time.perf_counter() - t
            assert len(reports) == 1 and reports[0].outcome == "COMMITTED", reports
            in_objects = worker.status(name, runs=1)["runs"][0]["records_written"]
            objects = sum(len(page.get("Contents", []))
                          for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket))
            return took, reports[0].records, in_objects, objects, reports[0].timings_ms, bucket

        def raw_read(topic: str) -> tuple[float, int]:
            d = KafkaTopic(eos, topic).describe()
            ranges = {p: (d.start_offsets[p], d.end_offsets[p]) for p in range(d.partitions)}
            t = time.perf_counter()
            n = KafkaTopic(eos, topic).read(ranges).count()
            return time.perf_counter() - t, n

        def driver_read(topic: str) -> tuple[float, int]:
            from ingest.topics.kafka_read import (
                DEFAULT_CHUNK,
                DEFAULT_TIMEOUT,
                read_range,
                split,
            )

            d = KafkaTopic(eos, topic).describe()
            ranges = {p: (d.start_offsets[p], d.end_offsets[p]) for p in range(d.partitions)}
            t = time.perf_counter()
            n = sum(b.num_rows for c in split(ranges, DEFAULT_CHUNK)
                    for b in read_range(topic, c, dict(eos.consumer), DEFAULT_TIMEOUT))
            return time.perf_counter() - t, n

        t = time.perf_counter()
        for kind in SINKS:
            sink(kind, warm_topic)
        raw_read(warm_topic)
        bare_consume(dict(eos.consumer), warm_topic)
        print(f"warm-up of step 2 ({warm:,} records): {time.perf_counter() - t:.1f} s")
        print(f"2. Kafka -> S3 (topic {source_topic}, flush.size {args.flush_size}, tasks.max 1)")
        results: dict[str, list] = {kind: [] for kind in SINKS}
        consume_times, read_times, driver_times, consume_cpu = [], [], [], []
        uploads: dict[str, list] = {kind: [] for kind in SINKS}
        for rep in range(args.reps):
            c = machine_cpu_s()
            took, n, _ = bare_consume(dict(eos.consumer), source_topic)
            consume_cpu.append(machine_cpu_s() - c)
            assert n == args.records, (n, args.records)
            consume_times.append(took)
            took, n = raw_read(source_topic)
            assert n == args.records, (n, args.records)
            read_times.append(took)
            line = [f"  rep {rep + 1}: bare consumer {consume_times[-1]:.2f} s, KafkaTopic.read().count() {took:.2f} s"]
            if args.breakdown:
                took, n = driver_read(source_topic)
                assert n == args.records, (n, args.records)
                driver_times.append(took)
                line.append(f"read_range in the driver {took:.2f} s")
            for kind in SINKS:
                results[kind].append(sink(kind, source_topic))
                r = results[kind][-1]
                assert r[1] >= args.records, r  # offsets read: the records and the transaction markers
                uploads[kind].append(upload_again(s3, r[5], cores, "lc-bench-kafka", buckets))
                line.append(f"sink {kind} {r[0]:.2f} s ({r[2]:,} records in {r[3]} objects; uploading them "
                            f"alone {uploads[kind][-1][0]:.2f} s, {uploads[kind][-1][1]:.1f} CPU-s)")
            print(", ".join(line))
            for kind in SINKS:
                print(f"    sink {kind} steps (ms): {results[kind][-1][4]}")
        figures["memory after step 2"] = memory("step 2")

        best_median("2. baseline: bare Consumer in the driver (read_committed)", consume_times)
        best_median("2. KafkaTopic.read(ranges).count()", read_times)
        figures["2. ratio read / baseline"] = (
            f"{min(consume_times) / min(read_times):.2f} (best), "
            f"{statistics.median(consume_times) / statistics.median(read_times):.2f} (median)")
        if driver_times:
            best_median("2. breakdown: read_range over the same chunks in the driver (no Spark)", driver_times)
        for kind in SINKS:
            secs = [r[0] for r in results[kind]]
            best = min(results[kind], key=lambda r: r[0])
            best_median(f"2. sink {kind} ({SINKS[kind][1].rsplit('.', 1)[1]}, records read)", secs)
            figures[f"2. sink {kind}: records in objects, objects (best rep)"] = f"{best[2]:,} in {best[3]}"
            figures[f"2. sink {kind}: steps of the best rep (ms)"] = str(best[4])
            figures[f"2. ratio sink {kind} / baseline"] = (
                f"{min(consume_times) / min(secs):.2f} (best), "
                f"{statistics.median(consume_times) / statistics.median(secs):.2f} (median); goal >= 0.8")
            best_consume = min(range(args.reps), key=lambda i: consume_times[i])
            upload_s, upload_cpu = min(uploads[kind])
            floor, possible = floor_ratio(consume_times[best_consume], consume_cpu[best_consume], upload_cpu,
                                          os.cpu_count())
            figures[f"2. floor for sink {kind}"] = (
                f"the bare consumer keeps the machine busy {consume_cpu[best_consume] / consume_times[best_consume]:.1f}"
                f" of {os.cpu_count()} cores ({consume_cpu[best_consume]:.1f} CPU-s); uploading the sink's objects "
                f"alone takes {upload_s:.2f} s, {upload_cpu:.1f} CPU-s; so the sink takes at least {floor:.2f} s: "
                f"the best ratio possible here is {possible:.2f}")

        print()
        print(f"summary (records: {args.records:,}, partitions: {args.partitions}, reps: {args.reps}, "
              f"cores: {os.cpu_count()}, parallelism: {cores})")
        for key, value in figures.items():
            print(f"  {key}: {value}")
    finally:
        remove_buckets(s3, buckets)  # ours only: made by this run
        shutil.rmtree(tmp, ignore_errors=True)


def _topics(clients) -> list[str]:
    from ingest.topics.kafka import list_kafka_topics

    return list_kafka_topics(clients)


if __name__ == "__main__":
    main()
