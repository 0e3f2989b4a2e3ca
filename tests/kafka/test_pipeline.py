"""Connectors with their topics in a Kafka cluster (`topic.backend=kafka`), through the CLI as a user
runs them, against the test bed's real Kafka broker (tests/services/up.sh):

- the book's S3 sink walk-through (ch. 5) reading its `orders` topic from Kafka writes the same objects
  as with Delta topics, and its positions are its consumer group's, `connect-<name>`: the connector
  re-created on another lake continues where the group is;
- the book's JDBC source (SQLite) produces to Kafka the same keys and values it writes to a Delta topic,
  and the S3 sink carries them on to the bucket (JDBC → Kafka → S3);
- the topic tools work against the cluster.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from pathlib import Path

import pytest

from ingest.topics import partition_for_key
from ingest.topics.kafka import KafkaClients, group_offsets
from tests.conftest import cli, cli_here, write_worker
from tests.s3._book import BOOK_RECORDS, S3SINK_FIELD, book_config, create, order
from tests.jdbc.test_source_sqlite import BOOKS
from tests.s3.test_book import FIELD_OBJECTS, aws_env, s3_objects

pytestmark = pytest.mark.services


def kafka_worker(root: Path, kafka, **extra: str) -> Path:
    lake = root / "lake"
    lake.mkdir(parents=True)
    return write_worker(root / "worker.properties", lake, **{
        "topic.backend": "kafka", "kafka.bootstrap.servers": kafka.bootstrap, **extra})


def produce(worker: Path, topic: str, records: list[str]) -> None:
    r = cli_here("topics", "produce", topic, "--property", "parse.key=true", worker=worker,
            stdin="".join(line + "\n" for line in records))
    assert r.returncode == 0, r.stderr


def lake_offsets(worker: Path, name: str) -> dict[int, int]:
    r = cli_here("offsets", "list", name, worker=worker)
    assert r.returncode == 0, r.stderr
    return {o["partition"]["kafka_partition"]: o["offset"]["kafka_offset"] for o in json.loads(r.stdout)["offsets"]}


def test_book_s3_sink_on_kafka_and_its_consumer_group(tmp_path, kafka, bucket):
    name, endpoint, client = bucket
    topic = kafka.unique_topic("orders")
    kafka.create_topic(topic, 5)
    worker = kafka_worker(tmp_path / "first", kafka)
    produce(worker, topic, BOOK_RECORDS)
    secret = f"lc-secret-{uuid.uuid4().hex}"
    config = book_config(S3SINK_FIELD, bucket=name, region="us-east-1", access_key="testing", secret_key=secret,
                         topics=topic)
    create(worker, tmp_path, config)
    r = cli("run", "s3sink-field", worker=worker, env=aws_env(endpoint))
    assert r.returncode == 0, r.stderr
    expected = {key.replace("orders", topic): body for key, body in FIELD_OBJECTS.items()}
    assert s3_objects(client, name) == expected  # the keys land where Kafka's partitioner puts them
    assert lake_offsets(worker, "s3sink-field") == {3: 3}
    clients = KafkaClients.from_configs({"kafka.bootstrap.servers": kafka.bootstrap})
    group = "connect-s3sink-field"
    assert group_offsets(clients, group, [(topic, p) for p in range(5)]) == {(topic, 3): 3}
    assert secret not in r.stdout + r.stderr

    # The connector re-created with the same name on another lake: its group says where it was, so
    # partition 3 is not written again; partition 4 gets its two more records and its object.
    produce(worker, topic, [order(1, "Kafka The Definitive Guide", 1), order(1, "Kafka The Definitive Guide", 3)])
    again = kafka_worker(tmp_path / "second", kafka)
    create(again, tmp_path, config)
    r = cli("run", "s3sink-field", worker=again, env=aws_env(endpoint))
    assert r.returncode == 0, r.stderr
    objects = s3_objects(client, name)
    assert set(objects) - set(expected) == {f"topics/{topic}/id=1/{topic}+4+0000000000.json",
                                            f"topics/{topic}/id=1/{topic}+4+0000000000.keys.bin"}
    assert {k: objects[k] for k in expected} == expected
    assert "task 4: batch 1 committed 3 records" in r.stdout and "task 3: nothing new" in r.stdout
    assert group_offsets(clients, group, [(topic, p) for p in range(5)]) == {(topic, 3): 3, (topic, 4): 3}




def _jdbc(root: Path, worker: Path, db: Path, prefix: str) -> None:
    f = root / "jdbc.json"
    f.write_text(json.dumps({"name": "books", "config": {
        "connector.class": "io.confluent.connect.jdbc.JdbcSourceConnector", "tasks.max": "1",
        "connection.url": f"jdbc:sqlite:{db}", "table.whitelist": "kafka_books", "mode": "incrementing",
        "incrementing.column.name": "id", "topic.prefix": prefix,
        "value.converter": "org.apache.kafka.connect.json.JsonConverter", "value.converter.schemas.enable": "true",
        "key.converter": "org.apache.kafka.connect.json.JsonConverter", "key.converter.schemas.enable": "false",
        "transforms": "key", "transforms.key.type": "org.apache.kafka.connect.transforms.ValueToKey",
        "transforms.key.fields": "id"}}))
    r = cli_here("connectors", "create", str(f), worker=worker)
    assert r.returncode == 0, r.stderr


def _records(worker: Path, topic: str) -> list[str]:
    r = cli_here("topics", "consume", topic, "--from-beginning", "--property", "print.key=true",
                 "--property", "print.partition=true", worker=worker)
    assert r.returncode == 0, r.stderr
    return r.stdout.splitlines()


def test_jdbc_to_kafka_to_s3(tmp_path, kafka, bucket):
    name, endpoint, client = bucket
    db = tmp_path / "inventory.db"
    con = sqlite3.connect(db)
    con.executescript(BOOKS)
    con.close()
    prefix = kafka.unique_topic("books") + "-"
    topic = prefix + "kafka_books"
    kafka.create_topic(topic, 3)
    json_values = {"value.converter": "org.apache.kafka.connect.json.JsonConverter",
                   "lake.allowed.paths": str(tmp_path)}  # the database is shared by both lakes
    worker = kafka_worker(tmp_path / "kafka", kafka, **json_values)
    _jdbc(tmp_path / "kafka", worker, db, prefix)
    r = cli("run", "books", worker=worker)
    assert r.returncode == 0, r.stderr

    # The same records as the connector writes to a Delta topic of 3 partitions: keys, values, partitions.
    delta = tmp_path / "delta"
    (delta / "lake").mkdir(parents=True)
    delta_worker = write_worker(delta / "worker.properties", delta / "lake", **json_values)
    assert cli_here("topics", "create", topic, "--partitions", "3", worker=delta_worker).returncode == 0
    _jdbc(delta, delta_worker, db, prefix)
    assert cli_here("run", "books", worker=delta_worker).returncode == 0
    on_kafka = _records(worker, topic)
    assert len(on_kafka) == 2 and sorted(on_kafka) == sorted(_records(delta_worker, topic))
    assert '"title":"Kafka Connect"' in on_kafka[0] + on_kafka[1]

    # One more row: the next batch produces it alone (the offsets were committed after delivery).
    con = sqlite3.connect(db)
    con.execute("INSERT INTO kafka_books (title, subtitle, published) VALUES ('Mastering Kafka Streams', "
                "'Building real-time data systems by example', '2021-02-26')")
    con.commit()
    con.close()
    assert cli_here("run", "books", worker=worker).returncode == 0
    assert len(_records(worker, topic)) == 3

    sink = book_config(S3SINK_FIELD, bucket=name, region="us-east-1", access_key="testing", secret_key="unused",
                       topics=topic, flush_size="1", tasks_max="1")
    sink.update({"name": "books-s3", "key.converter": "org.apache.kafka.connect.storage.StringConverter",
                 "keys.format.class": "io.confluent.connect.s3.format.json.JsonFormat", "store.kafka.keys": "false"})
    create(worker, tmp_path, sink)
    r = cli("run", "books-s3", worker=worker, env=aws_env(endpoint))
    assert r.returncode == 0, r.stderr
    objects = s3_objects(client, name)
    assert len(objects) == 3 and all(k.startswith(f"topics/{topic}/id=") for k in objects)
    titles = sorted(json.loads(body)["title"] for body in objects.values())
    assert titles == ["Kafka Connect", "Kafka The Definitive Guide", "Mastering Kafka Streams"]


def test_topic_tools_on_kafka(tmp_path, kafka):
    topic = kafka.unique_topic("tools")
    kafka.create_topic(topic, 2)
    worker = kafka_worker(tmp_path, kafka)
    produce(worker, topic, ["a\tone", "b\ttwo", "a\tthree"])
    r = cli_here("topics", "list", worker=worker)
    assert r.returncode == 0 and topic in r.stdout.splitlines()
    r = cli_here("topics", "describe", topic, worker=worker)
    assert r.returncode == 0, r.stderr
    assert f"Topic: {topic}\tPartitionCount: 2" in r.stdout
    ends = [int(line.rsplit("EndOffset: ", 1)[1]) for line in r.stdout.splitlines() if "EndOffset" in line]
    expected = [0, 0]
    for key in (b"a", b"b", b"a"):
        expected[partition_for_key(key, 2)] += 1
    assert ends == expected
    r = cli_here("topics", "consume", topic, "--from-beginning", "--property", "print.key=true", worker=worker)
    assert r.returncode == 0, r.stderr
    assert sorted(r.stdout.splitlines()) == ["a\tone", "a\tthree", "b\ttwo"]
    r = cli_here("topics", "create", topic, "--partitions", "2", worker=worker)
    assert r.returncode != 0 and f"topic '{topic}' already exists" in r.stderr


def test_topics_are_created_with_the_partitions_configs_and_replicas_asked(tmp_path, kafka):
    """Through the broker's admin API: the console tool's, and a source's KIP-158 topic creation."""
    from confluent_kafka.admin import ConfigResource

    worker = kafka_worker(tmp_path, kafka)
    seven = kafka.unique_topic("seven")
    r = cli_here("topics", "create", seven, "--partitions", "7", "--config", "cleanup.policy=compact", worker=worker)
    assert r.returncode == 0, r.stderr
    r = cli_here("topics", "describe", seven, worker=worker)
    assert r.returncode == 0 and f"Topic: {seven}\tPartitionCount: 7" in r.stdout, r.stdout + r.stderr
    r = cli_here("topics", "create", seven, "--partitions", "7", "--if-not-exists", worker=worker)
    assert r.returncode == 0, r.stderr
    admin = kafka.admin()
    [described] = admin.describe_configs([ConfigResource("topic", seven)]).values()
    assert described.result(30)["cleanup.policy"].value == "compact"

    # A replication factor the one-broker cluster cannot hold: refused, naming the setting.
    r = cli_here("topics", "create", kafka.unique_topic("three"), "--replication-factor", "3", worker=worker)
    assert r.returncode == 2 and "--replication-factor" in r.stderr and "replication factor 3" in r.stderr, r.stderr

    # A source creates its topics with topic.creation.default.* (partitions, replicas, topic configs).
    (tmp_path / "in.txt").write_text("a\nb\n")
    prefix = kafka.unique_topic("lines")
    for name, replicas, code in ((prefix + "-one", "1", 0), (prefix + "-three", "3", 2)):
        config = tmp_path / f"{name}.json"
        config.write_text(json.dumps({"name": name, "config": {
            "connector.class": "FileStreamSource", "file": str(tmp_path / "in.txt"), "topic": name,
            "topic.creation.default.partitions": "3", "topic.creation.default.replication.factor": replicas,
            "topic.creation.default.retention.ms": "86400000"}}))
        assert cli_here("connectors", "create", str(config), worker=worker).returncode == 0
        r = cli("run", name, worker=worker)
        assert r.returncode == code, r.stderr
        if code:
            assert "topic.creation.default.replication.factor" in r.stderr, r.stderr
            assert name not in admin.list_topics(timeout=10).topics
            continue
        md = admin.list_topics(name, timeout=10).topics[name]
        assert len(md.partitions) == 3 and all(len(p.replicas) == 1 for p in md.partitions.values())
        [described] = admin.describe_configs([ConfigResource("topic", name)]).values()
        assert described.result(30)["retention.ms"].value == "86400000"


