"""The streaming read: a batch's binlog range decoded on executors, then turned into Debezium's records.

The range (start, end] is decoded by binlog.py's data source, one Spark task per binlog file, each from
the schema history's model where its file starts (history.py); a file after one whose DDL changed a
captured table is decoded again from the model it starts with. The decoded rows stay in Spark: the driver
collects only a row per table layout, per DDL statement and per event left out. Each captured layout's rows
become its topic's events (events.py), followed by TRUNCATE events, the transaction topic's records
(provide.transaction.metadata), the incremental snapshot's chunk rows, schema change events with their
tableChanges (include.schema.changes) and a heartbeat. The batch's DDL goes into the schema history.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import Column as SparkColumn
from pyspark.sql import DataFrame
from pyspark.sql import Window
from pyspark.sql import functions as F

from connectors.mysql import binlog, ddl
from connectors.mysql import config as C
from connectors.mysql.binlog import Position
from connectors.mysql.catalog import captured_database, read_structure
from connectors.mysql.events import (
    TableEvents,
    heartbeat,
    schema_changes,
    table_events,
    transaction_records,
)
from connectors.mysql.incremental_snapshot import chunk_records, is_signal_table, record_signals
from connectors.mysql.structure import (
    Layout,
    Structure,
    ddl_targets,
    event_ddl,
    layout_structure,
    statement_table,
    table_changes_json,
    truncated,
)
from ingest.api import SourcePlan
from ingest.errors import FatalError
from ingest.records import RecordBatch, counted_in_background
from ingest.runtime.faults import UNREADABLE_ENV

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


def heartbeat_batch(spark, config, prefix: str, plan: SourcePlan) -> RecordBatch:
    """The batch's heartbeat record (heartbeat.interval.ms), on topic `<topic.heartbeat.prefix>.<prefix>`."""
    return heartbeat(spark, f"{config[C.HEARTBEAT_PREFIX]}.{prefix}", prefix, int(plan.details["ts_ms"]))


