"""The book's Debezium MySQL walk-through (ch. 5), with its mysql-debezium.json run unchanged but for the
server's address: a snapshot of two rows, an UPDATE, a DELETE and its tombstone, on the private MariaDB."""

from __future__ import annotations

import json

import pytest

from tests.mysql._cdc import connector_config, create, payloads, records, run

pytestmark = pytest.mark.both_row_metadata  # NO_LOG (the server's default), then FULL: conftest.py

TOPIC = "dbserver1.inventory.kafka_books"
KEY_SCHEMA = ('{"type":"struct","fields":[{"type":"int64","optional":false,"field":"id"}],"optional":false,'
              '"name":"dbserver1.inventory.kafka_books.Key"}')
BOOK_1 = {"id": 1, "title": "Kafka Connect", "subtitle": "Build and Run Data Pipelines", "published": 19631}
BOOK_2 = {"id": 2, "title": "Kafka The Definitive Guide",
          "subtitle": "Real-time Data and Stream Processing at Scale", "published": 17354}


def test_the_books_walk_through(tmp_path, services, inventory):
    worker = create(tmp_path, "inventory-connector", connector_config(services))
    run(worker, "inventory-connector")
    lake = tmp_path / "lake"

    # The snapshot: two read events, keyed by the primary key, marked snapshot=first and last (Debezium 2.3.4).
    snap = records(lake, TOPIC)
    assert [k for k, _ in snap] == [f'{{"schema":{KEY_SCHEMA},"payload":{{"id":{i}}}}}'.encode() for i in (1, 2)]
    values = [json.loads(v) for _, v in snap]
    assert [v["payload"]["before"] for v in values] == [None, None]
    assert [v["payload"]["after"] for v in values] == [BOOK_1, BOOK_2]
    assert [v["payload"]["op"] for v in values] == ["r", "r"]
    assert [v["payload"]["source"]["snapshot"] for v in values] == ["first", "last"]
    source = values[0]["payload"]["source"]
    assert (source["connector"], source["name"], source["db"], source["table"]) == (
        "mysql", "dbserver1", "inventory", "kafka_books")
    schema = values[0]["schema"]
    assert schema["name"] == "dbserver1.inventory.kafka_books.Envelope"
    assert [f["field"] for f in schema["fields"]] == ["before", "after", "source", "op", "ts_ms", "transaction"]
    assert schema["fields"][0]["name"] == "dbserver1.inventory.kafka_books.Value"
    assert [(f["field"], f["type"], f.get("name")) for f in schema["fields"][1]["fields"]] == [
        ("id", "int64", None), ("title", "string", None), ("subtitle", "string", None),
        ("published", "int32", "io.debezium.time.Date")]

    inventory("UPDATE kafka_books SET published = '2022-09-23' WHERE id = 2")
    run(worker, "inventory-connector")
    inventory("DELETE FROM kafka_books WHERE id = 1")
    run(worker, "inventory-connector")

    events = payloads(lake, TOPIC)
    assert len(events) == 5
    key, update = events[2]
    assert key == {"id": 2} and update["op"] == "u" and update["source"]["snapshot"] == "false"
    assert update["before"] == BOOK_2 and update["after"] == {**BOOK_2, "published": 19258}
    key, delete = events[3]
    assert key == {"id": 1} and delete["op"] == "d"
    assert delete["before"] == BOOK_1 and delete["after"] is None
    # The tombstone: the same key, a null value.
    assert records(lake, TOPIC)[4] == (f'{{"schema":{KEY_SCHEMA},"payload":{{"id":1}}}}'.encode(), None)
    binlog = update["source"]
    assert binlog["file"].startswith("mariadb-bin") or binlog["file"]
    assert binlog["pos"] > 0 and binlog["server_id"] > 0 and binlog["row"] == 0

    # Nothing new: the next run commits nothing and writes nothing.
    r = run(worker, "inventory-connector")
    assert "nothing new" in r.stdout + r.stderr
    assert len(records(lake, TOPIC)) == 5
