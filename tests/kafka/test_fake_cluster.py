"""The fake Kafka cluster (tests/kafka/fake_cluster.py) behaves as a broker with transactions and
confluent-kafka do. The exactly-once tests rely on it, so its own behaviour is pinned here: what
read_committed and read_uncommitted consumers see, the offsets that markers take, fencing, watermarks
and the LSO, delivery, size limits, consumer group offsets, and one cluster shared by several
processes."""

from __future__ import annotations

import importlib
import json
import multiprocessing
import os
import time
from pathlib import Path

import confluent_kafka
import pytest
from confluent_kafka import TopicPartition as TP

from tests.kafka import fake_cluster as fk

CONF = {"bootstrap.servers": "fake:9092"}


@pytest.fixture
def cluster(tmp_path, monkeypatch):
    directory = tmp_path / "kafka"
    monkeypatch.setenv(fk.DIR_ENV, str(directory))
    return directory


def txn_producer(tid: str, **extra):
    p = fk.Producer({**CONF, "transactional.id": tid, "enable.idempotence": "true", "acks": "all", **extra})
    p.init_transactions(5)
    return p


def consumer(**extra):
    return fk.Consumer({**CONF, "group.id": "reader", "enable.auto.commit": False, "enable.partition.eof": True,
                        "auto.offset.reset": "error", **extra})


def read_all(c, topic="t", partition=0, start=0, timeout=0.05):
    """(offset, value) of every record from `start`, and the EOF offset."""
    c.assign([TP(topic, partition, start)])
    got, eof = [], None
    for _ in range(100):
        msgs = c.consume(1000, timeout)
        if not msgs:
            break
        for m in msgs:
            if m.error() is None:
                got.append((m.offset(), m.value()))
            else:
                assert m.error().code() == fk.KafkaError._PARTITION_EOF, m.error()
                eof = m.offset()
    return got, eof


def states(topic="t"):
    return [(r["offset"], r["state"]) for r in fk.records(None, topic, committed_only=False, markers=True)]


# --- the module as a stand-in for confluent_kafka ------------------------------------------------


def test_module_stands_in_for_confluent_kafka(cluster):
    module = importlib.import_module("tests.kafka.fake_cluster")
    assert module.KafkaError is confluent_kafka.KafkaError
    assert module.KafkaException is confluent_kafka.KafkaException
    assert module.TopicPartition is confluent_kafka.TopicPartition
    assert module.admin.NewTopic is confluent_kafka.admin.NewTopic
    assert module.admin.AdminClient is fk.AdminClient
    assert importlib.import_module("tests.kafka.fake_cluster.admin") is module.admin
    for name in ("_PARTITION_EOF", "_AUTO_OFFSET_RESET", "UNKNOWN_TOPIC_OR_PART", "TOPIC_ALREADY_EXISTS",
                 "MSG_SIZE_TOO_LARGE", "_FENCED", "PRODUCER_FENCED", "_TIMED_OUT", "_STATE", "INVALID_TXN_STATE"):
        assert getattr(module.KafkaError, name) == getattr(confluent_kafka.KafkaError, name)


def test_configuration_is_checked_by_the_real_client(cluster):
    with pytest.raises(ValueError, match="group.id must be set"):
        fk.Consumer(CONF)
    with pytest.raises(confluent_kafka.KafkaException, match="No such configuration property"):
        fk.Producer({**CONF, "max.request.size": "10"})  # a Java client key librdkafka does not know
    with pytest.raises(confluent_kafka.KafkaException, match="acks"):
        fk.Producer({**CONF, "enable.idempotence": "true", "acks": "1"})


def test_clients_need_the_directory(monkeypatch):
    monkeypatch.delenv(fk.DIR_ENV, raising=False)
    with pytest.raises(RuntimeError, match=fk.DIR_ENV):
        fk.Producer(CONF)


# --- admin and metadata ----------------------------------------------------------------------------


