"""lakeconnect's MySQL CDC connector against the real Debezium, record by record.

One history (tests/mysql/_oracle_corpus.py: a snapshot, then inserts, updates, deletes, key changes,
ALTER, RENAME, TRUNCATE, every column type) on the private MariaDB, captured with the same connector JSON
(the book's mysql-debezium.json shape) by
  - Debezium's MySQL connector 2.3.4 in Kafka Connect 3.5 (tests/mysql/connect_oracle.py) into the real
    broker: the oracle. Every topic, partition, key, value and header must be what lakeconnect writes
    into its Delta topics, byte for byte once wall-clock times and server positions are set aside
    (`VOLATILE`), but for the differences listed in `KNOWN` (docs/connectors/mysql-cdc.md, "Fidelity:
    Debezium", lists the same);
  - Debezium 3.5's MariaDB connector in Kafka Connect 4.1: it must capture the whole corpus; how its
    records differ from 2.3's is printed, not failed (docs/connectors/mysql-cdc.md lists it for users of 3.x).
Both Connect workers (one JVM each) run once for the module, while lakeconnect runs in this process.
"""

from __future__ import annotations

import json
import os
import re
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable

from tests.conftest import cli_here
from tests.mysql._cdc import Db, connector_config, create, run
from tests.mysql._oracle_corpus import HISTORY, SETUP
from tests.mysql.test_snapshot_locking import SEQUENCES, STATEMENTS
from tests.mysql.connect_oracle import FLAVOURS, ConnectWorker, Record, jars_present, read_topic, topics

DB = "dbz_oracle"
DUMP_ENV = "LAKECONNECT_ORACLE_DUMP"
NAME = "oracle-connector"
MINIMAL = SEQUENCES["minimal"]
# Debezium and lakeconnect read the binlog at the same time: each needs replica ids of its own
# (lakeconnect's parallel decoders take the ids after database.server.id).
SERVER_IDS = {"debezium23": "10100", "debezium3": "10200"}
# 3.x's topics get a prefix of their own in the broker (the schema names inside keep topic.prefix).
V3_TOPIC = "v3-"

# Keys production Debezium configs carry (Debezium's defaults spelled out, as teams do) and keys nobody
# declares: each side must accept them and write the same records as without them.
PRODUCTION_KEYS = {
    "decimal.handling.mode": "precise", "time.precision.mode": "adaptive_time_microseconds",
    "bigint.unsigned.handling.mode": "long", "binary.handling.mode": "bytes", "snapshot.locking.mode": "minimal",
    "skipped.operations": "t", "provide.transaction.metadata": "false", "signal.enabled.channels": "source",
    "event.processing.failure.handling.mode": "fail", "include.schema.comments": "false",
    "inconsistent.schema.handling.mode": "fail", "connect.timeout.ms": "30000", "max.queue.size": "8192",
    "poll.interval.ms": "500", "snapshot.include.collection.list": rf"{DB}\..*", "database.initial.statements": "",
    "owner.team": "payments", "ticket": "DATA-1234",
}

