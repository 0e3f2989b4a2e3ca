"""The S3 sink reading its topic from Kafka, killed at every step of a batch and inside its upload tasks,
then run again (the steps in one chain, each run resuming what the one before left): the objects, the lake's offsets and the consumer group `connect-<name>` are those of a
run that never crashed. Against the test bed's real Kafka broker. Only the killed run is a CLI process;
the others are made in this process (tests/conftest.py `run_here`)."""

from __future__ import annotations

import pytest

from ingest.config.worker import load_worker
from ingest.runtime.faults import SINK_STEPS
from ingest.topics.kafka import KafkaClients, KafkaTopic, group_offsets
from tests.conftest import run_here
from tests.crash_kit import kill_at_each_step
from tests.kafka.test_pipeline import kafka_worker
from tests.s3.test_book import local_objects
from tests.s3.test_exactly_once import RECORDS, sink_config

pytestmark = pytest.mark.services


def _run(root, spark, kafka, crashes: list[str]):
    """A fresh topic holding RECORDS, the sink on a local store, killed after each of `crashes` in turn
    and run to its end; (objects, lake offsets, group offsets), with the topic's name written as `orders`."""
    from ingest.runtime.worker import Worker

    topic = kafka.unique_topic("orders")
    kafka.create_topic(topic, 5)
    clients = KafkaClients.from_configs({"kafka.bootstrap.servers": kafka.bootstrap,
                                         "exactly.once.source.support": "disabled"})
    rows = [(key.encode(), value.encode(), i) for i, (key, _, value) in enumerate(r.partition("\t") for r in RECORDS)]
    KafkaTopic(clients, topic).append(spark.createDataFrame(rows, "key binary, value binary, seq long"),
                                      app_id="producer", version=1)
    store = root / "objects"
    (store / "exports").mkdir(parents=True)
    worker_file = kafka_worker(root, kafka)
    Worker(load_worker(str(worker_file))).create("s3sink", sink_config(topics=topic, **{"store.url": store.as_uri()}))
    kill_at_each_step(worker_file, "s3sink", crashes)
    run_here(worker_file, "s3sink")
    objects = {k.replace(topic, "orders"): v for k, v in local_objects(store / "exports").items()}
    lake = {o["partition"]["kafka_partition"]: o["offset"]["kafka_offset"]
            for o in Worker(load_worker(str(worker_file))).offsets("s3sink")}
    group = {p: o for (_, p), o in group_offsets(clients, "connect-s3sink", [(topic, p) for p in range(5)]).items()}
    return objects, lake, group


@pytest.fixture(scope="module")
def baseline(tmp_path_factory, spark, kafka):
    objects, lake, group = _run(tmp_path_factory.mktemp("kafka-sink-clean"), spark, kafka, [])
    assert objects and lake and group == lake
    return objects, lake


@pytest.mark.parametrize("crashes", [list(SINK_STEPS), ["upload:1"]], ids=["each-step", "inside-upload"])
def test_sink_on_kafka_killed_at_each_step(tmp_path, spark, kafka, baseline, crashes):
    objects, lake, group = _run(tmp_path, spark, kafka, crashes)
    assert (objects, lake) == baseline
    assert group == lake  # the group caught up with the lake's offsets on the run after the crash
