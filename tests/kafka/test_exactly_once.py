"""A source producing to Kafka with transactions (exactly.once.source.support=enabled), killed after every
step of a batch and inside its producing tasks, then run again: the topic's committed records and the
connector's offsets are those of a run that never crashed.

The cluster is tests/kafka/fake_cluster.py, a test double of a broker that enforces transactions: the
test cluster the services start (librdkafka's mock) keeps aborted records visible and fences no
producer, so it cannot show the difference between exactly once and at least once. The double is
loaded by the product's own LAKECONNECT_KAFKA_CLIENT_MODULE hook, in the CLI's process and in Spark's
Python workers alike.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from ingest.runtime.faults import CRASH_ENV, CRASH_EXIT, SOURCE_STEPS
from tests.conftest import REPO, cli, write_worker
from tests.kafka import fake_cluster

TOPIC = "eos-books"
ROWS = 60  # first batch; the second adds as many
SCHEMA = "CREATE TABLE books (id INTEGER PRIMARY KEY AUTOINCREMENT, title TEXT NOT NULL, author TEXT)"


def _insert(db: Path, first: int, n: int) -> None:
    con = sqlite3.connect(db)
    con.executemany("INSERT INTO books (title, author) VALUES (?, ?)",
                    [(f"title {i}", f"author {i % 7}") for i in range(first, first + n)])
    con.commit()
    con.close()


class Setup:
    """A lake, a SQLite table and a fake cluster of their own; the connector `eos` on them."""

    def __init__(self, root: Path, **connector: str):
        root.mkdir(parents=True)
        (root / "lake").mkdir()
        self.cluster = root / "cluster"
        self.cluster.mkdir()
        fake_cluster.create_topic(self.cluster, TOPIC, 3)
        fake_cluster.create_topic(self.cluster, "connect-batch-markers", 1, {"cleanup.policy": "compact"})
        self.db = root / "books.db"
        con = sqlite3.connect(self.db)
        con.execute(SCHEMA)
        con.close()
        _insert(self.db, 0, ROWS)
        self.worker = write_worker(root / "worker.properties", root / "lake", **{
            "topic.backend": "kafka", "kafka.bootstrap.servers": "fake:9092",
            "key.converter": "org.apache.kafka.connect.json.JsonConverter", "key.converter.schemas.enable": "false",
            "value.converter": "org.apache.kafka.connect.json.JsonConverter"})
        self.env = {fake_cluster.DIR_ENV: str(self.cluster), "LAKECONNECT_KAFKA_CLIENT_MODULE": "tests.kafka.fake_cluster",
                    "PYTHONPATH": str(REPO)}
        config = root / "eos.json"
        config.write_text(json.dumps({"name": "eos", "config": {
            "connector.class": "io.confluent.connect.jdbc.JdbcSourceConnector", "tasks.max": "1",
            "connection.url": f"jdbc:sqlite:{self.db}", "table.whitelist": "books", "mode": "incrementing",
            "incrementing.column.name": "id", "topic.prefix": "eos-", "exactly.once.support": "required",
            "transforms": "key", "transforms.key.type": "org.apache.kafka.connect.transforms.ValueToKey",
            "transforms.key.fields": "id", **connector}}))
        r = cli("connectors", "create", str(config), worker=self.worker, env=self.env)
        assert r.returncode == 0, r.stderr

    def run(self, crash: str | None = None):
        env = {**self.env, **({CRASH_ENV: crash} if crash else {})}
        return cli("run", "eos", worker=self.worker, env=env)

    def records(self) -> dict[int, list[tuple[bytes, bytes]]]:
        """What a read_committed consumer gets: (key, value) of each partition, in offset order."""
        out: dict[int, list[tuple[bytes, bytes]]] = {}
        for r in fake_cluster.records(self.cluster, TOPIC):
            out.setdefault(r["partition"], []).append((r["key"], r["value"]))
        return out

    def offsets(self) -> list[dict]:
        r = cli("offsets", "list", "eos", worker=self.worker, env=self.env)
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)["offsets"]


def _two_batches(setup: Setup, crash: str | None) -> None:
    r = setup.run()
    assert r.returncode == 0, r.stderr
    _insert(setup.db, ROWS, ROWS)
    r = setup.run(crash)
    if crash:
        assert r.returncode == CRASH_EXIT, (crash, r.returncode, r.stderr[-3000:])
        r = setup.run()
    assert r.returncode == 0, r.stderr


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The records and offsets of two batches that never crashed."""
    setup = Setup(tmp_path_factory.mktemp("eos") / "reference")
    _two_batches(setup, None)
    records = setup.records()
    assert sum(len(v) for v in records.values()) == 2 * ROWS
    return records, setup.offsets()


