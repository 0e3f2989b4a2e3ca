"""A connector's configuration: Kafka Connect's common keys, the plugin's own keys, converters,
transforms and predicates, validated together so that every problem is reported at once.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ingest.api import ExactlyOnceSupport
from ingest.config.configdef import (Config, ConfigDef, Importance, Range, Type, ValidRegex, ValidString,
                                     valid_table_name)
from ingest.config.providers import ConfigResolver, has_placeholders
from ingest.config.schedule import valid_schedule
from ingest.config.topic_configs import topic_configs
from ingest.config.paths import path_problems
from ingest.config.worker import (ALLOWED_PATHS, EXACTLY_ONCE_SOURCE_SUPPORT, FILE_CONNECTORS_ENABLE, HEADER_CONVERTER,
                                  KEY_CONVERTER, LAKE_ROOT, OVERRIDE_POLICY, TOPIC_BACKEND, VALUE_CONVERTER,
                                  override_problems)
from ingest.errors import ConfigError, Problem
from ingest.registry import PluginInfo, PluginKind, Registry
from ingest.config import secrets

NAME = "name"
CONNECTOR_CLASS = "connector.class"
TASKS_MAX = "tasks.max"
TRANSFORMS = "transforms"
PREDICATES = "predicates"
TOPICS = "topics"
TOPICS_REGEX = "topics.regex"
TOPIC_CREATION_PARTITIONS = "topic.creation.default.partitions"
TOPIC_CREATION_REPLICATION = "topic.creation.default.replication.factor"
DLQ_REPLICATION = "errors.deadletterqueue.topic.replication.factor"
DLQ_TOPIC = "errors.deadletterqueue.topic.name"
DLQ_CONTEXT_HEADERS = "errors.deadletterqueue.context.headers.enable"
ERRORS_TOLERANCE = "errors.tolerance"
RETRY_TIMEOUT = "errors.retry.timeout"
RETRY_DELAY_MAX_MS = "errors.retry.delay.max.ms"
LOG_ENABLE = "errors.log.enable"
LOG_INCLUDE_MESSAGES = "errors.log.include.messages"
AUTO_OFFSET_RESET = "consumer.override.auto.offset.reset"
EARLIEST, LATEST, NO_RESET = "earliest", "latest", "none"
SCHEDULE = "lakeconnect.schedule"
POOL = "lakeconnect.pool"


MAX_TASKS = 1024
"""tasks.max's bound: Kafka Connect has none, but each task is planned and tracked in the driver."""
MAX_NAME_LENGTH = 200
"""A connector name's bound: its Airflow DAG id (`lakeconnect__<name>`) must stay within Airflow's 250."""


def _valid_name(key: str, value: Any) -> str | None:
    """Kafka Connect's rules for a connector name (not empty, no control characters, no '/'), and ours: printable,
    at most MAX_NAME_LENGTH characters, not '.' or '..' (a name becomes a path segment of the lake's state)."""
    text = "" if value is None else str(value)
    if not text.strip():
        return "must not be empty"
    if any(ord(c) < 32 or 127 <= ord(c) < 160 for c in text):
        return "must not contain control characters"
    if "/" in text:
        return "must not contain '/'"
    if not text.isprintable():
        return "must be printable text (no format or separator characters)"
    if len(text) > MAX_NAME_LENGTH:
        return f"must be at most {MAX_NAME_LENGTH} characters, not {len(text)}"
    if text.strip() in (".", ".."):
        return "must not be '.' or '..'"
    return None


def valid_pool(key: str, value: Any) -> str | None:
    if value is None:
        return None
    if not re.fullmatch(r"[A-Za-z0-9_.\-]{1,256}", str(value).strip()):
        return f"'{value}' is not an Airflow pool name (letters, digits, '_', '.', '-')"
    return None


