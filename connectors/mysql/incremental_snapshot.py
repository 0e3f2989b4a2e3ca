"""The task's side of incremental snapshots (incremental.py has the signals and the snapshot's state).

Planning a batch: the signals the last batch recorded are applied to the state in its offset
(`signalled_state`); then the next chunks of the table being snapshotted are read in key order, between a
window-open and a window-close watermark row, by Spark's JDBC reader into a Delta table named in the plan
(`plan_chunks`). Reading the batch: its signal rows are recorded for the next plan (`record_signals`), and
the staged chunk rows whose keys no event of the batch touched follow its events as `r` events
(`chunk_records`).
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from collections.abc import Mapping
from typing import Any

import pymysql
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from connectors.mysql import binlog
from connectors.mysql import config as C
from connectors.mysql import incremental as inc
from connectors.mysql import kafka_signals
from connectors.mysql.catalog import captured_tables, table_layout
from connectors.mysql.events import Shaping, table_events
from connectors.mysql.jdbc_settings import jdbc_properties, jdbc_url
from connectors.mysql.messages import first_line
from connectors.mysql.structure import Layout
from ingest.api import SourcePlan
from ingest.errors import FatalError
from ingest.jvm import batch_constant
from ingest.records import RecordBatch


# --- planning: signals applied, chunks staged -------------------------------------------------------------

def signals_path(root: str) -> str:
    """The signals table of the connector whose lake directory is `root`."""
    return os.path.join(root, "signals")


def signalled_state(cur, offset, config, root: str, table_filter: C.TableFilter, log) -> dict | None:
    """The incremental snapshot state: the offset's, with the signals the last batch found applied."""
    state = (offset or {}).get(inc.STATE)
    if not offset or not config[C.SIGNAL_DATA_COLLECTION] or C.CHANNEL_SOURCE not in C.signal_channels(config):
        return state
    if offset.get(inc.SIGNALS_READ) == f"{offset['file']}:{offset['pos']}":
        return state  # a batch that only committed a new state: its range had no signals
    from ingest.delta import read_arrow

    found = read_arrow(signals_path(root), filter=[("batch_file", "=", str(offset["file"])),
                                                   ("batch_pos", "=", int(offset["pos"]))], missing_ok=True)
    if found is None or found.num_rows == 0:
        return state
    rows = [(r["id"], r["type"], r["data"]) for r in sorted(found.to_pylist(), key=lambda r: r["seq"])]
    return apply_signals(cur, state, rows, table_filter, log)


def kafka_signalled_state(cur, offset, state: dict | None, config, table_filter: C.TableFilter,
                          log) -> tuple[dict | None, int | None]:
    """`state` with the signals sent to the kafka channel since the offset's position applied; the new
    position (kept in the batch's end offset, so each signal is applied by exactly one committed batch)."""
    position = (offset or {}).get(kafka_signals.KAFKA_POSITION)
    rows, position = kafka_signals.read_signals(config, position, log)
    return apply_signals(cur, state, rows, table_filter, log), position


def apply_signals(cur, state: dict | None, rows, table_filter: C.TableFilter, log) -> dict | None:
    """`state` after the signal rows (id, type, data) in order; a malformed one is ignored with a warning."""
    tables = None
    for signal_id, kind, data in rows:
        signal = inc.parse(signal_id, kind, data)
        if isinstance(signal, str):
            log.warning(signal)
            continue
        if signal is None:
            continue
        tables = tables if tables is not None else [t for t in captured_tables(cur, table_filter)
                                                    if table_filter.captures(*t)]
        state, warnings = inc.apply(state, signal, tables)
        for w in warnings:
            log.warning(w)
        log.info(f"signal '{signal.id}' ({signal.type}) applied")
    return state


