"""The pipeline through Airflow: a JDBC source's DAG (SQLite) → its topic → the S3 sink's DAG (moto),
each run by `dag.test()` against the SQLite metadata database. The sink's DAG is scheduled on the topic's
asset; the source's run records an event of that asset, which queues a run of the sink's DAG (what the
scheduler turns into a run), and that run writes the new records to the bucket."""

from __future__ import annotations

import json
import sqlite3
import uuid

import boto3
import pytest

from tests.conftest import REPO

SECRET = "dag-pipeline-s3cr3t-41"

pytestmark = [pytest.mark.slow, pytest.mark.services]


def _books(db, *titles):
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE IF NOT EXISTS kafka_books (id INTEGER PRIMARY KEY AUTOINCREMENT, title TEXT NOT NULL)")
    con.executemany("INSERT INTO kafka_books (title) VALUES (?)", [(t,) for t in titles])
    con.commit()
    con.close()


def _objects(client, bucket) -> dict[str, list[dict]]:
    out = {}
    for o in client.list_objects_v2(Bucket=bucket).get("Contents", []):
        body = client.get_object(Bucket=bucket, Key=o["Key"])["Body"].read().decode()
        out[o["Key"]] = [json.loads(line) for line in body.splitlines()]
    return out


def test_jdbc_to_topic_to_s3_through_airflow(project, airflow_db, s3_endpoint, caplog):
    from airflow.models.asset import AssetDagRunQueue, AssetEvent
    from airflow.utils.session import create_session
    from sqlalchemy import select

    db = project.root / "inventory.db"
    _books(db, "Kafka Connect", "Kafka The Definitive Guide", "Mastering Kafka Streams and ksqlDB")
    bucket = f"lc-dag-{uuid.uuid4().hex[:10]}"
    client = boto3.client("s3", endpoint_url=s3_endpoint, region_name="us-east-1")
    client.create_bucket(Bucket=bucket)
    json_values = {"value.converter": "org.apache.kafka.connect.json.JsonConverter",
                   "value.converter.schemas.enable": "false"}
    project.connector("books-jdbc", **{
        "connector.class": "io.confluent.connect.jdbc.JdbcSourceConnector", "tasks.max": "1",
        "connection.url": f"jdbc:sqlite:{db}", "mode": "incrementing", "incrementing.column.name": "id",
        "table.whitelist": "kafka_books", "topic.prefix": "dag-", "poll.interval.ms": "60000", **json_values})
    project.connector("books-s3", **{
        "connector.class": "io.confluent.connect.s3.S3SinkConnector", "tasks.max": "1", "topics": "dag-kafka_books",
        "s3.bucket.name": bucket, "s3.region": "us-east-1", "store.url": s3_endpoint,
        "aws.access.key.id": "testing", "aws.secret.access.key": SECRET,
        "format.class": "io.confluent.connect.s3.format.json.JsonFormat", "flush.size": "3", **json_values})
    dags = project.dags()
    source, sink = dags["lakeconnect__books-jdbc"], dags["lakeconnect__books-s3"]

    run = source.test()
    assert run.state == "success", {ti.task_id: ti.state for ti in run.get_task_instances()}
    topic = f"{project.lake.resolve().as_uri()}/topics/dag-kafka_books"
    with create_session() as session:
        events = session.scalars(select(AssetEvent).where(AssetEvent.source_dag_id == source.dag_id)).all()
        assert [e.asset.uri for e in events] == [topic]
        queued = session.scalars(select(AssetDagRunQueue.target_dag_id)).all()
        assert sink.dag_id in queued  # the scheduler's queue: the sink's DAG runs next

    caplog.clear()
    run = sink.test()
    assert run.state == "success", {ti.task_id: ti.state for ti in run.get_task_instances()}
    objects = _objects(client, bucket)
    assert list(objects) == ["topics/dag-kafka_books/partition=0/dag-kafka_books+0+0000000000.json"]
    assert [r["title"] for r in next(iter(objects.values()))] == [
        "Kafka Connect", "Kafka The Definitive Guide", "Mastering Kafka Streams and ksqlDB"]
    # The records' messages: caplog's formatter is whatever Airflow's logging set-up left (JSON in some
    # orders of the tests, which escapes the quotes).
    messages = "\n".join(r.getMessage() for r in caplog.records)
    assert '"outcome": "COMMITTED"' in messages and "run books-s3 --task 0" in messages
    assert SECRET not in messages and SECRET not in caplog.text  # the task logs (the runs' own output included)

    # Nothing new: the source's run records no asset event, so the sink's DAG is not queued again.
    run = source.test(run_conf={"action": "run_once"})
    assert run.state == "success"
    with create_session() as session:
        events = session.scalars(select(AssetEvent).where(AssetEvent.source_dag_id == source.dag_id)).all()
        assert len(events) == 1


def test_the_example_connectors_get_dags_that_run(project, airflow_db):
    """conf/connectors/ as shipped (the book's FileStream pair), their /tmp paths moved into the test's
    directory: each gets a DAG, the source's run feeds the sink's, the file comes out as the book shows."""
    source_file, sink_file = project.root / "source.txt", project.root / "sink.out"
    for example in sorted((REPO / "conf" / "connectors").glob("*.json")):
        text = example.read_text().replace("/tmp/source.txt", str(source_file)).replace("/tmp/sink.out", str(sink_file))
        (project.connectors / example.name).write_text(text)
    source_file.write_text("First record\nAnother record\nThird record\n")
    dags = project.dags()
    assert {"lakeconnect__file-source", "lakeconnect__file-sink"} <= set(dags)
    for name in ("file-source", "file-sink"):
        run = dags[f"lakeconnect__{name}"].test()
        assert run.state == "success", {ti.task_id: ti.state for ti in run.get_task_instances()}
    assert sink_file.read_text() == "First record\nAnother record\nThird record\n"
