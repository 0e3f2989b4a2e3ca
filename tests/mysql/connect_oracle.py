"""The real Debezium in the real Kafka Connect, as an oracle for the MySQL CDC connector's records.

`ConnectWorker` starts ONE Kafka Connect standalone worker (one JVM, `ConnectStandalone worker.properties`
with no connector files: connectors come and go through its REST API; or, `distributed=True`, a distributed
worker alone in its group, its internal topics on the broker) on the jars
tests/services/fetch_jars.sh fetched, writing to the test bed's real broker with JsonConverter for keys
and values. Offsets go to a file under the worker's directory. `read_topic` reads a topic back with
confluent-kafka: (topic, partition, offset, key bytes, value bytes, headers), as Kafka holds them.

Flavours (the class path of each):
  - `debezium23`: Debezium's MySQL connector 2.3.4.Final with Kafka Connect 3.5.1, all on one class
    path (.jars/debezium23/*): the envelope the book prints, and the one lakeconnect re-creates.
  - `debezium3`: Debezium 3.5.0.Final's MariaDB connector (.jars/debezium3/*) on Kafka Connect 4.1.1
    (.jars/connect/*).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
JARS = REPO / ".jars"
CONNECT_MAIN = "org.apache.kafka.connect.cli.ConnectStandalone"
CONNECT_DISTRIBUTED = "org.apache.kafka.connect.cli.ConnectDistributed"

# Class path and logging set-up per flavour (2.3's Connect 3.5 logs through reload4j, 4.1's through log4j2), and
# what the flavour needs changed in a 2.3 connector JSON: 3.x's MariaDB connector has its own class and
# spells the TLS modes as MariaDB's driver does.
FLAVOURS = {
    "debezium23": {"classpath": [JARS / "debezium23"], "log": "log4j.properties",
                   "connector.class": "io.debezium.connector.mysql.MySqlConnector", "overrides": {}},
    "debezium3": {"classpath": [JARS / "connect", JARS / "debezium3"], "log": "log4j2.properties",
                  "connector.class": "io.debezium.connector.mariadb.MariaDbConnector",
                  "overrides": {"database.ssl.mode": "disable"}},
}

# Start-up dominates a worker's time in tests: C1 only, the JDK's class-data archive, one GC thread.
JVM_FLAGS = ["-XX:TieredStopAtLevel=1", "-Xshare:auto", "-XX:+UseSerialGC", "-Xmx512m", "-Duser.timezone=UTC"]

LOG4J1 = """log4j.rootLogger=INFO, file
log4j.appender.file=org.apache.log4j.FileAppender
log4j.appender.file.File={log}
log4j.appender.file.layout=org.apache.log4j.PatternLayout
log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.org.reflections=ERROR
log4j.logger.org.apache.kafka.clients=WARN
"""
LOG4J2 = """rootLogger.level=INFO
rootLogger.appenderRef.file.ref=file
appender.file.type=File
appender.file.name=file
appender.file.fileName={log}
appender.file.layout.type=PatternLayout
appender.file.layout.pattern=[%d] %p %m (%c)%n
logger.clients.name=org.apache.kafka.clients
logger.clients.level=WARN
"""


def jars_present(flavour: str) -> str | None:
    """None when the flavour's jars are there, else what is missing and how to fetch it."""
    for d in FLAVOURS[flavour]["classpath"]:
        if not d.is_dir() or not any(d.glob("*.jar")):
            return f"{d} has no jars: run `bash tests/services/fetch_jars.sh`"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass(frozen=True)
class Record:
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]


