"""Debezium's ExtractNewRecordState and ByLogicalTableRouter, ported from Debezium 2.3's
ExtractNewRecordStateTest and ByLogicalTableRouterTest (same inputs, same outputs), plus the MSK
re-routing setup (every table's events to one topic, the physical table in the key), mixed batches,
tombstones, non-envelope events and configuration errors."""

from __future__ import annotations

import pytest

from connectors.predicates import TopicNameMatches
from connectors.transforms.debezium import ByLogicalTableRouter, ExtractNewRecordState, adjust_schema_name
from ingest.errors import ConfigError
from ingest.records.schema import (
    INT8_SCHEMA, INT32_SCHEMA, INT64_SCHEMA, OPTIONAL_INT32_SCHEMA, OPTIONAL_INT64_SCHEMA, OPTIONAL_STRING_SCHEMA,
    STRING_SCHEMA, ConnectSchema, struct,
)
from tests.converters.helpers import assert_no_python
from tests.transforms.helpers import SCHEMALESS, apply, apply_one, batch_of, make, records, schema

# --- Debezium-shaped change events ---------------------------------------------------------------------

ROW = struct("dummy.Value", ("id", INT8_SCHEMA),
             ("name", ConnectSchema("string", optional=True, default="default_str")), optional=True)
SOURCE = struct("io.debezium.connector.postgresql.Source", ("lsn", OPTIONAL_INT32_SCHEMA),
                ("ts_ms", OPTIONAL_INT64_SCHEMA), ("db", OPTIONAL_STRING_SCHEMA), ("table", OPTIONAL_STRING_SCHEMA))
TRANSACTION = struct("event.block", ("id", STRING_SCHEMA), ("total_order", INT64_SCHEMA),
                     ("data_collection_order", INT64_SCHEMA), optional=True, version=1)


def envelope(name: str, row: ConnectSchema = ROW) -> ConnectSchema:
    return struct(name, ("before", row), ("after", row), ("source", SOURCE), ("op", STRING_SCHEMA),
                  ("ts_ms", OPTIONAL_INT64_SCHEMA), ("transaction", TRANSACTION))


ENVELOPE = envelope("dummy.Envelope")
SRC = {"lsn": 1234, "ts_ms": 1588252618953, "db": "test_db", "table": "test_table"}
TXN = {"id": "571", "total_order": 42, "data_collection_order": 42}


def event(op, before=None, after=None, transaction=None, topic="dummy", headers=None):
    return {"topic": topic, "headers": headers,
            "value": {"before": before, "after": after, "source": SRC, "op": op, "ts_ms": 1588252619000,
                      "transaction": transaction}}


CREATE = event("c", after={"id": 1, "name": "myRecord"})
UPDATE = event("u", before={"id": 1, "name": "myRecord"}, after={"id": 1, "name": "updatedRecord"}, transaction=TXN)
DELETE = event("d", before={"id": 1, "name": "myRecord"})
READ = event("r", after={"id": 2, "name": None})
TRUNCATE = event("t")
TOMBSTONE = {"topic": "dummy", "value": None}


def unwrapped(*extra) -> ConnectSchema:
    """Debezium's value schema: a required copy of the row schema, plus the added fields."""
    return struct("dummy.Value", ("id", INT8_SCHEMA), ("name", ConnectSchema("string", optional=True,
                                                                            default="default_str")), *extra)


def unwrap(spark, events, **settings):
    batch = batch_of(spark, events, value_schema=ENVELOPE)
    return apply_one(make(ExtractNewRecordState, settings), batch)


# --- ExtractNewRecordState -------------------------------------------------------------------------------


def test_defaults_unwrap_changes_and_drop_deletes_tombstones_truncates(spark):
    out = unwrap(spark, [CREATE, UPDATE, DELETE, TOMBSTONE, TRUNCATE, READ])
    assert [r["value"] for r in records(out)] == [
        {"id": 1, "name": "myRecord"}, {"id": 1, "name": "updatedRecord"}, {"id": 2, "name": None}]
    assert schema(out) == unwrapped()
    assert_no_python(out.df)


