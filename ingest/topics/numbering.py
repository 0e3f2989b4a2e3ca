"""Giving an append's records their offsets: each Spark partition numbers its own records, in parallel, to the
offsets one ordered pass would give (`Counted`), and each record's partition is chosen as Kafka's producer
chooses it (`partition_choice`). `TopicTable.append` (ingest/topics/table.py) and the many-topic append
(ingest/topics/many.py) build on these.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from py4j.protocol import Py4JError
from pyspark.errors import PySparkException

from ingest.jvm import batch_constant
from ingest.topics.layout import KEY, OFFSET, PARTITION, SEQ, TOPIC_COLUMNS
from ingest.topics.murmur2 import partition_column

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

# What a write numbered in parallel fails with when the batch it recomputes is not the one it counted.
MOVED = "lakeconnect: the batch changed between counting and writing its records"
_LONG_MAX = 2**63 - 1
POSITION_COLUMN = "__lc_position"


class Moved(Exception):
    """A batch numbered in parallel read other records the second time: number it in order instead."""


class Unsorted(Exception):
    """The records of a Spark partition did not arrive in seq order: sort them first."""


UNSORTED = "lakeconnect: the records did not arrive in seq order"
POSITION_FUNCTION = "lakeconnect_slot_position"
POSITION_CLASS = "io.lakeconnect.SlotPosition"


def position_function() -> bool:
    from pyspark.sql import SparkSession
    from pyspark.sql.types import LongType

    from ingest.jvm import java_function

    spark = SparkSession.getActiveSession()
    return spark is not None and java_function(spark, POSITION_FUNCTION, POSITION_CLASS, LongType(), deterministic=False)


# Physical operators whose output has at least as many partitions as any of their children (a union usually
# the sum of its children's). A plan of only these whose leaves hold several partitions in all is taken as
# several: at worst (a union Spark merges by a shared partitioner) a one-task batch is counted first, which
# is slower but numbers it the same.
_NARROW = frozenset({
    "WholeStageCodegenExec", "InputAdapter", "ProjectExec", "FilterExec", "GenerateExec", "UnionExec",
    "ColumnarToRowExec", "RowToColumnarExec", "SortExec", "ExpandExec", "InMemoryTableScanExec",
    "BatchScanExec", "FileSourceScanExec", "RDDScanExec", "LocalTableScanExec", "RangeExec", "SerializeFromObjectExec",
    "DeserializeToObjectExec", "PythonMapInArrowExec", "MapInArrowExec",
    "MapInPandasExec", "ArrowEvalPythonExec", "BatchEvalPythonExec",
})


def one_spark_partition(df: DataFrame) -> bool:
    """Whether Spark plans `df` as one partition. Planning only: a plan with an exchange (adaptive, whose
    partitions are only known once its stages have run) counts as several. A plan of narrow operators over
    a leaf of several partitions is answered from its leaves; otherwise the plan is prepared for running
    (its stages' generated code compiled), which for a large projection costs a few hundred ms."""
    try:
        plan = df._jdf.queryExecution().executedPlan()
        if plan.getClass().getSimpleName() == "AdaptiveSparkPlanExec":
            return False
        nodes, leaves, narrow = [plan], 0, True
        while nodes and narrow:
            node = nodes.pop()
            narrow = node.getClass().getSimpleName() in _NARROW
            children = node.children()
            if children.isEmpty():
                leaves += node.execute().getNumPartitions()
            else:
                nodes.extend(children.apply(i) for i in range(children.size()))
        if narrow and leaves > 1:
            return False
        return plan.execute().getNumPartitions() == 1
    except (Py4JError, PySparkException):
        return False


class Counted:
    """Offsets planned from a count of the batch: for each slot (Spark partition, topic partition), its
    records' first offset, count, seq range, and where they start among their Spark partition's records
    once sorted by (partition, seq).

    Each Spark partition numbers its own records: every task writes in parallel, and the offsets are the
    ones one ordered pass would give. The write recomputes the batch, and a source that reads something
    else the second time (a table changed in between) is caught: a record beyond its slot's count or
    outside its seq range fails the write, and a slot with fewer records fails the check before the
    commit. Nothing uncommitted is left behind either way.
    """

    FIELDS = ("start", "count", "first", "lo", "hi")

    def __init__(self, n: int, width: int, base: dict[int, int]):
        self.n = n
        self.base = base
        self.slots: dict[str, list[int | None]] = {k: [None] * (width * n) for k in self.FIELDS}
        self.expected: dict[int, int] = {}

    @classmethod
    def planned(cls, counts: Sequence[int | None], base: int) -> Counted:
        """A one-partition topic's slots from the source's counts (`RecordBatch.counts`): Spark partition
        i's records come after partition i - 1's; the last one's count may be unknown."""
        if any(c is None or c < 0 for c in counts[:-1]):
            raise ValueError(f"only the last Spark partition's count may be unknown: {list(counts)}")
        counted = cls(1, len(counts), {0: base})
        first = base
        for spark_part, count in enumerate(counts):
            counted.put(spark_part, 0, start=0, count=_LONG_MAX if count is None else count, first=first,
                        lo=-_LONG_MAX, hi=_LONG_MAX)
            first += count or 0
        if counts[-1] is not None:
            counted.expected[0] = first - base
        return counted

    def put(self, spark_part: int, partition: int, **values: int) -> None:
        for key, value in values.items():
            self.slots[key][spark_part * self.n + partition] = value

    def numbered(self, staged: DataFrame, sort: bool):
        """(records with offsets, the check of the written files, the one topic partition written or None)."""
        from pyspark.sql import functions as F

        pid = F.spark_partition_id()
        slot = (pid.cast("long") * self.n + F.col(PARTITION)).cast("int")

        def at(key: str):
            literal = F.expr("array(" + ",".join("CAST(NULL AS BIGINT)" if v is None else f"{v}L"
                                                 for v in self.slots[key]) + ")")
            return F.try_element_at(literal, slot + 1)

        if sort:
            staged = staged.sortWithinPartitions(PARTITION, SEQ)
        if position_function():  # the records before this one in its slot, counted as they come (-1: out of order)
            position = F.call_function(POSITION_FUNCTION, slot, F.col(SEQ).cast("long"))
        else:  # sorted: the record's index in its Spark partition, less where its slot starts there
            position = F.monotonically_increasing_id() - F.shiftleft(pid.cast("long"), 33) - at("start")
        # Its own column: Spark evaluates a nondeterministic expression once per record, in order.
        staged = staged.withColumn(POSITION_COLUMN, position)
        position, seq = F.col(POSITION_COLUMN), F.col(SEQ)
        fits = (at("first").isNotNull() & (position >= 0) & (position < at("count")) & (seq >= at("lo"))
                & (seq <= at("hi")))
        failure = F.when(position < 0, F.lit(UNSORTED)).otherwise(F.lit(MOVED))
        offset = F.when(fits, at("first") + position).otherwise(F.raise_error(failure).cast("long"))
        records = staged.select(*with_offset(offset))
        expected, base = dict(self.expected), self.base

        def check(files) -> None:
            """Each partition's offsets dense from its end offset, and as many as counted (where known)."""
            written: dict[int, list[int]] = {}
            for f in files:
                if not f.num_records:
                    continue
                p, stats = int(f.partition_values[PARTITION]), f.stats_dict
                lo, hi = stats["minValues"][OFFSET], stats["maxValues"][OFFSET]
                w = written.setdefault(p, [0, lo, hi])
                w[0], w[1], w[2] = w[0] + f.num_records, min(w[1], lo), max(w[2], hi)
            counts = {p: w[0] for p, w in written.items()}
            if any(counts.get(p, 0) != c for p, c in expected.items()):
                raise Moved(f"it wrote {counts} records per partition where it counted {expected}")
            for p, (count, lo, hi) in written.items():
                if lo != base.get(p) or hi - lo + 1 != count:
                    raise Moved(f"partition {p} got offsets {lo}..{hi} for {count} records from end offset "
                                 f"{base.get(p)}")

        if self.n == 1:
            single = 0
        else:
            nonempty = [p for p, c in expected.items() if c]
            single = nonempty[0] if len(nonempty) == 1 else None
        return records, check, single


def with_offset(offset):
    """The topic's columns, `offset` as OFFSET: one projection (Spark analyses the whole plan at each)."""
    from pyspark.sql import functions as F

    return [offset.alias(OFFSET) if c == OFFSET else F.col(c) for c in TOPIC_COLUMNS]


def partition_choice(types: Mapping[str, Any], n: int, version: int, topic: str):
    """The partition of each record, as Kafka's producer chooses it: the record's own (checked against the
    topic's `n`), else murmur2 of the key bytes, else spread evenly by a hash of (`seq`, `version`), which
    is deterministic, so a retried batch lands where the first try did. `types`: the records' column types."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import NullType

    def opt(col: str, ddl: str):
        return F.col(col).cast(ddl) if col in types else F.lit(None).cast(ddl)

    key, part = opt(KEY, "binary"), opt(PARTITION, "int")
    bad = F.raise_error(
        F.concat(F.lit(f"topic '{topic}' has {n} partitions; record partition "), part.cast("string"),
                 F.lit(f" is outside [0, {n})")))
    chosen = F.when(part.isNotNull(), F.when((part < 0) | (part >= n), bad).otherwise(part))
    if not isinstance(types.get(KEY, NullType()), NullType):  # a batch of tombstone keys needs no hashing
        chosen = chosen.when(key.isNotNull(), partition_column(key, n))
    # Unkeyed: spread evenly by a hash of the record's position (sources' positions are often
    # strided, e.g. byte offsets of equal-length lines, so position % n would pile them up).
    # One partition takes them all; the version is kept out of the generated code (`batch_constant`).
    spread = F.lit(0) if n == 1 else F.pmod(F.xxhash64(F.col(SEQ).cast("long"), batch_constant(F.lit(version))),
                                            F.lit(n)).cast("int")
    return chosen.otherwise(spread)
