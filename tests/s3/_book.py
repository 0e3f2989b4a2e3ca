"""The book's S3 sink walk-through (chapter 5): the `orders` topic and the two connector configs, verbatim.

Four records go into a 5-partition topic with the console producer (`parse.key=true`); keys 2 and 3
land in partition 3, key 1 in partition 4.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import cli_here, write_worker

ORDER_SCHEMA = ('{"type": "struct", "fields": [{"type": "int64", "field": "id"}, {"type": "string", "field": '
                '"title"}, {"type": "int16", "field": "quantity"}], "name": "order"}')


def order(book_id: int, title: str, quantity: int) -> str:
    return (f'{book_id}\t{{"schema": {ORDER_SCHEMA}, "payload": {{"id": {book_id}, "title": "{title}", '
            f'"quantity": {quantity}}}}}')


BOOK_RECORDS = [
    order(1, "Kafka The Definitive Guide", 2),
    order(2, "Mastering Kafka Streams and KSQLDB", 1),
    order(3, "Kafka Connect", 1),
    order(3, "Kafka Connect", 2),
]

# s3sink-field.json as the book prints it; <BUCKET>, <REGION> and the credentials are the reader's own.
S3SINK_FIELD = """{
    "name": "s3sink-field",
    "connector.class": "io.confluent.connect.s3.S3SinkConnector",
    "tasks.max": "5",
    "topics": "orders",

    "key.converter": "org.apache.kafka.connect.converters.ByteArrayConverter",
    "value.converter": "org.apache.kafka.connect.json.JsonConverter",
    "value.converter.schemas.enable": "true",

    "s3.bucket.name": "<BUCKET>",
    "s3.region": "<REGION>",
    "storage.class": "io.confluent.connect.s3.storage.S3Storage",
    "aws.access.key.id": "<ACCESS_KEY_ID>",
    "aws.secret.access.key": "<SECRET_ACCESS_KEY>",

    "partitioner.class":
        "io.confluent.connect.storage.partitionner.FieldPartitioner",
    "partition.field.name": "id",
    "format.class": "io.confluent.connect.s3.format.json.JsonFormat",
    "flush.size": "3",
    "store.kafka.keys": "true",
    "keys.format.class":
        "io.confluent.connect.s3.format.bytearray.ByteArrayFormat"
}"""

S3SINK_TIME = """{
  "name": "s3sink-time",
  "connector.class": "io.confluent.connect.s3.S3SinkConnector",
  "tasks.max": "5",
  "topics": "orders",

  "key.converter": "org.apache.kafka.connect.converters.ByteArrayConverter",
  "value.converter": "org.apache.kafka.connect.json.JsonConverter",
  "value.converter.schemas.enable": "true",

  "s3.bucket.name": "orders-time",
  "s3.region": "<REGION>",
  "storage.class": "io.confluent.connect.s3.storage.S3Storage",
  "aws.access.key.id": "<ACCESS_KEY_ID>",
  "aws.secret.access.key": "<SECRET_ACCESS_KEY>",

  "partitioner.class":
    "io.confluent.connect.storage.partition.TimeBasedPartitioner",
  "partition.duration.ms": "60000",
  "timestamp.extractor": "Record",
  "flush.size": "10",
  "rotate.schedule.interval.ms": "60000",
  "timezone": "UTC",
  "locale": "en-GB",
  "path.format": "'year'=YYYY/'month'=MM/'day'=dd/'hour'=HH",

  "format.class": "io.confluent.connect.s3.format.avro.AvroFormat"
}"""


def book_config(text: str, **values: str) -> dict:
    """The book's JSON with the reader's own values in its placeholders (and `s3.bucket.name` replaced
    when given), plus any extra keys (`store.url` for a store that is not AWS)."""
    for placeholder, key in (("<BUCKET>", "bucket"), ("<REGION>", "region"), ("<ACCESS_KEY_ID>", "access_key"),
                             ("<SECRET_ACCESS_KEY>", "secret_key")):
        if key in values:
            text = text.replace(placeholder, values.pop(key))
    config = json.loads(text)
    if "bucket_name" in values:
        config["s3.bucket.name"] = values.pop("bucket_name")
    config.update({k.replace("_", "."): v for k, v in values.items()})
    return config


def orders_lake(root: Path, records: list[str] = BOOK_RECORDS) -> tuple[Path, Path]:
    """A lake with the book's `orders` topic (5 partitions) holding `records`; (lake, worker file)."""
    lake = root / "lake"
    lake.mkdir(parents=True)
    worker = write_worker(root / "worker.properties", lake)
    r = cli_here("topics", "create", "orders", "--partitions", "5", worker=worker)
    assert r.returncode == 0, r.stderr
    produce(worker, records)
    return lake, worker


def produce(worker: Path, records: list[str]) -> None:
    r = cli_here("topics", "produce", "orders", "--property", "parse.key=true", worker=worker,
                 stdin="".join(line + "\n" for line in records))
    assert r.returncode == 0, r.stderr


def create(worker: Path, root: Path, config: dict) -> str:
    path = root / f"{config['name']}.json"
    path.write_text(json.dumps(config))
    r = cli_here("connectors", "create", str(path), worker=worker)
    assert r.returncode == 0, r.stderr
    return config["name"]
