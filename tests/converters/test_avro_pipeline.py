"""AvroConverter end to end in real processes: a JDBC source writes Avro records into a topic through the
lake's own Schema Registry (the REST server's `/registry`), and the book's ch. 4 dead-letter-queue config, an
S3 sink with AvroConverter, `errors.tolerance=all` and `errors.deadletterqueue.topic.name=my-dlq`, writes the
Avro records to the object store and sends a record that is not Avro to the dead letter queue, bytes intact."""

from __future__ import annotations

import json
import sqlite3

import fastavro
import pyarrow.parquet as pq

from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext
from deltalake import DeltaTable

from tests.conftest import cli, cli_here, write_worker
from tests.rest.test_rest_api import Rest


def _shop(tmp_path, columns: str, rows: list[tuple]):
    """A SQLite database with an `orders` table of `columns` holding `rows`."""
    db = tmp_path / "shop.db"
    con = sqlite3.connect(db)
    con.execute(f"CREATE TABLE orders ({columns})")
    con.executemany(f"INSERT INTO orders VALUES ({', '.join('?' * len(rows[0]))})", rows)
    con.commit()
    con.close()
    return db


def _local_objects(root) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


def test_jdbc_to_an_avro_topic_to_s3_with_the_books_dead_letter_queue(tmp_path):
    lake = tmp_path / "lake"
    lake.mkdir()
    worker = write_worker(tmp_path / "worker.properties", lake)
    db = _shop(tmp_path, "id INTEGER PRIMARY KEY, item VARCHAR(20) NOT NULL, qty INTEGER",
               [(1, "book", 2), (2, "pen", None), (3, "ink", 7)])
    rest = Rest(worker)
    registry = rest.url + "/registry"
    avro = {"value.converter": "io.confluent.connect.avro.AvroConverter",
            "value.converter.schema.registry.url": registry}
    try:
        source = tmp_path / "source.json"
        source.write_text(json.dumps({"name": "shop", "config": {
            "connector.class": "io.confluent.connect.jdbc.JdbcSourceConnector", "connection.url": f"jdbc:sqlite:{db}",
            "mode": "bulk", "table.whitelist": "orders", "topic.prefix": "shop-", **avro}}))
        assert cli_here("connectors", "create", str(source), worker=worker).returncode == 0
        r = cli("run", "shop", worker=worker)
        assert r.returncode == 0, r.stderr
        # the topic's values are Confluent's wire format, read back by confluent-kafka's own deserializer
        rows = sorted(DeltaTable(str(lake / "topics" / "shop-orders")).to_pyarrow_table(
            columns=["offset", "value"]).to_pylist(), key=lambda x: x["offset"])
        client = SchemaRegistryClient({"url": registry})
        read = AvroDeserializer(client)
        context = SerializationContext("shop-orders", MessageField.VALUE)
        assert [read(x["value"], context) for x in rows] == [
            {"id": 1, "item": "book", "qty": 2}, {"id": 2, "item": "pen", "qty": None},
            {"id": 3, "item": "ink", "qty": 7}]
        assert client.get_subjects() == ["shop-orders-value"]

        # a record that is not Avro among them, and one framed as Avro with a schema id the registry never gave
        poison = cli_here("topics", "produce", "shop-orders", worker=worker, stdin="not avro\n\x00\x00\x0009\x02\n")
        assert poison.returncode == 0, poison.stderr
        store = tmp_path / "objects"
        (store / "orders-bucket").mkdir(parents=True)
        sink = tmp_path / "sink.json"
        sink.write_text(json.dumps({"name": "s3-avro", "config": {
            # the book's ch. 4 settings
            "connector.class": "io.confluent.connect.s3.S3SinkConnector",
            "value.converter": "io.confluent.connect.avro.AvroConverter",
            "errors.tolerance": "all",
            "errors.deadletterqueue.topic.name": "my-dlq",
            # and what any S3 sink needs, the registry's address among them
            "value.converter.schema.registry.url": registry, "topics": "shop-orders",
            "s3.bucket.name": "orders-bucket", "s3.region": "us-east-1", "store.url": store.as_uri(),
            "aws.access.key.id": "x", "aws.secret.access.key": "y", "flush.size": "3",
            "storage.class": "io.confluent.connect.s3.storage.S3Storage",
            "format.class": "io.confluent.connect.s3.format.json.JsonFormat"}}))
        assert cli_here("connectors", "create", str(sink), worker=worker).returncode == 0
        r = cli("run", "s3-avro", worker=worker)
        assert r.returncode == 0, r.stderr
        objects = _local_objects(store / "orders-bucket")
        assert list(objects) == ["topics/shop-orders/partition=0/shop-orders+0+0000000000.json"], objects
        assert [json.loads(line) for line in next(iter(objects.values())).splitlines()] == [
            {"id": 1, "item": "book", "qty": 2}, {"id": 2, "item": "pen", "qty": None},
            {"id": 3, "item": "ink", "qty": 7}]
        letters = DeltaTable(str(lake / "topics" / "my-dlq")).to_pyarrow_table(columns=["offset", "value"]).to_pylist()
        assert [x["value"] for x in sorted(letters, key=lambda x: x["offset"])] == [b"not avro",
                                                                                   b"\x00\x00\x00\x30\x39\x02"]

        # the S3 sink's AvroFormat and ParquetFormat write the records with the schema the registry gave them
        rows = [{"id": 1, "item": "book", "qty": 2}, {"id": 2, "item": "pen", "qty": None},
                {"id": 3, "item": "ink", "qty": 7}]
        base = json.loads(sink.read_text())
        for n, (kind, extension) in enumerate((("avro.AvroFormat", "avro"), ("parquet.ParquetFormat", "parquet"))):
            name = f"s3-{extension}-files"
            sink.write_text(json.dumps({"name": name, "config": {
                **base["config"], "name": name, "format.class": f"io.confluent.connect.s3.format.{kind}",
                "errors.deadletterqueue.topic.name": f"my-dlq-{n + 2}"}}))
            assert cli_here("connectors", "create", str(sink), worker=worker).returncode == 0
            r = cli("run", name, worker=worker)
            assert r.returncode == 0, r.stderr
        [avro_path] = (store / "orders-bucket").rglob("*.avro")
        with avro_path.open("rb") as f:
            avro_file = fastavro.reader(f)
            written = avro_file.writer_schema
            assert list(avro_file) == rows
        registered = json.loads(client.get_latest_version("shop-orders-value").schema.schema_str)
        assert written["name"].endswith(registered["name"]) and written["connect.version"] == 1
        assert [f["name"] for f in written["fields"]] == [f["name"] for f in registered["fields"]]
        [parquet_path] = (store / "orders-bucket").rglob("*.parquet")
        parquet = pq.read_table(parquet_path)
        assert parquet.to_pylist() == rows
        assert [(f.name, str(f.type), f.nullable) for f in parquet.schema] == [
            ("id", "int32", False), ("item", "string", False), ("qty", "int32", True)]

        # the Delta table sink reads the Avro topic into a typed table
        delta = tmp_path / "delta.json"
        delta.write_text(json.dumps({"name": "tables", "config": {
            "connector.class": "io.lakeconnect.delta.DeltaTableSinkConnector", "topics": "shop-orders",
            "value.converter": "io.confluent.connect.avro.AvroConverter",
            "value.converter.schema.registry.url": registry, "errors.tolerance": "all"}}))
        assert cli_here("connectors", "create", str(delta), worker=worker).returncode == 0
        r = cli("run", "tables", worker=worker)
        assert r.returncode == 0, r.stderr
        table = DeltaTable(str(lake / "tables" / "shop-orders")).to_pyarrow_table()
        assert [(f.name, str(f.type)) for f in table.schema if not f.name.startswith("_")][:3] == [
            ("id", "int32"), ("item", "string"), ("qty", "int32")]  # SQLite INTEGER, as the JDBC source maps it
        assert sorted(table.select(["id", "item", "qty"]).to_pylist(), key=lambda x: x["id"]) == [
            {"id": 1, "item": "book", "qty": 2}, {"id": 2, "item": "pen", "qty": None},
            {"id": 3, "item": "ink", "qty": 7}]
    finally:
        rest.stop()


