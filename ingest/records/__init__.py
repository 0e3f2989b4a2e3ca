"""Records inside a job: Spark DataFrames with Kafka Connect's record fields, Connect schemas alongside.

A `RecordBatch` is one DataFrame whose rows share a key schema and a value schema (one table, one
topic). Columns (Connect form, before conversion on the source side, after it on the sink side):

    topic      string, not null
    partition  int, null = let the topic's partitioner choose (murmur2 of the key bytes, or round-robin)
    key        the Spark type of `key_schema` (null type when there is no key)
    value      the Spark type of `value_schema`; null = tombstone
    headers    array<struct<key: string, value: string>>, may be null
    timestamp  timestamp, null = the write time
    seq        long, the record's position in its source read; offsets follow it within a partition

Sink-side batches also carry `offset` (long) and `timestamp_type` (string) read from the topic.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ingest.errors import DATA_EXCEPTION

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

    from ingest.records.schema import ConnectSchema

TOPIC = "topic"
PARTITION = "partition"
KEY = "key"
VALUE = "value"
HEADERS = "headers"
TIMESTAMP = "timestamp"
SEQ = "seq"
OFFSET = "offset"
TIMESTAMP_TYPE = "timestamp_type"
_SAME: Any = object()

ERROR = "__lc_error"
"""Set on a record that failed a stage: struct<stage, class, exception, message> (Kafka's error context)."""
SCOPE = "__lc_scope"
"""While a transform runs under a predicate: true for the records the transform applies to."""

RECORD_COLUMNS = (TOPIC, PARTITION, KEY, VALUE, HEADERS, TIMESTAMP, SEQ)

ERROR_TYPE = "struct<stage:string,class:string,exception:string,message:string>"


@dataclass(frozen=True)
class RecordBatch:
    """Records that share one key schema and one value schema (None = schemaless or absent).

    Transforms change a batch through `set`, `drop` and `fail`, which honour the record scope the
    runtime sets (the records a predicate selects; records that failed an earlier stage are never
    changed or dropped), and `with_schemas` for the schemas that follow.
    """

    df: DataFrame
    key_schema: ConnectSchema | None
    value_schema: ConnectSchema | None
    topics: tuple[str, ...] | None = None
    """The topics of the records when the source knows them without a query (None: unknown)."""
    counts: Callable[[], Sequence[int | None]] | None = None
    """When the source can count them cheaply (a read in key ranges the database counts): a function giving
    the records in each Spark partition of `df`, each partition's seqs all below the next one's, the last
    count possibly None (not counted). Called only by a topic that can use it, which then numbers the
    records without a pass of its own over them (the source may have started the count already). Anything that may add or drop records (transforms,
    tolerated failures) clears it; a wrong count is caught before the commit."""

    def with_df(self, df: DataFrame) -> RecordBatch:
        return replace(self, df=df)

    def with_schemas(self, key_schema: Any = _SAME, value_schema: Any = _SAME) -> RecordBatch:
        changes = {}
        if key_schema is not _SAME:
            changes["key_schema"] = key_schema
        if value_schema is not _SAME:
            changes["value_schema"] = value_schema
        return replace(self, **changes)

    # --- what transforms use ---------------------------------------------------------------------

    def active(self) -> Column:
        """True for the records a transform may change: in scope and not failed already."""
        from pyspark.sql import functions as F

        if ERROR not in self.df.columns:
            return self._in_scope()
        return F.col(ERROR).isNull() & self._in_scope()

    def _in_scope(self) -> Column:
        from pyspark.sql import functions as F

        return F.coalesce(F.col(SCOPE), F.lit(False)) if SCOPE in self.df.columns else F.lit(True)

    def set(self, columns: Mapping[str, Column]) -> RecordBatch:
        """Set record columns (topic, key, value, headers, timestamp, partition) for the records in scope.

        When a column's type changes, every record takes the new expression (a batch holds one type per
        column); the runtime runs such a transform on the records in scope only. Records that failed an
        earlier stage may change too: they keep their failure, and the runtime handles them from it.
        """
        from pyspark.sql import functions as F

        if not columns:
            return self
        # Only a predicate's scope keeps the old value: a record that failed earlier is set aside by the
        # runtime from its ERROR and ORIGIN (never from these columns), so it need not keep them. Keeping
        # them would reference every column twice per transform, which Spark inlines down the chain.
        guarded = [n for n in columns if n in self.df.columns] if SCOPE in self.df.columns else []
        types = {}
        if guarded:  # analysis only, no data: the type each new expression has
            types = {f.name: f.dataType for f in self.df.select(*[columns[n].alias(n) for n in guarded]).schema}
        out = {}
        for name, expr in columns.items():
            if name in types and types[name] == self.df.schema[name].dataType:
                out[name] = F.when(F.coalesce(F.col(SCOPE), F.lit(False)), expr).otherwise(F.col(name))
            else:
                out[name] = expr
        return self.with_df(self.df.withColumns(out))

    def drop(self, condition: Column) -> RecordBatch:
        """Drop the active records for which `condition` is true (Kafka's transform returning null)."""
        from pyspark.sql import functions as F

        gone = self.active() & F.coalesce(condition, F.lit(False))
        return replace(self, df=self.df.filter(~gone), counts=None)

    def fail(self, condition: Column, message: Column | str, *, exception: str = DATA_EXCEPTION,
             stage: str = "TRANSFORMATION", executing_class: str | None = None) -> RecordBatch:
        """Mark the active records for which `condition` is true as failed with `message`.

        The runtime then handles them as `errors.tolerance` says (fail the task, skip, dead letter queue).
        The first failure of a record is the one kept. `executing_class` defaults to the running stage's
        class, which the runtime fills in.
        """
        from pyspark.sql import functions as F

        message = F.lit(message) if isinstance(message, str) else message
        error = error_struct(stage, executing_class, exception, message)
        # A record's first failure is kept: coalesce evaluates the new one only where ERROR is null, so ERROR
        # is named once. Each name is a copy of its expression when Spark pushes a filter down the chain's
        # projections: two per transform doubled the plan at every transform that can fail.
        new = F.when(self._in_scope() & F.coalesce(condition, F.lit(False)), error)
        if ERROR in self.df.columns:
            new = F.coalesce(F.col(ERROR), new)
        return self.with_df(self.df.withColumn(ERROR, new))

    def fail_all(self, message: str, *, exception: str = DATA_EXCEPTION, stage: str = "TRANSFORMATION",
                 executing_class: str | None = None) -> RecordBatch:
        """Every active record failed (a schema-level problem such as an unknown field)."""
        from pyspark.sql import functions as F

        return self.fail(F.lit(True), message, exception=exception, stage=stage, executing_class=executing_class)


def counted_in_background(count: Callable[[], Sequence[int | None]]) -> Callable[[], Sequence[int | None]]:
    """`count` (a source's `RecordBatch.counts`) started now in a daemon thread, beside the batch's conversion
    and the write's planning, which it would otherwise hold up; the function returned waits for its result.
    Where that run failed, each call runs `count` again itself (a retried write gets a fresh try, and the
    error of its own). Its `wait()` only waits for the background run to end (a source that frees what the
    count reads calls it first: the count may be unused, its batch's counts dropped by a transform)."""
    done, out = threading.Event(), {}

    def run() -> None:
        try:
            out["value"] = count()
        except Exception:  # noqa: BLE001 - whoever waits tries again, and gets the error of that try
            out["failed"] = True
        finally:
            done.set()

    threading.Thread(target=run, name="lakeconnect-count", daemon=True).start()

    def result() -> Sequence[int | None]:
        done.wait()
        return count() if out.get("failed") else out["value"]

    result.wait = done.wait  # type: ignore[attr-defined]
    return result


def error_struct(stage: str, executing_class: str | None, exception: str, message: Column) -> Column:
    from pyspark.sql import functions as F

    return F.struct(F.lit(stage).alias("stage"), F.lit(executing_class).cast("string").alias("class"),
                    F.lit(exception).alias("exception"), message.cast("string").alias("message"))
