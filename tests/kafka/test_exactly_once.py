"""A source producing to Kafka with transactions (exactly.once.source.support=enabled), killed after every
step of a batch and inside its producing tasks, then run again: what a read_committed consumer reads of
the topic, and the connector's offsets, are those of a run that never crashed.

Against the test bed's real Kafka broker, which aborts what an interrupted transaction wrote, hides it
from read_committed consumers and fences a producer whose transactional id a newer one took. Each test
has topics of its own (its records' topic and its batch markers topic). Only the killed runs are CLI
processes; the others run in this process (tests/conftest.py `run_here`).
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import pytest

from ingest.runtime.faults import SOURCE_STEPS
from tests.conftest import cli_here, run_here, write_worker
from tests.crash_kit import kill_at_each_step

pytestmark = pytest.mark.services
ROWS = 60  # first batch; the second adds as many
SCHEMA = "CREATE TABLE books (id INTEGER PRIMARY KEY AUTOINCREMENT, title TEXT NOT NULL, author TEXT)"


def _insert(db: Path, first: int, n: int) -> None:
    con = sqlite3.connect(db)
    con.executemany("INSERT INTO books (title, author) VALUES (?, ?)",
                    [(f"title {i}", f"author {i % 7}") for i in range(first, first + n)])
    con.commit()
    con.close()


def read_committed(bootstrap: str, topic: str) -> dict[int, list[tuple[bytes, bytes]]]:
    """What a read_committed consumer gets of `topic`: (key, value) of each partition, in offset order."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "eos-check", "isolation.level": "read_committed",
                         "enable.auto.commit": False, "enable.partition.eof": True})
    try:
        parts = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in parts])
        out: dict[int, list[tuple[bytes, bytes]]] = {}
        open_ = set(parts)
        deadline = time.monotonic() + 30
        while open_ and time.monotonic() < deadline:
            m = consumer.poll(0.2)
            if m is None:
                continue
            if m.error() is not None:
                open_.discard(m.partition())  # EOF: up to the last stable offset
                continue
            out.setdefault(m.partition(), []).append((m.key(), m.value()))
        assert not open_, f"partitions {sorted(open_)} of {topic} not read to their end within 30 s"
        return out
    finally:
        consumer.close()


class Setup:
    """A lake, a SQLite table, and a topic and batch markers topic of their own on the broker; the
    connector `eos` on them."""

    def __init__(self, root: Path, kafka, **connector: str):
        root.mkdir(parents=True)
        (root / "lake").mkdir()
        self.bootstrap = kafka.bootstrap
        self.prefix = kafka.unique_topic("eos") + "-"
        self.topic = self.prefix + "books"
        self.markers = kafka.unique_topic("markers")
        kafka.create_topic(self.topic, 3)
        self.db = root / "books.db"
        con = sqlite3.connect(self.db)
        con.execute(SCHEMA)
        con.close()
        _insert(self.db, 0, ROWS)
        self.worker = write_worker(root / "worker.properties", root / "lake", **{
            "topic.backend": "kafka", "kafka.bootstrap.servers": kafka.bootstrap,
            "lake.kafka.batch.markers.topic": self.markers,
            "key.converter": "org.apache.kafka.connect.json.JsonConverter", "key.converter.schemas.enable": "false",
            "value.converter": "org.apache.kafka.connect.json.JsonConverter"})
        config = root / "eos.json"
        config.write_text(json.dumps({"name": "eos", "config": {
            "connector.class": "io.confluent.connect.jdbc.JdbcSourceConnector", "tasks.max": "1",
            "connection.url": f"jdbc:sqlite:{self.db}", "table.whitelist": "books", "mode": "incrementing",
            "incrementing.column.name": "id", "topic.prefix": self.prefix, "exactly.once.support": "required",
            "transforms": "key", "transforms.key.type": "org.apache.kafka.connect.transforms.ValueToKey",
            "transforms.key.fields": "id", **connector}}))
        r = cli_here("connectors", "create", str(config), worker=self.worker)
        assert r.returncode == 0, r.stderr

    def run(self):
        """In this process (its reports); the killed runs are the crash kit's CLI processes."""
        return run_here(self.worker, "eos")

    def records(self) -> dict[int, list[tuple[bytes, bytes]]]:
        return read_committed(self.bootstrap, self.topic)

    def marker_count(self) -> int:
        return sum(len(v) for v in read_committed(self.bootstrap, self.markers).values())

    def offsets(self) -> list[dict]:
        r = cli_here("offsets", "list", "eos", worker=self.worker)
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)["offsets"]


def _two_batches(setup: Setup, crash: str | None) -> None:
    setup.run()
    _insert(setup.db, ROWS, ROWS)
    if crash:
        kill_at_each_step(setup.worker, "eos", [crash])
        assert any(report.resumed for report in setup.run())
    else:
        setup.run()


@pytest.fixture(scope="module")
def reference(tmp_path_factory, kafka):
    """The records and offsets of two batches that never crashed."""
    setup = Setup(tmp_path_factory.mktemp("eos") / "reference", kafka)
    _two_batches(setup, None)
    records = setup.records()
    assert sum(len(v) for v in records.values()) == 2 * ROWS
    return records, setup.offsets()


def test_killed_after_each_step_in_turn_then_run_again(tmp_path, kafka, reference):
    """The second batch killed after each step in turn, every run resuming it and killed one step further
    on (a process each), then a run that finishes it."""
    setup = Setup(tmp_path / "run", kafka)
    setup.run()
    _insert(setup.db, ROWS, ROWS)
    kill_at_each_step(setup.worker, "eos", SOURCE_STEPS, batch=2)
    setup.run()  # after the kill at 'done', nothing is left to resume
    assert (setup.records(), setup.offsets()) == reference


