"""A converter's plan for the usual records (`Converter.from_connect_optimistic`): a batch whose records all
take it is written with the same bytes as the general plan; a batch with a record it declines is converted
and written again with the general plan, once, with nothing committed twice."""

from __future__ import annotations

import logging

import pytest
from pyspark.sql import functions as F

import connectors.converters.json_converter as json_converter
from ingest.api import PlannedRange, SourcePlan, SourceTask
from ingest.config.connector import validate_connector
from ingest.config.worker import load_worker
from ingest.records import RecordBatch
from ingest.records import schema as S
from ingest.registry import default_registry
from ingest.runtime import runner as runner_module
from ingest.runtime.pipeline import Pipeline
from ingest.runtime.runner import BatchRunner
from ingest.runtime.worker import Worker
from tests.runtime.helpers import topic_commits, topic_rows

SCHEMA = S.struct("row", ("id", S.INT64_SCHEMA), ("s", S.OPTIONAL_STRING_SCHEMA))
GOOD = [(1, b"plain"), (2, None), (3, "\u00e9 \U0001f600".encode())]
NOT_UTF8 = [(1, b"plain"), (2, b"ok \xff\xfe bad"), (3, None)]  # Java's writer hands record 2 back


class Rows(SourceTask):
    """One batch of `rows` (id, string bytes) as struct values of SCHEMA, then nothing."""

    def __init__(self, spark, rows):  # noqa: D107 - a test double of a source task
        self.spark, self.rows = spark, rows

    def plan(self, committed):
        if committed:
            return SourcePlan(())
        return SourcePlan((PlannedRange({"table": "rows"}, None, {"n": len(self.rows)}),))

    def read(self, plan):
        raw = self.spark.createDataFrame(self.rows, "id long, b binary")
        df = raw.select(
            F.lit("rows").alias("topic"), F.lit(None).cast("int").alias("partition"),
            F.lit(None).cast("void").alias("key"),
            F.struct(F.col("id"), F.col("b").cast("string").alias("s")).alias("value"),
            F.lit(None).cast("array<struct<key:string,value:string>>").alias("headers"),
            F.current_timestamp().alias("timestamp"), F.col("id").alias("seq"))
        return [RecordBatch(df, None, SCHEMA, topics=("rows",))]


def _run(spark, lake, rows, name="opt", task_class=None):
    worker_config = load_worker(None, {"lake.root": str(lake), "file.connectors.enable": "true"})
    setup = validate_connector({"name": name, "connector.class": "FileStreamSource", "file": "/none", "topic": "rows",
                                "value.converter": "org.apache.kafka.connect.json.JsonConverter"},
                               worker_config, default_registry())
    stores = Worker(worker_config).stores
    runner = BatchRunner(setup, stores, str(lake), {}, Pipeline.build(setup), logging.getLogger("test"))
    report = runner.run_source((task_class or Rows)(spark, rows), 0, name)
    assert report.outcome == "COMMITTED", report
    return report


@pytest.fixture
def spied(monkeypatch):
    """What `from_connect_optimistic` answered, call by call (None: no optimistic plan)."""
    answers = []
    real = json_converter.JsonConverter.from_connect_optimistic

    def spy(self, df, column, schema):
        out = real(self, df, column, schema)
        answers.append(out)
        return out

    monkeypatch.setattr(json_converter.JsonConverter, "from_connect_optimistic", spy)
    monkeypatch.setattr(runner_module, "_DECLINED", set())
    return answers


def _general(spark, lake, rows, monkeypatch):
    with monkeypatch.context() as m:
        m.setattr(json_converter.JsonConverter, "from_connect_optimistic", lambda *a: None)
        _run(spark, lake, rows)
    return topic_rows(lake, "rows")


def test_usual_records_take_the_optimistic_plan_with_the_general_plans_bytes(spark, tmp_path, spied, monkeypatch):
    report = _run(spark, tmp_path / "a", GOOD)
    assert report.records == 3
    assert spied and all(a is not None for a in spied)
    assert not runner_module._DECLINED
    assert topic_rows(tmp_path / "a", "rows") == _general(spark, tmp_path / "b", GOOD, monkeypatch)


def test_a_declined_record_has_the_batch_converted_again_once(spark, tmp_path, spied, monkeypatch, caplog):
    # A converter whose optimistic plan declines every record (JsonConverter's declines only a null where its
    # schema needs a value: below): the runtime's part alone.
    from ingest.api import DECLINED

    def declining(self, df, column, schema):
        spied.append(column)
        return df.withColumn(column, F.raise_error(F.lit(f"{DECLINED} (test)")).cast("binary"))

    monkeypatch.setattr(json_converter.JsonConverter, "from_connect_optimistic", declining)
    caplog.set_level(logging.INFO, logger="test")
    report = _run(spark, tmp_path / "a", GOOD)
    assert report.records == 3 and spied == ["value"]
    assert "converting the batch again" in caplog.text
    assert runner_module._DECLINED == {("opt", 0)}
    got = topic_rows(tmp_path / "a", "rows")
    assert [r[1] for r in got] == [0, 1, 2] and topic_commits(tmp_path / "a", "rows") == 1
    assert got == _general(spark, tmp_path / "b", GOOD, monkeypatch)

    # Later batches of the same connector in this process take the general plan at once.
    spied.clear()
    _run(spark, tmp_path / "c", GOOD)
    assert spied == []


def test_json_declines_a_null_its_schema_forbids_and_the_general_plan_gives_kafkas_error(spark, tmp_path, spied):
    strict = S.struct("row", ("id", S.INT64_SCHEMA), ("s", S.STRING_SCHEMA))

    class Strict(Rows):
        def read(self, plan):
            (batch,) = super().read(plan)
            df = batch.df.withColumn("value", F.struct(F.col("value.id"), F.lit(None).cast("string").alias("s")))
            return [RecordBatch(df, None, strict, topics=("rows",))]

    with pytest.raises(Exception, match=r"null value for field that is required and has no default value"):
        _run(spark, tmp_path / "a", [(1, b"a")], task_class=Strict)
    assert spied and spied[0] is not None  # the write declined the optimistic plan, and the general one failed
    assert runner_module._DECLINED == {("opt", 0)}
    topic = tmp_path / "a" / "topics" / "rows"
    assert not topic.exists() or topic_rows(tmp_path / "a", "rows") == []
