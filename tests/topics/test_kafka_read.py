"""Reading offset ranges of Kafka partitions into Spark, against the test bed's real Kafka broker.

Each test's topics are new, made through the admin API with 4 partitions. What a broker cannot be made
to do on request is shown with a consumer double put in place of `kafka_read.new_consumer`; those tests
say so.
"""

from __future__ import annotations

import math
import time
import uuid
from dataclasses import dataclass, field

import pytest
from confluent_kafka import TIMESTAMP_CREATE_TIME, KafkaError, Producer, TopicPartition

from ingest.errors import FatalError, RetriableError, StateError
from ingest.topics import TopicTable, kafka_read
from ingest.topics.kafka_read import (
    RangeChunk,
    _rounds,
    consumer_config,
    group,
    read_kafka,
    read_range,
    split,
    watermarks,
)

N = 1000
BASE_MS = 1_700_000_000_000


def _topic(client=None, partitions: int = 4) -> str:
    """A new topic's name; with `client`, the topic is made on its broker."""
    from confluent_kafka.admin import AdminClient, NewTopic

    name = f"kafka-read-{uuid.uuid4().hex}"
    if client is not None:
        admin = AdminClient(client)  # held until the answer: a client collected meanwhile drops the request
        # Kept for ever: the records' timestamps are from 2023, and with the broker's 7-day retention a rolled
        # segment of them went at its next retention check (every 5 minutes), mid-module.
        admin.create_topics([NewTopic(name, partitions, 1, config={"retention.ms": "-1"})])[name].result(30)
    return name


@pytest.fixture(scope="module")
def client(kafka_bootstrap) -> dict[str, str]:
    return {"bootstrap.servers": kafka_bootstrap}


def _produce(client, topic, records) -> list[dict]:
    """Produce (kwargs of Producer.produce) in order; each record's kwargs with its partition and offset."""
    producer = Producer({**client, "linger.ms": 5})
    delivered: list = []
    for kwargs in records:
        producer.produce(topic, **kwargs, on_delivery=lambda err, msg, kw=kwargs: delivered.append((err, msg, kw)))
    assert producer.flush(30) == 0
    assert [err for err, _, _ in delivered if err is not None] == []
    return [{**kw, "partition": msg.partition(), "offset": msg.offset()} for _, msg, kw in delivered]


@pytest.fixture(scope="module")
def produced(client) -> tuple[str, list[dict]]:
    """N keyed records with timestamps; most with headers (one of them valueless), some with none, a few
    tombstones."""
    topic = _topic(client)
    records = [
        {
            "key": f"key-{i % 37}".encode(),
            "value": None if i % 97 == 0 else f"value-{i}".encode(),
            "headers": None if i % 10 == 0 else [("seq", str(i).encode()), ("empty", None)],
            "timestamp": BASE_MS + i,
        }
        for i in range(N)
    ]
    return topic, _produce(client, topic, records)


def _expected(records, ranges):
    out = {}
    for r in records:
        start, end = ranges.get(r["partition"], (0, 0))
        if start <= r["offset"] < end:
            headers = [(k, v) for k, v in r["headers"] or ()]
            out[(r["partition"], r["offset"])] = (r["key"], r["value"], headers, r["timestamp"], "CreateTime")
    return out


def _read(df):
    rows = df.selectExpr("*", "unix_millis(timestamp) AS ms").collect()
    return {(r.partition, r.offset): (r.key, r.value, [(h.key, h.value) for h in r.headers], r.ms, r.timestamp_type)
            for r in rows}, rows


