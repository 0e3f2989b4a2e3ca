"""Columns from the schema history at the server's default row metadata (MariaDB's NO_LOG: the binlog names
no column): DDL in one binlog file changes how the rows of the next decode, in one batch; a connector whose
history is gone, or a statement the history cannot read, stops with the fix and emits nothing."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.conftest import cli_here
from tests.mysql._cdc import Db, connector_config, create, offsets, payloads, run

pytestmark = pytest.mark.history_only

DB = "lc_cdc_history"
TOPIC = f"hist.{DB}.t"


@pytest.fixture
def db(services):
    db = Db(services).fresh(DB)
    db("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20), n INT UNSIGNED)")
    yield db
    db(f"DROP DATABASE IF EXISTS {DB}")
    db.close()


def _config(services, **extra):
    return connector_config(services, **{"topic.prefix": "hist", "database.include.list": DB,
                                         "table.include.list": f"{DB}.t", "snapshot.mode": "schema_only", **extra})


def test_ddl_in_one_binlog_file_decodes_the_rows_of_the_next(tmp_path, services, db, row_metadata):
    assert row_metadata != "FULL"
    worker = create(tmp_path, "cdc", _config(services))
    run(worker, "cdc")  # schema_only: the history from the catalog, no rows
    # The first row's table map is written at FULL and read with the server back at its setting: its names
    # are read from the binlog still (the replication library looks at the server's setting of the moment).
    db("SET GLOBAL binlog_row_metadata=FULL", "INSERT INTO t VALUES (1, 'a', 4294967295)",
       f"SET GLOBAL binlog_row_metadata={row_metadata}",
       # the column order changes, a column is renamed and one added, an ENUM appears: only the history knows
       "ALTER TABLE t CHANGE v label VARCHAR(20) AFTER n, ADD size ENUM('s','m','l') DEFAULT 'm'",
       "INSERT INTO t VALUES (2, 7, 'b', 'l')",
       "FLUSH BINARY LOGS",  # the rows below are in the next file: decoded in parallel with the one above
       "INSERT INTO t (id, n, label) VALUES (3, 8, 'c')",
       "ALTER TABLE t DROP COLUMN n",
       "FLUSH BINARY LOGS",
       "UPDATE t SET size = 's' WHERE id = 3")
    r = run(worker, "cdc")
    assert "decoded again" in r.stderr  # the second and third files, from the model the first one led to
    after = [v["after"] for _, v in payloads(tmp_path / "lake", TOPIC) if v is not None]
    assert after == [
        {"id": 1, "v": "a", "n": 4294967295},
        {"id": 2, "n": 7, "label": "b", "size": "l"},
        {"id": 3, "n": 8, "label": "c", "size": "m"},
        {"id": 3, "label": "c", "size": "s"},
    ]


def test_a_connector_without_its_history_says_how_to_recover(tmp_path, services, db):
    worker = create(tmp_path, "cdc", _config(services))
    run(worker, "cdc")
    db("INSERT INTO t VALUES (1, 'a', 1)")
    before = offsets(worker, "cdc")
    model = tmp_path / "lake" / "_connect" / "mysql" / "cdc" / "schema-model"
    assert model.is_dir()
    shutil.rmtree(model)  # the history is lost
    r = cli_here("run", "cdc", worker=worker)
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert "no schema history at binlog position" in r.stderr and "snapshot.mode=recovery" in r.stderr
    assert offsets(worker, "cdc") == before and not (tmp_path / "lake" / "topics" / TOPIC).exists()
    # As Debezium's recovery mode: the history read from the catalog, then the binlog from the offset.
    config = _config(services, **{"snapshot.mode": "recovery"})
    f = tmp_path / "update.json"
    f.write_text(json.dumps({"name": "cdc", "config": config}))
    assert cli_here("connectors", "update", str(f), worker=worker).returncode == 0
    run(worker, "cdc")
    assert [v["after"] for _, v in payloads(tmp_path / "lake", TOPIC)] == [{"id": 1, "v": "a", "n": 1}]


def test_a_statement_the_history_cannot_read_stops_the_batch_naming_the_table(tmp_path, services, db):
    worker = create(tmp_path, "cdc", _config(services))
    run(worker, "cdc")
    before = offsets(worker, "cdc")
    db("ALTER TABLE t ADD u UUID",  # MariaDB's own type, which Debezium's grammar does not know either
       "INSERT INTO t (id, v, n) VALUES (1, 'a', 1)")
    r = cli_here("run", "cdc", worker=worker)
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert f"rows of {DB}.t cannot be read" in r.stderr and "could not be read" in r.stderr
    assert "binlog_row_metadata=FULL" in r.stderr
    assert offsets(worker, "cdc") == before and not (tmp_path / "lake" / "topics" / TOPIC).exists()


def test_a_table_captured_later_is_missing_from_the_history_until_recovery(tmp_path, services, db):
    db("CREATE TABLE t2 (id BIGINT PRIMARY KEY, s SET('x','y'))")
    worker = create(tmp_path, "cdc", _config(services))
    run(worker, "cdc")  # the history has t only
    db("INSERT INTO t2 VALUES (1, 'x,y')")
    f = tmp_path / "update.json"
    wider = {"table.include.list": f"{DB}.t,{DB}.t2"}
    f.write_text(json.dumps({"name": "cdc", "config": _config(services, **wider)}))
    assert cli_here("connectors", "update", str(f), worker=worker).returncode == 0
    before = offsets(worker, "cdc")
    r = cli_here("run", "cdc", worker=worker)
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert f"rows of {DB}.t2 cannot be read: the schema history does not have the table" in r.stderr
    assert "set snapshot.mode=recovery" in r.stderr and offsets(worker, "cdc") == before
    f.write_text(json.dumps({"name": "cdc", "config": _config(services, **wider, **{"snapshot.mode": "recovery"})}))
    assert cli_here("connectors", "update", str(f), worker=worker).returncode == 0
    r = run(worker, "cdc")
    assert "lacked 1 captured tables" in r.stderr
    assert [v["after"] for _, v in payloads(tmp_path / "lake", f"hist.{DB}.t2")] == [{"id": 1, "s": "x,y"}]


@pytest.mark.parametrize("mode", ["warn", "skip"])
def test_inconsistent_schema_handling_mode_leaves_out_what_the_history_does_not_know(tmp_path, services, db, mode):
    """Debezium's inconsistent.schema.handling.mode: warn and skip leave out the rows of a table whose
    schema the connector does not know (warn says so) and go on; the other tables' events are emitted."""
    db("CREATE TABLE t2 (id BIGINT PRIMARY KEY)")
    worker = create(tmp_path, "cdc", _config(services))
    run(worker, "cdc")  # the history has t only
    f = tmp_path / "update.json"
    f.write_text(json.dumps({"name": "cdc", "config": _config(services, **{
        "table.include.list": f"{DB}.t,{DB}.t2", "inconsistent.schema.handling.mode": mode})}))
    assert cli_here("connectors", "update", str(f), worker=worker).returncode == 0
    db("INSERT INTO t2 VALUES (1)", "INSERT INTO t VALUES (1, 'a', 1)")
    r = run(worker, "cdc")
    warned = f"rows of {DB}.t2 cannot be read" in r.stderr and "inconsistent.schema.handling.mode=warn" in r.stderr
    assert warned == (mode == "warn")
    assert [v["after"] for _, v in payloads(tmp_path / "lake", TOPIC)] == [{"id": 1, "v": "a", "n": 1}]
    assert not (tmp_path / "lake" / "topics" / f"hist.{DB}.t2").exists()