# decimal.handling.mode and binary.handling.mode other than the defaults: each variant is one more connector
# on each side (Debezium 2.3 only), on the tables whose columns they change, and must match record by record.
MODE_VARIANTS = {
    "m1": {"decimal.handling.mode": "string", "binary.handling.mode": "base64"},
    "m2": {"decimal.handling.mode": "double", "binary.handling.mode": "hex"},
    "m3": {"binary.handling.mode": "base64-url-safe", "bigint.unsigned.handling.mode": "precise"},
    # Debezium's column rules (docs/connectors/mysql-cdc.md, "Keys"), none of which the full corpus above sets.
    "m4": {"column.exclude.list": f"{DB}.types.lt,{DB}.types.mb", "column.truncate.to.3.chars": f"{DB}.types.tx",
           "column.mask.with.5.chars": f"{DB}.types.c", "column.mask.hash.v2.SHA-256.with.salt.pepper": f"{DB}.types.vc",
           "message.key.columns": f"{DB}.marker:what"},
    "m5": {"snapshot.select.statement.overrides": f"{DB}.types",
           f"snapshot.select.statement.overrides.{DB}.types": f"SELECT * FROM {DB}.types WHERE id <> 2"},
    "m6": {"snapshot.include.collection.list": rf"{DB}\.mark.*"},
    "m7": {"skipped.operations": "u,d,t"},
    "m8": {"skipped.operations": "none"},  # truncate events, on the table the history truncates
    # Kafka Connect's temporal types, column comments as field docs, and the source type parameters: by column
    # (a key column, a VARCHAR with a comment, BOOLEAN's tinyint(1), an ENUM, a TIME) and by type name.
    "m9": {"time.precision.mode": "connect", "include.schema.comments": "true",
           "column.propagate.source.type": rf"{DB}\.types\.(id|vc|bo|e|tm3)",
           "datatype.propagate.source.type": r".+\.decimal,.+\.DATETIME,.+\.int unsigned,DECIMAL"},
    # Debezium's transaction topic and blocks, and schema change events: the snapshot's and the binlog's.
    "m10": {"provide.transaction.metadata": "true"},
    "m11": {"include.schema.changes": "true"},
}
MODE_SERVER_IDS = {"m1": "10301", "m2": "10302", "m3": "10303", "m4": "10304", "m5": "10305", "m6": "10306",
                   "m7": "10307", "m8": "10308", "m9": "10309", "m10": "10310", "m11": "10311"}
# The tables a variant captures (with the marker, whose last row says a connector has read everything).
VARIANT_TABLES = {"m8": "trunc"}
# Variants that capture every table (m10: transactions over several tables, whose END lists them all).
ALL_TABLES = {"m10"}

# What a run takes from the clock, or from where it stands in the binlog rather than from the history: set
# aside before comparing. A binlog event's position is the history's own (the same binlog for both), so it is
# compared; a snapshot row's is where that connector took its snapshot.
VOLATILE = ("ts_ms", "ts_us", "ts_ns")
VOLATILE_SOURCE = ("ts_ms", "ts_us", "ts_ns")
SNAPSHOT_POSITION = ("file", "pos", "row", "thread", "gtid", "server_id", "query")


@dataclass(frozen=True)
class Known:
    """A difference from Debezium 2.3 that lakeconnect keeps, or cannot avoid: the case, the topics it
    shows in (suffixes), what differs and why. `blank(theirs, ours)` gets both records' values (parsed
    JSON) and blanks exactly the parts where this difference shows; the comparison then wants the rest
    equal, byte for byte."""

    case: str
    topics: tuple[str, ...]
    what: str
    why: str
    blank: Callable[[dict, dict], None]


def _rows(value: dict) -> list[tuple[dict | None, dict | None]]:
    """(row schema, row payload) of an envelope's before and after."""
    fields = {f["field"]: f for f in value["schema"].get("fields", [])}
    payload = value.get("payload") or {}
    return [(fields.get(side), payload.get(side)) for side in ("before", "after")]


def _debezium_time_bug(theirs: Any, ours: Any, snapshot: bool) -> bool:
    """Debezium 2.3's two readings of a negative TIME: a snapshot row's value between -1 s and 0 with its sign
    dropped; a binlog TIME(n>0) of whole negative seconds less than a second off (-00:00:01 as -1048576)."""
    if not (isinstance(ours, int) and isinstance(theirs, int) and ours < 0 and theirs != ours):
        return False
    if snapshot:
        return -1_000_000 < ours and theirs == -ours
    return ours % 1_000_000 == 0 and abs(theirs - ours) < 1_000_000


def _blank_negative_times(theirs: dict, ours: dict) -> None:
    snapshot = theirs["payload"].get("op") == "r"
    for (schema, a), (_, b) in zip(_rows(theirs), _rows(ours)):
        for f in (schema or {}).get("fields", []):
            name = f["field"]
            if f.get("name") == "io.debezium.time.MicroTime" and a and b \
                    and _debezium_time_bug(a.get(name), b.get(name), snapshot):
                a[name] = b[name] = "<known: negative TIME>"
            # time.precision.mode=connect: a negative TIME has no Connect Time (null, which JsonConverter writes
            # as the column's default), but the snapshot's -00:00:00.5 reaches Debezium as +0.5 s
            if f.get("name") == "org.apache.kafka.connect.data.Time" and a and b and snapshot \
                    and b.get(name) in (None, f.get("default")) and isinstance(a.get(name), int) \
                    and 0 < a[name] < 1000:
                a[name] = b[name] = "<known: negative TIME>"