def test_reads_every_column_in_parallel_chunks(spark, client, produced, tmp_path):
    topic, records = produced
    marks = watermarks(topic, client)
    counts = {p: sum(r["partition"] == p for r in records) for p in range(4)}
    assert marks == {p: (0, counts[p]) for p in range(4)}

    ranges = {p: (0, high) for p, (_, high) in marks.items()}
    # 12 chunks of 4 partitions in 3 tasks: each task's consumer reads several partitions at once, and
    # a partition's chunks one after the other
    assert sum(math.ceil(c / 100) for c in counts.values()) > 8
    df = read_kafka(spark, topic, ranges, client, chunk=100, timeout=10, tasks=3)
    assert df.rdd.getNumPartitions() == 3
    got, rows = _read(df)
    assert len(rows) == N and got == _expected(records, ranges)
    assert {r.topic for r in rows} == {topic}
    assert {r.key_schema_id for r in rows} == {r.value_schema_id for r in rows} == {None}

    delta = TopicTable(str(tmp_path), "t", spark=spark)
    delta.create(4)
    assert df.schema == delta.read({0: (0, 1)}).schema  # same columns, types and nullability


def test_chunk_boundaries_inside_ranges(spark, client, produced):
    topic, records = produced
    marks = watermarks(topic, client)
    ranges = {0: (5, 17), 1: (0, 1), 2: (marks[2][1] - 3, marks[2][1])}
    df = read_kafka(spark, topic, ranges, client, chunk=4, timeout=10, tasks=100)
    assert df.rdd.getNumPartitions() == 3 + 1 + 1  # a task per chunk
    got, _ = _read(df)
    assert got == _expected(records, ranges) and len(got) == 12 + 1 + 3


def test_empty_ranges(spark, client, produced):
    topic, _ = produced
    for ranges in ({}, {0: (5, 5)}, {1: (7, 3)}):
        df = read_kafka(spark, topic, ranges, client)
        assert df.count() == 0 and df.schema == read_kafka(spark, topic, {0: (0, 1)}, client).schema


def test_group_spreads_chunks_evenly_and_rounds_take_one_chunk_per_partition():
    chunks = split({0: (0, 10), 1: (0, 3), 2: (0, 7), 3: (0, 1)}, 4)
    groups = group(chunks, 2)
    assert sorted((c for g in groups for c in g.chunks), key=lambda c: (c.partition, c.start)) == chunks
    assert sorted(sum(c.end - c.start for c in g.chunks) for g in groups) == [10, 11]
    assert len(group(chunks, 100)) == len(chunks) and len(group(chunks, 1)) == 1 and group([], 4) == []
    rounds = _rounds(chunks)
    assert [[(c.partition, c.start) for c in r] for r in rounds] == [
        [(0, 0), (1, 0), (2, 0), (3, 0)], [(0, 4), (2, 4)], [(0, 8)]]


def test_split():
    assert split({1: (10, 20), 0: (0, 5), 2: (3, 3)}, 4) == [
        RangeChunk(0, 0, 4), RangeChunk(0, 4, 5), RangeChunk(1, 10, 14), RangeChunk(1, 14, 18), RangeChunk(1, 18, 20)]
    with pytest.raises(ValueError, match="positive"):
        split({0: (0, 5)}, 0)


def test_consumer_config():
    config = consumer_config({"bootstrap.servers": "b:9092", "enable.auto.commit": "true"})
    assert config["group.id"] == "lakeconnect-reader" and config["isolation.level"] == "read_committed"
    assert (config["enable.auto.commit"], config["enable.partition.eof"], config["auto.offset.reset"]) == (
        False, True, "error")
    mine = consumer_config({"group.id": "connect-sink", "isolation.level": "read_uncommitted"})
    assert (mine["group.id"], mine["isolation.level"]) == ("connect-sink", "read_uncommitted")


def test_client_settings_stay_out_of_the_plan(spark, client, produced):
    df = read_kafka(spark, produced[0], {0: (0, 1)}, {**client, "sasl.password": "hunter2-do-not-show"})
    assert "hunter2" not in df._jdf.queryExecution().toString()


