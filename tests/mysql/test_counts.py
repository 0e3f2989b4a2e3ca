"""The CDC source counts the records each Spark partition of a batch makes before building them
(`RecordBatch.counts`), so a one-table batch over several binlog files is numbered in parallel with no
count of its own. The count must be the records `TableEvents.records` really makes: a delete's tombstone
(when enabled), a key change's delete, tombstone and create, one record for anything else."""

from __future__ import annotations

import re

import pytest
from pyspark.sql import functions as F

from connectors.mysql.events import ROW_COLUMNS, Shaping, TableEvents
from connectors.mysql.structure import Layout
from connectors.mysql.types import Column

LAYOUT = Layout("inv", "t", (Column("id", "int", nullable=False), Column("v", "varchar")), (0,))
ROWS = [  # four binlog files' row events of the table, in binlog order
    [("c", None, ["1", "a"]), ("u", ["1", "a"], ["1", "b"]), ("d", ["1", "b"], None)],
    [("u", ["2", "x"], ["20", "x"]), ("c", None, ["3", "c"])],  # a key change
    [],  # a file with only other tables' events
    [("d", ["3", "c"], None), ("u", ["20", "x"], ["2", "y"]), ("u", ["2", "y"], ["2", "z"])],
]


def _rows(spark):
    seq = iter(range(1000))
    data = [(i, (next(seq), op, before, after, 0, None, f"bin.{i}", 4, 0, 1, None, None, None))
            for i, part in enumerate(ROWS) for op, before, after in part]
    schema = ("seq long, op string, before array<string>, after array<string>, src_ts_ms long, snap string, "
              "file string, pos long, row int, server_id long, gtid string, thread long, query string")
    assert tuple(f.split()[0] for f in schema.split(", ")) == ROW_COLUMNS
    # One Spark partition per file, as the binlog reader gives them.
    by_file = spark.sparkContext.parallelize(data).partitionBy(len(ROWS), lambda i: i).values()
    return spark.createDataFrame(by_file, schema).sortWithinPartitions("seq")


@pytest.mark.parametrize("tombstones, key_columns, expected", [
    (True, (), [4, 4, 0, 6]),
    (False, (), [3, 3, 0, 4]),
    (True, ((r"inv\.t", ("v",)),), [6, 2, 0, 8]),  # keyed by v: a -> b, x -> y and y -> z change keys
])
def test_counts_are_the_records_each_partition_makes(spark, tombstones, key_columns, expected):
    rows = _rows(spark)
    assert rows.rdd.getNumPartitions() == len(ROWS)
    shaping = Shaping("p", tombstones=tombstones, key_columns=tuple((re.compile(p), c) for p, c in key_columns))
    events = TableEvents(LAYOUT, shaping)
    made = dict(events.records(rows, 0, "p").df.groupBy(F.spark_partition_id().alias("p")).count().collect())
    assert [made.get(p, 0) for p in range(len(ROWS))] == expected
    assert events.counts(rows, len(ROWS)) == expected


def test_a_keyless_table_makes_one_record_per_update_and_a_delete_and_tombstone(spark):
    layout = Layout("inv", "t", LAYOUT.columns, ())
    events = TableEvents(layout, Shaping("p"))
    assert events.counts(_rows(spark), len(ROWS)) == [4, 2, 0, 4]