def test_without_sparks_avro_jar_the_converter_says_how_to_add_it(tmp_path):
    lake = tmp_path / "lake"
    lake.mkdir()
    worker = write_worker(tmp_path / "worker.properties", lake)
    db = _shop(tmp_path, "id INTEGER PRIMARY KEY", [(1,)])
    source = tmp_path / "source.json"
    source.write_text(json.dumps({"name": "shop", "config": {
        "connector.class": "io.confluent.connect.jdbc.JdbcSourceConnector", "connection.url": f"jdbc:sqlite:{db}",
        "mode": "bulk", "table.whitelist": "orders", "topic.prefix": "shop-",
        "value.converter": "io.confluent.connect.avro.AvroConverter",
        "value.converter.schema.registry.url": "http://127.0.0.1:1/registry"}}))
    assert cli_here("connectors", "create", str(source), worker=worker).returncode == 0
    (tmp_path / "no-jars").mkdir()
    # a JVM of its own, started without the jar (LAKECONNECT_JARS names an empty directory)
    r = cli("run", "shop", worker=worker, env={"LAKECONNECT_JARS": str(tmp_path / "no-jars")}, own_jvm=True)
    assert r.returncode != 0 and "Traceback" not in r.stderr, r.stderr
    assert "AvroConverter needs Spark's Avro functions (the spark-avro jar): run `make setup`" in r.stderr, r.stderr
    assert "spark.jars.packages=org.apache.spark:spark-avro_2.13:" in r.stderr
    assert json.loads(cli_here("offsets", "list", "shop", worker=worker).stdout)["offsets"] == []
    # with the jar, a registry that cannot be reached: worth another try later (exit 75), nothing committed
    r = cli("run", "shop", worker=worker)
    assert r.returncode == 75 and "Traceback" not in r.stderr, r.stderr
    assert "the Schema Registry cannot be reached (http://127.0.0.1:1/registry" in r.stderr, r.stderr
    assert json.loads(cli_here("offsets", "list", "shop", worker=worker).stdout)["offsets"] == []


