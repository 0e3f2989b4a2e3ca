"""A production-style Debezium config, AvroConverter for keys and values through a Schema Registry (the lake's
own, served by a `lakeconnect rest` process), run end to end on the private MariaDB: the book's walk-through
with its schema change events, every record read back by confluent-kafka's Avro deserializer and equal to
what the same connector writes with JsonConverter."""

from __future__ import annotations

import json

from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext

from tests.conftest import write_worker
from tests.mysql._cdc import connector_config, create, records, run
from tests.rest.test_rest_api import Rest

TOPICS = ("dbserver1.inventory.kafka_books", "dbserver1")


def test_the_books_walk_through_with_avro_keys_and_values(tmp_path, services, inventory):
    json_config = connector_config(services, **{"include.schema.changes": "true"})
    plain = create(tmp_path / "json", "inventory-connector", json_config)
    (tmp_path / "avro" / "lake").mkdir(parents=True)
    rest = Rest(write_worker(tmp_path / "avro" / "worker.properties", tmp_path / "avro" / "lake"))
    registry = rest.url + "/registry"
    try:
        avro = {f"{part}.converter": "io.confluent.connect.avro.AvroConverter" for part in ("key", "value")}
        avro |= {f"{part}.converter.schema.registry.url": registry for part in ("key", "value")}
        with_avro = create(tmp_path / "avro", "inventory-connector",
                           {**json_config, "database.server.id": "10001", **avro})

        for worker in (plain, with_avro):
            run(worker, "inventory-connector")
        inventory("UPDATE kafka_books SET published = '2022-09-23' WHERE id = 2",
                  "DELETE FROM kafka_books WHERE id = 1")
        for worker in (plain, with_avro):
            run(worker, "inventory-connector")

        client = SchemaRegistryClient({"url": registry})
        keys, values = AvroDeserializer(client), AvroDeserializer(client)
        for topic in TOPICS:
            expected = [(None if k is None else json.loads(k)["payload"],
                         None if v is None else json.loads(v)["payload"])
                        for k, v in records(tmp_path / "json" / "lake", topic)]
            got = [(None if k is None else keys(k, SerializationContext(topic, MessageField.KEY)),
                    None if v is None else values(v, SerializationContext(topic, MessageField.VALUE)))
                   for k, v in records(tmp_path / "avro" / "lake", topic)]
            # positions and times differ between the two connectors' runs; everything else is the same
            for pair in expected + got:
                for side in pair:
                    if isinstance(side, dict):
                        side.pop("ts_ms", None)
                        for source in (side.get("source") or {},):
                            for k in ("ts_ms", "file", "pos", "row", "server_id", "gtid", "thread", "query"):
                                source.pop(k, None)
            assert got == expected, topic
        assert len(records(tmp_path / "avro" / "lake", TOPICS[0])) == 5  # r, r, u, d and the tombstone
        assert set(client.get_subjects()) == {f"{t}-{part}" for t in TOPICS for part in ("key", "value")}
    finally:
        rest.stop()