def test_topics_are_created_listed_and_never_auto_created(cluster):
    admin = fk.admin.AdminClient(CONF)
    assert admin.create_topics([fk.admin.NewTopic("t", 3)], request_timeout=5)["t"].result(1) is None
    with pytest.raises(fk.KafkaException) as exists:
        admin.create_topics([fk.admin.NewTopic("t", 1)])["t"].result(1)
    assert exists.value.args[0].code() == fk.KafkaError.TOPIC_ALREADY_EXISTS
    md = admin.list_topics("t", timeout=5)
    assert md.topics["t"].error is None and sorted(md.topics["t"].partitions) == [0, 1, 2]
    missing = admin.list_topics("nope", timeout=5).topics["nope"]
    assert missing.error.code() == fk.KafkaError.UNKNOWN_TOPIC_OR_PART and missing.partitions == {}
    assert sorted(admin.list_topics().topics) == ["t"]  # asking about "nope" did not create it
    assert sorted(consumer().list_topics("t").topics["t"].partitions) == [0, 1, 2]


# --- non-transactional producing -------------------------------------------------------------------


def test_plain_records_are_appended_at_flush_with_delivery_reports(cluster):
    fk.create_topic(None, "t", 2)
    p = fk.Producer({**CONF, "enable.idempotence": "true", "acks": "all"})
    reports = []
    before = int(time.time() * 1000)
    p.produce("t", b"v0", b"k0", partition=1, on_delivery=lambda e, m: reports.append((e, m)))
    p.produce("t", value=b"v1", key=None, partition=1, timestamp=1234, headers=[("h", b"x"), ("n", None)],
              on_delivery=lambda e, m: reports.append((e, m)))
    assert len(p) == 2 and reports == []
    assert fk.records(None, "t") == []  # not visible before poll/flush
    assert p.flush(5) == 0 and len(p) == 0
    assert [(e, m.topic(), m.partition(), m.offset(), m.key(), m.value()) for e, m in reports] == [
        (None, "t", 1, 0, b"k0", b"v0"), (None, "t", 1, 1, None, b"v1")]
    first, second = fk.records(None, "t")
    assert first["state"] == "plain" and first["timestamp"] >= before  # timestamp=0: the producer's clock
    assert second["timestamp"] == 1234 and second["headers"] == [("h", b"x"), ("n", None)]

    c = consumer()
    c.assign([TP("t", 1, 0)])
    msgs = [m for m in c.consume(10, 0.2) if m.error() is None]
    assert [(m.offset(), m.key(), m.value(), m.timestamp(), m.headers()) for m in msgs] == [
        (0, b"k0", b"v0", (fk.TIMESTAMP_CREATE_TIME, first["timestamp"]), None),
        (1, None, b"v1", (fk.TIMESTAMP_CREATE_TIME, 1234), [("h", b"x"), ("n", None)])]


def test_delivery_to_an_unknown_topic_or_partition_fails(cluster):
    fk.create_topic(None, "t", 1)
    p = fk.Producer(CONF)
    reports = []
    p.produce("nope", b"v", partition=0, on_delivery=lambda e, m: reports.append(e))
    p.produce("t", b"v", partition=3, on_delivery=lambda e, m: reports.append(e))
    p.flush(1)
    assert [e.code() for e in reports] == [fk.KafkaError.UNKNOWN_TOPIC_OR_PART, fk.KafkaError._UNKNOWN_PARTITION]
    assert fk.records(None, "t") == []


def test_message_size_limit(cluster):
    fk.create_topic(None, "t", 1)
    p = fk.Producer(CONF)
    p.produce("t", b"x" * 999_000, b"k" * 1000, partition=0)  # 1,000,000 bytes: the default limit
    with pytest.raises(fk.KafkaException) as big:
        p.produce("t", b"x" * 999_000, b"k" * 1001, partition=0)
    assert big.value.args[0].code() == fk.KafkaError.MSG_SIZE_TOO_LARGE
    small = fk.Producer({**CONF, "message.max.bytes": "1000"})
    with pytest.raises(fk.KafkaException) as too_big:
        small.produce("t", b"x" * 1001, partition=0)
    assert too_big.value.args[0].code() == fk.KafkaError.MSG_SIZE_TOO_LARGE
    # The topic's max.message.bytes is the broker's check, at delivery.
    fk.create_topic(None, "strict", 1, {"max.message.bytes": "100"})
    reports = []
    p.produce("strict", b"x" * 101, partition=0, on_delivery=lambda e, m: reports.append(e))
    p.flush(1)
    assert reports[0].code() == fk.KafkaError.MSG_SIZE_TOO_LARGE