def read(task, plan: SourcePlan) -> list[RecordBatch]:
    """A streaming batch's records. `task`: the MySqlSourceTask reading (its configuration, connections,
    Spark session, schema history, and what it frees when closed)."""
    spark = task.registered_spark()
    d = plan.details
    s = task.settings()
    s.pop("connect_timeout", None)
    first = d["segments"][0]
    with task.cursor() as cur:  # (a batch planned by an interrupted run is read without a plan)
        model = task.history.ensure_model(cur, Position(first[1], int(first[2])), task.mode, task.filter)
    start_json = model.to_json()

    def decoded(segments: list, models: list[str], of: dict[str, int]) -> DataFrame:
        df = (spark.read.format(binlog.FORMAT)
              .option(binlog.SECRET_OPTION, json.dumps(s))
              .option("server_id", str(task.server_id))
              .option("segments", json.dumps(segments))
              .option("tables", json.dumps(task.filter.to_json()))
              .option("chunk", str(task.config[C.MAX_BATCH_SIZE]))
              .option("query", "true" if task.config[C.INCLUDE_QUERY] else "false")
              .option("models", json.dumps({"models": models, "of": of}))
              .option("transactions", "true" if task.config[C.PROVIDE_TRANSACTION_METADATA] else "false")
              .option("on_failure", on_failure(task.config))
              .option("unreadable", os.environ.get(UNREADABLE_ENV, ""))
              .load())
        df = df.persist(StorageLevel.MEMORY_AND_DISK)
        task.persisted.append(df)
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
    starts, model, truncates = models_by_segment(model, d["segments"], ddl_rows, task.filter, task.context.log)
    # A file after one whose DDL changed a captured table is decoded again from the model it starts with.
    captured = lambda text: ddl.Schema.from_json(text).restricted(task.filter.captures).to_json()  # noqa: E731
    redo = [seg for seg in d["segments"][1:] if captured(starts[seg[0]]) != captured(start_json)]
    if redo:
        task.context.log.info(f"DDL changed captured tables: binlog files {', '.join(seg[1] for seg in redo)} "
                              "decoded again from the schema history where each begins")
        models = sorted({starts[seg[0]] for seg in redo})
        again = decoded(redo, models, {str(seg[0]): models.index(starts[seg[0]]) for seg in redo})
        df = df.filter(~F.shiftright(F.col("seq"), binlog.SEGMENT_BITS).isin([seg[0] for seg in redo])) \
            .unionByName(again).persist(StorageLevel.MEMORY_AND_DISK)
        task.persisted.append(df)
        maps, ddl_rows = metadata(df)
    for m in skipped:  # Debezium's warning, with its advice
        task.context.log.warning(
            f"the binlog event at {m['file']}:{m['pos']} ({m['db']}.{m['tbl']}) cannot be read ({m['query']}); "
            "it is left out (event.processing.failure.handling.mode=warn). See it with mysqlbinlog "
            f"--start-position={m['pos']} --verbose {m['file']}")
    ts_ms = int(d["ts_ms"])
    if ddl_rows:
        task.history.record_history(ddl_rows, plan.ranges[0].end)
        end = plan.ranges[0].end
        task.history.store_model(Position(str(end["file"]), int(end["pos"])), model)
    transactions = bool(task.config[C.PROVIDE_TRANSACTION_METADATA])
    rows = df.filter((F.col("kind") == "row") & gtid_dml_filter(task.config)).select(
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
        if "error" in found and task.config["inconsistent.schema.handling.mode"].strip().lower() != "fail":
            # Debezium's inconsistent.schema.handling.mode warn and skip: the table's rows are left out
            if task.config["inconsistent.schema.handling.mode"].strip().lower() == "warn":
                task.context.log.warning(f"{found['error']} (at {m['file']}:{m['pos']}): its rows are left "
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
            task.context.log.warning(f"{m['db']}.{m['tbl']} at {m['file']}:{m['pos']}: {found['note']}")
        layout = Layout.from_json(m["db"], m["tbl"], m["query"])
        if is_signal_table(task.config, layout.db, layout.table):
            record_signals(rows.filter(F.col("tm") == m["tm"]), layout, plan.ranges[0].end, task.root,
                           task.context.connector, task.context.log)
        if not task.filter.captures(layout.db, layout.table):
            continue
        events = table_events(layout, task.shaping)
        table_rows = rows.filter(F.col("tm") == m["tm"]).drop("tm", "db", "tbl")
        emitted.append((layout, events, table_rows))
    if transactions:
        emitted = with_transaction_orders(spark, df, emitted, ts_ms, task.prefix, batches)
    for _, events, table_rows in emitted:
        batches.append(events.records(table_rows, ts_ms, task.prefix))
        counted = (events, table_rows)
    if "t" not in task.shaping.skipped:  # Debezium's truncate events: skipped.operations without t
        for m, layout in truncates:
            # source.thread and source.query are null: a TRUNCATE is no transaction (Debezium takes the
            # thread from its BEGIN) and has no row query
            row = (m["seq"], "t", None, None, m["ts_sec"] * 1000, None, m["file"], m["pos"], 0, m["server_id"],
                   m["gtid"], None, None)
            batches.append(table_events(layout, task.shaping).records(
                spark.createDataFrame([row], schema=TRUNCATE_ROWS), ts_ms, task.prefix))
    if d.get("incremental"):
        batches.append(chunk_records(spark, task.shaping, task.prefix, d["incremental"], rows, plan,
                                     len(d["segments"])))
    if task.config[C.INCLUDE_SCHEMA_CHANGES]:
        # A statement's database is its session's current one.
        captured = [m for m in ddl_rows if captured_database(task.filter, m["db"])]
        if captured:
            changes = table_changes(task.cursor, ddl_rows, {m["seq"] for m in captured}, maps)
            statements = spark.createDataFrame([(*m[:3], statement_table(m["query"], m["db"]), m["tm"],
                                                 event_ddl(m["query"], m["db"]), *m[6:], changes[m["seq"]])
                                                for m in captured],
                                        schema=DDL_ROWS + ", table_changes string")
            batches.append(schema_changes(statements, task.prefix, ts_ms))
    if d.get("heartbeat", int(task.config[C.HEARTBEAT_INTERVAL_MS]) > 0):  # plans made before it was planned
        batches.append(heartbeat_batch(spark, task.config, task.prefix, plan))
    if len(batches) == 1 and counted is not None and len(d["segments"]) > 1:
        # One table's events over several binlog files: counted per file (a pass over ops and keys of the
        # decoded range, already in memory), the topic numbers each file's records in parallel.
        events, table_rows = counted
        counts = counted_in_background(lambda: events.counts(table_rows, len(d["segments"])))
        task.counting.append(counts)
        batches[0] = replace(batches[0], counts=counts)
    return batches


def on_failure(config) -> str:
    """event.processing.failure.handling.mode as the decoder takes it (ignore is skip)."""
    mode = str(config["event.processing.failure.handling.mode"]).strip().lower()
    return "skip" if mode == "ignore" else mode


def with_transaction_orders(spark, df: DataFrame, emitted: list, ts_ms: int, prefix: str,
                            batches: list[RecordBatch]) -> list[tuple[Layout, TableEvents, DataFrame]]:
    """provide.transaction.metadata: each captured table's rows with how many events of their transaction
    (and of its table) come before them, and the transaction topic's records appended to `batches`. The
    counts cross tables, so they come from one window over every table's row events (by transaction)."""
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
        counts = spark.createDataFrame([], "tx string, data_collection string, n long, first long")
    batches.append(transaction_records(marks, counts, f"{prefix}.transaction", ts_ms))
    return emitted


def models_by_segment(model: ddl.Schema, segments: list, ddl_rows: list, table_filter: C.TableFilter, log
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
            if target is not None and table_filter.captures(*target) and target in model.tables:
                entry = model.tables[target]
                truncates.append((row, Layout(*target, tuple(entry.columns), entry.pk_positions())))
            row = next(rows, None)
    for (db, table), why in unreadable.items():
        if table_filter.captures(db, table):
            log.warning(f"{db}.{table}: {why}; its rows need the binlog's own column names from "
                        "there on (binlog_row_metadata=FULL)")
    return starts, model, truncates


def table_changes(cursor: Callable, ddl_rows: list, emitted: set[int], maps: list) -> dict[int, str]:
    """The `tableChanges` (JSON text, by seq) of the DDL statements `emitted`: the tables each creates or
    alters (structure.ddl_targets), each with its structure after the statement (structure.py says how
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
    written in between) is left out of its statement's tableChanges. `cursor` opens a cursor on the task's
    connection (only when a statement changes tables)."""
    targets = [ddl_targets(m["query"], m["db"]) for m in ddl_rows]  # all: any may change a captured table
    if not any(t.changes for m, t in zip(ddl_rows, targets) if m["seq"] in emitted):
        return {seq: "[]" for seq in emitted}
    cur = cursor()
    mariadb = binlog.is_mariadb(cur)
    catalog: dict[tuple[str, str], Structure | None] = {}
    charsets: dict[str, str | None] = {}

    def in_catalog(db: str, table: str) -> Structure | None:
        if (db, table) not in catalog:
            catalog[(db, table)] = read_structure(cur, db, table, mariadb)
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
