"""Kafka's converters (JsonConverter, StringConverter, ByteArrayConverter, BooleanConverter, the number converters
and the header converters, through tests/oracle/java) against lakeconnect's: the same bytes for every schema type,
and ("read" cases) the same schemas and values read back from a topic's bytes."""

from __future__ import annotations

import pytest

from tests.oracle import lakeconnect
from tests.oracle.compare import differences
from tests.oracle.corpus import case, of_suite


@pytest.mark.parametrize("case_id", of_suite("converters"))
def test_same_bytes_as_kafka(case_id, spark, kafka_answers):
    answer = lakeconnect.read_answer if case(case_id)["kind"] == "read" else lakeconnect.answer
    diffs = differences(case(case_id), kafka_answers[case_id], answer(spark, case(case_id)))
    assert not diffs, "\n".join(diffs)
