"""`lakeconnect demo`: the main job on the embedded default (local Spark, lake under ./lake, SQLite, the
local object store).

The pipeline the book builds in chapter 5, without a Kafka or a Connect cluster: the JDBC source copies
new rows of a SQLite table into a topic, and the S3 sink writes the topic to objects in a local bucket,
each exactly once, with the offsets visible. Each run adds three rows to the table and moves them along.
"""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
from pathlib import Path

from ingest.config.worker import LAKE_ROOT, load_worker
from ingest.errors import StateError

TABLE = """CREATE TABLE IF NOT EXISTS kafka_books (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    title VARCHAR(150) NOT NULL,
    subtitle VARCHAR(150) NOT NULL,
    published DATE NOT NULL,
    timestamp DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP
)"""
BOOKS = [("Kafka Connect", "Build and Run Data Pipelines", "2023-10-01"),
         ("Kafka The Definitive Guide", "Real-time Data and Stream Processing at Scale", "2017-07-07"),
         ("Mastering Kafka Streams and ksqlDB", "Building Real-Time Data Systems by Example", "2021-02-16")]
BUCKET = "demo-bucket"


def run_demo(args) -> int:
    from ingest.runtime.worker import Worker

    overrides = {LAKE_ROOT: args.lake} if args.lake else {}
    worker = Worker(load_worker(args.worker, overrides))
    base = Path(worker.lake_root) / "demo"
    objects = base / "objects"
    (objects / BUCKET).mkdir(parents=True, exist_ok=True)
    database = base / "inventory.db"
    con = sqlite3.connect(database)
    try:
        con.execute(TABLE)
        stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
        con.executemany("INSERT INTO kafka_books (title, subtitle, published, timestamp) VALUES (?, ?, ?, ?)",
                        [(*book, stamp) for book in BOOKS])
        con.commit()
    finally:
        con.close()

    configs = {
        "demo-jdbc-source": {
            "connector.class": "io.confluent.connect.jdbc.JdbcSourceConnector", "tasks.max": "1",
            "connection.url": f"jdbc:sqlite:{database}", "mode": "timestamp+incrementing",
            "incrementing.column.name": "id", "timestamp.column.name": "timestamp",
            "table.whitelist": "kafka_books", "topic.prefix": "demo-",
            "value.converter": "org.apache.kafka.connect.json.JsonConverter",
            "value.converter.schemas.enable": "true"},
        "demo-s3-sink": {
            "connector.class": "io.confluent.connect.s3.S3SinkConnector", "tasks.max": "1",
            "topics": "demo-kafka_books", "store.url": objects.resolve().as_uri(), "s3.bucket.name": BUCKET,
            "value.converter": "org.apache.kafka.connect.json.JsonConverter",
            "value.converter.schemas.enable": "true",
            "format.class": "io.confluent.connect.s3.format.json.JsonFormat", "flush.size": "3"},
    }
    for name, config in configs.items():
        config = {"name": name, **config}
        try:
            worker.stores.configs.require(name)
            worker.update(name, config)
        except StateError:
            worker.create(name, config)
    print(f"lake: {worker.lake_root}")
    print(f"table: {database} (3 rows added: {len(BOOKS)} books at {stamp})")
    for name in configs:
        for report in worker.run(name, until_caught_up=True):
            print(f"{name} {report.summary()}")
    for name in configs:
        print(f"\n{name} offsets (lakeconnect offsets list {name}):")
        print(json.dumps({"offsets": worker.offsets(name)}, indent=2))
    keys = sorted(p.relative_to(objects / BUCKET).as_posix() for p in (objects / BUCKET).rglob("*.json"))
    print(f"\nobjects in the local bucket {objects / BUCKET} ({len(keys)}); the last ones:")
    for key in keys[-3:]:
        first = (objects / BUCKET / key).read_text(encoding="utf-8").splitlines()[0]
        print(f"  {key}\n    {first[:100]}")
    return 0
