"""`errors.tolerance=none` names the first failed record of a partition, as a Kafka Connect task does,
whichever of the batch's Spark tasks meets a failed record first."""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from ingest.errors import DataError
from ingest.runtime.tolerance import ORIGIN, guard, mark, run_guarded


def test_the_error_names_the_lowest_failed_offset_not_the_first_one_spark_meets(spark):
    rows = [("events", 0, offset, value) for offset, value in enumerate(["ok", "bad", "ok", "bad", "ok"])]
    df = spark.createDataFrame(rows, "topic string, partition int, offset long, value string")
    # One task that reads offsets 3 and 4 before 0 to 2: guard alone raises on offset 3.
    df = df.where("offset >= 3").union(df.where("offset < 3")).coalesce(1)
    df = df.withColumn(ORIGIN, F.struct("topic", "partition", "offset"))
    df = mark(df, "VALUE_CONVERTER", "org.apache.kafka.connect.json.JsonConverter",
              F.when(F.col("value") == "bad", F.lit("malformed JSON")))

    with pytest.raises(Exception) as unordered:
        guard(df).count()
    assert "offset 3" in str(unordered.value)  # what Spark meets first

    with pytest.raises(DataError) as named:
        run_guarded(lambda: guard(df).count(), "snk", 0)
    message = str(named.value)
    assert "partition 0, offset 1:" in message and "malformed JSON" in message, message
    assert "offset 3" not in message
