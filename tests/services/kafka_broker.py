"""A real Apache Kafka broker for the tests: KRaft mode, one process as broker and controller, on 127.0.0.1.

up.sh runs `prepare` (free ports, server.properties and log4j2 settings, a freshly formatted log dir)
and then `java ... kafka.Kafka server.properties` from the jars tests/services/fetch_jars.sh fetched,
then `check` (metadata, the start-up topics created through the admin API, and a produce/consume round
trip with a `group.protocol=consumer` consumer). A broker is new at every start: topics left by an
earlier session would only hide a test that forgot to create its own.

The settings are a single-node cluster's (replication factor 1 for the internal topics) and those of
MSK's defaults where tests care: `auto.create.topics.enable=false`, so a topic a test did not create
is missing, as on most production clusters.

Usage: python tests/services/kafka_broker.py prepare --dir D   (prints the bootstrap address)
       python tests/services/kafka_broker.py check --bootstrap B [--topics NAME:PARTS ...] [--timeout S]
"""

from __future__ import annotations

import argparse
import base64
import shutil
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

SELFTEST_TOPIC = "lakeconnect-selftest"

SERVER_PROPERTIES = """\
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:{controller}
listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller}
advertised.listeners=PLAINTEXT://127.0.0.1:{port}
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs={data}
num.partitions=1
auto.create.topics.enable=false
offsets.topic.replication.factor=1
offsets.topic.num.partitions=5
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=5
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
# Tests abort and fence transactions: let the coordinator clean up quickly.
transaction.abort.timed.out.transaction.cleanup.interval.ms=2000
"""

LOG4J2 = """\
rootLogger.level=WARN
rootLogger.appenderRef.out.ref=out
appender.out.type=Console
appender.out.name=out
appender.out.layout.type=PatternLayout
appender.out.layout.pattern=[%d] %p %m (%c)%n
logger.started.name=kafka.server.KafkaRaftServer
logger.started.level=INFO
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def prepare(directory: Path, jars: Path, port: int | None) -> str:
    """Writes the broker's settings under `directory` and formats a new, empty log dir; the bootstrap."""
    data = directory / "data"
    shutil.rmtree(data, ignore_errors=True)
    directory.mkdir(parents=True, exist_ok=True)
    port = port or free_port()
    controller = free_port()
    while controller == port:
        controller = free_port()
    (directory / "server.properties").write_text(
        SERVER_PROPERTIES.format(port=port, controller=controller, data=data))
    (directory / "log4j2.properties").write_text(LOG4J2)
    cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
    subprocess.run(
        ["java", "-Xshare:auto", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
         f"-Dlog4j2.configurationFile={directory / 'log4j2.properties'}", "-cp", f"{jars}/*",
         "kafka.tools.StorageTool", "format", "-t", cluster_id, "-c", str(directory / "server.properties")],
        check=True, stdout=subprocess.DEVNULL, stderr=sys.stderr)
    return f"127.0.0.1:{port}"


def check(bootstrap: str, topics: list[str], timeout: float) -> int:
    """0 when the broker answers: topics created (with their partitions), one record produced and read
    back by a consumer of the new group protocol."""
    from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    deadline = time.monotonic() + timeout
    admin = AdminClient({"bootstrap.servers": bootstrap})
    wanted = {SELFTEST_TOPIC: 1}
    for spec in topics:
        name, _, parts = spec.partition(":")
        wanted[name] = int(parts or 1)
    while True:  # the controller may need a moment before it accepts CreateTopics
        try:
            existing = admin.list_topics(timeout=5).topics
            break
        except KafkaException as e:
            if time.monotonic() > deadline:
                print(f"kafka_broker check: no metadata from {bootstrap}: {e}", file=sys.stderr)
                return 1
            time.sleep(0.5)
    new = [NewTopic(n, p, 1) for n, p in wanted.items() if n not in existing]
    for name, future in (admin.create_topics(new, request_timeout=timeout).items() if new else []):
        try:
            future.result(timeout)
        except KafkaException as e:
            if e.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                print(f"kafka_broker check: creating topic {name}: {e}", file=sys.stderr)
                return 1
    payload = uuid.uuid4().hex.encode()
    producer = Producer({"bootstrap.servers": bootstrap, "message.timeout.ms": int(timeout * 1000)})
    producer.produce(SELFTEST_TOPIC, payload)
    if producer.flush(max(0.1, deadline - time.monotonic())) != 0:
        print(f"kafka_broker check: produce to {SELFTEST_TOPIC} not acknowledged", file=sys.stderr)
        return 1
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"lakeconnect-selftest-{uuid.uuid4().hex}",
                         "group.protocol": "consumer", "auto.offset.reset": "earliest",
                         "enable.auto.commit": False})
    try:
        consumer.subscribe([SELFTEST_TOPIC])
        while time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is None and msg.value() == payload:
                return 0
    finally:
        consumer.close()
    print(f"kafka_broker check: the record was not read back from {SELFTEST_TOPIC} within {timeout:g}s",
          file=sys.stderr)
    return 1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--dir", type=Path, required=True)
    p.add_argument("--jars", type=Path, required=True)
    p.add_argument("--port", type=int, default=0, help="default: a free one")
    c = sub.add_parser("check")
    c.add_argument("--bootstrap", required=True)
    c.add_argument("--timeout", type=float, default=30.0)
    c.add_argument("topics", nargs="*", metavar="NAME:PARTITIONS")
    args = ap.parse_args(argv)
    if args.command == "prepare":
        print(prepare(args.dir, args.jars, args.port or None))
        return 0
    return check(args.bootstrap, args.topics, args.timeout)


if __name__ == "__main__":
    sys.exit(main())