def test_rewrite_mode_keeps_deletes_with_deleted_flag(spark):
    out = unwrap(spark, [CREATE, DELETE, TOMBSTONE], **{
        "delete.handling.mode": "rewrite", "drop.tombstones": "false", "add.headers": "op"})
    create, delete, tombstone = records(out)
    assert create["value"] == {"id": 1, "name": "myRecord", "__deleted": "false"}
    assert create["headers"] == [("__op", "c")]
    assert delete["value"] == {"id": 1, "name": "myRecord", "__deleted": "true"}
    assert delete["headers"] == [("__op", "d")]
    assert tombstone["value"] is None and tombstone["headers"] == [("__op", "d")]
    assert schema(out) == unwrapped(("__deleted", OPTIONAL_STRING_SCHEMA))


def test_none_mode_turns_deletes_into_tombstones(spark):
    out = unwrap(spark, [CREATE, DELETE, TOMBSTONE], **{"delete.handling.mode": "none"})
    assert [r["value"] for r in records(out)] == [{"id": 1, "name": "myRecord"}, None]


def test_add_fields_with_prefix(spark):
    out = unwrap(spark, [UPDATE, CREATE], **{"add.fields": "op , lsn,id", "add.fields.prefix": "prefix."})
    update, create = records(out)
    assert update["value"] == {"id": 1, "name": "updatedRecord", "prefix.op": "u", "prefix.lsn": 1234,
                               "prefix.id": "571"}
    # testAddFieldsForMissingOptionalField: no transaction block, so no id
    assert create["value"] == {"id": 1, "name": "myRecord", "prefix.op": "c", "prefix.lsn": 1234, "prefix.id": None}
    assert schema(out) == unwrapped(("prefix.op", OPTIONAL_STRING_SCHEMA), ("prefix.lsn", OPTIONAL_INT32_SCHEMA),
                                    ("prefix.id", OPTIONAL_STRING_SCHEMA))


def test_new_field_and_header_mapping(spark):
    out = unwrap(spark, [UPDATE], **{
        "add.fields": "op:OP, lsn:LSN, id:ID, source.lsn:source_lsn, transaction.total_order:TOTAL_ORDER",
        "add.fields.prefix": "",
        "add.headers": "op, source.lsn:source_lsn, transaction.id:TXN_ID, transaction.total_order:TOTAL_ORDER",
        "add.headers.prefix": "prefix."})
    (rec,) = records(out)
    assert rec["value"] == {"id": 1, "name": "updatedRecord", "OP": "u", "LSN": 1234, "ID": "571",
                            "source_lsn": 1234, "TOTAL_ORDER": 42}
    assert rec["headers"] == [("prefix.op", "u"), ("prefix.source_lsn", "1234"), ("prefix.TXN_ID", "571"),
                              ("prefix.TOTAL_ORDER", "42")]
    assert schema(out).field("TOTAL_ORDER").schema == OPTIONAL_INT64_SCHEMA


def test_add_source_timestamps_and_keep_existing_headers(spark):
    create = {**CREATE, "headers": [("application/debezium-test-header", "shouldPropagatePreviousRecordHeaders")]}
    out = unwrap(spark, [create], **{"add.fields": "ts_ms,source.ts_ms,table,db", "add.headers": "source.ts_ms"})
    (rec,) = records(out)
    assert rec["value"] == {"id": 1, "name": "myRecord", "__ts_ms": 1588252619000,
                            "__source_ts_ms": 1588252618953, "__table": "test_table", "__db": "test_db"}
    assert rec["headers"] == [("application/debezium-test-header", "shouldPropagatePreviousRecordHeaders"),
                              ("__source_ts_ms", "1588252618953")]


def test_unknown_added_field_fails_the_records_that_reach_it(spark):
    out = unwrap(spark, [CREATE, DELETE], **{"add.fields": "op,nope"})
    (create,) = records(out)  # the delete is dropped before Debezium adds fields
    assert create["error"] == "Unexpected field name: nope"