def test_killed_after_each_step_in_turn_then_run_again(tmp_path, reference):
    """The second batch killed after each step in turn, every run resuming it and killed one step further
    on (a process each: 9 instead of 21), then a run that finishes it."""
    setup = Setup(tmp_path / "run")
    r = setup.run()
    assert r.returncode == 0, r.stderr
    _insert(setup.db, ROWS, ROWS)
    for step in SOURCE_STEPS:
        r = setup.run(step)
        assert r.returncode == CRASH_EXIT, (step, r.returncode, r.stderr[-3000:])
        assert f"killed after step '{step}'" in r.stderr, r.stderr[-3000:]
        if step != SOURCE_STEPS[0]:
            assert "resuming batch 2, planned by an interrupted run" in r.stderr, r.stderr[-3000:]
    r = setup.run()
    assert r.returncode == 0, r.stderr
    assert (setup.records(), setup.offsets()) == reference


def test_killed_inside_a_producing_task_then_run_again(tmp_path, reference):
    setup = Setup(tmp_path / "run")
    _two_batches(setup, "produce:1")
    assert (setup.records(), setup.offsets()) == reference


def test_killed_between_transactions_of_one_task(tmp_path, reference):
    """transaction.boundary=interval commits a task's records in many transactions: killed after some of
    them, the run again skips exactly what they committed."""
    setup = Setup(tmp_path / "run", **{"transaction.boundary": "interval", "transaction.boundary.interval.ms": "0"})
    _two_batches(setup, "produce:25")
    assert (setup.records(), setup.offsets()) == reference
    markers = fake_cluster.records(setup.cluster, "connect-batch-markers")
    assert len(markers) > 2 * ROWS // 2  # one transaction per record or so: many markers


def test_connector_boundary_makes_one_transaction_per_batch(tmp_path, reference):
    setup = Setup(tmp_path / "run", **{"transaction.boundary": "connector"})
    _two_batches(setup, "produce:1")
    assert (setup.records(), setup.offsets()) == reference
    markers = fake_cluster.records(setup.cluster, "connect-batch-markers")
    assert len(markers) == 2  # one per batch


def test_a_fenced_producer_stops_with_a_clear_error(tmp_path, monkeypatch):
    """A newer producer with the same transactional id (another run producing the same batch) fences the
    task's producer: its commit fails with a FatalError that says so, and nothing it wrote is visible."""
    from ingest.errors import FatalError
    from ingest.topics.kafka import _FatalErrors, _Transaction

    monkeypatch.setenv(fake_cluster.DIR_ENV, str(tmp_path))
    fake_cluster.create_topic(tmp_path, TOPIC, 1)
    fake_cluster.create_topic(tmp_path, "connect-batch-markers", 1)
    tid = "lakeconnect-eos:task-0-eos-books-0"
    batch = {"app_id": "eos:task-0", "version": 1, "markers_topic": "connect-batch-markers", "interval_ms": None}
    first = fake_cluster.Producer({"bootstrap.servers": "fake:9092", "transactional.id": tid,
                                   "error_cb": _FatalErrors(tid)})
    tx = _Transaction(first, TOPIC, 0, batch, tid)
    tx.begin()
    first.produce(TOPIC, b"v1", b"k1", partition=0)
    newer = fake_cluster.Producer({"bootstrap.servers": "fake:9092", "transactional.id": tid})
    newer.init_transactions(10)
    with pytest.raises(FatalError, match=f"transactional id '{tid}' was fenced by a newer producer"):
        first.produce(TOPIC, b"v2", b"k2", partition=0)
        first.flush(10)
        tx.commit(2, {0: [2, 4]})
    assert fake_cluster.records(tmp_path, TOPIC) == []
    assert fake_cluster.records(tmp_path, "connect-batch-markers") == []