def test_killed_inside_a_producing_task_then_run_again(tmp_path, kafka, reference):
    setup = Setup(tmp_path / "run", kafka)
    _two_batches(setup, "produce:1")
    assert (setup.records(), setup.offsets()) == reference


def test_killed_between_transactions_of_one_task(tmp_path, kafka, reference):
    """transaction.boundary=interval commits a task's records in many transactions: killed after some of
    them, the run again skips exactly what they committed."""
    setup = Setup(tmp_path / "run", kafka, **{"transaction.boundary": "interval",
                                              "transaction.boundary.interval.ms": "0"})
    _two_batches(setup, "produce:25")
    assert (setup.records(), setup.offsets()) == reference
    assert setup.marker_count() > 2 * ROWS // 2  # one transaction per record or so: many markers


def test_connector_boundary_makes_one_transaction_per_batch(tmp_path, kafka, reference):
    setup = Setup(tmp_path / "run", kafka, **{"transaction.boundary": "connector"})
    _two_batches(setup, "produce:1")
    assert (setup.records(), setup.offsets()) == reference
    assert setup.marker_count() == 2  # one per batch


def test_a_fenced_producer_stops_with_a_clear_error(kafka):
    """A newer producer with the same transactional id (another run producing the same batch) fences the
    task's producer: its commit fails with a FatalError that says so, and a read_committed consumer sees
    nothing it wrote."""
    from confluent_kafka import Producer

    from ingest.errors import FatalError
    from ingest.topics.kafka import _FatalErrors, _Transaction

    topic, markers = kafka.unique_topic("fenced"), kafka.unique_topic("markers")
    kafka.create_topic(topic, 1)
    kafka.create_topic(markers, 1)
    tid = f"lakeconnect-eos:task-0-{topic}-0"
    batch = {"app_id": "eos:task-0", "version": 1, "markers_topic": markers, "interval_ms": None}
    first = Producer({"bootstrap.servers": kafka.bootstrap, "transactional.id": tid, "error_cb": _FatalErrors(tid)})
    tx = _Transaction(first, topic, 0, batch, tid)
    tx.begin()
    first.produce(topic, b"v1", b"k1", partition=0)
    first.flush(10)
    newer = Producer({"bootstrap.servers": kafka.bootstrap, "transactional.id": tid})
    newer.init_transactions(30)  # fences `first` and aborts its open transaction
    with pytest.raises(FatalError, match=f"transactional id '{tid}' was fenced by a newer producer"):
        tx.commit(2, {0: [2, 4]})
    assert read_committed(kafka.bootstrap, topic) == {}
    assert read_committed(kafka.bootstrap, markers) == {}


def test_a_batch_begun_before_markers_named_their_split_resumes_in_that_split(spark, kafka):
    """Markers without a "layout" were written when a batch's records split into tasks by a hash of their
    Kafka partition; tasks now take partition p % tasks. A batch such a release began and committed part
    of is run again in its old split, so each task skips what its committed transaction holds: every
    record once, in order."""
    from confluent_kafka import Producer
    from pyspark.sql import functions as F

    from ingest.topics.kafka import BatchMarkers, KafkaClients, KafkaTopic
    from ingest.topics.numbering import partition_choice

    tasks = spark.sparkContext.defaultParallelism
    assert tasks >= 2, "two tasks at least, or every split is the same"
    df = spark.createDataFrame([(i, f"key-{i}".encode(), f"value-{i}".encode()) for i in range(60)],
                               "seq long, key binary, value binary")
    types = {f.name: f.dataType for f in df.schema.fields}
    for n in range(3, 9):  # a partition count whose two splits differ
        hashed = (df.select(partition_choice(types, n, 1, "t").alias("partition"), "seq", "key", "value")
                  .repartition(min(n, tasks), "partition").sortWithinPartitions("partition", "seq")
                  .select("partition", "key", "value", F.spark_partition_id().alias("task")).collect())
        first_task = [r for r in hashed if r.task == 0]
        if {r.partition for r in first_task} != {p for p in range(n) if p % min(n, tasks) == 0}:
            break
    else:
        pytest.fail("no partition count in 3..8 splits differently by hash and by id")
    topic, markers = kafka.unique_topic("legacy"), kafka.unique_topic("legacy-markers")
    kafka.create_topic(topic, n)
    clients = KafkaClients.from_configs({"kafka.bootstrap.servers": kafka.bootstrap,
                                         "lake.kafka.batch.markers.topic": markers})
    since = BatchMarkers(clients, markers).end()
    # The earlier release's task 0 committed the first half of its records, with a marker saying so.
    done = first_task[:len(first_task) // 2]
    tid = f"lakeconnect-legacy-{topic}-0"
    producer = Producer({"bootstrap.servers": kafka.bootstrap, "transactional.id": tid})
    producer.init_transactions(30)
    producer.begin_transaction()
    counts: dict[str, list[int]] = {}
    for r in done:
        producer.produce(topic, bytes(r.value), bytes(r.key), partition=r.partition)
        c = counts.setdefault(str(r.partition), [0, 0])
        c[0] += 1
        c[1] += len(r.key) + len(r.value)
    producer.produce(markers, json.dumps({"records": len(done), "partitions": counts}).encode(),
                     json.dumps(["legacy", 1, topic, 0]).encode(), partition=0)
    producer.commit_transaction(30)

    result = KafkaTopic(clients, topic).append(df, app_id="legacy", version=1, markers_from=since)

    assert result.count == 60
    expected: dict[int, list[tuple[bytes, bytes]]] = {}
    for r in sorted(hashed, key=lambda r: int(r.value.decode().split("-")[1])):
        expected.setdefault(r.partition, []).append((bytes(r.key), bytes(r.value)))
    assert read_committed(kafka.bootstrap, topic) == expected
