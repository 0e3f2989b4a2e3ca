"""TimestampRouter, ported from Kafka's TimestampRouterTest (default configuration), plus custom topic and
timestamp formats, records without a timestamp, sink records, configuration errors, predicates and plan
checks."""

from __future__ import annotations

import datetime as dt

import pytest
from pyspark.sql import functions as F

from connectors.predicates import TopicNameMatches
from connectors.transforms.timestamp_router import TimestampRouter
from ingest.errors import ConfigError
from ingest.records.schema import STRING_SCHEMA
from tests.converters.helpers import assert_no_python
from tests.transforms.helpers import apply, apply_one, batch_of, make, records

UTC = dt.timezone.utc


def _ts(millis: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(millis / 1000, UTC)


def test_default_configuration_and_formats(spark):
    b = batch_of(spark, [{"topic": "test", "timestamp": _ts(1483425001864), "value": "v", "key": "k",
                          "partition": 3, "headers": [("h", "1")]},
                         {"topic": "other", "timestamp": _ts(-1), "value": None},
                         {"topic": "none", "value": "x"}],
                 key_schema=STRING_SCHEMA, value_schema=STRING_SCHEMA)
    rs = records(apply_one(make(TimestampRouter, {}), b))
    assert [r["topic"] for r in rs] == ["test-20170103", "other-19691231", "none"]
    assert (rs[0]["key"], rs[0]["value"], rs[0]["partition"], rs[0]["headers"]) == ("k", "v", 3, [("h", "1")])
    assert rs[0]["timestamp"] == dt.datetime(2017, 1, 3, 6, 30, 1, 864000)
    assert rs[2]["error"] == "Timestamp missing on record: ConnectRecord{topic='none', kafkaPartition=null, timestamp=null}"
    custom = make(TimestampRouter, {"topic.format": "${timestamp}/${topic}/${topic}",
                                    "timestamp.format": "yyyy-MM-dd'T'HH:mm:ss.SSS z"})
    sink = b.with_df(b.df.withColumn("offset", F.col("seq") + 10))
    rs = records(apply_one(custom, sink))
    assert rs[0]["topic"] == "2017-01-03T06:30:01.864 UTC/test/test"
    assert rs[2]["error"] == ("Timestamp missing on record: SinkRecord{kafkaOffset=12} ConnectRecord{topic='none', "
                              "kafkaPartition=null, timestamp=null}")


def test_predicate_and_plan(spark):
    b = batch_of(spark, [{"topic": "orders", "timestamp": _ts(0), "value": {"a": 1}},
                         {"topic": "logs", "timestamp": _ts(0), "value": {"a": 2}}])
    outs = apply(make(TimestampRouter, {"timestamp.format": "yyyy"}), b, make(TopicNameMatches, {"pattern": "ord.*"}))
    assert len(outs) == 1  # same shape: one pass
    rs = records(outs[0])
    assert [r["topic"] for r in rs] == ["orders-1970", "logs"]
    assert [r["value"] for r in rs] == [{"a": 1}, {"a": 2}]
    assert_no_python(outs[0].df)


def test_config():
    with pytest.raises(ConfigError, match="timestamp.format: Illegal pattern character 'b'"):
        make(TimestampRouter, {"timestamp.format": "bad"})
    with pytest.raises(ConfigError, match="Unterminated quote"):
        make(TimestampRouter, {"timestamp.format": "yyyy'"})
    keys = TimestampRouter.config_def().keys
    assert (keys["topic.format"].default, keys["timestamp.format"].default) == ("${topic}-${timestamp}", "yyyyMMdd")
    assert TimestampRouter.aliases == ("org.apache.kafka.connect.transforms.TimestampRouter",)
