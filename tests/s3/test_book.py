"""The book's two S3 sink examples, run unchanged against the S3 server of the test services (moto, over
HTTP) and against the local object store: exactly the objects the book lists, and no others."""

from __future__ import annotations

import datetime as dt
import io
import json
import uuid

import boto3
import pytest
from deltalake import DeltaTable

from tests.conftest import cli, cli_here
from tests.s3._book import S3SINK_FIELD, S3SINK_TIME, book_config, create, order, orders_lake, produce

ID2 = b'{"id":2,"title":"Mastering Kafka Streams and KSQLDB","quantity":1}\n'
ID3 = b'{"id":3,"title":"Kafka Connect","quantity":1}\n{"id":3,"title":"Kafka Connect","quantity":2}\n'
FIELD_OBJECTS = {
    "topics/orders/id=2/orders+3+0000000000.json": ID2,
    "topics/orders/id=2/orders+3+0000000000.keys.bin": b"2\n",
    "topics/orders/id=3/orders+3+0000000001.json": ID3,
    "topics/orders/id=3/orders+3+0000000001.keys.bin": b"3\n3\n",
}


@pytest.fixture
def bucket(s3_endpoint):
    """A fresh bucket on the test S3 server; (name, endpoint, client)."""
    client = boto3.client("s3", endpoint_url=s3_endpoint, region_name="us-east-1")
    name = f"lc-book-{uuid.uuid4().hex[:12]}"
    client.create_bucket(Bucket=name)
    return name, s3_endpoint, client


def s3_objects(client, name: str) -> dict[str, bytes]:
    out = {}
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=name):
        for o in page.get("Contents", []):
            out[o["Key"]] = client.get_object(Bucket=name, Key=o["Key"])["Body"].read()
    return out


def local_objects(root) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def offsets(worker, name: str) -> dict[int, int]:
    r = cli_here("offsets", "list", name, worker=worker)
    assert r.returncode == 0, r.stderr
    return {o["partition"]["kafka_partition"]: o["offset"]["kafka_offset"] for o in json.loads(r.stdout)["offsets"]}


def aws_env(endpoint: str) -> dict[str, str]:
    """The test server stands in for AWS: the book's config stays as it is, the endpoint comes from the
    standard AWS variable."""
    return {"AWS_ENDPOINT_URL_S3": endpoint, "AWS_EC2_METADATA_DISABLED": "true"}


def test_field_partitioner_example_on_s3(tmp_path, bucket):
    name, endpoint, client = bucket
    lake, worker = orders_lake(tmp_path)
    secret = f"lc-secret-{uuid.uuid4().hex}"  # the test server takes any credentials
    create(worker, tmp_path, book_config(S3SINK_FIELD, bucket=name, region="us-east-1", access_key="testing",
                                         secret_key=secret))
    r = cli("run", "s3sink-field", worker=worker, env=aws_env(endpoint))
    assert r.returncode == 0, r.stderr
    assert s3_objects(client, name) == FIELD_OBJECTS
    # Partition 4's record waits for two more of its kind (flush.size=3); partition 3 is committed.
    assert offsets(worker, "s3sink-field") == {3: 3}
    shown = r.stdout + r.stderr
    for args in (("connectors", "get", "s3sink-field"), ("connectors", "status", "s3sink-field"),
                 ("offsets", "list", "s3sink-field")):
        shown += cli_here(*args, worker=worker).stdout
    assert secret not in shown

    # "If you send another two records with the key set to 1, the matching objects will appear in S3."
    produce(worker, [order(1, "Kafka The Definitive Guide", 1), order(1, "Kafka The Definitive Guide", 3)])
    r = cli("run", "s3sink-field", worker=worker, env=aws_env(endpoint))
    assert r.returncode == 0, r.stderr
    objects = s3_objects(client, name)
    assert set(objects) - set(FIELD_OBJECTS) == {"topics/orders/id=1/orders+4+0000000000.json",
                                                 "topics/orders/id=1/orders+4+0000000000.keys.bin"}
    assert objects["topics/orders/id=1/orders+4+0000000000.json"].decode().splitlines() == [
        '{"id":1,"title":"Kafka The Definitive Guide","quantity":2}',
        '{"id":1,"title":"Kafka The Definitive Guide","quantity":1}',
        '{"id":1,"title":"Kafka The Definitive Guide","quantity":3}']
    assert objects["topics/orders/id=1/orders+4+0000000000.keys.bin"] == b"1\n1\n1\n"
    assert offsets(worker, "s3sink-field") == {3: 3, 4: 3}