def test_partitioner_and_log_append_time(cluster):
    fk.create_topic(None, "t", 4, {"message.timestamp.type": "LogAppendTime"})
    p = fk.Producer(CONF)
    reports = []
    for _ in range(3):
        p.produce("t", b"v", b"same key", timestamp=5, on_delivery=lambda e, m: reports.append(m))
    p.flush(1)
    assert len({m.partition() for m in reports}) == 1  # keyed: always the same partition
    [r] = [r for r in fk.records(None, "t")][:1]
    assert r["timestamp"] > 5
    c = consumer()
    c.assign([TP("t", reports[0].partition(), 0)])
    kind, _ = c.consume(1, 0.2)[0].timestamp()
    assert kind == fk.TIMESTAMP_LOG_APPEND_TIME


# --- transactions ------------------------------------------------------------------------------------


def test_read_committed_hides_open_and_aborted_transactions_and_markers_take_offsets(cluster):
    fk.create_topic(None, "t", 1)
    p = txn_producer("tx")
    p.begin_transaction()
    for v in (b"c0", b"c1"):
        p.produce("t", v, partition=0)
    p.commit_transaction(5)  # 0, 1 + commit marker 2
    p.begin_transaction()
    p.produce("t", b"a3", partition=0)
    p.abort_transaction(5)  # 3 + abort marker 4
    plain = fk.Producer(CONF)
    plain.produce("t", b"p5", partition=0)
    plain.flush(1)  # 5
    p.begin_transaction()
    p.produce("t", b"o6", partition=0)  # 6, left open
    plain.produce("t", b"p7", partition=0)
    plain.flush(1)  # 7: past the open transaction
    assert states() == [(0, "committed"), (1, "committed"), (2, "commit-marker"), (3, "aborted"),
                        (4, "abort-marker"), (5, "plain"), (6, "open"), (7, "plain")]

    # read_committed stops at the LSO (6), skips aborted records and markers (offset gaps), EOF at the LSO.
    got, eof = read_all(consumer())
    assert got == [(0, b"c0"), (1, b"c1"), (5, b"p5")] and eof == 6
    c = consumer()
    assert c.get_watermark_offsets(TP("t", 0)) == (0, 6)
    # read_uncommitted sees open and aborted records, never markers, up to the log end.
    got, eof = read_all(consumer(**{"isolation.level": "read_uncommitted"}))
    assert got == [(0, b"c0"), (1, b"c1"), (3, b"a3"), (5, b"p5"), (6, b"o6"), (7, b"p7")] and eof == 8
    assert consumer(**{"isolation.level": "read_uncommitted"}).get_watermark_offsets(TP("t", 0)) == (0, 8)

    p.commit_transaction(5)  # marker 8: the LSO moves to the end
    got, eof = read_all(consumer())
    assert got == [(0, b"c0"), (1, b"c1"), (5, b"p5"), (6, b"o6"), (7, b"p7")] and eof == 9
    assert consumer().get_watermark_offsets(TP("t", 0)) == (0, 9)
    assert [r["value"] for r in fk.records(None, "t")] == [b"c0", b"c1", b"p5", b"o6", b"p7"]


def test_a_transaction_over_several_partitions_and_topics(cluster):
    fk.create_topic(None, "t", 2)
    fk.create_topic(None, "markers", 1)
    p = txn_producer("tx")
    p.begin_transaction()
    p.produce("t", b"a", partition=0)
    p.produce("t", b"b", partition=1)
    p.produce("markers", b"m", partition=0)
    assert fk.transactional_ids()["tx"]["open"] == [("t", 0), ("t", 1), ("markers", 0)]
    p.commit_transaction(5)
    assert fk.transactional_ids()["tx"]["open"] is None
    assert [(r["partition"], r["offset"], r["state"]) for r in fk.records(None, "t", committed_only=False,
                                                                          markers=True)] == [
        (0, 0, "committed"), (0, 1, "commit-marker"), (1, 0, "committed"), (1, 1, "commit-marker")]
    assert states("markers") == [(0, "committed"), (1, "commit-marker")]
    p.begin_transaction()
    p.commit_transaction(5)  # an empty transaction writes no markers
    assert len(states("markers")) == 2