def test_route_by_field(spark):
    row = struct("dummy.Value", ("id", INT8_SCHEMA), ("dest", OPTIONAL_STRING_SCHEMA), optional=True)
    events = [event("c", after={"id": 1, "dest": "elsewhere"}), event("c", after={"id": 2, "dest": None}),
              event("d", before={"id": 3, "dest": "gone"})]
    batch = batch_of(spark, events, value_schema=envelope("dummy.Envelope", row))
    out = records(apply_one(make(ExtractNewRecordState, {"route.by.field": "dest", "delete.handling.mode": "none"}),
                            batch))
    assert [(r["topic"], r["value"]) for r in out] == [
        ("elsewhere", {"id": 1, "dest": "elsewhere"}), ("dummy", {"id": 2, "dest": None}), ("gone", None)]
    missing = records(apply_one(make(ExtractNewRecordState, {"route.by.field": "zz"}), batch))
    assert [r["error"] for r in missing] == ["zz is not a valid field name"] * 3


def test_records_that_are_not_envelopes_pass_unchanged(spark):
    unknown = struct("unknown", ("id", INT8_SCHEMA))
    heartbeat = struct("io.debezium.connector.common.Heartbeat", ("ts_ms", INT64_SCHEMA))
    for value_schema, value in ((unknown, {"id": 1}), (struct(None, ("id", INT8_SCHEMA)), {"id": 1}),
                                (heartbeat, {"ts_ms": 5})):
        out = apply_one(make(ExtractNewRecordState, {}), batch_of(spark, [{"value": value}], value_schema=value_schema))
        assert [r["value"] for r in records(out)] == [value] and schema(out) == value_schema
    schemaless = batch_of(spark, [{"value": {"before": None, "after": {"id": 1}, "op": "c"}}, {"value": None}])
    out = apply_one(make(ExtractNewRecordState, {}), schemaless)
    assert [r["value"] for r in records(out)] == [{"before": None, "after": {"id": 1}, "op": "c"}]


def test_unwrap_scoped_by_a_predicate(spark):
    batch = batch_of(spark, [CREATE, {**CREATE, "topic": "other"}, {**DELETE, "topic": "other"}], value_schema=ENVELOPE)
    out = apply(make(ExtractNewRecordState, {}), batch, make(TopicNameMatches, {"pattern": "dummy"}))
    unwrapped_batch, untouched = out
    assert [r["value"] for r in records(unwrapped_batch)] == [{"id": 1, "name": "myRecord"}]
    assert schema(unwrapped_batch) == unwrapped()
    assert [r["value"]["op"] for r in records(untouched)] == ["c", "d"] and schema(untouched) == ENVELOPE


@pytest.mark.parametrize("settings,key", [
    ({"delete.handling.mode": "keep"}, "delete.handling.mode"),
    ({"add.fields": "op:a:b"}, "add.fields"),
    ({"add.headers": "source.lsn:x:y"}, "add.headers"),
    ({"drop.tombstones": "maybe"}, "drop.tombstones"),
])
def test_extract_new_record_state_config_errors(settings, key):
    with pytest.raises(ConfigError, match=key):
        make(ExtractNewRecordState, settings)


# --- ByLogicalTableRouter --------------------------------------------------------------------------------

SHARD_KEY = struct("mysql-server-1.inventory.customers_shard_1.Key", ("id", INT64_SCHEMA))
SHARDS = {"topic.regex": "(.*)customers_shard(.*)", "topic.replacement": "$1customers_all_shards",
          "key.field.name": "shard_id", "key.field.regex": "(.*)customers_shard_(.*)", "key.field.replacement": "$2"}


@pytest.mark.parametrize("mode,key_name", [("avro", "mysql_server_1.inventory.customers_all_shards.Key"),
                                           ("none", "mysql-server-1.inventory.customers_all_shards.Key")])
