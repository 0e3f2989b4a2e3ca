"""What a Spark user would run instead of lakeconnect (not tests): the benches' baselines share these.

Spark's own Kafka connector (`format("kafka")`) and Hadoop's s3a file system come from `.jars/bench/`
(`bash tests/services/fetch_jars.sh --bench`); `session_settings` puts them on the class path of the
bench's one Spark session, so lakeconnect and its baseline run in the same JVM.

Committers, as found against the test bed's S3 server (moto): Hadoop's default FileOutputCommitter
(algorithm 1) renames every object twice, each rename a copy and a delete on S3, and took 4-5x as long
as the S3A magic committer. JSON and text writes go through the magic committer (chosen by
S3ACommitterFactory, `fs.s3a.committer.name=magic`). Parquet cannot use it here: Spark's Parquet writer
insists on its own committer class, and the binding class that lets it use S3A's committers is in
spark-hadoop-cloud, which is not in `.jars/bench/`. So Parquet keeps FileOutputCommitter, with algorithm 2
(one rename per object, at task commit), the usual setting for S3 without the cloud committers.
`fs.s3a.change.detection.mode=none`: moto's ETags on copies are not what s3a's change detection expects.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

JARS_DIR = Path(__file__).resolve().parents[2] / ".jars" / "bench"
# The jars the baselines need, by the start of their file name.
NEEDED = ("spark-sql-kafka-0-10_", "spark-token-provider-kafka-0-10_", "kafka-clients-", "commons-pool2-",
          "hadoop-aws-", "bundle-")
FETCH = "bash tests/services/fetch_jars.sh --bench"
# The benches' records: JsonConverter values with their schema (schemas.enable=true, Kafka Connect's
# default), ~460 bytes each, so that both the JSON and the Parquet sink can write them.
PURCHASE_SCHEMA = ('{"type":"struct","name":"purchase","fields":[{"type":"int64","field":"id"},'
                   '{"type":"string","field":"customer"},{"type":"string","field":"email"},'
                   '{"type":"int32","field":"quantity"},{"type":"double","field":"amount"},'
                   '{"type":"string","field":"note"}]}')
PURCHASE_DDL = "id bigint, customer string, email string, quantity int, amount double, note string"


def bench_jars() -> list[str]:
    """The paths of `.jars/bench/*.jar`; exits saying how to fetch them when any needed one is missing."""
    jars = sorted(str(p) for p in JARS_DIR.glob("*.jar"))
    missing = [n for n in NEEDED if not any(Path(j).name.startswith(n) for j in jars)]
    if missing:
        raise SystemExit(f"the Spark baselines need Spark's Kafka connector and hadoop-aws in {JARS_DIR} "
                         f"(missing: {', '.join(n.rstrip('-_') for n in missing)}): run `{FETCH}`")
    return jars


def session_settings(endpoint: str) -> dict[str, str]:
    """`spark.*` settings for the bench's session: the baseline jars and s3a pointed at `endpoint`."""
    s3a = "spark.hadoop.fs.s3a."
    return {
        "spark.jars": ",".join(bench_jars()),
        f"{s3a}endpoint": endpoint,
        f"{s3a}endpoint.region": "us-east-1",
        f"{s3a}path.style.access": "true",
        f"{s3a}connection.ssl.enabled": "false",
        f"{s3a}access.key": "testing",
        f"{s3a}secret.key": "testing",
        f"{s3a}change.detection.mode": "none",
        f"{s3a}committer.name": "magic",
        "spark.hadoop.mapreduce.outputcommitter.factory.scheme.s3a":
            "org.apache.hadoop.fs.s3a.commit.S3ACommitterFactory",
        "spark.hadoop.mapreduce.fileoutputcommitter.algorithm.version": "2",
    }


def kafka_write(df, bootstrap: str, topic: str, options: Mapping[str, str] | None = None) -> None:
    """`df` (key, value) produced by Spark's Kafka writer with the idempotent producer, acks=all (Spark's
    writer has no transactions: a task retried after a failure produces its records again)."""
    writer = (df.select("key", "value").write.format("kafka").option("kafka.bootstrap.servers", bootstrap)
              .option("topic", topic).option("kafka.enable.idempotence", "true").option("kafka.acks", "all"))
    for key, value in (options or {}).items():
        writer = writer.option(key, value)
    writer.save()


def kafka_read(spark, bootstrap: str, topic: str, ranges: Mapping[int, tuple[int, int]]):
    """Offsets [start, end) of every partition read by Spark's Kafka reader, read_committed (as lakeconnect's
    reader); its default of one task per Kafka partition."""
    start = {topic: {str(p): lo for p, (lo, _) in ranges.items()}}
    end = {topic: {str(p): hi for p, (_, hi) in ranges.items()}}
    return (spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
            .option("startingOffsets", json.dumps(start)).option("endingOffsets", json.dumps(end))
            .option("kafka.isolation.level", "read_committed").load())


def write_records(records, fmt: str, url: str, flush_size: int) -> None:
    """`records` (a `partition` column and the value's fields) written under `url` as the S3 sink's
    DefaultPartitioner lays them out (`partition=<p>/`), at most `flush_size` records an object."""
    writer = records.write.partitionBy("partition").option("maxRecordsPerFile", flush_size).mode("append")
    if fmt == "json":
        writer.json(url)
    elif fmt == "parquet":
        writer.parquet(url)
    elif fmt == "text":
        writer.text(url)
    else:
        raise ValueError(f"no baseline format {fmt!r}")


def purchase_value(id_col):
    """The JsonConverter bytes (schema and payload) of purchase `id_col`, a long column."""
    from pyspark.sql import functions as F

    i = id_col.cast("string")
    return F.concat(F.lit('{"schema":' + PURCHASE_SCHEMA + ',"payload":{"id":'), i,
                    F.lit(',"customer":"customer '), i, F.lit('","email":"customer'), i,
                    F.lit('@example.com","quantity":'), (id_col % 1000).cast("string"),
                    F.lit(',"amount":'), ((id_col % 100000) / 100).cast("string"),
                    F.lit(',"note":"a note of some length, to make the record about two hundred bytes"}}'),
                    ).cast("binary")


def envelope_fields(df, envelope_ddl: str = PURCHASE_DDL):
    """`df`'s `partition` and the payload fields of its JsonConverter values (`{"schema":..., "payload":...}`),
    parsed with `from_json`: what a Spark user writes where the sink's converter parses."""
    from pyspark.sql import functions as F

    parsed = F.from_json(F.col("value").cast("string"), f"payload struct<{envelope_ddl}>")
    return df.select("partition", parsed.getField("payload").alias("p")).select("partition", "p.*")


def objects(client, bucket: str) -> tuple[int, int]:
    """(objects, bytes) in `bucket`, the committers' markers (`_SUCCESS`, directory markers) left out."""
    n = size = 0
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        for o in page.get("Contents", []):
            name = o["Key"].rsplit("/", 1)[-1]
            if name and name != "_SUCCESS":
                n, size = n + 1, size + o["Size"]
    return n, size