def test_delivery_reports_of_transactional_records(cluster):
    fk.create_topic(None, "t", 1)
    p = txn_producer("tx")
    p.begin_transaction()
    reports = []
    p.produce("t", b"a", partition=0, on_delivery=lambda e, m: reports.append((e, m.offset())))
    assert states() == [(0, "open")]  # in the log at once, with its offset
    assert reports == []
    p.commit_transaction(5)  # commit flushes: the callbacks fire
    assert reports == [(None, 0)]


def test_transactional_state_errors(cluster):
    fk.create_topic(None, "t", 1)
    p = fk.Producer({**CONF, "transactional.id": "tx"})
    for call in (lambda: p.produce("t", b"v", partition=0), p.begin_transaction):
        with pytest.raises(fk.KafkaException) as e:
            call()
        assert e.value.args[0].code() == fk.KafkaError._STATE
    p.init_transactions(5)
    with pytest.raises(fk.KafkaException) as e:
        p.produce("t", b"v", partition=0)  # outside a transaction
    assert e.value.args[0].code() == fk.KafkaError._STATE
    with pytest.raises(fk.KafkaException) as e:
        p.commit_transaction(5)
    assert e.value.args[0].code() == fk.KafkaError._STATE
    p.begin_transaction()
    with pytest.raises(fk.KafkaException) as e:
        p.begin_transaction()
    assert e.value.args[0].code() == fk.KafkaError._STATE
    plain = fk.Producer(CONF)
    with pytest.raises(fk.KafkaException) as e:
        plain.init_transactions(5)
    assert e.value.args[0].code() == fk.KafkaError._NOT_CONFIGURED


def test_a_failed_delivery_makes_the_transaction_abortable(cluster):
    fk.create_topic(None, "t", 1)
    p = txn_producer("tx")
    p.begin_transaction()
    p.produce("t", b"ok", partition=0)
    p.produce("nope", b"lost", partition=0)
    with pytest.raises(fk.KafkaException) as e:
        p.commit_transaction(5)
    error = e.value.args[0]
    assert error.code() == fk.KafkaError.UNKNOWN_TOPIC_OR_PART and error.txn_requires_abort() and not error.fatal()
    p.abort_transaction(5)
    assert states() == [(0, "aborted"), (1, "abort-marker")]
    p.begin_transaction()  # usable again
    p.produce("t", b"again", partition=0)
    p.commit_transaction(5)
    assert [r["value"] for r in fk.records(None, "t")] == [b"again"]


def test_a_newer_producer_fences_the_older_and_aborts_its_transaction(cluster):
    fk.create_topic(None, "t", 1)
    errors, reports = [], []
    old = txn_producer("tx", error_cb=errors.append)
    old.begin_transaction()
    old.produce("t", b"zombie", partition=0)
    assert fk.transactional_ids()["tx"]["epoch"] == 0

    new = txn_producer("tx")
    assert fk.transactional_ids()["tx"] == {"producer_id": 1000, "epoch": 1, "open": None}
    assert states() == [(0, "aborted"), (1, "abort-marker")]  # the old instance's transaction, aborted

    # The old instance finds out at its next produce: no exception there (the request is already
    # queued), but its delivery fails and error_cb gets the fatal error, as with librdkafka.
    old.produce("t", b"more", partition=0, on_delivery=lambda e, m: reports.append(e))
    old.poll(0)
    assert [e.code() for e in errors] == [fk.KafkaError._FENCED] and errors[0].fatal()
    assert [e.code() for e in reports] == [fk.KafkaError._FENCED]
    with pytest.raises(fk.KafkaException) as later:  # librdkafka refuses any produce after a fatal error
        old.produce("t", b"more", partition=0)
    assert later.value.args[0].code() == fk.KafkaError._FATAL
    for call in (old.commit_transaction, old.abort_transaction, old.begin_transaction):
        with pytest.raises(fk.KafkaException) as e:
            call()
        assert e.value.args[0].code() == fk.KafkaError._FENCED and e.value.args[0].fatal()

    new.begin_transaction()
    new.produce("t", b"new", partition=0)
    new.commit_transaction(5)
    assert states() == [(0, "aborted"), (1, "abort-marker"), (2, "committed"), (3, "commit-marker")]
    assert read_all(consumer())[0] == [(2, b"new")]


