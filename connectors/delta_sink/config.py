"""The Delta table sink's configuration: Confluent's JDBC sink keys where they mean the same thing
(`insert.mode`, `pk.mode`, `pk.fields`, `delete.enabled`, `table.name.format`, `auto.evolve`), and
two of our own: where the tables live, and whether Debezium change events are applied."""

from __future__ import annotations

import re
from typing import Any

from ingest.config.configdef import ConfigDef, Importance, Type, ValidString
from ingest.errors import Problem

DELTA_TABLE_PATH = "delta.table.path"
TABLE_NAME_FORMAT = "table.name.format"
INSERT_MODE = "insert.mode"
PK_MODE = "pk.mode"
PK_FIELDS = "pk.fields"
DELETE_ENABLED = "delete.enabled"
AUTO_EVOLVE = "auto.evolve"
DEBEZIUM_UNWRAP = "lakeconnect.debezium.unwrap"

INSERT, UPSERT = "insert", "upsert"
PK_NONE, PK_KAFKA, PK_RECORD_KEY, PK_RECORD_VALUE = "none", "kafka", "record_key", "record_value"
UNWRAP_AUTO, UNWRAP_TRUE, UNWRAP_FALSE = "auto", "true", "false"

TOPIC_VAR = "${topic}"
TABLE_VAR = "${table}"
DEFAULT_TABLES_DIR = "tables"
_VARIABLE = re.compile(r"\$\{([^}]*)\}")

# Confluent JDBC sink's column names for pk.mode=kafka (JdbcSinkConfig.DEFAULT_KAFKA_PK_NAMES), and the
# record timestamp in the same style: the Kafka coordinates every appended row carries.
KAFKA_TOPIC_COLUMN = "__connect_topic"
KAFKA_PARTITION_COLUMN = "__connect_partition"
KAFKA_OFFSET_COLUMN = "__connect_offset"
KAFKA_TIMESTAMP_COLUMN = "__connect_timestamp"
KAFKA_PK_NAMES = (KAFKA_TOPIC_COLUMN, KAFKA_PARTITION_COLUMN, KAFKA_OFFSET_COLUMN)


def config_def() -> ConfigDef:
    return (
        ConfigDef()
        .define(DELTA_TABLE_PATH, Type.STRING, None, importance=Importance.HIGH, group="Table",
                doc="Where each topic's Delta table is: a path or URI, with `${table}` (the name from "
                    "table.name.format) and `${topic}` (the record's topic) replaced per record. Default: "
                    "`<lake root>/tables/${table}`. Tables are created on their first write.")
        .define(TABLE_NAME_FORMAT, Type.STRING, TOPIC_VAR, importance=Importance.MEDIUM, group="Table",
                doc="A format string for the destination table name, which may contain '${topic}' as a "
                    "placeholder for the originating topic name. For example, `kafka_${topic}` for the topic "
                    "'orders' will map to the table name 'kafka_orders'.")
        .define(INSERT_MODE, Type.STRING, INSERT, ValidString.of(INSERT, UPSERT, case_insensitive=True),
                Importance.HIGH, group="Writes",
                doc="The insertion mode to use. `insert`: append every record as a row, with its Kafka "
                    "coordinates (__connect_topic, __connect_partition, __connect_offset, "
                    "__connect_timestamp). `upsert`: keep one row per primary key (pk.mode), the one of the "
                    "key's latest record (a Delta MERGE per batch); deletes as delete.enabled and Debezium "
                    "envelopes say.")
        .define(PK_MODE, Type.STRING, PK_NONE,
                ValidString.of(PK_NONE, PK_KAFKA, PK_RECORD_KEY, PK_RECORD_VALUE, case_insensitive=True),
                Importance.HIGH, group="Data Mapping",
                doc="The primary key mode. `none`: no key. `kafka`: the Kafka coordinates (__connect_topic, "
                    "__connect_partition, __connect_offset). `record_key`: field(s) of the record key (a "
                    "primitive key is one column named by pk.fields). `record_value`: field(s) of the value.")
        .define(PK_FIELDS, Type.LIST, "", importance=Importance.MEDIUM, group="Data Mapping",
                doc="List of comma-separated primary key field names. pk.mode=kafka: three names for the "
                    "topic, partition and offset columns (default __connect_topic,__connect_partition,"
                    "__connect_offset). record_key: the key's fields to use (empty: all of them); a primitive "
                    "key needs exactly one name, its column's. record_value: the value's fields (empty: all).")
        .define(DELETE_ENABLED, Type.BOOLEAN, False, importance=Importance.MEDIUM, group="Writes",
                doc="Whether to treat null record values (tombstones) as deletes of their key. Requires "
                    "pk.mode=record_key and insert.mode=upsert.")
        .define(AUTO_EVOLVE, Type.BOOLEAN, False, importance=Importance.MEDIUM, group="DDL Support",
                doc="Whether to add a nullable column to the table when a record has a field the table "
                    "lacks. A field whose type changes is refused either way (Delta columns keep their type).")
        .define(DEBEZIUM_UNWRAP, Type.STRING, UNWRAP_AUTO,
                ValidString.of(UNWRAP_AUTO, UNWRAP_TRUE, UNWRAP_FALSE, case_insensitive=True),
                Importance.MEDIUM, group="Data Mapping",
                doc="Apply Debezium change events (a value struct named `*.Envelope` with before, after, "
                    "source and op). `auto`: in upsert mode, op c/r/u upserts `after`, d deletes the key, "
                    "tombstones are skipped (or delete the key with delete.enabled=true); in insert mode the "
                    "envelopes are appended as they are (a change log). `true`: also in insert mode, "
                    "appending `after` (c/r/u) or `before` (d) with a `__deleted` flag. `false`: envelopes "
                    "are ordinary structs.")
    )


