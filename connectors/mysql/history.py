"""The connector's schema history, kept in two Delta tables under its lake directory.

`schema-history`: every DDL statement a batch read, with where it is in the binlog (what Debezium's schema
history topic holds). `schema-model`: the model those statements lead to (ddl.Schema), stored at the
binlog position from which it is in effect, so a batch knows the columns of the rows it decodes wherever
it starts. A batch's rows go in once whatever crashes come: each commit carries the batch's end position
as its version (the files' order and the position within a file).
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from typing import Any

from connectors.mysql import binlog, ddl
from connectors.mysql import config as C
from connectors.mysql.binlog import Position
from connectors.mysql.catalog import captured_tables, read_catalog
from ingest.errors import FatalError


class SchemaHistory:
    """The schema history of connector `connector` (its lake directory `root`, its topic.prefix `prefix`, which
    names the server in the history's rows); `log` is the task's."""

    def __init__(self, root: str, connector: str, prefix: str, log):
        self.history_path = os.path.join(root, "schema-history")
        self.model_path = os.path.join(root, "schema-model")
        self.connector = connector
        self.prefix = prefix
        self.log = log

    def model_at(self, pos: Position) -> ddl.Schema | None:
        """The model in effect at `pos`: the newest one stored at or before it (a batch stores the model its
        DDL leads to at its end position; one re-read after a crash finds the one before it again)."""
        from ingest.delta import read_arrow

        found = read_arrow(self.model_path, missing_ok=True)
        if found is None or found.num_rows == 0:
            return None
        best = None
        for row in found.to_pylist():
            at = Position(str(row["file"]), int(row["pos"]))
            if at <= pos and (best is None or (best[0], best[1]) < (at, int(row["written"]))
                              or (best[0] == at and best[1] < int(row["written"]))):
                best = (at, int(row["written"]), row["model"])
        return ddl.Schema.from_json(best[2]) if best else None

    def store_model(self, pos: Position, model: ddl.Schema, once: bool = True) -> None:
        """`model` as the one in effect from `pos` on; `once`: a batch's, stored once whatever retries come."""
        import pyarrow as pa

        from ingest.delta import append_arrow

        table = pa.table({"file": [pos.file], "pos": [pos.pos], "written": [time.time_ns() // 1000],
                          "model": [model.to_json()]},
                         schema=pa.schema([("file", pa.string()), ("pos", pa.int64()), ("written", pa.int64()),
                                           ("model", pa.string())]))
        version = (binlog._file_number(pos.file) << 32) | pos.pos
        append_arrow(self.model_path, table, app_id=f"{self.connector}:schema-model" if once else None,
                     version=version if once else None)

    def seed_model(self, cur, pos: Position, tables: list[tuple[str, str]]) -> ddl.Schema:
        """The model from the catalog now (the snapshot's schema read), stored as the one in effect at `pos`."""
        model = read_catalog(cur, tables, binlog.is_mariadb(cur))
        cur.execute("SELECT SCHEMA_NAME, DEFAULT_CHARACTER_SET_NAME FROM information_schema.SCHEMATA")
        for db, charset in cur.fetchall():
            if str(db).lower() not in C.SYSTEM_DATABASES:
                model.databases.setdefault(str(db), str(charset).lower() if charset else model.server_charset)
        self.store_model(pos, model)
        return model

    def ensure_model(self, cur, start: Position, mode: str, table_filter: C.TableFilter) -> ddl.Schema:
        """A model where the batch starts; without one (a connector begun before the history kept one, or
        one whose history was lost) it is read from the catalog where that is safe: in recovery mode, as
        Debezium rebuilds its history there, or when the binlog carries the column names to check it by.
        `mode`: snapshot.mode; `table_filter`: the captured tables."""
        model = self.model_at(start)
        if model is not None:
            if mode == C.SCHEMA_ONLY_RECOVERY:  # captured tables the history lacks, from the catalog
                missing = [t for t in captured_tables(cur, table_filter) if t not in model.tables]
                if missing:
                    found = read_catalog(cur, missing, binlog.is_mariadb(cur))
                    model.tables.update(found.tables)
                    self.log.info(f"the schema history lacked {len(found.tables)} captured tables: read "
                                  "from the catalog (snapshot.mode=recovery)")
                    self.store_model(start, model, once=False)
            return model
        full = binlog.variables(cur, ["binlog_row_metadata"]).get("binlog_row_metadata", "").upper() == "FULL"
        if mode == C.SCHEMA_ONLY_RECOVERY or full:
            self.log.info(f"the schema history has no model at {start.file}:{start.pos}: read from the "
                          "catalog" + (" (snapshot.mode=recovery)" if not full else ""))
            return self.seed_model(cur, start, captured_tables(cur, table_filter))
        raise FatalError(
            f"the connector has no schema history at binlog position {start.file}:{start.pos}, and the server "
            "does not write column names into the binlog (binlog_row_metadata is not FULL): the columns of the "
            "rows cannot be known. If no captured table has changed since that position, set "
            "snapshot.mode=recovery to read the history from the catalog; otherwise take a new snapshot "
            "(snapshot.mode=when_needed after `lakeconnect offsets reset`). Nothing was emitted or committed")

    def record_history(self, rows: list, end: Mapping[str, Any]) -> None:
        """Each DDL statement of the batch, with where it is in the binlog, into the schema history table;
        once per batch whatever crashes come (the commit carries the batch's end position as version)."""
        import pyarrow as pa

        from ingest.delta import append_arrow

        table = pa.table({
            "server": [self.prefix] * len(rows), "seq": [m["seq"] for m in rows], "file": [m["file"] for m in rows],
            "pos": [m["pos"] for m in rows], "gtid": [m["gtid"] for m in rows],
            "server_id": [m["server_id"] for m in rows], "ts_ms": [m["ts_sec"] * 1000 for m in rows],
            "database": [m["db"] for m in rows], "ddl": [m["query"] for m in rows]},
            schema=pa.schema([("server", pa.string()), ("seq", pa.int64()), ("file", pa.string()),
                              ("pos", pa.int64()), ("gtid", pa.string()), ("server_id", pa.int64()),
                              ("ts_ms", pa.int64()), ("database", pa.string()), ("ddl", pa.string())]))
        version = (binlog._file_number(str(end["file"])) << 32) | int(end["pos"])
        append_arrow(self.history_path, table, app_id=f"{self.connector}:schema-history", version=version)