def test_unreachable_brokers_fail_the_task_with_the_reason(tmp_path):
    (tmp_path / "lake").mkdir()
    worker = write_worker(tmp_path / "worker.properties", tmp_path / "lake", **{
        "topic.backend": "kafka", "kafka.bootstrap.servers": "127.0.0.1:1", "kafka.default.api.timeout.ms": "3000"})
    (tmp_path / "in.txt").write_text("a line\n")
    config = tmp_path / "fs.json"
    config.write_text(json.dumps({"name": "fs", "config": {
        "connector.class": "FileStreamSource", "file": str(tmp_path / "in.txt"), "topic": "lines"}}))
    assert cli_here("connectors", "create", str(config), worker=worker).returncode == 0
    r = cli("run", "fs", worker=worker)
    assert r.returncode == 75, r.stderr  # worth another try later: a scheduler retries it
    assert "cannot reach the Kafka cluster at 127.0.0.1:1" in r.stderr and "kafka.bootstrap.servers" in r.stderr
    status = json.loads(cli_here("connectors", "status", "fs", worker=worker).stdout)
    assert status["tasks"][0]["state"] == "FAILED"
    assert "cannot reach the Kafka cluster at 127.0.0.1:1" in status["tasks"][0]["trace"]

    # With errors.retry.timeout the task tries again for that long, then fails the same way.
    config.write_text(json.dumps({"name": "fs", "config": {
        "connector.class": "FileStreamSource", "file": str(tmp_path / "in.txt"), "topic": "lines",
        "errors.retry.timeout": "1500", "errors.retry.delay.max.ms": "200"}}))
    assert cli_here("connectors", "update", str(config), worker=worker).returncode == 0
    r = cli("run", "fs", worker=worker)
    assert r.returncode == 75, r.stderr
    assert "(KAFKA_PRODUCE) still failing after" in r.stderr and "kafka.bootstrap.servers" in r.stderr, r.stderr[-2000:]
    assert json.loads(cli_here("offsets", "list", "fs", worker=worker).stdout)["offsets"] == []  # nothing committed
