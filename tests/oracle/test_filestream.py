"""connect-file's FileStreamSourceTask and FileStreamSinkTask (the real classes, through tests/oracle/java)
against lakeconnect's FileStream pair: lines in, records out; records in, file lines out."""

from __future__ import annotations

import base64

import pytest

from tests.oracle import filestream
from tests.oracle.corpus import of_kind
from tests.oracle.deviations import ignored_aspects

SOURCES = of_kind("filesource")
SINKS = of_kind("filesink")


@pytest.fixture(scope="module")
def lakeconnect_sources(spark):
    return filestream.source(spark, SOURCES)


@pytest.mark.parametrize("case", SOURCES, ids=[c["id"] for c in SOURCES])
def test_source_reads_the_lines_kafka_reads(case, kafka_answers, lakeconnect_sources):
    kafka, ours = kafka_answers[case["id"]], lakeconnect_sources[case["id"]]
    assert "error" not in kafka, kafka
    assert [(r["topic"], r["partition"], r["keySchema"], r["valueSchema"], r["value"]) for r in ours["records"]] == [
        (r["topic"], r["partition"], r["keySchema"], r["valueSchema"], r["value"]) for r in kafka["records"]]
    if "offset" not in ignored_aspects(case["id"]):
        # Kafka's offset is the position after each line; lakeconnect commits its batch's end position.
        assert ours["end"] == (kafka["records"][-1]["offset"] if kafka["records"] else None)


@pytest.mark.parametrize("case", SINKS, ids=[c["id"] for c in SINKS])
def test_sink_writes_the_lines_kafka_writes(case, spark, kafka_answers):
    kafka = kafka_answers[case["id"]]
    assert "error" not in kafka, kafka
    expected = base64.b64decode(kafka["output"])
    written = filestream.sink(spark, case)
    if "output" not in ignored_aspects(case["id"]):
        assert written.decode("utf-8", "replace") == expected.decode("utf-8", "replace")
