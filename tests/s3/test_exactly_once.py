"""Kill the S3 sink at every step of a batch, and inside its Spark tasks after an object is committed
or half-uploaded; run again; the objects and offsets must be those of a run that never crashed.

The kill is real: a CLI process ends with os._exit (a task's Python worker kills the job's driver first),
as `kill -9` would. Uploads left unfinished must be aborted, never completed into partial objects. On the
local store, the runs that are not killed are made in this process (tests/conftest.py `run_here`); on the
S3 server they are CLI processes too, as the AWS settings must reach Spark's Python workers.
"""

from __future__ import annotations

import json
import uuid

import boto3
import pytest

from ingest.config.worker import load_worker
from ingest.runtime.faults import SINK_STEPS
from tests.conftest import cli, write_worker
from tests.crash_kit import Scenario, check_exactly_once, clean_state, kill_at_each_step
from tests.s3._book import ORDER_SCHEMA
from tests.s3.test_book import aws_env, local_objects, s3_objects

RECORDS = [f'{i % 7}\t{{"schema": {ORDER_SCHEMA}, "payload": {{"id": {i % 7}, "title": "book {i % 7} '
           f'{"x" * (i % 13)}", "quantity": {i}}}}}' for i in range(240)]
# Inside the upload tasks: after the first object and halfway through the first (the S3 run below kills
# after the second and inside the third). The batch's steps are killed in one chain (`kill_at_each_step`).
IN_TASKS = ["upload:1", "object-write:1"]


def sink_config(**extra) -> dict:
    return {"name": "s3sink", "connector.class": "io.confluent.connect.s3.S3SinkConnector", "topics": "orders",
            "key.converter": "org.apache.kafka.connect.converters.ByteArrayConverter",
            "value.converter": "org.apache.kafka.connect.json.JsonConverter",
            "s3.bucket.name": "exports", "partitioner.class": "FieldPartitioner", "partition.field.name": "id",
            "format.class": "JsonFormat", "flush.size": "9", "store.kafka.keys": "true",
            "keys.format.class": "ByteArrayFormat", **extra}


def _prepare(root, spark, config: dict):
    """The book's orders topic (5 partitions) holding RECORDS and the sink connector, made in this process
    (the runs themselves are real CLI processes); the worker file."""
    from ingest.runtime.worker import Worker
    from ingest.topics import TopicTable

    (root / "lake").mkdir(parents=True)
    worker_file = write_worker(root / "worker.properties", root / "lake")
    worker = Worker(load_worker(str(worker_file)))
    topic = TopicTable(worker.lake_root, "orders")
    topic.create(5)
    rows = [(key.encode(), value.encode(), i) for i, (key, _, value) in enumerate(r.partition("\t") for r in RECORDS)]
    topic.append(spark.createDataFrame(rows, "key binary, value binary, seq long"), app_id="producer", version=1)
    worker.create("s3sink", sink_config(**config))
    return worker_file


def _local_scenario(spark, crashes) -> Scenario:
    """The sink on a local store, killed after each of `crashes` in turn, then run to its end."""
    def prepare(root):
        (root / "objects" / "exports").mkdir(parents=True)
        return _prepare(root, spark, {"store.url": (root / "objects").as_uri()})

    def state(worker):
        objects = local_objects(worker.parent / "objects" / "exports")
        assert not [k for k in objects if "/." in k or k.startswith(".")], "a temporary upload was left behind"
        return objects, _offsets(worker)

    return Scenario("s3sink", prepare, state, crashes)


def _offsets(worker_file) -> dict[int, int]:
    from ingest.runtime.worker import Worker

    return {o["partition"]["kafka_partition"]: o["offset"]["kafka_offset"]
            for o in Worker(load_worker(str(worker_file))).offsets("s3sink")}


@pytest.fixture(scope="module")
def local_baseline(tmp_path_factory, spark):
    objects, committed = clean_state(_local_scenario(spark, []), tmp_path_factory.mktemp("s3clean"))
    # 240 records over 5 partitions, 9 a commit: some held back in every partition that has records
    assert objects and sum(len(v.splitlines()) for k, v in objects.items() if k.endswith(".json")) < 240
    return objects, committed


def test_local_store_killed_after_each_step(tmp_path, spark, local_baseline):
    check_exactly_once(_local_scenario(spark, SINK_STEPS), tmp_path, local_baseline)


def test_local_store_in_a_long_running_worker_killed_after_each_step(tmp_path, spark, local_baseline):
    check_exactly_once(_local_scenario(spark, SINK_STEPS), tmp_path, local_baseline, through_worker=True)


@pytest.mark.parametrize("crash", IN_TASKS)
def test_local_store_killed_inside_the_upload(tmp_path, spark, local_baseline, crash):
    check_exactly_once(_local_scenario(spark, [crash]), tmp_path, local_baseline)


@pytest.fixture(scope="module")
def s3_baseline(tmp_path_factory, spark, s3_endpoint):
    return _s3_run(tmp_path_factory.mktemp("s3clean"), spark, s3_endpoint, None)


def _s3_run(root, spark, endpoint, crash: str | None):
    client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
    bucket = f"lc-eo-{uuid.uuid4().hex[:12]}"
    client.create_bucket(Bucket=bucket)
    # A part size below the objects' size would need 5 MiB objects; the keys' objects are single puts
    # and the values' too: the multipart path is covered by tests/storage.
    worker = _prepare(root, spark, {"s3.bucket.name": bucket, "store.url": endpoint})
    if crash:
        kill_at_each_step(worker, "s3sink", [crash], aws_env(endpoint))
    r = cli("run", "s3sink", worker=worker, env=aws_env(endpoint))
    assert r.returncode == 0, r.stderr
    assert client.list_multipart_uploads(Bucket=bucket).get("Uploads", []) == []
    return s3_objects(client, bucket), _offsets(worker)


@pytest.mark.parametrize("crash", ["upload:2", "object-write:3"])
def test_s3_crash_inside_the_upload(tmp_path, spark, s3_endpoint, s3_baseline, crash):
    assert _s3_run(tmp_path, spark, s3_endpoint, crash) == s3_baseline


def test_offsets_follow_committed_objects_only(local_baseline):
    objects, committed = local_baseline
    in_objects: dict[int, int] = {}
    for key, body in objects.items():
        if key.endswith(".json"):
            partition = int(key.rsplit("/", 1)[1].split("+")[1])
            in_objects[partition] = in_objects.get(partition, 0) + len(body.splitlines())
    # flush.size=9 commits every open object of a partition together, so the committed offset of a
    # partition is the number of records in its objects (offsets start at 0 in every partition)
    assert committed == in_objects
    assert all(n % 9 == 0 for n in committed.values())
    assert json.dumps(committed)  # JSON-able, as the REST API shows it
