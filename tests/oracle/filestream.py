"""lakeconnect's side of the FileStream cases: its FileStreamSourceTask over the same file bytes, its
FileStreamSinkTask over the same records, with Kafka's answers' shapes."""

from __future__ import annotations

import base64
import logging
import tempfile
from pathlib import Path
from typing import Any

from pyspark.sql import functions as F

from connectors.file.sink import FileStreamSinkConnector, FileStreamSinkTask
from connectors.file.source import FileStreamSourceConnector, FileStreamSourceTask
from ingest.api import TaskContext, TopicRange
from ingest.records import OFFSET, SEQ, VALUE
from ingest.runtime.pipeline import union_all
from tests.oracle.lakeconnect import _batch


def _context(spark) -> TaskContext:
    return TaskContext("oracle", 0, None, lambda: spark, logging.LoggerAdapter(logging.getLogger("oracle"), {}), "")


def source(spark, cases: list[dict]) -> dict[str, dict[str, Any]]:
    """Each case's records read from a fresh start, all cases' reads in one Spark job."""
    answers: dict[str, dict[str, Any]] = {}
    reads = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, case in enumerate(cases):
            path = Path(tmp) / f"{i}.txt"
            path.write_bytes(base64.b64decode(case["content"]))
            config = FileStreamSourceConnector.config_def().parse({"file": str(path), **case["config"]})
            task = FileStreamSourceTask(config, _context(spark))
            plan = task.plan({})
            answers[case["id"]] = {"records": [], "end": None if plan.empty else plan.ranges[0].end["position"]}
            if not plan.empty:
                (batch,) = task.read(plan)
                reads.append(batch.df.select(F.lit(case["id"]).alias("case"), "*").withColumn(
                    "value_schema", F.lit(batch.value_schema.type)).withColumn("key_schema", F.lit(
                        None if batch.key_schema is None else batch.key_schema.type)))
        rows = union_all(reads).orderBy("case", SEQ).collect() if reads else []
    for row in rows:
        answers[row["case"]]["records"].append({
            "topic": row["topic"], "partition": row["partition"], "value": row[VALUE], "offset": row[SEQ],
            "keySchema": "null" if row["key_schema"] is None else row["key_schema"],
            "valueSchema": row["value_schema"]})
    return answers


def sink(spark, case: dict) -> bytes:
    """What lakeconnect's FileStreamSinkTask writes for the case's records."""
    batch = _batch(spark, {**case, "keySchema": None, "records": [
        {"key": None, "partition": 0, "timestamp": None, **r} for r in case["records"]]})
    batch = batch.with_df(batch.df.withColumn(OFFSET, F.col(SEQ)))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "sink.txt"
        config = FileStreamSinkConnector.config_def().parse({"file": str(path)})
        task = FileStreamSinkTask(config, _context(spark))
        ranges = [TopicRange("lines", 0, 0, len(case["records"]))]
        task.put([batch], ranges, task.prepare(ranges), 1)
        return path.read_bytes()
