"""Filter: drops every record in scope; with RecordIsTombstone it drops tombstones (the book's
filterTombstones), negated it keeps only them. Records that failed an earlier stage are kept."""

from __future__ import annotations

from pyspark.sql import functions as F

from connectors.predicates import RecordIsTombstone
from connectors.transforms.filter import Filter
from ingest.records import ERROR, error_struct
from tests.converters.helpers import assert_no_python
from tests.transforms.helpers import SCHEMALESS, apply, apply_one, batch_of, make, records


def test_filter(spark):
    b = batch_of(spark, [{"key": {"k": 1}, "value": {"a": 1}, "headers": [("h", "1")], "partition": 2},
                         {"key": {"k": 2}, "value": None},
                         {"key": {"k": 3}, "value": {"a": 3}}], key_schema=SCHEMALESS)
    t = make(Filter, {})
    assert records(apply_one(t, b)) == []

    outs = apply(t, b, make(RecordIsTombstone, {}))
    assert len(outs) == 1
    rs = records(outs[0])
    assert [r["key"] for r in rs] == [{"k": 1}, {"k": 3}]
    assert rs[0] == {"topic": "test", "key": {"k": 1}, "value": {"a": 1}, "headers": [("h", "1")],
                     "timestamp": None, "partition": 2}
    assert_no_python(outs[0].df)

    kept = apply(t, b, make(RecordIsTombstone, {}), negate=True)
    assert [r["key"] for r in records(kept[0])] == [{"k": 2}]

    failed = b.with_df(b.df.withColumn(ERROR, F.when(F.col("seq") == 0, error_struct(
        "TRANSFORMATION", None, "org.apache.kafka.connect.errors.DataException", F.lit("earlier")))))
    assert [r.get("error") for r in records(apply_one(t, failed))] == ["earlier"]
    assert Filter.aliases == ("org.apache.kafka.connect.transforms.Filter",)
    assert Filter.config_def().keys == {}