def test_a_fenced_producer_fails_at_commit(cluster):
    fk.create_topic(None, "t", 1)
    old = txn_producer("tx")
    old.begin_transaction()
    old.produce("t", b"zombie", partition=0)
    txn_producer("tx")
    with pytest.raises(fk.KafkaException) as e:
        old.commit_transaction(5)
    assert e.value.args[0].code() == fk.KafkaError._FENCED and e.value.args[0].fatal()
    assert fk.records(None, "t") == []
    # Fenced before it even began: begin_transaction is local and succeeds, the produce finds out.
    older = txn_producer("other")
    txn_producer("other")
    older.begin_transaction()
    older.produce("t", b"x", partition=0)
    with pytest.raises(fk.KafkaException) as e:
        older.commit_transaction(5)
    assert e.value.args[0].code() == fk.KafkaError._FENCED
    assert fk.records(None, "t") == []


def test_an_open_transaction_past_its_timeout_is_aborted_and_its_producer_fenced(cluster):
    fk.create_topic(None, "t", 1)
    p = txn_producer("tx", **{"transaction.timeout.ms": "1000"})
    p.begin_transaction()
    p.produce("t", b"slow", partition=0)
    assert consumer().get_watermark_offsets(TP("t", 0)) == (0, 0)
    time.sleep(1.1)
    assert consumer().get_watermark_offsets(TP("t", 0)) == (0, 2)
    assert states() == [(0, "aborted"), (1, "abort-marker")]
    with pytest.raises(fk.KafkaException) as e:
        p.commit_transaction(5)
    assert e.value.args[0].code() == fk.KafkaError._FENCED


# --- consuming ----------------------------------------------------------------------------------------


def test_consumer_positions_eof_and_waiting(cluster):
    fk.create_topic(None, "t", 1)
    p = txn_producer("tx")
    p.begin_transaction()
    p.produce("t", b"a", partition=0)
    p.produce("t", b"b", partition=0)
    p.commit_transaction(5)  # 0, 1, marker 2
    c = consumer()
    c.assign([TP("t", 0, 0)])
    assert c.position([TP("t", 0)])[0].offset == fk.OFFSET_INVALID  # nothing consumed yet
    [first] = c.consume(1, 0.1)
    assert first.offset() == 0 and c.position([TP("t", 0)])[0].offset == 1
    second, eof = c.consume(10, 0.1)
    assert second.offset() == 1 and eof.error().code() == fk.KafkaError._PARTITION_EOF and eof.offset() == 3
    assert c.position([TP("t", 0)])[0].offset == 3  # past the marker, as librdkafka moves past it
    started = time.monotonic()
    assert c.consume(10, 0.2) == []  # EOF only once; then it waits its timeout
    assert 0.15 <= time.monotonic() - started < 1.5
    plain = fk.Producer(CONF)
    plain.produce("t", b"c", partition=0)
    plain.flush(1)
    got = c.consume(10, 0.2)
    assert [(m.offset(), m.error() is None) for m in got] == [(3, True), (4, False)]  # a new EOF at the new end
    # Without enable.partition.eof no EOF events; an assigned end gives nothing.
    quiet = consumer(**{"enable.partition.eof": False})
    quiet.assign([TP("t", 0, 4)])
    assert quiet.consume(10, 0.05) == [] and quiet.position([TP("t", 0)])[0].offset == fk.OFFSET_INVALID
    c.close()
    with pytest.raises(RuntimeError):
        c.consume(1, 0)