def _blank_defaults(theirs: dict, ours: dict) -> None:
    """Column defaults that differ (and the nulls JsonConverter turns into one side's default)."""
    for (sa, a), (sb, b) in zip(_rows(theirs), _rows(ours)):
        if not sa or not sb:
            continue
        ours_by_name = {f["field"]: f for f in sb.get("fields", [])}
        for fa in sa.get("fields", []):
            fb = ours_by_name.get(fa["field"])
            if fb is None or fa.get("default") == fb.get("default"):
                continue
            name = fa["field"]
            for row, field, other in ((a, fa, b), (b, fb, a)):
                if row and other and "default" in field and row.get(name) == field["default"] \
                        and other.get(name) is None:
                    row[name] = other[name] = "<known: default>"
            fa.pop("default", None)
            fb.pop("default", None)
            # keep the key order comparable: both without a default now


def _blank_mariadb_transaction(theirs: dict, ours: dict) -> None:
    a, b = theirs["payload"].get("source") or {}, ours["payload"].get("source") or {}
    if a.get("gtid") is None and isinstance(b.get("gtid"), str) and re.fullmatch(r"\d+-\d+-\d+", b["gtid"]):
        a["gtid"] = b["gtid"] = "<known: MariaDB GTID>"
    if a.get("thread") == 0 and b.get("thread") is None:
        a["thread"] = b["thread"] = "<known: MariaDB GTID>"


def _blank_schema_change_row(theirs: dict, ours: dict) -> None:
    a, b = theirs["payload"], ours["payload"]
    if "ddl" in a and "ddl" in b and a["source"].get("snapshot") == "false" and b["source"].get("row") == 0:
        a["source"]["row"] = b["source"]["row"] = "<known: schema change row>"


def _blank_binlog_table_changes(theirs: dict, ours: dict) -> None:
    a, b = theirs["payload"], ours["payload"]
    if "ddl" not in a or "ddl" not in b or a["source"].get("snapshot") != "false":
        return
    for x, y in zip(a.get("tableChanges") or [], b.get("tableChanges") or []):
        if (x["type"], x["id"]) == (y["type"], y["id"]) and x.get("table") != y.get("table"):
            x["table"] = y["table"] = "<known: tableChanges of a binlog statement>"


KNOWN: list[Known] = [
    Known("tableChanges of a binlog statement", ("",),
          "the table structure in tableChanges of a DDL statement read from the binlog: Debezium describes the "
          "table as its parser builds it from the statement's text (INT without a length; the table as of that "
          "statement); lakeconnect from the server's catalog when the batch is read (int(11); a later ALTER of "
          "the same batch already in it) or from a binlog table map (docs/connectors/mysql-cdc.md, Events)",
          "Debezium keeps its own model of every table by parsing each DDL statement; this connector reads the "
          "catalog once per batch",
          _blank_binlog_table_changes),
    Known("schema change row", ("",),
          "source.row of a schema change event read from the binlog: Debezium 2.3 writes the row number of the "
          "last row event of a captured table it read before the statement (1 after a two-row event), "
          "lakeconnect 0",
          "Debezium's source info keeps the row number a row event set until the next one; a DDL statement has "
          "no rows, and the number depends on what the connector read before, in earlier batches too",
          _blank_schema_change_row),
    Known("MariaDB GTID", ("",),
          "source.gtid and source.thread of binlog events: Debezium 2.3 writes null and 0 on MariaDB, lakeconnect "
          "the MariaDB GTID of the event's transaction (0-1-342) and null, as Debezium 3.x's MariaDB connector",
          "Debezium 2.3's MySQL connector reads MySQL's GTID events only; MariaDB's GTID event starts the "
          "transaction without a BEGIN query event, whose thread id Debezium would take",
          _blank_mariadb_transaction),
    Known("negative TIME", (f".{DB}.types",),
          "a negative TIME between -1 s and 0, or with whole seconds and a fraction width: Debezium 2.3 writes "
          "another value (-00:00:00.5 as +500000 in a snapshot, -00:00:01 in a TIME(6) as -1048576 from the "
          "binlog); lakeconnect the value's microseconds (-500000, -1000000); with time.precision.mode=connect "
          "Debezium 2.3 writes the snapshot's -00:00:00.5 as 500 (ms), lakeconnect null (no negative Connect Time)",
          "Debezium's bugs: the JDBC driver's TIME drops the sign of a value above -1 s, and the binlog client "
          "decodes a negative TIME2 with a fraction from the wrong bits",
          _blank_negative_times),
    Known("defaults before a later DDL", (f".{DB}.alter_me", f".{DB}.keyless"),
          "events written before an ALTER or DROP of their table that a later statement of the same batch runs: "
          "column defaults in the schema (and so the default JsonConverter writes for a null) are the catalog's "
          "when the batch is read (the column's new default, or none for a dropped or renamed column or table)",
          "a binlog table map carries no defaults; Debezium takes them from its own schema, which it keeps by "
          "parsing every DDL statement. lakeconnect reads the catalog once per batch and table",
          _blank_defaults),
]


