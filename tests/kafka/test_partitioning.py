"""Keyed records land in the partition Kafka's own Java producer picks: the same keys produced by
`KafkaProducer` (tests/kafka/java/ProduceKeys.java, on the test bed's broker) and by lakeconnect's Kafka
topic writer, then compared key by key, for several partition counts. lakeconnect's Delta topics use the
same function (`partition_for_key`), checked here against the Java producer's answers too."""

from __future__ import annotations

import random
import subprocess
from pathlib import Path

import pytest

from ingest.topics import partition_for_key
from ingest.topics.kafka import KafkaClients, KafkaTopic
from tests.conftest import REPO
from tests.topics.test_kafka_topic import _consume_all

pytestmark = pytest.mark.services

JAVA_PRODUCER = Path(__file__).parent / "java" / "ProduceKeys.java"
CONNECT_JARS = REPO / ".jars" / "connect"


def _keys() -> list[bytes]:
    """Keys of every length 1..40 and beyond, random bytes and text, JSON keys as JsonConverter writes them."""
    rng = random.Random(20261127)
    keys = [bytes(rng.randrange(256) for _ in range(n)) for n in range(1, 41)]
    keys += [f"key-{i}".encode() for i in range(60)]
    keys += ["ключ-é-🙂".encode(), b'{"id":1001}', b'{"schema":{"type":"int32"},"payload":1001}', b"\x00" * 9]
    keys += [bytes(rng.randrange(256) for _ in range(rng.randrange(41, 300))) for _ in range(20)]
    return keys


def _java_partitions(bootstrap: str, topics: list[str], keys: list[bytes]) -> dict[str, dict[bytes, int]]:
    """{topic: {key: partition}} as Kafka's Java producer placed them (one JVM for every topic)."""
    if not any(CONNECT_JARS.glob("kafka-clients-*.jar")):
        pytest.fail(f"no kafka-clients jar in {CONNECT_JARS}: run `make setup`", pytrace=False)
    r = subprocess.run(["java", "-XX:TieredStopAtLevel=1", "-cp", f"{CONNECT_JARS}/*", str(JAVA_PRODUCER),
                        bootstrap, *topics], input="".join(k.hex() + "\n" for k in keys),
                       capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr[-3000:]
    out: dict[str, dict[bytes, int]] = {}
    for line in r.stdout.splitlines():
        topic, key, partition = line.split("\t")
        out.setdefault(topic, {})[bytes.fromhex(key)] = int(partition)
    return out


def test_keys_land_where_kafkas_java_producer_puts_them(spark, kafka):
    keys = _keys()
    counts = (1, 3, 7, 12)
    java_topics = {n: kafka.unique_topic(f"java-keys-{n}") for n in counts}
    for n, topic in java_topics.items():
        kafka.create_topic(topic, n)
    java = _java_partitions(kafka.bootstrap, list(java_topics.values()), keys)
    clients = KafkaClients.from_configs({"kafka.bootstrap.servers": kafka.bootstrap,
                                         "exactly.once.source.support": "disabled"})
    df = spark.createDataFrame([(i, k, k) for i, k in enumerate(keys)], "seq long, key binary, value binary")
    for n in counts:
        placed_by_java = java[java_topics[n]]
        assert len(placed_by_java) == len(keys)
        assert {k: partition_for_key(k, n) for k in keys} == placed_by_java, n
        ours = kafka.unique_topic(f"lc-keys-{n}")
        kafka.create_topic(ours, n)
        KafkaTopic(clients, ours).append(df, app_id="partitioning", version=1)
        assert {m.key(): m.partition() for m in _consume_all(kafka.bootstrap, ours, n)} == placed_by_java, n
