"""Debezium change events: applied in upsert mode (c/r/u upsert `after`, d deletes, tombstones skipped),
appended as a change log in insert mode."""

from __future__ import annotations

from tests.delta_sink._support import (
    envelope, key, produce, sink_config, table_columns, table_rows, worker_of,
)

UPSERT = {"insert.mode": "upsert", "pk.mode": "record_key"}


def row(id_: int, name: str, email: str | None = None) -> dict:
    return {"id": id_, "first_name": name, "email": email or f"{name.lower()}@example.com"}


def change(op: str, before: dict | None, after: dict | None, pos: int) -> tuple[str, str]:
    return key((before or after)["id"]), envelope(op, before, after, pos)


def delete(old: dict, pos: int) -> list[tuple[str, str | None]]:
    """A delete as Debezium emits it: the d event, then a tombstone for the key."""
    return [change("d", old, None, pos), (key(old["id"]), None)]


SNAPSHOT = [change("r", None, row(i, n), i) for i, n in enumerate(["Sally", "George", "Edward", "Anne"], 1001)]
FIRST = [
    *SNAPSHOT,
    change("c", None, row(1005, "Kim"), 10),
    change("u", row(1002, "George"), row(1002, "George", "gb@example.com"), 11),
    *delete(row(1003, "Edward"), 12),
    change("u", row(1002, "George", "gb@example.com"), row(1002, "Georg", "gb@example.com"), 13),
]
SECOND = [
    # the primary key of 1004 changes to 1040: a delete of the old key, then a create of the new one
    *delete(row(1004, "Anne"), 20),
    change("c", None, row(1040, "Anne"), 21),
    change("u", row(1005, "Kim"), row(1005, "Kimberly"), 22),
    change("c", None, row(1006, "Temp"), 23),
    *delete(row(1006, "Temp"), 24),  # created and deleted in one batch
    change("c", None, row(1003, "Edward", "back@example.com"), 25),  # deleted in batch 1, created again
]


def test_change_events_give_the_current_rows(spark, worker_file):
    produce(spark, worker_file, "dbserver1.inventory.customers", FIRST, partitions=3)
    worker = worker_of(worker_file)
    worker.create("lake", sink_config(topics="dbserver1.inventory.customers",
                                      **{**UPSERT, "table.name.format": "customers"}))
    worker.run("lake")
    assert table_columns(worker_file, "customers") == ["id", "first_name", "email"]
    assert table_rows(worker_file, "customers") == [
        (1001, "Sally", "sally@example.com"), (1002, "Georg", "gb@example.com"), (1004, "Anne", "anne@example.com"),
        (1005, "Kim", "kim@example.com")]

    produce(spark, worker_file, "dbserver1.inventory.customers", SECOND, partitions=3, version=2)
    worker.run("lake")
    assert table_rows(worker_file, "customers") == [
        (1001, "Sally", "sally@example.com"), (1002, "Georg", "gb@example.com"),
        (1003, "Edward", "back@example.com"), (1005, "Kimberly", "kimberly@example.com"),
        (1040, "Anne", "anne@example.com")]


def test_insert_mode_keeps_the_change_log(spark, worker_file):
    produce(spark, worker_file, "customers", FIRST)
    worker = worker_of(worker_file)
    worker.create("log", sink_config("log", topics="customers", **{"table.name.format": "log_${topic}"}))
    worker.create("flat", sink_config("flat", topics="customers", **{
        "table.name.format": "flat_${topic}", "lakeconnect.debezium.unwrap": "true"}))
    worker.run("log")
    worker.run("flat")
    log = table_dicts(worker_file, "log_customers")
    assert list(log[0])[:5] == ["before", "after", "source", "op", "ts_ms"]
    assert [r["op"] for r in log] == ["r", "r", "r", "r", "c", "u", "d", "u"]
    assert log[6]["before"]["id"] == 1003 and log[6]["after"] is None
    flat = table_dicts(worker_file, "flat_customers")
    assert list(flat[0])[:4] == ["id", "first_name", "email", "__deleted"]
    assert [(r["id"], r["first_name"], r["__deleted"]) for r in flat] == [
        (1001, "Sally", False), (1002, "George", False), (1003, "Edward", False), (1004, "Anne", False),
        (1005, "Kim", False), (1002, "George", False), (1003, "Edward", True), (1002, "Georg", False)]


def table_dicts(worker_file, table: str) -> list[dict]:
    """The rows of an appended table, in offset order (one partition)."""
    from deltalake import DeltaTable

    rows = DeltaTable(str(worker_of(worker_file).lake_root) + f"/tables/{table}").to_pyarrow_table().to_pylist()
    return sorted(rows, key=lambda r: r["__connect_offset"])
