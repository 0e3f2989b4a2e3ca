"""The blocking snapshot on the driver: the rows staged when the batch is planned, read back when it is read.

Staging: how the snapshot's binlog position is made to match its rows (`locking`: MariaDB's lock-free way,
or snapshot.locking.mode's locks), then one read through snapshot_source.py's data source (one transaction
on one executor) written to a Delta table named in the plan, so a batch resumed after a crash emits exactly
the rows it planned. Reading: each table's staged rows as Debezium's read events, with the first/last markers
of source.snapshot, and with include.schema.changes the snapshot's schema change events. When a snapshot is
taken, and the checks that its columns did not change meanwhile, are the task's plan (task.py).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from pyspark.sql import Column as SparkColumn
from pyspark.sql import functions as F

from connectors.mysql import binlog
from connectors.mysql import config as C
from connectors.mysql import snapshot_source
from connectors.mysql.binlog import Position
from connectors.mysql.catalog import captured_database
from connectors.mysql.events import Shaping, schema_changes, table_events
from connectors.mysql.structure import Layout
from ingest.api import SourcePlan
from ingest.errors import FatalError, RetriableError
from ingest.jvm import batch_constant
from ingest.records import RecordBatch


# --- staging, when the batch is planned -------------------------------------------------------------------

def locking_mode(cur, config) -> str:
    """How the snapshot's position is made to match its rows: MariaDB's lock-free way, or the locks of
    snapshot.locking.mode around SHOW MASTER STATUS, as Debezium takes them on MySQL."""
    mode = str(config[C.SNAPSHOT_LOCKING]).lower()
    if str(config[C.SNAPSHOT_POSITION]).lower() == C.POSITION_AUTO and mode != "extended":
        cur.execute("SHOW STATUS LIKE 'binlog_snapshot_file'")
        if cur.fetchall():
            return snapshot_source.STATUS
    return mode


def stage(spark, settings: dict[str, Any], config, layouts: list[Layout], path: str, locking: str,
          captured: list[tuple[str, str]], ddl_option: dict[str, str], connector: str
          ) -> tuple[int, int, Position, tuple[str | None, str, str]]:
    """Every table's rows and the matching binlog position, read in one consistent-snapshot transaction,
    written to the Delta table at `path`: t (table index; the position row), seq, after. Also what the
    transaction saw: the GTID set at the position, the columns' fingerprint, the locks it took.

    `spark` has the connector's data sources registered; `settings` are the connection's; `ddl_option` is
    `snapshot_ddl_option`'s."""
    from ingest.delta import read_table, write_dataframe

    # snapshot.select.statement.overrides: the table's rows are those of the user's SELECT.
    overrides = C.select_overrides(config)
    queries = [f"SELECT JSON_ARRAY({', '.join(c.sql_text(binlog.quote(c.name)) for c in lay.columns)}) FROM "
               + (f"({overrides[f'{lay.db}.{lay.table}']}) AS lakeconnect_override"
                  if f"{lay.db}.{lay.table}" in overrides else f"{binlog.quote(lay.db)}.{binlog.quote(lay.table)}")
               for lay in layouts]
    s = dict(settings)
    s.pop("connect_timeout", None)
    timeout = -(-int(config[C.SNAPSHOT_LOCK_TIMEOUT_MS]) // 1000)
    df = (spark.read.format(snapshot_source.SNAPSHOT_FORMAT).option(binlog.SECRET_OPTION, json.dumps(s))
          .option("queries", json.dumps(queries)).option("chunk", str(max(1000, config[C.MAX_BATCH_SIZE])))
          .option("locking", locking).option("tables", json.dumps(captured)).option("lock_timeout", str(timeout))
          .options(**ddl_option)
          .load()
          .select("t", "seq", F.from_json("after", "array<string>").alias("after")))
    write_dataframe(df, path, app_id=f"{connector}:snapshot", version=1, mode="overwrite",
                    schema_mode="overwrite")
    staged = read_table(spark, path)
    failed = staged.filter(F.col("t") == snapshot_source.ERROR_ROW).select("after").first()
    if failed is not None:
        message, retriable = failed[0]
        raise (RetriableError if retriable == "true" else FatalError)(str(message))
    row = staged.filter(F.col("t") == snapshot_source.POSITION_ROW).select("after").first()
    if row is None or row[0] is None or row[0][0] is None:
        raise FatalError("the snapshot transaction saw no binlog_snapshot_file: binary logging is off")
    stats = staged.filter(F.col("t") >= 0).agg(F.count("*"), F.max("seq")).first()
    file, position, gtids, seen, locks = row[0]
    return (int(stats[0]), int(stats[1] if stats[1] is not None else -1), Position(str(file), int(position)),
            (gtids, seen, locks))


def snapshot_ddl_option(cursor: Callable, config, table_filter: C.TableFilter) -> dict[str, str]:
    """include.schema.changes: the databases whose DDL the snapshot emits, as Debezium's (by default its
    schema history keeps every table of the captured databases, so their DDL is emitted too). `cursor`
    opens a cursor on the task's connection."""
    if not config[C.INCLUDE_SCHEMA_CHANGES]:
        return {}
    with cursor() as cur:
        cur.execute("SHOW DATABASES")
        names = [str(r[0]) for r in cur.fetchall()]
    return {"ddl_databases": json.dumps([db for db in names if captured_database(table_filter, db)])}


# --- reading, when the batch is read ----------------------------------------------------------------------

def read(spark, plan: SourcePlan, shaping: Shaping, prefix: str, include_schema_changes: bool
         ) -> list[RecordBatch]:
    """A snapshot batch's records: each table's staged rows as read events, then (include.schema.changes)
    the snapshot's schema change events."""
    from ingest.delta import read_table

    d = plan.details
    pos = plan.ranges[0].end
    ts_ms = int(d["ts_ms"])
    if not d["tables"]:  # schema_only, no_data: the schema change events only
        return _read_schema_changes(spark, d["staged"], pos, ts_ms, prefix, include_schema_changes)
    staged = read_table(spark, d["staged"]).filter(F.col("t") >= 0)
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
        events = table_events(Layout.from_json(db, table, text), shaping)
        first, last = bounds.get(i, (None, None))
        table_rows = rows.filter(F.col("t") == i).drop("t")
        table_rows = table_rows.select(*table_rows.columns[:5], _snapshot_marker(first, last, i == 0,
                                                                                 i == len(d["tables"]) - 1),
                                       *table_rows.columns[5:])
        batches.append(events.records(table_rows, ts_ms, prefix))
    return batches + _read_schema_changes(spark, d["staged"], pos, ts_ms, prefix, include_schema_changes)


def _read_schema_changes(spark, staged: str, pos: Mapping[str, Any], ts_ms: int, prefix: str,
                        include_schema_changes: bool) -> list[RecordBatch]:
    """include.schema.changes: the snapshot's schema change events, as its transaction staged them."""
    from ingest.delta import read_table

    batches = []
    if include_schema_changes:
        statements = read_table(spark, staged).filter(F.col("t") == snapshot_source.DDL_ROW).select(
            F.lit("ddl").alias("kind"), "seq", F.col("after")[0].alias("db"), F.col("after")[1].alias("tbl"),
            F.lit(None).cast("string").alias("tm"), F.col("after")[2].alias("query"),
            F.lit(pos["file"]).alias("file"), F.lit(int(pos["pos"])).cast("long").alias("pos"),
            F.lit(None).cast("string").alias("gtid"), F.lit(0).cast("long").alias("server_id"),
            F.lit(None).cast("long").alias("ts_sec"), F.lit(None).cast("long").alias("thread"),
            F.col("after")[3].alias("table_changes"), F.lit("true").alias("snap"),
            batch_constant(F.lit(ts_ms).cast("long")).alias("src_ts_ms"))
        batches.append(schema_changes(statements, prefix, ts_ms))
    return batches


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
