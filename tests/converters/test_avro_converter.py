"""AvroConverter against the lake's Schema Registry (a `lakeconnect rest` process) and confluent-kafka's own
Avro serializer and deserializer, both ways, over a record of every Connect type: what our converter writes
their deserializer reads value for value, and what their serializer writes our converter reads."""

from __future__ import annotations

import datetime as dt
import io
import json
import struct
from decimal import Decimal

import fastavro
import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from pyspark.sql import types as T

from connectors.converters.avro_converter import AvroConverter
from ingest.errors import ConfigError, DataError, RetriableError
from ingest.records import schema as S
from ingest.records.schema import ConnectSchema
from tests.conftest import cli_here, write_worker
from tests.rest.test_rest_api import Rest

TOPIC = "payments"
ADDRESS = S.struct("shop.Address", ("street", S.STRING_SCHEMA), ("zip", S.OPTIONAL_INT32_SCHEMA)).as_optional()
EVERY_TYPE = S.struct(
    "shop.Payment",
    ("i8", S.INT8_SCHEMA), ("i16", S.INT16_SCHEMA), ("i32", S.INT32_SCHEMA), ("i64", S.INT64_SCHEMA),
    ("f32", S.FLOAT32_SCHEMA), ("f64", S.FLOAT64_SCHEMA), ("flag", S.BOOLEAN_SCHEMA), ("text", S.STRING_SCHEMA),
    ("raw", S.BYTES_SCHEMA), ("amount", S.decimal(2)), ("day", S.DATE_SCHEMA), ("at", S.TIME_SCHEMA),
    ("ts", S.TIMESTAMP_SCHEMA), ("tags", S.array(S.STRING_SCHEMA)),
    ("counts", S.map_(S.STRING_SCHEMA, S.INT64_SCHEMA)), ("by_id", S.map_(S.INT32_SCHEMA, S.STRING_SCHEMA)),
    ("address", ADDRESS), ("note", S.OPTIONAL_STRING_SCHEMA),
)
UTC = dt.timezone.utc
ROW = (-7, 300, 70000, 2**40, 1.5, 2.25, True, "héllo", b"\x00\xff", Decimal("-12.34"), dt.date(2024, 2, 29),
       3723004, dt.datetime(2024, 1, 2, 3, 4, 5, 678000, tzinfo=UTC), ["a", "b"], {"x": 1},
       {7: "seven"}, ("Main St", None), None)


@pytest.fixture(scope="module")
def registry(schema_registry):
    return schema_registry  # here `registry` is the Schema Registry's URL (tests/converters/conftest.py)


def _frame(spark, schema: ConnectSchema, rows):
    return spark.createDataFrame([(TOPIC, 0, i, v) for i, v in enumerate(rows)], T.StructType([
        T.StructField("topic", T.StringType()), T.StructField("partition", T.IntegerType()),
        T.StructField("offset", T.LongType()), T.StructField("value", schema.to_spark_type(), True)]))


def test_what_we_write_confluents_deserializer_reads(spark, registry):
    converter = AvroConverter({"schema.registry.url": registry}, is_key=False)
    out = converter.from_connect_for(_frame(spark, EVERY_TYPE, [ROW, None]), "value", EVERY_TYPE, [TOPIC])
    data = [None if r.value is None else bytes(r.value) for r in out.orderBy("offset").collect()]
    assert data[1] is None  # a null value stays null: a tombstone
    client = SchemaRegistryClient({"url": registry})
    registered = client.get_latest_version(f"{TOPIC}-value")
    assert data[0][:5] == b"\x00" + registered.schema_id.to_bytes(4, "big")
    # the schema Confluent's AvroData builds, registered under TopicNameStrategy's subject
    avro = json.loads(registered.schema.schema_str)
    assert avro["name"] == "Payment" and avro["namespace"] == "shop" and avro["connect.name"] == "shop.Payment"
    value = AvroDeserializer(client)(data[0], SerializationContext(TOPIC, MessageField.VALUE))
    assert value == {
        "i8": -7, "i16": 300, "i32": 70000, "i64": 2**40, "f32": 1.5, "f64": 2.25, "flag": True, "text": "héllo",
        "raw": b"\x00\xff", "amount": Decimal("-12.34"), "day": dt.date(2024, 2, 29),
        "at": dt.time(1, 2, 3, 4000), "ts": dt.datetime(2024, 1, 2, 3, 4, 5, 678000, tzinfo=UTC),
        "tags": ["a", "b"], "counts": {"x": 1}, "by_id": [{"key": 7, "value": "seven"}],
        "address": {"street": "Main St", "zip": None}, "note": None}
    # the id is cached: a second batch asks the registry nothing (its server is gone, the id still comes)
    again = AvroConverter({"schema.registry.url": registry}, is_key=False)
    assert again._writer(f"{TOPIC}-value", registered.schema.schema_str, avro)[0] == registered.schema_id


