"""DDL in the binlog: events before and after an ALTER (in one batch) carry the columns of their moment;
schema change events (with Debezium's `tableChanges`: each changed table's structure after the statement)
and the schema history table record each DDL once; heartbeats move the offsets on when only uncaptured
tables changed."""

from __future__ import annotations

import json

import pytest
from deltalake import DeltaTable

from tests.crash_kit import kill_at_each_step
from tests.mysql._cdc import Db, connector_config, create, offsets, payloads, records, run

pytestmark = pytest.mark.both_row_metadata  # NO_LOG (the server's default), then FULL: conftest.py

DB = "lc_cdc_ddl"
TOPIC = f"ddl.{DB}.t"

# Debezium 2.3's io.debezium.connector.schema.Column/Table/Change (ConnectTableChangeSerializer), in order.
COLUMN_FIELDS = ["name", "jdbcType", "nativeType", "typeName", "typeExpression", "charsetName", "length", "scale",
                 "position", "optional", "autoIncremented", "generated", "comment", "defaultValueExpression",
                 "enumValues"]
TABLE_FIELDS = ["defaultCharsetName", "primaryKeyColumnNames", "columns", "comment"]
CHANGE_FIELDS = ["type", "id", "table"]


def column(name: str, position: int, type_name: str, jdbc_type: int, *, length: int | None = None,
           scale: int | None = None, charset: str | None = None, optional: bool = True, auto: bool = False,
           default: str | None = None, enum: list[str] | None = None) -> dict:
    """A column of a tableChanges structure as Debezium's MySQL connector writes it: typeExpression is the
    typeName, nativeType and comment are null (include.schema.comments is off), an AUTO_INCREMENT column
    is also `generated`."""
    return {"name": name, "jdbcType": jdbc_type, "nativeType": None, "typeName": type_name,
            "typeExpression": type_name, "charsetName": charset, "length": length, "scale": scale,
            "position": position, "optional": optional, "autoIncremented": auto, "generated": auto, "comment": None,
            "defaultValueExpression": default, "enumValues": enum}


def table(pk: list[str], *columns: dict, charset: str = "utf8mb4") -> dict:
    return {"defaultCharsetName": charset, "primaryKeyColumnNames": pk, "columns": list(columns), "comment": None}


@pytest.fixture
def db(services):
    db = Db(services).fresh(DB)
    db("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20))", "CREATE TABLE other (id INT PRIMARY KEY)")
    yield db
    db(f"DROP DATABASE IF EXISTS {DB}")
    db.close()