def _volatile_blanked(value: dict | None) -> dict | None:
    payload = value.get("payload") if isinstance(value, dict) else None
    if isinstance(payload, dict):
        for f in VOLATILE:
            if f in payload:
                payload[f] = "<clock>"
        source = payload.get("source")
        if isinstance(source, dict):
            # a snapshot's rows and schema changes: where that connector took its snapshot
            taken = payload.get("op") == "r" or ("ddl" in payload and source.get("snapshot") == "true")
            for f in VOLATILE_SOURCE + (SNAPSHOT_POSITION if taken else ()):
                if f in source:
                    source[f] = "<server>"
    return value


def comparable_pair(topic: str, theirs: tuple, ours: tuple) -> tuple[tuple, tuple]:
    """Two records (topic, partition, key, value, headers) with volatile fields blanked, and the known
    differences where they match; values as JSON text with their field order kept."""
    values = [_volatile_blanked(json.loads(r[3])) if r[3] is not None else None for r in (theirs, ours)]
    if all(isinstance(v, dict) and "schema" in v and isinstance(v.get("payload"), dict) for v in values):
        for k in KNOWN:
            if topic.endswith(k.topics):
                k.blank(values[0], values[1])
    out = []
    for r, v in zip((theirs, ours), values):
        key = r[2].decode() if isinstance(r[2], bytes) else r[2]
        text = json.dumps(v, ensure_ascii=False, separators=(",", ":")) if v is not None else None
        out.append((r[0], r[1], key, text, r[4]))
    return out[0], out[1]


def _headers(pairs) -> tuple:
    return tuple((k, v.decode() if isinstance(v, bytes) else v) for k, v in pairs or ())


def kafka_records(rs: list[Record], strip: str = "") -> list[tuple]:
    return [(r.topic.removeprefix(strip), r.partition, r.key, r.value or None, _headers(r.headers)) for r in rs]


def lake_records(lake: Path, topic: str) -> list[tuple]:
    rows = DeltaTable(str(lake / "topics" / topic)).to_pyarrow_table(
        columns=["partition", "offset", "key", "value", "headers"]).to_pylist()
    return [(topic, r["partition"], r["key"], r["value"], _headers((h["key"], h["value"]) for h in r["headers"] or []))
            for r in sorted(rows, key=lambda r: (r["partition"], r["offset"]))]


def lake_topics(lake: Path, prefix: str) -> list[str]:
    return sorted(p.name for p in (lake / "topics").iterdir() if p.name == prefix or p.name.startswith(prefix + "."))