class ConnectWorker:
    """A Kafka Connect standalone worker in its own JVM, driven through its REST API."""

    def __init__(self, flavour: str, bootstrap: str, workdir: Path, distributed: bool = False):
        self.flavour, self.bootstrap, self.dir, self.distributed = flavour, bootstrap, workdir, distributed
        self.spec = FLAVOURS[flavour]
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = workdir / "connect.log"
        self.proc: subprocess.Popen | None = None
        self.started_s = 0.0

    def start(self, timeout: float = 300) -> ConnectWorker:
        self.dir.mkdir(parents=True, exist_ok=True)
        worker = self.dir / "worker.properties"
        if self.distributed:  # its own group and internal topics on the broker, named after the port
            group = f"oracle-{self.port}-{int(time.time())}"
            stores = ("config", "offset", "status")
            storage = [f"group.id={group}", *(f"{k}.storage.topic={group}-{k}s" for k in stores),
                       *(f"{k}.storage.replication.factor=1" for k in stores),
                       "offset.storage.partitions=1", "status.storage.partitions=1"]
        else:
            storage = [f"offset.storage.file.filename={self.dir / 'offsets.dat'}"]
        worker.write_text("\n".join([
            f"bootstrap.servers={self.bootstrap}",
            "key.converter=org.apache.kafka.connect.json.JsonConverter",
            "value.converter=org.apache.kafka.connect.json.JsonConverter",
            *storage,
            "offset.flush.interval.ms=500",
            f"listeners=http://127.0.0.1:{self.port}",
            "plugin.path=",
            "",
        ]))
        log_conf = self.dir / self.spec["log"]
        log_conf.write_text((LOG4J1 if self.spec["log"] == "log4j.properties" else LOG4J2).format(log=self.log))
        classpath = os.pathsep.join(str(d / "*") for d in self.spec["classpath"])
        logging = ([f"-Dlog4j.configuration=file:{log_conf}"] if self.spec["log"] == "log4j.properties"
                   else [f"-Dlog4j2.configurationFile={log_conf}"])
        t0 = time.monotonic()
        main = CONNECT_DISTRIBUTED if self.distributed else CONNECT_MAIN
        self.proc = subprocess.Popen(["java", *JVM_FLAGS, *logging, "-cp", classpath, main, str(worker)],
                                     cwd=self.dir, stdout=open(self.dir / "stdout.log", "wb"),
                                     stderr=subprocess.STDOUT)
        while time.monotonic() - t0 < timeout:
            if self.proc.poll() is not None:
                raise RuntimeError(f"Kafka Connect ({self.flavour}) exited with {self.proc.returncode}:\n"
                                   + self.tail())
            try:
                self._rest("GET", "/connectors")
                self.started_s = time.monotonic() - t0
                return self
            except (urllib.error.URLError, ConnectionError, OSError):
                time.sleep(0.5)
        raise TimeoutError(f"Kafka Connect ({self.flavour}) did not answer on {self.url} in {timeout}s:\n"
                           + self.tail())

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def tail(self, lines: int = 60) -> str:
        text = ""
        for f in (self.log, self.dir / "stdout.log"):
            if f.exists():
                text += "\n".join(f.read_text(errors="replace").splitlines()[-lines:]) + "\n"
        return text

    def _rest(self, method: str, path: str, body: dict | None = None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"Content-Type": "application/json", "Accept": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as r:
            text = r.read()
        return json.loads(text) if text else None

    def connector_config(self, config: dict[str, str]) -> dict[str, str]:
        """`config` as this flavour runs it: its connector class, and the settings only Debezium reads."""
        return {**config, "connector.class": self.spec["connector.class"], **self.spec["overrides"]}

    def put(self, name: str, config: dict[str, str]) -> None:
        try:
            self._rest("PUT", f"/connectors/{name}/config", self.connector_config(config))
        except urllib.error.HTTPError as e:
            raise RuntimeError(f"Connect refused connector {name}: {e.read().decode(errors='replace')}") from e

    def status(self, name: str) -> dict:
        return self._rest("GET", f"/connectors/{name}/status")

    def failed(self, name: str) -> str | None:
        """The stack trace of a failed connector or task, or None while it runs."""
        try:
            s = self.status(name)
        except urllib.error.HTTPError:
            return None
        for part in [s.get("connector", {})] + s.get("tasks", []):
            if part.get("state") == "FAILED":
                return part.get("trace") or "FAILED"
        return None

    def pause(self, name: str) -> None:
        self._rest("PUT", f"/connectors/{name}/pause")

    def resume(self, name: str) -> None:
        self._rest("PUT", f"/connectors/{name}/resume")

    def delete(self, name: str) -> None:
        try:
            self._rest("DELETE", f"/connectors/{name}")
        except urllib.error.HTTPError:
            pass

    def wait_for(self, name: str, done, what: str, timeout: float = 600) -> None:
        """Poll `done()` until true; fail early, with the worker's log, when the connector has failed."""
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            if done():
                return
            trace = self.failed(name)
            if trace:
                raise RuntimeError(f"{self.flavour} connector {name} failed while waiting for {what}:\n{trace}")
            if self.proc and self.proc.poll() is not None:
                raise RuntimeError(f"Kafka Connect ({self.flavour}) died while waiting for {what}:\n" + self.tail())
            time.sleep(0.5)
        raise TimeoutError(f"{self.flavour} connector {name}: no {what} in {timeout}s\n" + self.tail())


def topics(bootstrap: str, prefix: str) -> list[str]:
    from confluent_kafka.admin import AdminClient

    names = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10).topics
    return sorted(t for t in names if t == prefix or t.startswith(prefix + "."))


def read_topic(bootstrap: str, topic: str, timeout: float = 30) -> list[Record]:
    """Every record of `topic` up to its end now, by partition then offset."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "connect-oracle-reader",
                         "enable.auto.commit": False, "enable.partition.eof": False})
    try:
        meta = consumer.list_topics(topic, timeout=10).topics[topic]
        out: list[Record] = []
        for p in sorted(meta.partitions):
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
            if high <= low:
                continue
            consumer.assign([TopicPartition(topic, p, low)])
            t0 = time.monotonic()
            while (not out or out[-1].partition != p or out[-1].offset < high - 1) and time.monotonic() - t0 < timeout:
                m = consumer.poll(1.0)
                if m is None or m.error():
                    continue
                out.append(Record(m.topic(), m.partition(), m.offset(), m.key(), m.value(),
                                  tuple(m.headers() or ())))
        return out
    finally:
        consumer.close()
