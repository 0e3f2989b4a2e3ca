"""Topic-level configs, Kafka's names and defaults: what a topic keeps in its metadata.

The ones lakeconnect acts on are defined with Kafka's types, defaults and checks (`cleanup.policy`,
`retention.ms`, `retention.bytes`, `delete.retention.ms`, `min.compaction.lag.ms`,
`max.compaction.lag.ms`, `message.timestamp.type`). Kafka's other topic configs are accepted and kept,
so a topic created from a Kafka command line or a connector's `topic.creation.default.*` keys loses
nothing, but they change nothing here (segments, replicas and flushing are Delta's and the store's
business). An unknown name is refused with Kafka's message.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ingest.config.configdef import ConfigDef, Importance, Range, Type, ValidString
from ingest.errors import ConfigError, Problem

CLEANUP_POLICY = "cleanup.policy"
RETENTION_MS = "retention.ms"
RETENTION_BYTES = "retention.bytes"
DELETE_RETENTION_MS = "delete.retention.ms"
MIN_COMPACTION_LAG_MS = "min.compaction.lag.ms"
MAX_COMPACTION_LAG_MS = "max.compaction.lag.ms"
TIMESTAMP_TYPE = "message.timestamp.type"
DELETE, COMPACT = "delete", "compact"
LONG_MAX = 2**63 - 1

# Kafka's topic configs that are kept but have no effect on a topic table.
KEPT_ONLY = frozenset({
    "compression.type", "file.delete.delay.ms", "flush.messages", "flush.ms",
    "follower.replication.throttled.replicas", "index.interval.bytes", "leader.replication.throttled.replicas",
    "local.retention.bytes", "local.retention.ms", "max.message.bytes", "message.downconversion.enable",
    "message.format.version", "message.timestamp.after.max.ms", "message.timestamp.before.max.ms",
    "message.timestamp.difference.max.ms", "min.cleanable.dirty.ratio", "min.insync.replicas", "preallocate",
    "remote.storage.enable", "segment.bytes", "segment.index.bytes", "segment.jitter.ms", "segment.ms",
    "unclean.leader.election.enable", "replication.factor",
})


def topic_config_def() -> ConfigDef:
    d = ConfigDef()
    d.define(CLEANUP_POLICY, Type.LIST, [DELETE], ValidString.of(DELETE, COMPACT), Importance.MEDIUM,
             doc="delete: records older than retention.ms (or past retention.bytes) are removed by maintenance; "
                 "compact: only the latest record of each key is kept; both: compact, then delete.")
    d.define(RETENTION_MS, Type.LONG, 604_800_000, Range.at_least(-1), Importance.MEDIUM,
             doc="How long records are kept (by their timestamp) under cleanup.policy delete; -1: no time limit.")
    d.define(RETENTION_BYTES, Type.LONG, -1, Range.at_least(-1), Importance.MEDIUM,
             doc="The most bytes (keys and values) a partition keeps under cleanup.policy delete; "
                 "-1: no size limit.")
    d.define(DELETE_RETENTION_MS, Type.LONG, 86_400_000, Range.at_least(0), Importance.MEDIUM,
             doc="How long a tombstone of a compacted topic is kept after it is written.")
    d.define(MIN_COMPACTION_LAG_MS, Type.LONG, 0, Range.at_least(0), Importance.MEDIUM,
             doc="Records younger than this are never compacted away.")
    d.define(MAX_COMPACTION_LAG_MS, Type.LONG, LONG_MAX, Range.at_least(1), Importance.LOW,
             doc="Kept for Kafka's check against min.compaction.lag.ms; compaction runs when maintenance runs.")
    d.define(TIMESTAMP_TYPE, Type.STRING, "CreateTime", ValidString.of("CreateTime", "LogAppendTime"),
             Importance.MEDIUM, doc="CreateTime keeps the producer's timestamp; LogAppendTime stamps the append.")
    return d


def topic_configs(topic: str, configs: Mapping[str, Any]) -> dict[str, Any]:
    """`configs` checked as Kafka checks a topic's configs; the typed values of every config lakeconnect acts
    on, defaults filled in. Every problem is raised at once, naming the config."""
    definition = topic_config_def()
    known = {k: v for k, v in configs.items() if k in definition}
    problems = [Problem(k, f"not a topic config (Kafka's words: Unknown topic config name: {k})") for k in configs
                if k not in definition and k not in KEPT_ONLY]
    values, found = definition.validate(known, strict=True)
    problems += found
    if not problems and values[MIN_COMPACTION_LAG_MS] > values[MAX_COMPACTION_LAG_MS]:
        problems.append(Problem(MIN_COMPACTION_LAG_MS, f"conflict: {MIN_COMPACTION_LAG_MS} "
                                f"{values[MIN_COMPACTION_LAG_MS]} is larger than {MAX_COMPACTION_LAG_MS} "
                                f"{values[MAX_COMPACTION_LAG_MS]}"))
    if problems:
        raise ConfigError(problems, source=f"the configs of topic '{topic}'")
    return values


def compacted(values: Mapping[str, Any]) -> bool:
    return COMPACT in values[CLEANUP_POLICY]
