"""The book's transform examples (ch. 3 and ch. 5), configured with the book's exact keys, give its outputs.

The JDBC examples run here on a `kafka_books` row batch shaped as the JDBC source reads it (the source
itself is a later issue); the FileStreamSink example runs end to end in real processes.
"""

import datetime as dt
import json
import re

from deltalake import DeltaTable

from ingest.config.connector import validate_connector
from ingest.config.worker import load_worker
from ingest.records.schema import INT64_SCHEMA, OPTIONAL_TIMESTAMP_SCHEMA, STRING_SCHEMA, date, struct
from ingest.registry import default_registry
from ingest.runtime.pipeline import Pipeline
from tests.conftest import cli, cli_here
from tests.transforms.helpers import SCHEMALESS, batch_of, records

BOOKS = struct("kafka_books", ("id", INT64_SCHEMA), ("title", STRING_SCHEMA), ("subtitle", STRING_SCHEMA),
               ("published", date()), ("timestamp", OPTIONAL_TIMESTAMP_SCHEMA))
ROWS = [
    {"id": 1, "title": "Kafka Connect", "subtitle": "Build and Run Data Pipelines",
     "published": dt.date(2023, 10, 1), "timestamp": dt.datetime(2022, 6, 26, 9, 4, 50)},
    {"id": 2, "title": "Kafka The Definitive Guide", "subtitle": "Real-time Data and Stream Processing at Scale",
     "published": dt.date(2022, 6, 23), "timestamp": dt.datetime(2022, 6, 26, 9, 4, 50)},
]
JSON = "org.apache.kafka.connect.json.JsonConverter"


def _pipeline(config: dict) -> Pipeline:
    worker = load_worker(None, {"file.connectors.enable": "true"})
    setup = validate_connector({"name": "book", "connector.class": "FileStreamSource", "file": "/dev/null",
                                "topic": "mysql-kafka_books", **config}, worker, default_registry())
    return Pipeline.build(setup)


def _serialised(spark, config: dict) -> list[tuple[str, str]]:
    pipeline = _pipeline(config)
    batch = batch_of(spark, [{"value": r, "topic": "mysql-kafka_books"} for r in ROWS], value_schema=BOOKS)
    out = []
    for b in pipeline.transform([batch]):
        for row in pipeline.serialise(b).orderBy("seq").collect():
            out.append((None if row["key"] is None else bytes(row["key"]).decode(), bytes(row["value"]).decode()))
    return out


def test_timestamp_converter_on_published(spark, monkeypatch):
    monkeypatch.setenv("TZ", "UTC")
    config = {
        "value.converter": JSON, "value.converter.schemas.enable": "true",
        "transforms": "timestampConverter",
        "transforms.timestampConverter.type": "org.apache.kafka.connect.transforms.TimestampConverter$Value",
        "transforms.timestampConverter.field": "published",
        "transforms.timestampConverter.format": "yyyy-MM-dd",
        "transforms.timestampConverter.target.type": "string",
    }
    (_, second) = _serialised(spark, config)[1]
    envelope = json.loads(second)
    # The book: "payload": {"id": 2, ..., "published": "2022-06-23", "timestamp": 1656234290000}
    assert envelope["payload"] == {"id": 2, "title": "Kafka The Definitive Guide",
                                   "subtitle": "Real-time Data and Stream Processing at Scale",
                                   "published": "2022-06-23", "timestamp": 1656234290000}
    fields = {f["field"]: f for f in envelope["schema"]["fields"]}
    assert fields["published"]["type"] == "string"
    assert envelope["schema"]["name"] == "kafka_books"
    assert fields["timestamp"]["name"] == "org.apache.kafka.connect.data.Timestamp"


def test_value_to_key_then_extract_field(spark):
    config = {
        "key.converter": JSON, "key.converter.schemas.enable": "true", "value.converter": JSON,
        "transforms": "valueToKey,extractField",
        "transforms.valueToKey.type": "org.apache.kafka.connect.transforms.ValueToKey",
        "transforms.valueToKey.fields": "id",
        "transforms.extractField.type": "org.apache.kafka.connect.transforms.ExtractField$Key",
        "transforms.extractField.field": "id",
    }
    keys = [k for k, _ in _serialised(spark, config)]
    # "Kafka Connect first uses ValueToKey ... then applies ExtractField to take just the number 1 as the key"
    assert keys == ['{"schema":{"type":"int64","optional":false},"payload":1}',
                    '{"schema":{"type":"int64","optional":false},"payload":2}']


def test_filter_tombstones(spark):
    pipeline = _pipeline({
        "transforms": "filterTombstones",
        "transforms.filterTombstones.type": "org.apache.kafka.connect.transforms.Filter",
        "transforms.filterTombstones.predicate": "isTombstone",
        "predicates": "isTombstone",
        "predicates.isTombstone.type": "org.apache.kafka.connect.transforms.predicates.RecordIsTombstone",
    })
    batch = batch_of(spark, [{"key": "a", "value": {"x": 1}}, {"key": "b", "value": None},
                             {"key": "c", "value": {"x": 2}}], key_schema=SCHEMALESS)
    out = [r for b in pipeline.transform([batch]) for r in records(b)]
    assert sorted(r["key"] for r in out) == ["a", "c"]


def test_replace_source_and_add_timestamp_to_a_file(tmp_path, lake, worker_file):
    """Ch. 3 "Using Transformations and Predicates": the book's file-sink.json, verbatim but the file path."""
    topic = "topic-to-export-with-transformations"
    assert cli_here("topics", "create", topic, "--partitions", "1", worker=worker_file).returncode == 0
    r = cli_here("topics", "produce", topic, worker=worker_file,
            stdin='{"source": "kafka-console-producer", "type": "event"}\n')
    assert r.returncode == 0, r.stderr
    out = tmp_path / "sink-transform.out"
    config = tmp_path / "file-sink.json"
    config.write_text(json.dumps({
        "connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
        "tasks.max": "1",
        "topics": topic,
        "file": str(out),
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "false",
        "transforms": "replaceSource,addTimestamp",
        "transforms.replaceSource.type": "org.apache.kafka.connect.transforms.ReplaceField$Value",
        "transforms.replaceSource.renames": "source:origin",
        "transforms.addTimestamp.type": "org.apache.kafka.connect.transforms.InsertField$Value",
        "transforms.addTimestamp.timestamp.field": "ts",
        "transforms.addTimestamp.predicate": "isTombstone",
        "transforms.addTimestamp.negate": "true",
        "predicates": "isTombstone",
        "predicates.isTombstone.type": "org.apache.kafka.connect.transforms.predicates.RecordIsTombstone",
    }))
    assert cli_here("connectors", "create", str(config), "--name", "file-sink", worker=worker_file).returncode == 0
    r = cli("run", "file-sink", worker=worker_file)
    assert r.returncode == 0, r.stderr
    # The book: {origin=kafka-console-producer, type=event, ts=1647116995747}
    line = out.read_text().strip()
    m = re.fullmatch(r"\{origin=kafka-console-producer, type=event, ts=(\d{13})\}", line)
    assert m, line
    stamp = DeltaTable(str(lake / "topics" / topic)).to_pyarrow_table(columns=["timestamp"]).to_pylist()[0]["timestamp"]
    assert int(m.group(1)) == int(stamp.timestamp() * 1000)