def common_config_def(kind: str) -> ConfigDef:
    """Kafka's ConnectorConfig, plus SourceConnectorConfig or SinkConnectorConfig keys."""
    d = ConfigDef()
    d.define(NAME, Type.STRING, validator=_valid_name, importance=Importance.HIGH, group="Common",
             doc="Globally unique name to use for this connector.")
    d.define(CONNECTOR_CLASS, Type.STRING, importance=Importance.HIGH, group="Common",
             doc="Name or alias of the class for this connector.")
    d.define(TASKS_MAX, Type.INT, 1, Range.between(1, MAX_TASKS), Importance.HIGH, group="Common",
             doc=f"Maximum number of tasks to use for this connector (at most {MAX_TASKS}).")
    d.define(KEY_CONVERTER, Type.CLASS, None, importance=Importance.LOW, group="Common",
             doc="Converter for record keys; overrides the worker's.")
    d.define(VALUE_CONVERTER, Type.CLASS, None, importance=Importance.LOW, group="Common",
             doc="Converter for record values; overrides the worker's.")
    d.define(HEADER_CONVERTER, Type.CLASS, None, importance=Importance.LOW, group="Common",
             doc="Converter for header values; overrides the worker's.")
    d.define("config.action.reload", Type.STRING, "restart", ValidString.of("none", "restart"), Importance.LOW,
             group="Common", doc="Accepted for compatibility; configs are read at the start of every run.")
    d.define(SCHEDULE, Type.STRING, None, valid_schedule, Importance.LOW, group="Scheduling",
             doc="When the Airflow DAG of this connector runs (dags/): a cron expression or a preset "
                 "(@hourly, @daily, none, ...). Unset: every poll.interval.ms when set, else a sink with "
                 "listed topics runs when they get new records, else only when triggered.")
    d.define(POOL, Type.STRING, None, valid_pool, Importance.LOW, group="Scheduling",
             doc="The Airflow pool the runs of this connector's tasks take a slot of (create it in Airflow: "
                 "Admin > Pools, or `airflow pools set NAME SLOTS DESCRIPTION`). Connectors sharing one "
                 "machine share a pool sized to what it can run at once. Unset: Airflow's default_pool.")
    d.define(TRANSFORMS, Type.LIST, "", importance=Importance.LOW, group="Transforms",
             doc="Aliases for the transformations to be applied to records, in order.")
    d.define(PREDICATES, Type.LIST, "", importance=Importance.LOW, group="Predicates",
             doc="Aliases for the predicates used by transformations.")
    d.define(RETRY_TIMEOUT, Type.LONG, 0, Range.at_least(-1), group="Error Handling",
             doc="Maximum duration in ms a failed operation is retried; 0 = no retries, -1 = infinite.")
    d.define(RETRY_DELAY_MAX_MS, Type.LONG, 60000, Range.at_least(1), group="Error Handling",
             doc="Maximum duration in ms between consecutive retries.")
    d.define(ERRORS_TOLERANCE, Type.STRING, "none", ValidString.of("none", "all"), group="Error Handling",
             doc="none: an error fails the task; all: problematic records are skipped.")
    d.define(LOG_ENABLE, Type.BOOLEAN, False, group="Error Handling",
             doc="Log each error and the failed operation.")
    d.define(LOG_INCLUDE_MESSAGES, Type.BOOLEAN, False, group="Error Handling",
             doc="Include the record's contents in error logs.")
    for prefix in ("transforms.", "predicates.", "key.converter.", "value.converter.", "header.converter.",
                   "producer.override.", "consumer.override.", "admin.override."):
        d.allow_prefix(prefix)
    if kind == "source":
        d.define(TOPIC_CREATION_PARTITIONS, Type.INT, 1, Range.at_least(1), group="Topic Creation",
                 doc="Partitions of topics this connector creates.")
        d.define(TOPIC_CREATION_REPLICATION, Type.INT, -1, group="Topic Creation",
                 doc="Replicas of each partition of the topics this connector creates on a Kafka cluster (-1: the "
                     "broker's default.replication.factor). Delta topics have no replicas of their own: their "
                     "store keeps them durable.")
        d.define("topic.creation.groups", Type.LIST, "", group="Topic Creation", doc="Accepted for compatibility.")
        d.allow_prefix("topic.creation.")
        d.define("exactly.once.support", Type.STRING, "requested", ValidString.of("requested", "required"),
                 group="Exactly Once Support", doc="KIP-618: required refuses connectors that cannot guarantee it.")
        d.define("transaction.boundary", Type.STRING, "poll", ValidString.of("poll", "interval", "connector"),
                 group="Exactly Once Support",
                 doc="KIP-618, with Kafka topics: poll = one transaction per Spark task of a batch; interval = "
                     "one every transaction.boundary.interval.ms; connector = the whole batch in one task and one "
                     "transaction. A batch on Delta topics is always one commit.")
        d.define("transaction.boundary.interval.ms", Type.LONG, None, Range.at_least(0), group="Exactly Once Support",
                 doc="KIP-618: with transaction.boundary=interval, how often a task commits its transaction "
                     "(default: 60000).")
        d.define("offsets.storage.topic", Type.STRING, None, valid_table_name, group="Exactly Once Support",
                 doc="A connector-specific offsets table name (KIP-618), overriding the worker's.")
    else:
        d.define(TOPICS, Type.LIST, "", group="Common", doc="List of topics to consume, separated by commas.")
        d.define(TOPICS_REGEX, Type.STRING, "", ValidRegex(), group="Common",
                 doc="Regular expression giving the topics to consume.")
        d.define(AUTO_OFFSET_RESET, Type.STRING, None,
                 ValidString.of(EARLIEST, LATEST, NO_RESET, case_insensitive=True), group="Common",
                 doc="What a sink does when its committed offset of a partition is below the partition's log start "
                     "(the records were removed by the topic's retention or compaction before it read them), as a "
                     "Kafka consumer's auto.offset.reset: earliest continues from the log start, latest from the end "
                     "offset, both skipping the removed offsets with a warning (records_lost_to_retention in the "
                     "run's stats); none (the default here, where Kafka Connect's is earliest) stops the batch with "
                     "an error, so nothing is lost without a decision.")
        d.define(DLQ_TOPIC, Type.STRING, "", group="Error Handling",
                 doc="Topic for records that failed (with errors.tolerance=all).")
        d.define(DLQ_REPLICATION, Type.SHORT, 3, group="Error Handling",
                 doc="Replicas of the dead letter queue topic when it is created on a Kafka cluster (-1: the "
                     "broker's default). Not used for Delta topics.")
        d.define(DLQ_CONTEXT_HEADERS, Type.BOOLEAN, False, group="Error Handling",
                 doc="Add __connect.errors.* headers to dead letter records.")
    return d