def _first_difference(a, b, path="") -> str:
    if type(a) is not type(b):
        return f"{path or '/'}: {json.dumps(a, ensure_ascii=False)[:300]} != {json.dumps(b, ensure_ascii=False)[:300]}"
    if isinstance(a, dict):
        if list(a) != list(b):
            return f"{path or '/'} fields: {list(a)} != {list(b)}"
        for k in a:
            if a[k] != b[k]:
                return _first_difference(a[k], b[k], f"{path}/{k}")
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{path}: {len(a)} items != {len(b)}: {json.dumps(a)[:300]} != {json.dumps(b)[:300]}"
        for i, (x, y) in enumerate(zip(a, b)):
            if x != y:
                return _first_difference(x, y, f"{path}[{i}]")
    return f"{path or '/'}: {json.dumps(a, ensure_ascii=False)[:300]} != {json.dumps(b, ensure_ascii=False)[:300]}"


def differences(theirs: dict[str, list[tuple]], ours: dict[str, list[tuple]]) -> list[str]:
    """Every record that differs, as `topic #offset: where`: theirs first, then ours."""
    out = []
    for topic in sorted(set(theirs) | set(ours)):
        a, b = theirs.get(topic, []), ours.get(topic, [])
        if len(a) != len(b):
            out.append(f"{topic}: Debezium wrote {len(a)} records, lakeconnect {len(b)}")
        for i, (x, y) in enumerate(zip(a, b)):
            x, y = comparable_pair(topic, x, y)
            if x == y:
                continue
            for part, name in ((1, "partition"), (4, "headers")):
                if x[part] != y[part]:
                    out.append(f"{topic} #{i} {name}: {x[part]} != {y[part]}")
            for part, name in ((2, "key"), (3, "value")):
                if x[part] != y[part]:
                    jx = json.loads(x[part]) if x[part] is not None else None
                    jy = json.loads(y[part]) if y[part] is not None else None
                    out.append(f"{topic} #{i} {name} {_first_difference(jx, jy)}")
    return out


def _snapshot_done(bootstrap: str, prefix: str) -> bool:
    for topic in topics(bootstrap, prefix):
        for r in reversed(read_topic(bootstrap, topic)):
            if r.value and json.loads(r.value)["payload"]["source"]["snapshot"] == "last":
                return True
    return False


def _saw_end_marker(bootstrap: str, prefix: str) -> bool:
    topic = f"{prefix}.{DB}.marker"
    if topic not in topics(bootstrap, prefix):
        return False
    return any(r.value and json.loads(r.value)["payload"]["after"]["what"] == "end"
               for r in read_topic(bootstrap, topic))


def _server_time(db: Db) -> Any:
    cur = db.conn.cursor()
    cur.execute("SELECT NOW(6)")
    return cur.fetchone()[0]


def _snapshot_statements(cur, since: Any) -> list[list[str]]:
    """Each connection's statements since `since` that take or release locks, open or end the transaction,
    read the binlog position or read a captured table's rows (as "SELECT rows", consecutive ones once), for
    the connections that read rows: each snapshot's."""
    cur.execute("SELECT thread_id, CONVERT(argument USING utf8mb4) FROM mysql.general_log "
                "WHERE command_type = 'Query' AND event_time >= %s ORDER BY event_time", (since,))
    by_thread: dict[int, list[str]] = {}
    for thread, text in cur.fetchall():
        text = " ".join(str(text).split())
        upper = text.upper()
        if upper.startswith("SELECT") and DB.upper() in upper and "INFORMATION_SCHEMA" not in upper:
            text = "SELECT rows"
        elif not upper.startswith(STATEMENTS):
            continue
        seen = by_thread.setdefault(int(thread), [])
        if not (text == "SELECT rows" and seen and seen[-1] == text):
            seen.append(text)
    return [found for found in by_thread.values() if "SELECT rows" in found]