def test_key_replacement_working_configuration(spark, mode, key_name):
    batch = batch_of(spark, [
        {"topic": "mysql-server-1.inventory.customers_shard_1", "key": {"id": 123}, "value": None},
        {"topic": "mysql-server-1.inventory.customers_shard_2", "key": {"id": 123}, "value": None},
        {"topic": "mysql-server-1.inventory.customers_shard_2", "key": {"id": 456}, "value": None},
    ], key_schema=SHARD_KEY, value_schema=None)
    out = apply_one(make(ByLogicalTableRouter, {**SHARDS, "schema.name.adjustment.mode": mode}), batch)
    assert [(r["topic"], r["key"]) for r in records(out)] == [
        ("mysql-server-1.inventory.customers_all_shards", {"id": 123, "shard_id": "1"}),
        ("mysql-server-1.inventory.customers_all_shards", {"id": 123, "shard_id": "2"}),
        ("mysql-server-1.inventory.customers_all_shards", {"id": 456, "shard_id": "2"})]
    assert schema(out, "key") == struct(key_name, ("id", INT64_SCHEMA), ("shard_id", STRING_SCHEMA))
    assert schema(out, "value") is None
    assert_no_python(out.df)


def test_heartbeat_message_topic_replacement(spark):
    key_schema = struct("io.debezium.connector.mysql.ServerNameKey", ("serverName", STRING_SCHEMA))
    batch = batch_of(spark, [
        {"topic": "__debezium-heartbeat.test_server_name_db", "key": {"serverName": "test_server_name_db"}},
        {"topic": "__debezium-heartbeat.test_server_name_db_2", "key": {"serverName": "test_server_name_db_2"}},
    ], key_schema=key_schema, value_schema=None)
    settings = {"topic.regex": "__debezium-heartbeat(.*)", "topic.replacement": "debezium_heartbeat_central",
                "key.field.name": "originalTopic"}
    out = apply_one(make(ByLogicalTableRouter, settings), batch)
    assert [(r["topic"], r["key"], r["value"]) for r in records(out)] == [
        ("debezium_heartbeat_central",
         {"serverName": "test_server_name_db", "originalTopic": "__debezium-heartbeat.test_server_name_db"}, None),
        ("debezium_heartbeat_central",
         {"serverName": "test_server_name_db_2", "originalTopic": "__debezium-heartbeat.test_server_name_db_2"}, None)]
    assert schema(out, "key") == struct("debezium_heartbeat_central.Key", ("serverName", STRING_SCHEMA),
                                        ("originalTopic", STRING_SCHEMA))


def test_null_keys_are_routed_as_they_are(spark):
    batch = batch_of(spark, [{"topic": "mysql-server-1.inventory.customers_shard_1", "key": None, "value": None}],
                     key_schema=None, value_schema=None)
    (rec,) = records(apply_one(make(ByLogicalTableRouter, SHARDS), batch))
    assert rec["topic"] == "mysql-server-1.inventory.customers_all_shards" and rec["key"] is None


def test_namespace_replacement_without_key_change(spark):
    batch = batch_of(spark, [{"topic": "s21.dbz_shard_21.address", "key": {"id": 123}, "value": None}],
                     key_schema=struct("s21.dbz_shard_21.address.Key", ("id", INT64_SCHEMA)), value_schema=None)
    settings = {"topic.regex": "(.*).dbz_shard_\\d+.(.*)", "topic.replacement": "dbz_core.$2",
                "key.enforce.uniqueness": "false"}
    out = apply_one(make(ByLogicalTableRouter, settings), batch)
    assert [(r["topic"], r["key"]) for r in records(out)] == [("dbz_core.address", {"id": 123})]
    assert schema(out, "key") == struct("dbz_core.address.Key", ("id", INT64_SCHEMA))


