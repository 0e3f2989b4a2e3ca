"""The contract every transform keeps, run over every transform the registry knows (plugins included).

- it is found by its Kafka class name(s) and documents every setting;
- under a predicate it leaves the records out of scope exactly as they were;
- a record that failed an earlier stage is not dropped and keeps its first failure;
- columns it does not own (the runtime's own) pass through;
- it plans no per-record Python.
"""

import datetime as dt

import pytest
from pyspark.sql import functions as F

from connectors.predicates import TopicNameMatches
from ingest.records import ERROR, PARTITION, TIMESTAMP, TOPIC
from ingest.registry import PluginKind, default_registry
from ingest.runtime.pipeline import Pipeline
from ingest.runtime.tolerance import ErrorPolicy
from tests.converters.helpers import assert_no_python
from tests.transforms.helpers import SCHEMALESS, batch_of, make, records

# The least configuration each transform needs.
MINIMAL = {
    "Cast": {"spec": "id:string"},
    "ExtractField": {"field": "id"},
    "HeaderFrom": {"fields": "id", "headers": "h_id", "operation": "copy"},
    "HoistField": {"field": "wrapped"},
    "InsertField": {"static.field": "s", "static.value": "v"},
    "MaskField": {"fields": "name"},
    "ReplaceField": {"renames": "name:label"},
    "SetSchemaMetadata": {"schema.name": "renamed"},
    "TimestampConverter": {"field": "ts", "target.type": "string", "format": "yyyy-MM-dd"},
    "TimestampRouter": {},
    "ValueToKey": {"fields": "id"},
    "RegexRouter": {"regex": "(.*)", "replacement": "$1-routed"},
    "InsertHeader": {"header": "h", "value.literal": "v"},
    "DropHeaders": {"headers": "h"},
    "Filter": {},
    "ExtractNewRecordState": {},
    "ByLogicalTableRouter": {"topic.regex": "(.*)", "topic.replacement": "all"},
    "UpperCaseField": {"field": "name"},
}

TRANSFORMS = default_registry().plugins(PluginKind.TRANSFORM)


def _base(info) -> str:
    simple = info.class_name.rsplit(".", 1)[-1]
    return simple.split("$")[0]


@pytest.fixture(scope="module")
def inputs(spark):
    ts = dt.datetime(2022, 6, 23, 12, 0, 0)
    rows = [{"topic": "in", "key": {"id": 1}, "value": {"id": 1, "name": "a", "ts": 1656234290000},
             "headers": [("h", "x")], "timestamp": ts},
            {"topic": "out", "key": {"id": 2}, "value": {"id": 2, "name": "b", "ts": 1656234290000},
             "headers": [("h", "y")], "timestamp": ts},
            {"topic": "in", "key": {"id": 3}, "value": {"id": 3, "name": "c", "ts": 1656234290000},
             "headers": [("h", "z")], "timestamp": ts}]
    batch = batch_of(spark, rows, key_schema=SCHEMALESS, value_schema=SCHEMALESS)
    # The third record failed before this transform; an extra runtime column rides along.
    failed = F.when(F.col("seq") == 2, F.struct(F.lit("VALUE_CONVERTER").alias("stage"), F.lit("C").alias("class"),
                                                F.lit("E").alias("exception"), F.lit("earlier").alias("message")))
    df = batch.df.withColumn(ERROR, failed).withColumn("__lc_extra", F.col("seq") * 10)
    return batch.with_df(df)


@pytest.mark.parametrize("info", TRANSFORMS, ids=lambda i: i.name)
def test_transform_contract(spark, inputs, info):
    assert info.aliases, f"{info.name} has no Kafka class name"
    assert default_registry().find(PluginKind.TRANSFORM, info.aliases[0]) is info
    definition = info.cls.config_def()
    for key, spec in definition.keys.items():
        assert spec.doc, f"{info.name}: setting {key} has no doc"
    transform = make(info.cls, MINIMAL.get(_base(info), {}))
    predicate = make(TopicNameMatches, {"pattern": "in"})
    pipeline = Pipeline(None, None, None, [("t", transform, predicate, False)], ErrorPolicy())
    out = pipeline.transform([inputs])
    before = {r["key"]["id"]: r for r in records(inputs)}
    after = {}
    for b in out:
        assert "__lc_extra" in b.df.columns, f"{info.name} dropped a runtime column"
        assert_no_python(b.df)
        for r in records(b):
            rid = (r["key"] or {}).get("id") if isinstance(r["key"], dict) else None
            after[rid if rid is not None else ("other", len(after))] = r
    # Out of scope: exactly as before.
    assert after.get(2) == before[2], f"{info.name} changed a record its predicate did not select"
    # Failed earlier: kept, with its first failure (unless the transform replaced the key it is found by).
    failed = [r for r in after.values() if r.get("error") == "earlier"]
    assert len(failed) == 1, f"{info.name} dropped or re-failed a record that had already failed"
    # Nothing is lost but what the transform means to drop.
    expected = 2 if _base(info) == "Filter" else 3  # unwrap passes schemaless records through
    assert len(after) == expected


def test_every_declared_transform_loads():
    registry = default_registry()
    registry.plugins()
    broken = {name: why for (kind, name), why in registry.broken.items() if kind == PluginKind.TRANSFORM}
    assert broken == {}
    assert len(TRANSFORMS) >= 28


def test_failed_records_keep_their_coordinates_under_a_shape_change(spark, inputs):
    """A transform that changes the schema splits the batch; records out of scope keep their topic."""
    from connectors.transforms.hoist_field import HoistFieldValue

    pipeline = Pipeline(None, None, None, [("t", make(HoistFieldValue, {"field": "w"}),
                                            make(TopicNameMatches, {"pattern": "in"}), False)], ErrorPolicy())
    out = pipeline.transform([inputs])
    topics = sorted(r[TOPIC] for b in out for r in records(b))
    assert topics == ["in", "in", "out"]
    assert all(PARTITION in b.df.columns and TIMESTAMP in b.df.columns for b in out)
