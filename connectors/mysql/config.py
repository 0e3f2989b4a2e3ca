"""The MySQL CDC source's configuration: Debezium's MySQL connector keys (2.3), verbatim, its defaults.

Keys that only matter to Debezium's Kafka-based schema history (`schema.history.internal.kafka.*`,
its producer and consumer settings) are accepted so an existing connector JSON runs unchanged; the
history lives in a Delta table beside the lake's state, and `warnings()` names the keys it ignores.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from connectors.mysql import gtid, tls
from ingest.config.configdef import ConfigDef, Importance, NonEmptyString, Range, Type, ValidString
from ingest.errors import Problem

HOSTNAME = "database.hostname"
PORT = "database.port"
USER = "database.user"
PASSWORD = "database.password"
SERVER_ID = "database.server.id"
TOPIC_PREFIX = "topic.prefix"
DATABASE_INCLUDE = "database.include.list"
DATABASE_EXCLUDE = "database.exclude.list"
TABLE_INCLUDE = "table.include.list"
TABLE_EXCLUDE = "table.exclude.list"
COLUMN_INCLUDE = "column.include.list"
COLUMN_EXCLUDE = "column.exclude.list"
MESSAGE_KEY_COLUMNS = "message.key.columns"
SNAPSHOT_MODE = "snapshot.mode"
SIGNAL_DATA_COLLECTION = "signal.data.collection"
SIGNAL_CHANNELS = "signal.enabled.channels"
SIGNAL_KAFKA_TOPIC = "signal.kafka.topic"
SIGNAL_KAFKA_BOOTSTRAP = "signal.kafka.bootstrap.servers"
SIGNAL_KAFKA_GROUP = "signal.kafka.groupId"
SIGNAL_CONSUMER_PREFIX = "signal.consumer."
CHANNEL_SOURCE, CHANNEL_KAFKA = "source", "kafka"
INCREMENTAL_CHUNK_SIZE = "incremental.snapshot.chunk.size"
HEARTBEAT_INTERVAL_MS = "heartbeat.interval.ms"
HEARTBEAT_PREFIX = "topic.heartbeat.prefix"
# Offset key (beside Debezium's): when the last heartbeat was written, in ms.
HEARTBEAT_AT = "lakeconnect.heartbeat.ts_ms"
INCLUDE_SCHEMA_CHANGES = "include.schema.changes"
PROVIDE_TRANSACTION_METADATA = "provide.transaction.metadata"
TOMBSTONES_ON_DELETE = "tombstones.on.delete"
INCLUDE_QUERY = "include.query"
MAX_BATCH_SIZE = "max.batch.size"
CONNECT_TIMEOUT_MS = "connect.timeout.ms"
SSL_MODE = "database.ssl.mode"
SSL_TRUSTSTORE = "database.ssl.truststore"
SSL_TRUSTSTORE_PASSWORD = "database.ssl.truststore.password"
SSL_KEYSTORE = "database.ssl.keystore"
SSL_KEYSTORE_PASSWORD = "database.ssl.keystore.password"
SCHEMA_HISTORY_PREFIX = "schema.history.internal."
TRUNCATE_PREFIX = "column.truncate.to."
MASK_PREFIX = "column.mask.with."
HASH_PREFIX = "column.mask.hash."
SKIPPED_OPERATIONS = "skipped.operations"
SNAPSHOT_INCLUDE = "snapshot.include.collection.list"
SELECT_OVERRIDES = "snapshot.select.statement.overrides"
SELECT_OVERRIDES_PREFIX = SELECT_OVERRIDES + "."
PARALLEL_DECODE = "lakeconnect.binlog.parallel.decode"
CHUNKS_PER_BATCH = "lakeconnect.incremental.snapshot.chunks.per.batch"
GTID_INCLUDE = "gtid.source.includes"
GTID_EXCLUDE = "gtid.source.excludes"
SNAPSHOT_LOCKING = "snapshot.locking.mode"
SNAPSHOT_LOCK_TIMEOUT_MS = "snapshot.lock.timeout.ms"
SNAPSHOT_POSITION = "lakeconnect.snapshot.position"
POSITION_AUTO = "auto"
POSITION_BINLOG_STATUS = "binlog_status"

INITIAL = "initial"
WHEN_NEEDED = "when_needed"
NEVER = "never"
INITIAL_ONLY = "initial_only"
SCHEMA_ONLY = "schema_only"
SCHEMA_ONLY_RECOVERY = "schema_only_recovery"
NO_DATA = "no_data"
RECOVERY = "recovery"
SNAPSHOT_MODES = (INITIAL, WHEN_NEEDED, NEVER, INITIAL_ONLY, SCHEMA_ONLY, SCHEMA_ONLY_RECOVERY, NO_DATA, RECOVERY)
_SNAPSHOT_ALIASES = {NO_DATA: SCHEMA_ONLY, RECOVERY: SCHEMA_ONLY_RECOVERY}

SYSTEM_DATABASES = ("mysql", "sys", "performance_schema", "information_schema")


def mysql_config_def() -> ConfigDef:
    d = (
        ConfigDef()
        .define(HOSTNAME, Type.STRING, validator=NonEmptyString(), importance=Importance.HIGH,
                doc="IP address or hostname of the MySQL or MariaDB server.", group="Connection")
        .define(PORT, Type.INT, 3306, Range.between(1, 65535), Importance.HIGH,
                doc="Port of the database server.", group="Connection")
        .define(USER, Type.STRING, validator=NonEmptyString(), importance=Importance.HIGH,
                doc="Database user; needs SELECT, RELOAD, SHOW DATABASES, REPLICATION SLAVE and REPLICATION "
                    "CLIENT.", group="Connection")
        .define(PASSWORD, Type.PASSWORD, None, importance=Importance.HIGH, doc="Password of the database user.",
                group="Connection")
        .define(SERVER_ID, Type.LONG, validator=Range.between(1, 2**32 - 1), importance=Importance.HIGH,
                doc="Numeric id this connector uses as a replica of the server; unique among all replicas "
                    "and binlog readers of that server. Parallel decoders use the ids that follow it.",
                group="Connection")
        .define(TOPIC_PREFIX, Type.STRING, validator=NonEmptyString(), importance=Importance.HIGH,
                doc="Logical name of the server: prefix of every topic and the source partition. Never change "
                    "it once the connector has run.", group="Connection")
        .define(CONNECT_TIMEOUT_MS, Type.LONG, 30000, Range.at_least(1), Importance.LOW,
                doc="How long to wait for a connection to the server.", group="Connection")
        .define(DATABASE_INCLUDE, Type.LIST, [], importance=Importance.HIGH,
                doc="Regular expressions of the databases to capture (all non-system ones when empty).",
                group="Filters")
        .define(DATABASE_EXCLUDE, Type.LIST, [], importance=Importance.MEDIUM,
                doc="Regular expressions of databases not to capture.", group="Filters")
        .define(TABLE_INCLUDE, Type.LIST, [], importance=Importance.HIGH,
                doc="Regular expressions of the tables to capture, as <database>.<table>.", group="Filters")
        .define(TABLE_EXCLUDE, Type.LIST, [], importance=Importance.MEDIUM,
                doc="Regular expressions of tables not to capture.", group="Filters")
        .define(COLUMN_INCLUDE, Type.LIST, [], importance=Importance.MEDIUM,
                doc="Regular expressions of the columns to keep, as <database>.<table>.<column>.",
                group="Filters")
        .define(COLUMN_EXCLUDE, Type.LIST, [], importance=Importance.MEDIUM,
                doc="Regular expressions of columns to leave out of change events.", group="Filters")
        .define(MESSAGE_KEY_COLUMNS, Type.STRING, None, importance=Importance.MEDIUM,
                doc="Key columns per table instead of the primary key: "
                    "<database>.<table>:<column>[,<column>...][;<database>.<table>:...]", group="Filters")
        .define(SNAPSHOT_MODE, Type.STRING, INITIAL, importance=Importance.MEDIUM,
                doc="When to snapshot: initial, when_needed, never, initial_only, schema_only (no_data), "
                    "schema_only_recovery (recovery).", group="Snapshot")
        .define(SIGNAL_DATA_COLLECTION, Type.STRING, None, importance=Importance.MEDIUM,
                doc="The signalling table, <database>.<table>, whose rows ask for ad-hoc incremental snapshots.",
                group="Snapshot")
        .define(SIGNAL_CHANNELS, Type.LIST, [CHANNEL_SOURCE],
                ValidString.of(CHANNEL_SOURCE, CHANNEL_KAFKA, "file", "jmx", case_insensitive=True), Importance.LOW,
                doc="Where signals come from: source (the rows of signal.data.collection) and kafka (the records "
                    "of signal.kafka.topic keyed by topic.prefix). file and jmx are refused.", group="Snapshot")
        .define(SIGNAL_KAFKA_TOPIC, Type.STRING, None, importance=Importance.LOW,
                doc="The topic of the kafka signal channel (partition 0 is read, as Debezium); "
                    "<topic.prefix>-signal when unset.", group="Snapshot")
        .define(SIGNAL_KAFKA_BOOTSTRAP, Type.STRING, None, importance=Importance.LOW,
                doc="The brokers (host:port[,host:port...]) of the cluster holding signal.kafka.topic; required "
                    "with the kafka channel. Client settings (security) go in signal.consumer.*.", group="Snapshot")
        .define(SIGNAL_KAFKA_GROUP, Type.STRING, "kafka-signal", importance=Importance.LOW,
                doc="The consumer group of the kafka signal channel: where a connector with no position yet "
                    "starts (the group's committed offset, else the topic's start). The position read is kept "
                    "in the connector's offsets, never committed to the group.", group="Snapshot")
        .define(INCREMENTAL_CHUNK_SIZE, Type.INT, 1024, Range.at_least(1), Importance.MEDIUM,
                doc="Rows per chunk of an incremental snapshot.", group="Snapshot")
        .define(HEARTBEAT_INTERVAL_MS, Type.INT, 0, Range.at_least(0), Importance.MEDIUM,
                doc="When above 0, a heartbeat record goes to the heartbeat topic once this many ms have "
                    "passed since the last one, moving the offset on even when no captured table changed "
                    "(a run that long after the last heartbeat writes one if the binlog is idle).",
                group="Events")
        .define(HEARTBEAT_PREFIX, Type.STRING, "__debezium-heartbeat", importance=Importance.LOW,
                doc="Prefix of the heartbeat topic, <prefix>.<topic.prefix>.", group="Events")
        .define(INCLUDE_SCHEMA_CHANGES, Type.BOOLEAN, True, importance=Importance.MEDIUM,
                doc="Write DDL changes to the topic named after topic.prefix.", group="Events")
        .define(TOMBSTONES_ON_DELETE, Type.BOOLEAN, True, importance=Importance.MEDIUM,
                doc="Follow each delete event with a tombstone (null value) for log compaction.", group="Events")
        .define(INCLUDE_QUERY, Type.BOOLEAN, False, importance=Importance.LOW,
                doc="Put the statement that made a change in source.query (needs binlog_annotate_row_events "
                    "on MariaDB, binlog_rows_query_log_events on MySQL).", group="Events")
        .define(MAX_BATCH_SIZE, Type.INT, 2048, Range.at_least(1), Importance.LOW,
                doc="Events a binlog decoder hands over at a time (the driver never holds more than this).",
                group="Events")
        .define(PARALLEL_DECODE, Type.BOOLEAN, True, importance=Importance.LOW,
                doc="Decode the binlog files of a batch in parallel Spark tasks, one replica connection each "
                    "(server ids after database.server.id).", group="Events")
        .define(CHUNKS_PER_BATCH, Type.INT, 16, Range.at_least(1), Importance.LOW,
                doc="Incremental snapshot chunks (of incremental.snapshot.chunk.size rows each) one batch reads, "
                    "in parallel Spark tasks.", group="Snapshot")
        .define(SNAPSHOT_INCLUDE, Type.LIST, [], importance=Importance.MEDIUM,
                doc="Regular expressions of the captured tables (<db>.<table>) a snapshot reads; the others "
                    "are only streamed from the binlog. All captured tables when empty.", group="Snapshot")
        .define(SELECT_OVERRIDES, Type.LIST, [], importance=Importance.LOW,
                doc="Tables (<db>.<table>) whose snapshot reads the rows of the statement in "
                    "snapshot.select.statement.overrides.<db>.<table> instead of the whole table: a SELECT of "
                    "the table's columns, e.g. with a WHERE clause.", group="Snapshot")
        .define(SSL_TRUSTSTORE, Type.STRING, None, importance=Importance.MEDIUM,
                doc="The CAs database.ssl.mode verify_ca and verify_identity trust (the system's when unset): a "
                    "PKCS12 store, Java's default type (keytool's), or a PEM file. Read on the driver only.",
                group="Connection")
        .define(SSL_TRUSTSTORE_PASSWORD, Type.PASSWORD, None, importance=Importance.MEDIUM,
                doc="Password of database.ssl.truststore.", group="Connection")
        .define(SSL_KEYSTORE, Type.STRING, None, importance=Importance.MEDIUM,
                doc="The client certificate and key, for servers that ask for one (REQUIRE X509): a PKCS12 store "
                    "or a PEM file.", group="Connection")
        .define(SSL_KEYSTORE_PASSWORD, Type.PASSWORD, None, importance=Importance.MEDIUM,
                doc="Password of database.ssl.keystore.", group="Connection")
        .define(GTID_INCLUDE, Type.LIST, [], importance=Importance.LOW,
                doc="Regular expressions of the MySQL server uuids (GTID sources) whose transactions' row changes "
                    "are captured (all when empty), as Debezium: matched against the whole uuid, ignoring case. "
                    "MySQL GTIDs only.", group="Filters")
        .define(GTID_EXCLUDE, Type.LIST, [], importance=Importance.LOW,
                doc="Regular expressions of the MySQL server uuids whose transactions' row changes are left out.",
                group="Filters")
        .define(SNAPSHOT_LOCK_TIMEOUT_MS, Type.LONG, 10000, Range.at_least(1), Importance.LOW,
                doc="How long a snapshot waits for its locks (lock_wait_timeout, whole seconds, at least 1).",
                group="Snapshot")
        .define(SNAPSHOT_POSITION, Type.STRING, POSITION_AUTO,
                ValidString.of(POSITION_AUTO, POSITION_BINLOG_STATUS, case_insensitive=True), Importance.LOW,
                doc="How a snapshot's binlog position is made to match its rows. auto: on MariaDB the "
                    "consistent-snapshot transaction's own position (binlog_snapshot_file), no lock, unless "
                    "snapshot.locking.mode=extended; elsewhere binlog_status. binlog_status: Debezium's way on "
                    "MySQL, on any server: snapshot.locking.mode's locks around START TRANSACTION WITH "
                    "CONSISTENT SNAPSHOT and SHOW MASTER STATUS (SHOW BINARY LOG STATUS from MySQL 8.4).",
                group="Snapshot")
        .define(SKIPPED_OPERATIONS, Type.LIST, ["t"], importance=Importance.LOW,
                doc="Operations whose change events are not written: c (create), u (update), d (delete, with "
                    "its tombstone), t (truncate), or none. As Debezium, a key change's delete and create are "
                    "each skipped by their own letter.", group="Events")
        .allow_prefix(SCHEMA_HISTORY_PREFIX)
        .allow_prefix(TRUNCATE_PREFIX)
        .allow_prefix(MASK_PREFIX)
        .allow_prefix(HASH_PREFIX)
        .allow_prefix(SELECT_OVERRIDES_PREFIX)
        .allow_prefix(SIGNAL_CONSUMER_PREFIX)
    )
    for key, type_, default, values, supported, doc in _DEBEZIUM_KEYS:
        validator = ValidString.of(*values, case_insensitive=True) if values else None
        d.define(key, type_, default, validator, Importance.LOW, doc + _supported_doc(default, supported),
                 group="Debezium")
    for key, type_, default, doc in _NO_EFFECT_KEYS:
        d.define(key, type_, default, importance=Importance.LOW, group="Debezium",
                 doc=f"{doc} Accepted so Debezium's connector JSON runs unchanged; no effect on batches.")
    return d


def _supported_doc(default: Any, supported: tuple) -> str:
    if supported == (default,):
        return " Only Debezium's default is implemented; another value is refused."
    return f" Implemented: {', '.join(map(str, supported))}; another value is refused."


class _EveryList(tuple):
    """The implemented values of a list key all of whose values are implemented: one value, equal to any list
    (the check in `validate`), and a tuple equal to no other (so its doc does not read "only the default")."""

    class _Any:
        def __eq__(self, other: Any) -> bool:
            return isinstance(other, list)

        __hash__ = object.__hash__

        def __str__(self) -> str:
            return "every list of regular expressions"

    def __new__(cls):
        return super().__new__(cls, (cls._Any(),))

    def __eq__(self, other: Any) -> bool:
        return self is other

    __hash__ = tuple.__hash__


_EVERY_LIST = _EveryList()


# Debezium's keys whose values change what is captured or how it is shaped: (key, type, Debezium's default,
# its values (None: any), the values implemented here, doc). A value outside the last is an error naming
# them, never a silent difference from Debezium's events.
_DEBEZIUM_KEYS: tuple[tuple[str, Type, Any, tuple[str, ...] | None, tuple, str], ...] = (
    ("decimal.handling.mode", Type.STRING, "precise", ("precise", "double", "string"), ("precise", "double", "string"),
     "DECIMAL and NUMERIC columns as Connect Decimal (precise), float64 (double) or string."),
    ("time.precision.mode", Type.STRING, "adaptive_time_microseconds", ("adaptive_time_microseconds", "connect"),
     ("adaptive_time_microseconds", "connect"),
     "Temporal columns as Debezium's types by precision (adaptive_time_microseconds), or DATE, TIME and DATETIME "
     "as Kafka Connect's Date, Time (millis; null outside 00:00-24:00) and Timestamp (connect)."),
    ("bigint.unsigned.handling.mode", Type.STRING, "long", ("long", "precise"), ("long", "precise"),
     "BIGINT UNSIGNED as int64 (long) or Connect Decimal (precise)."),
    ("binary.handling.mode", Type.STRING, "bytes", ("bytes", "base64", "base64-url-safe", "hex"),
     ("bytes", "base64", "base64-url-safe", "hex"),
     "Binary columns as bytes or as encoded strings."),
    ("snapshot.locking.mode", Type.STRING, "minimal", ("minimal", "minimal_percona", "extended", "none", "custom"),
     ("minimal", "extended", "none"),
     "Locks a snapshot takes to match its rows with a binlog position, as Debezium on MySQL: minimal (a "
     "global read lock while the position and schemas are read), extended (held until the rows are read), "
     "none (no lock). Where the global lock is refused (RDS, Aurora, a lock wait past "
     "snapshot.lock.timeout.ms), read locks on the captured tables, held until the rows are read. On MariaDB "
     "minimal and none take no lock (see lakeconnect.snapshot.position)."),
    ("database.ssl.mode", Type.STRING, "preferred", ("disabled", "preferred", "required", "verify_ca",
                                                     "verify_identity"),
     ("disabled", "preferred", "required", "verify_ca", "verify_identity"),
     "TLS to the server, as MySQL Connector/J's sslMode: never (disabled), when offered (preferred), always "
     "(required), with the certificate checked against database.ssl.truststore (verify_ca) and the host name "
     "too (verify_identity)."),
    ("event.processing.failure.handling.mode", Type.STRING, "fail", ("fail", "warn", "skip", "ignore"),
     ("fail", "warn", "skip", "ignore"),
     "What a binlog row event whose rows cannot be deserialized does: fail the batch (fail; nothing of it is "
     "emitted or committed), or is left out with a warning naming its position (warn) or without one (skip, "
     "and ignore, Debezium's older name for it)."),
    ("inconsistent.schema.handling.mode", Type.STRING, "fail", ("fail", "warn", "skip"), ("fail", "warn", "skip"),
     "What the binlog rows of a captured table whose columns the schema history does not know do: fail the batch "
     "(fail), or are left out with a warning naming the table and position (warn) or without one (skip)."),
    (PROVIDE_TRANSACTION_METADATA, Type.BOOLEAN, False, None, (False, True),
     "A BEGIN and an END record of each transaction the binlog has on the topic <topic.prefix>.transaction (the "
     "END with its events' count, in all and by table), and each binlog event's transaction block: the "
     "transaction's id and the event's place in it."),
    ("include.schema.comments", Type.BOOLEAN, False, None, (False, True),
     "Column comments as the docs of the fields' schemas (tableChanges of schema change events keep null "
     "comments)."),
    ("column.propagate.source.type", Type.LIST, [], None, _EVERY_LIST,
     "Columns (regular expressions of <db>.<table>.<column>) whose schema carries the "
     "__debezium.source.column.type, length and scale parameters."),
    ("datatype.propagate.source.type", Type.LIST, [], None, _EVERY_LIST,
     "Column types (regular expressions of <db>.<table>.<type name>, e.g. .+\\.DECIMAL or .+\\.INT UNSIGNED) "
     "whose columns' schemas carry the __debezium.source.column.type, length and scale parameters."),
    ("database.initial.statements", Type.STRING, "", None, ("",),
     "Statements run on each connection to the database when it opens."),
    ("heartbeat.action.query", Type.STRING, "", None, ("",), "A statement run on each heartbeat."),
    ("topic.naming.strategy", Type.STRING, "io.debezium.schema.DefaultTopicNamingStrategy", None,
     ("io.debezium.schema.DefaultTopicNamingStrategy",), "How topics are named from topic.prefix and tables."),
    ("schema.name.adjustment.mode", Type.STRING, "none", ("none", "avro", "avro_unicode"), ("none",),
     "How schema names are made Avro-safe."),
    ("field.name.adjustment.mode", Type.STRING, "none", ("none", "avro", "avro_unicode"), ("none",),
     "How field names are made Avro-safe."),
    ("converters", Type.LIST, [], None, ([],), "Custom converters of column values."),
)

# Debezium's tuning knobs of its in-memory queue, connections and threads: nothing to tune in a batch.
_NO_EFFECT_KEYS: tuple[tuple[str, Type, Any, str], ...] = (
    ("max.queue.size", Type.INT, 8192, "Debezium's event queue length."),
    ("signal.kafka.poll.timeout.ms", Type.INT, 0, "How long Debezium's kafka signal channel waits in a poll (a "
                                                  "batch reads the signal topic up to its end when it plans)."),
    ("max.queue.size.in.bytes", Type.LONG, 0, "Debezium's event queue size."),
    ("poll.interval.ms", Type.LONG, 500, "How long Debezium waits for events before a poll returns."),
    ("snapshot.fetch.size", Type.INT, None, "Rows Debezium's snapshot fetches at a time."),
    ("snapshot.max.threads", Type.INT, 1, "Debezium's snapshot threads."),
    ("snapshot.delay.ms", Type.LONG, 0, "Debezium's wait before a snapshot."),
    ("streaming.delay.ms", Type.LONG, 0, "Debezium's wait before streaming."),
    ("binlog.buffer.size", Type.INT, 0, "Debezium's look-ahead buffer of binlog events."),
    ("errors.max.retries", Type.INT, -1, "Debezium's retries of retriable errors (the scheduler retries here)."),
)


def snapshot_mode(config) -> str:
    mode = (config[SNAPSHOT_MODE] or INITIAL).strip().lower()
    return _SNAPSHOT_ALIASES.get(mode, mode)


def check(config) -> list[Problem]:
    problems: list[Problem] = []
    mode = (config[SNAPSHOT_MODE] or "").strip().lower()
    if mode not in SNAPSHOT_MODES:
        problems.append(Problem(SNAPSHOT_MODE, f"unknown snapshot mode '{config[SNAPSHOT_MODE]}'; expected one of "
                                               f"{', '.join(SNAPSHOT_MODES)}"))
    for key in (DATABASE_INCLUDE, DATABASE_EXCLUDE, TABLE_INCLUDE, TABLE_EXCLUDE, COLUMN_INCLUDE, COLUMN_EXCLUDE,
                SNAPSHOT_INCLUDE, "column.propagate.source.type", "datatype.propagate.source.type"):
        for pattern in config[key] or []:
            try:
                re.compile(pattern)
            except re.error as e:
                problems.append(Problem(key, f"'{pattern}' is not a regular expression: {e}"))
    if config[DATABASE_INCLUDE] and config[DATABASE_EXCLUDE]:
        problems.append(Problem(DATABASE_EXCLUDE, f"cannot be combined with {DATABASE_INCLUDE}; keep one"))
    if config[TABLE_INCLUDE] and config[TABLE_EXCLUDE]:
        problems.append(Problem(TABLE_EXCLUDE, f"cannot be combined with {TABLE_INCLUDE}; keep one"))
    if config[COLUMN_INCLUDE] and config[COLUMN_EXCLUDE]:
        problems.append(Problem(COLUMN_EXCLUDE, f"cannot be combined with {COLUMN_INCLUDE}; keep one"))
    try:
        gtid_sources(config)
    except ValueError as e:
        key = GTID_EXCLUDE if config[GTID_EXCLUDE] else GTID_INCLUDE
        both = config[GTID_INCLUDE] and config[GTID_EXCLUDE]
        problems.append(Problem(key, str(e).removeprefix(f"{key}: ")
                                + (f" Keep one of {GTID_INCLUDE} and {GTID_EXCLUDE}." if both else "")))
    try:
        column_rules(config)
    except ValueError as e:
        problems.append(Problem(str(e.args[0]), str(e.args[1])))
    signal = config[SIGNAL_DATA_COLLECTION]
    if signal and signal.count(".") != 1:
        problems.append(Problem(SIGNAL_DATA_COLLECTION, f"'{signal}' is not <database>.<table>"))
    problems += _channel_problems(config)
    # Keys whose parsers raise ValueError with the message about them.
    for key, parse in ((MESSAGE_KEY_COLUMNS, key_columns), (SKIPPED_OPERATIONS, skipped_operations),
                       (SELECT_OVERRIDES, select_overrides)):
        try:
            parse(config)
        except ValueError as e:
            problems.append(Problem(key, str(e)))
    for key, type_, default, values, supported, _ in _DEBEZIUM_KEYS:
        value = config[key]
        if _normal(value) not in [_normal(v) for v in supported]:
            # Free text (statements, uuids, class names) is not echoed: it may hold anything.
            shown = (f"'{', '.join(value) if isinstance(value, list) else value}'"
                     if values or type_ is Type.BOOLEAN else "the value given")
            problems.append(Problem(key, f"{shown} asks for what this connector does not do yet; it supports "
                                         f"{' or '.join(_shown(v) for v in supported)} (Debezium's default: "
                                         f"{_shown(default)}): remove the key or set a supported value"))
    return problems


def signal_channels(config) -> set[str]:
    return {str(c).strip().lower() for c in config[SIGNAL_CHANNELS] or []}


def signal_topic(config) -> str:
    """The kafka signal channel's topic: signal.kafka.topic, else Debezium's <topic.prefix>-signal."""
    return config[SIGNAL_KAFKA_TOPIC] or f"{config[TOPIC_PREFIX]}-signal"


def _channel_problems(config) -> list[Problem]:
    channels = signal_channels(config)
    problems = []
    if "jmx" in channels:
        problems.append(Problem(SIGNAL_CHANNELS, "jmx: a batch connector has no JMX MBean to receive signals; "
                                                 "remove jmx and send signals through the signalling table "
                                                 "(source, or `lakeconnect signal`) or a Kafka topic (kafka)"))
    if "file" in channels:
        problems.append(Problem(SIGNAL_CHANNELS, "file: the file channel is not supported; remove file and send "
                                                 "signals through the signalling table (source) or a Kafka topic "
                                                 "(kafka)"))
    if CHANNEL_KAFKA in channels:
        if not (config[SIGNAL_KAFKA_BOOTSTRAP] or "").strip():
            problems.append(Problem(SIGNAL_KAFKA_BOOTSTRAP, f"is required when {SIGNAL_CHANNELS} lists kafka: set "
                                                            "the brokers (host:port[,host:port...]) of the cluster "
                                                            f"holding {SIGNAL_KAFKA_TOPIC}, or remove kafka"))
        if not config[SIGNAL_DATA_COLLECTION]:
            problems.append(Problem(SIGNAL_DATA_COLLECTION, f"is required when {SIGNAL_CHANNELS} lists kafka: an "
                                                            "incremental snapshot writes its watermark rows into "
                                                            "the signalling table; set it to <database>.<table>"))
    return problems


def _normal(value: Any) -> Any:
    if isinstance(value, str):
        return value.strip().lower()
    if isinstance(value, list):
        return [_normal(v) for v in value]
    return value


def _shown(value: Any) -> str:
    if isinstance(value, list):
        return "'" + ",".join(value) + "'" if value else "an empty list"
    if isinstance(value, bool):
        return str(value).lower()
    return f"'{value}'" if value != "" else "an empty value"


def connection_settings(config) -> dict[str, Any]:
    """The settings every connection to the server takes (tls.pymysql_kwargs makes them pymysql's); a store
    that cannot be used raises tls.StoreError."""
    return {"host": config[HOSTNAME], "port": int(config[PORT]), "user": config[USER],
            "password": config.secret(PASSWORD) or "",
            "connect_timeout": max(1, int(config[CONNECT_TIMEOUT_MS]) // 1000),
            "tls": tls.settings_of(config[SSL_MODE], config[SSL_TRUSTSTORE], config.secret(SSL_TRUSTSTORE_PASSWORD),
                                   config[SSL_KEYSTORE], config.secret(SSL_KEYSTORE_PASSWORD))}


def gtid_sources(config) -> Callable[[str], bool] | None:
    """Debezium's filter of GTID sources (gtid.source.includes/excludes): None when both are empty."""
    includes, excludes = config[GTID_INCLUDE] or [], config[GTID_EXCLUDE] or []
    return gtid.source_filter(includes, excludes) if includes or excludes else None


def snapshot_includes(config, db: str, table: str) -> bool:
    """Whether a snapshot reads this captured table (`snapshot.include.collection.list`, matched as the table
    lists are: the whole `<db>.<table>`, case-insensitively)."""
    patterns = [p.strip() for p in config[SNAPSHOT_INCLUDE] or [] if p.strip()]
    return not patterns or any(re.fullmatch(p, f"{db}.{table}", re.IGNORECASE) for p in patterns)


def select_overrides(config) -> dict[str, str]:
    """`snapshot.select.statement.overrides`: {<db>.<table>: its SELECT}, each listed table's statement
    from its own key, as Debezium reads them (names matched exactly)."""
    out = {}
    for table in config[SELECT_OVERRIDES] or []:
        table = table.strip()
        statement = str(config.originals.get(SELECT_OVERRIDES_PREFIX + table) or "").strip().rstrip(";").strip()
        if table.count(".") != 1:
            raise ValueError(f"'{table}' is not <database>.<table>")
        if not statement:
            raise ValueError(f"names {table}, but {SELECT_OVERRIDES_PREFIX}{table} (the SELECT its snapshot "
                             "reads) is not set")
        if not re.match(r"(?is)\s*select\b", statement):
            raise ValueError(f"{SELECT_OVERRIDES_PREFIX}{table} must be a SELECT statement")
        out[table] = statement
    return out


def skipped_operations(config) -> frozenset[str]:
    """`skipped.operations` as the letters of the events not written (c, u, d, t)."""
    ops = [o.strip().lower() for o in config[SKIPPED_OPERATIONS] or [] if o.strip()]
    if ops == ["none"]:
        ops = []
    unknown = [o for o in ops if o not in ("c", "u", "d", "t")]
    if unknown:
        raise ValueError(f"unknown operation '{unknown[0]}'; expected a list of c, u, d and t, or none")
    return frozenset(ops)


def key_columns(config) -> list[tuple[re.Pattern, list[str]]]:
    """`message.key.columns`: (table pattern, columns) pairs, Debezium's `<db>.<table>:<col>,<col>;...`."""
    raw = (config[MESSAGE_KEY_COLUMNS] or "").strip()
    out = []
    for part in filter(None, (p.strip() for p in raw.split(";"))):
        table, sep, cols = part.partition(":")
        columns = [c.strip() for c in cols.split(",") if c.strip()]
        if not sep or not table.strip() or not columns:
            raise ValueError(f"'{part}' is not <database>.<table>:<column>[,<column>...]")
        out.append((re.compile(table.strip()), columns))
    return out


def column_rules(config) -> list[tuple[str, Any, list[re.Pattern]]]:
    """Truncation and masking rules: (kind, argument, column patterns). Kinds: truncate (length), mask
    (length of the asterisk string), hash ((algorithm, salt))."""
    rules = []
    for key, value in config.originals.items():
        if not isinstance(key, str) or not key.startswith((TRUNCATE_PREFIX, MASK_PREFIX, HASH_PREFIX)):
            continue  # (another key's value may be anything: a password, a statement)
        try:
            patterns = [re.compile(p.strip()) for p in str(value or "").split(",") if p.strip()]
        except re.error as e:
            raise ValueError(key, f"a column is named by regular expressions, and one here is not: {e}") from None
        if key.startswith(TRUNCATE_PREFIX) or key.startswith(MASK_PREFIX):
            prefix = TRUNCATE_PREFIX if key.startswith(TRUNCATE_PREFIX) else MASK_PREFIX
            n = key[len(prefix):]
            if not n.endswith(".chars") or not n[:-len(".chars")].isdigit():
                raise ValueError(key, f"expected {prefix}<N>.chars with a whole number N")
            kind = "truncate" if prefix == TRUNCATE_PREFIX else "mask"
            rules.append((kind, int(n[:-len(".chars")]), patterns))
        elif key.startswith(HASH_PREFIX):
            m = re.fullmatch(r"column\.mask\.hash\.(v2\.)?([A-Za-z0-9-]+)\.with\.salt\.(.+)", key)
            if not m:
                raise ValueError(key, "expected column.mask.hash.v2.<ALGORITHM>.with.salt.<SALT>")
            algorithm = m.group(2).upper().replace("-", "")
            if algorithm not in ("MD5", "SHA1", "SHA256", "SHA384", "SHA512"):
                raise ValueError(key, f"unknown hash algorithm '{m.group(2)}'; use MD5, SHA-1, SHA-256, SHA-384 "
                                      "or SHA-512")
            rules.append(("hash", (algorithm, m.group(3), bool(m.group(1))), patterns))
    return rules


def history_keys_unused(config) -> list[str]:
    return sorted(k for k in config.originals if isinstance(k, str) and k.startswith(SCHEMA_HISTORY_PREFIX))


class TableFilter:
    """Which tables are captured: Debezium's database and table include/exclude lists (regular expressions
    matching the whole `<db>` or `<db>.<table>`, case-insensitively), never the system databases; the
    signalling table always, as Debezium does. Picklable, and rebuilt from `to_json` on executors."""

    def __init__(self, databases_in=(), databases_out=(), tables_in=(), tables_out=(), signal: str | None = None):
        self.spec = [list(databases_in), list(databases_out), list(tables_in), list(tables_out), signal]
        compile_ = lambda ps: [re.compile(p.strip(), re.IGNORECASE) for p in ps if p.strip()]  # noqa: E731
        self._din, self._dout = compile_(databases_in), compile_(databases_out)
        self._tin, self._tout = compile_(tables_in), compile_(tables_out)
        self.signal = signal.lower() if signal else None

    @classmethod
    def of(cls, config) -> TableFilter:
        return cls(config[DATABASE_INCLUDE] or [], config[DATABASE_EXCLUDE] or [], config[TABLE_INCLUDE] or [],
                   config[TABLE_EXCLUDE] or [], config[SIGNAL_DATA_COLLECTION])

    def to_json(self) -> list:
        return self.spec

    @classmethod
    def from_json(cls, spec: list) -> TableFilter:
        return cls(*spec)

    def __contains__(self, item: tuple[str, str]) -> bool:
        return self.captures(*item)

    def captures(self, db: str, table: str) -> bool:
        """A table whose changes become events: the signalling table whatever the lists say (Debezium 2.3 and 3.x
        write its rows, their watermark rows too, to `<prefix>.<db>.<table>`; tests/mysql/test_signals_oracle.py)."""
        if db.lower() in SYSTEM_DATABASES:
            return False
        if self.signal and f"{db}.{table}".lower() == self.signal:
            return True
        if self._din and not any(p.fullmatch(db) for p in self._din):
            return False
        if any(p.fullmatch(db) for p in self._dout):
            return False
        name = f"{db}.{table}"
        if self._tin and not any(p.fullmatch(name) for p in self._tin):
            return False
        return not any(p.fullmatch(name) for p in self._tout)
