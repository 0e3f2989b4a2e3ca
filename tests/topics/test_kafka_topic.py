"""Topics in a Kafka cluster (`topic.backend=kafka`): client settings in three layers under the override
policy, the producer path (Kafka's partitions, every delivery confirmed) and its errors, against the
test bed's real Kafka broker (started by tests/services/up.sh)."""

from __future__ import annotations

import datetime as dt
import time

import pytest
from confluent_kafka import Consumer, TopicPartition

from ingest.config.worker import override_problems, parse_worker
from ingest.errors import ConfigError, RetriableError, StateError
from ingest.topics import partition_for_key
from ingest.topics.backend import DeltaTopics, KafkaTopics, open_topics
from ingest.topics.kafka import KafkaClients, KafkaTopic, commit_group, group_offsets

pytestmark = pytest.mark.usefixtures("services")


def _clients(kafka, **extra) -> KafkaClients:
    """At-least-once clients: no transaction markers among the offsets (tests/kafka covers transactions)."""
    return KafkaClients.from_configs({"kafka.bootstrap.servers": kafka.bootstrap,
                                      "exactly.once.source.support": "disabled", **extra})


def _consume_all(bootstrap: str, topic: str, partitions: int) -> list:
    """Every record of the topic, read straight with confluent-kafka (no lakeconnect code)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "test-reader", "enable.auto.commit": False,
                         "enable.partition.eof": True})
    out = []
    try:
        for p in range(partitions):
            _, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
            if high == 0:
                continue
            consumer.assign([TopicPartition(topic, p, 0)])
            deadline = time.monotonic() + 30
            got = 0
            while got < high and time.monotonic() < deadline:
                for m in consumer.consume(1000, 1.0):
                    if m.error() is None:
                        out.append(m)
                        got += 1
    finally:
        consumer.close()
    return out


# --- client settings -------------------------------------------------------------------------------

def test_java_client_keys_become_librdkafka_settings_in_three_layers():
    c = KafkaClients.from_configs(
        {"kafka.bootstrap.servers": "b1:9092,b2:9092", "kafka.security.protocol": "SASL_SSL",
         "kafka.sasl.mechanism": "PLAIN", "kafka.sasl.password": "s3cr3t-pw",
         "producer.buffer.memory": "33554432", "producer.max.request.size": "2000000",
         "producer.key.serializer": "org.apache.kafka.common.serialization.StringSerializer",
         "consumer.fetch.max.wait.ms": "100", "consumer.max.poll.records": "10",
         "consumer.partition.assignment.strategy": "org.apache.kafka.clients.consumer.RoundRobinAssignor",
         "lake.root": "./lake"},
        {"producer.override.compression.type": "zstd", "producer.override.acks": "1",
         "consumer.override.isolation.level": "read_uncommitted", "connector.class": "x"})
    assert c.producer == {
        "bootstrap.servers": "b1:9092,b2:9092", "security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN",
        "sasl.password": "s3cr3t-pw", "enable.idempotence": "true", "acks": "1",
        "queue.buffering.max.kbytes": "32768", "message.max.bytes": "2000000", "compression.type": "zstd"}
    assert c.consumer == {
        "bootstrap.servers": "b1:9092,b2:9092", "security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN",
        "sasl.password": "s3cr3t-pw", "isolation.level": "read_uncommitted", "fetch.wait.max.ms": "100",
        "partition.assignment.strategy": "roundrobin"}
    assert "s3cr3t-pw" not in repr(c) and "s3cr3t-pw" not in repr(KafkaTopics(c))


def test_the_override_policy_speaks_as_kafka_does():
    overrides = {"consumer.override.fetch.min.bytes": "123", "consumer.override.security.protocol": "PLAINTEXT"}
    assert override_problems("All", overrides) == []
    principal = override_problems("Principal", overrides)
    assert [(p.key, p.message) for p in principal] == [
        ("consumer.override.fetch.min.bytes",
         "The 'Principal' policy does not allow 'fetch.min.bytes' to be overridden in the connector configuration.")]
    assert [p.key for p in override_problems("None", overrides)] == sorted(overrides)
    with pytest.raises(ConfigError, match="'Principal' policy does not allow 'fetch.min.bytes'"):
        KafkaClients.from_configs({"kafka.bootstrap.servers": "b:1", "lake.client.config.override.policy": "Principal"},
                                  overrides)


def test_the_worker_chooses_the_backend_and_kafka_needs_its_brokers(tmp_path):
    worker = parse_worker({"key.converter": "org.apache.kafka.connect.storage.StringConverter",
                           "value.converter": "org.apache.kafka.connect.storage.StringConverter"})
    assert isinstance(open_topics(worker.originals, str(tmp_path)), DeltaTopics)
    with pytest.raises(ConfigError, match="kafka.bootstrap.servers: is required with topic.backend=kafka"):
        open_topics({"topic.backend": "kafka"}, str(tmp_path))
    with pytest.raises(ConfigError, match="topic.backend"):
        parse_worker({"key.converter": "org.apache.kafka.connect.storage.StringConverter",
                      "value.converter": "org.apache.kafka.connect.storage.StringConverter",
                      "topic.backend": "pulsar"})


# --- producing -------------------------------------------------------------------------------------

def test_records_land_in_the_partitions_kafkas_producer_picks(spark, kafka):
    name = kafka.unique_topic("keyed")
    kafka.create_topic(name, 6)
    topic = KafkaTopic(_clients(kafka), name)
    ts = dt.datetime(2026, 11, 24, 12, 0, 0, 123000, tzinfo=dt.timezone.utc)
    rows = [(i, f"key-{i % 37}".encode(), f"value-{i}".encode(), None, ts, [("h", f"{i}".encode()), ("n", None)])
            for i in range(300)]
    rows += [(300 + i, None, f"unkeyed-{i}".encode(), None, ts, []) for i in range(50)]
    rows += [(400, b"pinned", b"to-five", 5, ts, [])]
    df = spark.createDataFrame(rows, "seq long, key binary, value binary, partition int, timestamp timestamp, "
                                     "headers array<struct<key:string,value:binary>>")
    result = topic.append(df, app_id="test", version=1)

    got = _consume_all(kafka.bootstrap, name, 6)
    assert len(got) == result.count == len(rows)
    per_partition = {}
    for m in got:
        per_partition[m.partition()] = per_partition.get(m.partition(), 0) + 1
        if m.key() == b"pinned":
            assert m.partition() == 5
        elif m.key() is not None:
            assert m.partition() == partition_for_key(m.key(), 6), m.key()
            i = int(m.value().decode().split("-")[1])
            assert m.headers() == [("h", f"{i}".encode()), ("n", None)]
        assert m.timestamp()[1] == int(ts.timestamp() * 1000)
    assert {p: a.count for p, a in result.partitions.items()} == per_partition
    assert sorted(m.value() for m in got) == sorted(r[2] for r in rows)
    d = topic.describe()
    assert d.partitions == 6 and d.end_offsets == {p: per_partition.get(p, 0) for p in range(6)}


def test_a_partition_outside_the_topic_fails_the_batch_clearly(spark, kafka):
    name = kafka.unique_topic("small")
    kafka.create_topic(name, 2)
    df = spark.createDataFrame([(1, b"k", b"v", 7)], "seq long, key binary, value binary, partition int")
    with pytest.raises(Exception, match=f"topic '{name}' has 2 partitions; record partition 7 is outside"):
        KafkaTopic(_clients(kafka), name).append(df, app_id="test", version=1)


def test_a_topic_that_does_not_exist_is_named(spark, kafka):
    name = kafka.unique_topic("missing")
    topic = KafkaTopic(_clients(kafka), name)
    assert not topic.exists()
    df = spark.createDataFrame([(1, b"k", b"v")], "seq long, key binary, value binary")
    with pytest.raises(StateError, match=f"topic '{name}' does not exist on .*lakeconnect topics create {name}"):
        topic.append(df, app_id="test", version=1)


def test_a_record_too_large_names_the_setting_to_raise(spark, kafka):
    name = kafka.unique_topic("large")
    kafka.create_topic(name, 1)
    topic = KafkaTopic(_clients(kafka, **{"producer.max.request.size": "2000"}), name)
    df = spark.createDataFrame([(1, b"k", b"x" * 5000)], "seq long, key binary, value binary")
    with pytest.raises(ConfigError, match="larger than the producer's message.max.bytes; raise "
                                          "producer.override.max.request.size"):
        topic.append(df, app_id="test", version=1)
    assert topic.describe().end_offsets == {0: 0}

    # The producer would send it, the topic's max.message.bytes refuses it: the broker's own limit.
    small = kafka.unique_topic("small-messages")
    kafka.create_topic(small, 1, {"max.message.bytes": "1000"})
    with pytest.raises(ConfigError, match=f"topic '{small}' partition 0 is larger than the topic's "
                                          "max.message.bytes .*MSG_SIZE_TOO_LARGE"):
        KafkaTopic(_clients(kafka), small).append(df, app_id="test", version=1)
    assert KafkaTopic(_clients(kafka), small).describe().end_offsets == {0: 0}


def test_an_unreachable_cluster_is_a_retriable_error_within_the_timeout():
    clients = KafkaClients.from_configs({"kafka.bootstrap.servers": "127.0.0.1:1"})
    started = time.monotonic()
    with pytest.raises(RetriableError, match="cannot reach the Kafka cluster at 127.0.0.1:1"):
        KafkaTopic(clients, "anything", timeout_s=2).exists()
    assert time.monotonic() - started < 15
    # the worker's kafka.default.api.timeout.ms, the Java clients' name, is every call's bound
    clients = KafkaClients.from_configs({"kafka.bootstrap.servers": "127.0.0.1:1", "kafka.default.api.timeout.ms": "1500"})
    assert clients.api_timeout_s == 1.5 and "default.api.timeout.ms" not in clients.producer | clients.consumer
    started = time.monotonic()
    with pytest.raises(RetriableError, match="cannot reach the Kafka cluster at 127.0.0.1:1"):
        KafkaTopic(clients, "anything").exists()
    assert 1.4 < time.monotonic() - started < 10
    assert KafkaClients.from_configs({"kafka.bootstrap.servers": "b:1"}).api_timeout_s == 30
    with pytest.raises(ConfigError, match="kafka.default.api.timeout.ms: expected a positive number of milliseconds"):
        KafkaClients.from_configs({"kafka.bootstrap.servers": "b:1", "kafka.default.api.timeout.ms": "soon"})


# --- consumer groups -------------------------------------------------------------------------------

def test_group_offsets_are_committed_and_read_back(kafka):
    name = kafka.unique_topic("group")
    kafka.create_topic(name, 3)
    clients = _clients(kafka)
    group = f"connect-{name}"
    assert group_offsets(clients, group, [(name, 0), (name, 1)]) == {}
    commit_group(clients, group, {(name, 0): 0, (name, 2): 0})
    assert group_offsets(clients, group, [(name, 0), (name, 1), (name, 2)]) == {(name, 0): 0, (name, 2): 0}