def test_alters_in_one_batch_schema_changes_history_and_heartbeats(tmp_path, services, db):
    worker = create(tmp_path, "cdc", connector_config(services, **{
        "topic.prefix": "ddl", "database.include.list": DB, "table.include.list": f"{DB}.t",
        "snapshot.mode": "schema_only", "include.schema.changes": "true", "heartbeat.interval.ms": "1000"}))
    run(worker, "cdc")  # schema_only: from the binlog's end, no rows
    lake = tmp_path / "lake"
    db("INSERT INTO t VALUES (1, 'a')",
       "ALTER TABLE t ADD COLUMN n INT NOT NULL DEFAULT 7",
       "INSERT INTO t VALUES (2, 'b', 8)",
       "ALTER TABLE t CHANGE COLUMN v title VARCHAR(40), DROP COLUMN n",
       "UPDATE t SET title = 'bb' WHERE id = 2")
    # Killed after the write: the resumed batch records the history and the events once.
    kill_at_each_step(worker, "cdc", ["write"])
    run(worker, "cdc")

    events = [v for _, v in payloads(lake, TOPIC)]
    assert [(e["op"], e["after"]) for e in events] == [
        ("c", {"id": 1, "v": "a"}), ("c", {"id": 2, "v": "b", "n": 8}), ("u", {"id": 2, "title": "bb"})]
    assert events[2]["before"] == {"id": 2, "title": "b"}
    schemas = [json.loads(v)["schema"]["fields"][1]["fields"] for _, v in records(lake, TOPIC)]
    assert [[f["field"] for f in s] for s in schemas] == [["id", "v"], ["id", "v", "n"], ["id", "title"]]

    # schema_only: the snapshot's own schema change events first, as Debezium's (the server's charset, the
    # database's two tables dropped, the database dropped, created and used, its tables created)
    snapshot = [v["ddl"].split("(")[0].strip() for _, v in payloads(lake, "ddl") if v["source"]["snapshot"] == "true"]
    assert snapshot[1:] == [f"DROP TABLE IF EXISTS `{DB}`.`other`", f"DROP TABLE IF EXISTS `{DB}`.`t`",
                            f"DROP DATABASE IF EXISTS `{DB}`", f"CREATE DATABASE `{DB}` CHARSET utf8mb4 COLLATE "
                            "utf8mb4_general_ci", f"USE `{DB}`", "CREATE TABLE `other`", "CREATE TABLE `t`"], snapshot
    assert snapshot[0].startswith("SET character_set_server=")
    changes = [(k["databaseName"], v["ddl"], v["tableChanges"]) for k, v in payloads(lake, "ddl")
               if v["source"]["snapshot"] == "false"]
    assert [c[1].split()[0:2] for c in changes] == [["ALTER", "TABLE"], ["ALTER", "TABLE"]]
    assert changes[0][0] == DB
    # The table as Debezium has it after each ALTER: t came from the snapshot's SHOW CREATE TABLE
    # (`id` int(11) NOT NULL, `v` varchar(20) DEFAULT NULL, PRIMARY KEY (`id`), DEFAULT CHARSET=utf8mb4).
    ident = column("id", 1, "INT", 4, length=11, optional=False)
    # The first ALTER is not the batch's last on t: its structure is the binlog's table map that follows
    # it, which has no character lengths nor defaults. Debezium has `v` length 20 and `n` default "7"
    # (`n INT` as the statement spells it: no length, in Debezium too); `id` is as the catalog has it.
    assert changes[0][2] == [{"type": "ALTER", "id": f'"{DB}"."t"', "table": table(
        ["id"], ident, column("v", 2, "VARCHAR", 12, charset="utf8mb4"), column("n", 3, "INT", 4, optional=False))}]
    # The second is the last: the server's catalog, as Debezium has it exactly.
    assert changes[1][2] == [{"type": "ALTER", "id": f'"{DB}"."t"', "table": table(
        ["id"], ident, column("title", 2, "VARCHAR", 12, length=40, charset="utf8mb4"))}]
    history = DeltaTable(str(lake / "_connect" / "mysql" / "cdc" / "schema-history")).to_pyarrow_table().to_pylist()
    assert [h["ddl"] for h in history] == [c[1] for c in changes]
    assert all(h["file"] and h["pos"] > 0 for h in history)

    # Only an uncaptured table changes: the offset still moves on, with a heartbeat.
    before = offsets(worker, "cdc")[0]["offset"]
    db("INSERT INTO other VALUES (1)")
    run(worker, "cdc")
    after = offsets(worker, "cdc")[0]["offset"]
    assert (after["file"], after["pos"]) > (before["file"], before["pos"])
    beats = payloads(lake, "__debezium-heartbeat.ddl")
    assert len(beats) == 2 and beats[-1][0] == {"serverName": "ddl"} and beats[-1][1]["ts_ms"] > 0
    assert len(records(lake, TOPIC)) == 3


TC_DB = "lc_cdc_tablechanges"


@pytest.fixture
def tc_db(services):
    db = Db(services).fresh(TC_DB)
    db("CREATE TABLE old (id INT PRIMARY KEY)", "CREATE TABLE temp (id INT PRIMARY KEY, label VARCHAR(10))")
    yield db
    db(f"DROP DATABASE IF EXISTS {TC_DB}")
    db.close()