def test_what_confluents_serializer_writes_we_read(spark, registry):
    client = SchemaRegistryClient({"url": registry})
    schema = json.dumps({"type": "record", "name": "Order", "namespace": "shop", "fields": [
        {"name": "id", "type": "long"}, {"name": "item", "type": "string"},
        {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
        {"name": "placed", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID"]}},
        {"name": "coupon", "type": ["null", "string"], "default": None},
        {"name": "extras", "type": {"type": "map", "values": "int"}}]})
    serialize = AvroSerializer(client, schema)
    context = SerializationContext("orders", MessageField.VALUE)
    records = [{"id": 1, "item": "book", "price": Decimal("12.50"), "status": "PAID", "coupon": None,
                "placed": dt.datetime(2024, 5, 1, 12, 0, tzinfo=UTC), "extras": {"gift": 1}},
               {"id": 2, "item": "pen", "price": Decimal("1.05"), "status": "NEW", "coupon": "SPRING",
                "placed": dt.datetime(2024, 5, 2, tzinfo=UTC), "extras": {}}]
    df = spark.createDataFrame([("orders", 0, i, serialize(r, context)) for i, r in enumerate(records)],
                               "topic string, partition int, offset long, value binary")
    converter = AvroConverter({"schema.registry.url": registry}, is_key=False)
    assert df.select(converter.record_errors(df, "value").alias("e")).where("e is not null").count() == 0
    [(connect, frame)] = converter.to_connect(df, "value")
    assert connect.name == "shop.Order" and connect.version == 1  # the registry's version, as AvroData sets it
    assert connect.field("status").schema.params["io.confluent.connect.avro.Enum"] == "shop.Status"
    assert connect.field("price").schema.params == {"scale": "2", "connect.decimal.precision": "10"}
    assert connect.field("coupon").schema.optional
    rows = [r.value.asDict(recursive=True) for r in frame.orderBy("offset").collect()]
    assert rows == [
        {"id": 1, "item": "book", "price": Decimal("12.50"), "placed": dt.datetime(2024, 5, 1, 12, 0),
         "status": "PAID", "coupon": None, "extras": {"gift": 1}},
        {"id": 2, "item": "pen", "price": Decimal("1.05"), "placed": dt.datetime(2024, 5, 2, 0, 0),
         "status": "NEW", "coupon": "SPRING", "extras": {}}]


def test_bad_values_and_refusals_are_named(spark, registry):
    converter = AvroConverter({"schema.registry.url": registry}, is_key=False)
    df = spark.createDataFrame([("t", 0, 0, b"{\"not\": \"avro\"}"), ("t", 0, 1, b"\x00\x00\x00\x7f\xff\x02")],
                               "topic string, partition int, offset long, value binary")
    reasons = [r.e for r in df.select(converter.record_errors(df, "value").alias("e")).orderBy("offset").collect()]
    assert reasons[0].endswith("Unknown magic byte!")
    assert "Error retrieving Avro value schema for id 32767" in reasons[1]
    # an incompatible change: the registry's reason, with the subject
    before = S.struct("shop.Item", ("id", S.INT64_SCHEMA))
    after = S.struct("shop.Item", ("id", S.INT64_SCHEMA), ("size", S.INT32_SCHEMA))
    converter.from_connect_for(_frame(spark, before, [(1,)]), "value", before, ["items"])
    with pytest.raises(DataError, match="subject 'items-value'.*READER_FIELD_MISSING_DEFAULT_VALUE.*BACKWARD"):
        converter.from_connect_for(_frame(spark, after, [(1, 2)]), "value", after, ["items"])
    # auto.register.schemas=false: a schema the subject lacks is named
    strict = AvroConverter({"schema.registry.url": registry, "auto.register.schemas": "false"}, is_key=False)
    with pytest.raises(DataError, match="subject 'other-value'.*auto.register.schemas=false"):
        strict.from_connect_for(_frame(spark, before, [(1,)]), "value", before, ["other"])


def test_an_unreachable_registry_is_retriable_and_credentials_never_show(spark, tmp_path):
    schema = S.struct("shop.Item", ("id", S.INT64_SCHEMA))
    frame = _frame(spark, schema, [(1,)])
    gone = AvroConverter({"schema.registry.url": "http://127.0.0.1:1/registry"}, is_key=False)
    with pytest.raises(RetriableError, match="Schema Registry cannot be reached.*127.0.0.1:1"):
        gone.from_connect_for(frame, "value", schema, ["items"])
    # the lake's registry behind the REST API's basic authentication
    (tmp_path / "lake").mkdir()
    credentials = tmp_path / "credentials.properties"
    credentials.write_text("mickael=p4ss\n")
    server = Rest(write_worker(tmp_path / "worker.properties", tmp_path / "lake"), "--credentials", str(credentials))
    try:
        url = server.url + "/registry"
        for settings in ({"basic.auth.credentials.source": "USER_INFO", "basic.auth.user.info": "mickael:Wr0ng-pw"},
                         {"schema.registry.url": url.replace("http://", "http://mickael:Wr0ng-pw@")}):
            refused = AvroConverter({"schema.registry.url": url, **settings}, is_key=False)
            with pytest.raises(ConfigError) as e:
                refused.from_connect_for(frame, "value", schema, ["items"])
            text = str(e.value)
            assert "refused the credentials (HTTP 401)" in text and "Wr0ng-pw" not in text, text
            assert "Wr0ng-pw" not in repr(refused.client)
        for settings in ({"basic.auth.credentials.source": "USER_INFO", "basic.auth.user.info": "mickael:p4ss"},
                         {"schema.registry.url": url.replace("http://", "http://mickael:p4ss@")}):
            allowed = AvroConverter({"schema.registry.url": url, **settings}, is_key=False)
            out = allowed.from_connect_for(frame, "value", schema, ["items"])
            assert bytes(out.collect()[0].value)[:1] == b"\x00"
    finally:
        server.stop()


def test_every_avro_type_confluents_serializer_writes_reads_as_avrodata_maps_it(spark, registry):
    client = SchemaRegistryClient({"url": registry})
    schema = {"type": "record", "name": "All", "namespace": "t", "fields": [
        {"name": "b", "type": "boolean"}, {"name": "i", "type": "int"}, {"name": "l", "type": "long"},
        {"name": "f", "type": "float"}, {"name": "d", "type": "double"}, {"name": "raw", "type": "bytes"},
        {"name": "s", "type": "string"}, {"name": "fx", "type": {"type": "fixed", "name": "Four", "size": 4}},
        {"name": "e", "type": {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN"]}},
        {"name": "arr", "type": {"type": "array", "items": "int"}},
        {"name": "m", "type": {"type": "map", "values": "long"}},
        {"name": "rec", "type": {"type": "record", "name": "Inner", "fields": [{"name": "x", "type": "int"}]}},
        {"name": "opt", "type": ["null", "Inner"], "default": None},
        {"name": "either", "type": ["int", "string"]},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "tm", "type": {"type": "int", "logicalType": "time-millis"}},
        {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "dec", "type": {"type": "bytes", "logicalType": "decimal", "precision": 20, "scale": 4}},
        {"name": "n", "type": "int", "default": 42}]}
    value = {"b": True, "i": -5, "l": 2**50, "f": 0.5, "d": -1.25, "raw": b"\x01\x02", "s": "ünï", "fx": b"abcd",
             "e": "GREEN", "arr": [1, 2], "m": {"k": 9}, "rec": {"x": 1}, "opt": {"x": 2}, "either": "two",
             "day": dt.date(2000, 1, 1), "tm": dt.time(0, 0, 1, 500000),
             "ts": dt.datetime(2000, 1, 1, tzinfo=UTC), "dec": Decimal("3.1416"), "n": 7}
    data = AvroSerializer(client, json.dumps(schema))(value, SerializationContext("all", MessageField.VALUE))
    df = spark.createDataFrame([("all", 0, 0, data)], "topic string, partition int, offset long, value binary")
    [(connect, frame)] = AvroConverter({"schema.registry.url": registry}, is_key=False).to_connect(df, "value")
    by_name = {f.name: f.schema for f in connect.fields}
    assert (by_name["fx"].type, by_name["fx"].name, by_name["fx"].params) == ("bytes", "t.Four",
                                                                               {"connect.fixed.size": "4"})
    assert by_name["either"].name == "io.confluent.connect.avro.Union"
    assert [f.name for f in by_name["either"].fields] == ["int", "string"]
    assert (by_name["day"].name, by_name["tm"].name, by_name["ts"].name, by_name["dec"].name) == (
        S.DATE, S.TIME, S.TIMESTAMP, S.DECIMAL)
    assert by_name["n"].default == 42 and by_name["n"].params == {"io.confluent.connect.avro.field.default": "true"}
    assert by_name["opt"].optional and by_name["opt"].name == "t.Inner"
    [row] = [r.value.asDict(recursive=True) for r in frame.collect()]
    assert row == {"b": True, "i": -5, "l": 2**50, "f": 0.5, "d": -1.25, "raw": bytearray(b"\x01\x02"), "s": "ünï",
                   "fx": bytearray(b"abcd"), "e": "GREEN", "arr": [1, 2], "m": {"k": 9}, "rec": {"x": 1},
                   "opt": {"x": 2}, "either": {"int": None, "string": "two"}, "day": dt.date(2000, 1, 1),
                   "tm": 1500, "ts": dt.datetime(2000, 1, 1), "dec": Decimal("3.1416"), "n": 7}


def test_validate_names_the_converters_keys_and_never_its_secret(tmp_path):
    (tmp_path / "lake").mkdir()
    worker = write_worker(tmp_path / "worker.properties", tmp_path / "lake")
    config = tmp_path / "c.json"
    for settings, expected in (
            ({}, "value.converter.schema.registry.url: missing required configuration"),
            ({"value.converter.schema.registry.url": "http://127.0.0.1:8083/registry",
              "value.converter.basic.auth.user.info": "user:S3kr1t-info",
              "value.converter.basic.auth.credentials.source": "SASL_INHERIT"},
             "value.converter.basic.auth.credentials.source: invalid value 'SASL_INHERIT'; expected one of: URL, "
             "USER_INFO"),
            ({"value.converter.schema.registry.url": "http://127.0.0.1:8083/registry",
              "value.converter.value.subject.name.strategy": "TopicNameStrategyy"},
             "value.converter.value.subject.name.strategy: invalid value 'TopicNameStrategyy'")):
        config.write_text(json.dumps({"name": "jdbc", "config": {
            "connector.class": "io.confluent.connect.jdbc.JdbcSourceConnector", "connection.url": "jdbc:sqlite:x.db",
            "mode": "bulk", "topic.prefix": "p-", "value.converter": "io.confluent.connect.avro.AvroConverter",
            **settings}}))
        r = cli_here("validate", str(config), worker=worker)
        assert r.returncode != 0 and expected in r.stderr, r.stderr
        assert "S3kr1t" not in r.stdout + r.stderr


def test_use_latest_version_writes_with_the_subjects_latest_schema(spark, registry):
    client = SchemaRegistryClient({"url": registry})
    # the subject's latest schema has a field the records lack, with a default: it can read them
    latest = json.dumps({"type": "record", "name": "Item", "namespace": "shop", "fields": [
        {"name": "id", "type": "long"}, {"name": "label", "type": "string", "default": "none"}]})
    from confluent_kafka.schema_registry import Schema

    latest_id = client.register_schema("latest-items-value", Schema(latest, "AVRO"))
    own = S.struct("shop.Item", ("id", S.INT64_SCHEMA), ("label", S.STRING_SCHEMA))
    settings = {"schema.registry.url": registry, "auto.register.schemas": "false", "use.latest.version": "true"}
    out = AvroConverter(settings, is_key=False).from_connect_for(_frame(spark, own, [(5, "x")]), "value", own,
                                                                ["latest-items"])
    data = bytes(out.collect()[0].value)
    assert data[:5] == b"\x00" + latest_id.to_bytes(4, "big")
    context = SerializationContext("latest-items", MessageField.VALUE)
    assert AvroDeserializer(client)(data, context) == {"id": 5, "label": "x"}
    assert client.get_versions("latest-items-value") == [1]  # nothing registered
    # a latest schema that cannot read the records' schema (a field without a default): refused, unless asked
    client.set_compatibility("strict-items-value", "NONE")
    client.register_schema("strict-items-value", Schema(json.dumps({"type": "record", "name": "Item",
                                                                    "namespace": "shop", "fields": [
        {"name": "id", "type": "long"}, {"name": "size", "type": "int"}]}), "AVRO"))
    narrow = S.struct("shop.Item", ("id", S.INT64_SCHEMA))
    with pytest.raises(DataError, match="latest schema of subject 'strict-items-value' cannot read.*"
                                        "latest.compatibility.strict=false"):
        AvroConverter(settings, is_key=False).from_connect_for(_frame(spark, narrow, [(1,)]), "value", narrow,
                                                               ["strict-items"])


def _java_hashmap_order(keys: list[str]) -> list[str]:
    """The order a java.util.HashMap<String, ?> filled with `keys` in turn iterates them (written out here in
    Python, apart from the Spark expressions under test)."""
    def string_hash(text: str) -> int:
        h = 0
        for unit in struct.unpack(f">{len(text.encode('utf-16-be')) // 2}H", text.encode("utf-16-be")):
            h = (31 * h + unit) & 0xFFFFFFFF
        return h

    capacity = 16
    while len(keys) > capacity * 3 // 4:
        capacity *= 2
    buckets = [((string_hash(k) ^ (string_hash(k) >> 16)) & (capacity - 1), i) for i, k in enumerate(keys)]
    return [keys[i] for _, i in sorted(buckets)]


def test_string_keyed_maps_are_written_in_the_order_confluents_hashmap_writes_them(spark, registry):
    schema = S.struct("shop.Tags", ("tags", S.map_(S.STRING_SCHEMA, S.INT32_SCHEMA)))
    small = {"zeta": 1, "b": 2, "a": 3, "Ωmega": 4}
    large = {f"key-{i * 7919 % 1000}": i for i in range(13)}  # 13 entries: the HashMap has grown to 32 buckets
    frame = _frame(spark, schema, [(small,), (large,)])
    # the Connect map's own order (the order the HashMap is filled in) is the Spark map's
    maps = [r.value.tags for r in frame.orderBy("offset").collect()]
    out = AvroConverter({"schema.registry.url": registry}, is_key=False).from_connect_for(
        frame, "value", schema, ["tags"])
    client = SchemaRegistryClient({"url": registry})
    avro = fastavro.parse_schema(json.loads(client.get_latest_version("tags-value").schema.schema_str))
    for row, written, original in zip(out.orderBy("offset").collect(), maps, (small, large)):
        data = bytes(row.value)
        read = fastavro.schemaless_reader(io.BytesIO(data[5:]), avro)
        assert list(read["tags"]) == _java_hashmap_order(list(written)) and read["tags"] == original


PARCEL = {"type": "record", "name": "Parcel", "namespace": "t", "fields": [
    {"name": "id", "type": "long"},
    {"name": "color", "type": {"type": "enum", "name": "Color", "doc": "paint", "symbols": ["RED", "GREEN", "BLUE"],
                               "default": "RED"}},
    {"name": "tag", "type": {"type": "fixed", "name": "Four", "size": 4}},
    {"name": "price", "type": {"type": "fixed", "name": "Money", "size": 8, "logicalType": "decimal",
                               "precision": 12, "scale": 2}},
    {"name": "second", "type": ["null", "Color"], "default": None},
    {"name": "box", "type": {"type": "record", "name": "Box", "namespace": "u", "fields": [
        {"name": "shade", "type": "t.Color"}, {"name": "code", "type": "t.Four"}]}}]}
PARCELS = [{"id": 1, "color": "GREEN", "tag": b"abcd", "price": Decimal("1234.50"), "second": None,
            "box": {"shade": "BLUE", "code": b"wxyz"}},
           {"id": 2, "color": "RED", "tag": b"\x00\x01\x02\x03", "price": Decimal("-0.01"), "second": "GREEN",
            "box": {"shade": "RED", "code": b"1234"}}]


def _written_back(spark, registry, schema: dict, values: list, name: str, enhanced: bool):
    """Values confluent-kafka's serializer writes under topic `name`, read by our converter and written again
    under `<name>-copy`: (the Connect schema read, what their deserializer reads of our copy, the fields of the
    Avro schema our copy registered)."""
    client = SchemaRegistryClient({"url": registry})
    source, copy = f"{name}-{str(enhanced).lower()}", f"{name}-copy-{str(enhanced).lower()}"
    serialize = AvroSerializer(client, json.dumps(schema))
    data = [serialize(v, SerializationContext(source, MessageField.VALUE)) for v in values]
    df = spark.createDataFrame([(source, 0, i, d) for i, d in enumerate(data)],
                               "topic string, partition int, offset long, value binary")
    converter = AvroConverter({"schema.registry.url": registry,
                               "enhanced.avro.schema.support": str(enhanced).lower()}, is_key=False)
    [(connect, frame)] = converter.to_connect(df, "value")
    out = converter.from_connect_for(frame, "value", connect, [copy])
    deserialize = AvroDeserializer(client)
    read = [deserialize(bytes(r.value), SerializationContext(copy, MessageField.VALUE))
            for r in out.orderBy("offset").collect()]
    avro = json.loads(client.get_latest_version(f"{copy}-value").schema.schema_str)
    return connect, read, {f["name"]: f["type"] for f in avro["fields"]}, converter, copy


@pytest.mark.parametrize("enhanced", [True, False])
def test_enums_and_fixed_read_from_avro_are_written_back_as_confluent_writes_them(spark, registry, enhanced):
    """Read what confluent-kafka's serializer wrote, write it again under another topic, and its deserializer
    gets the same values. Fixed types stay fixed; enums stay enums with enhanced.avro.schema.support=true and
    become annotated strings without it, as AvroData.fromConnectSchema builds them."""
    connect, read, fields, converter, copy = _written_back(spark, registry, PARCEL, PARCELS, "parcels", enhanced)
    assert connect.field("tag").schema.params == {"connect.fixed.size": "4"}
    assert read == PARCELS
    assert (fields["tag"]["type"], fields["tag"]["name"], fields["tag"]["size"]) == ("fixed", "Four", 4)
    assert (fields["price"]["type"], fields["price"]["logicalType"], fields["price"]["precision"]) == (
        "fixed", "decimal", 12)
    assert fields["box"]["fields"][1]["type"] == "t.Four"  # a named type once in full, then by name
    params = {"io.confluent.connect.avro.Enum": "t.Color", "io.confluent.connect.avro.Enum.RED": "RED",
              "io.confluent.connect.avro.Enum.GREEN": "GREEN", "io.confluent.connect.avro.Enum.BLUE": "BLUE",
              "io.confluent.connect.avro.enum.doc.Color": "paint",
              "io.confluent.connect.avro.enum.default.Color": "RED"}
    if enhanced:
        assert fields["color"] == {"type": "enum", "name": "Color", "doc": "paint", "symbols": ["RED", "GREEN", "BLUE"],
                                   "default": "RED", "connect.parameters": params, "connect.name": "t.Color"}
        assert fields["second"] == ["null", "Color"] and fields["box"]["fields"][0]["type"] == "t.Color"
    else:
        assert fields["color"] == {"type": "string", "connect.parameters": params, "connect.name": "t.Color"}
        # the optional enum field is an optional annotated string
        assert fields["second"][0] == "null" and fields["second"][1]["type"] == "string"

    # enhanced: a string that is not one of the enum's symbols fails the batch with a message naming both
    if enhanced:
        bad = _frame(spark, connect, [(3, "PINK", b"abcd", Decimal("1.00"), None, ("RED", b"abcd"))])
        with pytest.raises(Exception, match="cannot write the string 'PINK' as enum t.Color: it is not one of its "
                                            r"symbols \(RED, GREEN, BLUE\)"):
            converter.from_connect_for(bad, "value", connect, [copy]).collect()


SHAPES = {"type": "record", "name": "Shape", "namespace": "t", "fields": [
    {"name": "either", "type": ["int", "string"]},
    {"name": "maybe", "type": ["string", "null", "long"]},
    {"name": "any", "type": ["null", {"type": "record", "name": "Circle", "fields": [
        {"name": "r", "type": "double"}, {"name": "label", "type": ["null", "string", "int"], "default": None}]},
        {"type": "enum", "name": "Kind", "symbols": ["A", "B"]}, {"type": "fixed", "name": "Two", "size": 2}]},
    {"name": "list", "type": {"type": "array", "items": ["int", "string", "Circle"]}},
    {"name": "by_key", "type": {"type": "map", "values": ["null", "long", "string"]}},
    {"name": "after", "type": "string"}]}
SHAPE_VALUES = [
    {"either": 5, "maybe": "text", "any": {"r": 1.5, "label": 7}, "list": [1, "two", {"r": 3.0, "label": None}],
     "by_key": {"a": 1, "b": None, "c": "x"}, "after": "end"},
    {"either": "five", "maybe": None, "any": None, "list": [], "by_key": {}, "after": ""},
    {"either": -1, "maybe": 2**40, "any": "B", "list": ["x"], "by_key": {"k": "v"}, "after": "z"},
    {"either": 0, "maybe": "", "any": b"\x01\x02", "list": [{"r": -1.0, "label": "l"}], "by_key": {"n": None},
     "after": "ü"},
    {"either": "", "maybe": 0, "any": "A", "list": [0, ""], "by_key": {"z": 0}, "after": "."}]


@pytest.mark.parametrize("enhanced", [False, True])
def test_unions_read_from_avro_are_written_back_as_confluent_writes_them(spark, registry, enhanced):
    """Spark's to_avro writes a union only as null-or-one-type; AvroConverter composes the encoding around the
    unions (each union its branch's index, then that branch's bytes). Values confluent-kafka's serializer wrote
    with unions of every kind (in records, arrays, maps, nested, with records, enums and fixed as branches) are
    read, written again, and its deserializer reads them back the same."""
    connect, read, fields, _, _ = _written_back(spark, registry, SHAPES, SHAPE_VALUES, "shapes", enhanced)
    members = [f.name for f in connect.field("any").schema.fields]
    assert members == (["t.Circle", "t.Kind", "t.Two"] if enhanced else ["Circle", "Kind", "Two"])
    assert read == SHAPE_VALUES
    assert fields["either"] == ["int", "string"]  # AvroData's union: null first, then the members in order
    assert fields["maybe"] == ["null", "string", "long"]


def test_union_members_are_named_as_avrodata_names_them(spark, registry):
    from connectors.converters._avro_connect import to_connect_schema

    tree = {"type": "record", "name": "Shape", "namespace": "t", "fields": [
        {"name": "either", "type": ["null", {"type": "record", "name": "Circle", "fields": [
            {"name": "r", "type": "double"}]}, "string", {"type": "enum", "name": "Kind", "symbols": ["A"]}]}]}
    plain = to_connect_schema(tree).field("either").schema
    full = to_connect_schema(tree, enhanced=True).field("either").schema
    assert plain.name == full.name == "io.confluent.connect.avro.Union" and plain.optional
    assert [f.name for f in plain.fields] == ["Circle", "string", "Kind"]
    assert [f.name for f in full.fields] == ["t.Circle", "string", "t.Kind"]
