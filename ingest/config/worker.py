"""The worker configuration (`conf/worker.properties`), validated the way MSK Connect validates one.

MSK's rules (seed 000): `key.converter` and `value.converter` are required; only listed `producer.` and
`consumer.` keys are allowed; a set of prefixes and keys is blocked. Other Kafka worker keys are
accepted and ignored when they mean nothing here. Keys of our own live under `lake.`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ingest.config.configdef import (Config, ConfigDef, Importance, Range, Type, ValidString, redact_url,
                                     valid_table_name)
from ingest.config.loader import load_properties_file
from ingest.config.schedule import valid_schedule
from ingest.errors import ConfigError, Problem

WORKER_ENV = "LAKECONNECT_WORKER"
DEFAULT_WORKER_FILE = Path("conf/worker.properties")

LAKE_ROOT = "lake.root"
OFFSET_STORAGE_TOPIC = "offset.storage.topic"
CONFIGS_TABLE = "lake.configs.table"
STATUS_TABLE = "lake.status.table"
RUNS_TABLE = "lake.runs.table"
LOCKS_DIR = "lake.locks.dir"
ALLOWED_PATHS = "lake.allowed.paths"
FILE_CONNECTORS_ENABLE = "file.connectors.enable"
SPARK_MASTER = "spark.master"
KEY_CONVERTER = "key.converter"
VALUE_CONVERTER = "value.converter"
HEADER_CONVERTER = "header.converter"
TOPIC_BACKEND = "topic.backend"
MAINTENANCE_SCHEDULE = "maintenance.schedule"
OVERRIDE_POLICY = "lake.client.config.override.policy"
EXACTLY_ONCE_SOURCE_SUPPORT = "exactly.once.source.support"
MARKERS_TOPIC = "lake.kafka.batch.markers.topic"
WORKER_URL = "worker.url"
RUNS_MAX = "worker.runs.max"
RUNS_QUEUE_MAX = "worker.runs.queue.max"
SHUTDOWN_TIMEOUT_MS = "worker.shutdown.timeout.ms"
TOPIC_TRACKING_ENABLE = "topic.tracking.enable"
TOPIC_TRACKING_ALLOW_RESET = "topic.tracking.allow.reset"
WORKER_KEYS = (WORKER_URL, RUNS_MAX, RUNS_QUEUE_MAX, SHUTDOWN_TIMEOUT_MS, TOPIC_TRACKING_ENABLE,
               TOPIC_TRACKING_ALLOW_RESET)
"""The worker's own keys under prefixes MSK Connect blocks (`worker.`, `topic.tracking.`): the long-running
worker's, and Kafka Connect's topic tracking (KIP-558), which MSK keeps for itself and lakeconnect's REST API
honours."""
OVERRIDE_PREFIXES = ("producer.override.", "consumer.override.", "admin.override.")
PRINCIPAL_KEYS = {"sasl.jaas.config", "sasl.mechanism", "security.protocol"}

# MSK Connect's default worker configuration.
MSK_DEFAULTS = {
    KEY_CONVERTER: "org.apache.kafka.connect.storage.StringConverter",
    VALUE_CONVERTER: "org.apache.kafka.connect.storage.StringConverter",
}

ALLOWED_PRODUCER = {
    "acks", "batch.size", "buffer.memory", "compression.type", "enable.idempotence", "key.serializer",
    "max.request.size", "metadata.max.age.ms", "metadata.max.idle.ms", "reconnect.backoff.max.ms",
    "reconnect.backoff.ms", "request.timeout.ms", "retry.backoff.ms", "value.serializer",
}
ALLOWED_CONSUMER = {
    "allow.auto.create.topics", "auto.offset.reset", "check.crcs", "fetch.max.bytes", "fetch.max.wait.ms",
    "fetch.min.bytes", "heartbeat.interval.ms", "key.deserializer", "max.partition.fetch.bytes",
    "max.poll.records", "metadata.max.age.ms", "partition.assignment.strategy", "reconnect.backoff.max.ms",
    "reconnect.backoff.ms", "request.timeout.ms", "retry.backoff.ms", "session.timeout.ms", "value.deserializer",
}
BLOCKED_PREFIXES = (
    "access.control.", "admin.", "admin.listeners.https.", "client.", "connect.", "inter.worker.", "internal.",
    "listeners.https.", "metrics.", "metrics.context.", "rest.", "sasl.", "security.", "socket.", "ssl.",
    "topic.tracking.", "worker.",
)
BLOCKED_KEYS = {
    "bootstrap.servers", "config.storage.topic", "connections.max.idle.ms",
    "connector.client.config.override.policy", "group.id", "listeners", "metric.reporters", "plugin.path",
    "receive.buffer.bytes", "response.http.headers.config", "scheduled.rebalance.max.delay.ms",
    "send.buffer.bytes", "status.storage.topic",
}


def worker_config_def() -> ConfigDef:
    d = ConfigDef()
    d.define(LAKE_ROOT, Type.STRING, "./lake", importance=Importance.HIGH, group="Lake",
             doc="Where topics and state tables live: a directory, or a URI (s3://bucket/prefix).")
    d.define(OFFSET_STORAGE_TOPIC, Type.STRING, "connect-offsets", valid_table_name, importance=Importance.HIGH,
             group="Lake",
             doc="Name of the source offsets table under <lake.root>/_connect. Reuse one to resume a "
                 "re-created connector of the same name, as MSK Connect allows.")
    d.define(CONFIGS_TABLE, Type.STRING, "connect-configs", valid_table_name, group="Lake",
             doc="Name of the connector configs table.")
    d.define(STATUS_TABLE, Type.STRING, "connect-status", valid_table_name, group="Lake",
             doc="Name of the status table.")
    d.define(RUNS_TABLE, Type.STRING, "connect-runs", valid_table_name, group="Lake",
             doc="Name of the batch runs table.")
    d.define(LOCKS_DIR, Type.STRING, None, group="Lake",
             doc="Directory of the leases that keep one run per connector task (an exclusive flock per task). "
                 "Default: <lake.root>/_locks. A lake on an object store (s3://...) cannot hold them: give a "
                 "local directory (the runs of one machine) or a shared mount (the runs of several).")
    d.define(ALLOWED_PATHS, Type.LIST, [], group="Lake",
             doc="Directories (or object-store prefixes, s3://bucket/prefix) outside the lake where connectors may "
                 "read and write files of their own: the S3 sink's store.url=file:, the Delta table sink's "
                 "delta.table.path, jdbc:sqlite: files, trust and key stores. Default: none, only the lake.")
    d.define(FILE_CONNECTORS_ENABLE, Type.BOOLEAN, False, group="Plugins",
             doc="Load FileStreamSource and FileStreamSink; they read and write arbitrary files on the worker.")
    d.define(SPARK_MASTER, Type.STRING, "local[*]", importance=Importance.HIGH, group="Spark",
             doc="The Spark master: local[*], spark://host:port, or a cluster manager URL.")
    d.define(KEY_CONVERTER, Type.CLASS, importance=Importance.HIGH, group="Converters",
             doc="Default converter for record keys; connectors may override it.")
    d.define(VALUE_CONVERTER, Type.CLASS, importance=Importance.HIGH, group="Converters",
             doc="Default converter for record values; connectors may override it.")
    d.define(HEADER_CONVERTER, Type.CLASS, "org.apache.kafka.connect.storage.SimpleHeaderConverter",
             group="Converters", doc="Default converter for header values.")
    d.define(MAINTENANCE_SCHEDULE, Type.STRING, "0 3 * * *", valid_schedule, group="Lake",
             doc="When Airflow's lakeconnect__maintenance DAG runs `lakeconnect maintenance run` (cron or preset; "
                 "none: only when triggered): topic retention and compaction, merged files, checkpoints, vacuum "
                 "and state history.")
    d.define(TOPIC_BACKEND, Type.STRING, "delta", ValidString.of("delta", "kafka"), Importance.HIGH, group="Topics",
             doc="Where topics live: delta (tables under <lake.root>/topics) or kafka (the cluster of "
                 "kafka.bootstrap.servers, with kafka.* client settings such as security.protocol and sasl.*).")
    d.define(OVERRIDE_POLICY, Type.STRING, "All", ValidString.of("None", "Principal", "All"), group="Topics",
             doc="Kafka's connector.client.config.override.policy (blocked in MSK worker files, so it lives "
                 "here): which producer.override.* / consumer.override.* keys connectors may set.")
    d.define(EXACTLY_ONCE_SOURCE_SUPPORT, Type.STRING, "enabled", ValidString.of("disabled", "preparing", "enabled",
             case_insensitive=True), group="Topics",
             doc="KIP-618, for topic.backend=kafka: enabled produces every batch in Kafka transactions, so a batch "
                 "run again after a crash adds nothing twice; disabled (or preparing) gives Kafka Connect's "
                 "at-least-once delivery, for clusters without transactions. Delta topics are always exactly-once.")
    d.define(MARKERS_TOPIC, Type.STRING, "connect-batch-markers", group="Topics",
             doc="The Kafka topic (one partition, compacted) where each transaction of a source batch records "
                 "how many of its records it committed; created when missing.")
    d.define(WORKER_URL, Type.STRING, None, _valid_url, group="Worker",
             doc="The long-running worker (`lakeconnect worker`): where it listens, and where `lakeconnect run` and "
                 "Airflow's tasks send their runs (http://HOST:PORT or https://HOST:PORT; "
                 "$LAKECONNECT_WORKER_URL wins over it, and an empty one runs in the calling process). "
                 "Default: none, each run is a process of its own.")
    d.define(RUNS_MAX, Type.INT, 0, Range.at_least(0), group="Worker",
             doc="Runs the worker runs at once, each connector's Spark jobs in a scheduler pool of their own; "
                 "more wait their turn. 0: two per core of the machine.")
    d.define(RUNS_QUEUE_MAX, Type.INT, 1000, Range.at_least(1), group="Worker",
             doc="Runs that may wait for their turn; beyond them a run request is refused (429, exit code 75).")
    d.define(SHUTDOWN_TIMEOUT_MS, Type.LONG, 30_000, Range.at_least(0), group="Worker",
             doc="On SIGTERM or Ctrl-C the worker starts no run and waits this long for the batches in progress "
                 "(runs until caught up stop after their current batch); a batch still running then resumes at "
                 "the next run.")
    d.define(TOPIC_TRACKING_ENABLE, Type.BOOLEAN, True, importance=Importance.LOW, group="Worker",
             doc="Kafka Connect's: the REST API answers GET /connectors/{name}/topics with the topics each "
                 "connector's committed batches wrote (a source) or read (a sink) since its set was last reset; "
                 "false answers it (and the reset) with 403 \"Topic tracking is disabled.\"")
    d.define(TOPIC_TRACKING_ALLOW_RESET, Type.BOOLEAN, True, importance=Importance.LOW, group="Worker",
             doc="Kafka Connect's: PUT /connectors/{name}/topics/reset empties a connector's set of active topics; "
                 "false answers it with 403 \"Topic tracking reset is disabled.\"")
    d.define("config.providers", Type.LIST, "", group="Config providers",
             doc="Names of config providers, each with config.providers.<name>.class.")
    for prefix in ("spark.", "lake.storage.", "config.providers.", "key.converter.", "value.converter.",
                   "header.converter.", "producer.", "consumer.", "offset.", "task.", "topic.creation.", "kafka."):
        d.allow_prefix(prefix)
    return d


def _valid_url(key: str, value: object) -> str | None:
    from urllib.parse import urlsplit

    if value is None or value == "":
        return None
    try:
        parts = urlsplit(str(value))
        port = parts.port
    except ValueError:
        port = None
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname or port is None \
            or parts.path not in ("", "/") or parts.query or parts.fragment:
        return f"expected http://HOST:PORT or https://HOST:PORT, got '{redact_url(str(value))[:200]}'"
    return None


def _msk_rules(raw: Mapping[str, str]) -> list[Problem]:
    problems = []
    for key in raw:
        if key in BLOCKED_KEYS:
            problems.append(Problem(key, "is not allowed in a worker configuration (blocked key, as in MSK Connect)"))
        elif key.startswith("producer.") and key[len("producer."):] not in ALLOWED_PRODUCER:
            problems.append(Problem(key, "is not a supported producer. property; supported: "
                                    + ", ".join(sorted("producer." + k for k in ALLOWED_PRODUCER))))
        elif key.startswith("consumer.") and key[len("consumer."):] not in ALLOWED_CONSUMER:
            problems.append(Problem(key, "is not a supported consumer. property; supported: "
                                    + ", ".join(sorted("consumer." + k for k in ALLOWED_CONSUMER))))
        else:
            blocked = next((p for p in BLOCKED_PREFIXES if key.startswith(p)), None) if key not in WORKER_KEYS else None
            if blocked:
                problems.append(Problem(key, f"properties starting with '{blocked}' are not allowed in a worker "
                                        "configuration (blocked prefix, as in MSK Connect)"))
    return problems


def parse_worker(raw: Mapping[str, str], *, source: str | None = None) -> Config:
    d = worker_config_def()
    # Other Kafka worker keys are accepted, as MSK accepts them; our own namespace is checked strictly.
    _, problems = d.validate(raw, strict=False)
    problems += [Problem(k, "unknown lake key") for k in raw
                 if k.startswith("lake.") and not d.accepts(k) and not k.startswith("lake.storage.")]
    problems += _msk_rules(raw)
    if problems:
        raise ConfigError(problems, source=source)
    return d.parse(raw, strict=False)


def worker_path(explicit: str | None = None) -> Path | None:
    """--worker FILE, else $LAKECONNECT_WORKER, else conf/worker.properties when it exists."""
    if explicit:
        return Path(explicit)
    if os.environ.get(WORKER_ENV):
        return Path(os.environ[WORKER_ENV])
    return DEFAULT_WORKER_FILE if DEFAULT_WORKER_FILE.exists() else None


def load_worker(explicit: str | None = None, overrides: Mapping[str, str] | None = None) -> Config:
    path = worker_path(explicit)
    raw = dict(MSK_DEFAULTS) if path is None else load_properties_file(path)
    raw.update(overrides or {})
    return parse_worker(raw, source=str(path) if path else "the default worker configuration")


def spark_settings(worker: Config) -> dict[str, str]:
    return {k: str(v) for k, v in worker.originals.items() if k.startswith("spark.")}


def storage_options(worker: Config) -> dict[str, str]:
    return {k[len("lake.storage."):]: str(v) for k, v in worker.originals.items() if k.startswith("lake.storage.")}


def override_problems(policy: str, connector: Mapping[str, Any]) -> list[Problem]:
    """The connector's client overrides the worker's policy forbids, in Kafka's words."""
    problems = []
    for k in connector:
        prefix = next((p for p in OVERRIDE_PREFIXES if k.startswith(p)), None)
        if prefix is None:
            continue
        name = k[len(prefix):]
        if policy == "None" or (policy == "Principal" and name not in PRINCIPAL_KEYS):
            problems.append(Problem(k, f"The '{policy}' policy does not allow '{name}' to be overridden in the "
                                       "connector configuration."))
    return problems