def check(values: dict[str, Any]) -> list[Problem]:
    """What the connector refuses beyond single keys, each problem with its fix."""
    problems: list[Problem] = []
    mode = (values.get(INSERT_MODE) or INSERT).lower()
    pk_mode = (values.get(PK_MODE) or PK_NONE).lower()
    pk_fields = values.get(PK_FIELDS) or []
    if mode == UPSERT and pk_mode == PK_NONE:
        problems.append(Problem(PK_MODE, "insert.mode=upsert needs a primary key: set pk.mode=record_key "
                                         "(Debezium topics), record_value (with pk.fields) or kafka"))
    if values.get(DELETE_ENABLED) and pk_mode != PK_RECORD_KEY:
        problems.append(Problem(DELETE_ENABLED, "delete.enabled=true deletes by the record key: it needs "
                                                "pk.mode=record_key"))
    if values.get(DELETE_ENABLED) and mode != UPSERT:
        problems.append(Problem(DELETE_ENABLED, "delete.enabled=true needs insert.mode=upsert (an appended "
                                                "table keeps every record)"))
    if pk_mode == PK_KAFKA and pk_fields and len(pk_fields) != 3:
        problems.append(Problem(PK_FIELDS, f"pk.mode=kafka takes three names (topic, partition and offset "
                                           f"columns) or none, not {len(pk_fields)}"))
    if pk_mode == PK_NONE and pk_fields:
        problems.append(Problem(PK_FIELDS, "pk.fields is set but pk.mode=none ignores it; set pk.mode"))
    if len(set(pk_fields)) != len(pk_fields):
        problems.append(Problem(PK_FIELDS, f"names a field twice: {pk_fields}"))
    for key in (TABLE_NAME_FORMAT, DELTA_TABLE_PATH):
        text = values.get(key)
        if text is None:
            continue
        allowed = ("topic",) if key == TABLE_NAME_FORMAT else ("topic", "table")
        unknown = [v for v in _VARIABLE.findall(text) if v not in allowed]
        if unknown:
            problems.append(Problem(key, f"unknown placeholder(s) {['${' + v + '}' for v in unknown]}; "
                                         f"only {', '.join('${' + a + '}' for a in allowed)}"))
        if not text.strip():
            problems.append(Problem(key, "must not be empty"))
    name = values.get(TABLE_NAME_FORMAT) or ""
    if name.strip() in (".", ".."):
        problems.append(Problem(TABLE_NAME_FORMAT, f"'{name.strip()}' is not a table name"))
    if "/" in name:
        problems.append(Problem(TABLE_NAME_FORMAT, "a table name must not contain '/'; put directories in "
                                                   "delta.table.path"))
    return problems


def table_name(fmt: str, topic: str) -> str:
    return fmt.replace(TOPIC_VAR, topic)


def table_dir(path_template: str) -> str:
    """The directory every table of `path_template` is in or below: its text before the first placeholder,
    up to its last '/' when a placeholder follows within a name (`/data/t_${table}` -> `/data`)."""
    prefix = path_template.split("${", 1)[0]
    if prefix == path_template or prefix.endswith("/"):
        return prefix
    return prefix.rsplit("/", 1)[0] if "/" in prefix else "."


def table_uri(path_template: str | None, lake_root: str, table: str, topic: str) -> str:
    template = path_template or f"{lake_root.rstrip('/')}/{DEFAULT_TABLES_DIR}/{TABLE_VAR}"
    return template.replace(TABLE_VAR, table).replace(TOPIC_VAR, topic)
