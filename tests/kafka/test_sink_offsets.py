"""A sink's offsets on a Kafka topic backend, changed as Kafka Connect users change them (KIP-875's
`offsets reset` and `offsets alter`, and the book's ch. 7 `kafka-consumer-groups --reset-offsets`): each
change moves where the next run reads, and the consumer group `connect-<name>` says where the sink is."""

from __future__ import annotations

import json
from pathlib import Path

from ingest.topics.kafka import KafkaClients, group_positions
from tests.conftest import cli_here
from tests.kafka.test_pipeline import kafka_worker, lake_offsets, produce


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def _run(worker: Path) -> None:
    r = cli_here("run", "fs", worker=worker)
    assert r.returncode == 0, r.stderr


def _change(worker: Path, *args: str) -> None:
    for command in (("connectors", "stop", "fs"), args, ("connectors", "resume", "fs")):
        r = cli_here(*command, worker=worker)
        assert r.returncode == 0, (command, r.stderr)


def test_reset_alter_and_the_groups_own_reset_move_the_sink(tmp_path, kafka):
    topic = kafka.unique_topic("sinkoffsets")
    kafka.create_topic(topic, 1)
    worker = kafka_worker(tmp_path, kafka)
    produce(worker, topic, [f"k{i}\tv{i}" for i in range(3)])
    out = tmp_path / "out.txt"
    config = tmp_path / "fs.json"
    config.write_text(json.dumps({"name": "fs", "config": {"connector.class": "FileStreamSink", "topics": topic,
                                                           "file": str(out)}}))
    assert cli_here("connectors", "create", str(config), worker=worker).returncode == 0
    clients = KafkaClients.from_configs({"kafka.bootstrap.servers": kafka.bootstrap})
    group = "connect-fs"

    def group_offset():
        found = group_positions(clients, group, [(topic, 0)])
        return (found[(topic, 0)].offset, found[(topic, 0)].ours) if found else None

    _run(worker)
    assert _lines(out) == ["v0", "v1", "v2"] and group_offset() == (3, True)

    # KIP-875's reset: the lake's offsets and the group go; the next run reads from the start again
    _change(worker, "offsets", "reset", "fs")
    assert group_offset() is None and lake_offsets(worker, "fs") == {}
    _run(worker)
    assert _lines(out) == ["v0", "v1", "v2"] * 2 and group_offset() == (3, True)

    # the book's `kafka-consumer-groups --reset-offsets --to-offset 1 --execute`: an offset without our mark
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": kafka.bootstrap})
    admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0, 1)])])[
        group].result()
    assert group_offset() == (1, False)
    r = cli_here("run", "fs", worker=worker)
    assert r.returncode == 0 and "was moved to offset 1 by another client" in r.stdout + r.stderr, r.stderr
    assert _lines(out)[6:] == ["v1", "v2"] and lake_offsets(worker, "fs") == {0: 3} and group_offset() == (3, True)

    # KIP-875's alter: the group says the new offset (ours), and the run reads from it
    offsets = tmp_path / "offsets.json"
    partition = {"kafka_topic": topic, "kafka_partition": 0}
    offsets.write_text(json.dumps({"offsets": [{"partition": partition, "offset": {"kafka_offset": 2}}]}))
    _change(worker, "offsets", "alter", "fs", str(offsets))
    assert group_offset() == (2, True) and lake_offsets(worker, "fs") == {0: 2}
    _run(worker)
    assert _lines(out)[8:] == ["v2"]

    # an alter to null resets the one partition: the group forgets it, the run starts from the log start
    offsets.write_text(json.dumps({"offsets": [{"partition": partition, "offset": None}]}))
    _change(worker, "offsets", "alter", "fs", str(offsets))
    assert group_offset() is None
    _run(worker)
    assert _lines(out)[9:] == ["v0", "v1", "v2"] and group_offset() == (3, True)
