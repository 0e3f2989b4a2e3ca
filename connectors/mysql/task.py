"""The MySQL CDC task: a batch is a snapshot, or the binlog from the committed offset to its end at plan time.

Source partition `{"server": <topic.prefix>}`; offsets in Debezium's shape: `file`, `pos` (where the next
batch starts: always a transaction boundary, the server's binlog end when the batch was planned),
`gtids` (the GTID position there), `row`, `event` (0: batches end between transactions), `server_id`,
`ts_sec`, and `snapshot` (true on the offset a snapshot batch commits).

Snapshot (blocking, the first batch of modes initial, initial_only and when_needed): one query in a
transaction opened WITH CONSISTENT SNAPSHOT reads every captured table, and the binlog position that
transaction sees, on one executor. On MariaDB the server gives that position (`binlog_snapshot_file`): no
lock is taken. Elsewhere (or with lakeconnect.snapshot.position=binlog_status) snapshot.locking.mode's
locks make SHOW MASTER STATUS match the transaction, as Debezium takes them: minimal holds a global read
lock while the position and the columns' fingerprint are read; extended until the rows are read; none
takes none; where the global lock is refused, read locks on the captured tables until the rows are read.
The columns' fingerprint before the plan, in the transaction and after the schema history is seeded must
agree (a DDL racing the snapshot makes the next run take it again). The rows are staged at plan time into
a Delta table named in the plan, so a batch resumed after a crash emits exactly the rows it planned.

Streaming: plan takes the server's binlog end; read decodes (start, end] on executors (binlog.py), one
Spark task per binlog file, and turns each table layout's rows into Debezium's events (events.py).

The class keeps the task's contract (plan: where a batch starts and ends; read; explain; close) and the
connection; the rest is where its name says: snapshot.py (the blocking snapshot on the driver) and
snapshot_source.py (its transaction on an executor), stream.py (the streaming read), history.py (the
schema history and its model), incremental_snapshot.py with jdbc_settings.py (incremental snapshots),
catalog.py (what is read from the server's catalog), messages.py (how errors read in messages).
"""

from __future__ import annotations

import os
import re
import shutil
import time
from collections.abc import Mapping
from typing import Any

from pyspark.sql import DataFrame

from connectors.mysql import binlog, gtid, incremental_snapshot, snapshot, stream, tls
from connectors.mysql import config as C
from connectors.mysql import incremental as inc
from connectors.mysql import kafka_signals
from connectors.mysql.binlog import Position
from connectors.mysql.catalog import captured_tables, fingerprint, table_layout
from connectors.mysql.events import shaping_of
from connectors.mysql.history import SchemaHistory
from connectors.mysql.messages import db_message, first_line, tls_failure
from connectors.mysql.snapshot_source import SnapshotDataSource
from ingest.api import PlannedRange, SourcePlan, SourceTask
from ingest.errors import FatalError, LakeConnectError, RetriableError
from ingest.records import RecordBatch
from ingest.state.tables import canonical_json

SNAPSHOT = "snapshot"
MAX_SEGMENT_IDS = binlog.MAX_SEGMENT_IDS
STREAM = "binlog"


