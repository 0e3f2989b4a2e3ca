"""The contracts of the plugins that work on records, run over every predicate, partitioner and format the
registry finds: what each answers for a batch has the contract's type, and is computed by Spark without
per-record Python. A plugin the suite has no settings for fails it (add them to the plugin kind's table):
none escapes the suite.

The object-store plugins are built from an S3 sink's config, as the sink builds them.
"""

from __future__ import annotations

import io

import pyarrow as pa
import pytest
from pyspark.sql import types as T

from connectors.s3.sink import S3SinkConnector
from ingest.records import VALUE
from ingest.records import schema as S
from ingest.registry import PluginKind, default_registry
from tests.converters.helpers import assert_no_python
from tests.transforms.helpers import batch_of, make

REGISTRY = default_registry()
PREDICATES = sorted(info.name for info in REGISTRY.plugins(PluginKind.PREDICATE))
PARTITIONERS = sorted(info.name for info in REGISTRY.plugins(PluginKind.PARTITIONER))
FORMATS = sorted(info.name for info in REGISTRY.plugins(PluginKind.FORMAT))

PREDICATE_SETTINGS = {"TopicNameMatches": {"pattern": "orders.*"}, "HasHeaderKey": {"name": "h"},
                      "RecordIsTombstone": {}}
_TIME = {"partition.duration.ms": "3600000", "path.format": "'year'=YYYY/'hour'=HH", "locale": "en",
         "timezone": "UTC", "timestamp.extractor": "Record"}
PARTITIONER_SETTINGS = {
    "DefaultPartitioner": {}, "FieldPartitioner": {"partition.field.name": "id"},
    "TimeBasedPartitioner": _TIME, "DailyPartitioner": {"locale": "en", "timezone": "UTC",
                                                        "timestamp.extractor": "Record"},
    "HourlyPartitioner": {"locale": "en", "timezone": "UTC", "timestamp.extractor": "Record"},
    "FieldAndTimeBasedPartitioner": {**_TIME, "partition.field.name": "id"},
}
# Each format: the value schema it writes here, and the first bytes of an object of that format.
ORDER = S.struct("order", ("id", S.INT32_SCHEMA), ("title", S.OPTIONAL_STRING_SCHEMA))
FORMAT_CASES = {
    "JsonFormat": (ORDER, b'{"id":1,'),
    "AvroFormat": (ORDER, b"Obj\x01"),
    "ParquetFormat": (ORDER, b"PAR1"),
    "ByteArrayFormat": (S.OPTIONAL_BYTES_SCHEMA, b"raw-1\n"),
}


def sink_config(plugin_settings: dict[str, str], **extra: str):
    """An S3 sink's validated config with a plugin's settings: what the sink builds its plugins from."""
    raw = {"name": "s3", "connector.class": "S3Sink", "topics": "orders", "s3.bucket.name": "b",
           "flush.size": "3", "format.class": "JsonFormat", **plugin_settings, **extra}
    return S3SinkConnector.config_def().parse(raw, strict=False, source="the suite's S3 sink")


def _orders(spark, schema=ORDER):
    import datetime as dt

    ts = dt.datetime(2024, 5, 1, 10, 30)
    if schema.type == "bytes":
        values = [b"raw-1", b"raw-2"]
    else:
        values = [{"id": 1, "title": "Kafka Connect"}, {"id": 2, "title": None}]
    records = [{"topic": "orders", "partition": 0, "value": v, "headers": [("h", "x")], "timestamp": ts}
               for v in values]
    records.append({"topic": "other", "partition": 1, "value": None, "timestamp": ts})  # a tombstone
    return batch_of(spark, records, value_schema=schema)


@pytest.mark.parametrize("kind, names, table", [
    ("predicate", PREDICATES, PREDICATE_SETTINGS), ("partitioner", PARTITIONERS, PARTITIONER_SETTINGS),
    ("format", FORMATS, FORMAT_CASES)])
def test_every_installed_plugin_is_in_the_suite(kind, names, table):
    missing = sorted(set(names) - set(table))
    assert not missing, f"{kind}s without settings in this suite (add them to its table): {missing}"


@pytest.mark.parametrize("name", PREDICATES)
def test_a_predicate_answers_each_record_with_a_boolean(spark, name):
    predicate = make(REGISTRY.get(PluginKind.PREDICATE, name).cls, PREDICATE_SETTINGS[name])
    batch = _orders(spark)
    answer = batch.df.select(predicate.test(batch).alias("answer"))
    assert isinstance(answer.schema["answer"].dataType, T.BooleanType)
    assert len(answer.collect()) == 3  # every record answered, the tombstone too
    assert_no_python(answer)


@pytest.mark.parametrize("name", PARTITIONERS)
def test_a_partitioner_encodes_each_record_or_gives_its_time(spark, name):
    """`encode` gives a string column (or None when the path is all time); a partitioner without one is
    time-based: it gives a `time_partitioning` and each record's timestamp. Failures are a string column."""
    partitioner = REGISTRY.get(PluginKind.PARTITIONER, name).cls(sink_config(PARTITIONER_SETTINGS[name]))
    batch = _orders(spark)
    df = batch.df.filter(batch.df[VALUE].isNotNull())
    batch = batch.with_df(df)
    columns = {"encoded": partitioner.encode(batch), "error": partitioner.errors(batch),
               "ts": partitioner.timestamp(batch)}
    given = {k: c for k, c in columns.items() if c is not None}
    out = df.select(*[c.alias(k) for k, c in given.items()]) if given else df.limit(0)
    types = {f.name: f.dataType for f in out.schema.fields}
    assert columns["encoded"] is not None or partitioner.time_partitioning is not None, name
    if partitioner.time_partitioning is not None:
        assert isinstance(types.get("ts"), T.LongType), f"{name} is time-based but gives no timestamps"
    for key in ("encoded", "error"):
        if key in types:
            assert isinstance(types[key], T.StringType), (name, key, types[key])
    rows = out.collect()
    assert all(r["error"] is None for r in rows) if "error" in types else True
    if "encoded" in types:
        assert all(r["encoded"] for r in rows), rows
    assert_no_python(out)


@pytest.mark.parametrize("name", FORMATS)
def test_a_format_writes_an_object_of_its_kind(spark, name):
    """The driver's `payload`, then the executor's `writer` over those payloads: one object whose bytes are
    the format's, named with the format's extension."""
    schema, head = FORMAT_CASES[name]
    settings = {"format.class": name}
    fmt = REGISTRY.get(PluginKind.FORMAT, name).cls(sink_config(settings, **settings))
    batch = _orders(spark, schema)
    df = batch.df.filter(batch.df[VALUE].isNotNull())
    payloads = fmt.payload(df, VALUE, schema)
    assert_no_python(payloads.select(VALUE))
    values = pa.concat_arrays([b.column(VALUE) for b in payloads.select(VALUE).toArrow().to_batches()])
    out = io.BytesIO()
    writer = fmt.writer(out, fmt.view(schema, False, False), "orders+0+0000000000")
    writer.write(values)
    writer.close()
    assert out.getvalue().startswith(head), (name, out.getvalue()[:40])
    assert fmt.file_extension().startswith(".") and isinstance(fmt.compressible, bool)