@dataclass
class ConfiguredPlugin:
    """A converter, transform or predicate with its validated settings."""

    info: PluginInfo
    settings: dict[str, Any] = field(repr=False)  # raw values: may hold secrets
    config: Config | None = None  # its repr masks secrets


@dataclass
class ConnectorSetup:
    """Everything a run needs, validated: the connector, its config and its pipeline pieces."""

    name: str
    info: PluginInfo
    config: Config
    raw: dict[str, str] = field(repr=False)  # as given, secrets included: never printed
    key_converter: ConfiguredPlugin
    value_converter: ConfiguredPlugin
    header_converter: ConfiguredPlugin
    transforms: list[tuple[str, ConfiguredPlugin, str | None, bool]] = field(default_factory=list)
    predicates: dict[str, ConfiguredPlugin] = field(default_factory=dict)
    # Keys nothing declares: accepted and ignored, as Kafka Connect does, and shown as warnings.
    warnings: list[Problem] = field(default_factory=list)

    @property
    def kind(self) -> str:
        return self.info.cls.kind

    def connector(self):
        return self.info.cls(self.config)


def _plugin_settings(raw: Mapping[str, str], prefix: str) -> dict[str, str]:
    return {k[len(prefix):]: v for k, v in raw.items() if k.startswith(prefix)}


TOPIC_CREATION_DEFAULT = "topic.creation.default."
# topic.creation.default.* keys that are not topic configs.
_CREATION_ONLY = {"partitions", "replication.factor"}


def topic_creation_configs(config: Mapping[str, Any]) -> dict[str, str]:
    """The topic configs (KIP-158's `topic.creation.default.<config>`) of the topics a source creates."""
    return {k[len(TOPIC_CREATION_DEFAULT):]: str(v) for k, v in config.items()
            if k.startswith(TOPIC_CREATION_DEFAULT) and k[len(TOPIC_CREATION_DEFAULT):] not in _CREATION_ONLY}


def _topic_creation_problems(values: Mapping[str, Any]) -> list[Problem]:
    try:
        topic_configs("<created by this connector>", topic_creation_configs(values))
    except ConfigError as e:
        return [Problem(f"{TOPIC_CREATION_DEFAULT}{p.key}" if p.key else None, p.message) for p in e.problems]
    return []


_NO_PLACEHOLDERS = frozenset({NAME, CONNECTOR_CLASS, "transforms", "predicates"})