@pytest.fixture(scope="module")
def captured(services, kafka_bootstrap, tmp_path_factory):
    """The corpus through lakeconnect and through each Debezium whose jars are there: their records by topic."""
    missing = [m for m in (jars_present(f) for f in FLAVOURS) if m]
    if missing:
        pytest.fail("; ".join(missing), pytrace=False)
    base = tmp_path_factory.mktemp("debezium-oracle")
    prefix = "oracle" + uuid.uuid4().hex[:8]
    db = Db(services).fresh(DB)
    db(*SETUP)
    config = connector_config(services, **{
        "topic.prefix": prefix, "database.include.list": DB, "table.include.list": rf"{DB}\..*",
        "database.ssl.mode": "disabled",
        # A production config's keys, at the values both sides implement, and a team's own keys.
        **PRODUCTION_KEYS,
        "schema.history.internal.kafka.bootstrap.servers": kafka_bootstrap,
        "topic.creation.default.replication.factor": "1", "topic.creation.default.partitions": "1"})
    timings: dict[str, float] = {}
    workers = {f: ConnectWorker(f, kafka_bootstrap, base / f) for f in FLAVOURS}
    try:
        # The workers start while lakeconnect takes its snapshot: nothing changes the tables until HISTORY.
        t0 = time.monotonic()
        with ThreadPoolExecutor(len(workers)) as pool:
            started = [pool.submit(w.start) for w in workers.values()]
            worker = create(base / "lakeconnect", NAME, config)
            run(worker, NAME)
            variants = {}
            for v, modes in MODE_VARIANTS.items():
                variants[v] = {**config, **modes, "topic.prefix": prefix + v,
                               "table.include.list": rf"{DB}\..*" if v in ALL_TABLES
                               else rf"{DB}\.({VARIANT_TABLES.get(v, 'types')}|marker)"}
                spec = base / f"{NAME}-{v}.json"
                spec.write_text(json.dumps({"name": f"{NAME}-{v}", "config": variants[v]}))
                assert cli_here("connectors", "create", str(spec), worker=worker).returncode == 0
                run(worker, f"{NAME}-{v}")
            timings["lakeconnect snapshot"] = time.monotonic() - t0
            for f in started:
                f.result()
        timings["connect start"] = max(w.started_s for w in workers.values())
        prefixes = {"debezium23": prefix, "debezium3": V3_TOPIC + prefix}
        # The statements of each Debezium snapshot, from the server's general log (its locks, in its order).
        # (no TRUNCATE of the log: the binlog has the statement, which the streams would then read)
        log_from = _server_time(db)
        db("SET GLOBAL log_output = 'TABLE'", "SET GLOBAL general_log = ON")
        for flavour, w in workers.items():
            extra = {"database.server.id": SERVER_IDS[flavour],
                     "schema.history.internal.kafka.topic": f"{prefix}-history-{flavour}"}
            if flavour == "debezium3":
                extra.update({"transforms": "v3",
                              "transforms.v3.type": "org.apache.kafka.connect.transforms.RegexRouter",
                              "transforms.v3.regex": "(.*)", "transforms.v3.replacement": V3_TOPIC + "$1"})
            w.put(NAME, {**config, **extra})
        for v, variant in variants.items():
            workers["debezium23"].put(f"{NAME}-{v}", {**variant, "database.server.id": MODE_SERVER_IDS[v],
                                                      "schema.history.internal.kafka.topic": f"{prefix}-history-{v}"})
        for flavour, w in workers.items():
            w.wait_for(NAME, lambda: _snapshot_done(kafka_bootstrap, prefixes[flavour]), "end of snapshot")
        for v in variants:
            workers["debezium23"].wait_for(f"{NAME}-{v}", lambda: _snapshot_done(kafka_bootstrap, prefix + v),
                                           "end of snapshot")
        timings["snapshots"] = time.monotonic() - t0
        db("SET GLOBAL general_log = OFF")
        snapshot_statements = _snapshot_statements(db.conn.cursor(), log_from)

        db(*HISTORY)
        t0 = time.monotonic()
        run(worker, NAME)
        timings["lakeconnect streaming"] = time.monotonic() - t0
        for v in variants:
            run(worker, f"{NAME}-{v}")
        for flavour, w in workers.items():
            w.wait_for(NAME, lambda: _saw_end_marker(kafka_bootstrap, prefixes[flavour]), "end marker")
        for v in variants:
            workers["debezium23"].wait_for(f"{NAME}-{v}", lambda: _saw_end_marker(kafka_bootstrap, prefix + v),
                                           "end marker")
        timings["streaming"] = time.monotonic() - t0

        lake = base / "lakeconnect" / "lake"
        out = {"prefix": prefix, "lakeconnect": {t: lake_records(lake, t) for t in lake_topics(lake, prefix)},
               "snapshot_statements": snapshot_statements}
        for v in variants:
            out[v] = {"lakeconnect": {t: lake_records(lake, t) for t in lake_topics(lake, prefix + v)},
                      "debezium23": {t: kafka_records(read_topic(kafka_bootstrap, t))
                                     for t in topics(kafka_bootstrap, prefix + v)}}
        for flavour, p in prefixes.items():
            strip = V3_TOPIC if flavour == "debezium3" else ""
            out[flavour] = {t.removeprefix(strip): kafka_records(read_topic(kafka_bootstrap, t), strip)
                            for t in topics(kafka_bootstrap, p)}
        print("\ntimings (s):", {k: round(v, 1) for k, v in timings.items()})
        if os.environ.get(DUMP_ENV):  # to study the records without running the connectors again
            Path(os.environ[DUMP_ENV]).write_text(json.dumps(out, default=lambda b: b.decode(errors="replace")))
        yield out
    finally:
        for w in workers.values():
            w.stop()
        db(f"DROP DATABASE IF EXISTS {DB}")
        db.close()


