"""The JDBC source connector's configuration: Confluent's keys (10.7), verbatim, with its defaults."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from connectors.jdbc.dialects import DIALECTS
from connectors.jdbc.schemas import NUMERIC_MAPPINGS
from ingest.config.configdef import ConfigDef, Importance, NonEmptyString, Password, Range, Type, ValidString
from ingest.config.settings import Settings, setting
from ingest.errors import Problem

CONNECTION_URL = "connection.url"
CONNECTION_USER = "connection.user"
CONNECTION_PASSWORD = "connection.password"
CONNECTION_ATTEMPTS = "connection.attempts"
CONNECTION_BACKOFF_MS = "connection.backoff.ms"
CATALOG_PATTERN = "catalog.pattern"
SCHEMA_PATTERN = "schema.pattern"
TABLE_WHITELIST = "table.whitelist"
TABLE_BLACKLIST = "table.blacklist"
TABLE_INCLUDE_LIST = "table.include.list"
TABLE_EXCLUDE_LIST = "table.exclude.list"
TABLE_TYPES = "table.types"
TABLE_POLL_INTERVAL_MS = "table.poll.interval.ms"
QUERY = "query"
QUERY_SUFFIX = "query.suffix"
MODE = "mode"
INCREMENTING_COLUMN = "incrementing.column.name"
TIMESTAMP_COLUMNS = "timestamp.column.name"
VALIDATE_NON_NULL = "validate.non.null"
TIMESTAMP_DELAY_MS = "timestamp.delay.interval.ms"
TIMESTAMP_INITIAL = "timestamp.initial"
POLL_INTERVAL_MS = "poll.interval.ms"
BATCH_MAX_ROWS = "batch.max.rows"
TOPIC_PREFIX = "topic.prefix"
NUMERIC_MAPPING = "numeric.mapping"
NUMERIC_PRECISION_MAPPING = "numeric.precision.mapping"
DB_TIMEZONE = "db.timezone"
QUOTE_SQL_IDENTIFIERS = "quote.sql.identifiers"
DIALECT_NAME = "dialect.name"
QUERY_RETRY_ATTEMPTS = "query.retry.attempts"
TRANSACTION_ISOLATION_MODE = "transaction.isolation.mode"
TIMESTAMP_GRANULARITY = "timestamp.granularity"
LATE_ROWS_WINDOW_MS = "lakeconnect.late.rows.window.ms"
DETECT_DELETES = "lakeconnect.detect.deletes"

MODE_BULK = "bulk"
MODE_INCREMENTING = "incrementing"
MODE_TIMESTAMP = "timestamp"
MODE_TIMESTAMP_INCREMENTING = "timestamp+incrementing"
MODES = (MODE_BULK, MODE_TIMESTAMP, MODE_INCREMENTING, MODE_TIMESTAMP_INCREMENTING)
TIMESTAMP_INITIAL_CURRENT = -1
"""`timestamp.initial=-1`: start from the current time (Confluent's TIMESTAMP_INITIAL_CURRENT)."""
GRANULARITIES = ("connect_logical", "micros_long", "micros_string", "micros_iso_datetime_string", "nanos_long",
                 "nanos_string", "nanos_iso_datetime_string")
"""Confluent's TimestampGranularity: how a TIMESTAMP column's values appear in records (offsets keep their form)."""
ISOLATION_DEFAULT = "DEFAULT"
ISOLATION_SQL_SERVER_SNAPSHOT = "SQL_SERVER_SNAPSHOT"
ISOLATION_MODES = (ISOLATION_DEFAULT, "READ_UNCOMMITTED", "READ_COMMITTED", "REPEATABLE_READ", "SERIALIZABLE",
                   ISOLATION_SQL_SERVER_SNAPSHOT)


def _valid_zone(key: str, value: Any) -> str | None:
    """An IANA time zone name, as Java's TimeZone.getTimeZone must know it."""
    if value is None or str(value) == "":
        return None
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        ZoneInfo(str(value))
    except (ZoneInfoNotFoundError, ValueError):
        return f"unknown time zone '{str(value)[:80]}'; use an IANA name such as UTC or Europe/Paris"
    return None


def jdbc_source_config_def() -> ConfigDef:
    return (
        ConfigDef()
        .define(CONNECTION_URL, Type.STRING, validator=NonEmptyString(), importance=Importance.HIGH,
                doc="JDBC connection URL: jdbc:mysql://, jdbc:mariadb://, jdbc:postgresql:// or jdbc:sqlite:.",
                group="Database")
        .define(CONNECTION_USER, Type.STRING, None, importance=Importance.HIGH, doc="JDBC connection user.",
                group="Database")
        .define(CONNECTION_PASSWORD, Type.PASSWORD, None, importance=Importance.HIGH,
                doc="JDBC connection password.", group="Database")
        .define(CONNECTION_ATTEMPTS, Type.INT, 3, Range.at_least(1), Importance.LOW,
                doc="Maximum number of attempts to retrieve a valid JDBC connection.", group="Database")
        .define(CONNECTION_BACKOFF_MS, Type.LONG, 10000, Range.at_least(0), Importance.LOW,
                doc="Backoff time in milliseconds between connection attempts.", group="Database")
        .define(CATALOG_PATTERN, Type.STRING, None, importance=Importance.MEDIUM,
                doc="Catalog pattern to fetch table metadata from the database (the database, for MySQL).",
                group="Database")
        .define(SCHEMA_PATTERN, Type.STRING, None, importance=Importance.MEDIUM,
                doc="Schema pattern to fetch table metadata from the database (a LIKE pattern).", group="Database")
        .define(TABLE_WHITELIST, Type.LIST, [], importance=Importance.MEDIUM,
                doc="List of tables to include in copying (deprecated name of table.include.list).",
                group="Database")
        .define(TABLE_BLACKLIST, Type.LIST, [], importance=Importance.MEDIUM,
                doc="List of tables to exclude from copying (deprecated name of table.exclude.list).",
                group="Database")
        .define(TABLE_INCLUDE_LIST, Type.LIST, [], importance=Importance.MEDIUM,
                doc="List of tables to include in copying; use either it or the exclude list.", group="Database")
        .define(TABLE_EXCLUDE_LIST, Type.LIST, [], importance=Importance.MEDIUM,
                doc="List of tables to exclude from copying.", group="Database")
        .define(TABLE_TYPES, Type.LIST, ["TABLE"], ValidString.of("TABLE", "VIEW", case_insensitive=True),
                Importance.LOW, doc="Table types to copy: TABLE, VIEW, or both.", group="Database")
        .define(TABLE_POLL_INTERVAL_MS, Type.LONG, 60000, Range.at_least(0), Importance.LOW,
                doc="How often to look for new or removed tables, in ms: a process that runs the connector "
                    "again within this time (a worker, a notebook) reuses the tables it found; each new "
                    "process looks them up at its first run. 0 = at every run.", group="Connector")
        .define(DIALECT_NAME, Type.STRING, "", ValidString.of("", *[d.name for d in DIALECTS]), Importance.LOW,
                doc="The database dialect; empty = from the connection URL.", group="Database")
        .define(QUOTE_SQL_IDENTIFIERS, Type.STRING, "ALWAYS", ValidString.of("ALWAYS", "NEVER",
                                                                             case_insensitive=True),
                Importance.MEDIUM, doc="When to quote table and column names in SQL statements.", group="Database")
        .define(TRANSACTION_ISOLATION_MODE, Type.STRING, ISOLATION_DEFAULT,
                ValidString.of(*ISOLATION_MODES, case_insensitive=True), Importance.LOW,
                doc="The transaction isolation level of every connection the source reads with (its plan's "
                    "and Spark's); DEFAULT = the database's own. SQL_SERVER_SNAPSHOT is for SQL Server only.",
                group="Database")
        .define(MODE, Type.STRING, "", ValidString.of("", *MODES), Importance.HIGH,
                doc="How each poll finds rows: bulk (the whole table), incrementing, timestamp, or "
                    "timestamp+incrementing.", group="Mode")
        .define(INCREMENTING_COLUMN, Type.STRING, "", importance=Importance.MEDIUM,
                doc="A strictly incrementing column to detect new rows; empty = the auto-increment column.",
                group="Mode")
        .define(TIMESTAMP_COLUMNS, Type.LIST, [], importance=Importance.MEDIUM,
                doc="Timestamp columns to detect new or modified rows; several are COALESCE'd left to right.",
                group="Mode")
        .define(TIMESTAMP_INITIAL, Type.LONG, None, importance=Importance.LOW,
                doc="The epoch millis of the first timestamp to read; -1 = the current time; unset = all.",
                group="Mode")
        .define(VALIDATE_NON_NULL, Type.BOOLEAN, True, importance=Importance.LOW,
                doc="Check that the incrementing and timestamp columns are NOT NULL.", group="Mode")
        .define(QUERY, Type.STRING, "", importance=Importance.MEDIUM,
                doc="A custom query to run instead of copying whole tables.", group="Mode")
        .define(QUERY_SUFFIX, Type.STRING, "", importance=Importance.LOW,
                doc="Text appended to every query (e.g. a locking hint).", group="Mode")
        .define(TIMESTAMP_DELAY_MS, Type.LONG, 0, Range.at_least(0), Importance.HIGH,
                doc="How long after a row's timestamp before it is read, so that transactions with earlier "
                    "timestamps can commit first.", group="Connector")
        .define(DB_TIMEZONE, Type.STRING, "UTC", _valid_zone, importance=Importance.MEDIUM,
                doc="The time zone of the database's DATETIME/TIMESTAMP values.", group="Connector")
        .define(POLL_INTERVAL_MS, Type.INT, 5000, Range.at_least(0), Importance.HIGH,
                doc="How often to poll for new data in each table (the schedule's interval here).",
                group="Connector")
        .define(BATCH_MAX_ROWS, Type.INT, 100, Range.at_least(1), Importance.LOW,
                doc="Rows per poll in Confluent's connector; a batch here reads everything below its "
                    "high-water mark, in parallel.", group="Connector")
        .define(TOPIC_PREFIX, Type.STRING, validator=None, importance=Importance.HIGH,
                doc="Prefix of the topic names: <prefix><table>, or the whole topic name with a query.",
                group="Connector")
        .define(NUMERIC_MAPPING, Type.STRING, None, ValidString.of(*NUMERIC_MAPPINGS, case_insensitive=True),
                Importance.LOW, doc="How NUMERIC columns map to Connect types.", group="Connector")
        .define(NUMERIC_PRECISION_MAPPING, Type.BOOLEAN, False, importance=Importance.LOW,
                doc="Deprecated: numeric.mapping=precision_only.", group="Connector")
        .define(QUERY_RETRY_ATTEMPTS, Type.INT, -1, importance=Importance.LOW,
                doc="Times a plan query (the high-water mark, the database's clock) that fails with a transient "
                    "error (a lost connection, a deadlock) is tried again, connection.backoff.ms apart, before the "
                    "task fails; -1 or 0 = the run ends as retriable (exit 75) and the next run tries again, "
                    "without limit.", group="Connector")
        .define(TIMESTAMP_GRANULARITY, Type.STRING, GRANULARITIES[0], ValidString.of(*GRANULARITIES,
                                                                                 case_insensitive=True),
                Importance.LOW, doc="How TIMESTAMP columns appear in records: connect_logical (Connect's "
                                    "Timestamp), micros_long/nanos_long (int64 since the epoch), micros_string/"
                                    "nanos_string (the same as text), micros_iso_datetime_string/"
                                    "nanos_iso_datetime_string (yyyy-MM-dd'T'HH:mm:ss.SSSSSS[SSS] in db.timezone).",
                group="Connector")
        .define(LATE_ROWS_WINDOW_MS, Type.LONG, 0, Range.at_least(0), Importance.MEDIUM,
                doc="Timestamp modes: also look this far back behind the last offset at every poll, so that rows "
                    "committed late by long-running transactions, with a timestamp older than rows already read, "
                    "are still caught. A row already emitted with the same key and timestamp is not emitted again. "
                    "Rows are recognised by the incrementing column or the primary key. 0 = off (Confluent's "
                    "behaviour).", group="Beyond Confluent")
        .define(DETECT_DELETES, Type.BOOLEAN, False, importance=Importance.MEDIUM,
                doc="Tables with a primary key: compare the table's keys at every poll with the previous poll's; "
                    "each key gone gives a delete record (the key fields and __deleted=true) and a tombstone. "
                    "Every record of such a table is then keyed by its primary key.", group="Beyond Confluent")
    )


def _text(value: str | None) -> str:
    return (value or "").strip()


@dataclass(frozen=True)
class JdbcSourceSettings(Settings):
    """The keys the connector and its tasks read, typed (the table lists and numeric mapping: see below)."""

    url: str = setting(CONNECTION_URL, shown=False)  # may hold ?password=
    user: str | None = setting(CONNECTION_USER)
    password: Password | None = setting(CONNECTION_PASSWORD)
    attempts: int = setting(CONNECTION_ATTEMPTS)
    backoff_ms: int = setting(CONNECTION_BACKOFF_MS)
    dialect_name: str | None = setting(DIALECT_NAME)
    catalog_pattern: str | None = setting(CATALOG_PATTERN)
    schema_pattern: str | None = setting(SCHEMA_PATTERN)
    table_types: tuple[str, ...] = setting(TABLE_TYPES, tuple)
    mode: str = setting(MODE)
    quote_mode: str = setting(QUOTE_SQL_IDENTIFIERS, str.upper)
    query: str = setting(QUERY, _text)
    query_suffix: str = setting(QUERY_SUFFIX, _text)
    incrementing_column: str | None = setting(INCREMENTING_COLUMN)
    timestamp_columns: tuple[str, ...] = setting(TIMESTAMP_COLUMNS, tuple)
    validate_non_null: bool = setting(VALIDATE_NON_NULL)
    timestamp_delay_ms: int = setting(TIMESTAMP_DELAY_MS)
    timestamp_initial: int | None = setting(TIMESTAMP_INITIAL)
    poll_interval_ms: int = setting(POLL_INTERVAL_MS)
    topic_prefix: str = setting(TOPIC_PREFIX)
    db_timezone: str | None = setting(DB_TIMEZONE)
    timestamp_granularity: str = setting(TIMESTAMP_GRANULARITY, str.lower)
    isolation: str = setting(TRANSACTION_ISOLATION_MODE, str.upper)
    query_retry_attempts: int = setting(QUERY_RETRY_ATTEMPTS)
    table_poll_interval_ms: int = setting(TABLE_POLL_INTERVAL_MS)
    late_rows_window_ms: int = setting(LATE_ROWS_WINDOW_MS)
    detect_deletes: bool = setting(DETECT_DELETES, bool)

    @property
    def plain_password(self) -> str | None:
        return self.password.value if isinstance(self.password, Password) else self.password


def numeric_mapping(config) -> str:
    """`numeric.mapping`, or its deprecated boolean form, or none."""
    mapping = config[NUMERIC_MAPPING]
    if mapping:
        return mapping.lower()
    return "precision_only" if config[NUMERIC_PRECISION_MAPPING] else "none"


def tables_included(config) -> list[str]:
    return config[TABLE_INCLUDE_LIST] or config[TABLE_WHITELIST]


def tables_excluded(config) -> list[str]:
    return config[TABLE_EXCLUDE_LIST] or config[TABLE_BLACKLIST]


def check(values: dict[str, Any]) -> list[Problem]:
    """What the connector refuses beyond single keys (Confluent's validate() and start() checks)."""
    problems: list[Problem] = []
    mode = values.get(MODE) or ""
    if not mode:
        problems.append(Problem(MODE, f"is required: one of {', '.join(MODES)}"))
    include = values.get(TABLE_INCLUDE_LIST) or values.get(TABLE_WHITELIST) or []
    exclude = values.get(TABLE_EXCLUDE_LIST) or values.get(TABLE_BLACKLIST) or []
    if include and exclude:
        problems.append(Problem(TABLE_WHITELIST if values.get(TABLE_WHITELIST) else TABLE_INCLUDE_LIST,
                                "cannot be set together with a table exclude list "
                                f"({TABLE_BLACKLIST}/{TABLE_EXCLUDE_LIST}); use one of them"))
    query = (values.get(QUERY) or "").strip()
    if query and (include or exclude):
        problems.append(Problem(QUERY, "cannot be combined with a table include or exclude list: a query "
                                       "replaces table copying"))
    if mode in (MODE_TIMESTAMP, MODE_TIMESTAMP_INCREMENTING) and not values.get(TIMESTAMP_COLUMNS):
        problems.append(Problem(TIMESTAMP_COLUMNS, f"is required in mode '{mode}'"))
    if values.get(LATE_ROWS_WINDOW_MS) and mode not in (MODE_TIMESTAMP, MODE_TIMESTAMP_INCREMENTING):
        problems.append(Problem(LATE_ROWS_WINDOW_MS, f"only applies to the timestamp modes, not mode '{mode}'; "
                                                     "remove it or use mode timestamp or timestamp+incrementing"))
    if values.get(LATE_ROWS_WINDOW_MS) and query and mode == MODE_TIMESTAMP:
        problems.append(Problem(LATE_ROWS_WINDOW_MS, "needs a way to recognise rows: with a query, use mode "
                                                     "timestamp+incrementing and name its incrementing column"))
    if str(values.get(TRANSACTION_ISOLATION_MODE) or "").upper() == ISOLATION_SQL_SERVER_SNAPSHOT:
        # Confluent's validateMultiConfigs; lakeconnect reads no SQL Server, so it is always refused.
        problems.append(Problem(TRANSACTION_ISOLATION_MODE, f"Isolation mode of `{ISOLATION_SQL_SERVER_SNAPSHOT}` can "
                                                            "only be configured with a Sql Server Dialect; use "
                                                            "READ_COMMITTED, REPEATABLE_READ, SERIALIZABLE or DEFAULT"))
    if values.get(DETECT_DELETES) and query:
        problems.append(Problem(DETECT_DELETES, "needs tables with a primary key, not a query; remove one of them"))
    return problems
