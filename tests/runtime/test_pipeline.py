"""The transform chain's hook points: order, predicates and negate, as Kafka applies them."""

from pyspark.sql import functions as F

from ingest.config.connector import validate_connector
from ingest.config.worker import load_worker
from ingest.records import RecordBatch
from ingest.records.schema import STRING_SCHEMA
from ingest.registry import default_registry
from ingest.runtime.pipeline import Pipeline


def _pipeline(extra):
    worker = load_worker(None, {"file.connectors.enable": "true"})
    setup = validate_connector({"name": "p", "connector.class": "FileStreamSource", "file": "/x", "topic": "t",
                                **extra}, worker, default_registry())
    return Pipeline.build(setup)


def _batch(spark):
    df = spark.createDataFrame(
        [("orders", None, "a", [("source", "db")], 0), ("orders", None, None, None, 1), ("users", None, "b", None, 2)],
        "topic string, key string, value string, headers array<struct<key:string,value:string>>, seq long")
    df = df.withColumn("partition", F.lit(None).cast("int")).withColumn("timestamp", F.current_timestamp())
    return RecordBatch(df, None, STRING_SCHEMA)


def _topics(batches):
    rows = []
    for b in batches:
        rows += [(r["seq"], r["topic"]) for r in b.df.select("seq", "topic").collect()]
    return sorted(rows)


def test_chain_applies_in_order_with_predicates(spark):
    p = _pipeline({
        "transforms": "prefix,tombstones", "predicates": "isOrders,isTombstone",
        "transforms.prefix.type": "org.apache.kafka.connect.transforms.RegexRouter",
        "transforms.prefix.regex": "(.*)", "transforms.prefix.replacement": "db.$1",
        "transforms.prefix.predicate": "isOrders",
        "transforms.tombstones.type": "RegexRouter", "transforms.tombstones.regex": "db\\.(.*)",
        "transforms.tombstones.replacement": "$1-deleted", "transforms.tombstones.predicate": "isTombstone",
        "predicates.isOrders.type": "org.apache.kafka.connect.transforms.predicates.TopicNameMatches",
        "predicates.isOrders.pattern": "ord.*",
        "predicates.isTombstone.type": "RecordIsTombstone"})
    assert _topics(p.transform([_batch(spark)])) == [(0, "db.orders"), (1, "orders-deleted"), (2, "users")]


def test_negate_and_header_predicate(spark):
    p = _pipeline({
        "transforms": "r", "predicates": "hasSource",
        "transforms.r.type": "RegexRouter", "transforms.r.regex": ".*", "transforms.r.replacement": "no-source",
        "transforms.r.predicate": "hasSource", "transforms.r.negate": "true",
        "predicates.hasSource.type": "HasHeaderKey", "predicates.hasSource.name": "source"})
    assert _topics(p.transform([_batch(spark)])) == [(0, "orders"), (1, "no-source"), (2, "no-source")]


def test_a_converter_refusing_the_schema_names_its_stage(spark):
    import pytest

    from ingest.errors import DataError

    p = _pipeline({"value.converter": "org.apache.kafka.connect.converters.ByteArrayConverter"})
    with pytest.raises(DataError) as e:
        p.serialise(_batch(spark))  # string values with a STRING schema: ByteArrayConverter takes only bytes
    assert e.value.stage == "VALUE_CONVERTER"
    assert e.value.executing_class == "org.apache.kafka.connect.converters.ByteArrayConverter"