def _main_corpus(captured) -> list[str]:
    theirs, ours = captured["debezium23"], captured["lakeconnect"]
    n = sum(len(v) for v in theirs.values())
    print(f"\ncompared {n} Debezium 2.3 records on {len(theirs)} topics with lakeconnect's "
          f"{sum(len(v) for v in ours.values())}")
    assert n > 60 and f"{captured['prefix']}.{DB}.types" in theirs
    diffs = differences(theirs, ours)
    return [f"{len(diffs)} differences from Debezium 2.3:"] + diffs[:60] if diffs else []


def _variant(captured, variant: str) -> list[str]:
    """One variant's records: what its keys must show in Debezium's own records, then lakeconnect's equal."""
    theirs, ours = captured[variant]["debezium23"], captured[variant]["lakeconnect"]
    prefix = f"{captured['prefix']}{variant}"
    types = f"{prefix}.{DB}.{VARIANT_TABLES.get(variant, 'types')}"
    modes = MODE_VARIANTS[variant]
    assert types in theirs and len(theirs[types]) > 3, (variant, sorted(theirs))
    if variant in VARIANT_TABLES:  # the truncated table: the truncate event between its rows, without a key
        ops = [(r[2], json.loads(r[3])["payload"]["op"]) for r in theirs[types] if r[3]]
        assert [op for _, op in ops].count("t") == 1 and dict((op, key) for key, op in ops)["t"] is None, ops
    else:
        fields = {f["field"]: f for f in json.loads(theirs[types][0][3])["schema"]["fields"][1]["fields"]}
        if modes.get("decimal.handling.mode") == "string":
            assert fields["de"]["type"] == "string"
        if modes.get("binary.handling.mode", "bytes") != "bytes":
            assert fields["bl"]["type"] == "string"
        if modes.get("bigint.unsigned.handling.mode") == "precise":
            assert fields["biu"]["name"] == "org.apache.kafka.connect.data.Decimal"
        if "column.exclude.list" in modes:
            assert "lt" not in fields and "mb" not in fields and "tx" in fields
        if "skipped.operations" in modes:
            ops = {json.loads(r[3])["payload"]["op"] for r in theirs[types] if r[3]}
            assert ops == {"r", "c"}, ops
        if "snapshot.include.collection.list" in modes:
            assert not [r for r in theirs[types] if r[3] and json.loads(r[3])["payload"]["op"] == "r"]
        if modes.get("time.precision.mode") == "connect":
            assert fields["d"]["name"] == "org.apache.kafka.connect.data.Date" \
                and fields["vc"]["doc"] == "the row''s name"
            assert fields["de"]["parameters"]["__debezium.source.column.type"] == "DECIMAL"
            assert "__debezium.source.column.type" not in fields["c"].get("parameters", {})
        if "snapshot.select.statement.overrides" in modes:
            snapshot = [json.loads(r[3])["payload"] for r in theirs[types] if r[3]]
            assert [p["after"]["id"] for p in snapshot if p["op"] == "r"] == [1, 3, 4]
    if modes.get("provide.transaction.metadata") == "true":
        # BEGIN and END of every transaction the history has, the END with its events' count, by table in
        # the order Debezium's HashMap gives (the corpus has a transaction over three tables)
        marks = [json.loads(r[3])["payload"] for r in theirs[f"{prefix}.transaction"]]
        assert [m["status"] for m in marks[:2]] == ["BEGIN", "END"] and len(marks) > 20
        assert sum(m["event_count"] or 0 for m in marks) > 5
        assert max(len(m["data_collections"] or []) for m in marks) >= 3, marks
        blocks = [json.loads(r[3])["payload"]["transaction"] for r in theirs[types] if r[3]]
        assert any(b and b["total_order"] == 2 for b in blocks)
    if modes.get("include.schema.changes") == "true":
        ddl = [json.loads(r[3])["payload"] for r in theirs[prefix]]
        assert ddl[0]["ddl"].startswith("SET character_set_server=") and ddl[0]["source"]["snapshot"] == "true"
        assert any(d["source"]["snapshot"] == "false" and d["ddl"].startswith("ALTER") for d in ddl)
    print(f"\n{variant} {modes}: compared {sum(len(v) for v in theirs.values())} Debezium 2.3 records on "
          f"{len(theirs)} topics")
    diffs = differences(theirs, ours)
    return [f"{variant} {modes}: {len(diffs)} differences from Debezium 2.3:"] + diffs[:40] if diffs else []