def plan_chunks(task, cur, state: dict, now_ms: int) -> tuple[dict | None, dict | None]:
    """The next chunks of the table being snapshotted, staged between two watermarks; the new state.
    `task`: the MySqlSourceTask planning (its configuration, connection and Spark session)."""
    log = task.context.log
    state = json.loads(json.dumps(state))
    while state.get("current") is None and state["collections"]:
        queued = state["collections"].pop(0)
        name, where = queued["id"], _filtered(queued.get("filter"))
        db, _, table = name.partition(".")
        layout = table_layout(cur, db, table)
        key = _chunk_key(layout, task.shaping, queued.get("surrogate_key"), log, name)
        if key is None:
            continue
        cols = [binlog.quote(layout.columns[i].name) for i in key]
        try:  # the key's maximum among the rows the filter keeps, as Debezium's maximum key query
            cur.execute(f"SELECT {', '.join(cols)} FROM {binlog.quote(db)}.{binlog.quote(table)}"
                        + (f" WHERE {where}" if where else "") + " ORDER BY "
                        + ", ".join(f"{c} DESC" for c in cols) + " LIMIT 1")
        except pymysql.MySQLError as e:
            if not where:
                raise
            # Debezium skips a table whose maximum key query fails; the filter is the likely cause.
            log.warning(f"incremental snapshot of {name}: its additional condition ({queued['filter']}) cannot be "
                        f"run ({first_line(str(e))}); the table was skipped; send a new execute-snapshot signal "
                        "with a condition the server accepts")
            continue
        top = cur.fetchone()
        if top is None:
            log.info(f"incremental snapshot of {name}: the table is empty" + (" (or no row matches its additional "
                                                                               "condition)" if where else ""))
            continue
        state["current"] = {**{k: v for k, v in queued.items() if k != "id"}, "id": name, "last": None,
                            "max": [_jsonable(v) for v in top]}
        log.info(f"incremental snapshot of {name} begins, up to key {state['current']['max']}"
                 + (f", rows where {queued['filter']}" if where else ""))
    current = state.get("current")
    if current is None:
        return (state if state["collections"] else None), None
    db, _, table = current["id"].partition(".")
    layout = table_layout(cur, db, table)
    key = _chunk_key(layout, task.shaping, current.get("surrogate_key"), log, current["id"])
    if key is None:  # the column went away while the table was being read
        state["current"] = None
        return plan_chunks(task, cur, state, now_ms)
    where = _filtered(current.get("filter"))
    names = [binlog.quote(layout.columns[i].name) for i in key]
    row = "(" + ", ".join(names) + ")" if len(names) > 1 else names[0]
    lit = lambda values: ("(" + ", ".join(task.conn.escape(v) for v in values) + ")"  # noqa: E731
                          if len(values) > 1 else task.conn.escape(values[0]))
    upper = f"{row} <= {lit(current['max'])}"
    lo, ranges, done = current["last"], [], False
    size = int(task.config[C.INCREMENTAL_CHUNK_SIZE])
    watermark(task.cursor(), task.config, inc.WINDOW_OPEN, now_ms)
    for _ in range(int(task.config[C.CHUNKS_PER_BATCH])):
        bounds = " AND ".join(([f"{row} > {lit(lo)}"] if lo is not None else []) + [upper])
        cur.execute(f"SELECT {', '.join(names)} FROM {binlog.quote(db)}.{binlog.quote(table)} WHERE {bounds}"
                    f"{' AND ' + where if where else ''} ORDER BY {', '.join(names)} LIMIT 1 OFFSET {size - 1}")
        hit = cur.fetchone()
        if hit is None:
            ranges.append(bounds)
            done = True
            break
        hi = [_jsonable(v) for v in hit]
        ranges.append(f"{bounds} AND {row} <= {lit(hi)}")
        lo = hi
        if hi == current["max"]:
            done = True
            break
    path = os.path.join(task.root, f"incremental-{now_ms}")
    stage_chunks(task, layout, ranges, path, where)
    watermark(task.cursor(), task.config, inc.WINDOW_CLOSE, now_ms)
    if done:
        log.info(f"incremental snapshot of {current['id']}: last chunks read")
        state["current"] = None
    else:
        state["current"] = {**current, "last": lo}
    chunks = {"staged": path, "db": db, "table": table, "layout": layout.to_json(), "chunks": len(ranges)}
    if state["current"] is None and not state["collections"]:
        state = None
    return state, chunks


def watermark(cur, config, kind: str, now_ms: int) -> None:
    """A watermark row (`kind`: inc.WINDOW_OPEN or WINDOW_CLOSE) inserted into the signalling table."""
    db, _, table = str(config[C.SIGNAL_DATA_COLLECTION]).partition(".")
    cur.execute(f"INSERT INTO {binlog.quote(db)}.{binlog.quote(table)} (id, type, data) VALUES (%s, %s, %s)",
                (f"{uuid.uuid4()}-{kind.rsplit('-', 1)[-1]}", kind, json.dumps({"ts_ms": now_ms})))


def _filtered(condition: str | None) -> str | None:
    """A signal's filter as a WHERE term: in parentheses, so an OR in it stays inside (Debezium ANDs it bare)."""
    return f"({condition})" if condition else None


def _chunk_key(layout: Layout, shaping: Shaping, surrogate: str | None, log, name: str) -> list[int] | None:
    """The positions of the columns chunks are read by: the signal's surrogate key, else the table's key.
    None (with a warning saying why) when the table cannot be read in chunks. The events' own key still
    decides which chunk rows a concurrent change replaces."""
    key = table_events(layout, shaping).key_positions
    if not key:
        log.warning(
            f"table {name} has no primary key: an incremental snapshot reads it in key order; add a "
            f"primary key, or name its key columns in {C.MESSAGE_KEY_COLUMNS} (the table was skipped)")
        return None
    if not surrogate:
        return key
    found = [i for i, c in enumerate(layout.columns) if c.name.lower() == surrogate.lower()]
    if not found:
        log.warning(f"incremental snapshot of {name}: surrogate key '{surrogate}' is not a column of the table "
                    "(the table was skipped)")
        return None
    return found