def validate_connector(
    raw: Mapping[str, str],
    worker: Config,
    registry: Registry,
    *,
    resolve: bool = True,
    source: str | None = None,
) -> ConnectorSetup:
    """Validate a connector config against everything it names; raise one ConfigError with all problems."""
    problems: list[Problem] = []
    values = dict(raw)
    # Keys whose values name other keys or plugins take no placeholder: a value from a provider would become
    # key names and messages ("transforms.<the secret>.type: missing").
    provided = {k for k, v in raw.items() if isinstance(v, str) and has_placeholders(v)}
    refused = provided & _NO_PLACEHOLDERS
    for key in sorted(refused):
        problems.append(Problem(key, "takes no ${provider:...} placeholder: it names keys or plugins"))
        values[key] = ""
    if resolve:
        try:
            values = ConfigResolver(registry, worker.originals).resolve(values, source=source)
        except ConfigError as e:
            problems += e.problems
        # A value that came from a provider is a secret wherever it may be echoed (a type error, say).
        secrets.register(v for k, v in values.items() if isinstance(v, str) and v != raw.get(k))
    about_placeholders = {id(p) for p in problems}  # what is said of the placeholders themselves, no value

    cls_name = values.get(CONNECTOR_CLASS)
    info = None
    if not cls_name:
        problems.append(Problem(CONNECTOR_CLASS, "missing required configuration (the connector's class or alias)"))
    else:
        try:
            info = registry.get_connector(cls_name)
        except ConfigError as e:
            problems += e.problems
    if info is not None and info.cls.worker_flag and not worker[info.cls.worker_flag]:
        problems.append(Problem(CONNECTOR_CLASS, f"{info.name} is not loaded: it can read and write arbitrary files "
                                f"on the worker; set {FILE_CONNECTORS_ENABLE}=true in the worker configuration"))
        info = None

    kind = info.cls.kind if info is not None else "source"
    definition = common_config_def(kind)
    if info is not None:
        definition = definition.merge(info.cls.config_def())
    typed, key_problems = definition.validate(values, strict=False)
    problems += [p for p in key_problems if cls_name or p.key != CONNECTOR_CLASS]  # said above already
    warnings = definition.unused(values) if info is not None else []
    config = Config(definition, typed, values)

    if kind == "sink" and not key_problems:
        has_topics, has_regex = bool(typed.get(TOPICS)), bool(typed.get(TOPICS_REGEX))
        if has_topics and has_regex:
            problems.append(Problem(TOPICS, "topics and topics.regex are mutually exclusive; set only one"))
        elif not has_topics and not has_regex:
            problems.append(Problem(TOPICS, "must be set (or topics.regex): the topics this sink consumes"))
        dlq = typed.get(DLQ_TOPIC) or ""
        if dlq and (dlq in (typed.get(TOPICS) or []) or (has_regex and _fullmatch(typed[TOPICS_REGEX], dlq))):
            # Kafka's SinkConnectorConfig.validate: a sink must not consume its own dead letters.
            problems.append(Problem(DLQ_TOPIC,
                                    f"the dead letter queue topic '{dlq}' may not be included in the list of topics "
                                    f"('topics.regex' or 'topics') consumed by the connector"))

    converters = {}
    for key, kind_ in ((KEY_CONVERTER, PluginKind.CONVERTER), (VALUE_CONVERTER, PluginKind.CONVERTER),
                       (HEADER_CONVERTER, PluginKind.CONVERTER)):
        name = values.get(key) or worker.originals.get(key) or worker[key]
        # Prefixed settings: the worker's first, the connector's win.
        settings = {**_plugin_settings(worker.originals, key + "."), **_plugin_settings(values, key + ".")}
        converters[key] = _configure(registry, kind_, name, key, settings, problems)

    predicates: dict[str, ConfiguredPlugin] = {}
    for label in typed.get(PREDICATES) or []:
        p = _configure_labelled(registry, PluginKind.PREDICATE, "predicates", label, values, problems, warnings)
        if p is not None:
            predicates[label] = p
    transforms = []
    for label in typed.get(TRANSFORMS) or []:
        t = _configure_labelled(registry, PluginKind.TRANSFORM, "transforms", label, values, problems, warnings,
                                reserved=("predicate", "negate"))
        pred = values.get(f"transforms.{label}.predicate")
        negate = str(values.get(f"transforms.{label}.negate", "false")).strip().lower()
        if negate not in ("true", "false"):
            problems.append(Problem(f"transforms.{label}.negate", f"expected a boolean (true or false), got '{negate}'"))
        if pred and pred not in (typed.get(PREDICATES) or []):
            problems.append(Problem(f"transforms.{label}.predicate",
                                    f"predicate '{pred}' is not listed in 'predicates'"))
        if t is not None:
            transforms.append((label, t, pred or None, negate == "true"))

    problems += override_problems(str(worker.originals.get(OVERRIDE_POLICY) or "All"), values)
    if kind == "source":
        problems += _topic_creation_problems(values)
    if (kind == "source" and typed.get("exactly.once.support") == "required"
            and str(worker.originals.get(TOPIC_BACKEND) or "delta").lower() == "kafka"
            and str(worker.originals.get(EXACTLY_ONCE_SOURCE_SUPPORT) or "enabled").lower() != "enabled"):
        problems.append(Problem("exactly.once.support", "is required, but the worker's exactly.once.source.support "
                                "is not enabled, so batches are produced to Kafka at least once"))
    if info is not None and not problems:
        connector = info.cls(config)
        if kind == "source" and typed.get("exactly.once.support") == "required":
            if connector.exactly_once_support() is not ExactlyOnceSupport.SUPPORTED:
                problems.append(Problem("exactly.once.support", f"{info.name} cannot guarantee exactly-once "
                                        "delivery (KIP-618); set exactly.once.support=requested to run it anyway"))
        for message in connector.validate():
            key, _, rest = message.partition(": ")
            problems.append(Problem(key, rest) if rest and key in definition else Problem(None, message))
        problems += path_problems(connector.paths(), str(worker[LAKE_ROOT]), worker[ALLOWED_PATHS] or [])
    if problems:
        # A value from a provider never reaches a message: what is wrong with it is said without it.
        problems = [p if id(p) in about_placeholders or p.key not in provided else
                    Problem(p.key, f"the value {raw[p.key]} resolves to one that is not valid here (not shown: it "
                                   "comes from a config provider)")
                    for p in problems if id(p) in about_placeholders or p.key not in refused]
        raise ConfigError(problems, source=source, warnings=warnings)
    return ConnectorSetup(
        name=typed[NAME], info=info, config=config, raw=dict(raw),
        key_converter=converters[KEY_CONVERTER], value_converter=converters[VALUE_CONVERTER],
        header_converter=converters[HEADER_CONVERTER], transforms=transforms, predicates=predicates,
        warnings=warnings,
    )


