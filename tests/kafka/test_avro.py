"""AvroConverter on the Kafka backend: a JDBC source produces Avro values to the test bed's broker through the
lake's Schema Registry, and a plain confluent-kafka consumer decodes them with its own AvroDeserializer, as any
Kafka application reading the topic would."""

from __future__ import annotations

import json
import sqlite3

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext

from tests.conftest import cli, cli_here
from tests.kafka.test_pipeline import kafka_worker
from tests.rest.test_rest_api import Rest

pytestmark = pytest.mark.services


def test_a_source_on_kafka_writes_avro_that_kafka_consumers_decode(tmp_path, kafka):
    db = tmp_path / "shop.db"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE items (id INTEGER PRIMARY KEY, name VARCHAR(20) NOT NULL, price DECIMAL(8,2))")
    con.executemany("INSERT INTO items VALUES (?, ?, ?)", [(1, "book", 12.5), (2, "pen", None)])
    con.commit()
    con.close()
    prefix = kafka.unique_topic("avro") + "-"
    topic = prefix + "items"
    kafka.create_topic(topic, 1)
    worker = kafka_worker(tmp_path, kafka)
    rest = Rest(worker)
    registry = rest.url + "/registry"
    try:
        config = tmp_path / "source.json"
        config.write_text(json.dumps({"name": "items", "config": {
            "connector.class": "io.confluent.connect.jdbc.JdbcSourceConnector", "connection.url": f"jdbc:sqlite:{db}",
            "mode": "bulk", "table.whitelist": "items", "topic.prefix": prefix,
            "value.converter": "io.confluent.connect.avro.AvroConverter",
            "value.converter.schema.registry.url": registry}}))
        assert cli_here("connectors", "create", str(config), worker=worker).returncode == 0
        r = cli("run", "items", worker=worker)
        assert r.returncode == 0, r.stderr

        consumer = Consumer({"bootstrap.servers": kafka.bootstrap, "group.id": "avro-reader",
                             "isolation.level": "read_committed", "enable.auto.commit": False})
        try:
            consumer.assign([TopicPartition(topic, 0, 0)])
            messages = []
            while len(messages) < 2:
                m = consumer.poll(10)
                assert m is not None, messages
                if m.error() is None:
                    messages.append(m)
        finally:
            consumer.close()
        read = AvroDeserializer(SchemaRegistryClient({"url": registry}))
        values = [read(m.value(), SerializationContext(topic, MessageField.VALUE)) for m in messages]
        assert [(v["id"], v["name"]) for v in values] == [(1, "book"), (2, "pen")]
        assert values[1]["price"] is None and float(values[0]["price"]) == 12.5
    finally:
        rest.stop()
