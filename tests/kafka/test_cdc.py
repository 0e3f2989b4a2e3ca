"""The book's Debezium MySQL walk-through (ch. 5) with its topic in a Kafka cluster (`topic.backend=kafka`,
exactly once by transactions, the default): the snapshot, an UPDATE, and a DELETE with its tombstone reach
the test bed's real Kafka broker with the same keys and values as a Delta topic gets, and an
S3 sink carries them on (CDC → Kafka → S3)."""

from __future__ import annotations

import json
import uuid

import boto3
import pytest

from tests.conftest import cli, cli_here
from tests.kafka.test_pipeline import kafka_worker
from tests.mysql._cdc import connector_config, create, records, run
from tests.s3.test_book import aws_env, s3_objects

pytestmark = pytest.mark.serial  # the private MariaDB's binlog is shared by the CDC tests


def _kafka_records(worker, topic: str) -> list[tuple[bytes | None, bytes | None]]:
    """(key, value) of the topic's one partition, read back through the product's Kafka reader."""
    r = cli_here("topics", "consume", topic, "--from-beginning", "--property", "print.key=true", worker=worker)
    assert r.returncode == 0, r.stderr
    out = []
    for line in r.stdout.splitlines():
        key, _, value = line.partition("\t")
        out.append((None if key == "null" else key.encode(), None if value == "null" else value.encode()))
    return out


def test_book_cdc_to_kafka_to_s3(tmp_path, services, kafka, inventory, s3_endpoint):
    prefix = kafka.unique_topic("dbserver1")
    topic = f"{prefix}.inventory.kafka_books"
    kafka.create_topic(topic, 1)
    config = connector_config(services, **{"topic.prefix": prefix})

    # The same connector on Delta topics: the reference for keys and values.
    delta_worker = create(tmp_path / "delta", "inventory-connector", config)
    worker = kafka_worker(tmp_path / "kafka", kafka)
    f = tmp_path / "kafka" / "inventory-connector.json"
    f.write_text(json.dumps({"name": "inventory-connector", "config": config}))
    assert cli_here("connectors", "create", str(f), worker=worker).returncode == 0
    for w in (delta_worker, worker):
        run(w, "inventory-connector")
    inventory("UPDATE kafka_books SET published = '2022-09-23' WHERE id = 2")
    for w in (delta_worker, worker):
        run(w, "inventory-connector")
    inventory("DELETE FROM kafka_books WHERE id = 1")
    for w in (delta_worker, worker):
        run(w, "inventory-connector")

    def comparable(pairs):  # the events' processing times come from each run's clock
        out = []
        for key, value in pairs:
            if value is not None:
                v = json.loads(value)
                v["payload"].pop("ts_ms", None)
                if v["payload"]["op"] == "r":
                    v["payload"]["source"].pop("ts_ms", None)
                value = json.dumps(v, sort_keys=True)
            out.append((key, value))
        return out

    on_kafka = _kafka_records(worker, topic)
    assert [json.loads(v)["payload"]["op"] if v else None for _, v in on_kafka] == ["r", "r", "u", "d", None]
    assert comparable(on_kafka) == comparable(records(tmp_path / "delta" / "lake", topic))

    bucket = f"lc-cdc-{uuid.uuid4().hex[:10]}"
    client = boto3.client("s3", endpoint_url=s3_endpoint, region_name="us-east-1")
    client.create_bucket(Bucket=bucket)
    sink = tmp_path / "kafka" / "cdc-s3.json"
    sink.write_text(json.dumps({"name": "cdc-s3", "config": {
        "connector.class": "io.confluent.connect.s3.S3SinkConnector", "tasks.max": "1", "topics": topic,
        "s3.bucket.name": bucket, "s3.region": "us-east-1", "store.url": s3_endpoint,
        "value.converter": "org.apache.kafka.connect.json.JsonConverter", "behavior.on.null.values": "ignore",
        "format.class": "io.confluent.connect.s3.format.json.JsonFormat", "flush.size": "4"}}))
    assert cli_here("connectors", "create", str(sink), worker=worker).returncode == 0
    r = cli("run", "cdc-s3", worker=worker, env=aws_env(s3_endpoint))
    assert r.returncode == 0, r.stderr
    objects = s3_objects(client, bucket)
    assert list(objects) == [f"topics/{topic}/partition=0/{topic}+0+0000000000.json"]
    ops = [json.loads(line)["op"] for line in next(iter(objects.values())).decode().splitlines()]
    assert ops == ["r", "r", "u", "d"]
