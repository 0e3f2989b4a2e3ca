"""The JDBC source, the MySQL CDC snapshot, the S3 sink and the Delta table sink run end to end on a Spark
standalone cluster (a master and two workers, each a process of its own): every run is a CLI process
whose worker file sets `spark.master` to the cluster, so its tasks run in executors that share nothing
with the driver but what Spark ships them and the lake's directory. Each test checks the whole output
against the exact records a local run writes, and that the run's tasks finished on the executors.
"""

from __future__ import annotations

import json
import uuid

import boto3
import pytest
import sqlalchemy as sa

from tests.cluster.conftest import cluster_worker, create_connector, run_on_cluster
from tests.conftest import cli, write_worker
from tests.delta_sink._support import order, sink_config, table_columns, table_rows
from tests.jdbc._books import create_books
from tests.mysql._cdc import BOOK_ROWS, BOOK_TABLE, Db, comparable, connector_config, records
from tests.runtime.helpers import topic_rows
from tests.s3._book import BOOK_RECORDS, S3SINK_FIELD, book_config
from tests.s3.test_book import FIELD_OBJECTS, aws_env, offsets, s3_objects

pytestmark = pytest.mark.serial  # one cluster, both cores: see tests/cluster/conftest.py

JSON = "org.apache.kafka.connect.json.JsonConverter"
STRING = "org.apache.kafka.connect.storage.StringConverter"
BOOKS_SCHEMA = {  # the book's bulk schema as PostgreSQL's table gives it: SERIAL id, TIMESTAMP NOT NULL
    "type": "struct", "fields": [
        {"type": "int32", "optional": False, "field": "id"},
        {"type": "string", "optional": False, "field": "title"},
        {"type": "string", "optional": False, "field": "subtitle"},
        {"type": "int32", "optional": False, "name": "org.apache.kafka.connect.data.Date", "version": 1,
         "field": "published"},
        {"type": "int64", "optional": False, "name": "org.apache.kafka.connect.data.Timestamp", "version": 1,
         "field": "timestamp"}],
    "optional": False, "name": "kafka_books"}


@pytest.fixture
def books(services):
    """A fresh PostgreSQL schema holding the book's kafka_books table: (JDBC URL, schema)."""
    schema = f"lc_cluster_{uuid.uuid4().hex[:10]}"
    admin = sa.create_engine(services["LAKECONNECT_TEST_POSTGRES_URL"])
    with admin.begin() as c:
        c.exec_driver_sql(f"CREATE SCHEMA {schema}")
    engine = sa.create_engine(services["LAKECONNECT_TEST_POSTGRES_URL"],
                              connect_args={"options": f"-csearch_path={schema}"})
    create_books(engine, "postgres")
    yield services["LAKECONNECT_TEST_POSTGRES_JDBC"], schema
    engine.dispose()
    with admin.begin() as c:
        c.exec_driver_sql(f"DROP SCHEMA {schema} CASCADE")
    admin.dispose()


def test_jdbc_source_reads_postgres_on_the_executors(tmp_path, services, spark_cluster, standalone, books):
    """Spark's JDBC reader runs in the executors: the PostgreSQL driver jar must reach them."""
    jdbc, schema = books
    lake = tmp_path / "lake"
    lake.mkdir()
    worker = cluster_worker(tmp_path / "worker.properties", lake, spark_cluster, **{"value.converter": JSON})
    create_connector(worker, tmp_path, {
        "name": "pg-bulk", "connector.class": "io.confluent.connect.jdbc.JdbcSourceConnector", "tasks.max": "1",
        "value.converter": JSON, "value.converter.schemas.enable": "true", "connection.url": jdbc,
        "connection.user": services.get("LAKECONNECT_TEST_POSTGRES_USER", ""),
        "connection.password": services.get("LAKECONNECT_TEST_POSTGRES_PASSWORD", ""),
        "table.whitelist": "kafka_books", "schema.pattern": schema, "topic.prefix": "pg-bulk-", "mode": "bulk"})
    run_on_cluster(standalone, "run", "pg-bulk", worker=worker)

    rows = topic_rows(lake, "pg-bulk-kafka_books")
    assert [(p, o, k) for p, o, k, _, _ in rows] == [(0, 0, None), (0, 1, None)]
    assert [json.loads(v) for _, _, _, v, _ in rows] == [
        {"schema": BOOKS_SCHEMA, "payload": {"id": 1, "title": "Kafka Connect",
                                             "subtitle": "Build and Run Data Pipelines", "published": 19631,
                                             "timestamp": 1656234290000}},
        {"schema": BOOKS_SCHEMA, "payload": {"id": 2, "title": "Kafka The Definitive Guide",
                                             "subtitle": "Real-time Data and Stream Processing at Scale",
                                             "published": 17354, "timestamp": 1656234290000}}]


@pytest.fixture
def book_db(services):
    """A database of a name no other test uses, holding the book's kafka_books and its two rows: the
    snapshot of each run must see the same rows, whatever else writes to the server meanwhile."""
    db = Db(services).fresh(f"lc_cluster_{uuid.uuid4().hex[:10]}")
    db(BOOK_TABLE, BOOK_ROWS)
    yield db
    db(f"DROP DATABASE IF EXISTS `{db.database}`")
    db.close()