def test_field_partitioner_example_on_the_local_store(tmp_path):
    lake, worker = orders_lake(tmp_path)
    store = tmp_path / "objects"
    (store / "orders").mkdir(parents=True)  # the bucket, as S3 needs it to exist
    create(worker, tmp_path, book_config(S3SINK_FIELD, bucket="orders", region="us-east-1", access_key="x",
                                         secret_key="y", store_url=store.as_uri()))
    # Until caught up: the first batch commits partition 3's objects; the second finds only partition 4's
    # record, which stays held (flush.size 3), so the run stops instead of reading it again and again.
    r = cli("run", "s3sink-field", "--until-caught-up", worker=worker, timeout=240)
    assert r.returncode == 0, r.stderr
    assert "task 3: batch 1 committed 3 records" in r.stdout
    assert "task 4: batch 1 read 1 records" in r.stdout and "holds them" in r.stdout
    assert "task 4: batch 2" not in r.stdout
    assert local_objects(store / "orders") == FIELD_OBJECTS
    assert offsets(worker, "s3sink-field") == {3: 3}


def _expected_time_keys(lake) -> set[str]:
    """One Avro object per partition and hour of the records' timestamps (Record extractor, UTC)."""
    rows = DeltaTable(str(lake / "topics" / "orders")).to_pyarrow_table(columns=["partition", "offset", "timestamp"])
    keys = set()
    for r in sorted(rows.to_pylist(), key=lambda r: (r["partition"], r["offset"])):
        t = r["timestamp"].astimezone(dt.timezone.utc) if r["timestamp"].tzinfo else r["timestamp"]
        path = f"year={t:%Y}/month={t:%m}/day={t:%d}/hour={t:%H}"
        if not any(k.startswith(f"topics/orders/{path}/orders+{r['partition']}+") for k in keys):
            keys.add(f"topics/orders/{path}/orders+{r['partition']}+{r['offset']:010d}.avro")
    return keys


def test_time_based_example_on_s3(tmp_path, s3_endpoint):
    from fastavro import reader

    client = boto3.client("s3", endpoint_url=s3_endpoint, region_name="us-east-1")
    bucket_name = f"orders-time-{uuid.uuid4().hex[:8]}"  # the book's "orders-time", unique per run
    client.create_bucket(Bucket=bucket_name)
    lake, worker = orders_lake(tmp_path)
    config = book_config(S3SINK_TIME, region="us-east-1", access_key="testing", secret_key="testing",
                         bucket_name=bucket_name)
    create(worker, tmp_path, config)
    r = cli_here("validate", str(tmp_path / "s3sink-time.json"), worker=worker)
    assert r.returncode == 0 and "not exactly-once" in r.stdout, r.stdout + r.stderr

    r = cli("run", "s3sink-time", worker=worker, env=aws_env(s3_endpoint))
    assert r.returncode == 0, r.stderr
    assert s3_objects(client, bucket_name) == {}  # within the minute: the records wait in open objects
    # A minute later (the batch's clock moved on), "the connector ends up uploading all of them".
    r = cli("run", "s3sink-time", worker=worker, env={**aws_env(s3_endpoint), "LAKECONNECT_CLOCK_SKEW_MS": "61000"})
    assert r.returncode == 0, r.stderr
    objects = s3_objects(client, bucket_name)
    assert set(objects) == _expected_time_keys(lake)
    assert {k.rsplit("/", 1)[1] for k in objects} == {"orders+3+0000000000.avro", "orders+4+0000000000.avro"}
    by_partition = {k.rsplit("/", 1)[1].split("+")[1]: [dict(r) for r in reader(io.BytesIO(v))] for k, v in objects.items()}
    assert by_partition["3"] == [{"id": 2, "title": "Mastering Kafka Streams and KSQLDB", "quantity": 1},
                                 {"id": 3, "title": "Kafka Connect", "quantity": 1},
                                 {"id": 3, "title": "Kafka Connect", "quantity": 2}]
    assert by_partition["4"] == [{"id": 1, "title": "Kafka The Definitive Guide", "quantity": 2}]
    assert offsets(worker, "s3sink-time") == {3: 3, 4: 1}
