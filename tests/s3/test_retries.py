"""The S3 sink behind a proxy that injects faults (tests/services/faulty_proxy.py) in front of the S3
server: 5xx answers and dropped connections are retried and the objects come out whole; faults past
`s3.part.retries` fail the batch naming the object, with its offsets untouched and nothing partial
visible."""

from __future__ import annotations

import json
import uuid

import boto3
import pytest

from ingest.config.worker import load_worker
from ingest.errors import LakeConnectError
from ingest.topics import TopicTable
from tests.s3.test_book import s3_objects
from tests.services.faulty_proxy import FaultyProxy

SCHEMA = {"type": "struct", "name": "order", "fields": [{"type": "int64", "field": "id"}]}


@pytest.fixture
def setup(tmp_path, spark, s3_endpoint):
    from ingest.runtime.worker import Worker

    client = boto3.client("s3", endpoint_url=s3_endpoint, region_name="us-east-1")
    bucket = f"lc-retry-{uuid.uuid4().hex[:10]}"
    client.create_bucket(Bucket=bucket)
    worker = Worker(load_worker(None, {"lake.root": str(tmp_path / "lake")}))
    topic = TopicTable(worker.lake_root, "orders")
    topic.create(1)
    rows = [(json.dumps({"schema": SCHEMA, "payload": {"id": i}}).encode(), i) for i in range(6)]
    topic.append(spark.createDataFrame(rows, "value binary, seq long"), app_id="t", version=1)
    with FaultyProxy(s3_endpoint) as proxy:
        def sink(name: str, **extra):
            worker.create(name, {"name": name, "connector.class": "S3Sink", "topics": "orders",
                                 "s3.bucket.name": bucket, "store.url": proxy.url, "format.class": "JsonFormat",
                                 "flush.size": "2", "s3.retry.backoff.ms": "10",
                                 # the executors' environment was fixed when Spark started: say it here
                                 "aws.access.key.id": "testing", "aws.secret.access.key": "testing",
                                 "value.converter": "org.apache.kafka.connect.json.JsonConverter", **extra})
            return name
        yield worker, proxy, client, bucket, sink


EXPECTED = {f"topics/orders/partition=0/orders+0+{o:010d}.json":
            f'{{"id":{o}}}\n{{"id":{o + 1}}}\n'.encode() for o in (0, 2, 4)}


@pytest.mark.parametrize("kind, options", [("status", {"status": 503}), ("status", {"status": 500}),
                                           ("drop", {})])
def test_faults_are_retried_and_the_objects_are_whole(setup, kind, options):
    worker, proxy, client, bucket, sink = setup
    fault = proxy.inject("PutObject", kind, nth=2, times=2, **options)
    worker.run(sink("s3"))
    assert fault.fired == 2
    assert s3_objects(client, bucket) == EXPECTED
    assert worker.offsets("s3")[0]["offset"] == {"kafka_offset": 6}


def test_faults_past_the_retries_fail_the_batch_naming_the_object(setup):
    worker, proxy, client, bucket, sink = setup
    proxy.inject("PutObject", "status", nth=2, times=100, status=503)
    name = sink("s3", **{"s3.part.retries": "2"})
    with pytest.raises(LakeConnectError, match=r"orders\+0\+0000000002\.json") as e:
        worker.run(name)
    assert "s3.part.retries" in str(e.value)
    assert worker.offsets(name) == []  # nothing committed: the next batch writes them all again
    assert set(s3_objects(client, bucket)) <= {"topics/orders/partition=0/orders+0+0000000000.json"}
    proxy.clear()
    worker.run(name)
    assert s3_objects(client, bucket) == EXPECTED