def test_offsets_out_of_range_and_the_log_start(cluster):
    fk.create_topic(None, "t", 1)
    p = fk.Producer(CONF)
    for i in range(5):
        p.produce("t", b"%d" % i, partition=0)
    p.flush(1)
    c = consumer()
    c.assign([TP("t", 0, 9)])
    [err] = c.consume(10, 0.05)
    assert err.error().code() == fk.KafkaError._AUTO_OFFSET_RESET and err.offset() == 9
    assert c.consume(10, 0.05) == []  # reported once
    c.assign([TP("t", 0, 5)])  # the end is in range: just EOF
    [eof] = c.consume(10, 0.05)
    assert eof.error().code() == fk.KafkaError._PARTITION_EOF
    fk.delete_records(None, "t", 0, 3)
    assert c.get_watermark_offsets(TP("t", 0)) == (3, 5)
    c.assign([TP("t", 0, 1)])
    [err] = c.consume(10, 0.05)
    assert err.error().code() == fk.KafkaError._AUTO_OFFSET_RESET
    earliest = consumer(**{"auto.offset.reset": "earliest"})
    assert read_all(earliest, start=1)[0] == [(3, b"3"), (4, b"4")]
    latest = consumer(**{"auto.offset.reset": "latest"})
    latest.assign([TP("t", 0, 99)])
    assert [m.offset() for m in latest.consume(10, 0.05)] == [5]  # the EOF at the end
    begin = consumer()
    begin.assign([TP("t", 0, fk.OFFSET_BEGINNING)])
    assert [m.offset() for m in begin.consume(10, 0.05) if m.error() is None] == [3, 4]


def test_consumer_group_offsets(cluster):
    fk.create_topic(None, "t", 2)
    p = fk.Producer(CONF)
    for i in range(4):
        p.produce("t", b"%d" % i, partition=0)
    p.flush(1)
    c = fk.Consumer({**CONF, "group.id": "connect-sink", "enable.auto.commit": "false"})
    assert [tp.offset for tp in c.committed([TP("t", 0), TP("t", 1)], timeout=5)] == [fk.OFFSET_INVALID] * 2
    result = c.commit(offsets=[TP("t", 0, 3)], asynchronous=False)
    assert [(tp.topic, tp.partition, tp.offset, tp.error) for tp in result] == [("t", 0, 3, None)]
    c.close()
    other = fk.Consumer({**CONF, "group.id": "connect-sink", "enable.auto.commit": False})
    assert [tp.offset for tp in other.committed([TP("t", 0), TP("t", 1)])] == [3, fk.OFFSET_INVALID]
    assert fk.group_offsets(None, "connect-sink") == {("t", 0): 3}
    assert fk.group_offsets(None, "another") == {}
    other.assign([TP("t", 0, fk.OFFSET_STORED)])  # starts at the group's offset
    assert [m.value() for m in other.consume(10, 0.1) if m.error() is None] == [b"3"]
    with pytest.raises(fk.KafkaException) as e:
        other.commit(offsets=[TP("nope", 0, 1)], asynchronous=False)
    assert e.value.args[0].code() == fk.KafkaError.UNKNOWN_TOPIC_OR_PART
    # enable.auto.commit (librdkafka's default) commits the positions on close.
    auto = fk.Consumer({**CONF, "group.id": "auto"})
    auto.assign([TP("t", 0, 0)])
    auto.consume(2, 0.1)
    auto.close()
    assert fk.group_offsets(None, "auto") == {("t", 0): 2}


def test_reset_empties_the_cluster(cluster):
    fk.create_topic(None, "t", 1)
    txn_producer("tx")
    fk.reset(None)
    assert fk.admin.AdminClient(CONF).list_topics().topics == {}
    assert fk.transactional_ids() == {}
    fk.create_topic(None, "t", 1)
    assert fk.records(None, "t") == []


# --- several processes --------------------------------------------------------------------------------


def _child_commit_then_crash(directory: str) -> None:
    os.environ[fk.DIR_ENV] = directory
    p = fk.Producer({**CONF, "transactional.id": "task-0"})
    p.init_transactions(5)
    p.begin_transaction()
    p.produce("t", b"committed", partition=0)
    p.commit_transaction(5)
    p.begin_transaction()
    p.produce("t", b"in flight", partition=0)
    os._exit(0)  # a crash: the transaction stays open