def test_range_past_the_end_fails_after_the_timeout(spark, client, produced):
    topic, _ = produced
    high = watermarks(topic, client)[0][1]
    df = read_kafka(spark, topic, {0: (high - 2, high + 3)}, client, timeout=1)
    with pytest.raises(Exception, match=rf"did not deliver offsets {high}\.\.{high + 2} within 1 s"):
        df.collect()
    started = time.monotonic()
    with pytest.raises(RetriableError, match=rf"{topic}-0: .*the partition ends at offset {high}"):
        list(read_range(topic, RangeChunk(0, high - 2, high + 3), client, 1))
    assert time.monotonic() - started < 5
    with pytest.raises(RetriableError, match=rf"offsets {high + 1}\.\.{high + 2} of {topic}-0 are past its end offset"):
        list(read_range(topic, RangeChunk(0, high + 1, high + 3), client, 1))


def test_watermarks_of_a_missing_topic_or_cluster(client):
    missing = _topic()
    with pytest.raises(StateError, match=f"topic '{missing}' does not exist in the Kafka cluster"):
        watermarks(missing, client)
    with pytest.raises(RetriableError, match="reading the metadata of topic"):
        watermarks(missing, {"bootstrap.servers": "127.0.0.1:1"}, timeout=1)


def test_offsets_below_the_log_start_are_an_error(client):
    """Records deleted below an offset (DeleteRecords, as retention would) move the log start offset."""
    from confluent_kafka.admin import AdminClient

    topic = _topic(client)
    _produce(client, topic, [{"value": b"x" * 1000, "partition": 0} for _ in range(40)])
    admin = AdminClient(client)
    [done] = admin.delete_records([TopicPartition(topic, 0, 25)]).values()
    done.result(30)
    low, high = watermarks(topic, client)[0]
    assert (low, high) == (25, 40)
    with pytest.raises(StateError, match=rf"offsets 0\.\.{low - 1} of {topic}-0 are gone \(log start offset is {low}\)"):
        list(read_range(topic, RangeChunk(0, 0, high), client, 5))
    assert sum(b.num_rows for b in read_range(topic, RangeChunk(0, low, high), client, 5)) == high - low


def _transactions(client, topic) -> None:
    """Partition 0: 0 plain, 1-3 aborted, 4 abort marker, 5-6 committed, 7 commit marker, 8 plain."""
    _produce(client, topic, [{"value": b"plain-0", "partition": 0}])
    producer = Producer({**client, "transactional.id": f"tx-{uuid.uuid4().hex}"})
    producer.init_transactions(10)
    producer.begin_transaction()
    for i in range(3):
        producer.produce(topic, value=f"aborted-{i}".encode(), partition=0)
    producer.flush(10)
    producer.abort_transaction(10)
    producer.begin_transaction()
    for i in range(2):
        producer.produce(topic, value=f"committed-{i}".encode(), partition=0)
    producer.commit_transaction(10)


def test_transaction_markers_leave_gaps(spark, client):
    """Transaction markers are gaps in the offsets, and read_committed (the reader's default) skips the
    aborted records: the range ends where it should without waiting for a record past it."""
    topic = _topic(client)
    _transactions(client, topic)
    assert watermarks(topic, client)[0] == (0, 8)

    def offsets(start, end):
        return [o for b in read_range(topic, RangeChunk(0, start, end), client, 5) for o in b.column("offset").to_pylist()]

    started = time.monotonic()
    assert offsets(4, 5) == [] and offsets(7, 8) == []  # only a marker: ends at EOF, no record
    every = offsets(0, 8)
    assert every == [0, 5, 6]  # neither the markers nor the aborted records
    uncommitted = [o for b in read_range(topic, RangeChunk(0, 0, 8), {**client, "isolation.level": "read_uncommitted"}, 5)
                   for o in b.column("offset").to_pylist()]
    assert uncommitted == [0, 1, 2, 3, 5, 6]
    df = read_kafka(spark, topic, {0: (0, 8)}, client, chunk=3, timeout=5)  # last chunk 6..7 ends at a marker
    assert sorted(r.offset for r in df.collect()) == every
    _produce(client, topic, [{"value": b"plain-8", "partition": 0}])
    assert offsets(5, 8) == [5, 6]  # stops at record 8 without waiting
    assert time.monotonic() - started < 15