def test_schema_change_event_keeps_its_value(spark):
    key_schema = struct("io.debezium.connector.mysql.SchemaChangeKey", ("databaseName", STRING_SCHEMA))
    value_schema = struct("io.debezium.connector.mysql.SchemaChangeValue", ("databaseName", OPTIONAL_STRING_SCHEMA))
    batch = batch_of(spark, [{"topic": "schema_changes", "key": {"databaseName": "my-db"},
                              "value": {"databaseName": "my-db"}}], key_schema=key_schema, value_schema=value_schema)
    out = apply_one(make(ByLogicalTableRouter, {"topic.regex": "(.*)", "topic.replacement": "$1_rerouted"}), batch)
    (rec,) = records(out)
    assert rec["topic"] == "schema_changes_rerouted" and rec["value"] == {"databaseName": "my-db"}
    assert schema(out, "value") == value_schema
    assert rec["key"] == {"databaseName": "my-db", "__dbz__physicalTableIdentifier": "schema_changes"}


MSK_REROUTE = {"topic.regex": "(.*)", "topic.replacement": "database-1.admincoin.mutations"}
MUTATIONS = "database-1.admincoin.mutations"


def test_msk_reroute_every_table_to_one_topic(spark):
    """The MSK setup: `transforms.Reroute.topic.regex=(.*)`, `topic.replacement=database-1.admincoin.mutations`.
    Two tables' events (different key schemas, so two batches) all go to one topic, the table in the key."""
    users_row = struct("database-1.admincoin.users.Value", ("id", INT64_SCHEMA), ("email", OPTIONAL_STRING_SCHEMA),
                       optional=True)
    coins_row = struct("database-1.admincoin.coins.Value", ("code", STRING_SCHEMA), ("amount", INT32_SCHEMA),
                       optional=True)
    users = batch_of(spark, [
        {"topic": "database-1.admincoin.users", "key": {"id": 7},
         "value": {"before": None, "after": {"id": 7, "email": "a@b.c"}, "source": SRC, "op": "c", "ts_ms": 1,
                   "transaction": None}},
        {"topic": "database-1.admincoin.users", "key": {"id": 7}, "value": None},
    ], key_schema=struct("database-1.admincoin.users.Key", ("id", INT64_SCHEMA)),
        value_schema=envelope("database-1.admincoin.users.Envelope", users_row))
    coins = batch_of(spark, [
        {"topic": "database-1.admincoin.coins", "key": {"code": "BTC"},
         "value": {"before": {"code": "BTC", "amount": 1}, "after": {"code": "BTC", "amount": 2}, "source": SRC,
                   "op": "u", "ts_ms": 2, "transaction": None}},
    ], key_schema=struct("database-1.admincoin.coins.Key", ("code", STRING_SCHEMA)),
        value_schema=envelope("database-1.admincoin.coins.Envelope", coins_row))
    reroute = make(ByLogicalTableRouter, MSK_REROUTE)

    users_out = apply_one(reroute, users)
    assert [(r["topic"], r["key"], (r["value"] or {}).get("after")) for r in records(users_out)] == [
        (MUTATIONS, {"id": 7, "__dbz__physicalTableIdentifier": "database-1.admincoin.users"}, {"id": 7, "email": "a@b.c"}),
        (MUTATIONS, {"id": 7, "__dbz__physicalTableIdentifier": "database-1.admincoin.users"}, None)]
    assert schema(users_out, "key") == struct(f"{MUTATIONS}.Key", ("id", INT64_SCHEMA),
                                              ("__dbz__physicalTableIdentifier", STRING_SCHEMA))
    mutation_row = struct(f"{MUTATIONS}.Value", ("id", INT64_SCHEMA), ("email", OPTIONAL_STRING_SCHEMA), optional=True)
    assert schema(users_out, "value") == envelope(f"{MUTATIONS}.Envelope", mutation_row)

    coins_out = apply_one(reroute, coins)
    (coin,) = records(coins_out)
    assert coin["topic"] == MUTATIONS
    assert coin["key"] == {"code": "BTC", "__dbz__physicalTableIdentifier": "database-1.admincoin.coins"}
    assert coin["value"]["before"] == {"code": "BTC", "amount": 1} and coin["value"]["op"] == "u"
    assert schema(coins_out, "key").name == f"{MUTATIONS}.Key"
    assert schema(coins_out, "value").name == f"{MUTATIONS}.Envelope"
    assert schema(coins_out, "value").field("after").schema.name == f"{MUTATIONS}.Value"


