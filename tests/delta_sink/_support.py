"""Topics of JSON records (JsonConverter with schemas) for the Delta table sink, and its tables read back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from deltalake import DeltaTable

from ingest.config.worker import load_worker
from tests.conftest import write_worker

JSON = "org.apache.kafka.connect.json.JsonConverter"
PREFIX = "dbserver1.inventory.customers"


def field(name: str, type_: str, optional: bool = True, **extra: Any) -> dict:
    return {"type": type_, "optional": optional, "field": name, **extra}


KEY_SCHEMA = {"type": "struct", "optional": False, "name": f"{PREFIX}.Key", "fields": [field("id", "int32", False)]}
ROW_FIELDS = [field("id", "int32", False), field("first_name", "string"), field("email", "string")]
ROW_SCHEMA = {"type": "struct", "optional": True, "name": f"{PREFIX}.Value", "fields": ROW_FIELDS}
SOURCE_SCHEMA = {"type": "struct", "optional": False, "name": "io.debezium.connector.mysql.Source",
                 "fields": [field("connector", "string", False), field("name", "string", False),
                            field("ts_ms", "int64", False), field("db", "string"), field("table", "string"),
                            field("file", "string", False), field("pos", "int64", False)]}
ENVELOPE_SCHEMA = {"type": "struct", "optional": False, "name": f"{PREFIX}.Envelope", "version": 1, "fields": [
    {**ROW_SCHEMA, "field": "before"}, {**ROW_SCHEMA, "field": "after"}, {**SOURCE_SCHEMA, "field": "source"},
    field("op", "string", False), field("ts_ms", "int64")]}


def envelope(op: str, before: dict | None, after: dict | None, pos: int) -> str:
    source = {"connector": "mysql", "name": "dbserver1", "ts_ms": 1700000000000 + pos, "db": "inventory",
              "table": "customers", "file": "mysql-bin.000003", "pos": pos}
    payload = {"before": before, "after": after, "source": source, "op": op, "ts_ms": 1700000000000 + pos}
    return json.dumps({"schema": ENVELOPE_SCHEMA, "payload": payload})


def key(id_: int) -> str:
    return json.dumps({"schema": KEY_SCHEMA, "payload": {"id": id_}})


def struct_value(schema_fields: list[dict], payload: dict, name: str = "orders.Value") -> str:
    return json.dumps({"schema": {"type": "struct", "optional": False, "name": name, "fields": schema_fields},
                       "payload": payload})


def make_worker(root: Path) -> Path:
    lake = root / "lake"
    lake.mkdir(parents=True, exist_ok=True)
    return write_worker(root / "worker.properties", lake)


def worker_of(worker_file: Path):
    from ingest.runtime.worker import Worker

    return Worker(load_worker(str(worker_file)))


def produce(spark, worker_file: Path, topic: str, records: list[tuple[str | None, str | None]], partitions: int = 1,
            version: int = 1) -> None:
    """Append (key, value) JSON texts to `topic` (created with `partitions`), keyed records by murmur2."""
    from ingest.topics import TopicTable

    table = TopicTable(worker_of(worker_file).lake_root, topic)
    table.create(partitions, if_not_exists=True)
    rows = [(None if k is None else k.encode(), None if v is None else v.encode(), i)
            for i, (k, v) in enumerate(records)]
    table.append(spark.createDataFrame(rows, "key binary, value binary, seq long"), app_id=f"test-{topic}",
                 version=version)


def sink_config(name: str = "lake", **extra: str) -> dict:
    return {"name": name, "connector.class": "io.lakeconnect.delta.DeltaTableSinkConnector",
            "key.converter": JSON, "value.converter": JSON, **extra}


def table_rows(worker_file: Path, table: str, drop: tuple[str, ...] = ()) -> list[tuple]:
    """The table's rows, sorted, as tuples of its columns (without `drop`), read by delta-rs (no Spark)."""
    lake = Path(worker_of(worker_file).lake_root)
    data = DeltaTable(str(lake / "tables" / table)).to_pyarrow_table()
    names = [n for n in data.column_names if n not in drop]
    return sorted(tuple(r[n] for n in names) for r in data.select(names).to_pylist())


def table_columns(worker_file: Path, table: str) -> list[str]:
    lake = Path(worker_of(worker_file).lake_root)
    return DeltaTable(str(lake / "tables" / table)).schema().to_arrow().names


ORDER_FIELDS = [field("id", "int32", False), field("product", "string"), field("quantity", "int32")]


def order(id_: int, product: str | None, quantity: int | None, fields: list[dict] = ORDER_FIELDS, **extra) -> str:
    return struct_value(fields, {"id": id_, "product": product, "quantity": quantity, **extra})


def table_version(worker_file: Path, table: str) -> int | None:
    lake = Path(worker_of(worker_file).lake_root)
    path = lake / "tables" / table
    return DeltaTable(str(path)).version() if (path / "_delta_log").exists() else None


def committed_offsets(worker_file: Path, name: str) -> dict[tuple[str, int], int]:
    return {(o["partition"]["kafka_topic"], o["partition"]["kafka_partition"]): o["offset"]["kafka_offset"]
            for o in worker_of(worker_file).offsets(name)}