# --- a consumer double, for what a broker cannot be made to do on request --------------------------------------------


@dataclass
class FakeMessage:
    at: int
    err: KafkaError | None = None

    def offset(self):
        return self.at

    def partition(self):
        return 0

    def error(self):
        return self.err

    def timestamp(self):
        return TIMESTAMP_CREATE_TIME, BASE_MS + self.at

    def key(self):
        return None

    def value(self):
        return f"v{self.at}".encode()

    def headers(self):
        return None


@dataclass
class FakeConsumer:
    """Hands out `batches` one per consume(), then nothing (after waiting, as a consumer would); its
    position is `position` once the batches are out."""

    batches: list[list[FakeMessage]]
    position_at_end: int
    low: int = 0
    config: dict = field(default_factory=dict)
    closed: bool = False
    delivered: int = -1

    def assign(self, partitions):
        self.assigned = partitions

    def incremental_unassign(self, partitions):
        self.assigned = [p for p in self.assigned if p.partition not in {q.partition for q in partitions}]

    def consume(self, num_messages, timeout):
        if not self.batches:
            time.sleep(timeout)
            return []
        batch = self.batches.pop(0)
        self.delivered = batch[-1].at
        return batch

    def position(self, partitions):
        at = self.position_at_end if not self.batches else self.delivered + 1
        return [TopicPartition(p.topic, p.partition, at) for p in partitions]

    def get_watermark_offsets(self, tp, timeout):
        return self.low, self.position_at_end

    def close(self):
        self.closed = True


def _with(monkeypatch, consumer: FakeConsumer) -> FakeConsumer:
    def make(config):
        consumer.config = dict(config)
        return consumer

    monkeypatch.setattr(kafka_read, "new_consumer", make)
    return consumer


def test_stops_when_the_position_reaches_the_end(monkeypatch):
    """A double: the position passes the end (a marker at end - 1) with neither a record at or past the
    end nor an EOF, which a broker does not do on request (it sends the EOF as well)."""
    consumer = _with(monkeypatch, FakeConsumer([[FakeMessage(0), FakeMessage(1)], [FakeMessage(3)]], 5))
    started = time.monotonic()
    batches = list(read_range("t", RangeChunk(0, 0, 5), {"bootstrap.servers": "b:9092"}, timeout=3))
    assert time.monotonic() - started < 2
    assert [o for b in batches for o in b.column("offset").to_pylist()] == [0, 1, 3]
    assert consumer.closed and consumer.config["enable.auto.commit"] is False
    assert consumer.assigned[0].offset == 0


def test_a_gap_at_the_start_is_checked_against_the_log_start(monkeypatch):
    """A double: records gone below the log start offset although the consumer skipped there without
    reporting an out-of-range fetch, e.g. deleted between two fetches."""
    _with(monkeypatch, FakeConsumer([[FakeMessage(7), FakeMessage(8)]], 9, low=7))
    with pytest.raises(StateError, match=r"offsets 2\.\.6 of t-0 are gone \(log start offset is 7\)"):
        list(read_range("t", RangeChunk(0, 2, 9), {}, timeout=3))
    consumer = _with(monkeypatch, FakeConsumer([[FakeMessage(7), FakeMessage(8)]], 9, low=0))  # markers at 2..6
    assert [o for b in read_range("t", RangeChunk(0, 2, 9), {}, timeout=3) for o in b.column("offset").to_pylist()] == [7, 8]
    assert consumer.closed


def test_a_message_error_names_the_partition_and_offset(monkeypatch):
    """A double: a broker cannot be made to fail one fetch with an error on request."""
    denied = KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED)
    consumer = _with(monkeypatch, FakeConsumer([[FakeMessage(0), FakeMessage(1, denied)]], 5))
    with pytest.raises(FatalError, match="reading t-0 at offset 1: TOPIC_AUTHORIZATION_FAILED"):
        list(read_range("t", RangeChunk(0, 0, 5), {}, timeout=3))
    assert consumer.closed