def test_table_changes_of_create_rename_truncate_and_drop(tmp_path, services, tc_db):
    worker = create(tmp_path, "tc", connector_config(services, **{
        "topic.prefix": "tc", "database.include.list": TC_DB, "table.include.list": f"{TC_DB}.items",
        "snapshot.mode": "schema_only", "include.schema.changes": "true"}))
    run(worker, "tc")
    lake = tmp_path / "lake"
    # Types spelled as the server prints them (SHOW CREATE TABLE): Debezium parses the statement itself,
    # so this is where its description and the catalog's agree to the letter.
    tc_db("""CREATE TABLE items (
               id int(10) unsigned NOT NULL AUTO_INCREMENT,
               code char(3) NOT NULL DEFAULT 'abc',
               name varchar(40) CHARACTER SET latin1 DEFAULT NULL,
               price decimal(8,2) NOT NULL DEFAULT 0.00,
               state enum('new','old') NOT NULL DEFAULT 'new',
               tags set('a','b','c') DEFAULT NULL,
               born datetime(3) DEFAULT NULL,
               flag bit(1) DEFAULT NULL,
               note text DEFAULT NULL,
               PRIMARY KEY (id)
             ) DEFAULT CHARSET=utf8mb4""",
          "INSERT INTO items (code, name) VALUES ('xyz', 'first')",
          "RENAME TABLE temp TO temp2",
          "TRUNCATE TABLE temp2",
          "DROP TABLE old")
    run(worker, "tc")

    events = payloads(lake, f"tc.{TC_DB}.items")
    assert [(e["op"], e["after"]["id"], e["after"]["code"]) for _, e in events] == [("c", 1, "xyz")]
    found = [(v["ddl"].split()[0], v["tableChanges"]) for _, v in payloads(lake, "tc")
             if v["source"]["snapshot"] == "false"]
    assert [kind for kind, _ in found] == ["CREATE", "RENAME", "TRUNCATE", "DROP"]
    assert found[0][1] == [{"type": "CREATE", "id": f'"{TC_DB}"."items"', "table": table(
        ["id"],
        column("id", 1, "INT UNSIGNED", 4, length=10, optional=False, auto=True),
        column("code", 2, "CHAR", 1, length=3, charset="utf8mb4", optional=False, default="abc"),
        column("name", 3, "VARCHAR", 12, length=40, charset="latin1"),
        column("price", 4, "DECIMAL", 3, length=8, scale=2, optional=False, default="0.00"),
        column("state", 5, "ENUM", 1, length=1, charset="utf8mb4", optional=False, default="new",
               enum=["'new'", "'old'"]),
        column("tags", 6, "SET", 1, length=5, charset="utf8mb4", enum=["'a'", "'b'", "'c'"]),
        column("born", 7, "DATETIME", 93, length=3),
        column("flag", 8, "BIT", -7, length=1),
        column("note", 9, "TEXT", 12, charset="utf8mb4"))}]
    # RENAME TABLE is an ALTER of the new name, with the table as it was (from the snapshot: int(11)).
    assert found[1][1] == [{"type": "ALTER", "id": f'"{TC_DB}"."temp2"', "table": table(
        ["id"], column("id", 1, "INT", 4, length=11, optional=False),
        column("label", 2, "VARCHAR", 12, length=10, charset="utf8mb4"))}]
    # TRUNCATE changes no structure; a dropped table has left Debezium's model when the event is made.
    assert found[2][1] == [] and found[3][1] == []

    schema = json.loads(records(lake, "tc")[0][1])["schema"]
    change = next(f for f in schema["fields"] if f["field"] == "tableChanges")
    assert (change["type"], change["optional"], change["items"]["name"]) == (
        "array", False, "io.debezium.connector.schema.Change")
    assert [f["field"] for f in change["items"]["fields"]] == CHANGE_FIELDS
    structure = change["items"]["fields"][2]
    assert (structure["name"], structure["optional"]) == ("io.debezium.connector.schema.Table", False)
    assert [f["field"] for f in structure["fields"]] == TABLE_FIELDS
    columns = structure["fields"][2]["items"]
    assert columns["name"] == "io.debezium.connector.schema.Column"
    assert [(f["field"], f["type"], f["optional"]) for f in columns["fields"]] == list(zip(COLUMN_FIELDS, [
        "string", "int32", "int32", "string", "string", "string", "int32", "int32", "int32", "boolean", "boolean",
        "boolean", "string", "string", "array"], [False, False, True, False, True, True, True, True, False, True,
                                                  True, True, True, True, True]))
