"""The MySQL CDC source's configuration: Debezium's MySQL connector keys (2.3), verbatim, its defaults.

Keys that only matter to Debezium's Kafka-based schema history (`schema.history.internal.kafka.*`,
its producer and consumer settings) are accepted so an existing connector JSON runs unchanged; the
history lives in a Delta table beside the lake's state, and `warnings()` names the keys it ignores.
"""

from __future__ import annotations

import re
from typing import Any

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
INCREMENTAL_CHUNK_SIZE = "incremental.snapshot.chunk.size"
HEARTBEAT_INTERVAL_MS = "heartbeat.interval.ms"
HEARTBEAT_PREFIX = "topic.heartbeat.prefix"
# Offset key (beside Debezium's): when the last heartbeat was written, in ms.
HEARTBEAT_AT = "lakeconnect.heartbeat.ts_ms"
INCLUDE_SCHEMA_CHANGES = "include.schema.changes"
TOMBSTONES_ON_DELETE = "tombstones.on.delete"
INCLUDE_QUERY = "include.query"
MAX_BATCH_SIZE = "max.batch.size"
CONNECT_TIMEOUT_MS = "connect.timeout.ms"
SSL_MODE = "database.ssl.mode"
SCHEMA_HISTORY_PREFIX = "schema.history.internal."
TRUNCATE_PREFIX = "column.truncate.to."
MASK_PREFIX = "column.mask.with."
HASH_PREFIX = "column.mask.hash."
PARALLEL_DECODE = "lakeconnect.binlog.parallel.decode"
CHUNKS_PER_BATCH = "lakeconnect.incremental.snapshot.chunks.per.batch"

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
    return (
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
        .define(SSL_MODE, Type.STRING, "preferred", ValidString.of("disabled", "preferred"), Importance.MEDIUM,
                doc="Debezium's TLS mode, accepted so its connector JSON runs unchanged. Connections are never "
                    "encrypted: 'preferred' (Debezium's default: TLS when the server offers it) connects as "
                    "'disabled' does, and the modes that require TLS are refused.", group="Connection")
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
        .allow_prefix(SCHEMA_HISTORY_PREFIX)
        .allow_prefix(TRUNCATE_PREFIX)
        .allow_prefix(MASK_PREFIX)
        .allow_prefix(HASH_PREFIX)
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
    for key in (DATABASE_INCLUDE, DATABASE_EXCLUDE, TABLE_INCLUDE, TABLE_EXCLUDE, COLUMN_INCLUDE, COLUMN_EXCLUDE):
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
        key_columns(config)
    except ValueError as e:
        problems.append(Problem(MESSAGE_KEY_COLUMNS, str(e)))
    try:
        column_rules(config)
    except ValueError as e:
        problems.append(Problem(str(e.args[0]), str(e.args[1])))
    signal = config[SIGNAL_DATA_COLLECTION]
    if signal and signal.count(".") != 1:
        problems.append(Problem(SIGNAL_DATA_COLLECTION, f"'{signal}' is not <database>.<table>"))
    return problems


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
        if not isinstance(key, str):
            continue
        patterns = [re.compile(p.strip()) for p in str(value or "").split(",") if p.strip()]
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
    signalling table always. Picklable, and rebuilt from `to_json` on executors."""

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
        db, table = item
        if self.signal and f"{db}.{table}".lower() == self.signal:
            return True
        return self.captures(db, table)

    def captures(self, db: str, table: str) -> bool:
        """A table whose changes become events (the signalling table only when it matches the lists too)."""
        if db.lower() in SYSTEM_DATABASES:
            return False
        if self._din and not any(p.fullmatch(db) for p in self._din):
            return False
        if any(p.fullmatch(db) for p in self._dout):
            return False
        name = f"{db}.{table}"
        if self._tin and not any(p.fullmatch(name) for p in self._tin):
            return False
        return not any(p.fullmatch(name) for p in self._tout)