def test_an_avro_batch_killed_at_every_step_writes_what_a_clean_run_writes(tmp_path):
    """The schema is registered while the batch converts, before anything is written: a run killed after any
    step, resumed, finds the same id (registration is idempotent) and writes the same bytes."""
    from ingest.runtime.faults import SOURCE_STEPS
    from tests.conftest import run_here
    from tests.crash_kit import kill_at_each_step
    from tests.runtime.helpers import topic_rows

    db = _shop(tmp_path, "id INTEGER PRIMARY KEY, item VARCHAR(20) NOT NULL", [(1, "book"), (2, "pen")])
    registry_lake = tmp_path / "registry-lake"
    registry_lake.mkdir()
    rest = Rest(write_worker(tmp_path / "registry.properties", registry_lake))
    try:
        workers = {}
        for tag in ("clean", "crashed"):
            (tmp_path / tag / "lake").mkdir(parents=True)
            workers[tag] = write_worker(tmp_path / tag / "worker.properties", tmp_path / tag / "lake",
                                        **{"lake.allowed.paths": str(tmp_path)})  # the database both lakes read
            config = tmp_path / tag / "source.json"
            config.write_text(json.dumps({"name": "shop", "config": {
                "connector.class": "io.confluent.connect.jdbc.JdbcSourceConnector",
                "connection.url": f"jdbc:sqlite:{db}", "mode": "incrementing", "incrementing.column.name": "id",
                "table.whitelist": "orders", "topic.prefix": "shop-",
                "value.converter": "io.confluent.connect.avro.AvroConverter",
                "value.converter.schema.registry.url": rest.url + "/registry"}}))
            assert cli_here("connectors", "create", str(config), worker=workers[tag]).returncode == 0
        run_here(workers["clean"], "shop")
        kill_at_each_step(workers["crashed"], "shop", SOURCE_STEPS)
        run_here(workers["crashed"], "shop")
        rows = {tag: [(r[1], r[3]) for r in topic_rows(tmp_path / tag / "lake", "shop-orders")] for tag in workers}
        assert len(rows["clean"]) == 2 and rows["crashed"] == rows["clean"]
        client = SchemaRegistryClient({"url": rest.url + "/registry"})
        assert client.get_versions("shop-orders-value") == [1]
    finally:
        rest.stop()