def _snapshot_locks(captured) -> list[str]:
    """Debezium 2.3's snapshots (snapshot.locking.mode=minimal, the default) take their locks with the statements
    this connector runs with lakeconnect.snapshot.position=binlog_status (test_snapshot_locking.py checks
    those in the same general log), in the same order, but for the one difference docs/connectors/mysql-cdc.md
    gives: 2.3 opens no consistent snapshot before UNLOCK TABLES (its JDBC connection's autocommit is off;
    InnoDB's read view opens at the first SELECT of rows, after the lock is gone). Its JDBC commits after the
    schema reads and its second SHOW MASTER STATUS after the rows are left out."""
    found = captured["snapshot_statements"]
    print("\nthe Debezium snapshots' statements:", *sorted({" | ".join(s) for s in found}), sep="\n  ")
    ours = [s.replace("SELECT JSON_ARRAY", "SELECT rows") for s in MINIMAL
            if s not in ("START TRANSACTION WITH CONSISTENT SNAPSHOT", "COMMIT")]
    theirs = [[x for x in s[:s.index("SELECT rows") + 1] if x != "commit"] for s in found]
    # 2.3's connectors (the corpus's and each variant's) are all but one (3.x's) of them
    if len([s for s in theirs if s == ours]) < len(MODE_VARIANTS) + 1:
        return [f"Debezium 2.3's snapshot statements differ from lakeconnect's ({ours}):"] + [str(s) for s in found]
    return []


def _debezium_3(captured) -> None:
    """3.x must have run the whole history; how it differs from 2.3 is printed (docs/connectors/mysql-cdc.md
    keeps it)."""
    v2, v3 = captured["debezium23"], captured["debezium3"]
    assert sorted(v3) == sorted(v2)
    assert {t: len(r) for t, r in v3.items()} == {t: len(r) for t, r in v2.items()}
    diffs = differences(v2, v3)
    print(f"\nDebezium 3.x differs from 2.3 in {len(diffs)} places; the first of each kind:")
    seen = set()
    for d in diffs:
        kind = d.split(" ", 2)[-1].split(":")[0]
        if kind not in seen:
            seen.add(kind)
            print("  ", d[:400])


def test_lakeconnect_writes_what_debezium_writes(captured):
    """The whole corpus, then each variant, against Debezium 2.3, and Debezium 3.x's run of the corpus: one
    test, so that pytest-xdist runs the connectors (the module's fixture) once, on one worker. Every variant is
    compared before the test fails, and the failure lists each one's differences."""
    failures = _main_corpus(captured) + _snapshot_locks(captured)
    for variant in sorted(MODE_VARIANTS, key=lambda v: int(v[1:])):
        failures += _variant(captured, variant)
    _debezium_3(captured)
    assert not failures, "\n".join(failures)
