"""A consistent snapshot of the captured tables, read on an executor (Spark's Python data source).

One Spark task opens ONE transaction WITH CONSISTENT SNAPSHOT and yields, before any row, the binlog
position that transaction sees: MariaDB gives it (`binlog_snapshot_file`) without a lock; elsewhere
snapshot.locking.mode's locks make SHOW MASTER STATUS match the transaction, as Debezium takes them. Then,
with include.schema.changes, the snapshot's schema change statements (catalog.snapshot_ddl), then every
table's rows. The driver's side (when a snapshot is taken, staging and reading its rows) is snapshot.py.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from connectors.mysql import tls
from connectors.mysql.binlog import SECRET_OPTION, binlog_status_statement, quote
from connectors.mysql.catalog import fingerprint, snapshot_ddl

SNAPSHOT_FORMAT = "lakeconnect_mysql_snapshot"
SNAPSHOT_ROWS = "t int, seq long, after string"
POSITION_ROW = -1
"""Row t = -1: a JSON list [file, position, GTID set or null, the columns' fingerprint, the locks taken]."""
ERROR_ROW = -2
"""Row t = -2 (then nothing more): a JSON list [the error, "true" when running again may succeed]."""
DDL_ROW = -3
"""A schema change statement of the snapshot (include.schema.changes): [db, table, statement, tableChanges]."""

STATUS = "status"
"""The lock-free way: MariaDB's binlog_snapshot_file/position of the consistent-snapshot transaction."""
LOCKINGS = ("minimal", "extended", "none")


class SnapshotDataSource(DataSource):
    """Every captured table's rows, read in ONE consistent-snapshot transaction, preceded by the binlog
    position that transaction sees (the POSITION_ROW). Options: the connection (SECRET_OPTION), `queries`
    (a JSON list: one SELECT per table giving one JSON_ARRAY column), `chunk`, `locking` (STATUS or one of
    LOCKINGS: how the position is made to match the transaction), `tables` (JSON [[db, table]...]: the
    captured tables, locked where the global lock is refused, and fingerprinted), `lock_timeout` (s).
    One Spark task: a transaction is one connection. Rows stream (an unbuffered cursor)."""

    @classmethod
    def name(cls) -> str:
        return SNAPSHOT_FORMAT

    def schema(self) -> str:
        return SNAPSHOT_ROWS

    def reader(self, schema) -> DataSourceReader:
        return SnapshotReader(self.options)


class SnapshotFailed(Exception):
    def __init__(self, message: str, retriable: bool = False):
        super().__init__(message)
        self.retriable = retriable


class SnapshotReader(DataSourceReader):
    def __init__(self, options: Mapping[str, str]):
        self.connection = json.loads(options[SECRET_OPTION])
        self.queries = json.loads(options["queries"])
        self.chunk = int(options.get("chunk", "10000"))
        self.locking = options.get("locking", STATUS)
        self.tables = [tuple(t) for t in json.loads(options.get("tables", "[]"))]
        self.lock_timeout = int(options.get("lock_timeout", "10"))
        # include.schema.changes: the databases whose tables' DDL the snapshot emits (None: none)
        self.ddl_databases = json.loads(options["ddl_databases"]) if "ddl_databases" in options else None

    def partitions(self) -> list[InputPartition]:
        return [InputPartition(0)]

    def read(self, partition) -> Iterator[Any]:
        import pyarrow as pa
        import pymysql
        import pymysql.cursors

        schema = pa.schema([("t", pa.int32()), ("seq", pa.int64()), ("after", pa.string())])
        conn = pymysql.connect(**tls.pymysql_kwargs(self.connection), autocommit=True, charset="utf8mb4",
                               cursorclass=pymysql.cursors.SSCursor)
        try:
            cur = conn.cursor()
            try:
                position, unlock_after_rows = self._begin(cur)
            except SnapshotFailed as e:
                yield pa.RecordBatch.from_pydict({"t": [ERROR_ROW], "seq": [0], "after": [json.dumps(
                    [str(e), "true" if e.retriable else "false"])]}, schema=schema)
                return
            yield pa.RecordBatch.from_pydict({"t": [POSITION_ROW], "seq": [0], "after": [json.dumps(position)]},
                                             schema=schema)
            if self.ddl_databases is not None:
                statements = [json.dumps(s) for s in snapshot_ddl(conn.cursor(pymysql.cursors.Cursor),
                                                                  self.ddl_databases)]
                yield pa.RecordBatch.from_pydict({"t": [DDL_ROW] * len(statements),
                                                  "seq": list(range(len(statements))), "after": statements},
                                                 schema=schema)
            seq = 1
            for t, sql in enumerate(self.queries):
                cur.execute(sql)
                while True:
                    rows = cur.fetchmany(self.chunk)
                    if not rows:
                        break
                    n = len(rows)
                    yield pa.RecordBatch.from_pydict(
                        {"t": [t] * n, "seq": list(range(seq, seq + n)), "after": [r[0] for r in rows]}, schema=schema)
                    seq += n
            if unlock_after_rows:
                cur.execute("UNLOCK TABLES")
            cur.execute("COMMIT")
        finally:
            conn.close()  # a task that fails or is killed drops the connection: the server releases its locks

    def _begin(self, cur) -> tuple[list, bool]:
        """Open the transaction and read its binlog position, as Debezium does on MySQL for each locking mode
        (or MariaDB's lock-free way): [file, pos, gtids, fingerprint, locks], and whether the locks stay
        until the rows are read."""
        import pymysql

        if self.locking == STATUS:
            cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
            cur.execute("SHOW STATUS LIKE 'binlog_snapshot_%'")
            status = {str(k).lower(): str(v) for k, v in cur.fetchall()}
            return [status.get("binlog_snapshot_file"), status.get("binlog_snapshot_position"), None,
                    fingerprint(cur, self.tables), "none (the transaction's binlog_snapshot_file)"], False
        cur.execute("SELECT VERSION()")
        status_sql = binlog_status_statement(str(cur.fetchone()[0]))
        cur.execute(f"SET SESSION lock_wait_timeout={max(1, self.lock_timeout)}")
        locks, global_lock, table_locks, refused = "none", False, False, None
        started = time.monotonic()
        if self.locking != "none":
            try:
                cur.execute("FLUSH TABLES WITH READ LOCK")
                global_lock, locks = True, "global read lock"
            except pymysql.MySQLError as e:  # RDS and Aurora refuse it; so does a lock wait that times out
                refused = _error_text(e)
        if self.locking != "none" and not global_lock:
            if self.tables:
                try:
                    cur.execute("FLUSH TABLES " + ", ".join(f"{quote(d)}.{quote(t)}" for d, t in self.tables)
                                + " WITH READ LOCK")
                except pymysql.MySQLError as e:
                    raise SnapshotFailed(
                        f"snapshot.locking.mode={self.locking} could take neither the global read lock ({refused}) "
                        f"nor read locks on the captured tables ({_error_text(e)}). Grant the connector's user "
                        "RELOAD and LOCK TABLES (GRANT RELOAD, LOCK TABLES ON *.* TO ...), end what holds the "
                        "locks (or raise snapshot.lock.timeout.ms), or set snapshot.locking.mode=none; nothing "
                        "was emitted or committed", retriable=_is_lock_wait(e)) from None
            table_locks = True
            locks = f"read locks on {len(self.tables)} tables (global read lock refused: {refused})"
        try:
            # Debezium's order: the position, then the transaction (docs/connectors/mysql-cdc.md)
            if self.locking == "none":
                position = self._status(cur, status_sql)
            if not table_locks:  # a transaction's start would release table locks; the locks keep it consistent
                cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
            if self.locking != "none":
                position = self._status(cur, status_sql)
            position.append(fingerprint(cur, self.tables))
        except pymysql.MySQLError as e:
            raise SnapshotFailed(f"cannot read the binlog position with {status_sql}: {_error_text(e)}. The user "
                                 "needs REPLICATION CLIENT (BINLOG MONITOR on MariaDB) and the binlog must be on; "
                                 "nothing was emitted or committed") from None
        unlock_after_rows = table_locks or (global_lock and self.locking == "extended")
        if global_lock and not unlock_after_rows:
            cur.execute("UNLOCK TABLES")  # minimal: writes wait only while the position and schemas are read
            locks += f", held {int((time.monotonic() - started) * 1000)} ms"
        else:
            locks += ", held until the rows were read" if unlock_after_rows else ""
        position.append(locks)
        return position, unlock_after_rows

    @staticmethod
    def _status(cur, sql: str) -> list:
        cur.execute(sql)
        row = cur.fetchone()
        if not row:
            raise SnapshotFailed(f"{sql} returned nothing: binary logging is off; start the server with log_bin "
                                 "(and binlog_format=ROW, binlog_row_image=FULL). Nothing was emitted or committed")
        gtids = str(row[4]).replace("\n", "").strip() if len(row) > 4 and row[4] else None
        return [str(row[0]), str(row[1]), gtids or None]


def _error_text(e: Exception) -> str:
    args = getattr(e, "args", ())
    return f"{args[1]} (error {args[0]})" if len(args) >= 2 and isinstance(args[0], int) else type(e).__name__


def _is_lock_wait(e: Exception) -> bool:
    args = getattr(e, "args", ())
    return bool(args) and args[0] in (1205, 1213)  # lock wait timeout, deadlock
