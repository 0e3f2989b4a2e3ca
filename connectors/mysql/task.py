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
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import Column as SparkColumn
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from connectors.mysql import binlog, ddl, gtid, tls
from connectors.mysql import config as C
from connectors.mysql import incremental as inc
from connectors.mysql.binlog import Position
from connectors.mysql.events import (
    Layout,
    Structure,
    TableEvents,
    ddl_targets,
    event_ddl,
    heartbeat,
    layout_structure,
    read_structure,
    schema_changes,
    shaping_of,
    statement_table,
    table_changes_json,
    transaction_records,
    truncated,
)
from connectors.mysql.types import Column, from_catalog
from ingest.api import PlannedRange, SourcePlan, SourceTask
from ingest.errors import FatalError, LakeConnectError, RetriableError
from ingest.jvm import batch_constant
from ingest.records import RecordBatch, counted_in_background
from ingest.runtime.faults import UNREADABLE_ENV
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
        self._conn = None
        self._settings: dict[str, Any] | None = None
        self._checked = False
        self._persisted: list[DataFrame] = []
        self._counting: list = []  # the batch's background counts (counted_in_background)

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
        if self._conn is None:
            import pymysql

            try:
                self._conn = binlog.connect(self.settings())
            except pymysql.MySQLError as e:
                raise FatalError(f"cannot connect to {self.where()} as {self.config[C.USER]}: {_db_message(e)}; "
                                 + (f"check {C.SSL_MODE} and the server's TLS set-up (its certificate, "
                                    f"{C.SSL_TRUSTSTORE}, {C.SSL_KEYSTORE})" if _tls_failure(e) else
                                    f"check {C.HOSTNAME}, {C.PORT}, {C.USER} and {C.PASSWORD}"
                                    + (f" (a user that REQUIRE SSL or X509 is refused this way without TLS: "
                                       f"{C.SSL_MODE}=disabled)"
                                       if self.settings()["tls"]["mode"] == "disabled" else ""))) from None
        return self._conn.cursor()

    def close(self) -> None:
        for counting in self._counting:  # still reading what is about to be freed (when its count went unused)
            counting.wait()
        for df in self._persisted:
            df.unpersist()
        self._persisted, self._counting = [], []
        if self._conn is not None:
            self._conn.close()
            self._conn = None

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
                self._seed_model(cur, first, [])  # the tables are those the binlog's DDL creates
                return self._plan_stream(cur, None, first, now_ms)
            end, gtids = binlog.binlog_status(cur)  # schema_only (no_data), schema_only_recovery: from now on
            self._seed_model(cur, end, self.tables(cur))
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
                self.context.log.warning(f"cannot resume from GTID position {gtids}: {_db_message(e)}")
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
        self._ensure_model(cur, start)
        state = self._signalled_state(cur, offset)
        details: dict[str, Any] = {"kind": STREAM, "ts_ms": now_ms}
        if state and not state.get("paused"):
            state, chunks = self._plan_chunks(cur, state, now_ms)
            if chunks:
                details["incremental"] = chunks
        end, end_gtids = binlog.binlog_status(cur)
        changed = state != (offset or {}).get(inc.STATE)  # signals applied: commit the new state even so
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
        if offset and self.config[C.SIGNAL_DATA_COLLECTION]:  # the signals up to here are applied
            end_offset[inc.SIGNALS_READ] = f"{offset['file']}:{offset['pos']}"
        details["segments"] = [[s.index, s.file, s.start, s.end] for s in segments]
        return SourcePlan((PlannedRange(self.partition, dict(offset) if offset else None, end_offset),), details)

    # --- incremental snapshots -----------------------------------------------------------------------

    def signals_path(self) -> str:
        return os.path.join(self._root(), "signals")

    def _signalled_state(self, cur, offset) -> dict | None:
        """The incremental snapshot state: the offset's, with the signals the last batch found applied."""
        state = (offset or {}).get(inc.STATE)
        if not offset or not self.config[C.SIGNAL_DATA_COLLECTION]:
            return state
        if offset.get(inc.SIGNALS_READ) == f"{offset['file']}:{offset['pos']}":
            return state  # a batch that only committed a new state: its range had no signals
        from ingest.delta import read_arrow

        found = read_arrow(self.signals_path(), filter=[("batch_file", "=", str(offset["file"])),
                                                        ("batch_pos", "=", int(offset["pos"]))], missing_ok=True)
        if found is None or found.num_rows == 0:
            return state
        tables = None
        for row in sorted(found.to_pylist(), key=lambda r: r["seq"]):
            signal = inc.parse(row["id"], row["type"], row["data"])
            if isinstance(signal, str):
                self.context.log.warning(signal)
                continue
            if signal is None:
                continue
            tables = tables if tables is not None else [t for t in self.tables(cur) if self.filter.captures(*t)]
            state, warnings = inc.apply(state, signal, tables)
            for w in warnings:
                self.context.log.warning(w)
            self.context.log.info(f"signal '{signal.id}' ({signal.type}) applied")
        return state

    def _plan_chunks(self, cur, state: dict, now_ms: int) -> tuple[dict | None, dict | None]:
        """The next chunks of the table being snapshotted, staged between two watermarks; the new state."""
        state = json.loads(json.dumps(state))
        while state.get("current") is None and state["collections"]:
            name = state["collections"].pop(0)["id"]
            db, _, table = name.partition(".")
            layout = self.layout(cur, db, table)
            key = self._events(layout).key_positions
            if not key:
                self.context.log.warning(
                    f"table {name} has no primary key: an incremental snapshot reads it in key order; add a "
                    f"primary key, or name its key columns in {C.MESSAGE_KEY_COLUMNS} (the table was skipped)")
                continue
            cols = ", ".join(binlog.quote(layout.columns[i].name) for i in key)
            cur.execute(f"SELECT {cols} FROM {binlog.quote(db)}.{binlog.quote(table)} ORDER BY "
                        + ", ".join(f"{binlog.quote(layout.columns[i].name)} DESC" for i in key) + " LIMIT 1")
            top = cur.fetchone()
            if top is None:
                self.context.log.info(f"incremental snapshot of {name}: the table is empty")
                continue
            state["current"] = {"id": name, "last": None, "max": [_jsonable(v) for v in top]}
            self.context.log.info(f"incremental snapshot of {name} begins, up to key {state['current']['max']}")
        current = state.get("current")
        if current is None:
            return (state if state["collections"] else None), None
        db, _, table = current["id"].partition(".")
        layout = self.layout(cur, db, table)
        key = self._events(layout).key_positions
        names = [binlog.quote(layout.columns[i].name) for i in key]
        row = "(" + ", ".join(names) + ")" if len(names) > 1 else names[0]
        lit = lambda values: ("(" + ", ".join(self._conn.escape(v) for v in values) + ")"  # noqa: E731
                              if len(values) > 1 else self._conn.escape(values[0]))
        upper = f"{row} <= {lit(current['max'])}"
        lo, ranges, done = current["last"], [], False
        size = int(self.config[C.INCREMENTAL_CHUNK_SIZE])
        self._watermark(inc.WINDOW_OPEN, now_ms)
        for _ in range(int(self.config[C.CHUNKS_PER_BATCH])):
            where = " AND ".join(([f"{row} > {lit(lo)}"] if lo is not None else []) + [upper])
            cur.execute(f"SELECT {', '.join(names)} FROM {binlog.quote(db)}.{binlog.quote(table)} WHERE {where} "
                        f"ORDER BY {', '.join(names)} LIMIT 1 OFFSET {size - 1}")
            hit = cur.fetchone()
            if hit is None:
                ranges.append(where)
                done = True
                break
            hi = [_jsonable(v) for v in hit]
            ranges.append(f"{where} AND {row} <= {lit(hi)}")
            lo = hi
            if hi == current["max"]:
                done = True
                break
        path = os.path.join(self._root(), f"incremental-{now_ms}")
        self._stage_chunks(layout, ranges, path)
        self._watermark(inc.WINDOW_CLOSE, now_ms)
        if done:
            self.context.log.info(f"incremental snapshot of {current['id']}: last chunks read")
            state["current"] = None
        else:
            state["current"] = {**current, "last": lo}
        chunks = {"staged": path, "db": db, "table": table, "layout": layout.to_json(), "chunks": len(ranges)}
        if state["current"] is None and not state["collections"]:
            state = None
        return state, chunks

    def _watermark(self, kind: str, now_ms: int) -> None:
        import uuid

        db, _, table = str(self.config[C.SIGNAL_DATA_COLLECTION]).partition(".")
        cur = self.cursor()
        cur.execute(f"INSERT INTO {binlog.quote(db)}.{binlog.quote(table)} (id, type, data) VALUES (%s, %s, %s)",
                    (f"{uuid.uuid4()}-{kind.rsplit('-', 1)[-1]}", kind, json.dumps({"ts_ms": now_ms})))

    def _stage_chunks(self, layout: Layout, ranges: list[str], path: str) -> None:
        """The chunks' rows (canonical texts), one Spark task per chunk, into a Delta table at `path`."""
        from ingest.delta import write_dataframe

        root = self._root()
        for old in (os.listdir(root) if os.path.isdir(root) else []):
            if old.startswith("incremental-"):
                shutil.rmtree(os.path.join(root, old), ignore_errors=True)
        cols = ", ".join(c.sql_text(binlog.quote(c.name)) for c in layout.columns)
        source = (f"(SELECT JSON_ARRAY({cols}) AS after, {', '.join(binlog.quote(c.name) for c in layout.columns)} "
                  f"FROM {binlog.quote(layout.db)}.{binlog.quote(layout.table)}) lc_chunk")
        try:
            df = self._jdbc().jdbc(self._jdbc_url(), source, predicates=ranges, properties=self._jdbc_properties())
        except Exception as e:  # noqa: BLE001 - Spark's JDBC errors (the URL in them is redacted)
            if "FAILED_JDBC" not in str(e):
                raise
            raise FatalError(f"the incremental snapshot of {layout.db}.{layout.table} cannot connect to "
                             f"{self.where()} over JDBC ({_first_line(str(e))}); check {C.USER}, {C.PASSWORD} and "
                             f"{C.SSL_MODE} with its stores; nothing was emitted or committed") from None
        df = df.select(F.spark_partition_id().alias("chunk"), F.monotonically_increasing_id().alias("seq"),
                       F.from_json("after", "array<string>").alias("after"))
        write_dataframe(df, path, app_id=f"{self.context.connector}:incremental", version=1, mode="overwrite",
                        schema_mode="overwrite")

    def _jdbc_url(self) -> str:
        # jdbc:mysql: makes Spark use its MySQL dialect (backquoted names); Debian's MariaDB driver takes it. The
        # TLS options go in the URL (redacted wherever Spark shows it): Spark drops them from the properties of
        # a read with predicates.
        tls_options = self._jdbc_tls()
        return (f"jdbc:mysql://{self.config[C.HOSTNAME]}:{int(self.config[C.PORT])}/"
                + ("?" + "&".join(f"{k}={v}" for k, v in tls_options.items()) if tls_options else ""))

    def _jdbc_tls(self) -> dict[str, str]:
        """database.ssl.mode in MariaDB Connector/J 2.7's terms (preferred: TLS when the driver's own connection
        got it, the certificate unchecked)."""
        t = self.settings()["tls"]
        secure = t["mode"] != "disabled" and (t["mode"] != "preferred" or bool(getattr(self._conn, "_secure", False)))
        if not secure:
            return {"useSsl": "false"}
        out = {"useSsl": "true"}
        if t["mode"] in ("preferred", "required"):
            out["trustServerCertificate"] = "true"
        elif t["ca"]:
            out["serverSslCert"] = t["ca"]  # the PEM text itself, which the driver takes
        if t["mode"] == "verify_ca":
            out["disableSslHostnameVerification"] = "true"
        if self.config[C.SSL_KEYSTORE]:
            out.update(keyStore=str(self.config[C.SSL_KEYSTORE]), keyStoreType="PKCS12",
                       keyStorePassword=self.config.secret(C.SSL_KEYSTORE_PASSWORD) or "")
        return out

    def _jdbc_properties(self) -> dict[str, str]:
        return {"user": self.config[C.USER], "password": self.config.secret(C.PASSWORD) or "",
                "driver": "org.mariadb.jdbc.Driver", "fetchsize": "10000"}

    def _jdbc(self):
        return self.context.spark.read

    # --- snapshot ------------------------------------------------------------------------------------

    def tables(self, cur) -> list[tuple[str, str]]:
        cur.execute("SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES WHERE TABLE_TYPE='BASE TABLE' "
                    "ORDER BY TABLE_SCHEMA, TABLE_NAME")
        return [(str(db), str(t)) for db, t in cur.fetchall() if (str(db), str(t)) in self.filter]

    def layout(self, cur, db: str, table: str) -> Layout:
        columns = self._catalog_columns(cur, db, table)
        cur.execute("SELECT COLUMN_NAME FROM information_schema.KEY_COLUMN_USAGE WHERE TABLE_SCHEMA=%s AND "
                    "TABLE_NAME=%s AND CONSTRAINT_NAME='PRIMARY' ORDER BY ORDINAL_POSITION", (db, table))
        by_name = [c.name for c in columns]
        pk = tuple(by_name.index(str(r[0])) for r in cur.fetchall())
        return Layout(db, table, columns, pk)

    def _catalog_columns(self, cur, db: str, table: str) -> tuple[Column, ...]:
        mariadb = binlog.is_mariadb(cur)
        cur.execute("SELECT * FROM information_schema.COLUMNS WHERE TABLE_SCHEMA=%s AND TABLE_NAME=%s "
                    "ORDER BY ORDINAL_POSITION", (db, table))
        names = [d[0] for d in cur.description]
        return tuple(from_catalog(dict(zip(names, r)), mariadb) for r in cur.fetchall())

    def _root(self) -> str:
        return os.path.join(self.context.lake_root, "_connect", "mysql", self.context.connector)

    def history_path(self) -> str:
        return os.path.join(self._root(), "schema-history")

    # --- the schema history's model (ddl.py) -----------------------------------------------------------

    def model_path(self) -> str:
        return os.path.join(self._root(), "schema-model")

    def _model_at(self, pos: Position) -> ddl.Schema | None:
        """The model in effect at `pos`: the newest one stored at or before it (a batch stores the model its
        DDL leads to at its end position; one re-read after a crash finds the one before it again)."""
        from ingest.delta import read_arrow

        found = read_arrow(self.model_path(), missing_ok=True)
        if found is None or found.num_rows == 0:
            return None
        best = None
        for row in found.to_pylist():
            at = Position(str(row["file"]), int(row["pos"]))
            if at <= pos and (best is None or (best[0], best[1]) < (at, int(row["written"]))
                              or (best[0] == at and best[1] < int(row["written"]))):
                best = (at, int(row["written"]), row["model"])
        return ddl.Schema.from_json(best[2]) if best else None

    def _store_model(self, pos: Position, model: ddl.Schema, once: bool = True) -> None:
        """`model` as the one in effect from `pos` on; `once`: a batch's, stored once whatever retries come."""
        import pyarrow as pa

        from ingest.delta import append_arrow

        table = pa.table({"file": [pos.file], "pos": [pos.pos], "written": [time.time_ns() // 1000],
                          "model": [model.to_json()]},
                         schema=pa.schema([("file", pa.string()), ("pos", pa.int64()), ("written", pa.int64()),
                                           ("model", pa.string())]))
        version = (binlog._file_number(pos.file) << 32) | pos.pos
        append_arrow(self.model_path(), table, app_id=f"{self.context.connector}:schema-model" if once else None,
                     version=version if once else None)

    def _seed_model(self, cur, pos: Position, tables: list[tuple[str, str]]) -> ddl.Schema:
        """The model from the catalog now (the snapshot's schema read), stored as the one in effect at `pos`."""
        model = ddl.read_catalog(cur, tables, binlog.is_mariadb(cur))
        cur.execute("SELECT SCHEMA_NAME, DEFAULT_CHARACTER_SET_NAME FROM information_schema.SCHEMATA")
        for db, charset in cur.fetchall():
            if str(db).lower() not in C.SYSTEM_DATABASES:
                model.databases.setdefault(str(db), str(charset).lower() if charset else model.server_charset)
        self._store_model(pos, model)
        return model

    def _ensure_model(self, cur, start: Position) -> ddl.Schema:
        """A model where the batch starts; without one (a connector begun before the history kept one, or
        one whose history was lost) it is read from the catalog where that is safe: in recovery mode, as
        Debezium rebuilds its history there, or when the binlog carries the column names to check it by."""
        model = self._model_at(start)
        if model is not None:
            if self.mode == C.SCHEMA_ONLY_RECOVERY:  # captured tables the history lacks, from the catalog
                missing = [t for t in self.tables(cur) if t not in model.tables]
                if missing:
                    found = ddl.read_catalog(cur, missing, binlog.is_mariadb(cur))
                    model.tables.update(found.tables)
                    self.context.log.info(f"the schema history lacked {len(found.tables)} captured tables: read "
                                          "from the catalog (snapshot.mode=recovery)")
                    self._store_model(start, model, once=False)
            return model
        full = binlog.variables(cur, ["binlog_row_metadata"]).get("binlog_row_metadata", "").upper() == "FULL"
        if self.mode == C.SCHEMA_ONLY_RECOVERY or full:
            self.context.log.info(f"the schema history has no model at {start.file}:{start.pos}: read from the "
                                  "catalog" + (" (snapshot.mode=recovery)" if not full else ""))
            return self._seed_model(cur, start, self.tables(cur))
        raise FatalError(
            f"the connector has no schema history at binlog position {start.file}:{start.pos}, and the server "
            "does not write column names into the binlog (binlog_row_metadata is not FULL): the columns of the "
            "rows cannot be known. If no captured table has changed since that position, set "
            "snapshot.mode=recovery to read the history from the catalog; otherwise take a new snapshot "
            "(snapshot.mode=when_needed after `lakeconnect offsets reset`). Nothing was emitted or committed")

    def _plan_snapshot(self, cur, offset, now_ms: int) -> SourcePlan:
        captured = self.tables(cur)
        before = binlog.fingerprint(cur, captured)
        tables = [(db, t) for db, t in captured if C.snapshot_includes(self.config, db, t)]
        layouts = [self.layout(cur, db, t) for db, t in tables] if self.mode != C.SCHEMA_ONLY else []
        root = self._root()
        for old in (os.listdir(root) if os.path.isdir(root) else []):  # earlier plans' (committed or abandoned)
            if old.startswith("snapshot-"):
                shutil.rmtree(os.path.join(root, old), ignore_errors=True)
        path = os.path.join(root, f"snapshot-{now_ms}")
        locking = self._locking(cur)
        count, last_seq, pos, seen = self._stage(layouts, path, locking, captured)
        gtids, in_snapshot, locks = seen
        self._seed_model(cur, pos, captured)
        if not before == in_snapshot == binlog.fingerprint(cur, captured):
            raise RetriableError("the columns of a captured table changed while the snapshot was taken: its rows "
                                 "and its schema history might not match. Nothing was emitted or committed; the "
                                 "next run takes the snapshot again")
        end = self._offset(cur, pos, now_ms, snapshot=True, gtids=gtids)
        self.context.log.info(f"snapshot of {len(layouts)} tables staged: {count} rows, consistent with binlog "
                              f"position {pos.file}:{pos.pos}; locks: {locks}")
        return SourcePlan((PlannedRange(self.partition, dict(offset) if offset else None, end),),
                          {"kind": SNAPSHOT, "ts_ms": now_ms, "staged": path, "count": count,
                           "last_seq": last_seq,
                           "tables": [[lay.db, lay.table, lay.to_json()] for lay in layouts]})

    def _locking(self, cur) -> str:
        """How the snapshot's position is made to match its rows: MariaDB's lock-free way, or the locks of
        snapshot.locking.mode around SHOW MASTER STATUS, as Debezium takes them on MySQL."""
        mode = str(self.config[C.SNAPSHOT_LOCKING]).lower()
        if str(self.config[C.SNAPSHOT_POSITION]).lower() == C.POSITION_AUTO and mode != "extended":
            cur.execute("SHOW STATUS LIKE 'binlog_snapshot_file'")
            if cur.fetchall():
                return binlog.STATUS
        return mode

    def _stage(self, layouts: list[Layout], path: str, locking: str,
               captured: list[tuple[str, str]]) -> tuple[int, int, Position, tuple[str | None, str, str]]:
        """Every table's rows and the matching binlog position, read in one consistent-snapshot transaction,
        written to the Delta table at `path`: t (table index; the position row), seq, after. Also what the
        transaction saw: the GTID set at the position, the columns' fingerprint, the locks it took."""
        from ingest.delta import read_table, write_dataframe

        # snapshot.select.statement.overrides: the table's rows are those of the user's SELECT.
        overrides = C.select_overrides(self.config)
        queries = [f"SELECT JSON_ARRAY({', '.join(c.sql_text(binlog.quote(c.name)) for c in lay.columns)}) FROM "
                   + (f"({overrides[f'{lay.db}.{lay.table}']}) AS lakeconnect_override"
                      if f"{lay.db}.{lay.table}" in overrides else f"{binlog.quote(lay.db)}.{binlog.quote(lay.table)}")
                   for lay in layouts]
        spark = self.context.spark
        _register(spark)
        s = self.settings()
        s.pop("connect_timeout", None)
        timeout = -(-int(self.config[C.SNAPSHOT_LOCK_TIMEOUT_MS]) // 1000)
        df = (spark.read.format(binlog.SNAPSHOT_FORMAT).option(binlog.SECRET_OPTION, json.dumps(s))
              .option("queries", json.dumps(queries)).option("chunk", str(max(1000, self.config[C.MAX_BATCH_SIZE])))
              .option("locking", locking).option("tables", json.dumps(captured)).option("lock_timeout", str(timeout))
              .options(**self._snapshot_ddl_option())
              .load()
              .select("t", "seq", F.from_json("after", "array<string>").alias("after")))
        write_dataframe(df, path, app_id=f"{self.context.connector}:snapshot", version=1, mode="overwrite",
                        schema_mode="overwrite")
        staged = read_table(self.context.spark, path)
        failed = staged.filter(F.col("t") == binlog.ERROR_ROW).select("after").first()
        if failed is not None:
            message, retriable = failed[0]
            raise (RetriableError if retriable == "true" else FatalError)(str(message))
        row = staged.filter(F.col("t") == binlog.POSITION_ROW).select("after").first()
        if row is None or row[0] is None or row[0][0] is None:
            raise FatalError("the snapshot transaction saw no binlog_snapshot_file: binary logging is off")
        stats = staged.filter(F.col("t") >= 0).agg(F.count("*"), F.max("seq")).first()
        file, position, gtids, seen, locks = row[0]
        return (int(stats[0]), int(stats[1] if stats[1] is not None else -1), Position(str(file), int(position)),
                (gtids, seen, locks))

    def _snapshot_ddl_option(self) -> dict[str, str]:
        """include.schema.changes: the databases whose DDL the snapshot emits, as Debezium's (by default its
        schema history keeps every table of the captured databases, so their DDL is emitted too)."""
        if not self.config[C.INCLUDE_SCHEMA_CHANGES]:
            return {}
        with self.cursor() as cur:
            cur.execute("SHOW DATABASES")
            names = [str(r[0]) for r in cur.fetchall()]
        return {"ddl_databases": json.dumps([db for db in names if _db_only(self.filter, db)])}

    # --- read ----------------------------------------------------------------------------------------

    def read(self, plan: SourcePlan) -> list[RecordBatch]:
        kind = plan.details.get("kind")
        if kind == SNAPSHOT:
            return self._read_snapshot(plan)
        if not plan.details.get("segments"):
            return [self._heartbeat(plan)] if plan.details.get("heartbeat") else []
        try:
            return self._read_stream(plan)
        except LakeConnectError:
            raise
        except Exception as e:  # the read decodes the range already: an unreadable event fails it here
            if "EventUnreadable" in str(e):
                raise self.explain(e, plan) from None
            raise

    def _heartbeat(self, plan: SourcePlan) -> RecordBatch:
        return heartbeat(self.context.spark, f"{self.config[C.HEARTBEAT_PREFIX]}.{self.prefix}", self.prefix,
                         int(plan.details["ts_ms"]))

    def _read_snapshot(self, plan: SourcePlan) -> list[RecordBatch]:
        from ingest.delta import read_table

        d = plan.details
        pos = plan.ranges[0].end
        ts_ms = int(d["ts_ms"])
        if not d["tables"]:  # schema_only, no_data: the schema change events only
            return self._snapshot_schema_changes(d["staged"], pos, ts_ms)
        staged = read_table(self.context.spark, d["staged"]).filter(F.col("t") >= 0)
        rows = staged.select(
            "t", F.col("seq"), F.lit("r").alias("op"), F.lit(None).cast("array<string>").alias("before"), "after",
            batch_constant(F.lit(ts_ms).cast("long")).alias("src_ts_ms"),
            F.lit(pos["file"]).alias("file"), batch_constant(F.lit(int(pos["pos"])).cast("long")).alias("pos"),
            F.lit(0).alias("row"), F.lit(0).cast("long").alias("server_id"), F.lit(None).cast("string").alias("gtid"),
            F.lit(None).cast("long").alias("thread"), F.lit(None).cast("string").alias("query"))
        # Each table's first and last row (a row per table), for the markers Debezium 2.3.4 puts in source.snapshot.
        bounds = {r[0]: (r[1], r[2]) for r in staged.groupBy("t").agg(F.min("seq"), F.max("seq")).collect()}
        batches = []
        for i, (db, table, text) in enumerate(d["tables"]):
            events = self._events(Layout.from_json(db, table, text))
            first, last = bounds.get(i, (None, None))
            table_rows = rows.filter(F.col("t") == i).drop("t")
            table_rows = table_rows.select(*table_rows.columns[:5], _snapshot_marker(first, last, i == 0,
                                                                                     i == len(d["tables"]) - 1),
                                           *table_rows.columns[5:])
            batches.append(events.records(table_rows, ts_ms, self.prefix))
        return batches + self._snapshot_schema_changes(d["staged"], pos, ts_ms)

    def _snapshot_schema_changes(self, staged: str, pos: Mapping[str, Any], ts_ms: int) -> list[RecordBatch]:
        """include.schema.changes: the snapshot's schema change events, as its transaction staged them."""
        from ingest.delta import read_table

        batches = []
        if self.config[C.INCLUDE_SCHEMA_CHANGES]:
            statements = read_table(self.context.spark, staged).filter(F.col("t") == binlog.DDL_ROW).select(
                F.lit("ddl").alias("kind"), "seq", F.col("after")[0].alias("db"), F.col("after")[1].alias("tbl"),
                F.lit(None).cast("string").alias("tm"), F.col("after")[2].alias("query"),
                F.lit(pos["file"]).alias("file"), F.lit(int(pos["pos"])).cast("long").alias("pos"),
                F.lit(None).cast("string").alias("gtid"), F.lit(0).cast("long").alias("server_id"),
                F.lit(None).cast("long").alias("ts_sec"), F.lit(None).cast("long").alias("thread"),
                F.col("after")[3].alias("table_changes"), F.lit("true").alias("snap"),
                batch_constant(F.lit(ts_ms).cast("long")).alias("src_ts_ms"))
            batches.append(schema_changes(statements, self.prefix, ts_ms))
        return batches

    def _events(self, layout: Layout) -> TableEvents:
        try:
            events = TableEvents(layout, self.shaping)
        except KeyError as e:
            raise FatalError(str(e.args[0])) from None
        wide = [f"{c.name} DECIMAL({c.precision},{c.scale})" for c in (layout.columns[i] for i in events.kept)
                if c.family == "decimal" and (c.precision or 0) > MAX_DECIMAL_DIGITS]
        if wide:
            raise FatalError(f"{layout.db}.{layout.table} has {', '.join(wide)}: more than {MAX_DECIMAL_DIGITS} "
                             "digits, which this connector's records (Spark decimals) cannot hold, where Debezium "
                             f"writes them. Leave the column out ({C.COLUMN_EXCLUDE}) or narrow it")
        return events

    def _read_stream(self, plan: SourcePlan) -> list[RecordBatch]:
        spark = self.context.spark
        _register(spark)
        d = plan.details
        s = self.settings()
        s.pop("connect_timeout", None)
        first = d["segments"][0]
        with self.cursor() as cur:  # (a batch planned by an interrupted run is read without a plan)
            model = self._ensure_model(cur, Position(first[1], int(first[2])))
        start_json = model.to_json()

        def decoded(segments: list, models: list[str], of: dict[str, int]) -> DataFrame:
            df = (spark.read.format(binlog.FORMAT)
                  .option(binlog.SECRET_OPTION, json.dumps(s))
                  .option("server_id", str(self.server_id))
                  .option("segments", json.dumps(segments))
                  .option("tables", json.dumps(self.filter.to_json()))
                  .option("chunk", str(self.config[C.MAX_BATCH_SIZE]))
                  .option("query", "true" if self.config[C.INCLUDE_QUERY] else "false")
                  .option("models", json.dumps({"models": models, "of": of}))
                  .option("transactions", "true" if self.config[C.PROVIDE_TRANSACTION_METADATA] else "false")
                  .option("on_failure", self._on_failure())
                  .option("unreadable", os.environ.get(UNREADABLE_ENV, ""))
                  .load())
            df = df.persist(StorageLevel.MEMORY_AND_DISK)
            self._persisted.append(df)
            return df

        skipped: list = []  # row events left out (event.processing.failure.handling.mode=warn)

        def metadata(df: DataFrame) -> tuple[list, list]:
            # What the driver takes from the decoded range is small: a row per table layout, per DDL statement
            # and per row event left out (event.processing.failure.handling.mode=warn).
            meta = df.filter(F.col("kind").isin("tablemap", "skipped") | ((F.col("kind") == "ddl")
                                                                          & F.col("query").rlike(DDL_PATTERN))) \
                .select("kind", "seq", "db", "tbl", "tm", "query", "file", "pos", "gtid", "server_id", "ts_sec",
                        "thread").collect()
            skipped.clear()
            skipped.extend(sorted((m for m in meta if m["kind"] == "skipped"), key=lambda m: m["seq"]))
            return ([m for m in meta if m["kind"] == "tablemap"],
                    sorted((m for m in meta if m["kind"] == "ddl"), key=lambda m: m["seq"]))

        # One pass decodes (and keeps) the range, every binlog file from the model where the range starts.
        df = decoded(d["segments"], [start_json], {str(seg[0]): 0 for seg in d["segments"]})
        maps, ddl_rows = metadata(df)
        starts, model, truncates = self._models_by_segment(model, d["segments"], ddl_rows)
        # A file after one whose DDL changed a captured table is decoded again from the model it starts with.
        captured = lambda text: ddl.Schema.from_json(text).restricted(self.filter.captures).to_json()  # noqa: E731
        redo = [seg for seg in d["segments"][1:] if captured(starts[seg[0]]) != captured(start_json)]
        if redo:
            self.context.log.info(f"DDL changed captured tables: binlog files {', '.join(seg[1] for seg in redo)} "
                                  "decoded again from the schema history where each begins")
            models = sorted({starts[seg[0]] for seg in redo})
            again = decoded(redo, models, {str(seg[0]): models.index(starts[seg[0]]) for seg in redo})
            df = df.filter(~F.shiftright(F.col("seq"), binlog.SEGMENT_BITS).isin([seg[0] for seg in redo])) \
                .unionByName(again).persist(StorageLevel.MEMORY_AND_DISK)
            self._persisted.append(df)
            maps, ddl_rows = metadata(df)
        for m in skipped:  # Debezium's warning, with its advice
            self.context.log.warning(
                f"the binlog event at {m['file']}:{m['pos']} ({m['db']}.{m['tbl']}) cannot be read ({m['query']}); "
                "it is left out (event.processing.failure.handling.mode=warn). See it with mysqlbinlog "
                f"--start-position={m['pos']} --verbose {m['file']}")
        ts_ms = int(d["ts_ms"])
        if ddl_rows:
            self._record_history(ddl_rows, plan.ranges[0].end)
            end = plan.ranges[0].end
            self._store_model(Position(str(end["file"]), int(end["pos"])), model)
        transactions = bool(self.config[C.PROVIDE_TRANSACTION_METADATA])
        rows = df.filter((F.col("kind") == "row") & gtid_dml_filter(self.config)).select(
            "tm", "db", "tbl", "seq", "op", "before", "after", (F.col("ts_sec") * 1000).alias("src_ts_ms"),
            F.lit(None).cast("string").alias("snap"), "file", "pos", "row", "server_id", "gtid", "thread", "query",
            *(["tx"] if transactions else []))
        batches: list[RecordBatch] = []
        emitted: list[tuple[Layout, TableEvents, DataFrame]] = []
        seen, counted, noted = set(), None, set()
        for m in maps:
            if m["tm"] in seen:
                continue
            seen.add(m["tm"])
            found = json.loads(m["query"])
            if "error" in found and self.config["inconsistent.schema.handling.mode"].strip().lower() != "fail":
                # Debezium's inconsistent.schema.handling.mode warn and skip: the table's rows are left out
                if self.config["inconsistent.schema.handling.mode"].strip().lower() == "warn":
                    self.context.log.warning(f"{found['error']} (at {m['file']}:{m['pos']}): its rows are left "
                                             "out (inconsistent.schema.handling.mode=warn)")
                continue
            if "error" in found:
                raise FatalError(
                    f"{found['error']} (at {m['file']}:{m['pos']}). "
                    + ("If the table has not changed since, set snapshot.mode=recovery to read its columns from "
                       "the catalog; otherwise s" if found.get("recoverable") else "S")
                    + "et binlog_row_metadata=FULL on the server (the binlog then names the columns), or take a "
                      "new snapshot (snapshot.mode=when_needed after `lakeconnect offsets reset`). Nothing of this "
                      "batch was emitted or committed")
            if found.get("note") and (m["db"], m["tbl"]) not in noted:
                noted.add((m["db"], m["tbl"]))
                self.context.log.warning(f"{m['db']}.{m['tbl']} at {m['file']}:{m['pos']}: {found['note']}")
            layout = Layout.from_json(m["db"], m["tbl"], m["query"])
            if self._is_signal_table(layout.db, layout.table):
                self._record_signals(rows.filter(F.col("tm") == m["tm"]), layout, plan.ranges[0].end)
            if not self.filter.captures(layout.db, layout.table):
                continue
            events, table_rows = self._events(layout), rows.filter(F.col("tm") == m["tm"]).drop("tm", "db", "tbl")
            emitted.append((layout, events, table_rows))
        if transactions:
            emitted = self._with_transaction_orders(df, emitted, ts_ms, batches)
        for _, events, table_rows in emitted:
            batches.append(events.records(table_rows, ts_ms, self.prefix))
            counted = (events, table_rows)
        if "t" not in self.shaping.skipped:  # Debezium's truncate events: skipped.operations without t
            for m, layout in truncates:
                # source.thread and source.query are null: a TRUNCATE is no transaction (Debezium takes the
                # thread from its BEGIN) and has no row query
                row = (m["seq"], "t", None, None, m["ts_sec"] * 1000, None, m["file"], m["pos"], 0, m["server_id"],
                       m["gtid"], None, None)
                batches.append(self._events(layout).records(spark.createDataFrame([row], schema=TRUNCATE_ROWS),
                                                            ts_ms, self.prefix))
        if d.get("incremental"):
            batches.append(self._chunk_records(d["incremental"], rows, plan, len(d["segments"])))
        if self.config[C.INCLUDE_SCHEMA_CHANGES]:
            # A statement's database is its session's current one.
            captured = [m for m in ddl_rows if _db_only(self.filter, m["db"])]
            if captured:
                changes = self._table_changes(ddl_rows, {m["seq"] for m in captured}, maps)
                statements = spark.createDataFrame([(*m[:3], statement_table(m["query"], m["db"]), m["tm"],
                                                     event_ddl(m["query"], m["db"]), *m[6:], changes[m["seq"]])
                                                    for m in captured],
                                            schema=DDL_ROWS + ", table_changes string")
                batches.append(schema_changes(statements, self.prefix, ts_ms))
        if d.get("heartbeat", int(self.config[C.HEARTBEAT_INTERVAL_MS]) > 0):  # plans made before it was planned
            batches.append(self._heartbeat(plan))
        if len(batches) == 1 and counted is not None and len(d["segments"]) > 1:
            # One table's events over several binlog files: counted per file (a pass over ops and keys of the
            # decoded range, already in memory), the topic numbers each file's records in parallel.
            events, table_rows = counted
            counts = counted_in_background(lambda: events.counts(table_rows, len(d["segments"])))
            self._counting.append(counts)
            batches[0] = replace(batches[0], counts=counts)
        return batches

    def _on_failure(self) -> str:
        mode = str(self.config["event.processing.failure.handling.mode"]).strip().lower()
        return "skip" if mode == "ignore" else mode

    def _with_transaction_orders(self, df: DataFrame, emitted: list, ts_ms: int, batches: list[RecordBatch]
                                 ) -> list[tuple[Layout, TableEvents, DataFrame]]:
        """provide.transaction.metadata: each captured table's rows with how many events of their transaction
        (and of its table) come before them, and the transaction topic's records appended to `batches`. The
        counts cross tables, so they come from one window over every table's row events (by transaction)."""
        from pyspark.sql import Window

        per_row = [table_rows.filter(F.col("tx").isNotNull()).select(
            "seq", "tx", F.lit(f"{layout.db}.{layout.table}").alias("data_collection"), events.counted().alias("n"))
            for layout, events, table_rows in emitted]
        marks = df.filter(F.col("kind").isin("txbegin", "txend")).select("seq", "kind", "tx", "ts_sec")
        counts = None
        if per_row:
            counted = per_row[0]
            for more in per_row[1:]:
                counted = counted.unionByName(more)
            before = Window.unboundedPreceding, -1
            in_tx = Window.partitionBy("tx").orderBy("seq").rowsBetween(*before)
            in_table = Window.partitionBy("tx", "data_collection").orderBy("seq").rowsBetween(*before)
            bases = counted.select("seq", F.coalesce(F.sum("n").over(in_tx), F.lit(0)).alias("tx_base"),
                                   F.coalesce(F.sum("n").over(in_table), F.lit(0)).alias("tx_table_base"))
            emitted = [(layout, events, table_rows.join(bases, "seq", "left"))
                       for layout, events, table_rows in emitted]
            counts = (counted.filter(F.col("n") > 0).groupBy("tx", "data_collection")
                      .agg(F.sum("n").alias("n"), F.min("seq").alias("first")))
        else:
            counts = self.context.spark.createDataFrame([], "tx string, data_collection string, n long, first long")
        batches.append(transaction_records(marks, counts, f"{self.prefix}.transaction", ts_ms))
        return emitted

    def _models_by_segment(self, model: ddl.Schema, segments: list, ddl_rows: list
                           ) -> tuple[dict[int, str], ddl.Schema, list[tuple[Any, Layout]]]:
        """The model (as JSON) each segment starts with, the one after the range (`model` advanced by the
        range's DDL statements in binlog order), and each TRUNCATE of a captured table with the table's
        layout then."""
        starts, unreadable, truncates = {}, {}, []
        rows = iter(ddl_rows)
        row = next(rows, None)
        for seg in segments:
            starts[seg[0]] = model.to_json()
            while row is not None and row["seq"] >> binlog.SEGMENT_BITS == seg[0]:
                if binlog.DDL.match(row["query"]):
                    binlog.advance(model, row["query"], row["db"], f"{row['file']}:{row['pos']}", unreadable)
                target = truncated(row["query"], row["db"])
                if target is not None and self.filter.captures(*target) and target in model.tables:
                    entry = model.tables[target]
                    truncates.append((row, Layout(*target, tuple(entry.columns), entry.pk_positions())))
                row = next(rows, None)
        for (db, table), why in unreadable.items():
            if self.filter.captures(db, table):
                self.context.log.warning(f"{db}.{table}: {why}; its rows need the binlog's own column names from "
                                         "there on (binlog_row_metadata=FULL)")
        return starts, model, truncates

    def _table_changes(self, ddl_rows: list, emitted: set[int], maps: list) -> dict[int, str]:
        """The `tableChanges` (JSON text, by seq) of the DDL statements `emitted`: the tables each creates or
        alters (events.ddl_targets), each with its structure after the statement (events.py says how
        Debezium describes one). Where the structure comes from:

        - the statement is the batch's last one to change the table: the server's catalog now
          (information_schema, a few rows per table), else the first table map of the table after it;
        - a later statement of the batch changes the table again: the first table map of the table
          between the two statements (the binlog's own record of the table then), else the catalog.

        A table map says less than the catalog (no character lengths, display widths, defaults,
        AUTO_INCREMENT or column charsets): columns the catalog has unchanged are taken from it, the
        others go without. The catalog is read when the batch is read: a statement run after the batch's
        end shows in the last statement's structure, and falling back to it for an earlier statement
        shows the later changes. A table with neither (created and dropped in the batch, no rows
        written in between) is left out of its statement's tableChanges."""
        targets = [ddl_targets(m["query"], m["db"]) for m in ddl_rows]  # all: any may change a captured table
        if not any(t.changes for m, t in zip(ddl_rows, targets) if m["seq"] in emitted):
            return {seq: "[]" for seq in emitted}
        cur = self.cursor()
        mariadb = binlog.is_mariadb(cur)
        catalog: dict[tuple[str, str], Structure | None] = {}
        charsets: dict[str, str | None] = {}

        def in_catalog(db: str, table: str) -> Structure | None:
            if (db, table) not in catalog:
                catalog[(db, table)] = self._catalog_structure(cur, db, table, mariadb)
            return catalog[(db, table)]

        def charset_of(db: str, table: str) -> str | None:
            known = in_catalog(db, table)
            if known is not None:
                return known.table["defaultCharsetName"]
            if db not in charsets:  # the table is gone: its database's default, as Debezium's parser has it
                cur.execute("SELECT DEFAULT_CHARACTER_SET_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME=%s",
                            (db,))
                row = cur.fetchone()
                if row is None:
                    cur.execute("SELECT @@character_set_server")
                    row = cur.fetchone()
                charsets[db] = str(row[0]) if row and row[0] else None
            return charsets[db]

        def from_map(db: str, table: str, after: int, before: int | None) -> dict | None:
            found = next((m for m in maps if m["db"] == db and m["tbl"] == table and m["seq"] > after
                          and (before is None or m["seq"] < before) and "error" not in json.loads(m["query"])), None)
            if found is None:
                return None
            layout = Layout.from_json(db, table, found["query"])
            return layout_structure(layout, charset_of(db, table), in_catalog(db, table))

        out = {}
        for i, m in enumerate(ddl_rows):
            if m["seq"] not in emitted:
                continue
            items = []
            for kind, db, table in targets[i].changes:
                later = next((n["seq"] for n, t in zip(ddl_rows[i + 1:], targets[i + 1:])
                              if (db, table) in t.touched), None)
                if later is None:
                    known = in_catalog(db, table)
                    structure = known.table if known is not None else from_map(db, table, m["seq"], None)
                else:
                    structure = from_map(db, table, m["seq"], later)
                    if structure is None:
                        known = in_catalog(db, table)
                        structure = known.table if known is not None else None
                if structure is not None:
                    items.append((kind, db, table, structure))
            out[m["seq"]] = table_changes_json(items)
        return out

    def _catalog_structure(self, cur, db: str, table: str, mariadb: bool) -> Structure | None:
        return read_structure(cur, db, table, mariadb)

    def _is_signal_table(self, db: str, table: str) -> bool:
        signal = self.config[C.SIGNAL_DATA_COLLECTION]
        return bool(signal) and f"{db}.{table}".lower() == str(signal).lower()

    def _record_signals(self, rows: DataFrame, layout: Layout, end: Mapping[str, Any]) -> None:
        """The signal rows inserted in this batch, for the next batch's plan (few rows: collected)."""
        import pyarrow as pa

        from ingest.delta import append_arrow

        names = [c.name.lower() for c in layout.columns]
        if not {"id", "type", "data"} <= set(names):
            self.context.log.warning(f"signalling table {layout.db}.{layout.table} has columns {', '.join(names)}; "
                                     "expected id, type and data (signals were ignored)")
            return
        i, t, d = names.index("id"), names.index("type"), names.index("data")
        found = [(r["seq"], r["after"][i], r["after"][t], r["after"][d]) for r in
                 rows.filter(F.col("op") == "c").select("seq", "after").collect()
                 if r["after"][t] not in (inc.WINDOW_OPEN, inc.WINDOW_CLOSE)]
        if not found:
            return
        table = pa.table({"batch_file": [str(end["file"])] * len(found), "batch_pos": [int(end["pos"])] * len(found),
                          "seq": [f[0] for f in found], "id": [f[1] for f in found], "type": [f[2] for f in found],
                          "data": [f[3] for f in found]}, schema=_signals_schema())
        version = (binlog._file_number(str(end["file"])) << 32) | int(end["pos"])
        append_arrow(self.signals_path(), table, app_id=f"{self.context.connector}:signals", version=version)

    def _chunk_records(self, chunk: Mapping[str, Any], rows: DataFrame, plan: SourcePlan, segments: int) -> RecordBatch:
        """The staged chunk rows no event of this batch touched, as `r` events after the batch's events."""
        from ingest.delta import read_table

        layout = Layout.from_json(chunk["db"], chunk["table"], chunk["layout"])
        events = self._events(layout)
        key = events.key_positions
        touched = rows.filter((F.col("db") == layout.db) & (F.col("tbl") == layout.table))
        keys = touched.select(F.array(*[F.col("before")[i] for i in key]).alias("k")).union(
            touched.select(F.array(*[F.col("after")[i] for i in key]).alias("k"))).distinct()
        staged = read_table(self.context.spark, chunk["staged"])
        staged = staged.withColumn("k", F.array(*[F.col("after")[i] for i in key]))
        kept = staged.join(keys, on="k", how="left_anti").drop("k")
        end = plan.ranges[0].end
        ts_ms = int(plan.details["ts_ms"])
        chunk_rows = kept.select(
            (batch_constant(F.lit(segments * (1 << binlog.SEGMENT_BITS)).cast("long")) + F.col("seq")).alias("seq"),
            F.lit("r").alias("op"), F.lit(None).cast("array<string>").alias("before"), "after",
            batch_constant(F.lit(ts_ms).cast("long")).alias("src_ts_ms"), F.lit("incremental").alias("snap"),
            F.lit(str(end["file"])).alias("file"), batch_constant(F.lit(int(end["pos"])).cast("long")).alias("pos"),
            F.lit(0).alias("row"), F.lit(0).cast("long").alias("server_id"), F.lit(None).cast("string").alias("gtid"),
            F.lit(None).cast("long").alias("thread"), F.lit(None).cast("string").alias("query"))
        return events.records(chunk_rows, ts_ms, self.prefix)

    def _record_history(self, ddl: list, end: Mapping[str, Any]) -> None:
        """Each DDL statement of the batch, with where it is in the binlog, into the schema history table;
        once per batch whatever crashes come (the commit carries the batch's end position as version)."""
        import pyarrow as pa

        from ingest.delta import append_arrow

        table = pa.table({
            "server": [self.prefix] * len(ddl), "seq": [m["seq"] for m in ddl], "file": [m["file"] for m in ddl],
            "pos": [m["pos"] for m in ddl], "gtid": [m["gtid"] for m in ddl],
            "server_id": [m["server_id"] for m in ddl], "ts_ms": [m["ts_sec"] * 1000 for m in ddl],
            "database": [m["db"] for m in ddl], "ddl": [m["query"] for m in ddl]},
            schema=pa.schema([("server", pa.string()), ("seq", pa.int64()), ("file", pa.string()),
                              ("pos", pa.int64()), ("gtid", pa.string()), ("server_id", pa.int64()),
                              ("ts_ms", pa.int64()), ("database", pa.string()), ("ddl", pa.string())]))
        version = (binlog._file_number(str(end["file"])) << 32) | int(end["pos"])
        append_arrow(self.history_path(), table, app_id=f"{self.context.connector}:schema-history", version=version)

    def explain(self, error: Exception, plan: SourcePlan) -> Exception | None:
        text = str(error)
        unreadable = re.search(r"EventUnreadable: ([^\n]+)", text)
        if unreadable:  # event.processing.failure.handling.mode=fail
            return FatalError(f"{unreadable.group(1).strip()[:800]}. Nothing of this batch was committed: the next "
                              "run reads the same range again")
        if "pymysql" not in text and "MySQL" not in text and "mariadb" not in text.lower():
            return None
        what = "the snapshot" if plan.details.get("kind") == SNAPSHOT else "the binlog"
        return FatalError(f"reading {what} of {self.where()} failed: {_first_line(text)}. Nothing of this batch was "
                          "committed: the next run reads the same range again")


MAX_DECIMAL_DIGITS = 38  # Spark's DecimalType; MySQL's DECIMAL goes to 65

DDL_ROWS = ("kind string, seq long, db string, tbl string, tm string, query string, file string, pos long, "
            "gtid string, server_id long, ts_sec long, thread long")
TRUNCATE_ROWS = ("seq long, op string, before array<string>, after array<string>, src_ts_ms long, snap string, "
                 "file string, pos long, row int, server_id long, gtid string, thread long, query string")
DDL_PATTERN = r"(?is)^\s*(/\*.*?\*/\s*)*(CREATE|ALTER|DROP|RENAME|TRUNCATE)\s"


_MYSQL_GTID = "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}:"


def gtid_dml_filter(config) -> SparkColumn:
    """Which decoded rows gtid.source.includes/excludes keep: those of transactions whose MySQL GTID's source
    uuid passes (Debezium's gtid.source.filter.dml.events, on by default; regular expressions matched against
    the whole uuid, ignoring case: Java's, as Debezium's). Rows without a MySQL GTID (MariaDB's, or GTIDs off)
    are kept: Debezium's filter sees only MySQL GTID events."""
    includes, excludes = config[C.GTID_INCLUDE] or [], config[C.GTID_EXCLUDE] or []
    if not includes and not excludes:
        return F.lit(True)
    matched = F.substring_index(F.col("gtid"), ":", 1).rlike(
        "(?i)^(?:" + "|".join(f"(?:{p})" for p in includes or excludes) + ")$")
    return F.when(F.coalesce(F.col("gtid").rlike(_MYSQL_GTID), F.lit(False)), matched if includes else ~matched) \
        .otherwise(F.lit(True))


def _snapshot_marker(first: int | None, last: int | None, first_table: bool, last_table: bool) -> SparkColumn:
    """source.snapshot of a snapshot row as Debezium 2.3.4 marks it (RelationalSnapshotChangeEventSource): the last
    row of the last table `last`, the first row of the first table `first`, else the last and first row of each
    table `last_in_data_collection` and `first_in_data_collection`, the others `true`. The first and last
    table are the first and last captured ones, even when empty: their rows then carry no first or last."""
    if first is None:
        return F.lit("true").alias("snap")
    seq = F.col("seq")
    return (F.when((seq == F.lit(last)) & F.lit(last_table), F.lit("last"))
            .when((seq == F.lit(first)) & F.lit(first_table), F.lit("first"))
            .when(seq == F.lit(last), F.lit("last_in_data_collection"))
            .when(seq == F.lit(first), F.lit("first_in_data_collection"))
            .otherwise(F.lit("true")).alias("snap"))


def _db_only(table_filter: C.TableFilter, db: str | None) -> bool:
    """Whether `db` is one of the captured databases (database lists only)."""
    if not db or db.lower() in C.SYSTEM_DATABASES:
        return False
    din, dout = table_filter._din, table_filter._dout
    if din:
        return any(p.fullmatch(db) for p in din)
    return not any(p.fullmatch(db) for p in dout)


def _signals_schema():
    import pyarrow as pa

    return pa.schema([("batch_file", pa.string()), ("batch_pos", pa.int64()), ("seq", pa.int64()),
                      ("id", pa.string()), ("type", pa.string()), ("data", pa.string())])


def _jsonable(v: Any) -> Any:
    """A key value as the offset keeps it: numbers as they are, anything else as its text."""
    if isinstance(v, (int, float, str)) or v is None:
        return v
    if isinstance(v, (bytes, bytearray)):
        return bytes(v).decode("utf-8", "replace")
    return str(v)


def _register(spark) -> None:
    if not getattr(spark, "_lakeconnect_binlog", False):
        spark.dataSource.register(binlog.BinlogDataSource)
        spark.dataSource.register(binlog.SnapshotDataSource)
        spark._lakeconnect_binlog = True


def _tls_failure(e: Exception) -> bool:
    args = getattr(e, "args", ())
    text = str(args[1] if len(args) >= 2 else e).lower()
    return (bool(args) and args[0] == 2026) or "ssl" in text or "certificate" in text or "secure transport" in text


def _db_message(e: Exception) -> str:
    args = getattr(e, "args", ())
    if len(args) >= 2 and isinstance(args[0], int):
        return f"{args[1]} (error {args[0]})"
    return str(e) or type(e).__name__


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:500]
    return text[:500]


__all__ = ["MySqlSourceTask", "LakeConnectError"]