def stage_chunks(task, layout: Layout, ranges: list[str], path: str, where: str | None = None) -> None:
    """The chunks' rows (canonical texts), one Spark task per chunk, into a Delta table at `path`; `where`:
    the signal's filter, inside the subquery so it sees the table's own columns. `task`: the MySqlSourceTask
    planning (its configuration, connection and Spark session)."""
    from ingest.delta import write_dataframe

    root = task.root
    for old in (os.listdir(root) if os.path.isdir(root) else []):
        if old.startswith("incremental-"):
            shutil.rmtree(os.path.join(root, old), ignore_errors=True)
    cols = ", ".join(c.sql_text(binlog.quote(c.name)) for c in layout.columns)
    source = (f"(SELECT JSON_ARRAY({cols}) AS after, {', '.join(binlog.quote(c.name) for c in layout.columns)} "
              f"FROM {binlog.quote(layout.db)}.{binlog.quote(layout.table)}{' WHERE ' + where if where else ''}) "
              "lc_chunk")
    try:
        df = task.context.spark.read.jdbc(jdbc_url(task.config, task.settings()["tls"], task.conn), source,
                                          predicates=ranges, properties=jdbc_properties(task.config))
    except Exception as e:  # noqa: BLE001 - Spark's JDBC errors (the URL in them is redacted)
        if "FAILED_JDBC" not in str(e):
            raise
        raise FatalError(f"the incremental snapshot of {layout.db}.{layout.table} cannot connect to "
                         f"{task.where()} over JDBC ({first_line(str(e))}); check {C.USER}, {C.PASSWORD} and "
                         f"{C.SSL_MODE} with its stores; nothing was emitted or committed") from None
    df = df.select(F.spark_partition_id().alias("chunk"), F.monotonically_increasing_id().alias("seq"),
                   F.from_json("after", "array<string>").alias("after"))
    write_dataframe(df, path, app_id=f"{task.context.connector}:incremental", version=1, mode="overwrite",
                    schema_mode="overwrite")


def _jsonable(v: Any) -> Any:
    """A key value as the offset keeps it: numbers as they are, anything else as its text."""
    if isinstance(v, (int, float, str)) or v is None:
        return v
    if isinstance(v, (bytes, bytearray)):
        return bytes(v).decode("utf-8", "replace")
    return str(v)


# --- reading: signals recorded, chunk rows emitted --------------------------------------------------------

def is_signal_table(config, db: str, table: str) -> bool:
    signal = config[C.SIGNAL_DATA_COLLECTION]
    return bool(signal) and f"{db}.{table}".lower() == str(signal).lower()


def record_signals(rows: DataFrame, layout: Layout, end: Mapping[str, Any], root: str, connector: str,
                   log) -> None:
    """The signal rows inserted in this batch, for the next batch's plan (few rows: collected)."""
    import pyarrow as pa

    from ingest.delta import append_arrow

    names = [c.name.lower() for c in layout.columns]
    if not {"id", "type", "data"} <= set(names):
        log.warning(f"signalling table {layout.db}.{layout.table} has columns {', '.join(names)}; "
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
    append_arrow(signals_path(root), table, app_id=f"{connector}:signals", version=version)


def chunk_records(spark, shaping: Shaping, prefix: str, chunk: Mapping[str, Any], rows: DataFrame,
                  plan: SourcePlan, segments: int) -> RecordBatch:
    """The staged chunk rows no event of this batch touched, as `r` events after the batch's events."""
    from ingest.delta import read_table

    layout = Layout.from_json(chunk["db"], chunk["table"], chunk["layout"])
    events = table_events(layout, shaping)
    key = events.key_positions
    touched = rows.filter((F.col("db") == layout.db) & (F.col("tbl") == layout.table))
    keys = touched.select(F.array(*[F.col("before")[i] for i in key]).alias("k")).union(
        touched.select(F.array(*[F.col("after")[i] for i in key]).alias("k"))).distinct()
    staged = read_table(spark, chunk["staged"])
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
    return events.records(chunk_rows, ts_ms, prefix)


def _signals_schema():
    import pyarrow as pa

    return pa.schema([("batch_file", pa.string()), ("batch_pos", pa.int64()), ("seq", pa.int64()),
                      ("id", pa.string()), ("type", pa.string()), ("data", pa.string())])
