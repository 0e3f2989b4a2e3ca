"""The JDBC source task: plan a batch from the database's high-water marks, read it with Spark's JDBC reader.

Source partitions and offsets have Confluent's shape: partition `{"protocol": "1", "table": "<db>.<table>"}`
(the table's unquoted qualified name); offsets `{"incrementing": N}`, `{"timestamp": ms, "timestamp_nanos":
ns}`, or all three in `timestamp+incrementing`. A bulk copy commits `{"lakeconnect.bulk.polled.ms": ms}`
(Confluent commits nothing for bulk), so a bulk table is copied again only once `poll.interval.ms` has
passed since its last copy.

Exactly once: `plan` asks the database, through SQLAlchemy with bound values, for each table's high-water
mark (the largest incrementing value; the largest (timestamp, incrementing) below now minus
`timestamp.delay.interval.ms`) and the runtime persists it before `read`. `read` reads exactly the rows
between the committed offset and that mark, so a batch run again after a crash reads the same rows.
The bounds are numbers and timestamps this task took from the database, written into Spark's query as
checked literals; table and column names are always quoted.
"""

from __future__ import annotations

import datetime as dt
import functools
import logging
import time
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.window import Window

from connectors.jdbc import config as C
from connectors.jdbc import state as S
from connectors.jdbc.state import TableState
from connectors.jdbc.dialects import Dialect, JdbcUrl, parse_jdbc_url, quote_identifier, redact
from connectors.jdbc.discovery import TableId, connect, forget_table_lists, release, task_tables
from connectors.jdbc.errors import DRIVER_ERRORS, driver_message, transient_driver_error, transient_sql_error
from connectors.jdbc.schemas import Column as DbColumn
from connectors.jdbc.schemas import column_name, describe_columns, timestamp_schema, value_schema
from connectors.jdbc.values import TS, as_connect, granular_timestamp, offset_ts, ts_offset, utc_instant
from ingest.api import PlannedRange, SourcePlan, SourceTask
from ingest.errors import ConfigError, FatalError, Problem, RetriableError
from ingest.jvm import batch_constant
from ingest.records import HEADERS, KEY, PARTITION, SEQ, TIMESTAMP, TOPIC, VALUE, RecordBatch, counted_in_background
from ingest.records.schema import BOOLEAN_SCHEMA, ConnectSchema, from_spark_type, struct
from ingest.records.schema import timestamp as timestamp_logical
from ingest.spark import SessionCache
from ingest.state.tables import canonical_json

INCREMENTING = "incrementing"
BULK_POLLED = "lakeconnect.bulk.polled.ms"
KEYS_SNAPSHOT = "lakeconnect.keys.snapshot"
"""In the offset with `lakeconnect.detect.deletes`: the key snapshot (see state.py) of the last batch."""
DELETE_SEQ_BASE = 1 << 62
"""Delete records and tombstones follow a batch's rows: their `seq` starts here."""
DELETED = "__deleted"
LOGICAL = C.GRANULARITIES[0]
"""`timestamp.granularity=connect_logical`: TIMESTAMP columns are Connect Timestamps."""
MIN_SPLIT_SPAN = 20_000
"""A batch whose key range is narrower than this is read in one query: ranges would cost more than they save."""
log = logging.getLogger(__name__)
_VALUES = SessionCache()  # a table's record value expression, per (schema, column types, db.timezone)
_HEADERS_TYPE = T.ArrayType(T.StructType([T.StructField("key", T.StringType()), T.StructField("value", T.StringType())]))


@dataclass(frozen=True)
class TableInfo:
    """What a task reads from one source: a table, or (table None) the configured query."""

    table: TableId | None
    columns: list[DbColumn]
    schema: ConnectSchema
    incrementing: str | None
    timestamps: list[str]
    source: str
    """The SQL after FROM: the quoted table, or the query as a subquery."""
    select: str
    custom: tuple[tuple[str, str], ...] = ()
    """(column, Spark type) Spark's reader is told instead of the driver's: SQLite's dates and times as
    text (parsed in Spark), and the query columns SQLite's driver cannot type."""
    key: tuple[str, ...] = ()
    """The primary key's columns (empty: none, or a query)."""
    granular: tuple[str, ...] = ()
    """The TIMESTAMP columns `timestamp.granularity` shows as numbers or text (none with connect_logical)."""
    epoch: tuple[tuple[str, str], ...] = ()
    """(column, "date" or "timestamp"): MySQL and MariaDB columns `select` reads as numbers since the epoch
    (days, microseconds) and the read turns back into Spark dates and timestamps. The driver's own
    conversion goes through java.util.Calendar for every value: on a 1M-row table of a DATE and a DATETIME
    it was a fifth of the read (0.66 to 0.76 s against 0.53 to 0.61 s for the whole read, 2 cores)."""

    @property
    def identity(self) -> tuple[str, ...]:
        """What tells one row from another: the incrementing column, else the primary key."""
        return (self.incrementing,) if self.incrementing else self.key