class MySqlSourceTask(SourceTask):
    def __init__(self, config, context):
        super().__init__(config, context)
        self.prefix: str = config[C.TOPIC_PREFIX]
        self.mode: str = C.snapshot_mode(config)
        self.filter = C.TableFilter.of(config)
        self.shaping = shaping_of(config)
        self.server_id: int = int(config[C.SERVER_ID])
        self.root: str = os.path.join(context.lake_root, "_connect", "mysql", context.connector)
        self.history = SchemaHistory(self.root, context.connector, self.prefix, context.log)
        self.conn = None  # the driver's connection, opened by cursor()
        self._settings: dict[str, Any] | None = None
        self._checked = False
        self.persisted: list[DataFrame] = []  # what a read cached, unpersisted by close()
        self.counting: list = []  # the batch's background counts (counted_in_background)

    # --- connection --------------------------------------------------------------------------------

    def settings(self) -> dict[str, Any]:
        """The connection settings every connection takes (tls.pymysql_kwargs makes them pymysql's)."""
        if self._settings is None:
            try:
                self._settings = C.connection_settings(self.config)
            except tls.StoreError as e:
                raise FatalError(f"{e.args[0]}: {e.args[1]}; nothing was emitted or committed") from None
        return dict(self._settings)

    def where(self) -> str:
        return f"{self.config[C.HOSTNAME]}:{self.config[C.PORT]}"

    def cursor(self):
        if self.conn is None:
            import pymysql

            try:
                self.conn = binlog.connect(self.settings())
            except pymysql.MySQLError as e:
                raise FatalError(f"cannot connect to {self.where()} as {self.config[C.USER]}: {db_message(e)}; "
                                 + (f"check {C.SSL_MODE} and the server's TLS set-up (its certificate, "
                                    f"{C.SSL_TRUSTSTORE}, {C.SSL_KEYSTORE})" if tls_failure(e) else
                                    f"check {C.HOSTNAME}, {C.PORT}, {C.USER} and {C.PASSWORD}"
                                    + (f" (a user that REQUIRE SSL or X509 is refused this way without TLS: "
                                       f"{C.SSL_MODE}=disabled)"
                                       if self.settings()["tls"]["mode"] == "disabled" else ""))) from None
        return self.conn.cursor()

    def registered_spark(self):
        """The Spark session, with the connector's data sources (binlog.py, snapshot_source.py) registered."""
        spark = self.context.spark
        _register(spark)
        return spark

    def close(self) -> None:
        for counting in self.counting:  # still reading what is about to be freed (when its count went unused)
            counting.wait()
        for df in self.persisted:
            df.unpersist()
        self.persisted, self.counting = [], []
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def _check_server(self, cur) -> None:
        if self._checked:
            return
        problems = binlog.server_problems(cur)
        conflicts = binlog.replica_conflicts(cur, self.server_id, 1 + MAX_SEGMENT_IDS)
        if conflicts:
            problems.append(f"{C.SERVER_ID}={self.server_id} is taken ({'; '.join(conflicts)}): this connector reads "
                            f"the binlog as server ids {self.server_id} to {self.server_id + 1 + MAX_SEGMENT_IDS}; "
                            "choose a database.server.id no other replica or connector of this server uses")
        if problems:
            raise FatalError(f"MySQL server {self.where()} cannot be captured: " + "; ".join(problems))
        if C.gtid_sources(self.config) is not None and binlog.is_mariadb(cur):
            self.context.log.warning(f"{C.GTID_INCLUDE}/{C.GTID_EXCLUDE} filter MySQL GTIDs (server uuids): "
                                     "MariaDB's GTIDs have none, so they filter nothing here, as with Debezium")
        self._checked = True

    @property
    def partition(self) -> dict[str, str]:
        return {"server": self.prefix}

    # --- plan ----------------------------------------------------------------------------------------

    def plan(self, committed: Mapping[str, Any]) -> SourcePlan:
        cur = self.cursor()
        self._check_server(cur)
        offset = committed.get(canonical_json(self.partition))
        now_ms = int(time.time() * 1000)
        if offset is None:
            if self.mode in (C.INITIAL, C.INITIAL_ONLY, C.WHEN_NEEDED):
                return self._plan_snapshot(cur, None, now_ms)
            if self.mode == C.SCHEMA_ONLY and self.config[C.INCLUDE_SCHEMA_CHANGES]:
                # Debezium's schema-only snapshot: its schema change events, without rows
                return self._plan_snapshot(cur, None, now_ms)
            if self.mode == C.NEVER:  # Debezium: no snapshot, the binlog from its very beginning
                first = Position(binlog.binary_logs(cur)[0][0], 4)
                self.history.seed_model(cur, first, [])  # the tables are those the binlog's DDL creates
                return self._plan_stream(cur, None, first, now_ms)
            end, gtids = binlog.binlog_status(cur)  # schema_only (no_data), schema_only_recovery: from now on
            self.history.seed_model(cur, end, captured_tables(cur, self.filter))
            return SourcePlan((PlannedRange(self.partition, None, self._offset(cur, end, now_ms, gtids=gtids)),),
                              {"kind": STREAM, "segments": [], "ts_ms": now_ms})
        if self.mode == C.INITIAL_ONLY:
            return SourcePlan(())
        start = self._resume_position(cur, offset)
        if start is None:  # the binlog the offset points into is gone, and when_needed allows a new snapshot
            return self._plan_snapshot(cur, offset, now_ms)
        return self._plan_stream(cur, offset, start, now_ms)

    def _resume_position(self, cur, offset: Mapping[str, Any]) -> Position | None:
        start = Position(str(offset["file"]), int(offset["pos"]))
        names = [name for name, _ in binlog.binary_logs(cur)]
        gtids = offset.get("gtids")
        mariadb = binlog.is_mariadb(cur)
        if gtids and not mariadb:
            cur.execute("SELECT @@server_id")
            if start.file not in names or int(cur.fetchone()[0]) != int(offset.get("server_id") or 0):
                return self._resume_by_gtid_set(cur, start, str(gtids))  # purged, or another server (failover)
        if start.file in names:
            return start
        if gtids and mariadb:
            try:
                found = binlog.locate_gtid(self.settings(), self.server_id, str(gtids))
            except Exception as e:  # noqa: BLE001 - the server refuses GTIDs it no longer has
                self.context.log.warning(f"cannot resume from GTID position {gtids}: {db_message(e)}")
                found = False
            if found is None:  # nothing after the GTID position yet: resume at the end
                return binlog.master_position(cur)
            if found:
                self.context.log.info(f"binlog file {start.file} is gone; resuming from GTID position {gtids} "
                                      f"at {found.file}:{found.pos}")
                return found
        if self.mode == C.WHEN_NEEDED:
            self.context.log.warning(f"binlog file {start.file} (the committed offset) has been purged: taking a "
                                     "new snapshot (snapshot.mode=when_needed)")
            return None
        raise FatalError(
            f"the binlog position the connector stopped at ({start.file}:{start.pos}) is no longer on "
            f"{self.where()}: the file has been purged (oldest kept: {names[0] if names else 'none'})"
            + (f" and GTID position {gtids} cannot be found" if gtids else "")
            + ". Changes made since then are lost to the binlog. Set snapshot.mode=when_needed to take a new "
              "snapshot, or reset the connector's offsets (`lakeconnect offsets reset`) to start over; nothing was "
              "emitted or committed")

    def _resume_by_gtid_set(self, cur, start: Position, gtids: str) -> Position | None:
        """Where a MySQL connector whose binlog file is gone, or whose server is another one (a failover to a
        replica with the same GTIDs), resumes: after the transactions of the offset's GTID set, as Debezium
        resumes by GTIDs (gtid.py); None (when_needed) for a new snapshot if the server purged some it has not
        read."""
        cur.execute("SELECT @@GLOBAL.gtid_executed, @@GLOBAL.gtid_purged")
        available, purged = (gtid.GtidSet.parse(str(v or "")) for v in cur.fetchone())
        offset = gtid.GtidSet.parse(gtids)
        keep = C.gtid_sources(self.config)
        if not gtid.position_available(offset, available, purged, keep):
            missing = gtid.purged_needed(offset, purged, keep)
            if self.mode == C.WHEN_NEEDED:
                self.context.log.warning(f"{self.where()} has purged transactions the connector has not read "
                                         f"({missing or 'its GTIDs are not those of the offsets'}): taking a new "
                                         "snapshot (snapshot.mode=when_needed)")
                return None
            raise FatalError(
                f"{self.where()} cannot continue from the connector's GTID set {offset}: "
                + (f"it has purged transactions the connector has not read ({missing})" if missing else
                   "its executed GTIDs do not contain it (another server's history)")
                + ". Changes made since then are lost to the binlog. Set snapshot.mode=when_needed to take a new "
                  "snapshot, or reset the connector's offsets (`lakeconnect offsets reset`) to start over; nothing "
                  "was emitted or committed")
        resume = gtid.resume_set(offset, available, purged, keep)
        found = binlog.locate_gtid(self.settings(), self.server_id, str(resume), mariadb=False)
        if found is None:  # nothing after the GTID set yet: resume at the end
            return binlog.master_position(cur)
        self.context.log.info(f"resuming after GTID set {resume} at {found.file}:{found.pos} (the offsets' "
                              f"{start.file}:{start.pos} is not on this server)")
        return found

    def _offset(self, cur, pos: Position, now_ms: int, snapshot: bool = False,
                gtids: str | None = None) -> dict[str, Any]:
        gtids = gtids or binlog.gtid_at(cur, pos, binlog.is_mariadb(cur))
        cur.execute("SELECT @@server_id")
        out: dict[str, Any] = {"file": pos.file, "pos": pos.pos, "gtids": gtids, "row": 0, "event": 0,
                               "server_id": int(cur.fetchone()[0]), "ts_sec": now_ms // 1000}
        if snapshot:
            out["snapshot"] = True
        return out

    def _plan_stream(self, cur, offset, start: Position, now_ms: int) -> SourcePlan:
        self.history.ensure_model(cur, start, self.mode, self.filter)
        state = incremental_snapshot.signalled_state(cur, offset, self.config, self.root, self.filter,
                                                     self.context.log)
        kafka_at = None
        if C.CHANNEL_KAFKA in C.signal_channels(self.config):
            state, kafka_at = incremental_snapshot.kafka_signalled_state(cur, offset, state, self.config,
                                                                         self.filter, self.context.log)
        details: dict[str, Any] = {"kind": STREAM, "ts_ms": now_ms}
        if state and not state.get("paused"):
            state, chunks = incremental_snapshot.plan_chunks(self, cur, state, now_ms)
            if chunks:
                details["incremental"] = chunks
        end, end_gtids = binlog.binlog_status(cur)
        changed = state != (offset or {}).get(inc.STATE)  # signals applied: commit the new state even so
        changed = changed or kafka_at != (offset or {}).get(kafka_signals.KAFKA_POSITION)  # or signals read
        # Debezium writes a heartbeat once heartbeat.interval.ms has passed since the last one, idle or not:
        # a batch does when its plan comes that long after the last heartbeat's (kept in the offsets).
        interval, last = int(self.config[C.HEARTBEAT_INTERVAL_MS]), (offset or {}).get(C.HEARTBEAT_AT)
        details["heartbeat"] = beat = interval > 0 and (last is None or now_ms - int(last) >= interval)
        if end <= start and not details.get("incremental") and not changed and not beat:
            return SourcePlan(())
        segments = binlog.segments(binlog.binary_logs(cur), start, end) if start < end else []
        end_offset = self._offset(cur, end, now_ms, gtids=end_gtids)
        if beat or (interval > 0 and last is not None):
            end_offset[C.HEARTBEAT_AT] = now_ms if beat else int(last)
        if state:
            end_offset[inc.STATE] = state
        if kafka_at is not None:
            end_offset[kafka_signals.KAFKA_POSITION] = kafka_at
        if offset and self.config[C.SIGNAL_DATA_COLLECTION]:  # the signals up to here are applied
            end_offset[inc.SIGNALS_READ] = f"{offset['file']}:{offset['pos']}"
        details["segments"] = [[s.index, s.file, s.start, s.end] for s in segments]
        return SourcePlan((PlannedRange(self.partition, dict(offset) if offset else None, end_offset),), details)

    # --- snapshot ------------------------------------------------------------------------------------

    def _plan_snapshot(self, cur, offset, now_ms: int) -> SourcePlan:
        captured = captured_tables(cur, self.filter)
        before = fingerprint(cur, captured)
        tables = [(db, t) for db, t in captured if C.snapshot_includes(self.config, db, t)]
        layouts = [table_layout(cur, db, t) for db, t in tables] if self.mode != C.SCHEMA_ONLY else []
        root = self.root
        for old in (os.listdir(root) if os.path.isdir(root) else []):  # earlier plans' (committed or abandoned)
            if old.startswith("snapshot-"):
                shutil.rmtree(os.path.join(root, old), ignore_errors=True)
        path = os.path.join(root, f"snapshot-{now_ms}")
        locking = snapshot.locking_mode(cur, self.config)
        count, last_seq, pos, seen = snapshot.stage(
            self.registered_spark(), self.settings(), self.config, layouts, path, locking, captured,
            snapshot.snapshot_ddl_option(self.cursor, self.config, self.filter), self.context.connector)
        gtids, in_snapshot, locks = seen
        self.history.seed_model(cur, pos, captured)
        if not before == in_snapshot == fingerprint(cur, captured):
            raise RetriableError("the columns of a captured table changed while the snapshot was taken: its rows "
                                 "and its schema history might not match. Nothing was emitted or committed; the "
                                 "next run takes the snapshot again")
        end = self._offset(cur, pos, now_ms, snapshot=True, gtids=gtids)
        if offset and kafka_signals.KAFKA_POSITION in offset:  # a new snapshot does not apply old signals again
            end[kafka_signals.KAFKA_POSITION] = offset[kafka_signals.KAFKA_POSITION]
        self.context.log.info(f"snapshot of {len(layouts)} tables staged: {count} rows, consistent with binlog "
                              f"position {pos.file}:{pos.pos}; locks: {locks}")
        return SourcePlan((PlannedRange(self.partition, dict(offset) if offset else None, end),),
                          {"kind": SNAPSHOT, "ts_ms": now_ms, "staged": path, "count": count,
                           "last_seq": last_seq,
                           "tables": [[lay.db, lay.table, lay.to_json()] for lay in layouts]})

    # --- read ----------------------------------------------------------------------------------------

    def read(self, plan: SourcePlan) -> list[RecordBatch]:
        kind = plan.details.get("kind")
        if kind == SNAPSHOT:
            return snapshot.read(self.context.spark, plan, self.shaping, self.prefix,
                                 self.config[C.INCLUDE_SCHEMA_CHANGES])
        if not plan.details.get("segments"):
            return ([stream.heartbeat_batch(self.context.spark, self.config, self.prefix, plan)]
                    if plan.details.get("heartbeat") else [])
        try:
            return stream.read(self, plan)
        except LakeConnectError:
            raise
        except Exception as e:  # the read decodes the range already: an unreadable event fails it here
            if "EventUnreadable" in str(e):
                raise self.explain(e, plan) from None
            raise

    def explain(self, error: Exception, plan: SourcePlan) -> Exception | None:
        text = str(error)
        unreadable = re.search(r"EventUnreadable: ([^\n]+)", text)
        if unreadable:  # event.processing.failure.handling.mode=fail
            return FatalError(f"{unreadable.group(1).strip()[:800]}. Nothing of this batch was committed: the next "
                              "run reads the same range again")
        if "pymysql" not in text and "MySQL" not in text and "mariadb" not in text.lower():
            return None
        what = "the snapshot" if plan.details.get("kind") == SNAPSHOT else "the binlog"
        return FatalError(f"reading {what} of {self.where()} failed: {first_line(text)}. Nothing of this batch was "
                          "committed: the next run reads the same range again")


def _register(spark) -> None:
    if not getattr(spark, "_lakeconnect_binlog", False):
        spark.dataSource.register(binlog.BinlogDataSource)
        spark.dataSource.register(SnapshotDataSource)
        spark._lakeconnect_binlog = True


__all__ = ["MySqlSourceTask", "LakeConnectError"]