def _configure(registry: Registry, kind: PluginKind, name: str, key: str, settings: dict[str, str],
               problems: list[Problem], prefix: str | None = None,
               warnings: list[Problem] | None = None) -> ConfiguredPlugin | None:
    # Kafka ignores settings a plugin does not declare. Converters' are dropped silently (the book sets
    # schemas.enable on a ByteArrayConverter); a transform's or predicate's become warnings.
    prefix = prefix or key
    try:
        info = registry.get(kind, name, key=key)
    except ConfigError as e:
        problems += e.problems
        return None
    definition = info.cls.config_def()
    typed, ps = definition.validate(settings, strict=False)
    problems += [Problem(f"{prefix}.{p.key}" if p.key else key, p.message) for p in ps]
    if warnings is not None:
        warnings += [Problem(f"{prefix}.{p.key}", p.message) for p in definition.unused(settings)]
    return ConfiguredPlugin(info, settings, Config(definition, typed, settings))


def _configure_labelled(registry: Registry, kind: PluginKind, group: str, label: str, values: Mapping[str, str],
                        problems: list[Problem], warnings: list[Problem],
                        reserved: tuple[str, ...] = ()) -> ConfiguredPlugin | None:
    if not re.fullmatch(r"[^.\s]+", label):
        problems.append(Problem(group, f"invalid alias '{label}'"))
        return None
    type_key = f"{group}.{label}.type"
    if not values.get(type_key):
        problems.append(Problem(type_key, f"missing required configuration: the class of {group[:-1]} '{label}'"))
        return None
    settings = {k: v for k, v in _plugin_settings(values, f"{group}.{label}.").items()
                if k != "type" and k not in reserved}
    return _configure(registry, kind, values[type_key], type_key, settings, problems, prefix=f"{group}.{label}",
                      warnings=warnings)


def _fullmatch(pattern: str, text: str) -> bool:
    try:
        return re.fullmatch(pattern, text) is not None
    except re.error:
        return False