def test_batch_whose_topics_get_different_schemas_fails_unless_split_by_predicate(spark):
    key_schema = struct("shared.Key", ("id", INT64_SCHEMA))
    batch = batch_of(spark, [{"topic": "db.a", "key": {"id": 1}, "value": None},
                             {"topic": "db.b", "key": {"id": 2}, "value": None}], key_schema=key_schema, value_schema=None)
    per_table = make(ByLogicalTableRouter, {"topic.regex": "db\\.(.*)", "topic.replacement": "all.$1"})
    failed = records(apply_one(per_table, batch))
    assert all("different key/value schemas" in r["error"] for r in failed)
    only_a = make(ByLogicalTableRouter, {"topic.regex": "db\\.a", "topic.replacement": "all.a"})
    assert all("unrouted topics ['db.b']" in r["error"] for r in records(apply_one(only_a, batch)))

    out = apply(only_a, batch, make(TopicNameMatches, {"pattern": "db\\.a"}))
    routed = {r["topic"]: (r["key"], schema(b, "key").name) for b in out for r in records(b)}
    assert routed == {"all.a": ({"id": 1, "__dbz__physicalTableIdentifier": "db.a"}, "all.a.Key"),
                      "db.b": ({"id": 2}, "shared.Key")}


def test_unmatched_topics_pass_unchanged(spark):
    batch = batch_of(spark, [{"topic": "other", "key": {"id": 1}, "value": None}],
                     key_schema=struct("other.Key", ("id", INT64_SCHEMA)), value_schema=None)
    out = apply_one(make(ByLogicalTableRouter, SHARDS), batch)
    assert out.key_schema == struct("other.Key", ("id", INT64_SCHEMA))
    assert [(r["topic"], r["key"]) for r in records(out)] == [("other", {"id": 1})]


def test_schemaless_key_fails_require_struct(spark):
    batch = batch_of(spark, [{"topic": "t", "key": {"id": 1}, "value": None}], key_schema=SCHEMALESS,
                     value_schema=None)
    (rec,) = records(apply_one(make(ByLogicalTableRouter, {"topic.regex": "t", "topic.replacement": "u"}), batch))
    assert rec["error"] == "Only Struct objects supported for [Updating schema], found: java.util.HashMap"


@pytest.mark.parametrize("settings,message", [
    ({"topic.regex": "someValidRegex(.*)", "topic.replacement": "$1", "key.field.regex": "x(.*)"},
     "key.field.replacement must be non-empty if key.field.regex is set."),
    ({"topic.regex": "someValidRegex(.*)", "topic.replacement": "$1", "key.field.regex": "x(.*)",
      "key.field.replacement": ""}, "key.field.replacement must be non-empty if key.field.regex is set."),
    ({"topic.regex": "someValidRegex(.*)"}, "topic.replacement"),
    ({"topic.regex": "someValidRegex(.*)", "topic.replacement": ""}, "A value is required"),
    ({"topic.regex": "(", "topic.replacement": "x"}, "topic.regex"),
    ({"topic.regex": "x", "topic.replacement": "y", "schema.name.adjustment.mode": "xml"},
     "schema.name.adjustment.mode"),
])
def test_router_config_errors(settings, message):
    with pytest.raises(ConfigError) as e:
        make(ByLogicalTableRouter, settings)
    assert message in str(e.value)


def test_schema_name_adjustment():
    assert adjust_schema_name("mysql-server-1.inventory.x.Key", "avro") == "mysql_server_1.inventory.x.Key"
    assert adjust_schema_name("1db.my_table.Key", "avro") == "_db.my_table.Key"
    assert adjust_schema_name("db-1.my_table.Key", "avro_unicode") == "db_u002d1.my_u005ftable.Key"
    assert adjust_schema_name("db-1.x", "none") == "db-1.x"