def snapshot_records(lake, topic: str) -> list[tuple]:
    """The topic's records as `comparable` gives them, without the binlog position the snapshot read
    at: two runs one after the other see a binlog that other databases' changes moved on."""
    out = []
    for partition, offset, key, value, headers in comparable(lake, topic):
        v = json.loads(value)
        source = v["payload"]["source"]
        assert source["file"].startswith("mariadb-bin.") and source["pos"] > 0, source
        del source["file"], source["pos"]
        out.append((partition, offset, key, json.dumps(v, sort_keys=True), headers))
    return out


def test_cdc_snapshot_equals_a_local_run(tmp_path, services, spark_cluster, standalone, book_db):
    """The MySQL connector's initial snapshot on the cluster writes, byte for byte but for the clock's
    times, the records the same connector writes with a local Spark."""
    name = book_db.database
    topic = f"dbserver1.{name}.kafka_books"
    config = {"name": "books-cdc", **connector_config(services, **{
        "database.include.list": name, "table.include.list": f"{name}.kafka_books"})}
    lakes = {}
    for where in ("cluster", "local"):
        base = tmp_path / where
        lake = base / "lake"
        lake.mkdir(parents=True)
        path = base / "worker.properties"
        worker = cluster_worker(path, lake, spark_cluster) if where == "cluster" else write_worker(path, lake)
        create_connector(worker, base, config)
        if where == "cluster":
            run_on_cluster(standalone, "--debug", "run", "books-cdc", worker=worker)
        else:
            r = cli("--debug", "run", "books-cdc", worker=worker)
            assert r.returncode == 0, r.stdout + r.stderr
        lakes[where] = lake

    assert snapshot_records(lakes["cluster"], topic) == snapshot_records(lakes["local"], topic)
    snap = records(lakes["cluster"], topic)
    assert [json.loads(k)["payload"] for k, _ in snap] == [{"id": 1}, {"id": 2}]
    values = [json.loads(v)["payload"] for _, v in snap]
    assert [(v["op"], v["before"], v["source"]["snapshot"]) for v in values] == [("r", None, "first"),
                                                                                  ("r", None, "last")]
    assert [(v["source"]["db"], v["source"]["table"]) for v in values] == [(name, "kafka_books")] * 2
    assert [v["after"] for v in values] == [
        {"id": 1, "title": "Kafka Connect", "subtitle": "Build and Run Data Pipelines", "published": 19631},
        {"id": 2, "title": "Kafka The Definitive Guide",
         "subtitle": "Real-time Data and Stream Processing at Scale", "published": 17354}]


def test_s3_sink_writes_the_books_objects_from_the_executors(tmp_path, spark_cluster, standalone, s3_endpoint):
    """The S3 sink's writers run in the executors: they reach the bucket with what the connector's
    config and the driver's plan give them, not with the driver's environment."""
    client = boto3.client("s3", endpoint_url=s3_endpoint, region_name="us-east-1")
    bucket = f"lc-cluster-{uuid.uuid4().hex[:12]}"
    client.create_bucket(Bucket=bucket)
    lake = tmp_path / "lake"
    lake.mkdir()
    worker = cluster_worker(tmp_path / "worker.properties", lake, spark_cluster)
    run_on_cluster(standalone, "topics", "produce", "orders", "--partitions", "5", "--property", "parse.key=true",
                   worker=worker, stdin="".join(line + "\n" for line in BOOK_RECORDS))
    create_connector(worker, tmp_path, book_config(S3SINK_FIELD, bucket=bucket, region="us-east-1",
                                                   access_key="testing", secret_key="testing"))
    run_on_cluster(standalone, "run", "s3sink-field", worker=worker, env=aws_env(s3_endpoint))
    assert s3_objects(client, bucket) == FIELD_OBJECTS
    assert offsets(worker, "s3sink-field") == {3: 3}


def test_delta_sink_appends_every_record_from_the_executors(tmp_path, spark_cluster, standalone):
    """The Delta table sink writes its table's files in the executors (the lake is shared storage) and
    commits them from the driver: every record becomes its row, with its topic coordinates."""
    lake = tmp_path / "lake"
    lake.mkdir()
    worker = cluster_worker(tmp_path / "worker.properties", lake, spark_cluster)
    lines = "".join(f"k{i % 5}\t{order(i, f'book {i}', i * 10)}\n" for i in range(40))
    run_on_cluster(standalone, "topics", "produce", "orders", "--partitions", "2", "--property", "parse.key=true",
                   worker=worker, stdin=lines)
    create_connector(worker, tmp_path, sink_config(topics="orders", **{"key.converter": STRING}))
    run_on_cluster(standalone, "run", "lake", worker=worker)

    assert table_columns(worker, "orders") == ["id", "product", "quantity", "__connect_topic",
                                               "__connect_partition", "__connect_offset", "__connect_timestamp"]
    expected = sorted((p["id"], p["product"], p["quantity"], "orders", partition, offset)
                      for partition, offset, _, value, _ in topic_rows(lake, "orders")
                      for p in [json.loads(value)["payload"]])
    assert [e[0] for e in expected] == list(range(40))
    assert {e[4] for e in expected} == {0, 1}
    assert table_rows(worker, "orders", drop=("__connect_timestamp",)) == expected