class JdbcSourceTask(SourceTask):
    def __init__(self, config, context):
        super().__init__(config, context)
        self.settings = settings = C.JdbcSourceSettings.from_config(config)
        self.url: JdbcUrl = parse_jdbc_url(settings.url)
        self.dialect: Dialect = self.url.dialect
        self.mode: str = settings.mode
        self.quote_mode: str = settings.quote_mode
        self.tables = task_tables(config)
        self.query: str = settings.query
        self.units: list[TableId | None] = [None] if self.query else list(self.tables)
        """What each batch reads: the task's tables, or the query (None)."""
        self.late_ms: int = settings.late_rows_window_ms if self.mode in (
            C.MODE_TIMESTAMP, C.MODE_TIMESTAMP_INCREMENTING) else 0
        self.detect_deletes: bool = settings.detect_deletes and not self.query
        self._engine = self._planner = None
        self._infos: dict[TableId, TableInfo] = {}
        try:
            self.zone = ZoneInfo(settings.db_timezone or "UTC")
        except (ZoneInfoNotFoundError, ValueError):
            raise ConfigError([Problem(C.DB_TIMEZONE, f"unknown time zone '{settings.db_timezone}'; use an IANA "
                                                      "name such as UTC or Europe/Paris")]) from None

    # --- connections ----------------------------------------------------------------------------------

    @property
    def engine(self):
        """The connection pool the plan's queries use, at the configured isolation level."""
        if self._engine is None:
            s = self.settings
            self._engine = connect(self.url, s.user, s.plain_password, s.attempts, s.backoff_ms)
            level = self.isolation_level
            # A copy of the pool's engine that sets the level on each connection it takes (reset when given back).
            self._planner = self._engine.execution_options(isolation_level=level) if level else self._engine
        return self._planner

    @functools.cached_property
    def isolation_level(self) -> str | None:
        """`transaction.isolation.mode` as SQL (READ COMMITTED, ...), or None: the database's default. A level the
        driver does not support sets none, with a warning, as Confluent's `setConnectionIsolationMode` does."""
        mode = self.settings.isolation
        if mode == C.ISOLATION_DEFAULT:
            return None
        level = mode.replace("_", " ")
        if level not in self.dialect.isolation_levels():
            self.log.warning(f"Unable to set {C.TRANSACTION_ISOLATION_MODE}: {mode}. No transaction isolation mode "
                             "will be set for the queries: Transaction Isolation level not supported by database")
            return None
        return level

    def _query(self, sql, params: Mapping[str, Any] | None = None, rows: str = "first"):
        """One of the plan's queries: its first row (or `rows="scalar"`: its first value). A transient failure (a lost
        connection, a deadlock) is tried again `query.retry.attempts` times, `connection.backoff.ms` apart, then
        fails the task; with -1 or 0, it ends the run as retriable at once (the next run tries again)."""
        import sqlalchemy as sa

        limit, failures = self.settings.query_retry_attempts, 0
        while True:
            try:
                with self.engine.connect() as conn:
                    result = conn.execute(sa.text(sql) if isinstance(sql, str) else sql, params or {})
                    return result.scalar() if rows == "scalar" else result.first()
            except sa.exc.DBAPIError as e:
                reason = str(getattr(e, "orig", None) or e).splitlines()[0][:300]
                if not (e.connection_invalidated or transient_sql_error(reason) or transient_driver_error(e)):
                    raise
                failures += 1
                where = f"a query of {redact(self.settings.url)} failed: {reason}"
                if limit <= 0:
                    raise RetriableError(f"{where}; nothing of this batch was read, and the run may pass when tried "
                                         f"again ({C.QUERY_RETRY_ATTEMPTS}={limit}: no limit)") from None
                if failures > limit:
                    raise FatalError(f"{where}; failed to query the table after {limit} retries "
                                     f"({C.QUERY_RETRY_ATTEMPTS}={limit}); nothing of this batch was read") from None
                self.log.warning(f"{where}; attempting retry {failures} of {limit} ({C.QUERY_RETRY_ATTEMPTS})")
                time.sleep(self.settings.backoff_ms / 1000)

    def explain(self, error: Exception, plan: SourcePlan) -> Exception | None:
        """The database failed while Spark read the batch's rows (a query failing on some row, a connection
        lost): its driver's message, what was being read, and that nothing of the batch was committed."""
        if not any(marker in str(error) for marker in DRIVER_ERRORS):
            return None
        read = ", ".join(sorted({str(r.partition.get("table") or "the query") for r in plan.ranges})) or "the batch"
        where = f"reading {read} from {redact(self.settings.url)}"
        if transient_sql_error(str(error)):
            return RetriableError(f"{where} failed: {driver_message(error)}. The connection was lost or the "
                                  "database asked to try again; nothing of this batch was committed, and the run may "
                                  "pass when tried again")
        return FatalError(f"{where} failed: {driver_message(error)}. Nothing of this batch was committed: the next "
                          "run reads the same rows again, so fix what the database refused first")

    @property
    def log(self):
        """The task's logger (the connector and task in each line), else this module's."""
        return getattr(self.context, "log", None) or log

    def close(self) -> None:
        if self._engine is not None:
            release(self._engine)
            self._engine = self._planner = None

    def q(self, name: str) -> str:
        return quote_identifier(name, self.dialect, self.quote_mode)

    # --- tables ---------------------------------------------------------------------------------------

    def info(self, table: TableId | None) -> TableInfo:
        if table is None:
            if None not in self._infos:
                self._infos[None] = self._query_info()
            return self._infos[None]
        if table not in self._infos:
            import sqlalchemy as sa

            owner = self.dialect.owner(table.catalog, table.schema)
            inspector = sa.inspect(self.engine)
            try:
                raw = inspector.get_columns(table.name, schema=owner)
            except sa.exc.NoSuchTableError:
                # Dropped since the tables were looked up (table.poll.interval.ms): the next run looks again.
                forget_table_lists()
                raise RetriableError(f"table {table.unquoted()} does not exist any more; nothing of this batch was "
                                     "read, and the next run looks the tables up again") from None
            columns = describe_columns(self.dialect, raw)
            incrementing = self._incrementing_column(table, columns)
            timestamps = list(self.settings.timestamp_columns) if self.mode in (
                C.MODE_TIMESTAMP, C.MODE_TIMESTAMP_INCREMENTING) else []
            by_name = {c.name: c for c in columns}
            for name in timestamps:
                if name not in by_name:
                    raise ConfigError([Problem(C.TIMESTAMP_COLUMNS, f"column '{name}' is not in table "
                                                                    f"{table.unquoted()} (columns: "
                                                                    f"{', '.join(by_name)})")])
            if self.settings.validate_non_null:
                for name, key in [(incrementing, C.INCREMENTING_COLUMN)] + [(t, C.TIMESTAMP_COLUMNS) for t in timestamps]:
                    if name and by_name[name].nullable and not (name in timestamps and self.dialect.nullable_timestamps):
                        raise ConfigError([Problem(key, f"cannot make incremental queries using column '{name}' "
                                                        f"of {table.unquoted()}: it is nullable; make it NOT "
                                                        f"NULL or set {C.VALIDATE_NON_NULL}=false")])
            required = frozenset([incrementing] if incrementing else []) | frozenset(timestamps)
            granularity = self.settings.timestamp_granularity
            schema, kept = value_schema(table.name, columns, _numeric_mapping(self.config), required, granularity)
            granular = tuple(c.name for c in kept if c.jdbc_type == "TIMESTAMP" and granularity != LOGICAL)
            text = tuple((c.name, "STRING") for c in kept
                         if self.dialect.temporal_as_text and c.jdbc_type in ("DATE", "TIME", "TIMESTAMP"))
            key = self._primary_key(inspector, table, owner, kept, incrementing)
            epoch = tuple((c.name, self.dialect.epoch_kinds[_base_type(c)]) for c in kept
                          if _base_type(c) in self.dialect.epoch_kinds)
            self._infos[table] = TableInfo(table, kept, schema, incrementing, timestamps,
                                           table.sql(self.dialect, self.quote_mode),
                                           ", ".join(self._selected(c.name, dict(epoch).get(c.name)) for c in kept),
                                           text, key, granular, epoch)
        return self._infos[table]

    def _selected(self, name: str, epoch: str | None) -> str:
        """A column in the SELECT list: itself, or (see `TableInfo.epoch`) its value since the epoch under its name."""
        q = self.q(name)
        if epoch == "date":
            return f"DATEDIFF({q}, '1970-01-01') AS {q}"
        if epoch == "timestamp":
            return f"TIMESTAMPDIFF(MICROSECOND, '1970-01-01', {q}) AS {q}"
        return q

    def _primary_key(self, inspector, table: TableId, owner: str | None, kept: list[DbColumn],
                     incrementing: str | None) -> tuple[str, ...]:
        """The primary key, where an extra needs it (and refused, naming the extra's key, where it has none)."""
        if not self.detect_deletes and not (self.late_ms and not incrementing):
            return ()
        key = tuple(column_name(self.dialect, k) for k in
                    inspector.get_pk_constraint(table.name, schema=owner).get("constrained_columns") or ())
        names = {c.name for c in kept}
        if not key or not set(key) <= names:
            option = C.DETECT_DELETES if self.detect_deletes else C.LATE_ROWS_WINDOW_MS
            why = "no primary key" if not key else "a primary key with a column of a type this connector skips"
            need = ("deleted rows are found by their primary key" if option == C.DETECT_DELETES else
                    "rows are recognised by their primary key in mode timestamp (or by the incrementing "
                    "column in mode timestamp+incrementing)")
            raise ConfigError([Problem(option, f"table {table.unquoted()} has {why}: {need}; add one, "
                                               "or leave this table out")])
        return key

    def _incrementing_column(self, table: TableId, columns: list[DbColumn]) -> str | None:
        if self.mode not in (C.MODE_INCREMENTING, C.MODE_TIMESTAMP_INCREMENTING):
            return None
        name = self.settings.incrementing_column
        by_name = {c.name: c for c in columns}
        if name:
            if name not in by_name:
                raise ConfigError([Problem(C.INCREMENTING_COLUMN, f"column '{name}' is not in table "
                                                                  f"{table.unquoted()} (columns: {', '.join(by_name)})")])
            column = by_name[name]
        else:
            auto = [c for c in columns if c.autoincrement]
            if len(auto) != 1:
                raise ConfigError([Problem(C.INCREMENTING_COLUMN, f"is empty, and table {table.unquoted()} has "
                                                                  f"{'no' if not auto else 'more than one'} "
                                                                  "auto-increment column; name the column")])
            column = auto[0]
        if column.jdbc_type not in ("TINYINT", "SMALLINT", "INTEGER", "BIGINT") and not (
                column.jdbc_type in ("NUMERIC", "DECIMAL") and column.scale == 0):
            raise ConfigError([Problem(C.INCREMENTING_COLUMN, f"column '{column.name}' of {table.unquoted()} is "
                                                              f"{column.sql_type}, not an integer")])
        return column.name

    def _query_info(self) -> TableInfo:
        """The query's columns as Spark's JDBC reader types them (from the driver's result metadata); the
        value struct is unnamed, as Confluent's is in query mode."""
        source = f"({self.query}) lc_query"
        try:
            probe = self._spark_read(f"SELECT * FROM {source} WHERE 1 = 0")
        except Exception as e:  # noqa: BLE001 - Spark wraps the driver's SQLException
            raise ConfigError([Problem(C.QUERY, f"the database refused the query: {driver_message(e)}; "
                                                "check its SQL (it runs as a subquery)")]) from None
        names = [f.name for f in probe.schema.fields]
        temporal = {f.name: f.dataType for f in probe.schema.fields if isinstance(f.dataType, (T.DateType, T.TimestampType))}
        text: tuple[tuple[str, str], ...] = ()
        if self.dialect.temporal_as_text:
            text = tuple((f.name, "STRING") for f in probe.schema.fields
                         if isinstance(f.dataType, (T.DateType, T.TimestampType)))
            text += self._sqlite_value_types(source, [f.name for f in probe.schema.fields
                                                      if isinstance(f.dataType, T.DecimalType)])
            if text:
                probe = self._spark_read(f"SELECT * FROM {source} WHERE 1 = 0", text)
        incrementing = None
        if self.mode in (C.MODE_INCREMENTING, C.MODE_TIMESTAMP_INCREMENTING):
            incrementing = self.settings.incrementing_column
            if not incrementing:
                raise ConfigError([Problem(C.INCREMENTING_COLUMN, "is required with a query: name the query's "
                                                                  "incrementing column")])
        timestamps = list(self.settings.timestamp_columns) if self.mode in (
            C.MODE_TIMESTAMP, C.MODE_TIMESTAMP_INCREMENTING) else []
        for name, key in [(incrementing, C.INCREMENTING_COLUMN)] + [(t, C.TIMESTAMP_COLUMNS) for t in timestamps]:
            if name and name not in names:
                raise ConfigError([Problem(key, f"column '{name}' is not among the query's columns "
                                                f"({', '.join(names)})")])
        required = {incrementing, *timestamps} - {None}
        # Dates and times SQLite's columns declare keep their Connect type (read as text, parsed in Spark).
        granularity = self.settings.timestamp_granularity
        granular = tuple(n for n, t in temporal.items() if isinstance(t, T.TimestampType) and granularity != LOGICAL)
        fields = [(f.name, timestamp_schema(granularity, f.nullable and f.name not in required) if f.name in granular
                   else from_spark_type(temporal.get(f.name, f.dataType),
                                        optional=f.nullable and f.name not in required))
                  for f in probe.schema.fields]
        return TableInfo(None, [], struct(None, *fields), incrementing, timestamps, source, "*", text,
                         granular=granular)

    def _sqlite_value_types(self, source: str, columns: list[str]) -> tuple[tuple[str, str], ...]:
        """SQLite types values, not query columns (its driver calls an expression NUMERIC): the Spark
        type of each of `columns` from the type of its first non-null values."""
        if not columns:
            return ()
        import sqlalchemy as sa

        kinds = ", ".join(f"typeof({self.q(c)})" for c in columns)
        with self.engine.connect() as conn:
            rows = conn.execute(sa.text(f"SELECT {kinds} FROM {_escape_colons(source)} LIMIT 1000")).fetchall()
        spark_types = {"integer": "BIGINT", "real": "DOUBLE", "text": "STRING", "blob": "BINARY"}
        out = []
        for i, c in enumerate(columns):
            kind = next((r[i] for r in rows if r[i] != "null"), "text")
            out.append((c, spark_types.get(kind, "STRING")))
        return tuple(out)

    def partition(self, table: TableId | None) -> dict[str, str]:
        if table is None:
            return {"query": "query"}
        return {"protocol": "1", "table": table.unquoted()}

    def topic(self, table: TableId | None) -> str:
        return self.settings.topic_prefix + (table.name if table is not None else "")

    # --- plan -----------------------------------------------------------------------------------------

    def plan(self, committed: Mapping[str, Any]) -> SourcePlan:
        now_ms = int(time.time() * 1000)
        ranges = []
        for table in self.units:
            partition = self.partition(table)
            offset = committed.get(canonical_json(partition))
            planned = self._plan_table(table, offset, now_ms)
            if self.late_ms and planned is None and (offset or {}).get(TS) is not None:
                planned = _rows_offset(offset)  # nothing newer: the look-back window is still checked
            if self.detect_deletes and (planned is not None or self.mode != C.MODE_BULK):
                planned = {**(planned if planned is not None else _rows_offset(offset)), KEYS_SNAPSHOT: now_ms}
            if planned is not None:
                ranges.append(PlannedRange(partition, offset, planned))
        return SourcePlan(tuple(ranges), {"timestamp_ms": now_ms})

    def _plan_table(self, table: TableId | None, offset: Mapping[str, Any] | None, now_ms: int) -> dict | None:
        info = self.info(table)
        if self.mode == C.MODE_BULK:
            last = (offset or {}).get(BULK_POLLED)
            if last is not None and now_ms - int(last) < self.settings.poll_interval_ms:
                return None
            return {BULK_POLLED: now_ms}
        t = _escape_colons(info.source)
        where, params = self._after(info, _rows_offset(offset) or None)
        if self.mode == C.MODE_INCREMENTING:
            sql = f"SELECT MAX({self.q(info.incrementing)}) FROM {t}" + (f" WHERE {where}" if where else "")
            top = self._query(sql, params, rows="scalar")
            return None if top is None else {INCREMENTING: int(top)}
        ts = self._ts_expr(info)
        bound = self._db_now(now_ms) - dt.timedelta(milliseconds=self.settings.timestamp_delay_ms)
        conds = [f"{ts} < {self.p('bound')}"] + ([where] if where else [])
        order = f"{ts} DESC" + (f", {self.q(info.incrementing)} DESC" if info.incrementing else "")
        cols = f"{ts}" + (f", {self.q(info.incrementing)}" if info.incrementing else "")
        sql = f"SELECT {cols} FROM {t} WHERE {' AND '.join(conds)} ORDER BY {order} LIMIT 1"
        row = self._query(sql, {**params, "bound": self.naive(bound)})
        if row is None:
            return None
        out = ts_offset(self.parse_ts(row[0]))
        if info.incrementing:
            out[INCREMENTING] = int(row[1])
        return out

    def _after(self, info: TableInfo, offset: Mapping[str, Any] | None) -> tuple[str, dict]:
        """The SQL condition (with bound parameters) for rows after `offset` (Confluent's criteria)."""
        inc = self.q(info.incrementing) if info.incrementing else None
        if self.mode == C.MODE_INCREMENTING:
            if offset is None or offset.get(INCREMENTING) is None:
                return "", {}
            return f"{inc} > :last_inc", {"last_inc": int(offset[INCREMENTING])}
        ts = self._ts_expr(info)
        last = offset_ts(offset) if offset else self._initial_ts()
        if last is None:
            return f"{ts} IS NOT NULL", {}
        if self.mode == C.MODE_TIMESTAMP or offset is None or offset.get(INCREMENTING) is None:
            return f"{ts} > {self.p('last_ts')}", {"last_ts": self.naive(last)}
        return (f"(({ts} = {self.p('last_ts')} AND {inc} > :last_inc) OR {ts} > {self.p('last_ts')})",
                {"last_ts": self.naive(last), "last_inc": int(offset[INCREMENTING])})

    def _ts_expr(self, info: TableInfo) -> str:
        names = [self.q(n) for n in info.timestamps]
        expr = names[0] if len(names) == 1 else f"COALESCE({', '.join(names)})"
        return self.dialect.compared_timestamp(expr)

    def p(self, name: str) -> str:
        """A bound timestamp parameter (SQLite compares timestamps as text: both sides normalised)."""
        return self.dialect.compared_timestamp(":" + name)

    def naive(self, value: dt.datetime) -> dt.datetime:
        """An instant as the database's DATETIME holds it: wall time in `db.timezone`, no zone."""
        return value.astimezone(self.zone).replace(tzinfo=None)

    def parse_ts(self, value: Any) -> dt.datetime:
        """A DATETIME value read from the database (wall time in `db.timezone`) as an instant."""
        if isinstance(value, dt.datetime):
            return value.astimezone(dt.timezone.utc) if value.tzinfo else value.replace(tzinfo=self.zone)
        if isinstance(value, dt.date):
            return dt.datetime(value.year, value.month, value.day, tzinfo=self.zone)
        parsed = dt.datetime.fromisoformat(str(value).strip().replace("T", " "))
        return parsed.astimezone(dt.timezone.utc) if parsed.tzinfo else parsed.replace(tzinfo=self.zone)

    def _initial_ts(self) -> dt.datetime | None:
        initial = self.settings.timestamp_initial
        if initial is None:
            return None
        if initial == C.TIMESTAMP_INITIAL_CURRENT:
            return self._db_now(int(time.time() * 1000))
        return dt.datetime.fromtimestamp(initial / 1000, dt.timezone.utc)

    def _db_now(self, now_ms: int) -> dt.datetime:
        """Now, in UTC (the database's clock where it has one, as Confluent asks the database)."""
        return utc_instant(self._query(self.dialect.utc_now_sql, rows="scalar"))  # asked in UTC

    # --- read -----------------------------------------------------------------------------------------

    def read(self, plan: SourcePlan) -> list[RecordBatch]:
        batches = []
        by_partition = {canonical_json(self.partition(t)): t for t in self.units}
        for rng in plan.ranges:
            key = canonical_json(rng.partition)
            table = by_partition.get(key)
            if key not in by_partition:
                raise ConfigError([Problem(C.TABLE_WHITELIST, f"planned table {rng.partition.get('table')} is no "
                                                              "longer one of this task's tables; reset or alter "
                                                              "the connector's offsets after changing its tables")])
            info = self.info(table)
            timestamp_ms = plan.details["timestamp_ms"]
            if self._reads_rows(rng):
                batches.append(self._read_table(info, rng, timestamp_ms))
            if self.detect_deletes:
                deletes = self._deletes(info, rng, timestamp_ms)
                if deletes is not None:
                    batches.append(deletes)
        return batches

    def _reads_rows(self, rng: PlannedRange) -> bool:
        """False when a batch only checks for deletes: its offsets moved nothing but the key snapshot."""
        if not _rows_offset(rng.end):
            return False
        if self.late_ms:
            return True
        return _rows_offset(rng.end) != _rows_offset(rng.start)

    def _read_table(self, info: TableInfo, rng: PlannedRange, timestamp_ms: int) -> RecordBatch:
        conds = []
        start = _rows_offset(rng.start) or None
        late = bool(self.late_ms and start and start.get(TS) is not None)
        if self.mode != C.MODE_BULK:
            if late:  # the whole look-back window; what earlier batches emitted is taken out below
                after = f"{self._ts_expr(info)} > {self.p('last_ts')}"
                params = {"last_ts": self.naive(offset_ts(start) - dt.timedelta(milliseconds=self.late_ms))}
            else:
                after, params = self._after(info, start)
            upto, more = self._upto(info, rng.end)
            conds = [c for c in (after, upto) if c]
            params = {**params, **more}
        else:
            params = {}
        sql = f"SELECT {info.select} FROM {info.source}"
        if conds:
            sql += " WHERE " + " AND ".join(conds)
        suffix = self.settings.query_suffix
        if suffix:
            sql += " " + suffix
        sql = _inline(sql, params, self.dialect)
        ranges = self._split(info, rng)
        df = self._spark_read(sql, info.custom, ranges)
        if info.epoch:
            df = df.withColumns({name: F.date_from_unix_date(F.col(self.q_spark(name)).cast("int")) if kind == "date"
                                 else F.timestamp_micros(F.col(self.q_spark(name)).cast("long"))
                                 for name, kind in info.epoch})
        if self.late_ms:
            df = self._not_emitted(info, rng, df, timestamp_ms, late)
            ranges = None
        batch = self._records(info, df, timestamp_ms)
        if ranges is not None and _seq_column(self.mode, info) is not None:  # in key order, each range in turn
            batch = replace(batch, counts=self._counter(f"({sql}) lc_read", ranges))
        return batch

    # --- the extras -----------------------------------------------------------------------------------

    def _not_emitted(self, info: TableInfo, rng: PlannedRange, df: DataFrame, version: int, late: bool) -> DataFrame:
        """The rows of `df` that no earlier batch emitted (same identity, same timestamp), read back from
        the staged copy so that the batch's records and what it remembers are the same rows."""
        if not info.identity:
            raise ConfigError([Problem(C.LATE_ROWS_WINDOW_MS, "needs the incrementing column or a primary key "
                                                              "to recognise rows; use mode timestamp+incrementing")])
        state = TableState(self.context, rng.partition, "late")
        ts = F.coalesce(*[F.col(self.q_spark(n)) for n in info.timestamps])
        until = offset_ts(rng.end)
        state.stage(df.withColumns({S.TS: ts, S.BATCH: F.lit(version), S.UNTIL: F.lit(ts_offset(until)[TS])}),
                    version)
        if late:  # before the read: the files a batch's records come from must stay
            horizon = offset_ts(_rows_offset(rng.start)) - dt.timedelta(milliseconds=self.late_ms)
            state.prune(f"{S.UNTIL} < {ts_offset(horizon)[TS]}")
        staged = state.read()
        rows = staged.filter(F.col(S.BATCH) == version)
        if late:
            seen = staged.filter(F.col(S.BATCH) < version).select(*info.identity, S.TS)
            rows = rows.join(seen, on=[*info.identity, S.TS], how="left_anti")
        return rows.drop(S.TS, S.BATCH, S.UNTIL)

    def _deletes(self, info: TableInfo, rng: PlannedRange, timestamp_ms: int) -> RecordBatch | None:
        """A delete record and a tombstone for each key of the previous snapshot this batch's snapshot lacks,
        both with the header `__deleted: true` (for a `HasHeaderKey` predicate that keeps transforms
        which need the row's fields off them)."""
        state = TableState(self.context, rng.partition, "keys")
        new, old = int(rng.end[KEYS_SNAPSHOT]), (rng.start or {}).get(KEYS_SNAPSHOT)
        columns = ", ".join(self.q(k) for k in info.key)
        custom = tuple((c, t) for c, t in info.custom if c in info.key)
        keys = self._spark_read(f"SELECT {columns} FROM {info.source}", custom)
        state.stage(keys.withColumn(S.SNAPSHOT, F.lit(new)), new)
        if old is None:
            return None
        state.prune(f"{S.SNAPSHOT} < {int(old)}")  # before the read: the files it reads must stay
        staged = state.read()
        before = staged.filter(F.col(S.SNAPSHOT) == int(old)).drop(S.SNAPSHOT)
        now = staged.filter(F.col(S.SNAPSHOT) == new).drop(S.SNAPSHOT)
        gone = before.join(now, on=list(info.key), how="left_anti")
        key_schema, key = self._key(info, gone)
        value_schema = struct(None, *[(f.name, f.schema) for f in key_schema.fields], (DELETED, BOOLEAN_SCHEMA))
        rank = F.row_number().over(Window.orderBy(*[F.col(self.q_spark(k)) for k in info.key]))
        tomb = F.explode(F.array(F.lit(False), F.lit(True)))
        rows = gone.select("*", rank.alias("__lc_rank")).select("*", tomb.alias("__lc_tomb"))
        value = F.when(F.col("__lc_tomb"), F.lit(None)).otherwise(F.struct(
            *[F.col(f"{KEY}.{self.q_spark(f.name)}").alias(f.name) for f in key_schema.fields],
            F.lit(True).alias(DELETED)))
        out = rows.select(key.alias(KEY), "__lc_rank", "__lc_tomb").select(
            F.lit(self.topic(info.table)).alias(TOPIC), F.lit(None).cast("int").alias(PARTITION), F.col(KEY),
            value.alias(VALUE), F.array(F.struct(F.lit(DELETED).alias("key"), F.lit("true").alias("value")))
            .cast(_HEADERS_TYPE).alias(HEADERS),
            batch_constant((F.lit(timestamp_ms) / 1000).cast("timestamp")).alias(TIMESTAMP),
            (F.lit(DELETE_SEQ_BASE) + F.col("__lc_rank") * 2 + F.col("__lc_tomb").cast("long")).alias(SEQ))
        return RecordBatch(out, key_schema, value_schema, topics=(self.topic(info.table),))

    def _key(self, info: TableInfo, df: DataFrame) -> tuple[ConnectSchema, Column]:
        """The record key with delete detection: a struct of the primary key's fields."""
        fields = [info.schema.field(k) for k in info.key]
        schema = struct(None, *[(f.name, f.schema) for f in fields])
        return schema, F.struct(*[self._value(info, f.name, df.schema[f.name].dataType, f.schema).alias(f.name)
                                  for f in fields])

    def _value(self, info: TableInfo, name: str, spark_type: T.DataType, schema: ConnectSchema) -> Column:
        """A column as read by Spark, as its record field: `as_connect`, then `timestamp.granularity`."""
        col, zone = F.col(self.q_spark(name)), self.settings.db_timezone
        if name in info.granular:
            instant = as_connect(col, spark_type, timestamp_logical(schema.optional), zone)
            return granular_timestamp(instant, self.settings.timestamp_granularity, zone or "UTC")
        return as_connect(col, spark_type, schema, zone)

    def _split(self, info: TableInfo, rng: PlannedRange) -> list[str] | None:
        """WHERE conditions that read a batch in parallel ranges of its integer key across Spark's
        executors (ascending, together every row), or None to read it in one query. The bounds only
        spread the ranges: the batch's own WHERE decides which rows it holds."""
        if self.mode in (C.MODE_INCREMENTING, C.MODE_TIMESTAMP_INCREMENTING):
            column = info.incrementing
        elif self.mode == C.MODE_BULK:
            column = _single_int_key(info)
        else:
            column = None
        parts = self.context.spark.sparkContext.defaultParallelism
        if column is None or parts < 2:
            return None
        start = (rng.start or {}).get(INCREMENTING) if self.mode == C.MODE_INCREMENTING else None
        if start is not None:
            lower, upper = int(start) + 1, int(rng.end[INCREMENTING])
        else:
            q = self.q(column)
            lower, upper = self._query(f"SELECT MIN({q}), MAX({q}) FROM {_escape_colons(info.source)}")
            if lower is None:
                return None
            lower, upper = int(lower), int(upper)
            if self.mode == C.MODE_INCREMENTING:
                upper = min(upper, int(rng.end[INCREMENTING]))
        if upper - lower < MIN_SPLIT_SPAN:
            return None
        q = self.q(column)
        bounds = [lower + (upper + 1 - lower) * i // parts for i in range(1, parts)]
        return ([f"{q} < {bounds[0]} OR {q} IS NULL"]
                + [f"{q} >= {a} AND {q} < {b}" for a, b in zip(bounds, bounds[1:])]
                + [f"{q} >= {bounds[-1]}"])

    def _counter(self, source: str, ranges: list[str]) -> Callable[[], tuple[int | None, ...]]:
        """The rows in each of `ranges` of `source` but the last, counted by the database in one query (see
        `RecordBatch.counts`). The query starts now, beside the batch's conversion and the write's planning,
        which it would otherwise hold up (a 1M-row count takes MariaDB 0.05 to 0.4 s); the topic waits for
        it when it numbers the records. A count of other rows than the write reads is caught there."""
        import sqlalchemy as sa

        cases = ", ".join(f"COUNT(CASE WHEN {r} THEN 1 END)" for r in ranges[:-1])
        where = " OR ".join(f"({r})" for r in ranges[:-1])
        query = sa.text(_escape_colons(f"SELECT {cases} FROM {source} WHERE {where}"))

        def count() -> tuple[int | None, ...]:
            with self.engine.connect() as conn:
                row = conn.execute(query).first()
            return (*(int(c) for c in row), None)

        return counted_in_background(count)

    def _upto(self, info: TableInfo, end: Mapping[str, Any]) -> tuple[str, dict]:
        inc = self.q(info.incrementing) if info.incrementing else None
        if self.mode == C.MODE_INCREMENTING:
            return f"{inc} <= :end_inc", {"end_inc": int(end[INCREMENTING])}
        ts = self._ts_expr(info)
        end_ts = self.naive(offset_ts(end))
        if self.mode == C.MODE_TIMESTAMP:
            return f"{ts} <= {self.p('end_ts')}", {"end_ts": end_ts}
        return (f"({ts} < {self.p('end_ts')} OR ({ts} = {self.p('end_ts')} AND {inc} <= :end_inc))",
                {"end_ts": end_ts, "end_inc": int(end[INCREMENTING])})


    def _spark_read(self, sql: str, custom: tuple[tuple[str, str], ...] = (),
                    ranges: list[str] | None = None) -> DataFrame:
        """`sql` read by Spark: in one query, or one per WHERE condition of `ranges` (a Spark partition each,
        in their order)."""
        spark = self.context.spark
        user, password = self.url.credentials(self.settings.user, self.settings.plain_password)
        reader = spark.read.format("jdbc").option("url", self.url.spark_url()).option("driver", self.dialect.spark_driver)
        reader = reader.option("query", sql) if ranges is None else reader.option("dbtable", f"({sql}) lc_read")
        if user:
            reader = reader.option("user", user)
        if password:
            reader = reader.option("password", password)
        options = self.dialect.reader_options()
        if self.isolation_level:
            options.update(self.dialect.isolation_options(self.isolation_level, self.engine))
        for option, value in options.items():
            reader = reader.option(option, value)
        if custom:
            reader = reader.option("customSchema", ", ".join(f"{self.q_spark(c)} {t}" for c, t in custom))
        if ranges is not None:  # the options so far become the connection's properties, as Spark merges them
            return reader.jdbc(self.url.spark_url(), f"({sql}) lc_read", predicates=ranges)
        return reader.load()

    def _records(self, info: TableInfo, df: DataFrame, timestamp_ms: int) -> RecordBatch:
        types = df.schema
        timezone = self.settings.db_timezone
        # The value's expression depends on these only: a connector's next batch of the table reuses it.
        key = ("jdbc-value", info.schema.to_json_text(),
               tuple(types[f.name].dataType.json() for f in info.schema.fields), timezone, info.granular,
               self.settings.timestamp_granularity)
        value = _VALUES.get(self.context.spark, key, lambda: F.struct(*[
            self._value(info, f.name, types[f.name].dataType, f.schema).alias(f.name) for f in info.schema.fields]))
        # Records go to the topic in the order Confluent's queries give them, each Spark partition sorted
        # (the topic numbers them as they come, and sorts them itself only when they come out of order).
        # By the key, whose values are the seq, when there is one: MariaDB's and SQLite's tables are
        # stored in key order and a range of the key comes back in it; PostgreSQL's are not, and raw rows
        # sort cheaper than the records they become. Else in one global order, ranges of it per Spark
        # partition and seq their position: a fixed number of ranges, so that the topic's count of the
        # batch and its write see the same partitions.
        order = self._order_columns(info)
        seq = F.monotonically_increasing_id()
        if _seq_column(self.mode, info) is not None:
            key_col = F.col(self.q_spark(_seq_column(self.mode, info)))
            ordered = df if self.dialect.ordered_reads else df.sortWithinPartitions(key_col)
            seq = key_col.cast("long")
        elif order:
            parts = max(self.context.spark.sparkContext.defaultParallelism, 1)
            ordered = df.repartitionByRange(parts, *order).sortWithinPartitions(*order)
        else:
            ordered = df
        key_schema, key = None, F.lit(None).cast("void")
        if self.detect_deletes:
            key_schema, key = self._key(info, df)
        out = ordered.select(
            F.lit(self.topic(info.table)).alias(TOPIC), F.lit(None).cast("int").alias(PARTITION),
            key.alias(KEY), value.alias(VALUE),
            F.lit(None).cast(_HEADERS_TYPE).alias(HEADERS),
            batch_constant((F.lit(timestamp_ms) / 1000).cast("timestamp")).alias(TIMESTAMP), seq.alias(SEQ))
        return RecordBatch(out, key_schema, info.schema, topics=(self.topic(info.table),))

    def _order_columns(self, info: TableInfo) -> list[Column]:
        if info.timestamps:
            ts = F.coalesce(*[F.col(self.q_spark(n)) for n in info.timestamps])
            return [ts] + ([F.col(self.q_spark(info.incrementing))] if info.incrementing else [])
        return []

    @staticmethod
    def q_spark(name: str) -> str:
        return "`" + name.replace("`", "``") + "`"


def _seq_column(mode: str, info: TableInfo) -> str | None:
    """The column whose values are the records' seq: the incrementing column, or a bulk table's integer key."""
    if mode == C.MODE_INCREMENTING:
        return info.incrementing
    return _single_int_key(info) if mode == C.MODE_BULK else None




def _base_type(column: DbColumn) -> str:
    return column.sql_type.split("(")[0].strip().upper()


def _single_int_key(info: TableInfo) -> str | None:
    auto = [c for c in info.columns if c.autoincrement and c.jdbc_type in ("TINYINT", "SMALLINT", "INTEGER", "BIGINT")]
    return auto[0].name if len(auto) == 1 else None


def _numeric_mapping(config) -> str:
    return C.numeric_mapping(config)


def _rows_offset(offset: Mapping[str, Any] | None) -> dict[str, Any]:
    """An offset without the key snapshot: the part that says which rows were read."""
    return {k: v for k, v in (offset or {}).items() if k != KEYS_SNAPSHOT}


def _inline(sql: str, params: Mapping[str, Any], dialect: Dialect) -> str:
    """Spark's JDBC reader takes SQL text: put the bounds in as literals. They are integers and datetimes
    this task read from the database or its offsets (never configuration text), checked by type here."""
    def literal(value: Any) -> str:
        if isinstance(value, bool) or not isinstance(value, (int, dt.datetime)):
            raise TypeError(f"refusing to inline {type(value).__name__} into SQL")
        if isinstance(value, int):
            return str(int(value))
        return dialect.timestamp_literal(value.strftime("%Y-%m-%d %H:%M:%S.%f"))

    out = sql
    for name in sorted(params, key=len, reverse=True):
        out = out.replace(f":{name}", literal(params[name]))
    return out


def _escape_colons(sql: str) -> str:
    """User SQL inside an SQLAlchemy text(): a colon there is text, not a bound parameter."""
    return sql.replace(":", "\\:")