def _child_produce(directory: str, tag: bytes, n: int, transactional: bool) -> None:
    """Produce n records (in transactions of 10 when `transactional`); write the delivery reports to
    `<directory>-<tag>.json` as [offset, value] pairs."""
    os.environ[fk.DIR_ENV] = directory
    reports: list = []

    def delivered(err, msg) -> None:
        assert err is None, err
        reports.append([msg.offset(), msg.value().decode()])

    config = {**CONF, "transactional.id": tag.decode()} if transactional else CONF
    p = fk.Producer(config)
    if transactional:
        p.init_transactions(5)
    for i in range(n):
        if transactional and i % 10 == 0:
            p.begin_transaction()
        p.produce("t", tag + b"%d" % i, partition=0, on_delivery=delivered)
        if transactional and i % 10 == 9:
            p.commit_transaction(5)
        elif i % 7 == 0:
            p.poll(0)
    p.flush(5)
    Path(f"{directory}-{tag.decode()}.json").write_text(json.dumps(reports))


def _child_take_over(directory: str) -> None:
    os.environ[fk.DIR_ENV] = directory
    fk.Producer({**CONF, "transactional.id": "task-0"}).init_transactions(5)


def _run(target, *args) -> None:
    ctx = multiprocessing.get_context("spawn")
    proc = ctx.Process(target=target, args=args)
    proc.start()
    proc.join(60)
    assert proc.exitcode == 0


def test_processes_share_the_cluster(cluster):
    fk.create_topic(None, "t", 1)
    _run(_child_commit_then_crash, str(cluster))
    assert states() == [(0, "committed"), (1, "commit-marker"), (2, "open")]
    assert read_all(consumer())[0] == [(0, b"committed")]
    assert consumer().get_watermark_offsets(TP("t", 0)) == (0, 2)  # the crashed transaction holds the LSO

    # The task run again (here, in this process) fences the crashed one and aborts its transaction.
    again = txn_producer("task-0")
    assert states() == [(0, "committed"), (1, "commit-marker"), (2, "aborted"), (3, "abort-marker")]
    assert consumer().get_watermark_offsets(TP("t", 0)) == (0, 4)
    again.begin_transaction()
    again.produce("t", b"rerun", partition=0)
    # ... and another process taking the id over in the meantime fences this one.
    _run(_child_take_over, str(cluster))
    with pytest.raises(fk.KafkaException) as e:
        again.commit_transaction(5)
    assert e.value.args[0].code() == fk.KafkaError._FENCED
    assert [r["value"] for r in fk.records(None, "t")] == [b"committed"]


def test_concurrent_producers_in_several_processes(cluster):
    """Every read-modify-write is under the lock: the delivery reports name the offsets the records got,
    and no process loses another's transaction state."""
    fk.create_topic(None, "t", 1)
    ctx = multiprocessing.get_context("spawn")
    jobs = [(b"a", False), (b"b", True), (b"c", True)]
    procs = [ctx.Process(target=_child_produce, args=(str(cluster), tag, 150, txn)) for tag, txn in jobs]
    for proc in procs:
        proc.start()
    _child_produce(str(cluster), b"d", 150, False)
    for proc in procs:
        proc.join(60)
        assert proc.exitcode == 0
    log = fk.records(None, "t", committed_only=False, markers=True)
    assert [r["offset"] for r in log] == list(range(600 + 2 * 15))  # 15 commit markers per transactional id
    at = {r["offset"]: r for r in log}
    for tag in (b"a", b"b", b"c", b"d"):
        reports = json.loads(Path(f"{cluster}-{tag.decode()}.json").read_text())
        assert [v for _, v in reports] == [f"{tag.decode()}{i}" for i in range(150)]
        assert all(at[o]["value"] == v.encode() for o, v in reports)
        assert {at[o]["state"] for o, _ in reports} == ({"committed"} if tag in (b"b", b"c") else {"plain"})
    ids = fk.transactional_ids()
    assert {tid: (v["epoch"], v["open"]) for tid, v in ids.items()} == {"b": (0, None), "c": (0, None)}
    assert sorted(v["producer_id"] for v in ids.values()) == [1000, 1001]
    assert len(fk.records(None, "t")) == 600
